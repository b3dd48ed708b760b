# test: schedule
kernel few(a) -> (c) {
  tensor a: hbm f32[64, 64] input
  tensor c: hbm f32[64, 64] output
  tensor t1: sbuf f32[32, 64] local block[i: 2]
  tensor t2: sbuf f32[32, 64] local block[i: 2]
  tensor t3: sbuf f32[32, 64] local block[i: 2]
  loop i in 0..5 affine num_stages=4 pipelined(stages=4, trip=2) {
    stmt stage=0 if i < 2 {
      t1{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 && i < 3 {
      t2{i - 1}[0 +: 32, 0 +: 64] = activation.act(func=tanh, scale=1.0, bias=false) t1{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=2 if i >= 2 && i < 4 {
      t3{i - 2}[0 +: 32, 0 +: 64] = tensor_scalar.dve(op=add, imm=1.0, reverse=false) t2{i - 2}[0 +: 32, 0 +: 64]
    }
    stmt stage=3 if i >= 3 {
      c[32*i - 96 +: 32, 0 +: 64] = store.dma t3{i - 3}[0 +: 32, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 5: ResMII 124 (act), RecMII 0, II 616, predicted 616 (before 616), order kept
#   period set by: act.activation(t2) → (1 iteration later, `t2`: stage 1 → 2) dve.tensor_scalar(t3) → (1 iteration later, `t3`: stage 2 → 3) sp.store(t3) → (sp in order, next body) sp.load(t1) → (1 iteration later, `t1`: stage 0 → 1) act.activation(t2)
#   dep sp.load(t1) -> act.activation(t2): flow d=1 lat=2164
#   dep act.activation(t2) -> dve.tensor_scalar(t3): flow d=1 lat=124
#   dep dve.tensor_scalar(t3) -> sp.store(t3): flow d=1 lat=124
#   order: sp.load(t1)@0, act.activation(t2)@1548, dve.tensor_scalar(t3)@1056, sp.store(t3)@564
