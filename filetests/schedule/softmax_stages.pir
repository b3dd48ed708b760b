# test: schedule
kernel softmax_stages(x) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 512] local block[i: 2]
  tensor mx: sbuf f32[128, 1] local block[i: 2]
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor e: sbuf f32[128, 512] local block[i: 2]
  tensor s: sbuf f32[128, 1] local block[i: 2]
  tensor _activation: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 512] local
  loop i in 0..10 affine num_stages=3 pipelined(stages=3, trip=8) {
    stmt stage=0 if i < 8 {
      t{i}[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt stage=0 if i < 8 {
      mx{i}[0 +: 128, 0 +: 1] = reduce.dve(op=max) t{i}[0 +: 128, 0 +: 512]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=-1.0, reverse=false) mx{i - 1}[0 +: 128, 0 +: 1]
      e{i - 1}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=true) t{i - 1}[0 +: 128, 0 +: 512], _tensor_scalar[0 +: 128, 0 +: 1]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      s{i - 1}[0 +: 128, 0 +: 1] = reduce.dve(op=sum) e{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage=2 if i >= 2 {
      _activation[0 +: 128, 0 +: 1] = activation.act(func=reciprocal, scale=1.0, bias=false) s{i - 2}[0 +: 128, 0 +: 1]
      r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) e{i - 2}[0 +: 128, 0 +: 512], _activation[0 +: 128, 0 +: 1]
    }
    stmt stage=2 if i >= 2 {
      y[128*i - 256 +: 128, 0 +: 512] = store.dma r[0 +: 128, 0 +: 512]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 2352 (dve), RecMII 4791, II 4791, predicted 4791 (before 7655), reordered
#   recurrence: sp.store(r) → (1 iteration later, `r`'s slot reused) dve.tensor_tensor(r) → sp.store(r)
#   dep sp.load(t) -> sp.load(t): output d=2 lat=3707
#   dep sp.load(t) -> dve.reduce(mx): flow d=0 lat=3707
#   dep sp.load(t) -> act.activation(e): flow d=1 lat=3707
#   dep dve.reduce(mx) -> sp.load(t): anti d=2 lat=572
#   dep dve.reduce(mx) -> dve.reduce(mx): output d=2 lat=572
#   dep dve.reduce(mx) -> dve.tensor_scalar(_tensor_scalar): flow d=1 lat=572
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.reduce(mx): anti d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_scalar(_tensor_scalar): output d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> act.activation(e): flow d=0 lat=124
#   dep act.activation(e) -> sp.load(t): anti d=1 lat=572
#   dep act.activation(e) -> dve.tensor_scalar(_tensor_scalar): anti d=1 lat=572
#   dep act.activation(e) -> act.activation(e): output d=2 lat=572
#   dep act.activation(e) -> dve.reduce(s): flow d=0 lat=572
#   dep act.activation(e) -> dve.tensor_tensor(r): flow d=1 lat=572
#   dep dve.reduce(s) -> act.activation(e): anti d=2 lat=572
#   dep dve.reduce(s) -> dve.reduce(s): output d=2 lat=572
#   dep dve.reduce(s) -> act.activation(_activation): flow d=1 lat=572
#   dep act.activation(_activation) -> dve.reduce(s): anti d=1 lat=124
#   dep act.activation(_activation) -> act.activation(_activation): output d=1 lat=124
#   dep act.activation(_activation) -> dve.tensor_tensor(r): flow d=0 lat=124
#   dep dve.tensor_tensor(r) -> act.activation(e): anti d=1 lat=1084
#   dep dve.tensor_tensor(r) -> act.activation(_activation): anti d=1 lat=1084
#   dep dve.tensor_tensor(r) -> dve.tensor_tensor(r): output d=1 lat=1084
#   dep dve.tensor_tensor(r) -> sp.store(r): flow d=0 lat=1084
#   dep sp.store(r) -> dve.tensor_tensor(r): anti d=1 lat=3707
#   order: sp.load(t)@0, dve.tensor_scalar(_tensor_scalar)@0, act.activation(_activation)@0, act.activation(e)@124, dve.tensor_tensor(r)@124, dve.reduce(s)@1208, sp.store(r)@1208, dve.reduce(mx)@3707
