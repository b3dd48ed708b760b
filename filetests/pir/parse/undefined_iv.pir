# test: pir
# error: line 8:46: undefined induction variable `j`
kernel k(a) -> () {
  tensor a: hbm f32[1024, 512] input
  tensor t: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*j +: 128, 0 +: 512]
    }
  }
}
