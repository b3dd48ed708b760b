kernel transpose(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 128] local
  tensor tp: psum f32[128, 128] local
  tensor o: sbuf f32[128, 128] local
  loop r in 0..4 affine {
    loop c in 0..4 affine {
      stmt {
        t[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 128*c +: 128]
      }
      stmt {
        tp[0 +: 128, 0 +: 128] = transpose.pe t[0 +: 128, 0 +: 128]
      }
      stmt {
        o[0 +: 128, 0 +: 128] = copy.any tp[0 +: 128, 0 +: 128]
      }
      stmt {
        y[128*c +: 128, 128*r +: 128] = store.dma o[0 +: 128, 0 +: 128]
      }
    }
  }
}
