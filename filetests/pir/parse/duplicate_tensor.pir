# test: pir
# error: line 5:10: duplicate tensor `t`
kernel k(a) -> () {
  tensor t: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 1] local
}
