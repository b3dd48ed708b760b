//! The float32 arithmetic of every operation, bit-identical to Penguin's interpreter.
//!
//! runtime-sim depends on no other nkc crate, so this module restates the contract of
//! `penguin/src/interp/kernels.rs`, `ActFunc::apply`, `AluOp::apply` and `round_bf16`; the root
//! package's `tests/numerics_agree.rs` proves the two agree bit for bit. The fixed orders:
//! - matmul: for every `(m, n)`, `s = 0.0; for k in 0..K { s = s + a[k][m] * b[k][n] }`, the
//!   product rounded to f32 before the addition (no fused multiply-add); accumulating adds `dst + s`;
//! - activation: `t = x * scale`, then `t + bias` when there is a bias, then the function;
//! - reduce sum: `s = 0.0` then left to right; max and min fold from `x[0]`.

use crate::isa::{ActFunc, AluOp, DType, ReduceOp};

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

/// The value `x` takes when stored as `dtype`.
pub fn round_to(dtype: DType, x: f32) -> f32 {
    match dtype {
        DType::F32 => x,
        DType::Bf16 => round_bf16(x),
    }
}

/// `a op b` in float32.
pub fn alu(op: AluOp, a: f32, b: f32) -> f32 {
    match op {
        AluOp::Add => a + b,
        AluOp::Subtract => a - b,
        AluOp::Multiply => a * b,
        AluOp::Divide => a / b,
        AluOp::Maximum => a.max(b),
        AluOp::Minimum => a.min(b),
    }
}

/// `func(x)` in float32 (gelu: the tanh approximation, evaluated in f32 in this order).
pub fn act(func: ActFunc, x: f32) -> f32 {
    match func {
        ActFunc::Identity => x,
        ActFunc::Exp => x.exp(),
        ActFunc::Log => x.ln(),
        ActFunc::Tanh => x.tanh(),
        ActFunc::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        ActFunc::Relu => x.max(0.0),
        ActFunc::Gelu => {
            const SQRT_2_OVER_PI: f32 = 0.797_884_6;
            0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
        }
        ActFunc::Sqrt => x.sqrt(),
        ActFunc::Rsqrt => 1.0 / x.sqrt(),
        ActFunc::Square => x * x,
        ActFunc::Reciprocal => 1.0 / x,
    }
}

/// `func(x * scale + bias)` with the bias step skipped when there is none.
pub fn activation(func: ActFunc, x: f32, scale: f32, bias: Option<f32>) -> f32 {
    match bias {
        Some(b) => act(func, x * scale + b),
        None => act(func, x * scale),
    }
}

/// `out[m][n] = Σ_k a[k][m] · b[k][n]` for row-major `a: [K, M]`, `b: [K, N]`; `out: [M, N]`.
/// Requires `a.len() == k * m` and `b.len() == k * n` (the caller's shape check).
pub fn matmul(a: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    if n == 0 {
        return out;
    }
    for (mi, row) in out.chunks_exact_mut(n).enumerate() {
        for (ki, brow) in b.chunks_exact(n).enumerate().take(k) {
            let x = a[ki * m + mi];
            for (o, &y) in row.iter_mut().zip(brow) {
                *o += x * y;
            }
        }
    }
    out
}

/// Reduces one row (`row.len() ≥ 1`; an empty row gives 0 for sum and NaN otherwise).
pub fn reduce(op: ReduceOp, row: &[f32]) -> f32 {
    match op {
        ReduceOp::Sum => row.iter().fold(0.0f32, |s, &v| s + v),
        ReduceOp::Max => match row.split_first() {
            Some((&first, rest)) => rest.iter().fold(first, |m, &v| alu(AluOp::Maximum, m, v)),
            None => f32::NAN,
        },
        ReduceOp::Min => match row.split_first() {
            Some((&first, rest)) => rest.iter().fold(first, |m, &v| alu(AluOp::Minimum, m, v)),
            None => f32::NAN,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_sums_k_upward_from_zero() {
        let a = [1.0f32, 1.0, 1.0];
        let b = [1.0e8f32, 1.0, -1.0e8];
        assert_eq!(matmul(&a, &b, 3, 1, 1), vec![0.0]);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(round_bf16(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(round_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert!(round_bf16(f32::NAN).is_nan());
    }
}
