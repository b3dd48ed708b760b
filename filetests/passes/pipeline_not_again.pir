# test: print-after pipeline
# A loop the pipeliner already pipelined is not pipelined again: the IR is unchanged.
# check: loop i in 0..10 affine num_stages=3 pipelined(stages=3, trip=8) {
# nextln: stmt stage=0 if i < 8 {
# not: pipelined(stages=3, trip=10)
kernel k(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor t: sbuf f32[32, 64] local block[i: 2]
  tensor u: sbuf f32[32, 64] local block[i: 2]
  loop i in 0..10 affine num_stages=3 pipelined(stages=3, trip=8) {
    stmt stage=0 if i < 8 {
      t{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      u{i - 1}[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) t{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=2 if i >= 2 {
      c[32*i - 64 +: 32, 0 +: 64] = store.dma u{i - 2}[0 +: 32, 0 +: 64]
    }
  }
}
