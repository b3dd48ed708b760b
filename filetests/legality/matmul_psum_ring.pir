# test: legality
# The tiled matmul in Mode A, 3 stages over [memset, k loop], [copy], [store]: a PSUM ring of depth 2 is legal, of depth 1 the copy of block 0 runs after the memset of block 1; the k loop before the memset in one stage names its iterations.
# plan: n stages=0,0,1,2 order=0,1,2,3 buffers=acc:2,res:2
# plan: n stages=0,0,1,2 order=0,1,2,3 buffers=res:2
# plan: n stages=0,0,1,2 order=1,0,2,3 buffers=acc:2,res:2 num_stages=3
kernel matmul(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 2048] input
  tensor c: hbm f32[512, 2048] output
  tensor acc: psum f32[128, 512] local
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf f32[128, 512] local
  tensor res: sbuf f32[128, 512] local
  loop m in 0..4 affine {
    loop n in 0..4 affine num_stages=3 {
      stmt {
        acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      }
      loop k in 0..4 affine {
        stmt {
          lhs[0 +: 128, 0 +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
        }
        stmt {
          rhs[0 +: 128, 0 +: 512] = load.dma b[128*k +: 128, 512*n +: 512]
        }
        stmt {
          acc[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 0 +: 128], rhs[0 +: 128, 0 +: 512]
        }
      }
      stmt {
        res[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 0 +: 512]
      }
      stmt {
        c[128*m +: 128, 512*n +: 512] = store.dma res[0 +: 128, 0 +: 512]
      }
    }
  }
}

# output:
# plan n stages=0,0,1,2 order=0,1,2,3 buffers=acc:2,res:2:
#   legal
#   fast path: 5 tensor(s) proved, 0 checked by ISL; without it: flow 7, anti 7, output 7
# plan n stages=0,0,1,2 order=0,1,2,3 buffers=res:2:
#   Anti on `acc`: `res = copy` [m=0, n=0] must run before `acc = memset` [m=0, n=1]
#   fast path: 4 tensor(s) proved, 1 checked by ISL; without it: flow 7, anti 7, output 7
# plan n stages=0,0,1,2 order=1,0,2,3 buffers=acc:2,res:2 num_stages=3:
#   Flow on `acc`: `acc = memset` [m=0, n=0] must run before `acc = matmul accumulate` [m=0, n=0, k=0]
#   Output on `acc`: `acc = memset` [m=0, n=0] must run before `acc = matmul accumulate` [m=0, n=0, k=0]
#   fast path: 4 tensor(s) proved, 1 checked by ISL; without it: flow 7, anti 7, output 7
