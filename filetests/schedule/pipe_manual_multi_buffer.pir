# test: schedule
kernel manual(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor t: sbuf f32[32, 64] local block[i: 3]
  tensor u: sbuf f32[32, 64] local block[i: 3]
  loop i in 0..10 affine num_stages=3 multi_buffer=3 disable_auto_buffer pipelined(stages=3, trip=8) {
    stmt stage=0 if i < 8 {
      t{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      u{i - 1}[0 +: 32, 0 +: 64] = activation.act(func=sigmoid, scale=1.0, bias=false) t{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=2 if i >= 2 {
      c[32*i - 64 +: 32, 0 +: 64] = store.dma u{i - 2}[0 +: 32, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 256 (sp), RecMII 763, II 806, predicted 806 (before 806), order kept
#   recurrence: act.activation(u) → (1 iteration later, `u`: stage 1 → 2) sp.store(u) → (2 iterations later, `u`'s slot reused) act.activation(u)
#   period set by: act.activation(u) → (1 iteration later, `u`: stage 1 → 2) sp.store(u) → (sp in order, next body) sp.load(t) → (1 iteration later, `t`: stage 0 → 1) act.activation(u)
#   dep sp.load(t) -> sp.load(t): output d=3 lat=2164
#   dep sp.load(t) -> act.activation(u): flow d=1 lat=2164
#   dep act.activation(u) -> sp.load(t): anti d=2 lat=124
#   dep act.activation(u) -> act.activation(u): output d=3 lat=124
#   dep act.activation(u) -> sp.store(u): flow d=1 lat=124
#   dep sp.store(u) -> act.activation(u): anti d=2 lat=2164
#   order: sp.load(t)@0, act.activation(u)@1358, sp.store(u)@676
