# test: pir
# error: strides its partition axis; on chip the partition axis is never strided
# error: has a free axis that moves across partitions
# error: writes `b` through an access pattern that reaches some element twice
# error: reads `a` columns 1..14 but `a` has 12 columns
kernel k(x) -> () {
  tensor x: hbm f32[128, 12] input
  tensor a: sbuf f32[128, 12] local
  tensor b: sbuf f32[128, 12] local
  stmt {
    a[0 +: 128, 0 +: 12] = load.dma x[0 +: 128, 0 +: 12]
    b[0 +: 64, 0 +: 12] = copy.dve a[0, 0 : (64: 2, 0), (12: 0, 1)]
    b[0 +: 64, 0 +: 12] = copy.dve a[0, 0 : (64: 1, 0), (12: 1, 0)]
    b[0, 0 : (128: 1, 0), (4: 0, 1), (3: 0, 1)] = copy.dve a[0 +: 128, 0 +: 12]
    b[0 +: 128, 0 +: 7] = copy.dve a[0, 1 : (128: 1, 0), (7: 0, 2)]
  }
}
