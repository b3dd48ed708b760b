//! The float32 meaning of the Vector engine's sequential free-axis instructions, one row (one
//! partition) at a time: the scan `tensor_tensor_scan` and the statistics pair `bn_stats` /
//! `bn_aggr`. The interpreter and the simulator both call these, so they agree bit for bit.
//!
//! Invariants: every result is computed in float32 in one fixed order (left to right along the
//! free axis, no fused multiply-add), so it is a pure function of its operands; the slices given
//! have the lengths each function documents (callers check shapes first).

use crate::ops::AluOp;

/// The elements of one `bn_stats` result per partition: (count, mean, variance * count) of the
/// even-indexed elements, then of the odd-indexed ones.
pub const BN_STATS_WIDTH: usize = 6;

/// The elements of one `bn_aggr` result per partition: the mean, then the variance.
pub const BN_AGGR_WIDTH: usize = 2;

/// One row of `nisa.tensor_tensor_scan`: `out[0] = op1(op0(d0[0], initial), d1[0])` and
/// `out[i] = op1(op0(d0[i], out[i - 1]), d1[i])`, each step rounded to float32 (NKI's
/// definition: `data0` is `op0`'s left operand, the running value its right one). Requires
/// `d0.len() == d1.len() == out.len()`.
pub fn tensor_tensor_scan(
    op0: AluOp,
    op1: AluOp,
    initial: f32,
    d0: &[f32],
    d1: &[f32],
    out: &mut [f32],
) {
    let mut acc = initial;
    for ((o, &a), &b) in out.iter_mut().zip(d0).zip(d1) {
        acc = op1.apply(op0.apply(a, acc), b);
        *o = acc;
    }
}

/// `(count, mean, variance * count)` of the elements `row[start], row[start + 2], ...`: the sum
/// left to right, the mean that sum divided by the count, then the sum of squared deviations left
/// to right. An empty group (an odd group of a one-element row) is `(0, 0, 0)`.
fn group_stats(row: &[f32], start: usize) -> [f32; 3] {
    let elems = || row.iter().skip(start).step_by(2);
    let count = elems().count();
    if count == 0 {
        return [0.0; 3];
    }
    let n = count as f32;
    let mean = elems().fold(0.0f32, |s, &x| s + x) / n;
    let m2 = elems().fold(0.0f32, |s, &x| {
        let d = x - mean;
        s + d * d
    });
    [n, mean, m2]
}

/// One row of `nisa.bn_stats`: [`BN_STATS_WIDTH`] values, (count, mean, variance * count) of
/// the even-indexed elements then of the odd-indexed ones.
pub fn bn_stats(row: &[f32]) -> [f32; BN_STATS_WIDTH] {
    let [a, b, c] = group_stats(row, 0);
    let [d, e, f] = group_stats(row, 1);
    [a, b, c, d, e, f]
}

/// One row of `nisa.bn_aggr`: the (count, mean, variance * count) triples of `row` (its length a
/// multiple of 3) combined left to right (Chan et al.'s pairwise update: with `n = na + nb` and
/// `delta = mb - ma`, the mean is `ma + delta * (nb / n)` and the sum of squared deviations
/// `m2a + m2b + delta * delta * (na * nb / n)`), then `[mean, m2 / n]`. Triples of count 0 are
/// skipped; a row whose counts are all 0 gives `[0, 0]`.
pub fn bn_aggr(row: &[f32]) -> [f32; BN_AGGR_WIDTH] {
    let (mut n, mut mean, mut m2) = (0.0f32, 0.0f32, 0.0f32);
    for t in row.chunks_exact(3) {
        let (nb, mb, m2b) = (t[0], t[1], t[2]);
        if nb == 0.0 {
            continue;
        }
        if n == 0.0 {
            (n, mean, m2) = (nb, mb, m2b);
            continue;
        }
        let total = n + nb;
        let delta = mb - mean;
        mean += delta * (nb / total);
        m2 = m2 + m2b + delta * delta * (n * nb / total);
        n = total;
    }
    if n == 0.0 {
        return [0.0, 0.0];
    }
    [mean, m2 / n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_follows_the_recurrence() {
        let (d0, d1) = ([2.0, 3.0, 0.5], [1.0, 1.0, 4.0]);
        let mut out = [0.0; 3];
        tensor_tensor_scan(AluOp::Multiply, AluOp::Add, 1.0, &d0, &d1, &mut out);
        // 2*1+1 = 3; 3*3+1 = 10; 0.5*10+4 = 9
        assert_eq!(out, [3.0, 10.0, 9.0]);
        // op0's left operand is data0: 5 - 0 = 5, then 5 - 1 = 4 ... (subtract is not symmetric)
        tensor_tensor_scan(
            AluOp::Subtract,
            AluOp::Add,
            0.0,
            &[5.0, 7.0],
            &[0.0, 0.0],
            &mut out[..2],
        );
        assert_eq!(&out[..2], &[5.0, 2.0]);
    }

    #[test]
    fn stats_split_even_and_odd_and_aggregate_to_the_population_variance() {
        let row = [1.0, 10.0, 3.0, 20.0, 5.0];
        let s = bn_stats(&row);
        // even: 1 3 5 (mean 3, m2 8); odd: 10 20 (mean 15, m2 50)
        assert_eq!(s, [3.0, 3.0, 8.0, 2.0, 15.0, 50.0]);
        let [mean, var] = bn_aggr(&s);
        let m = row.iter().sum::<f32>() / 5.0;
        let v = row.iter().map(|x| (x - m) * (x - m)).sum::<f32>() / 5.0;
        assert!(
            (mean - m).abs() < 1e-5 && (var - v).abs() < 1e-4,
            "{mean} {var} {m} {v}"
        );
        assert_eq!(bn_stats(&[4.0]), [1.0, 4.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(bn_aggr(&[0.0; 6]), [0.0, 0.0]);
    }
}
