# test: pir
# error: line 5:29: expected `&&` or `{`, found `and`
kernel k() -> () {
  loop i in 0..4 affine {
    stmt if i >= 1 && i < 3 and i == 0 {
    }
  }
}
