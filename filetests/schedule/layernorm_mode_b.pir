# test: schedule
kernel layernorm_mode_b(x, gamma, beta) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor gamma: hbm f32[128, 512] input
  tensor beta: hbm f32[128, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor gt: sbuf f32[128, 512] local
  tensor bt: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local block[i: 2]
  tensor _reduce: sbuf f32[128, 1] local
  tensor mean: sbuf f32[128, 1] local
  tensor xc: sbuf f32[128, 512] local block[i: 2]
  tensor _activation: sbuf f32[128, 512] local
  tensor _reduce.1: sbuf f32[128, 1] local
  tensor var: sbuf f32[128, 1] local
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 1] local block[i: 2]
  tensor _tensor_tensor: sbuf f32[128, 512] local
  tensor _tensor_tensor.1: sbuf f32[128, 512] local
  tensor yt: sbuf f32[128, 512] local
  stmt {
    gt[0 +: 128, 0 +: 512] = load.dma gamma[0 +: 128, 0 +: 512]
  }
  stmt {
    bt[0 +: 128, 0 +: 512] = load.dma beta[0 +: 128, 0 +: 512]
  }
  loop i in 0..10 affine pipelined(stages=3, trip=8) {
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
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      _activation[0 +: 128, 0 +: 512] = activation.act(func=square, scale=1.0, bias=false) xc{i - 1}[0 +: 128, 0 +: 512]
      _reduce.1[0 +: 128, 0 +: 1] = reduce.dve(op=sum) _activation[0 +: 128, 0 +: 512]
      var[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=0.001953125, reverse=false) _reduce.1[0 +: 128, 0 +: 1]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=add, imm=1e-5, reverse=false) var[0 +: 128, 0 +: 1]
      r{i - 1}[0 +: 128, 0 +: 1] = activation.act(func=rsqrt, scale=1.0, bias=false) _tensor_scalar[0 +: 128, 0 +: 1]
    }
    stmt stage_id=2 stage=2 if i >= 2 {
      _tensor_tensor[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) xc{i - 2}[0 +: 128, 0 +: 512], r{i - 2}[0 +: 128, 0 +: 1]
      _tensor_tensor.1[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) _tensor_tensor[0 +: 128, 0 +: 512], gt[0 +: 128, 0 +: 512]
      yt[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) _tensor_tensor.1[0 +: 128, 0 +: 512], bt[0 +: 128, 0 +: 512]
    }
    stmt stage_id=2 stage=2 if i >= 2 {
      y[128*i - 256 +: 128, 0 +: 512] = store.dma yt[0 +: 128, 0 +: 512]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 5852 (dve), RecMII 4791, II 5852, predicted 5852 (before 6424), reordered
#   recurrence: dve.tensor_tensor(yt) → sp.store(yt) → (1 iteration later, `yt`'s slot reused) dve.tensor_tensor(yt)
#   dep sp.load(t) -> sp.load(t): output d=2 lat=3707
#   dep sp.load(t) -> dve.reduce(_reduce): flow d=1 lat=3707
#   dep sp.load(t) -> dve.tensor_tensor(xc): flow d=1 lat=3707
#   dep dve.reduce(_reduce) -> sp.load(t): anti d=1 lat=572
#   dep dve.reduce(_reduce) -> dve.reduce(_reduce): output d=1 lat=572
#   dep dve.reduce(_reduce) -> dve.tensor_scalar(mean): flow d=0 lat=572
#   dep dve.tensor_scalar(mean) -> dve.reduce(_reduce): anti d=1 lat=124
#   dep dve.tensor_scalar(mean) -> dve.tensor_scalar(mean): output d=1 lat=124
#   dep dve.tensor_scalar(mean) -> dve.tensor_tensor(xc): flow d=0 lat=124
#   dep dve.tensor_tensor(xc) -> sp.load(t): anti d=1 lat=1084
#   dep dve.tensor_tensor(xc) -> dve.tensor_scalar(mean): anti d=1 lat=1084
#   dep dve.tensor_tensor(xc) -> dve.tensor_tensor(xc): output d=2 lat=1084
#   dep dve.tensor_tensor(xc) -> act.activation(_activation): flow d=0 lat=1084
#   dep dve.tensor_tensor(xc) -> dve.tensor_tensor(_tensor_tensor): flow d=1 lat=1084
#   dep act.activation(_activation) -> dve.tensor_tensor(xc): anti d=2 lat=572
#   dep act.activation(_activation) -> act.activation(_activation): output d=1 lat=572
#   dep act.activation(_activation) -> dve.reduce(_reduce.1): flow d=0 lat=572
#   dep dve.reduce(_reduce.1) -> act.activation(_activation): anti d=1 lat=572
#   dep dve.reduce(_reduce.1) -> dve.reduce(_reduce.1): output d=1 lat=572
#   dep dve.reduce(_reduce.1) -> dve.tensor_scalar(var): flow d=0 lat=572
#   dep dve.tensor_scalar(var) -> dve.reduce(_reduce.1): anti d=1 lat=124
#   dep dve.tensor_scalar(var) -> dve.tensor_scalar(var): output d=1 lat=124
#   dep dve.tensor_scalar(var) -> dve.tensor_scalar(_tensor_scalar): flow d=0 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_scalar(var): anti d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_scalar(_tensor_scalar): output d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> act.activation(r): flow d=0 lat=124
#   dep act.activation(r) -> dve.tensor_scalar(_tensor_scalar): anti d=1 lat=124
#   dep act.activation(r) -> act.activation(r): output d=2 lat=124
#   dep act.activation(r) -> dve.tensor_tensor(_tensor_tensor): flow d=1 lat=124
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(xc): anti d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor) -> act.activation(r): anti d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(_tensor_tensor): output d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(_tensor_tensor.1): flow d=0 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor.1) -> dve.tensor_tensor(_tensor_tensor): anti d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor.1) -> dve.tensor_tensor(_tensor_tensor.1): output d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor.1) -> dve.tensor_tensor(yt): flow d=0 lat=1084
#   dep dve.tensor_tensor(yt) -> dve.tensor_tensor(_tensor_tensor.1): anti d=1 lat=1084
#   dep dve.tensor_tensor(yt) -> dve.tensor_tensor(yt): output d=1 lat=1084
#   dep dve.tensor_tensor(yt) -> sp.store(yt): flow d=0 lat=1084
#   dep sp.store(yt) -> dve.tensor_tensor(yt): anti d=1 lat=3707
#   order: sp.load(t)@0, dve.reduce(_reduce)@0, dve.tensor_tensor(_tensor_tensor)@572, dve.tensor_scalar(mean)@1656, dve.tensor_tensor(xc)@1780, dve.tensor_tensor(_tensor_tensor.1)@2864, act.activation(_activation)@2864, dve.tensor_tensor(yt)@3948, dve.reduce(_reduce.1)@5032, sp.store(yt)@5032, dve.tensor_scalar(var)@5604, dve.tensor_scalar(_tensor_scalar)@5728, act.activation(r)@5852
