# test: pir
# The pipelined store of stage 2 without its `i >= 2` guard reads before the tensor at i = 0; the
# load keeps its guard `i < 16`, which the bounds check uses.
# error: inst i1 (`c = store`, in loop i): destination writes `c` rows -256..2048 but `c` has 2048 rows (at i = 0)
kernel k(a) -> (c) {
  tensor a: hbm f32[2048, 512] input
  tensor c: hbm f32[2048, 512] output
  tensor t: sbuf f32[128, 512] local block[i: 3]
  loop i in 0..18 affine pipelined(stages=3, trip=16) {
    stmt stage=0 if i < 16 {
      t{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt stage=2 if i < 18 {
      c[128*i - 256 +: 128, 0 +: 512] = store.dma t{i - 2}[0 +: 128, 0 +: 512]
    }
  }
}
