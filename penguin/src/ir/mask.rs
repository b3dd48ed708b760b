//! Masks: the affine bounds on an instruction's partition and free indices ([`MaskBound`]) and
//! the box of its iteration space they keep ([`mask_box`]).
//!
//! Invariant: a mask is a conjunction; an empty one keeps every element.

use crate::affine::AffineExpr;

/// The index of an instruction's iteration space that a [`MaskBound`] limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileDim {
    /// The partition index `p` (text `p`).
    Partition,
    /// The free index `f` (text `f`).
    Free,
}

impl TileDim {
    pub fn name(self) -> &'static str {
        match self {
            TileDim::Partition => "p",
            TileDim::Free => "f",
        }
    }

    pub fn index(self) -> usize {
        match self {
            TileDim::Partition => 0,
            TileDim::Free => 1,
        }
    }
}

/// One affine inequality of a mask: `idx >= bound` (`lower`) or `idx < bound` (not `lower`), with
/// `idx` the instruction's partition or free index and `bound` affine in the enclosing loops'
/// induction variables (text `p < 250 + -128*i`, `f >= 3`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaskBound {
    pub dim: TileDim,
    pub lower: bool,
    pub bound: AffineExpr,
}

/// The active part of an instruction's iteration space under its mask: per dimension (partition,
/// free) the half-open range `[lo, hi)`, or `None` when no element is active.
pub type ActiveBox = [(u64, u64); 2];

/// The elements of an `[P, F]` iteration space that `mask` keeps, with `eval` giving each bound's
/// value in the current iteration: `None` when none. An empty mask keeps everything.
pub fn mask_box(
    mask: &[MaskBound],
    shape: [u64; 2],
    eval: &mut dyn FnMut(&AffineExpr) -> i64,
) -> Option<ActiveBox> {
    let mut out = [(0u64, shape[0]), (0u64, shape[1])];
    for b in mask {
        let d = b.dim.index();
        let v = eval(&b.bound).clamp(0, shape[d].min(i64::MAX as u64) as i64) as u64;
        if b.lower {
            out[d].0 = out[d].0.max(v);
        } else {
            out[d].1 = out[d].1.min(v);
        }
    }
    out.iter().all(|&(lo, hi)| lo < hi).then_some(out)
}
