# test: legality
# Block 3 of an HBM scratch array is written in iteration 3 and read by every iteration: the first violating pair is not at iteration 0.
# plan: i stages=0,0,1,1 order=0,1,2,3
kernel late(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor s: hbm f32[1024, 512] local
  tensor x: sbuf f32[128, 512] local
  tensor y: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      x[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      s[128*i +: 128, 0 +: 512] = store.dma x[0 +: 128, 0 +: 512]
    }
    stmt {
      y[0 +: 128, 0 +: 512] = load.dma s[384 +: 128, 0 +: 512]
    }
    stmt {
      c[128*i +: 128, 0 +: 512] = store.dma y[0 +: 128, 0 +: 512]
    }
  }
}

# output:
# plan i stages=0,0,1,1 order=0,1,2,3:
#   Anti on `s`: `y = load` [i=2] must run before `s = store` [i=3]
#   fast path: 3 tensor(s) proved, 1 checked by ISL; without it: flow 3, anti 3, output 2
