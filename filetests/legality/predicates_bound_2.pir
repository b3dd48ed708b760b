# test: legality
# The late-violation kernel with the read of block 3 guarded (i < 2): both reading iterations run before iteration 3 writes it.
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
    stmt if i < 2 {
      y[0 +: 128, 0 +: 512] = load.dma s[384 +: 128, 0 +: 512]
    }
  }
}

# output:
# plan i stages=0,0,1 order=0,1,2:
#   legal
#   fast path: 2 tensor(s) proved, 1 checked by ISL; without it: flow 1, anti 2, output 2
