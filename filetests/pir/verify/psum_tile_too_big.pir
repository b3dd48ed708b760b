# test: pir
# Two slots of 2 KiB are fine (a ring of banks); one tile of 2.5 KiB is not, nor is bf16 in PSUM.
# error: tensor t1 (`big`): a PSUM tile takes 2560 bytes per partition; one bank holds 2048
# error: tensor t2 (`half`): is a PSUM tensor of bf16; PSUM holds f32
kernel k() -> () {
  tensor ring: psum f32[128, 512] local block[i: 2]
  tensor big: psum f32[128, 640] local
  tensor half: psum bf16[128, 512] local
  loop i in 0..4 affine {
    stmt {
      ring{i}[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      big[0 +: 128, 0 +: 640] = memset.dve(value=0.0)
      half[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    }
  }
}
