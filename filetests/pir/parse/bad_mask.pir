# test: pir
# error: line 8:74: expected `p` or `f` in a mask, found `q`
kernel k(a) -> (b) {
  tensor a: hbm f32[128, 512] input
  tensor b: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512] mask(p < 100, q < 3)
  }
}
