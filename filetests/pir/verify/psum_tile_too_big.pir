# test: pir
# Two slots of 2 KiB are fine (a ring of banks), and so is an array of two banks accessed one
# bank at a time; an access of 2.5 KiB is not, nor one that may cross a bank, nor bf16 in PSUM.
# error: reaches 2560 bytes of `big` in each partition, more than one PSUM bank (2048)
# error: of `two` may cross a PSUM bank (512 elements each)
# error: tensor t3 (`half`): is a PSUM tensor of bf16; PSUM holds f32
kernel k() -> () {
  tensor ring: psum f32[128, 512] local block[i: 2]
  tensor big: psum f32[128, 640] local
  tensor two: psum f32[128, 1024] local
  tensor half: psum bf16[128, 512] local
  loop i in 0..4 affine {
    stmt {
      ring{i}[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      big[0 +: 128, 0 +: 640] = memset.dve(value=0.0)
      two[0 +: 128, 512 +: 512] = memset.dve(value=0.0)
      two[0 +: 128, 256 +: 512] = memset.dve(value=0.0)
      half[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
    }
  }
}
