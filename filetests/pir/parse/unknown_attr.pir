# test: pir
# error: line 4:8: expected `stage_id=N`, `execution_order=N`, `stage=N`, `if` or `{`, found `stage_idx`
kernel k() -> () {
  stmt stage_idx=0 {
  }
}
