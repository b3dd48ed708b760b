kernel layernorm(x, gamma, beta) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor gamma: hbm f32[128, 512] input
  tensor beta: hbm f32[128, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor gt: sbuf f32[128, 512] local
  tensor bt: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local block[i: 2]
  tensor _reduce: sbuf f32[128, 1] local
  tensor mean: sbuf f32[128, 1] local
  tensor xc: sbuf f32[128, 512] local block[i: 3]
  tensor _activation: sbuf f32[128, 512] local
  tensor _reduce.1: sbuf f32[128, 1] local
  tensor var: sbuf f32[128, 1] local
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 1] local block[i: 2]
  tensor _tensor_tensor: sbuf f32[128, 512] local
  tensor _tensor_tensor.1: sbuf f32[128, 512] local
  tensor yt: sbuf f32[128, 512] local block[i: 2]
  stmt {
    gt[0 +: 128, 0 +: 512] = load.dma gamma[0 +: 128, 0 +: 512]
  }
  stmt {
    bt[0 +: 128, 0 +: 512] = load.dma beta[0 +: 128, 0 +: 512]
  }
  loop i in 0..12 affine pipelined(stages=5, trip=8) {
    stmt stage_id=0 stage=0 if i < 8 {
      t{i}[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      _reduce[0 +: 128, 0 +: 1] = reduce.dve(op=sum) t{i - 1}[0 +: 128, 0 +: 512]
      mean[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=0.001953125, reverse=false) _reduce[0 +: 128, 0 +: 1]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      xc{i - 1}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=subtract) t{i - 1}[0 +: 128, 0 +: 512], mean[0 +: 128, 0 +: 1]
    }
    stmt stage_id=2 stage=2 if i >= 2 && i < 10 {
      _activation[0 +: 128, 0 +: 512] = activation.act(func=square, scale=1.0, bias=false) xc{i - 2}[0 +: 128, 0 +: 512]
      _reduce.1[0 +: 128, 0 +: 1] = reduce.dve(op=sum) _activation[0 +: 128, 0 +: 512]
      var[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=0.001953125, reverse=false) _reduce.1[0 +: 128, 0 +: 1]
    }
    stmt stage_id=2 stage=2 if i >= 2 && i < 10 {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=add, imm=1e-5, reverse=false) var[0 +: 128, 0 +: 1]
      r{i - 2}[0 +: 128, 0 +: 1] = activation.act(func=rsqrt, scale=1.0, bias=false) _tensor_scalar[0 +: 128, 0 +: 1]
    }
    stmt stage_id=3 stage=3 if i >= 3 && i < 11 {
      _tensor_tensor[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) xc{i - 3}[0 +: 128, 0 +: 512], r{i - 3}[0 +: 128, 0 +: 1]
      _tensor_tensor.1[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) _tensor_tensor[0 +: 128, 0 +: 512], gt[0 +: 128, 0 +: 512]
      yt{i - 3}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) _tensor_tensor.1[0 +: 128, 0 +: 512], bt[0 +: 128, 0 +: 512]
    }
    stmt stage_id=4 stage=4 if i >= 4 {
      y[128*i - 512 +: 128, 0 +: 512] = store.dma yt{i - 4}[0 +: 128, 0 +: 512]
    }
  }
}
