# test: pir
# error: line 6:29: expected an operation with its engine (`OP.ENGINE`, e.g. `load.dma`), found `copy`
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = copy t[0 +: 128, 0 +: 512]
  }
}
