# test: isa
# Indirect DMA: a gather (row p of `rows` is row ix[p] of the HBM box `table[64*j, 64]`, the box
# every index may name) and a scatter back into `out` by the same index tile (source 1).
kernel gs(table, idx) -> (out) {
  tensor table: hbm f32[256, 64] input
  tensor idx: hbm f32[32, 1] input
  tensor out: hbm f32[256, 64] output
  tensor ix: sbuf f32[32, 1] local
  tensor rows: sbuf f32[32, 64] local
  stmt {
    ix[0 +: 32, 0 +: 1] = load.dma idx[0 +: 32, 0 +: 1]
  }
  loop j in 0..4 affine {
    stmt {
      rows[0 +: 32, 0 +: 64] = gather.dma(skip_oob=false) table[64*j +: 64, 0 +: 64], ix[0 +: 32, 0 +: 1]
    }
    stmt {
      out[64*j +: 64, 0 +: 64] = scatter.dma(skip_oob=false, accumulate=false) rows[0 +: 32, 0 +: 64], ix[0 +: 32, 0 +: 1]
    }
  }
}

# output:
# # *** IR after hoist (isa) ***
# tensor table: f32[256, 64] input
# tensor idx: f32[32, 1] input
# tensor out: f32[256, 64] output
# semaphore dma0
# semaphore dma2
# semaphore dma1
# engine sp {
#   dma q0 sbuf.f32[0, 32; 256; 1:1], hbm idx[0; 32:1, 1:1] -> dma0
#   loop r0 = 0..4 {
#     wait dma0 >= 1
#     wait dma2 >= r0
#     dma q1 sbuf.f32[0, 32; 0; 64:1], hbm table[4096*r0; 64:64, 64:1] index sbuf.f32[0, 32; 256; 1:1] -> dma1
#     wait dma1 >= r0 + 1
#     dma q2 hbm out[4096*r0; 64:64, 64:1], sbuf.f32[0, 32; 0; 64:1] index sbuf.f32[0, 32; 256; 1:1] -> dma2
#   }
# }
