kernel softmax(x) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 512] local block[i: 2]
  tensor mx: sbuf f32[128, 1] local
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor e: sbuf f32[128, 512] local block[i: 2]
  tensor s: sbuf f32[128, 1] local block[i: 2]
  tensor _activation: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..11 affine pipelined(stages=4, trip=8) {
    stmt stage_id=0 stage=0 if i < 8 {
      t{i}[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      mx[0 +: 128, 0 +: 1] = reduce.dve(op=max) t{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=-1.0, reverse=false) mx[0 +: 128, 0 +: 1]
      e{i - 1}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=true) t{i - 1}[0 +: 128, 0 +: 512], _tensor_scalar[0 +: 128, 0 +: 1]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      s{i - 1}[0 +: 128, 0 +: 1] = reduce.dve(op=sum) e{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=2 stage=2 if i >= 2 && i < 10 {
      _activation[0 +: 128, 0 +: 1] = activation.act(func=reciprocal, scale=1.0, bias=false) s{i - 2}[0 +: 128, 0 +: 1]
      r{i}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) e{i - 2}[0 +: 128, 0 +: 512], _activation[0 +: 128, 0 +: 1]
    }
    stmt stage_id=2 stage=3 if i - 1 >= 2 {
      y[128*i - 384 +: 128, 0 +: 512] = store.dma r{i - 1}[0 +: 128, 0 +: 512]
    }
  }
}
