# A DMA-bound loop with five PSUM tiles private to an iteration (two transposes, three memsets):
# the emergent unroll must leave PSUM room for every copy (it unrolled by 2 into 10 banks, E0502
# on `emergent` where `none` runs it, issue 30).
kernel tr(x) -> (y, z, v) {
  tensor x: hbm f32[128, 8192] input
  tensor y: hbm f32[8192, 128] output
  tensor z: hbm f32[2048, 128] output
  tensor v: hbm f32[8192, 128] output
  tensor u: sbuf f32[128, 128] local
  tensor t: sbuf f32[128, 128] local
  tensor tp: psum f32[128, 128] local
  tensor tq: psum f32[32, 128] local
  tensor o: sbuf f32[128, 128] local
  tensor p: sbuf f32[32, 128] local
  tensor m: psum f32[128, 1] local
  tensor m2: psum f32[128, 1] local
  tensor m3: psum f32[128, 1] local
  tensor ms: sbuf f32[128, 1] local
  loop c in 0..64 affine {
    stmt {
      t[0 +: 128, 0 +: 128] = load.dma x[0 +: 128, 128*c +: 128]
    }
    stmt {
      tp[0 +: 128, 0 +: 128] = transpose.pe t[0 +: 128, 0 +: 128]
    }
    stmt {
      tq[0 +: 32, 0 +: 128] = transpose.pe t[0 +: 128, 0 +: 32]
    }
    stmt {
      o[0 +: 128, 0 +: 128] = copy.any tp[0 +: 128, 0 +: 128]
    }
    stmt {
      p[0 +: 32, 0 +: 128] = copy.any tq[0 +: 32, 0 +: 128]
    }
    stmt {
      y[128*c +: 128, 0 +: 128] = store.dma o[0 +: 128, 0 +: 128]
    }
    stmt {
      u[0 +: 128, 0 +: 128] = load.dma x[0 +: 128, 128*c +: 128]
    }
    stmt {
      v[128*c +: 128, 0 +: 128] = store.dma u[0 +: 128, 0 +: 128]
    }
    stmt {
      m[0 +: 128, 0 +: 1] = memset.dve(value=0.0)
    }
    stmt {
      m2[0 +: 128, 0 +: 1] = memset.dve(value=0.0)
    }
    stmt {
      m3[0 +: 128, 0 +: 1] = memset.dve(value=0.0)
    }
    stmt {
      z[32*c +: 32, 0 +: 128] = store.dma p[0 +: 32, 0 +: 128]
    }
  }
}
