# test: pir
# error: line 4:18: expected a loop kind (`affine`, `sequential` or `range`), found `{`
kernel k() -> () {
  loop i in 0..4 {
  }
}
