# test: legality
# A running sum in SBUF read and written in one stage is legal.
# plan: i stages=0,1 order=0,1 buffers=t:2
kernel sum(a) -> (o) {
  tensor a: hbm f32[1024, 512] input
  tensor o: hbm f32[128, 512] output
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
  }
  stmt {
    o[0 +: 128, 0 +: 512] = store.dma acc[0 +: 128, 0 +: 512]
  }
}

# output:
# plan i stages=0,1 order=0,1 buffers=t:2:
#   legal
#   fast path: 2 tensor(s) proved, 0 checked by ISL; without it: flow 2, anti 2, output 2
