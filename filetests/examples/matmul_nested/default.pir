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
  loop n in 0..9 affine num_stages=2 pipelined(stages=2, trip=8) {
    stmt stage=0 if n < 8 {
      acc{n}[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    }
    loop k.1 in 0..5 affine num_stages=2 pipelined(stages=2, trip=4) stage=0 if n < 8 {
      stmt stage=0 if n == 0 && k.1 < 1 {
        rhs{k.1}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 +: 128, 512*n +: 512]
      }
      stmt stage=0 if k.1 >= 4 && k.1 < 5 && n < 7 {
        rhs{k.1}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 - 512 +: 128, 512*n + 512 +: 512]
      }
      stmt stage=0 if k.1 >= 1 && k.1 < 4 {
        rhs{k.1}[0 +: 128, 0 +: 512] = load.dma b[128*k.1 +: 128, 512*n +: 512]
      }
      stmt stage=1 if k.1 >= 1 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 128*k.1 - 128 +: 128], rhs{k.1 - 1}[0 +: 128, 0 +: 512]
      }
    }
    stmt stage=2 if n - 1 >= 1 && n >= 1 {
      c[0 +: 128, 512*n - 1024 +: 512] = store.dma res{n - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage=1 if n >= 1 {
      res{n}[0 +: 128, 0 +: 512] = copy.any acc{n - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage=1 if n >= 1 && n == 8 {
      c[0 +: 128, 512*n - 512 +: 512] = store.dma res{n}[0 +: 128, 0 +: 512]
    }
  }
}
