//! The seeded random numbers of kernel inputs (and of the random kernels of the tests).

/// SplitMix64 (Steele, Lea, Flood 2014): every value drawn depends on the seed only.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `[-1, 1)`: the top 24 bits over `2^23`, minus one (exact in f32). Kernel inputs
    /// are drawn this way, one element after another, in declaration order.
    pub fn next_unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u32 << 23) as f32 - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn the_first_values_are_splitmix64s() {
        // The reference sequence of SplitMix64 from seed 0.
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let u = SplitMix64(7).next_unit();
        assert!((-1.0..1.0).contains(&u));
    }
}
