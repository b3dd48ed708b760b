kernel tensor_add_mode_b(a, b) -> (c) {
  tensor a: hbm f32[2048, 512] input
  tensor b: hbm f32[2048, 512] input
  tensor c: hbm f32[2048, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 3]
  tensor tb: sbuf f32[128, 512] local block[i: 3]
  tensor tc: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..19 affine pipelined(stages=4, trip=16) {
    stmt stage_id=2 execution_order=0 stage=3 if i - 1 >= 2 && i < 19 {
      c[128*i - 384 +: 128, 0 +: 512] = store.dma tc{i - 3}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=1 execution_order=1 stage=2 if i - 1 >= 1 && i - 1 < 17 {
      tc{i - 2}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) ta{i - 2}[0 +: 128, 0 +: 512], tb{i - 2}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=0 execution_order=2 stage=0 if i < 16 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt stage_id=0 execution_order=3 stage=0 if i < 16 {
      tb{i}[0 +: 128, 0 +: 512] = load.dma b[128*i +: 128, 0 +: 512]
    }
  }
}
