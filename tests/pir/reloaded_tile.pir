# One tile loaded twice in each iteration, each value read before the next load: no load of `t`
# may be issued ahead (two hoisted loads would fill the same slot, the second over the first).
kernel reloaded_tile(x) -> (y) {
  tensor x: hbm f32[512, 256] input
  tensor y: hbm f32[512, 256] output
  tensor t: sbuf f32[128, 128] local
  tensor o: sbuf f32[128, 128] local
  loop r in 0..4 affine {
    stmt {
      t[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 0 +: 128]
    }
    stmt {
      o[0 +: 128, 0 +: 128] = copy.any t[0 +: 128, 0 +: 128]
    }
    stmt {
      y[128*r +: 128, 0 +: 128] = store.dma o[0 +: 128, 0 +: 128]
    }
    stmt {
      t[0 +: 128, 0 +: 128] = load.dma x[128*r +: 128, 128 +: 128]
    }
    stmt {
      o[0 +: 128, 0 +: 128] = copy.any t[0 +: 128, 0 +: 128]
    }
    stmt {
      y[128*r +: 128, 128 +: 128] = store.dma o[0 +: 128, 0 +: 128]
    }
  }
}
