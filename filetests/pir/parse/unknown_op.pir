# test: pir
# error: line 6:29: unknown operation `exp`
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = exp.act t[0 +: 128, 0 +: 512]
  }
}
