# test: pir
# A loop one iteration too long: the last tile starts at row 2048.
# error: inst i0 (`t = load`, in loop i): source 0 reads `a` rows 0..2176 but `a` has 2048 rows (at i = 16)
kernel k(a) -> () {
  tensor a: hbm f32[2048, 512] input
  tensor t: sbuf f32[128, 512] local
  loop i in 0..17 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
  }
}
