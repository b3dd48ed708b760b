# test: pir
# error: inst i2 (`s = reduce sum`, at top level): reduce of [128, 512] gives [128, 1], but the destination is [128, 2]
# error: inst i3 (`t = multiply`, at top level): source 1 is [128, 2] but the destination is [128, 512]; a source is the destination's shape or [128, 1]
# error: inst i4 (`t = exp`, at top level): the bias (source 1) is [128, 512] but must be [128, 1]
# error: inst i5 (`tp = transpose`, at top level): transpose of [128, 64] gives [64, 128], but the destination is [128, 64]
# error: inst i6 (`c = store`, at top level): source 0 is [128, 256] but the destination is [128, 512]; `store` keeps the shape
kernel k(a) -> (c) {
  tensor a: hbm f32[128, 512] input
  tensor c: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor s: sbuf f32[128, 2] local
  tensor tp: psum f32[128, 128] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]
    s[0 +: 128, 0 +: 1] = reduce.dve(op=max) t[0 +: 128, 0 +: 512]
    s[0 +: 128, 0 +: 2] = reduce.dve(op=sum) t[0 +: 128, 0 +: 512]
    t[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) t[0 +: 128, 0 +: 512], s[0 +: 128, 0 +: 2]
    t[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=true) t[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    tp[0 +: 128, 0 +: 64] = transpose.pe t[0 +: 128, 0 +: 64]
    c[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 256]
  }
}
