# test: pir
# error: inst i1 (`acc = add`, at top level): destination `acc` is in PSUM, but `tensor_tensor` writes SBUF
# error: inst i2 (`acc = copy`, at top level): destination `acc` is in PSUM, but `copy` writes SBUF
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  tensor acc: psum f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    acc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) t[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    acc[0 +: 128, 0 +: 512] = copy.any t[0 +: 128, 0 +: 512]
  }
}
