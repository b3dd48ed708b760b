# test: legality
# Running the store, then the exponential, then the load reads every tile before the next producer overwrites it: no buffer needed.
# plan: i stages=0,1,2 order=2,1,0
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
# plan i stages=0,1,2 order=2,1,0:
#   legal
#   fast path: 3 tensor(s) proved, 0 checked by ISL; without it: flow 2, anti 2, output 2
