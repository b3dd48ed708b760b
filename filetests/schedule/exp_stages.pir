# test: schedule
kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 2]
  tensor tb: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..10 affine pipelined(stages=3, trip=8) {
    stmt stage_id=2 execution_order=0 stage=2 if i >= 2 {
      c[128*i - 256 +: 128, 0 +: 512] = store.dma tb{i - 2}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=1 execution_order=1 stage=1 if i >= 1 && i < 9 {
      tb{i - 1}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) ta{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=0 execution_order=2 stage=0 if i < 8 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
  }
}

# schedule:
# loop i trip 10: ResMII 1725 (dma queues), RecMII 2315, II 2571, predicted 2571 (before 2571), order kept
#   recurrence: act.activation(tb) → (1 iteration later, `ta`'s slot reused) sp.load(ta) → (1 iteration later, `ta`: stage 0 → 1) act.activation(tb)
#   period set by: sp.store(tb) → (sp in order) sp.load(ta) → (1 iteration later, `ta`: stage 0 → 1) act.activation(tb) → (1 iteration later, `tb`: stage 1 → 2) sp.store(tb)
#   dep sp.store(tb) -> act.activation(tb): anti d=1 lat=4057
#   dep act.activation(tb) -> sp.store(tb): flow d=1 lat=572
#   dep act.activation(tb) -> act.activation(tb): output d=2 lat=572
#   dep act.activation(tb) -> sp.load(ta): anti d=1 lat=572
#   dep sp.load(ta) -> act.activation(tb): flow d=1 lat=4057
#   dep sp.load(ta) -> sp.load(ta): output d=2 lat=4057
#   order: sp.store(tb)@0, act.activation(tb)@1486, sp.load(ta)@512
