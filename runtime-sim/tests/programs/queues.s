# A 128 x 512 float32 load split over the 16 DMA queues, 8 partitions each (as the Neuron
# guides recommend), then one copy that waits for all 16 transfers.
tensor a: f32[128, 512] input
tensor out: f32[128, 512] output
semaphore ld
semaphore copied
engine sp {
  dma q0 sbuf.f32[0, 8; 0; 512:1], hbm a[0; 8:512, 512:1] -> ld
  dma q1 sbuf.f32[8, 8; 0; 512:1], hbm a[4096; 8:512, 512:1] -> ld
  dma q2 sbuf.f32[16, 8; 0; 512:1], hbm a[8192; 8:512, 512:1] -> ld
  dma q3 sbuf.f32[24, 8; 0; 512:1], hbm a[12288; 8:512, 512:1] -> ld
  dma q4 sbuf.f32[32, 8; 0; 512:1], hbm a[16384; 8:512, 512:1] -> ld
  dma q5 sbuf.f32[40, 8; 0; 512:1], hbm a[20480; 8:512, 512:1] -> ld
  dma q6 sbuf.f32[48, 8; 0; 512:1], hbm a[24576; 8:512, 512:1] -> ld
  dma q7 sbuf.f32[56, 8; 0; 512:1], hbm a[28672; 8:512, 512:1] -> ld
  dma q8 sbuf.f32[64, 8; 0; 512:1], hbm a[32768; 8:512, 512:1] -> ld
  dma q9 sbuf.f32[72, 8; 0; 512:1], hbm a[36864; 8:512, 512:1] -> ld
  dma q10 sbuf.f32[80, 8; 0; 512:1], hbm a[40960; 8:512, 512:1] -> ld
  dma q11 sbuf.f32[88, 8; 0; 512:1], hbm a[45056; 8:512, 512:1] -> ld
  dma q12 sbuf.f32[96, 8; 0; 512:1], hbm a[49152; 8:512, 512:1] -> ld
  dma q13 sbuf.f32[104, 8; 0; 512:1], hbm a[53248; 8:512, 512:1] -> ld
  dma q14 sbuf.f32[112, 8; 0; 512:1], hbm a[57344; 8:512, 512:1] -> ld
  dma q15 sbuf.f32[120, 8; 0; 512:1], hbm a[61440; 8:512, 512:1] -> ld
  wait copied >= 1
  dma q0 hbm out[0; 128:512, 512:1], sbuf.f32[0, 128; 2048; 512:1]
}
engine pool {
  wait ld >= 16
  copy sbuf.f32[0, 128; 2048; 512:1], sbuf.f32[0, 128; 0; 512:1] -> copied
}
