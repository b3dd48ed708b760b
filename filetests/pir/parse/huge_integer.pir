# test: pir
# error: line 4:22: a dimension 99999999999999999999 is too large
kernel k() -> () {
  tensor t: sbuf f32[99999999999999999999, 512] local
}
