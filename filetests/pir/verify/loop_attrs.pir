# test: pir
# error: loop ax0 (`i`): lower bound 4 is above upper bound 2
# error: loop ax1 (`j`): num_stages is 0; it must be at least 1
# error: loop ax1 (`j`): multi_buffer is 0; it must be at least 1
# error: loop ax2 (`k`): is pipelined from 16 iterations in 3 stages, so it runs 18 iterations, but its bounds 0..16 give 16
# error: loop ax3 (`p`): is pipelined from 16 iterations in 3 stages, so it runs a steady state of 14 iterations, but its bounds 0..18 give 18
kernel f() -> () {
  loop i in 4..2 affine {
  }
  loop j in 0..2 sequential num_stages=0 multi_buffer=0 {
  }
  loop k in 0..16 affine pipelined(stages=3, trip=16) {
  }
  loop p in 0..18 affine pipelined(stages=3, trip=16, peeled) {
  }
}
