# test: legality
# The exponential runs before the load of its own iteration, in the same stage: a flow violation.
# plan: i stages=0,0,1 order=1,0,2 buffers=tb:2
kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local
  tensor tb: sbuf f32[128, 512] local
  loop i in 0..8 affine {
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
# plan i stages=0,0,1 order=1,0,2 buffers=tb:2:
#   Flow on `ta`: `ta = load` [i=0] must run before `tb = exp` [i=0]
#   fast path: 2 tensor(s) proved, 1 checked by ISL; without it: flow 2, anti 2, output 2
