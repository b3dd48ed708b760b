# test: pir
# tensor_add after the annotated pipeliner: 3 stages over 16 iterations, extended to 18.
kernel tensor_add(a, b) -> (c) {
  tensor a: hbm f32[2048, 512] input
  tensor b: hbm f32[2048, 512] input
  tensor c: hbm f32[2048, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 2]
  tensor tb: sbuf f32[128, 512] local block[i: 2]
  tensor tc: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..18 affine num_stages=3 pipelined(stages=3, trip=16) {
    stmt stage=0 if i >= 0 && i < 16 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt stage=0 if i >= 0 && i < 16 {
      tb{i}[0 +: 128, 0 +: 512] = load.dma b[128*i +: 128, 0 +: 512]
    }
    stmt stage=1 if i >= 1 && i < 17 {
      tc{i - 1}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 128, 0 +: 512], tb{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage=2 if i >= 2 && i < 18 {
      c[128*i - 256 +: 128, 0 +: 512] = store.dma tc{i - 2}[0 +: 128, 0 +: 512]
    }
  }
}
