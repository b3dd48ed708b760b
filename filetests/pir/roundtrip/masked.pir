# test: pir
# Masks: a ragged last row tile (250 rows), a free-axis mask with a lower and an upper bound, a
# masked memset, a reduce masked on its source's free axis, and a tensor named `mask`.
kernel masked(x) -> (y) {
  tensor x: hbm f32[250, 512] input
  tensor y: hbm f32[250, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor mask: sbuf f32[128, 1] local
  loop i in 0..2 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512] mask(p < -128*i + 250)
      t[0 +: 128, 0 +: 512] = memset.dve(value=0.0) mask(f >= 500, f < 2*i + 505)
      mask[0 +: 128, 0 +: 1] = reduce.dve(op=sum) t[0 +: 128, 0 +: 512] mask(f < 3, p < -128*i + 250)
      t[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) t[0 +: 128, 0 +: 512], mask[0 +: 128, 0 +: 1] mask(p >= 1)
      y[128*i +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512] mask(p < -128*i + 250)
    }
  }
}
