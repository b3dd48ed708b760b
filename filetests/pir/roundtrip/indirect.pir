# test: pir
# Indirect DMA: a gather (row p of `rows` is row ix[p] of the HBM box `table[64*j, 64]`, the box
# every index may name) and a scatter back into `out` by the same index tile (source 1), one
# with `skip_oob` (an index outside the box moves nothing for its row).
kernel gs(table, idx) -> (out) {
  tensor table: hbm f32[256, 64] input
  tensor idx: hbm f32[32, 1] input
  tensor out: hbm f32[256, 64] output
  tensor ix: sbuf f32[32, 1] local
  tensor rows: sbuf f32[32, 64] local
  stmt {
    ix[0 +: 32, 0 +: 1] = load.dma idx[0 +: 32, 0 +: 1]
  }
  loop j in 0..4 affine {
    stmt {
      rows[0 +: 32, 0 +: 64] = gather.dma(skip_oob=false) table[64*j +: 64, 0 +: 64], ix[0 +: 32, 0 +: 1]
    }
    stmt {
      out[64*j +: 64, 0 +: 64] = scatter.dma(skip_oob=true, accumulate=false) rows[0 +: 32, 0 +: 64], ix[0 +: 32, 0 +: 1]
    }
  }
}
