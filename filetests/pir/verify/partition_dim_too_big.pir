# test: pir
# error: tensor t1 (`t`): has 256 partitions; SBUF holds at most 128
kernel k(a) -> () {
  tensor a: hbm f32[256, 512] input
  tensor t: sbuf f32[256, 512] local
  stmt {
    t[0 +: 256, 0 +: 512] = load.dma a[0 +: 256, 0 +: 512]
  }
}
