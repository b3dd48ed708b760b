# test: pir
# Access patterns: a strided read (every other column), a transposed view written back
# (3 x 4 blocks of each row read in column order), a window with two free axes, and an HBM side
# with a strided partition axis. Each reads back with its size equal to its bounding box.
kernel patterns(x) -> (y) {
  tensor x: hbm f32[256, 12] input
  tensor y: hbm f32[256, 6] output
  tensor a: sbuf f32[128, 12] local
  tensor b: sbuf f32[128, 12] local
  tensor c: sbuf f32[128, 6] local
  tensor w: sbuf f32[128, 3] local
  loop i in 0..2 affine {
    stmt {
      a[0 +: 128, 0 +: 12] = load.dma x[128*i +: 128, 0 +: 12]
      b[0, 0 : (128: 1, 0), (3: 0, 1), (4: 0, 3)] = copy.dve a[0 +: 128, 0 +: 12]
      c[0 +: 128, 0 +: 6] = copy.dve b[0, 1 : (128: 1, 0), (6: 0, 2)]
      w[0 +: 128, 0 +: 3] = tensor_tensor.dve(op=add) a[0, 0 : (128: 1, 0), (3: 0, 4)], a[0, 1 : (128: 1, 0), (3: 0, 4)]
      y[128*i, 0 : (128: 1, 0), (3: 0, 2)] = store.dma w[0 +: 128, 0 +: 3]
    }
  }
}
