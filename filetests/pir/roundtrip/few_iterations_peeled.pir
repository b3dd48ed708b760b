# test: pir
# tests/pipeline/few_iterations.nk pipelined and peeled (nkc compile --emit pipelined --peel): two
# iterations in four stages, so no steady state: straight-line code and an empty loop.
kernel few(a) -> (c) {
  tensor a: hbm f32[64, 64] input
  tensor c: hbm f32[64, 64] output
  tensor t1: sbuf f32[32, 64] local block[i: 2]
  tensor t2: sbuf f32[32, 64] local block[i: 2]
  tensor t3: sbuf f32[32, 64] local block[i: 2]
  stmt stage=0 {
    t1{0}[0 +: 32, 0 +: 64] = load.dma a[0 +: 32, 0 +: 64]
  }
  stmt stage=0 {
    t1{1}[0 +: 32, 0 +: 64] = load.dma a[32 +: 32, 0 +: 64]
  }
  stmt stage=1 {
    t2{0}[0 +: 32, 0 +: 64] = activation.act(func=tanh, scale=1.0, bias=false) t1{0}[0 +: 32, 0 +: 64]
  }
  stmt stage=1 {
    t2{1}[0 +: 32, 0 +: 64] = activation.act(func=tanh, scale=1.0, bias=false) t1{1}[0 +: 32, 0 +: 64]
  }
  stmt stage=2 {
    t3{0}[0 +: 32, 0 +: 64] = tensor_scalar.dve(op=add, imm=1.0, reverse=false) t2{0}[0 +: 32, 0 +: 64]
  }
  loop i in 3..3 affine num_stages=4 pipelined(stages=4, trip=2, peeled) {
  }
  stmt stage=2 {
    t3{1}[0 +: 32, 0 +: 64] = tensor_scalar.dve(op=add, imm=1.0, reverse=false) t2{1}[0 +: 32, 0 +: 64]
  }
  stmt stage=3 {
    c[0 +: 32, 0 +: 64] = store.dma t3{0}[0 +: 32, 0 +: 64]
  }
  stmt stage=3 {
    c[32 +: 32, 0 +: 64] = store.dma t3{1}[0 +: 32, 0 +: 64]
  }
}
