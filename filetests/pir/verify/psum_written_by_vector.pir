# test: pir
# error: inst i4 (`acc = add`, at top level): runs on GpSimd (pool), which cannot access PSUM, but its destination `acc` is in PSUM
# The Vector and Scalar engines write PSUM (MACHINE.md: only `pool` cannot access it): an
# elementwise update of an accumulator and a copy into it verify; GpSimd may not write it.
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  tensor acc: psum f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    acc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) t[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    acc[0 +: 128, 0 +: 512] = copy.any t[0 +: 128, 0 +: 512]
    acc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) acc[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    acc[0 +: 128, 0 +: 512] = tensor_tensor.pool(op=add) t[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
  }
}
