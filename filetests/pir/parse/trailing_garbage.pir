# test: pir
# error: line 5:1: expected end of input after the kernel, found `kernel`
kernel k() -> () {
}
kernel k2() -> () {
}
