# test: schedule
kernel several(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor t: sbuf f32[32, 64] local block[i: 4]
  tensor u: sbuf f32[32, 64] local block[i: 3]
  tensor v: sbuf f32[32, 64] local block[i: 2]
  tensor _tensor_tensor: sbuf f32[32, 64] local
  tensor w: sbuf f32[32, 64] local
  loop i in 0..11 affine pipelined(stages=4, trip=8) {
    stmt stage_id=0 stage=0 if i < 8 {
      t{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      u{i - 1}[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) t{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage_id=2 stage=2 if i >= 2 && i < 10 {
      v{i - 2}[0 +: 32, 0 +: 64] = tensor_scalar.dve(op=multiply, imm=0.5, reverse=false) u{i - 2}[0 +: 32, 0 +: 64]
    }
    stmt stage_id=3 stage=3 if i >= 3 {
      _tensor_tensor[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) t{i - 3}[0 +: 32, 0 +: 64], u{i - 3}[0 +: 32, 0 +: 64]
      w[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) _tensor_tensor[0 +: 32, 0 +: 64], v{i - 3}[0 +: 32, 0 +: 64]
    }
    stmt stage_id=3 stage=3 if i >= 3 {
      c[32*i - 96 +: 32, 0 +: 64] = store.dma w[0 +: 32, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 11: ResMII 500 (dve), RecMII 2352, II 2352, predicted 2352 (before 2352), order kept
#   recurrence: sp.store(w) → (1 iteration later, `w`'s slot reused) dve.tensor_tensor(w) → sp.store(w)
#   dep sp.load(t) -> sp.load(t): output d=4 lat=2164
#   dep sp.load(t) -> act.activation(u): flow d=1 lat=2164
#   dep sp.load(t) -> dve.tensor_tensor(_tensor_tensor): flow d=3 lat=2164
#   dep act.activation(u) -> sp.load(t): anti d=3 lat=124
#   dep act.activation(u) -> act.activation(u): output d=3 lat=124
#   dep act.activation(u) -> dve.tensor_tensor(_tensor_tensor): flow d=2 lat=124
#   dep act.activation(u) -> dve.tensor_scalar(v): flow d=1 lat=124
#   dep dve.tensor_tensor(_tensor_tensor) -> sp.load(t): anti d=1 lat=188
#   dep dve.tensor_tensor(_tensor_tensor) -> act.activation(u): anti d=1 lat=188
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(_tensor_tensor): output d=1 lat=188
#   dep dve.tensor_tensor(_tensor_tensor) -> dve.tensor_tensor(w): flow d=0 lat=188
#   dep dve.tensor_scalar(v) -> act.activation(u): anti d=2 lat=124
#   dep dve.tensor_scalar(v) -> dve.tensor_scalar(v): output d=2 lat=124
#   dep dve.tensor_scalar(v) -> dve.tensor_tensor(w): flow d=1 lat=124
#   dep dve.tensor_tensor(w) -> dve.tensor_tensor(_tensor_tensor): anti d=1 lat=188
#   dep dve.tensor_tensor(w) -> dve.tensor_scalar(v): anti d=1 lat=188
#   dep dve.tensor_tensor(w) -> dve.tensor_tensor(w): output d=1 lat=188
#   dep dve.tensor_tensor(w) -> sp.store(w): flow d=0 lat=188
#   dep sp.store(w) -> dve.tensor_tensor(w): anti d=1 lat=2164
#   order: sp.load(t)@0, act.activation(u)@0, dve.tensor_tensor(_tensor_tensor)@0, dve.tensor_scalar(v)@188, dve.tensor_tensor(w)@312, sp.store(w)@500
