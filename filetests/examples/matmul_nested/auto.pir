kernel matmul_nested(at, b) -> (c) {
  tensor at: hbm f32[512, 128] input
  tensor b: hbm f32[512, 4096] input
  tensor c: hbm f32[128, 4096] output
  tensor lhs: sbuf f32[128, 512] local
  tensor acc: psum f32[128, 512] local block[n: 2]
  tensor rhs: sbuf f32[128, 512] local block[k.1: 4]
  tensor res: sbuf f32[128, 512] local block[n: 2]
  loop k in 0..4 affine {
    stmt {
      lhs[0 +: 128, 128*k +: 128] = load.dma at[128*k +: 128, 0 +: 128]
    }
  }
  loop n in 0..10 affine {
    stmt stage=2 if n >= 2 {
      c[0 +: 128, 512*n - 1024 +: 512] = store.dma res{n - 2}[0 +: 128, 0 +: 512]
    }
    stmt stage=1 if n >= 1 && n < 9 {
      res{n - 1}[0 +: 128, 0 +: 512] = copy.dve acc{n - 1}[0 +: 128, 0 +: 512]
    }
    loop k.1 in 0..4 affine if n < 8 {
      stmt if n == 0 && k.1 == 0 {
        rhs{0}[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 0 +: 512]
      }
      stmt if n == 0 && k.1 == 0 {
        rhs{1}[0 +: 128, 0 +: 512] = load.dma b[128 +: 128, 0 +: 512]
      }
      stmt if k.1 >= 2 && n < 7 {
        rhs{4*n + k.1 + 2}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 - 256 +: 128, 512*n + 512 +: 512]
      }
      stmt if k.1 < 2 {
        rhs{4*n + k.1 + 2}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 + 256 +: 128, 512*n +: 512]
      }
      stmt if k.1 == 0 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=false) lhs[0 +: 128, 128*k.1 +: 128], rhs{4*n + k.1}[0 +: 128, 0 +: 512]
      }
      stmt if k.1 >= 1 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 128*k.1 +: 128], rhs{4*n + k.1}[0 +: 128, 0 +: 512]
      }
    }
  }
}
