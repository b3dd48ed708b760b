kernel tensor_add_plain(a, b) -> (c) {
  tensor a: hbm f32[2048, 512] input
  tensor b: hbm f32[2048, 512] input
  tensor c: hbm f32[2048, 512] output
  tensor ta: sbuf f32[128, 512] local
  tensor tb: sbuf f32[128, 512] local
  tensor tc: sbuf f32[128, 512] local
  loop i in 0..16 affine {
    stmt {
      ta[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      tb[0 +: 128, 0 +: 512] = load.dma b[128*i +: 128, 0 +: 512]
    }
    stmt {
      tc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) ta[0 +: 128, 0 +: 512], tb[0 +: 128, 0 +: 512]
    }
    stmt {
      c[128*i +: 128, 0 +: 512] = store.dma tc[0 +: 128, 0 +: 512]
    }
  }
}
