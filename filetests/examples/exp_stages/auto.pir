kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 8]
  tensor tb: sbuf f32[128, 512] local block[i: 8]
  loop i in 0..15 affine {
    stmt if i < 8 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt if i >= 7 {
      tb{i - 7}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) ta{i - 7}[0 +: 128, 0 +: 512]
    }
    stmt if i >= 7 {
      c[128*i - 896 +: 128, 0 +: 512] = store.dma tb{i - 7}[0 +: 128, 0 +: 512]
    }
  }
}
