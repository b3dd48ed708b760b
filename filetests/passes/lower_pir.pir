# test: print-after lower
# A `.pir` file: read and verified; it prints back as written.
kernel add2(a, b) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor b: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor ta: sbuf f32[32, 64] local block[i: 2]
  tensor tb: sbuf f32[32, 64] local block[i: 2]
  tensor tc: sbuf f32[32, 64] local
  loop i in 0..9 affine num_stages=2 pipelined(stages=2, trip=8) {
    stmt stage=0 if i < 8 {
      ta{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=0 if i < 8 {
      tb{i}[0 +: 32, 0 +: 64] = load.dma b[32*i +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 {
      tc[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 {
      c[32*i - 32 +: 32, 0 +: 64] = store.dma tc[0 +: 32, 0 +: 64]
    }
  }
}

# output:
# # *** IR after lower (penguin) ***
# kernel add2(a, b) -> (c) {
#   tensor a: hbm f32[256, 64] input
#   tensor b: hbm f32[256, 64] input
#   tensor c: hbm f32[256, 64] output
#   tensor ta: sbuf f32[32, 64] local block[i: 2]
#   tensor tb: sbuf f32[32, 64] local block[i: 2]
#   tensor tc: sbuf f32[32, 64] local
#   loop i in 0..9 affine num_stages=2 pipelined(stages=2, trip=8) {
#     stmt stage=0 if i < 8 {
#       ta{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
#     }
#     stmt stage=0 if i < 8 {
#       tb{i}[0 +: 32, 0 +: 64] = load.dma b[32*i +: 32, 0 +: 64]
#     }
#     stmt stage=1 if i >= 1 {
#       tc[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]
#     }
#     stmt stage=1 if i >= 1 {
#       c[32*i - 32 +: 32, 0 +: 64] = store.dma tc[0 +: 32, 0 +: 64]
#     }
#   }
# }
