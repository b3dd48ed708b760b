//! Element types and how a float32 value is stored in each.

/// The element types of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    Bf16,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::Bf16 => "bf16",
        }
    }

    /// The type named `s` (`f32`, `bf16`).
    pub fn from_name(s: &str) -> Option<DType> {
        match s {
            "f32" => Some(DType::F32),
            "bf16" => Some(DType::Bf16),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::F32 => 4,
            DType::Bf16 => 2,
        }
    }
}

/// Rounds to the nearest bfloat16 (ties to even), kept in an f32; NaN stays a quiet NaN.
pub fn round_bf16(x: f32) -> f32 {
    let bits = x.to_bits();
    if x.is_nan() {
        return f32::from_bits((bits | 0x0040_0000) & 0xFFFF_0000);
    }
    let lsb = (bits >> 16) & 1;
    let rounded = bits.wrapping_add(0x7FFF + lsb) & 0xFFFF_0000;
    f32::from_bits(rounded)
}

/// The value a float32 takes in memory: every NaN is stored as the one canonical quiet NaN, so that
/// results never depend on which NaN payload an operation happened to propagate.
pub fn canonical_nan(x: f32) -> f32 {
    if x.is_nan() {
        f32::NAN
    } else {
        x
    }
}

/// The value `x` takes when stored as `dtype`: the canonical NaN, then bf16 rounding.
pub fn round_to(dtype: DType, x: f32) -> f32 {
    let x = canonical_nan(x);
    match dtype {
        DType::F32 => x,
        DType::Bf16 => round_bf16(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        // 1 + 2^-8 is halfway between two bf16 values: it goes to the even one, 1.0.
        assert_eq!(round_bf16(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(round_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert!(round_bf16(f32::NAN).is_nan());
        assert_eq!(
            round_to(DType::F32, -f32::NAN).to_bits(),
            f32::NAN.to_bits()
        );
    }
}
