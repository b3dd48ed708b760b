# test: legality
# The running value updated in stage 0 and stored in stage 1: the store of iteration 0 runs after the update of iteration 1.
# plan: i stages=0,0,1 order=0,1,2
kernel prefix(a) -> (o) {
  tensor a: hbm f32[1024, 512] input
  tensor o: hbm f32[1024, 512] output
  tensor acc: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local
  stmt {
    acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
  }
  loop i in 0..8 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      acc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) acc[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    }
    stmt {
      o[128*i +: 128, 0 +: 512] = store.dma acc[0 +: 128, 0 +: 512]
    }
  }
}

# output:
# plan i stages=0,0,1 order=0,1,2:
#   Anti on `acc`: `o = store` [i=0] must run before `acc = add` [i=1]
#   fast path: 2 tensor(s) proved, 1 checked by ISL; without it: flow 3, anti 3, output 2
