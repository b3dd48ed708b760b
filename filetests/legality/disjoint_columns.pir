# test: legality
# Each iteration writes its own column in stage 0 and reads it back in stage 1 with one buffer: the fast path cannot prove it, ISL does: legal.
# plan: i stages=0,1 order=0,1
kernel columns(a) -> (o) {
  tensor a: hbm f32[128, 8] input
  tensor o: hbm f32[128, 8] output
  tensor cols: sbuf f32[128, 8] local
  loop i in 0..8 affine {
    stmt {
      cols[0 +: 128, i +: 1] = load.dma a[0 +: 128, i +: 1]
    }
    stmt {
      o[0 +: 128, i +: 1] = store.dma cols[0 +: 128, i +: 1]
    }
  }
}

# output:
# plan i stages=0,1 order=0,1:
#   legal
#   fast path: 1 tensor(s) proved, 1 checked by ISL; without it: flow 1, anti 0, output 0
