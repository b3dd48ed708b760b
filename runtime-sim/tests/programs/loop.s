# y = x + 1 over 4 tiles of [4, 64], software-pipelined in one extended loop per engine:
# double-buffered input (ibuf at 0, 256) and output (obuf at 1024, 1280) by address rotation,
# the prologue and epilogue by predicates. A predicated-off instruction still signals, so
# `stored` counts one spurious signal at r0 = 0 and the store of tile j is its signal j + 2.
tensor x: f32[4, 256] input
tensor y: f32[4, 256] output
semaphore ld
semaphore done
semaphore stored
engine sp {
  loop r0 = 0..5 {
    @(r0 >= 2 && r0 < 4) wait done >= r0 - 1
    @(r0 < 4) dma q0 sbuf.f32[0, 4; (r0 mod 2)*256; 64:1], hbm x[64*r0; 4:256, 64:1] -> ld stage 0
    @(r0 >= 1) wait done >= r0
    @(r0 >= 1) dma q1 hbm y[64*r0 - 64; 4:256, 64:1], sbuf.f32[0, 4; 1280 - (r0 mod 2)*256; 64:1] -> stored stage 1
  }
}
engine dve {
  loop r0 = 0..4 {
    wait ld >= r0 + 1
    @(r0 >= 2) wait stored >= r0
    tensor_scalar add sbuf.f32[0, 4; (r0 mod 2)*256 + 1024; 64:1], sbuf.f32[0, 4; (r0 mod 2)*256; 64:1], 1.0 -> done stage 1
  }
}
