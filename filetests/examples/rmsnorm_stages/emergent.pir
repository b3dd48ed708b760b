kernel rmsnorm_stages(x, g) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor g: hbm f32[128, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor gt: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local block[i: 6]
  tensor sq: sbuf f32[128, 512] local block[i: 2]
  tensor ss: sbuf f32[128, 1] local
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor _tensor_scalar.1: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 1] local block[i: 2]
  tensor _tensor_tensor: sbuf f32[128, 512] local
  tensor yt: sbuf f32[128, 512] local block[i: 3]
  stmt {
    gt[0 +: 128, 0 +: 512] = load.dma g[0 +: 128, 0 +: 512]
  }
  loop i in 0..13 affine {
    stmt stage=0 if i < 8 {
      t{i}[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt stage=2 if i >= 2 && i < 10 {
      sq{i - 2}[0 +: 128, 0 +: 512] = activation.act(func=square, scale=1.0, bias=false) t{i - 2}[0 +: 128, 0 +: 512]
    }
    stmt stage=3 if i >= 3 && i < 11 {
      ss[0 +: 128, 0 +: 1] = reduce.dve(op=sum) sq{i - 3}[0 +: 128, 0 +: 512]
    }
    stmt stage=3 if i >= 3 && i < 11 {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=0.001953125, reverse=false) ss[0 +: 128, 0 +: 1]
      _tensor_scalar.1[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=add, imm=1e-6, reverse=false) _tensor_scalar[0 +: 128, 0 +: 1]
      r{i - 3}[0 +: 128, 0 +: 1] = activation.act(func=rsqrt, scale=1.0, bias=false) _tensor_scalar.1[0 +: 128, 0 +: 1]
    }
    stmt stage=4 if i >= 4 && i < 12 {
      _tensor_tensor[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) t{i - 4}[0 +: 128, 0 +: 512], r{i - 4}[0 +: 128, 0 +: 1]
      yt{i - 4}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) _tensor_tensor[0 +: 128, 0 +: 512], gt[0 +: 128, 0 +: 512]
    }
    stmt stage=5 if i >= 5 {
      y[128*i - 640 +: 128, 0 +: 512] = store.dma yt{i - 5}[0 +: 128, 0 +: 512]
    }
  }
}
