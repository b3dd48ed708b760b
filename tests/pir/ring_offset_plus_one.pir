# matmul_mode_b pipelined (--emit pipelined) with the matmul reading `lhs{k + 1}`: on a ring of 2
# slots the same slot as `lhs{k - 1}`. A pass that deepens the ring (the carry across executions)
# must not move this read to another slot (issue 30: emergent, default and auto gave wrong bits).
kernel matmul_mode_b(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 1024] input
  tensor c: hbm f32[512, 1024] output
  tensor acc: psum f32[128, 512] local
  tensor lhs: sbuf f32[128, 128] local block[k: 2]
  tensor rhs: sbuf f32[128, 512] local block[k: 2]
  tensor res: sbuf f32[128, 512] local
  loop m in 0..4 affine {
    loop n in 0..2 affine {
      stmt {
        acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      }
      loop k in 0..5 affine pipelined(stages=2, trip=4) {
        stmt stage_id=0 stage=0 if k < 4 {
          lhs{k}[0 +: 128, 0 +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
        }
        stmt stage_id=0 stage=0 if k < 4 {
          rhs{k}[0 +: 128, 0 +: 512] = load.dma b[128*k +: 128, 512*n +: 512]
        }
        stmt stage_id=1 stage=1 if k >= 1 {
          acc[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs{k + 1}[0 +: 128, 0 +: 128], rhs{k - 1}[0 +: 128, 0 +: 512]
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
