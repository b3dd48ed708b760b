kernel matmul_blocked(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 1024] input
  tensor c: hbm f32[512, 1024] output
  tensor lhs: sbuf f32[128, 512] local block[m: 2]
  tensor acc: psum f32[128, 512] local block[n: 2]
  tensor rhs: sbuf f32[128, 512] local block[k.1: 4]
  tensor res: sbuf f32[128, 512] local block[n: 2]
  loop m in 0..5 affine {
    loop k in 0..4 affine if m < 4 {
      stmt {
        lhs{m}[0 +: 128, 128*k +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
      }
    }
    loop n in 0..2 affine if m >= 1 {
      loop k.1 in 0..4 affine {
        stmt if m - 1 == 0 && n == 0 && k.1 == 0 {
          rhs{0}[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 0 +: 512]
        }
        stmt if m - 1 == 0 && n == 0 && k.1 == 0 {
          rhs{1}[0 +: 128, 0 +: 512] = load.dma b[128 +: 128, 0 +: 512]
        }
        stmt if k.1 >= 2 && n < 1 {
          rhs{8*m + 4*n + k.1 - 6}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 - 256 +: 128, 512*n + 512 +: 512]
        }
        stmt if k.1 >= 2 && m - 1 < 3 && n == 1 {
          rhs{8*m + 4*n + k.1 - 6}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 - 256 +: 128, 0 +: 512]
        }
        stmt if k.1 < 2 {
          rhs{8*m + 4*n + k.1 - 6}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 + 256 +: 128, 512*n +: 512]
        }
        stmt if k.1 == 0 {
          acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=false) lhs{m - 1}[0 +: 128, 128*k.1 +: 128], rhs{8*m + 4*n + k.1 - 8}[0 +: 128, 0 +: 512]
        }
        stmt if k.1 >= 1 {
          acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs{m - 1}[0 +: 128, 128*k.1 +: 128], rhs{8*m + 4*n + k.1 - 8}[0 +: 128, 0 +: 512]
        }
      }
      stmt if n >= 1 {
        c[128*m - 128 +: 128, 512*n - 512 +: 512] = store.dma res{n - 1}[0 +: 128, 0 +: 512]
      }
      stmt if n == 0 && m >= 2 {
        c[128*m - 256 +: 128, 512 +: 512] = store.dma res{1}[0 +: 128, 0 +: 512]
      }
      stmt {
        res{n}[0 +: 128, 0 +: 512] = copy.any acc{n}[0 +: 128, 0 +: 512]
      }
      stmt if n == 1 && m == 4 {
        c[128*m - 128 +: 128, 512*n +: 512] = store.dma res{n}[0 +: 128, 0 +: 512]
      }
    }
  }
}
