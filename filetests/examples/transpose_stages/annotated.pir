kernel transpose_stages(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 128] local block[c: 2]
  tensor tp: psum f32[128, 128] local block[c: 2]
  tensor o: sbuf f32[128, 128] local block[c: 2]
  loop r in 0..4 affine {
    loop c in 0..7 affine num_stages=4 pipelined(stages=4, trip=4) {
      stmt stage=0 if c < 4 {
        t{c}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 128*c +: 128]
      }
      stmt stage=1 if c >= 1 && c < 5 {
        tp{c - 1}[0 +: 128, 0 +: 128] = transpose.pe t{c - 1}[0 +: 128, 0 +: 128]
      }
      stmt stage=2 if c >= 2 && c < 6 {
        o{c - 2}[0 +: 128, 0 +: 128] = copy.any tp{c - 2}[0 +: 128, 0 +: 128]
      }
      stmt stage=3 if c >= 3 {
        y[128*c - 384 +: 128, 128*r +: 128] = store.dma o{c - 3}[0 +: 128, 0 +: 128]
      }
    }
  }
}
