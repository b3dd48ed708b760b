# test: pir
# Every op, engine, parameter and attribute of the text form, with awkward floats.
kernel every_op(x) -> (y, z) {
  tensor x: hbm f32[1024, 512] input
  tensor y: hbm f32[1024, 512] output
  tensor z: hbm bf16[128, 128] output
  tensor t: sbuf f32[128, 512] local block[i: 3, j: 2]
  tensor mx: sbuf f32[128, 1] local
  tensor nmx: sbuf f32[128, 1] local
  tensor e: sbuf f32[128, 512] local
  tensor s: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 512] local
  tensor sq: sbuf f32[128, 128] local
  tensor tp: psum f32[128, 128] local
  tensor t.1: sbuf bf16[128, 128] local
  loop i in -2..6 sequential num_stages=2 multi_buffer=3 disable_auto_buffer disable_execution_order_check pipelined(stages=2, trip=7) stage_id=0 execution_order=1 stage=0 {
    loop j in 0..2 range stage_id=1 execution_order=0 stage=1 if i >= -2 && 2*i < 100 && i == 3 {
      stmt stage_id=0 execution_order=3 stage=2 {
        t{i + 2, j}[0 +: 128, 0 +: 512] = load.dma x[128*i + 256 +: 128, 0 +: 512]
      }
      stmt {
        mx[0 +: 128, 0 +: 1] = reduce.dve(op=max) t{i + 2, j}[0 +: 128, 0 +: 512]
        nmx[0 +: 128, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=-1.0, reverse=false) mx[0 +: 128, 0 +: 1]
        e[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=true) t{i + 2, j}[0 +: 128, 0 +: 512], nmx[0 +: 128, 0 +: 1]
        s[0 +: 128, 0 +: 1] = reduce.dve(op=sum) e[0 +: 128, 0 +: 512]
        s[0 +: 128, 0 +: 1] = reduce.dve(op=min) e[0 +: 128, 0 +: 512]
        s[0 +: 128, 0 +: 1] = activation.act(func=reciprocal, scale=tile, bias=false) s[0 +: 128, 0 +: 1], mx[0 +: 128, 0 +: 1]
        r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) e[0 +: 128, 0 +: 512], s[0 +: 128, 0 +: 1]
        r[0 +: 128, 0 +: 512] = tensor_scalar.pool(op=subtract, imm=1e-7, reverse=true) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=divide, imm=inf, reverse=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=maximum, imm=-inf, reverse=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=minimum, imm=NaN, reverse=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=add, imm=nan:0x7fc00001, reverse=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=add, imm=-0.0, reverse=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=gelu, scale=0.1, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_tensor.pool(op=subtract) r[0 +: 128, 0 +: 512], e[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=divide) r[0 +: 128, 0 +: 512], e[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=maximum) r[0 +: 128, 0 +: 512], e[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=minimum) r[0 +: 128, 0 +: 512], e[0 +: 128, 0 +: 512]
      }
      stmt {
        r[0 +: 128, 0 +: 512] = activation.act(func=identity, scale=3.4028235e38, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=log, scale=1e-45, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=tanh, scale=-2.5, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=sigmoid, scale=1.0, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=relu, scale=1.0, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=sqrt, scale=1.0, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=rsqrt, scale=1.0, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = activation.act(func=square, scale=1.0, bias=false) r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = copy.act r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = copy.dve r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = copy.pool r[0 +: 128, 0 +: 512]
        r[0 +: 128, 0 +: 512] = memset.pool(value=-3.5)
      }
      stmt execution_order=2 if j == 0 {
        y[128*i + 256 +: 128, 0 +: 512] = store.dma r[0 +: 128, 0 +: 512]
        tp[0 +: 128, 0 +: 128] = transpose.pe r[0 +: 128, 128*j +: 128]
        tp[0 +: 128, 0 +: 128] = matmul.pe(accumulate=false) r[0 +: 128, 0 +: 128], r[0 +: 128, 128 +: 128]
        sq[0 +: 128, 0 +: 128] = copy.any tp[0 +: 128, 0 +: 128]
        t.1[0 +: 128, 0 +: 128] = copy.act sq[0 +: 128, 0 +: 128]
        z[0 +: 128, 0 +: 128] = store.dma t.1[0 +: 128, 0 +: 128]
      }
    }
  }
  stmt {
  }
}
