# test: pir
# error: line 7:38: undefined tensor `b`
kernel k(a) -> () {
  tensor a: hbm f32[128, 512] input
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 0 +: 512]
  }
}
