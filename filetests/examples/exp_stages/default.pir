kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 2]
  tensor tb: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..10 affine pipelined(stages=3, trip=8) {
    stmt stage_id=2 execution_order=0 stage=2 if i >= 2 {
      c[128*i - 256 +: 128, 0 +: 512] = store.dma tb{i - 2}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=1 execution_order=1 stage=1 if i >= 1 && i < 9 {
      tb{i - 1}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) ta{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=0 execution_order=2 stage=0 if i < 8 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
  }
}
