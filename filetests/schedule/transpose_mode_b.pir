# test: schedule
kernel transpose_mode_b(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 128] local block[c: 2]
  tensor tp: psum f32[128, 128] local block[c: 2]
  tensor o: sbuf f32[128, 128] local block[c: 2]
  loop r in 0..4 affine {
    loop c in 0..7 affine pipelined(stages=4, trip=4) {
      stmt stage_id=3 execution_order=0 stage=3 if c >= 3 {
        y[128*c - 384 +: 128, 128*r +: 128] = store.dma o{c - 3}[0 +: 128, 0 +: 128]
      }
      stmt stage_id=2 execution_order=1 stage=2 if c >= 2 && c < 6 {
        o{c - 2}[0 +: 128, 0 +: 128] = copy.any tp{c - 2}[0 +: 128, 0 +: 128]
      }
      stmt stage_id=1 execution_order=2 stage=1 if c >= 1 && c < 5 {
        tp{c - 1}[0 +: 128, 0 +: 128] = transpose.pe t{c - 1}[0 +: 128, 0 +: 128]
      }
      stmt stage_id=0 execution_order=3 stage=0 if c < 4 {
        t{c}[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 128*c +: 128]
      }
    }
  }
}

# schedule:
# loop c trip 7: ResMII 1024 (sp), RecMII 1508, II 1508, predicted 1508 (before 1508), order kept
#   recurrence: sp.load(t) → (1 iteration later, `t`: stage 0 → 1) pe.transpose(tp) → (1 iteration later, `t`'s slot reused) sp.load(t)
#   dep sp.store(o) -> dve.copy(o): anti d=1 lat=2764
#   dep dve.copy(o) -> sp.store(o): flow d=1 lat=188
#   dep dve.copy(o) -> dve.copy(o): output d=2 lat=188
#   dep dve.copy(o) -> pe.transpose(tp): anti d=1 lat=188
#   dep pe.transpose(tp) -> dve.copy(o): flow d=1 lat=252
#   dep pe.transpose(tp) -> pe.transpose(tp): output d=2 lat=252
#   dep pe.transpose(tp) -> sp.load(t): anti d=1 lat=252
#   dep sp.load(t) -> pe.transpose(tp): flow d=1 lat=2764
#   dep sp.load(t) -> sp.load(t): output d=2 lat=2764
#   order: sp.store(o)@0, dve.copy(o)@1256, pe.transpose(tp)@0, sp.load(t)@512
