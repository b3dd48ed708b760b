# test: schedule
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
  tensor yt: sbuf f32[128, 512] local
  stmt {
    gt[0 +: 128, 0 +: 512] = load.dma g[0 +: 128, 0 +: 512]
  }
  loop i in 0..10 affine num_stages=3 pipelined(stages=3, trip=8) {
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
    stmt stage=2 if i >= 2 {
      _tensor_tensor[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) t{i - 2}[0 +: 128, 0 +: 512], r{i - 2}[0 +: 128, 0 +: 1]
      yt[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) _tensor_tensor[0 +: 128, 0 +: 512], gt[0 +: 128, 0 +: 512]
    }
    stmt stage=2 if i >= 2 {
      y[128*i - 256 +: 128, 0 +: 512] = store.dma yt[0 +: 128, 0 +: 512]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 2988 (dve), RecMII 4791, II 4791, predicted 4791 (before 4791), order kept
#   recurrence: dve.tensor_tensor(yt) → sp.store(yt) → (1 iteration later, `yt`'s slot reused) dve.tensor_tensor(yt)
#   dep sp.load(t) -> sp.load(t): output d=3 lat=3707
#   dep sp.load(t) -> act.activation(sq): flow d=0 lat=3707
#   dep sp.load(t) -> dve.tensor_tensor(_tensor_tensor): flow d=2 lat=3707
#   dep act.activation(sq) -> sp.load(t): anti d=3 lat=572
#   dep act.activation(sq) -> act.activation(sq): output d=2 lat=572
#   dep act.activation(sq) -> dve.reduce(ss): flow d=1 lat=572
#   dep dve.reduce(ss) -> act.activation(sq): anti d=1 lat=572
#   dep dve.reduce(ss) -> dve.reduce(ss): output d=1 lat=572
#   dep dve.reduce(ss) -> dve.tensor_scalar(_tensor_scalar): flow d=0 lat=572
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.reduce(ss): anti d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_scalar(_tensor_scalar): output d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_scalar(_tensor_scalar.1): flow d=0 lat=124
#   dep dve.tensor_scalar(_tensor_scalar.1) -> dve.tensor_scalar(_tensor_scalar): anti d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar.1) -> dve.tensor_scalar(_tensor_scalar.1): output d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar.1) -> act.activation(r): flow d=0 lat=124
#   dep act.activation(r) -> dve.tensor_scalar(_tensor_scalar.1): anti d=1 lat=124
#   dep act.activation(r) -> act.activation(r): output d=2 lat=124
#   dep act.activation(r) -> dve.tensor_tensor(_tensor_tensor): flow d=1 lat=124
#   dep dve.tensor_tensor(_tensor_tensor) -> sp.load(t): anti d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor) -> act.activation(r): anti d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(_tensor_tensor): output d=1 lat=1084
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(yt): flow d=0 lat=1084
#   dep dve.tensor_tensor(yt) -> dve.tensor_tensor(_tensor_tensor): anti d=1 lat=1084
#   dep dve.tensor_tensor(yt) -> dve.tensor_tensor(yt): output d=1 lat=1084
#   dep dve.tensor_tensor(yt) -> sp.store(yt): flow d=0 lat=1084
#   dep sp.store(yt) -> dve.tensor_tensor(yt): anti d=1 lat=3707
#   order: sp.load(t)@0, act.activation(sq)@3707, dve.reduce(ss)@0, dve.tensor_scalar(_tensor_scalar)@572, dve.tensor_scalar(_tensor_scalar.1)@696, act.activation(r)@4279, dve.tensor_tensor(_tensor_tensor)@820, dve.tensor_tensor(yt)@1904, sp.store(yt)@2988
