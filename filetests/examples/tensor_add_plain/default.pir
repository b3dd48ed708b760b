kernel tensor_add_plain(a, b) -> (c) {
  tensor a: hbm f32[2048, 512] input
  tensor b: hbm f32[2048, 512] input
  tensor c: hbm f32[2048, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 5]
  tensor tb: sbuf f32[128, 512] local block[i: 5]
  tensor tc: sbuf f32[128, 512] local block[i: 5]
  loop i in 0..20 affine {
    stmt if i < 16 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt if i < 16 {
      tb{i}[0 +: 128, 0 +: 512] = load.dma b[128*i +: 128, 0 +: 512]
    }
    stmt if i >= 4 {
      tc{i - 4}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) ta{i - 4}[0 +: 128, 0 +: 512], tb{i - 4}[0 +: 128, 0 +: 512]
    }
    stmt if i >= 4 {
      c[128*i - 512 +: 128, 0 +: 512] = store.dma tc{i - 4}[0 +: 128, 0 +: 512]
    }
  }
}
