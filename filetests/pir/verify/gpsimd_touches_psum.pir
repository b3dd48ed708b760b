# test: pir
# error: inst i1 (`t = copy`, at top level): runs on GpSimd (pool), which cannot access PSUM, but its source 0 `acc` is in PSUM
# error: inst i2 (`acc = memset`, at top level): runs on GpSimd (pool), which cannot access PSUM, but its destination `acc` is in PSUM
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  tensor acc: psum f32[128, 512] local
  stmt {
    acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    t[0 +: 128, 0 +: 512] = copy.pool acc[0 +: 128, 0 +: 512]
    acc[0 +: 128, 0 +: 512] = memset.pool(value=0.0)
  }
}
