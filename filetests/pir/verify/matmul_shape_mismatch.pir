# test: pir
# error: matmul sources disagree on the contraction: source 0 is [128, 128] ([K, M]) and source 1 is [64, 512] ([K, N])
# error: inst i2 (`acc = matmul`, at top level): matmul of [128, 128] and [64, 512] gives [128, 512], but the destination is [128, 256]
kernel k() -> () {
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf f32[64, 512] local
  tensor acc: psum f32[128, 512] local
  stmt {
    lhs[0 +: 128, 0 +: 128] = memset.dve(value=1.0)
    rhs[0 +: 64, 0 +: 512] = memset.dve(value=2.0)
    acc[0 +: 128, 0 +: 256] = matmul.pe(accumulate=false) lhs[0 +: 128, 0 +: 128], rhs[0 +: 64, 0 +: 512]
  }
}
