kernel transpose(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 128] local block[r: 4]
  tensor tp: psum f32[128, 128] local block[r: 2]
  tensor o: sbuf f32[128, 128] local block[r: 3]
  tensor t.u1: sbuf f32[128, 128] local block[r: 4]
  tensor tp.u1: psum f32[128, 128] local block[r: 2]
  tensor o.u1: sbuf f32[128, 128] local block[r: 3]
  tensor t.u2: sbuf f32[128, 128] local block[r: 4]
  tensor tp.u2: psum f32[128, 128] local block[r: 2]
  tensor o.u2: sbuf f32[128, 128] local block[r: 3]
  tensor t.u3: sbuf f32[128, 128] local block[r: 4]
  tensor tp.u3: psum f32[128, 128] local block[r: 2]
  tensor o.u3: sbuf f32[128, 128] local block[r: 3]
  loop r in 0..8 affine {
    stmt stage=0 if r < 4 {
      t{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 0 +: 128]
    }
    stmt stage=0 if r < 4 {
      t.u1{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 128 +: 128]
    }
    stmt stage=0 if r < 4 {
      t.u2{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 256 +: 128]
    }
    stmt stage=0 if r < 4 {
      t.u3{r}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 384 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[0 +: 128, 128*r - 512 +: 128] = store.dma o{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[128 +: 128, 128*r - 512 +: 128] = store.dma o.u1{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[256 +: 128, 128*r - 512 +: 128] = store.dma o.u2{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=4 if r >= 4 {
      y[384 +: 128, 128*r - 512 +: 128] = store.dma o.u3{r - 4}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o{r - 3}[0 +: 128, 0 +: 128] = copy.dve tp{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.u1{r - 3}[0 +: 128, 0 +: 128] = copy.act tp.u1{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.u2{r - 3}[0 +: 128, 0 +: 128] = copy.dve tp.u2{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=3 if r >= 3 && r < 7 {
      o.u3{r - 3}[0 +: 128, 0 +: 128] = copy.act tp.u3{r - 3}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t{r - 2}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.u1{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.u1{r - 2}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.u2{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.u2{r - 2}[0 +: 128, 0 +: 128]
    }
    stmt stage=2 if r >= 2 && r < 6 {
      tp.u3{r - 2}[0 +: 128, 0 +: 128] = transpose.pe t.u3{r - 2}[0 +: 128, 0 +: 128]
    }
    loop c in 0..0 affine if r >= 2 && r < 6 {
    }
  }
}
