# test: schedule
kernel ring(x, w) -> (y) {
  tensor x: hbm f32[256, 64] input
  tensor w: hbm f32[32, 64] input
  tensor y: hbm f32[512, 64] output
  tensor tw: sbuf f32[32, 64] local
  tensor tx: sbuf f32[32, 64] local
  tensor p: psum f32[64, 64] local block[i: 2]
  tensor r: sbuf f32[64, 64] local
  stmt {
    tw[0 +: 32, 0 +: 64] = load.dma w[0 +: 32, 0 +: 64]
  }
  loop i in 0..9 affine pipelined(stages=2, trip=8) {
    stmt stage_id=0 stage=0 if i < 8 {
      tx[0 +: 32, 0 +: 64] = load.dma x[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=0 stage=0 if i < 8 {
      p{i}[0 +: 64, 0 +: 64] = matmul.pe(accumulate=false) tx[0 +: 32, 0 +: 64], tw[0 +: 32, 0 +: 64]
    }
    stmt stage_id=1 stage=1 if i >= 1 {
      r[0 +: 64, 0 +: 64] = copy.any p{i - 1}[0 +: 64, 0 +: 64]
    }
    stmt stage_id=1 stage=1 if i >= 1 {
      y[64*i - 64 +: 64, 0 +: 64] = store.dma r[0 +: 64, 0 +: 64]
    }
  }
}

# schedule:
# loop i trip 9: ResMII 384 (sp), RecMII 2544, II 2544, predicted 2544 (before 2544), order kept
#   recurrence: sp.load(tx) → pe.matmul(p) → (1 iteration later, `tx`'s slot reused) sp.load(tx)
#   dep sp.load(tx) -> sp.load(tx): output d=1 lat=2164
#   dep sp.load(tx) -> pe.matmul(p): flow d=0 lat=2164
#   dep pe.matmul(p) -> sp.load(tx): anti d=1 lat=380
#   dep pe.matmul(p) -> pe.matmul(p): output d=2 lat=380
#   dep pe.matmul(p) -> dve.copy(r): flow d=1 lat=380
#   dep dve.copy(r) -> pe.matmul(p): anti d=1 lat=124
#   dep dve.copy(r) -> dve.copy(r): output d=1 lat=124
#   dep dve.copy(r) -> sp.store(r): flow d=0 lat=124
#   dep sp.store(r) -> dve.copy(r): anti d=1 lat=2292
#   order: sp.load(tx)@0, pe.matmul(p)@2164, dve.copy(r)@0, sp.store(r)@128
