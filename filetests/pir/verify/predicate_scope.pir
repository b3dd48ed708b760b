# test: pir
# A loop statement's predicates sit outside its own loop; so does a later statement's.
# error: stmt s0 (loop i, at top level): predicate 0 uses `i` outside the loop over `i`
# error: stmt s3 (in loop j): predicate 0 uses `i` outside the loop over `i`
kernel k() -> () {
  tensor t: sbuf f32[128, 512] local
  loop i in 0..4 affine if i >= 1 {
    stmt if i < 3 {
      t[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    }
  }
  loop j in 0..4 affine {
    stmt if i < 3 && j >= 1 {
      t[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    }
  }
}
