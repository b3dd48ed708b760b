# test: pir
# error: line 13:1: expected `}` to close the kernel body opened at line 3:20, found end of input
kernel k(a) -> (c) {
  tensor a: hbm f32[128, 512] input
  tensor c: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  loop i in 0..1 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]
      c[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
    }
}
