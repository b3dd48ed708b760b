# test: pir
# error: line 7:8: duplicate induction variable `i` (first declared at line 4:8)
kernel k() -> () {
  loop i in 0..2 affine {
    stmt { }
  }
  loop i in 0..2 affine {
    stmt { }
  }
}
