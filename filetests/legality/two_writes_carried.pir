# test: legality
# Two writes to a carried buffer: in one stage in program order, legal; in two stages, or reordered in one, an output violation.
# plan: i stages=0,0 order=0,1
# plan: i stages=0,1 order=0,1
# plan: i stages=0,0 order=1,0
kernel last(a) -> (o) {
  tensor a: hbm f32[1024, 512] input
  tensor o: hbm f32[128, 512] output
  tensor buf: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      buf[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      buf[0 +: 128, 0 +: 512] = memset.dve(value=1.0)
    }
  }
  stmt {
    o[0 +: 128, 0 +: 512] = store.dma buf[0 +: 128, 0 +: 512]
  }
}

# output:
# plan i stages=0,0 order=0,1:
#   legal
#   fast path: 1 tensor(s) proved, 0 checked by ISL; without it: flow 0, anti 0, output 4
# plan i stages=0,1 order=0,1:
#   Output on `buf`: `buf = memset` [i=0] must run before `buf = load` [i=1]
#   fast path: 0 tensor(s) proved, 1 checked by ISL; without it: flow 0, anti 0, output 4
# plan i stages=0,0 order=1,0:
#   Output on `buf`: `buf = load` [i=0] must run before `buf = memset` [i=0]
#   fast path: 0 tensor(s) proved, 1 checked by ISL; without it: flow 0, anti 0, output 4
