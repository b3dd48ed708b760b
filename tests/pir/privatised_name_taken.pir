# A tile `t` that two sibling loops use in turn (each writes all of it first), beside a tensor named
# `t.1`: the emergent path's copy of `t` for the second loop must get a name no tensor has that the
# verifier accepts (it was `t.1'`, issue 30).
kernel k(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor t.1: sbuf f32[128, 512] local
  loop i in 0..2 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt {
      t.1[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=multiply, imm=2.0, reverse=false) t[0 +: 128, 0 +: 512]
    }
    stmt {
      y[128*i +: 128, 0 +: 512] = store.dma t.1[0 +: 128, 0 +: 512]
    }
  }
  loop j in 2..4 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma x[128*j +: 128, 0 +: 512]
    }
    stmt {
      y[128*j +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
    }
  }
}
