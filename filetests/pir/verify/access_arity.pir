# test: pir
# error: inst i0 (`t = load`, in loop i): destination `t` has 0 slot expression(s) but `t` has 1 block dimension(s)
# error: inst i1 (`t = exp`, in loop i): source 0 `t` has 1 start(s) and 1 size(s) but `t` has 2 dimensions
# error: inst i1 (`t = exp`, in loop i): destination `t` has 2 slot expression(s) but `t` has 1 block dimension(s)
kernel k(a) -> () {
  tensor a: hbm f32[256, 512] input
  tensor t: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..2 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
      t{i, i}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) t{i}[0 +: 128]
    }
  }
}
