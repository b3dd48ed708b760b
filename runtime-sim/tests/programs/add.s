# out = a + b on a full 128 x 512 float32 tile: two loads on two queues in parallel,
# one vector add, one store.
tensor a: f32[128, 512] input
tensor b: f32[128, 512] input
tensor out: f32[128, 512] output
semaphore la
semaphore lb
semaphore added
engine sp {
  dma q0 sbuf.f32[0, 128; 0; 512:1], hbm a[0; 128:512, 512:1] -> la line 2 stmt "a_t = nl.load(a)"
  dma q1 sbuf.f32[0, 128; 2048; 512:1], hbm b[0; 128:512, 512:1] -> lb line 3 stmt "b_t = nl.load(b)"
  wait added >= 1
  dma q2 hbm out[0; 128:512, 512:1], sbuf.f32[0, 128; 4096; 512:1] line 5 stmt "nl.store(out, c)"
}
engine dve {
  wait la >= 1
  wait lb >= 1
  tensor_tensor add sbuf.f32[0, 128; 4096; 512:1], sbuf.f32[0, 128; 0; 512:1], sbuf.f32[0, 128; 2048; 512:1] -> added line 4 stmt "c = a_t + b_t"
}
