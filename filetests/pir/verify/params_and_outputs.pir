# test: pir
# error: kernel `k`: parameter `b` is a local SBUF tensor, not an input HBM tensor
# error: kernel `k`: parameter `a` is listed twice
# error: tensor t2 (`c`): is an output tensor but not among the kernel's outputs
# error: inst i0 (`a = memset`, at top level): writes input tensor `a`
# error: inst i0 (`a = memset`, at top level): destination `a` is in HBM, but `memset` writes SBUF or PSUM
kernel k(a, b, a) -> () {
  tensor a: hbm f32[128, 512] input
  tensor b: sbuf f32[128, 512] local
  tensor c: hbm f32[128, 512] output
  stmt {
    a[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
  }
}
