# test: pir
# error: inst i1 (`t = add`, at top level): has 1 source(s) but `tensor_tensor` takes 2
# error: inst i2 (`t = exp`, at top level): has 1 source(s) but `activation` takes 2
kernel k(a) -> () {
  tensor a: hbm f32[128, 512] input
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]
    t[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) t[0 +: 128, 0 +: 512]
    t[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=true) t[0 +: 128, 0 +: 512]
  }
}
