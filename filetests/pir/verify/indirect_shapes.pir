# test: pir
# error: inst i0 (`rows = gather`, at top level): the index tile (source 1) of `gather` is [32, 2] but the tile is [32, 64]; it holds one row index per partition, [32, 1]
# error: inst i1 (`out = scatter`, at top level): the HBM box of `scatter` is [256, 32] but the tile is [32, 64]; the rows must be as long as the tile's
# error: inst i2 (`rows = gather`, at top level): `gather` takes its HBM side in HBM, but `ix` is in SBUF
# error: inst i2 (`rows = gather`, at top level): the HBM box of `gather` is [32, 1] but the tile is [32, 64]
kernel k(table) -> (out) {
  tensor table: hbm f32[256, 64] input
  tensor out: hbm f32[256, 64] output
  tensor ix: sbuf f32[32, 2] local
  tensor rows: sbuf f32[32, 64] local
  stmt {
    rows[0 +: 32, 0 +: 64] = gather.dma(skip_oob=false) table[0 +: 256, 0 +: 64], ix[0 +: 32, 0 +: 2]
    out[0 +: 256, 0 +: 32] = scatter.dma(skip_oob=false, accumulate=false) rows[0 +: 32, 0 +: 64], ix[0 +: 32, 0 +: 1]
    rows[0 +: 32, 0 +: 64] = gather.dma(skip_oob=false) ix[0 +: 32, 0 +: 1], ix[0 +: 32, 0 +: 1]
  }
}
