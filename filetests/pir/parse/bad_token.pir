# test: pir
# error: line 8:11: unexpected character `%`
kernel k(a) -> () {
  tensor a: hbm f32[256, 512] input
  tensor t: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..2 affine {
    stmt {
      t{i % 2}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
  }
}
