# test: pir
# matmul.nk as lowered: a PSUM accumulator zeroed, then accumulated over k.
kernel matmul(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 1024] input
  tensor c: hbm f32[512, 1024] output
  tensor acc: psum f32[128, 512] local
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf bf16[128, 512] local
  tensor res: sbuf f32[128, 512] local
  loop m in 0..4 affine {
    loop n in 0..2 affine num_stages=3 {
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
