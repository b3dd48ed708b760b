# test: pir
# error: line 5:5: expected an instruction (statements do not nest inside `stmt { }`; use a `loop`), found `stmt`
kernel k() -> () {
  stmt {
    stmt {
    }
  }
}
