//! The float32 arithmetic of every operation, bit-identical to Penguin's interpreter.
//!
//! The elementwise operations, the activation functions and the rounding of stored values are the
//! shared vocabulary's (`vocab`: one definition for Penguin and the machine). This module keeps
//! the simulator's loops over whole tiles, in the same fixed orders as
//! `penguin/src/interp/kernels.rs` (the root package's `tests/numerics_agree.rs` checks the two bit
//! for bit):
//! - matmul: for every `(m, n)`, `s = 0.0; for k in 0..K { s = s + a[k][m] * b[k][n] }`, the
//!   product rounded to f32 before the addition (no fused multiply-add); accumulating adds `dst + s`;
//! - activation: `t = x * scale`, then `t + bias` when there is a bias, then the function;
//! - reduce sum: `s = 0.0` then left to right; max and min fold from `x[0]`.

use crate::isa::{ActFunc, AluOp, ReduceOp};

pub use vocab::{matmul, maximum, minimum, round_bf16, round_to};

/// `a op b` in float32 (the shared vocabulary's [`AluOp::apply`]).
pub fn alu(op: AluOp, a: f32, b: f32) -> f32 {
    op.apply(a, b)
}

/// `func(x)` in float32 (the shared vocabulary's [`ActFunc::apply`]).
pub fn act(func: ActFunc, x: f32) -> f32 {
    func.apply(x)
}

/// `func(x * scale + bias)` with the bias step skipped when there is none.
pub fn activation(func: ActFunc, x: f32, scale: f32, bias: Option<f32>) -> f32 {
    match bias {
        Some(b) => act(func, x * scale + b),
        None => act(func, x * scale),
    }
}

/// One row's reduction (the shared vocabulary's [`ReduceOp::fold`]).
pub fn reduce(op: ReduceOp, row: &[f32]) -> f32 {
    op.fold(row)
}
