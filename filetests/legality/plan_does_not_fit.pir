# test: legality
# A plan that does not fit the loop (a stage missing, an order that is no permutation) is an error, not a verdict.
# plan: i stages=0,1 order=0,1,2 num_stages=3
# plan: i stages=0,1,2 order=0,0,2 num_stages=3
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
# plan i stages=0,1 order=0,1,2 num_stages=3:
#   error: the legality check cannot model this loop: the plan of loop `i` has 2 stages and 3 order entries for 3 children
# plan i stages=0,1,2 order=0,0,2 num_stages=3:
#   error: the legality check cannot model this loop: the execution order of loop `i` is not a permutation
