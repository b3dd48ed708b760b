# test: schedule
kernel add2(a, b) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor b: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor ta: sbuf f32[32, 64] local block[i: 2]
  tensor tb: sbuf f32[32, 64] local block[i: 2]
  tensor tc: sbuf f32[32, 64] local
  loop i in 0..9 affine num_stages=2 pipelined(stages=2, trip=8) {
    stmt stage=0 if i < 8 {
      ta{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=0 if i < 8 {
      tb{i}[0 +: 32, 0 +: 64] = load.dma b[32*i +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 {
      tc[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 {
      c[32*i - 32 +: 32, 0 +: 64] = store.dma tc[0 +: 32, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 9: ResMII 384 (sp), RecMII 2352, II 2352, predicted 2352 (before 2352), order kept
#   recurrence: sp.store(tc) → (1 iteration later, `tc`'s slot reused) dve.tensor_tensor(tc) → sp.store(tc)
#   dep sp.load(ta) -> sp.load(ta): output d=2 lat=2164
#   dep sp.load(ta) -> dve.tensor_tensor(tc): flow d=1 lat=2164
#   dep sp.load(tb) -> sp.load(tb): output d=2 lat=2164
#   dep sp.load(tb) -> dve.tensor_tensor(tc): flow d=1 lat=2164
#   dep dve.tensor_tensor(tc) -> sp.load(ta): anti d=1 lat=188
#   dep dve.tensor_tensor(tc) -> sp.load(tb): anti d=1 lat=188
#   dep dve.tensor_tensor(tc) -> dve.tensor_tensor(tc): output d=1 lat=188
#   dep dve.tensor_tensor(tc) -> sp.store(tc): flow d=0 lat=188
#   dep sp.store(tc) -> dve.tensor_tensor(tc): anti d=1 lat=2164
#   order: sp.load(ta)@0, sp.load(tb)@128, dve.tensor_tensor(tc)@0, sp.store(tc)@256
