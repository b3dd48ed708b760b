# test: pir
# error: inst i1 (`t = load`, in loop i): source 0 reads `x` rows 0..256 but `x` has 250 rows (at i = 1)
# error: inst i2 (`tp = transpose`, at top level): `transpose` cannot carry a mask
# error: mask bound on `p` uses `j` outside the loop over `j`
kernel k(x) -> () {
  tensor x: hbm f32[250, 512] input
  tensor t: sbuf f32[128, 512] local
  tensor tp: psum f32[128, 128] local
  loop j in 0..1 affine {
    stmt {
    }
  }
  loop i in 0..2 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512] mask(p < -128*i + 250)
      t[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512] mask(p < -128*i + 251)
    }
  }
  stmt {
    tp[0 +: 128, 0 +: 128] = transpose.pe t[0 +: 128, 0 +: 128] mask(p < 3)
    t[0 +: 128, 0 +: 512] = memset.dve(value=0.0) mask(p < j)
  }
}
