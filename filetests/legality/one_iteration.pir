# test: legality
# One iteration: nothing to overlap, nothing to violate.
# plan: i stages=0,1,2 order=0,1,2
kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local
  tensor tb: sbuf f32[128, 512] local
  loop i in 0..1 affine {
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
# plan i stages=0,1,2 order=0,1,2:
#   legal
#   fast path: 1 tensor(s) proved, 2 checked by ISL; without it: flow 2, anti 0, output 0
