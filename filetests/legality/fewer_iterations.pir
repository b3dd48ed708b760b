# test: legality
# Fewer iterations than stages: two iterations with widened tiles are legal, without buffers not; one iteration has nothing to violate; four stages over two iterations.
# plan: i stages=0,1,2 order=0,1,2 buffers=ta:2,tb:2
# plan: i stages=0,1,2 order=0,1,2
# plan: i stages=0,1,3 order=0,1,2 buffers=ta:2,tb:3 num_stages=4
kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local
  tensor tb: sbuf f32[128, 512] local
  loop i in 0..2 affine {
    stmt {
      ta[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      tb[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) ta[0 +: 128, 0 +: 512]
    }
    stmt {
      c[128*i +: 128, 0 +: 512] = store.dma tb[0 +: 128, 0 +: 512]
    }
  }
}

# output:
# plan i stages=0,1,2 order=0,1,2 buffers=ta:2,tb:2:
#   legal
#   fast path: 3 tensor(s) proved, 0 checked by ISL; without it: flow 2, anti 0, output 0
# plan i stages=0,1,2 order=0,1,2:
#   Anti on `ta`: `tb = exp` [i=0] must run before `ta = load` [i=1]
#   Anti on `tb`: `c = store` [i=0] must run before `tb = exp` [i=1]
#   fast path: 1 tensor(s) proved, 2 checked by ISL; without it: flow 2, anti 2, output 2
# plan i stages=0,1,3 order=0,1,2 buffers=ta:2,tb:3 num_stages=4:
#   legal
#   fast path: 3 tensor(s) proved, 0 checked by ISL; without it: flow 2, anti 0, output 0
