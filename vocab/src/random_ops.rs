//! The random numbers a kernel draws at run time (`nl.rand`, `nisa.dropout`): one counter-based
//! generator that the interpreter and the simulator both call, so they agree bit for bit.
//!
//! Each value is a pure function of (the program's seed [`RAND_SEED`], the instruction's
//! `stream`, the element's partition `p`, its row-major index `f` within the partition): two
//! rounds of the SplitMix64 finaliser over the packed counter. There is no hidden state: an
//! instruction gives the same values every time it runs (in every iteration of a loop), and
//! the front end gives each call of `nl.rand` / `nisa.dropout` its own stream.
//!
//! Invariants: [`rand_at`] is in `[0, 1)` and a multiple of 2^-24 (exact in float32); an element
//! is dropped by [`dropout`] exactly when its `rand_at` is below the probability, so probability
//! 0 keeps everything and probability 1 (or more) drops everything.

/// The seed of every random instruction (nkc has no run-time seed: the values are fixed by the
/// program, so the interpreter, the simulator and a rerun agree).
pub const RAND_SEED: u64 = 0x6E6B_635F_7261_6E64;

/// The SplitMix64 output function (Steele, Lea, Flood 2014).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The uniform value in `[0, 1)` of element (`p`, `f`) of the instruction of stream `stream`: the
/// top 24 bits of the hash over 2^24.
pub fn rand_at(stream: u32, p: u64, f: u64) -> f32 {
    let key = mix(RAND_SEED ^ u64::from(stream));
    let h = mix(key ^ (p << 40) ^ f);
    (h >> 40) as f32 / (1u32 << 24) as f32
}

/// One element of `nisa.dropout`: `x`, or zero when the element's random value is below `prob`.
pub fn dropout(stream: u32, p: u64, f: u64, x: f32, prob: f32) -> f32 {
    if rand_at(stream, p, f) < prob {
        0.0
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::{dropout, rand_at};

    #[test]
    fn values_are_uniform_and_keyed() {
        let vals: Vec<f32> = (0..4096).map(|f| rand_at(3, 1, f)).collect();
        assert!(vals.iter().all(|v| (0.0..1.0).contains(v)));
        let mean = vals.iter().map(|&v| f64::from(v)).sum::<f64>() / 4096.0;
        assert!((mean - 0.5).abs() < 0.03, "mean {mean}");
        assert_ne!(rand_at(3, 1, 0), rand_at(4, 1, 0));
        assert_ne!(rand_at(3, 1, 0), rand_at(3, 2, 0));
        assert_eq!(rand_at(3, 1, 7), rand_at(3, 1, 7));
    }

    #[test]
    fn dropout_extremes() {
        assert_eq!(dropout(0, 0, 0, 5.0, 0.0), 5.0);
        assert_eq!(dropout(0, 0, 0, 5.0, 1.0), 0.0);
    }
}
