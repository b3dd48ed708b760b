# test: pir
# tests/pipeline/nested_loop_stage.nk pipelined and peeled (nkc compile --emit pipelined --peel): the
# copies of loop k have their own induction variables; one-buffer tiles get one-slot rings.
kernel mm(at, b) -> (c) {
  tensor at: hbm f32[128, 64] input
  tensor b: hbm f32[128, 256] input
  tensor c: hbm f32[64, 256] output
  tensor acc: psum f32[64, 64] local block[n: 2]
  tensor lhs: sbuf f32[32, 64] local
  tensor rhs: sbuf f32[32, 64] local
  tensor res: sbuf f32[64, 64] local block[n: 2]
  stmt stage_id=0 stage=0 {
    acc{0}[0 +: 64, 0 +: 64] = memset.dve(value=0.0)
  }
  loop k.n0 in 0..4 affine stage_id=0 stage=0 {
    stmt {
      lhs[0 +: 32, 0 +: 64] = load.dma at[32*k.n0 +: 32, 0 +: 64]
    }
    stmt {
      rhs[0 +: 32, 0 +: 64] = load.dma b[32*k.n0 +: 32, 0 +: 64]
    }
    stmt {
      acc{0}[0 +: 64, 0 +: 64] = matmul.pe(accumulate=true) lhs[0 +: 32, 0 +: 64], rhs[0 +: 32, 0 +: 64]
    }
  }
  stmt stage_id=0 stage=0 {
    acc{1}[0 +: 64, 0 +: 64] = memset.dve(value=0.0)
  }
  loop k.n1 in 0..4 affine stage_id=0 stage=0 {
    stmt {
      lhs[0 +: 32, 0 +: 64] = load.dma at[32*k.n1 +: 32, 0 +: 64]
    }
    stmt {
      rhs[0 +: 32, 0 +: 64] = load.dma b[32*k.n1 +: 32, 64 +: 64]
    }
    stmt {
      acc{1}[0 +: 64, 0 +: 64] = matmul.pe(accumulate=true) lhs[0 +: 32, 0 +: 64], rhs[0 +: 32, 0 +: 64]
    }
  }
  stmt stage_id=1 stage=1 {
    res{0}[0 +: 64, 0 +: 64] = copy.any acc{0}[0 +: 64, 0 +: 64]
  }
  loop n in 2..4 affine pipelined(stages=3, trip=4, peeled) {
    stmt stage_id=0 stage=0 {
      acc{n}[0 +: 64, 0 +: 64] = memset.dve(value=0.0)
    }
    loop k in 0..4 affine stage_id=0 stage=0 {
      stmt {
        lhs[0 +: 32, 0 +: 64] = load.dma at[32*k +: 32, 0 +: 64]
      }
      stmt {
        rhs[0 +: 32, 0 +: 64] = load.dma b[32*k +: 32, 64*n +: 64]
      }
      stmt {
        acc{n}[0 +: 64, 0 +: 64] = matmul.pe(accumulate=true) lhs[0 +: 32, 0 +: 64], rhs[0 +: 32, 0 +: 64]
      }
    }
    stmt stage_id=1 stage=1 {
      res{n - 1}[0 +: 64, 0 +: 64] = copy.any acc{n - 1}[0 +: 64, 0 +: 64]
    }
    stmt stage_id=2 stage=2 {
      c[0 +: 64, 64*n - 128 +: 64] = store.dma res{n - 2}[0 +: 64, 0 +: 64]
    }
  }
  stmt stage_id=1 stage=1 {
    res{3}[0 +: 64, 0 +: 64] = copy.any acc{3}[0 +: 64, 0 +: 64]
  }
  stmt stage_id=2 stage=2 {
    c[0 +: 64, 128 +: 64] = store.dma res{2}[0 +: 64, 0 +: 64]
  }
  stmt stage_id=2 stage=2 {
    c[0 +: 64, 192 +: 64] = store.dma res{3}[0 +: 64, 0 +: 64]
  }
}
