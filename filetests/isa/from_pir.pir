# test: isa
# Penguin IR as the annotated pipeliner leaves it, compiled from the text.
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
# # *** IR after hoist (isa) ***
# tensor a: f32[256, 64] input
# tensor b: f32[256, 64] input
# tensor c: f32[256, 64] output
# semaphore dma0
# semaphore dma1
# semaphore dma2
# semaphore dma3
# semaphore tensor_tensor4
# engine dve {
#   loop r0 = 0..17 {
#     @(r0 - 4 >= 1 && r0 - 4 < 9) wait dma0 >= r0 - 4
#     @(r0 - 4 >= 1 && r0 - 4 < 9) wait dma1 >= r0 - 4
#     @(r0 - 4 >= 1 && r0 - 4 < 9) wait dma2 >= r0 - 4
#     @(r0 - 4 >= 1 && r0 - 4 < 9) wait dma3 >= r0 - 4
#     @(r0 - 4 >= 1 && r0 - 4 < 9) tensor_tensor add sbuf.f32[0, 32; ((r0 - 4) mod 8)*256 + 4096; 64:1], sbuf.f32[0, 32; ((r0 - 5) mod 8)*256; 64:1], sbuf.f32[0, 32; ((r0 - 5) mod 8)*256 + 2048; 64:1] -> tensor_tensor4 stage 5
#   }
# }
# engine sp {
#   loop r0 = 0..17 {
#     @(r0 < 8) dma q0 sbuf.f32[0, 16; (r0 mod 8)*256; 64:1], hbm a[2048*r0; 16:64, 64:1] -> dma0 stage 0
#     @(r0 < 8) dma q1 sbuf.f32[16, 16; (r0 mod 8)*256; 64:1], hbm a[2048*r0 + 1024; 16:64, 64:1] -> dma1 stage 0
#     @(r0 < 8) dma q2 sbuf.f32[0, 16; (r0 mod 8)*256 + 2048; 64:1], hbm b[2048*r0; 16:64, 64:1] -> dma2 stage 0
#     @(r0 < 8) dma q3 sbuf.f32[16, 16; (r0 mod 8)*256 + 2048; 64:1], hbm b[2048*r0 + 1024; 16:64, 64:1] -> dma3 stage 0
#     @(r0 - 8 >= 1 && r0 < 17) wait tensor_tensor4 >= r0 - 3
#     @(r0 - 8 >= 1 && r0 < 17) dma q4 hbm c[2048*r0 - 18432; 16:64, 64:1], sbuf.f32[0, 16; ((r0 - 8) mod 8)*256 + 4096; 64:1] stage 9
#     @(r0 - 8 >= 1 && r0 < 17) dma q5 hbm c[2048*r0 - 17408; 16:64, 64:1], sbuf.f32[16, 16; ((r0 - 8) mod 8)*256 + 4096; 64:1] stage 9
#   }
# }
