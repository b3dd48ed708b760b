# test: print-after lower-bir
# pipeline: annotated
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
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 2]
#   buffer tb: sbuf f32[32, 64] local ring[i: 2]
#   buffer tc: sbuf f32[32, 64] local
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 2]
#   buffer tb: sbuf f32[32, 64] local ring[i: 2]
#   buffer tc: sbuf f32[32, 64] local ring[i: 2]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 2]
#   buffer tb: sbuf f32[32, 64] local ring[i: 2]
#   buffer tc: sbuf f32[32, 64] local ring[i: 3]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 3]
#   buffer tb: sbuf f32[32, 64] local ring[i: 2]
#   buffer tc: sbuf f32[32, 64] local ring[i: 3]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 3]
#   buffer tb: sbuf f32[32, 64] local ring[i: 3]
#   buffer tc: sbuf f32[32, 64] local ring[i: 3]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 3]
#   buffer tb: sbuf f32[32, 64] local ring[i: 3]
#   buffer tc: sbuf f32[32, 64] local ring[i: 4]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 4]
#   buffer tb: sbuf f32[32, 64] local ring[i: 3]
#   buffer tc: sbuf f32[32, 64] local ring[i: 4]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 4]
#   buffer tb: sbuf f32[32, 64] local ring[i: 4]
#   buffer tc: sbuf f32[32, 64] local ring[i: 4]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
# # *** IR after lower-bir (bir) ***
# bir add2(a, b) -> (c) {
#   buffer a: hbm f32[256, 64] input
#   buffer b: hbm f32[256, 64] input
#   buffer c: hbm f32[256, 64] output
#   buffer ta: sbuf f32[32, 64] local ring[i: 4]
#   buffer tb: sbuf f32[32, 64] local ring[i: 4]
#   buffer tc: sbuf f32[32, 64] local ring[i: 5]
#   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
#     @(i < 8) sp.load ta{i}[0 +: 32, 0 +: 64], a[32*i +: 32, 0 +: 64]  stage 0
#     @(i < 8) sp.load tb{i}[0 +: 32, 0 +: 64], b[32*i +: 32, 0 +: 64]  stage 0
#     @(i >= 1) dve.tensor_tensor(op=add) tc{i}[0 +: 32, 0 +: 64], ta{i - 1}[0 +: 32, 0 +: 64], tb{i - 1}[0 +: 32, 0 +: 64]  stage 1
#     @(i >= 1) sp.store c[32*i - 32 +: 32, 0 +: 64], tc{i}[0 +: 32, 0 +: 64]  stage 1
#   }
# }
