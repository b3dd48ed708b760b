# test: pir
# error: line 8:46: missing parameter `imm` of `tensor_scalar`
kernel k(a) -> () {
  tensor a: hbm f32[128, 512] input
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]
    t[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=multiply, reverse=false) t[0 +: 128, 0 +: 512]
  }
}
