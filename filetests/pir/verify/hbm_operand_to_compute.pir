# test: pir
# error: inst i0 (`t = exp`, at top level): source 0 `a` is in HBM, but `activation` reads SBUF or PSUM
# error: inst i1 (`c = multiply scalar`, at top level): destination `c` is in HBM, but `tensor_scalar` writes SBUF or PSUM
kernel k(a) -> (c) {
  tensor a: hbm f32[128, 512] input
  tensor c: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) a[0 +: 128, 0 +: 512]
    c[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=multiply, imm=2.0, reverse=false) t[0 +: 128, 0 +: 512]
  }
}
