# test: pir
# error: line 6:50: 0x3f800000 is not the bits of a NaN
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = memset.dve(value=nan:0x3f800000)
  }
}
