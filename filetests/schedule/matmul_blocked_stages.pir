# test: schedule
kernel matmul_blocked_stages(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 1024] input
  tensor c: hbm f32[512, 1024] output
  tensor lhs: sbuf f32[128, 512] local
  tensor acc: psum f32[128, 512] local block[n: 2]
  tensor rhs: sbuf f32[128, 512] local
  tensor res: sbuf f32[128, 512] local block[n: 2]
  loop m in 0..4 affine {
    loop k in 0..4 affine {
      stmt {
        lhs[0 +: 128, 128*k +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
      }
    }
    loop n in 0..4 affine num_stages=3 pipelined(stages=3, trip=2) {
      stmt stage=0 if n < 2 {
        acc{n}[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      }
      loop k.1 in 0..4 affine stage=0 if n < 2 {
        stmt {
          rhs[0 +: 128, 0 +: 512] = load.dma b[128*k.1 +: 128, 512*n +: 512]
        }
        stmt {
          acc{n}[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 128*k.1 +: 128], rhs[0 +: 128, 0 +: 512]
        }
      }
      stmt stage=1 if n >= 1 && n < 3 {
        res{n - 1}[0 +: 128, 0 +: 512] = copy.any acc{n - 1}[0 +: 128, 0 +: 512]
      }
      stmt stage=2 if n >= 2 {
        c[128*m +: 128, 512*n - 1024 +: 512] = store.dma res{n - 2}[0 +: 128, 0 +: 512]
      }
    }
  }
}

# schedule:
# loop k.1 trip 4: ResMII 2172 (pe), RecMII 5879, II 5879, predicted 5879 (before 5879), order kept
#   recurrence: pe.matmul(acc) → (1 iteration later, `rhs`'s slot reused) sp.load(rhs) → pe.matmul(acc)
#   dep sp.load(rhs) -> sp.load(rhs): output d=1 lat=3707
#   dep sp.load(rhs) -> pe.matmul(acc): flow d=0 lat=3707
#   dep pe.matmul(acc) -> sp.load(rhs): anti d=1 lat=2172
#   dep pe.matmul(acc) -> pe.matmul(acc): output d=1 lat=2172
#   order: sp.load(rhs)@0, pe.matmul(acc)@3707
