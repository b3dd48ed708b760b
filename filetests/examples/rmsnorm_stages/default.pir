kernel rmsnorm_stages(x, g) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor g: hbm f32[128, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor gt: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local block[i: 3]
  tensor sq: sbuf f32[128, 512] local block[i: 2]
  tensor ss: sbuf f32[128, 1] local
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor _tensor_scalar.1: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 1] local block[i: 2]
  tensor _tensor_tensor: sbuf f32[128, 512] local
  tensor yt: sbuf f32[128, 512] local block[i: 2]
  stmt {
    gt[0 +: 128, 0 +: 512] = load.dma g[0 +: 128, 0 +: 512]
  }
  loop i in 0..11 affine num_stages=3 pipelined(stages=4, trip=8) {
    stmt stage=0 if i < 8 {
      t{i}[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt stage=0 if i < 8 {
      sq{i}[0 +: 128, 0 +: 512] = activation.act(func=square, scale=1.0, bias=false) t{i}[0 +: 128, 0 +: 512]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      ss[0 +: 128, 0 +: 1] = reduce.dve(op=sum) sq{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=0.001953125, reverse=false) ss[0 +: 128, 0 +: 1]
      _tensor_scalar.1[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=add, imm=1e-6, reverse=false) _tensor_scalar[0 +: 128, 0 +: 1]
      r{i - 1}[0 +: 128, 0 +: 1] = activation.act(func=rsqrt, scale=1.0, bias=false) _tensor_scalar.1[0 +: 128, 0 +: 1]
    }
    stmt stage=2 if i >= 2 && i < 10 {
      _tensor_tensor[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) t{i - 2}[0 +: 128, 0 +: 512], r{i - 2}[0 +: 128, 0 +: 1]
      yt{i}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) _tensor_tensor[0 +: 128, 0 +: 512], gt[0 +: 128, 0 +: 512]
    }
    stmt stage=3 if i - 1 >= 2 {
      y[128*i - 384 +: 128, 0 +: 512] = store.dma yt{i - 1}[0 +: 128, 0 +: 512]
    }
  }
}
