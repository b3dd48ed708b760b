# test: pir
# error: line 5:3: expected `stmt`, `loop` or `}` (tensors are declared before the first statement), found `tensor`
kernel k() -> () {
  stmt { }
  tensor t: sbuf f32[128, 512] local
}
