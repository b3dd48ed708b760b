kernel matmul_mode_b(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 1024] input
  tensor c: hbm f32[512, 1024] output
  tensor acc: psum f32[128, 512] local block[n: 2]
  tensor lhs: sbuf f32[128, 128] local block[k: 2]
  tensor rhs: sbuf f32[128, 512] local block[k: 2]
  tensor res: sbuf f32[128, 512] local block[n: 2]
  tensor lhs.f0: sbuf f32[128, 128] local block[n: 2]
  tensor lhs.f1: sbuf f32[128, 128] local block[n: 2]
  tensor lhs.f2: sbuf f32[128, 128] local block[n: 2]
  tensor lhs.f3: sbuf f32[128, 128] local block[n: 2]
  tensor rhs.f0: sbuf f32[128, 512] local block[n: 2]
  tensor rhs.f1: sbuf f32[128, 512] local block[n: 2]
  tensor rhs.f2: sbuf f32[128, 512] local block[n: 2]
  tensor rhs.f3: sbuf f32[128, 512] local block[n: 2]
  loop m in 0..4 affine {
    loop n in 0..2 affine {
      stmt if m == 0 && n == 0 {
        lhs.f0{0}[0 +: 128, 0 +: 128] = load.dma at[0 +: 128, 0 +: 128]
      }
      stmt if m == 0 && n == 0 {
        rhs.f0{0}[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 0 +: 512]
      }
      stmt if m == 0 && n == 0 {
        lhs.f1{0}[0 +: 128, 0 +: 128] = load.dma at[128 +: 128, 0 +: 128]
      }
      stmt if m == 0 && n == 0 {
        rhs.f1{0}[0 +: 128, 0 +: 512] = load.dma b[128 +: 128, 0 +: 512]
      }
      stmt if m == 0 && n == 0 {
        lhs.f2{0}[0 +: 128, 0 +: 128] = load.dma at[256 +: 128, 0 +: 128]
      }
      stmt if m == 0 && n == 0 {
        rhs.f2{0}[0 +: 128, 0 +: 512] = load.dma b[256 +: 128, 0 +: 512]
      }
      stmt if m == 0 && n == 0 {
        lhs.f3{0}[0 +: 128, 0 +: 128] = load.dma at[384 +: 128, 0 +: 128]
      }
      stmt if m == 0 && n == 0 {
        rhs.f3{0}[0 +: 128, 0 +: 512] = load.dma b[384 +: 128, 0 +: 512]
      }
      stmt if n >= 1 && m < 3 {
        lhs.f0{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[0 +: 128, 128*m + 128 +: 128]
      }
      stmt if n >= 1 && m < 3 {
        rhs.f0{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 512*n - 512 +: 512]
      }
      stmt if n >= 1 && m < 3 {
        lhs.f1{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[128 +: 128, 128*m + 128 +: 128]
      }
      stmt if n >= 1 && m < 3 {
        rhs.f1{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[128 +: 128, 512*n - 512 +: 512]
      }
      stmt if n >= 1 && m < 3 {
        lhs.f2{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[256 +: 128, 128*m + 128 +: 128]
      }
      stmt if n >= 1 && m < 3 {
        rhs.f2{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[256 +: 128, 512*n - 512 +: 512]
      }
      stmt if n >= 1 && m < 3 {
        lhs.f3{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[384 +: 128, 128*m + 128 +: 128]
      }
      stmt if n >= 1 && m < 3 {
        rhs.f3{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[384 +: 128, 512*n - 512 +: 512]
      }
      stmt stage_id=0 if n < 1 {
        lhs.f0{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[0 +: 128, 128*m +: 128]
      }
      stmt stage_id=0 if n < 1 {
        rhs.f0{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 512*n + 512 +: 512]
      }
      stmt stage_id=0 if n < 1 {
        lhs.f1{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[128 +: 128, 128*m +: 128]
      }
      stmt stage_id=0 if n < 1 {
        rhs.f1{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[128 +: 128, 512*n + 512 +: 512]
      }
      stmt stage_id=0 if n < 1 {
        lhs.f2{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[256 +: 128, 128*m +: 128]
      }
      stmt stage_id=0 if n < 1 {
        rhs.f2{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[256 +: 128, 512*n + 512 +: 512]
      }
      stmt stage_id=0 if n < 1 {
        lhs.f3{2*m + n + 1}[0 +: 128, 0 +: 128] = load.dma at[384 +: 128, 128*m +: 128]
      }
      stmt stage_id=0 if n < 1 {
        rhs.f3{2*m + n + 1}[0 +: 128, 0 +: 512] = load.dma b[384 +: 128, 512*n + 512 +: 512]
      }
      stmt {
        acc{n}[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      }
      stmt stage_id=1 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs.f0{2*m + n}[0 +: 128, 0 +: 128], rhs.f0{2*m + n}[0 +: 128, 0 +: 512]
      }
      stmt stage_id=1 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs.f1{2*m + n}[0 +: 128, 0 +: 128], rhs.f1{2*m + n}[0 +: 128, 0 +: 512]
      }
      stmt stage_id=1 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs.f2{2*m + n}[0 +: 128, 0 +: 128], rhs.f2{2*m + n}[0 +: 128, 0 +: 512]
      }
      stmt stage_id=1 {
        acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs.f3{2*m + n}[0 +: 128, 0 +: 128], rhs.f3{2*m + n}[0 +: 128, 0 +: 512]
      }
      loop k in 0..0 affine {
      }
      stmt {
        res{n}[0 +: 128, 0 +: 512] = copy.any acc{n}[0 +: 128, 0 +: 512]
      }
      stmt {
        c[128*m +: 128, 512*n +: 512] = store.dma res{n}[0 +: 128, 0 +: 512]
      }
    }
  }
}
