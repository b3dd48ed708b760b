# test: pir
# error: line 7:51: expected `+:`, found `]`
kernel k(a) -> () {
  tensor a: hbm f32[128, 512] input
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0] 
  }
}
