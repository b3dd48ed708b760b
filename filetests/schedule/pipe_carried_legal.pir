# test: schedule
kernel carried(a) -> (s, c) {
  tensor a: hbm f32[256, 64] input
  tensor s: hbm f32[32, 64] output
  tensor c: hbm f32[256, 64] output
  tensor acc: sbuf f32[32, 64] local
  tensor t: sbuf f32[32, 64] local block[i: 2]
  tensor u: sbuf f32[32, 64] local block[i: 2]
  tensor _tensor_scalar: sbuf f32[32, 64] local
  stmt {
    acc[0 +: 32, 0 +: 64] = memset.dve(value=0.0)
  }
  loop i in 0..10 sequential pipelined(stages=3, trip=8) {
    stmt stage_id=0 stage=0 if i < 8 {
      t{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      u{i - 1}[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) t{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage_id=1 stage=1 if i >= 1 && i < 9 {
      _tensor_scalar[0 +: 32, 0 +: 64] = tensor_scalar.dve(op=multiply, imm=0.25, reverse=false) u{i - 1}[0 +: 32, 0 +: 64]
      acc[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) acc[0 +: 32, 0 +: 64], _tensor_scalar[0 +: 32, 0 +: 64]
    }
    stmt stage_id=2 stage=2 if i >= 2 {
      c[32*i - 64 +: 32, 0 +: 64] = store.dma u{i - 2}[0 +: 32, 0 +: 64]
    }
  }
  stmt {
    s[0 +: 32, 0 +: 64] = store.dma acc[0 +: 32, 0 +: 64]
  }
}

# schedule:
# loop i trip 10: ResMII 312 (dve), RecMII 1144, II 1208, predicted 1208 (before 1208), order kept
#   recurrence: act.activation(u) → (1 iteration later, `u`: stage 1 → 2) sp.store(u) → (1 iteration later, `u`'s slot reused) act.activation(u)
#   period set by: sp.store(u) → (1 iteration later, `u`'s slot reused) act.activation(u) → (1 iteration later, `t`'s slot reused) sp.load(t) → (sp in order) sp.store(u)
#   dep sp.load(t) -> sp.load(t): output d=2 lat=2164
#   dep sp.load(t) -> act.activation(u): flow d=1 lat=2164
#   dep act.activation(u) -> sp.load(t): anti d=1 lat=124
#   dep act.activation(u) -> act.activation(u): output d=2 lat=124
#   dep act.activation(u) -> sp.store(u): flow d=1 lat=124
#   dep act.activation(u) -> dve.tensor_scalar(_tensor_scalar): flow d=0 lat=124
#   dep sp.store(u) -> act.activation(u): anti d=1 lat=2164
#   dep dve.tensor_scalar(_tensor_scalar) -> act.activation(u): anti d=2 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_scalar(_tensor_scalar): output d=1 lat=124
#   dep dve.tensor_scalar(_tensor_scalar) -> dve.tensor_tensor(acc): flow d=0 lat=124
#   dep dve.tensor_tensor(acc) -> dve.tensor_scalar(_tensor_scalar): anti d=1 lat=188
#   dep dve.tensor_tensor(acc) -> dve.tensor_tensor(acc): output d=1 lat=188
#   order: sp.load(t)@0, act.activation(u)@956, sp.store(u)@128, dve.tensor_scalar(_tensor_scalar)@1080, dve.tensor_tensor(acc)@1204
