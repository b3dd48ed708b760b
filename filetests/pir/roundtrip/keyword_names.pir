# test: pir
# Names that are also words of the text form still parse where they are names.
kernel loop(tensor) -> (stmt) {
  tensor tensor: hbm f32[256, 512] input
  tensor stmt: hbm f32[256, 512] output
  tensor loop: sbuf f32[128, 512] local block[if: 2]
  tensor block: sbuf f32[128, 1] local
  loop if in 0..2 range {
    loop in in 0..1 sequential stage=0 if if >= 0 {
      stmt if in == 0 && if - in < 2 {
        loop{if}[0 +: 128, 0 +: 512] = load.dma tensor[128*if + in +: 128, 0 +: 512]
        block[0 +: 128, 0 +: 1] = reduce.dve(op=sum) loop{if}[0 +: 128, 0 +: 512]
        loop{if + in}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) loop{if}[0 +: 128, 0 +: 512], block[0 +: 128, 0 +: 1]
        stmt[128*if +: 128, 0 +: 512] = store.dma loop{if}[0 +: 128, 0 +: 512]
      }
    }
  }
}
