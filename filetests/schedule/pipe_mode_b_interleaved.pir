# test: schedule
kernel inter(a, b) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor b: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor x: sbuf f32[32, 64] local block[i: 2]
  tensor y: sbuf f32[32, 64] local block[i: 2]
  tensor e: sbuf f32[32, 64] local
  tensor s: sbuf f32[32, 64] local block[i: 2]
  loop i in 0..10 affine pipelined(stages=3, trip=8) {
    stmt stage_id=2 execution_order=0 stage=2 if i >= 2 {
      c[32*i - 64 +: 32, 0 +: 64] = store.dma s{i - 2}[0 +: 32, 0 +: 64]
    }
    stmt stage_id=0 execution_order=1 stage=0 if i < 8 {
      x{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=1 execution_order=2 stage=1 if i >= 1 && i < 9 {
      e[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) x{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage_id=0 execution_order=3 stage=0 if i < 8 {
      y{i}[0 +: 32, 0 +: 64] = load.dma b[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=1 execution_order=4 stage=1 if i >= 1 && i < 9 {
      s{i - 1}[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=subtract) e[0 +: 32, 0 +: 64], y{i - 1}[0 +: 32, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 384 (sp), RecMII 1176, II 1240, predicted 1240 (before 1240), order kept
#   recurrence: sp.store(s) → (1 iteration later, `s`'s slot reused) dve.tensor_tensor(s) → (1 iteration later, `s`: stage 1 → 2) sp.store(s)
#   period set by: sp.store(s) → (sp in order) sp.load(y) → (1 iteration later, `y`: stage 0 → 1) dve.tensor_tensor(s) → (1 iteration later, `s`: stage 1 → 2) sp.store(s)
#   dep sp.load(x) -> sp.load(x): output d=2 lat=2164
#   dep sp.load(x) -> act.activation(e): flow d=1 lat=2164
#   dep sp.store(s) -> dve.tensor_tensor(s): anti d=1 lat=2164
#   dep sp.load(y) -> sp.load(y): output d=2 lat=2164
#   dep sp.load(y) -> dve.tensor_tensor(s): flow d=1 lat=2164
#   dep act.activation(e) -> sp.load(x): anti d=1 lat=124
#   dep act.activation(e) -> act.activation(e): output d=1 lat=124
#   dep act.activation(e) -> dve.tensor_tensor(s): flow d=0 lat=124
#   dep dve.tensor_tensor(s) -> sp.store(s): flow d=1 lat=188
#   dep dve.tensor_tensor(s) -> sp.load(y): anti d=1 lat=188
#   dep dve.tensor_tensor(s) -> act.activation(e): anti d=1 lat=188
#   dep dve.tensor_tensor(s) -> dve.tensor_tensor(s): output d=2 lat=188
#   order: sp.load(x)@0, sp.store(s)@128, sp.load(y)@256, act.activation(e)@924, dve.tensor_tensor(s)@1180
