# test: pir
# error: inst i0 (`t = load`, at top level): `load` cannot run on the Tensor (`pe`) engine
# error: inst i1 (`t = exp`, at top level): `activation` cannot run on the Vector (`dve`) engine
# error: inst i2 (`t = copy`, at top level): `copy` cannot run on the DMA (`dma`) engine
# error: inst i3 (`r = reduce max`, at top level): `reduce` cannot run on the GpSimd (`pool`) engine
kernel k(a) -> () {
  tensor a: hbm f32[128, 512] input
  tensor t: sbuf f32[128, 512] local
  tensor r: sbuf f32[128, 1] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.pe a[0 +: 128, 0 +: 512]
    t[0 +: 128, 0 +: 512] = activation.dve(func=exp, scale=1.0, bias=false) t[0 +: 128, 0 +: 512]
    t[0 +: 128, 0 +: 512] = copy.dma t[0 +: 128, 0 +: 512]
    r[0 +: 128, 0 +: 1] = reduce.pool(op=max) t[0 +: 128, 0 +: 512]
  }
}
