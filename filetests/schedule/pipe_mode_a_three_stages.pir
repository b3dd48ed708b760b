# test: schedule
kernel three(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor ta: sbuf f32[32, 64] local block[i: 2]
  tensor tb: sbuf f32[32, 64] local block[i: 2]
  tensor tc: sbuf f32[32, 64] local block[i: 2]
  loop i in 0..10 sequential num_stages=3 pipelined(stages=3, trip=8) {
    stmt stage=0 if i < 8 {
      ta{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=0 if i < 8 {
      tb{i}[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) ta{i}[0 +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      tc{i - 1}[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=multiply) tb{i - 1}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=2 if i >= 2 {
      c[32*i - 64 +: 32, 0 +: 64] = store.dma tc{i - 2}[0 +: 32, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 256 (sp), RecMII 1238, II 1240, predicted 1240 (before 1240), order kept
#   recurrence: sp.load(ta) → act.activation(tb) → (1 iteration later, `tb`: stage 0 → 1) dve.tensor_tensor(tc) → (1 iteration later, `ta`'s slot reused) sp.load(ta)
#   dep sp.load(ta) -> sp.load(ta): output d=2 lat=2164
#   dep sp.load(ta) -> act.activation(tb): flow d=0 lat=2164
#   dep sp.load(ta) -> dve.tensor_tensor(tc): flow d=1 lat=2164
#   dep act.activation(tb) -> sp.load(ta): anti d=2 lat=124
#   dep act.activation(tb) -> act.activation(tb): output d=2 lat=124
#   dep act.activation(tb) -> dve.tensor_tensor(tc): flow d=1 lat=124
#   dep dve.tensor_tensor(tc) -> sp.load(ta): anti d=1 lat=188
#   dep dve.tensor_tensor(tc) -> act.activation(tb): anti d=1 lat=188
#   dep dve.tensor_tensor(tc) -> dve.tensor_tensor(tc): output d=2 lat=188
#   dep dve.tensor_tensor(tc) -> sp.store(tc): flow d=1 lat=188
#   dep sp.store(tc) -> dve.tensor_tensor(tc): anti d=1 lat=2164
#   order: sp.load(ta)@0, act.activation(tb)@2164, dve.tensor_tensor(tc)@1048, sp.store(tc)@128
