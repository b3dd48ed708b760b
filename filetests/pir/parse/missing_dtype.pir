# test: pir
# error: line 4:17: expected a dtype (`f32` or `bf16`), found `[`
kernel k(a) -> () {
  tensor a: hbm [128, 512] input
}
