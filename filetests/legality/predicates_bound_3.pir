# test: legality
# The same guarded i < 3: iteration 2 reads block 3 after the write of iteration 3 moved before it.
# plan: i stages=0,0,1 order=0,1,2
kernel guarded(a) -> (c) {
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
    stmt if i < 3 {
      y[0 +: 128, 0 +: 512] = load.dma s[384 +: 128, 0 +: 512]
    }
  }
}

# output:
# plan i stages=0,0,1 order=0,1,2:
#   Anti on `s`: `y = load` [i=2] must run before `s = store` [i=3]
#   fast path: 2 tensor(s) proved, 1 checked by ISL; without it: flow 1, anti 2, output 2
