//! Checked integer and affine arithmetic, the bottom of the checker: Python's `//`, `%`, `<<` and
//! `>>` on 64-bit integers, linear combinations of affine expressions, and the largest extent
//! (dimension, trip count, loop bound, coefficient) nkc accepts.
//!
//! Invariant: every function returns `None` on overflow (or a division by zero) and never panics;
//! the callers turn `None` into a diagnostic. This module imports nothing of the checker.

use crate::ast::BinOp;
use penguin::{AffineExpr, Axis};
use std::collections::BTreeMap;

/// The largest dimension of a tensor and the largest trip count of a loop: 2^24. Larger ones are
/// rejected so that no later pass meets sizes whose products overflow.
pub(super) const MAX_EXTENT: i64 = 1 << 24;

/// `ka·a + kb·b` with checked arithmetic.
pub(super) fn lin(a: &AffineExpr, ka: i64, b: &AffineExpr, kb: i64) -> Option<AffineExpr> {
    let mut terms: BTreeMap<Axis, i64> = BTreeMap::new();
    for (e, k) in [(a, ka), (b, kb)] {
        for &(axis, c) in e.terms() {
            let add = c.checked_mul(k)?;
            let slot = terms.entry(axis).or_insert(0);
            *slot = slot.checked_add(add)?;
        }
    }
    let constant = a
        .constant_term()
        .checked_mul(ka)?
        .checked_add(b.constant_term().checked_mul(kb)?)?;
    Some(AffineExpr::from_terms(terms, constant))
}

/// Python's `//` and `%` (rounding toward negative infinity); `None` on overflow.
pub(super) fn floor_div_mod(a: i64, b: i64) -> Option<(i64, i64)> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some((q - 1, r + b))
    } else {
        Some((q, r))
    }
}

/// `x << y` or `x >> y` (`op`) on Python's integers, `y` not negative: `None` when the result
/// leaves 64 bits. A right shift rounds toward negative infinity, as Python's does.
pub(super) fn shift(op: BinOp, x: i64, y: i64) -> Option<i64> {
    if op == BinOp::Shr {
        return Some(if y >= 64 { x.signum().min(0) } else { x >> y });
    }
    if x == 0 {
        return Some(0);
    }
    let v = i128::from(x).checked_shl(u32::try_from(y).ok().filter(|&y| y < 64)?)?;
    i64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::floor_div_mod;

    #[test]
    fn floor_division_follows_python() {
        assert_eq!(floor_div_mod(7, 2), Some((3, 1)));
        assert_eq!(floor_div_mod(-7, 2), Some((-4, 1)));
        assert_eq!(floor_div_mod(7, -2), Some((-4, -1)));
        assert_eq!(floor_div_mod(-7, -2), Some((3, -1)));
        assert_eq!(floor_div_mod(i64::MIN, -1), None);
    }
}
