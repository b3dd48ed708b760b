kernel softmax_stages(x) -> (y) {
  tensor x: hbm f32[1024, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor mx: sbuf f32[128, 1] local
  tensor _tensor_scalar: sbuf f32[128, 1] local
  tensor e: sbuf f32[128, 512] local
  tensor s: sbuf f32[128, 1] local
  tensor _activation: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt {
      mx[0 +: 128, 0 +: 1] = reduce.dve(op=max) t[0 +: 128, 0 +: 512]
    }
    stmt {
      _tensor_scalar[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=-1.0, reverse=false) mx[0 +: 128, 0 +: 1]
      e[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=true) t[0 +: 128, 0 +: 512], _tensor_scalar[0 +: 128, 0 +: 1]
    }
    stmt {
      s[0 +: 128, 0 +: 1] = reduce.dve(op=sum) e[0 +: 128, 0 +: 512]
    }
    stmt {
      _activation[0 +: 128, 0 +: 1] = activation.act(func=reciprocal, scale=1.0, bias=false) s[0 +: 128, 0 +: 1]
      r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) e[0 +: 128, 0 +: 512], _activation[0 +: 128, 0 +: 1]
    }
    stmt {
      y[128*i +: 128, 0 +: 512] = store.dma r[0 +: 128, 0 +: 512]
    }
  }
}
