kernel transpose_stages(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 128] local
  tensor tp: psum f32[128, 128] local
  tensor o: sbuf f32[128, 128] local
  tensor t.f0: sbuf f32[128, 128] local block[r: 4]
  tensor t.f1: sbuf f32[128, 128] local block[r: 4]
  tensor t.f2: sbuf f32[128, 128] local block[r: 4]
  tensor t.f3: sbuf f32[128, 128] local block[r: 4]
  tensor tp.f0: psum f32[128, 128] local block[r: 2]
  tensor tp.f1: psum f32[128, 128] local block[r: 2]
  tensor tp.f2: psum f32[128, 128] local block[r: 2]
  tensor tp.f3: psum f32[128, 128] local block[r: 2]
  tensor o.f0: sbuf f32[128, 128] local block[r: 3]
  tensor o.f1: sbuf f32[128, 128] local block[r: 3]
  tensor o.f2: sbuf f32[128, 128] local block[r: 3]
  tensor o.f3: sbuf f32[128, 128] local block[r: 3]
  loop r in 0..8 affine {
    stmt stage=0 if r < 4 {
      t.f0{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 0 +: 128]
    }
    stmt stage=0 if r < 4 {
      t.f1{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 128 +: 128]
    }
    stmt stage=0 if r < 4 {
      t.f2{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 256 +: 128]
    }
    stmt stage=0 if r < 4 {
      t.f3{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 384 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[0 +: 128, 128*r - 512 +: 128] = store.dma o.f0{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[128 +: 128, 128*r - 512 +: 128] = store.dma o.f1{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[256 +: 128, 128*r - 512 +: 128] = store.dma o.f2{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[384 +: 128, 128*r - 512 +: 128] = store.dma o.f3{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.f0{r - 3}[0 +: 128, 0 +: 128] = copy.dve tp.f0{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.f1{r - 3}[0 +: 128, 0 +: 128] = copy.act tp.f1{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.f2{r - 3}[0 +: 128, 0 +: 128] = copy.dve tp.f2{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.f3{r - 3}[0 +: 128, 0 +: 128] = copy.act tp.f3{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.f0{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.f0{r - 2}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.f1{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.f1{r - 2}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.f2{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.f2{r - 2}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.f3{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.f3{r - 2}[0 +: 128, 0 +: 128]
    }
    loop c in 0..0 affine num_stages=4 if r >= 2 && r < 6 {
    }
  }
}
