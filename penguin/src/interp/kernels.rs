//! The numeric kernels of the interpreter: every operation's arithmetic on dense, row-major tiles.
//!
//! These functions own the one definition of each operation's float32 semantics, including the
//! order in which sums are formed. They know nothing of tensors, slots or initialisation: the
//! executor (`super::exec`) gathers the source tiles, checks their shapes, calls one of these and
//! scatters the result. Every function here assumes the shapes its caller has checked, and
//! documents them; a `[P, 1]` operand is a slice of length `P`.
//!
//! Fixed evaluation order (the contract other parts of nkc are compared against):
//! - matmul: for every `(m, n)`, `s = 0.0; for k in 0..K { s = s + a[k][m] * b[k][n] }` with the
//!   product rounded to f32 before the addition (no fused multiply-add); when accumulating the
//!   result is then `dst + s`;
//! - activation: `t = x * scale`, then `t = t + bias` when there is a bias, then `func(t)` by
//!   [`ActFunc::apply`];
//! - reduce sum: `s = 0.0; for f in 0..F { s = s + x[f] }`; max and min fold from `x[0]` with
//!   [`AluOp::Maximum`] / [`AluOp::Minimum`] in increasing `f`;
//! - elementwise ALU ops are [`AluOp::apply`] on each element.

use crate::ir::{ActFunc, AluOp, ReduceOp};

/// A source tile of an elementwise operation on a `[P, F]` destination: either the full `[P, F]`
/// tile or a `[P, 1]` column that broadcasts along the free axis.
#[derive(Clone, Copy)]
pub(super) enum Src<'a> {
    Full(&'a [f32]),
    Column(&'a [f32]),
}

impl Src<'_> {
    /// Row `p` of the operand as seen by a `[P, F]` destination: a slice of `F` values, or the
    /// single broadcast value.
    #[inline]
    fn row(&self, p: usize, f: usize) -> RowSrc<'_> {
        match *self {
            Src::Full(d) => RowSrc::Slice(&d[p * f..(p + 1) * f]),
            Src::Column(c) => RowSrc::Value(c[p]),
        }
    }
}

enum RowSrc<'a> {
    Slice(&'a [f32]),
    Value(f32),
}

/// `out[m][n] = Σ_k a[k][m] · b[k][n]` for `a: [K, M]`, `b: [K, N]`; `out: [M, N]`.
///
/// For a fixed `m` the row `out[m][..]` is built by adding the rows `a[k][m] · b[k][..]` in
/// increasing `k`, which is exactly the per-element order documented above, and keeps the inner
/// loop contiguous.
pub(super) fn matmul(a: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f32> {
    debug_assert_eq!(a.len(), k * m);
    debug_assert_eq!(b.len(), k * n);
    vocab::matmul(a, b, k, m, n)
}

/// `out[f][p] = x[p][f]` for `x: [P, F]`; `out: [F, P]`.
pub(super) fn transpose(x: &[f32], p: usize, f: usize) -> Vec<f32> {
    debug_assert_eq!(x.len(), p * f);
    let mut out = vec![0.0f32; p * f];
    for (pi, row) in x.chunks_exact(f).enumerate() {
        for (fi, &v) in row.iter().enumerate() {
            out[fi * p + pi] = v;
        }
    }
    out
}

/// `out = a op b` on a `[P, F]` destination; either source may be a broadcast column.
pub(super) fn tensor_tensor(op: AluOp, a: Src<'_>, b: Src<'_>, p: usize, f: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(p * f);
    for pi in 0..p {
        match (a.row(pi, f), b.row(pi, f)) {
            (RowSrc::Slice(x), RowSrc::Slice(y)) => {
                out.extend(x.iter().zip(y).map(|(&x, &y)| op.apply(x, y)))
            }
            (RowSrc::Slice(x), RowSrc::Value(y)) => out.extend(x.iter().map(|&x| op.apply(x, y))),
            (RowSrc::Value(x), RowSrc::Slice(y)) => out.extend(y.iter().map(|&y| op.apply(x, y))),
            (RowSrc::Value(x), RowSrc::Value(y)) => {
                let v = op.apply(x, y);
                out.extend(std::iter::repeat_n(v, f));
            }
        }
    }
    out
}

/// `out = x op imm`, or `imm op x` when `reverse`.
pub(super) fn tensor_scalar(op: AluOp, x: &[f32], imm: f32, reverse: bool) -> Vec<f32> {
    if reverse {
        x.iter().map(|&v| op.apply(imm, v)).collect()
    } else {
        x.iter().map(|&v| op.apply(v, imm)).collect()
    }
}

/// The scale of an activation: an immediate, or a `[P, 1]` column.
#[derive(Clone, Copy)]
pub(super) enum ScaleSrc<'a> {
    Imm(f32),
    Column(&'a [f32]),
}

/// `out = func(x * scale + bias)` on `x: [P, F]`, with `scale` an immediate or a `[P, 1]` column
/// and `bias` an optional `[P, 1]` column.
pub(super) fn activation(
    func: ActFunc,
    x: &[f32],
    scale: ScaleSrc<'_>,
    bias: Option<&[f32]>,
    p: usize,
    f: usize,
) -> Vec<f32> {
    let mut out = Vec::with_capacity(p * f);
    for (pi, row) in x.chunks_exact(f).enumerate().take(p) {
        let s = match scale {
            ScaleSrc::Imm(imm) => imm,
            ScaleSrc::Column(c) => c[pi],
        };
        match bias {
            Some(b) => {
                let b = b[pi];
                out.extend(row.iter().map(|&v| func.apply(v * s + b)));
            }
            None => out.extend(row.iter().map(|&v| func.apply(v * s))),
        }
    }
    out
}

/// `out[p] = reduce(x[p][..])` on `x: [P, F]` with `F ≥ 1`; `out: [P, 1]`.
pub(super) fn reduce(op: ReduceOp, x: &[f32], f: usize) -> Vec<f32> {
    x.chunks_exact(f).map(|row| op.fold(row)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_is_xt_times_y() {
        // a = [[1, 2], [3, 4]] as [K=2, M=2]; b = [[5, 6, 7], [8, 9, 10]] as [K=2, N=3].
        // aᵀ·b = [[1*5+3*8, 1*6+3*9, 1*7+3*10], [2*5+4*8, 2*6+4*9, 2*7+4*10]].
        let out = matmul(&[1., 2., 3., 4.], &[5., 6., 7., 8., 9., 10.], 2, 2, 3);
        assert_eq!(out, vec![29., 33., 37., 42., 48., 54.]);
    }

    #[test]
    fn matmul_sums_k_in_increasing_order() {
        // 1e8 + 1 - 1e8 in f32 left to right is 0 (1e8 + 1 rounds back to 1e8); any other order
        // that adds 1 last gives 1.
        let a = [1.0f32, 1.0, 1.0];
        let b = [1.0e8f32, 1.0, -1.0e8];
        assert_eq!(matmul(&a, &b, 3, 1, 1), vec![0.0]);
    }

    #[test]
    fn transpose_swaps_axes() {
        assert_eq!(
            transpose(&[1., 2., 3., 4., 5., 6.], 2, 3),
            vec![1., 4., 2., 5., 3., 6.]
        );
    }

    #[test]
    fn reduce_folds_rows() {
        let x = [3., -1., 2., 0.5, 7., -4.];
        assert_eq!(reduce(ReduceOp::Sum, &x, 3), vec![4., 3.5]);
        assert_eq!(reduce(ReduceOp::Max, &x, 3), vec![3., 7.]);
        assert_eq!(reduce(ReduceOp::Min, &x, 3), vec![-1., -4.]);
    }
}
