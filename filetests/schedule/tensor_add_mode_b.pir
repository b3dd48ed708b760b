# test: schedule
kernel tensor_add_mode_b(a, b) -> (c) {
  tensor a: hbm f32[2048, 512] input
  tensor b: hbm f32[2048, 512] input
  tensor c: hbm f32[2048, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 2]
  tensor tb: sbuf f32[128, 512] local block[i: 2]
  tensor tc: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..18 affine pipelined(stages=3, trip=16) {
    stmt stage_id=2 execution_order=0 stage=2 if i >= 2 {
      c[128*i - 256 +: 128, 0 +: 512] = store.dma tc{i - 2}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=1 execution_order=1 stage=1 if i >= 1 && i < 17 {
      tc{i - 1}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 128, 0 +: 512], tb{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage_id=0 execution_order=2 stage=0 if i < 16 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt stage_id=0 execution_order=3 stage=0 if i < 16 {
      tb{i}[0 +: 128, 0 +: 512] = load.dma b[128*i +: 128, 0 +: 512]
    }
  }
}

# schedule:
# loop i trip 18: ResMII 2588 (dma queues), RecMII 2571, II 2908, predicted 2908 (before 3339), reordered
#   recurrence: sp.load(ta) → (1 iteration later, `ta`: stage 0 → 1) dve.tensor_tensor(tc) → (1 iteration later, `ta`'s slot reused) sp.load(ta)
#   period set by: dve.tensor_tensor(tc) → (1 iteration later, `ta`'s slot reused) sp.load(ta) → (sp in order) sp.load(tb) → (sp in order) sp.store(tc) → (1 iteration later, `tc`'s slot reused) dve.tensor_tensor(tc)
#   dep sp.store(tc) -> dve.tensor_tensor(tc): anti d=1 lat=3707
#   dep dve.tensor_tensor(tc) -> sp.store(tc): flow d=1 lat=1084
#   dep dve.tensor_tensor(tc) -> dve.tensor_tensor(tc): output d=2 lat=1084
#   dep dve.tensor_tensor(tc) -> sp.load(ta): anti d=1 lat=1084
#   dep dve.tensor_tensor(tc) -> sp.load(tb): anti d=1 lat=1084
#   dep sp.load(ta) -> dve.tensor_tensor(tc): flow d=1 lat=4057
#   dep sp.load(ta) -> sp.load(ta): output d=2 lat=4057
#   dep sp.load(tb) -> dve.tensor_tensor(tc): flow d=1 lat=4057
#   dep sp.load(tb) -> sp.load(tb): output d=2 lat=4057
#   order: sp.load(ta)@0, sp.load(tb)@512, sp.store(tc)@1024, dve.tensor_tensor(tc)@1823
