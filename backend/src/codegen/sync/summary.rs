//! Summaries of runs of a thread's footprints ([`crate::codegen::sync`]): per memory (and HBM
//! tensor), access kind and rows, the hull of their regions, so a run of producers none of which
//! may meet a consumer is skipped with one test.
//!
//! Invariant: a summary covers its footprints ([`meet`] of two summaries is true whenever two
//! of their footprints may meet), so skipping on a summary never skips a conflict.

use crate::codegen::emit::{Foot, Space};
use runtime_sim::isa::{Expr, Term};

/// How many consecutive nodes of a thread share a [`Summary`].
pub(super) const CHUNK: usize = 16;

/// What some footprints of one access kind (reads, or writes) touch in one memory (one HBM
/// tensor) at rows `rows`: the hull of their regions ([`add`]).
#[derive(Clone, Debug)]
pub(super) struct Summary {
    space: Space,
    tensor: penguin::Tensor,
    write: bool,
    region: (u64, u64),
    /// `None`: any rows.
    rows: Option<Rows>,
}

/// The rows of footprints: `n` rows from a start `lo` (when `g` is 0), or from any start
/// congruent to `lo` modulo `g` (a start affine in the iteration registers whose coefficients
/// have `g` as greatest common divisor: the pieces of a transfer split by rows keep their
/// offset within each iteration's block of rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rows {
    g: i64,
    lo: i64,
    n: i64,
}

impl Rows {
    /// The rows of a footprint starting at `r0`, `n` of them (`None`: not affine).
    fn of(r0: &Expr, n: u64) -> Option<Rows> {
        let mut g = 0i64;
        for t in &r0.terms {
            match *t {
                Term::Lin { coeff, .. } => g = gcd(g, coeff.unsigned_abs() as i64),
                Term::Mod { .. } => return None,
            }
        }
        let lo = match g {
            0 => r0.constant,
            g => r0.constant.rem_euclid(g),
        };
        Some(Rows {
            g,
            lo,
            n: i64::try_from(n).ok()?,
        })
    }

    /// Whether some rows of `self` may be rows of `other`.
    fn meet(self, other: Rows) -> bool {
        let (p, q) = (self, other);
        let g = gcd(p.g, q.g);
        if g == 0 {
            return p.lo < q.lo + q.n && q.lo < p.lo + p.n;
        }
        // Rows meet when `t1 - t2 ≡ q.lo - p.lo (mod g)` for some offsets `t1 < p.n`,
        // `t2 < q.n`.
        if p.n + q.n > g {
            return true;
        }
        let d = (q.lo - p.lo).rem_euclid(g);
        d < p.n || d > g - q.n
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    match b {
        0 => a,
        b => gcd(b, a % b),
    }
}

pub(super) fn summarise<'a>(feet: impl Iterator<Item = &'a Foot>) -> Vec<Summary> {
    let mut out: Vec<Summary> = Vec::new();
    for f in feet {
        let rows = Rows::of(&f.r0, f.nr);
        add(
            &mut out,
            Summary {
                space: f.space,
                tensor: f.tensor,
                write: f.write,
                region: f.region,
                rows,
            },
        );
    }
    out
}

/// The most summaries of one memory (and HBM tensor) and access kind with distinct constant rows
/// kept apart; past it they merge into their hull.
const MAX_ROW_SUMMARIES: usize = 32;

/// Adds `x` to the summaries `out`: into the one of its memory, HBM tensor, access kind (read or
/// write) and constant rows, if any; a memory and kind with more than [`MAX_ROW_SUMMARIES`] row
/// ranges (or rows that depend on the iteration) keeps their hull in the first. Keeping reads
/// apart from writes and distinct rows apart is what lets a thread whose transfers touch other
/// partitions of the same tiles (the pieces of a split DMA rotate over the queues) be skipped
/// whole ([`meet`]).
fn add(out: &mut Vec<Summary>, x: Summary) {
    let (space, write, tensor) = (x.space, x.write, x.tensor);
    let kind = move |s: &Summary| {
        s.space == space
            && s.write == write
            && (s.tensor == tensor || !matches!(space, Space::Hbm(_)))
    };
    if let Some(s) = out.iter_mut().find(|s| kind(s) && s.rows == x.rows) {
        s.region = (s.region.0.min(x.region.0), s.region.1.max(x.region.1));
        return;
    }
    let same = out.iter().filter(|s| kind(s)).count();
    if same < MAX_ROW_SUMMARIES && (x.rows.is_some() || same == 0) {
        out.push(x);
        return;
    }
    // Too many row ranges, or rows that vary: one hull for the memory and kind.
    let mut hull = x;
    out.retain(|s| {
        if !kind(s) {
            return true;
        }
        hull.region = (hull.region.0.min(s.region.0), hull.region.1.max(s.region.1));
        hull.rows = match (hull.rows, s.rows) {
            (Some(a), Some(b)) if a.g == 0 && b.g == 0 => {
                let lo = a.lo.min(b.lo);
                Some(Rows {
                    g: 0,
                    lo,
                    n: (a.lo + a.n).max(b.lo + b.n) - lo,
                })
            }
            _ => None,
        };
        false
    });
    out.push(hull);
}

/// The summaries of the footprints of `a` and `b` together.
pub(super) fn merge(a: &[Summary], b: &[Summary]) -> Vec<Summary> {
    let mut out = a.to_vec();
    for x in b {
        add(&mut out, x.clone());
    }
    out
}

/// Whether some footprint summed up in `a` may meet one summed up in `b` ([`may_conflict`](super::may_conflict)'s
/// test on the hulls: two footprints that may meet have hulls that do).
pub(super) fn meet(a: &[Summary], b: &[Summary]) -> bool {
    a.iter().any(|x| {
        b.iter().any(|y| {
            x.space == y.space
                && (x.write || y.write)
                && x.region.0 < y.region.1
                && y.region.0 < x.region.1
                && match (x.rows, y.rows) {
                    // Rows are compared only within one tensor (scratch tensors of one arena
                    // meet by their elements alone).
                    (Some(p), Some(q))
                        if x.tensor == y.tensor || !matches!(x.space, Space::Hbm(_)) =>
                    {
                        p.meet(q)
                    }
                    _ => true,
                }
        })
    })
}
