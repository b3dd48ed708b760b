kernel matmul_mode_b(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 1024] input
  tensor c: hbm f32[512, 1024] output
  tensor acc: psum f32[128, 512] local block[n: 2]
  tensor lhs: sbuf f32[128, 128] local block[k: 4]
  tensor rhs: sbuf f32[128, 512] local block[k: 4]
  tensor res: sbuf f32[128, 512] local block[n: 2]
  loop m in 0..4 affine {
    loop n in 0..2 affine {
      stmt {
        acc{n}[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      }
      loop k in 0..5 affine pipelined(stages=2, trip=4) {
        stmt stage_id=0 stage=0 if m == 0 && n == 0 && k < 1 {
          lhs{k}[0 +: 128, 0 +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
        }
        stmt stage_id=0 stage=0 if k >= 4 && k < 5 && n < 1 {
          lhs{k}[0 +: 128, 0 +: 128] = load.dma at[128*k - 512 +: 128, 128*m +: 128]
        }
        stmt stage_id=0 stage=0 if k >= 4 && k < 5 && m < 3 && n == 1 {
          lhs{k}[0 +: 128, 0 +: 128] = load.dma at[128*k - 512 +: 128, 128*m + 128 +: 128]
        }
        stmt stage_id=0 stage=0 if k >= 1 && k < 4 {
          lhs{k}[0 +: 128, 0 +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
        }
        stmt stage_id=0 stage=0 if m == 0 && n == 0 && k < 1 {
          rhs{k}[0 +: 128, 0 +: 512] = load.dma b[128*k +: 128, 512*n +: 512]
        }
        stmt stage_id=0 stage=0 if k >= 4 && k < 5 && n < 1 {
          rhs{k}[0 +: 128, 0 +: 512] = load.dma b[128*k - 512 +: 128, 512*n + 512 +: 512]
        }
        stmt stage_id=0 stage=0 if k >= 4 && k < 5 && m < 3 && n == 1 {
          rhs{k}[0 +: 128, 0 +: 512] = load.dma b[128*k - 512 +: 128, 0 +: 512]
        }
        stmt stage_id=0 stage=0 if k >= 1 && k < 4 {
          rhs{k}[0 +: 128, 0 +: 512] = load.dma b[128*k +: 128, 512*n +: 512]
        }
        stmt stage_id=1 stage=1 if k >= 1 {
          acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs{k - 1}[0 +: 128, 0 +: 128], rhs{k - 1}[0 +: 128, 0 +: 512]
        }
      }
      stmt if n >= 1 {
        c[128*m +: 128, 512*n - 512 +: 512] = store.dma res{n - 1}[0 +: 128, 0 +: 512]
      }
      stmt if n == 0 && m >= 1 {
        c[128*m - 128 +: 128, 512 +: 512] = store.dma res{1}[0 +: 128, 0 +: 512]
      }
      stmt {
        res{n}[0 +: 128, 0 +: 512] = copy.any acc{n}[0 +: 128, 0 +: 512]
      }
      stmt if n == 1 && m == 3 {
        c[128*m +: 128, 512*n +: 512] = store.dma res{n}[0 +: 128, 0 +: 512]
      }
    }
  }
}
