# test: pir
# error: inst i1 (`c = store`, at top level): source 0 (`t` dim 0) uses `i` outside the loop over `i`
# error: inst i1 (`c = store`, at top level): destination (`c` dim 0) uses `i` outside the loop over `i`
# error: inst i1 (`c = store`, at top level): source 0 is [1, 512] but the destination is [128, 512]; `store` keeps the shape
kernel k(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
  }
  stmt {
    c[128*i +: 128, 0 +: 512] = store.dma t[i +: 1, 0 +: 512]
  }
}
