# test: pir
# error: matmul source 1 is [128, 1024] but N is at most 512
# error: reaches 4096 bytes of `acc` in each partition, more than one PSUM bank (2048)
kernel k() -> () {
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf f32[128, 1024] local
  tensor acc: psum f32[128, 1024] local
  stmt {
    acc[0 +: 128, 0 +: 1024] = matmul.pe(accumulate=false) lhs[0 +: 128, 0 +: 128], rhs[0 +: 128, 0 +: 1024]
  }
}
