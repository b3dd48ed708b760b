//! Access shapes for the compiler: the bytes (HBM: elements) a strided access pattern touches in
//! each partition, relative to its first, and whether two of them placed at given starts touch a
//! common one. They are the race detector's own canonical runs ([`super::Run`]), so the
//! compiler's synchronisation and the detector agree on what overlaps: two pieces of a tile that
//! interleave (every other column, the blocks of a reversed copy) are disjoint to both.
//!
//! Invariants: a [`Shape`] exists only for a pattern that is not one interval (a dense access is
//! its bounding interval, which callers test without a shape); its runs are those of the
//! pattern started at 0, so the first starts at 0 and the last ends at [`Shape::extent`].
//! A pattern whose dimensions interleave into more than [`MAX_INTERVALS`] intervals has no
//! shape: callers keep its bounding interval (a sound over-approximation).

use super::{meet, runs_of, Run, Runs};
use crate::isa::MAX_DIMS;
use crate::sim::memory::Pattern;

/// The most intervals a pattern whose dimensions interleave is decomposed into.
pub const MAX_INTERVALS: u64 = 4096;

/// The bytes a strided pattern touches in a partition, from its first (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    runs: Runs,
}

impl Shape {
    /// The shape of `dims` (size, stride in units; outermost first) over elements of `unit`
    /// bytes, or `None` when the pattern is one interval, a stride is negative, there are more
    /// than [`MAX_DIMS`] dimensions, or the dimensions interleave into too many intervals.
    pub fn strided(dims: &[(u64, i64)], unit: u64) -> Option<Shape> {
        if dims.len() > MAX_DIMS || unit == 0 {
            return None;
        }
        let mut out = [(1u64, 0i64); MAX_DIMS];
        let mut intervals: u64 = 1;
        for (o, &(n, s)) in out.iter_mut().zip(dims) {
            if s < 0 || n == 0 {
                return None;
            }
            let stride = if n > 1 {
                s.checked_mul(unit as i64)?
            } else {
                0
            };
            *o = (n, stride);
            if stride as u64 > unit {
                intervals = intervals.saturating_mul(n);
            }
        }
        if intervals > MAX_INTERVALS {
            return None;
        }
        let runs = runs_of(&Pattern {
            start: 0,
            unit,
            dims: out,
            ndims: dims.len(),
        });
        match &runs {
            Runs::One(r) if r.count == 1 => None,
            _ => Some(Shape { runs }),
        }
    }

    /// One past the last byte, from the first.
    pub fn extent(&self) -> u64 {
        self.runs.as_slice().last().map_or(0, Run::end)
    }

    /// How many bytes it touches.
    pub fn size(&self) -> u64 {
        self.runs().iter().map(|r| r.len * r.count).sum()
    }

    /// The runs, in address order.
    pub fn runs(&self) -> &[Run] {
        self.runs.as_slice()
    }
}

/// One side of an overlap question: a shape, or a dense interval of `len` bytes, placed at `at`.
#[derive(Clone, Copy, Debug)]
pub struct Placed<'a> {
    pub shape: Option<&'a Shape>,
    pub len: u64,
    pub at: i128,
}

impl Placed<'_> {
    fn extent(&self) -> u64 {
        self.shape.map_or(self.len, Shape::extent)
    }
}

/// Whether the two placed accesses touch a common byte. Exact: the detector's runs, walked in
/// address order (O(1) per pair of runs of equal stride, see [`super::meet`]).
pub fn placed_meet(a: Placed<'_>, b: Placed<'_>) -> bool {
    let (ea, eb) = (a.extent() as i128, b.extent() as i128);
    if a.at >= b.at + eb || b.at >= a.at + ea {
        return false;
    }
    if a.shape.is_none() && b.shape.is_none() {
        return true;
    }
    // Both shifted to non-negative starts; a dense side is one interval.
    let base = a.at.min(b.at);
    let runs = |p: &Placed<'_>| -> Vec<Run> {
        let o = (p.at - base) as u64;
        match p.shape {
            Some(s) => (s.runs().iter())
                .map(|r| Run {
                    start: r.start + o,
                    ..*r
                })
                .collect(),
            None => vec![Run::one(o, p.len)],
        }
    };
    let (ra, rb) = (runs(&a), runs(&b));
    let (mut i, mut j) = (0, 0);
    while i < ra.len() && j < rb.len() {
        let (x, y) = (&ra[i], &rb[j]);
        if x.start < y.end() && y.start < x.end() && meet(x, y).is_some() {
            return true;
        }
        if x.end() <= y.end() {
            i += 1;
        } else {
            j += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of a pattern, enumerated.
    fn bytes(dims: &[(u64, i64)], unit: u64, at: i128) -> std::collections::BTreeSet<i128> {
        let mut out = std::collections::BTreeSet::new();
        let total: u64 = dims.iter().map(|d| d.0).product();
        for mut lin in 0..total {
            let mut off = at;
            for &(n, s) in dims.iter().rev() {
                off += (lin % n) as i128 * s as i128 * unit as i128;
                lin /= n;
            }
            for b in 0..unit as i128 {
                out.insert(off + b);
            }
        }
        out
    }

    /// Two reversed blocks of a copy, every other element of a row, an interleaved pair of
    /// strides: the shapes meet exactly where the enumerated bytes do (a pseudo-random sweep of
    /// dimensions, units and starts, dense sides included).
    #[test]
    fn shapes_meet_where_enumerated_bytes_do() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut strided_disjoint = 0;
        for _ in 0..4000 {
            let unit = [1u64, 2, 4][next(3) as usize];
            let side = |next: &mut dyn FnMut(u64) -> u64| {
                let nd = 1 + next(3) as usize;
                let dims: Vec<(u64, i64)> =
                    (0..nd).map(|_| (1 + next(5), next(12) as i64)).collect();
                let at = next(40) as i128;
                (dims, at)
            };
            let (da, xa) = side(&mut next);
            let (db, xb) = side(&mut next);
            let sa = Shape::strided(&da, unit);
            let sb = Shape::strided(&db, unit);
            let ba = bytes(&da, unit, xa);
            let bb = bytes(&db, unit, xb);
            let len = |b: &std::collections::BTreeSet<i128>, at: i128| {
                (b.last().copied().unwrap_or(at) + 1 - at) as u64
            };
            let a = Placed {
                shape: sa.as_ref(),
                len: len(&ba, xa),
                at: xa,
            };
            let b = Placed {
                shape: sb.as_ref(),
                len: len(&bb, xb),
                at: xb,
            };
            let want = ba.intersection(&bb).next().is_some();
            assert_eq!(
                placed_meet(a, b),
                want,
                "{da:?}@{xa} {db:?}@{xb} unit {unit}"
            );
            if !want && (sa.is_some() || sb.is_some()) {
                let (lo, hi) = (xa.max(xb), (xa + a.len as i128).min(xb + b.len as i128));
                strided_disjoint += usize::from(lo < hi);
            }
        }
        // The sweep reaches pairs whose bounding intervals overlap but whose bytes do not.
        assert!(strided_disjoint > 100, "{strided_disjoint}");
    }

    /// A dense pattern has no shape; an interleaved one does.
    #[test]
    fn dense_patterns_have_no_shape() {
        assert!(Shape::strided(&[(8, 1)], 4).is_none());
        assert!(Shape::strided(&[(4, 8), (8, 1)], 4).is_none());
        let every_other = Shape::strided(&[(16, 2)], 4).expect("strided");
        assert_eq!(every_other.extent(), 15 * 8 + 4);
        assert_eq!(every_other.size(), 16 * 4);
        assert!(Shape::strided(&[(16, -2)], 4).is_none());
    }
}
