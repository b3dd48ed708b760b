//! The values of index vectors and masks: an [`IndexVec`] is what `nl.arange(n)[:, None]` (or
//! an axis of `nl.mgrid`) evaluates to, plus an affine offset and a step; a mask is a union of
//! [`MaskPiece`]s. `vectors` builds them from expressions and turns them into slices; the mask
//! files (`mask_guards`, `mask_sums`, `mask_nd`) resolve them against a tile.
//!
//! Invariant: only values and their arithmetic here (checked: `None` on overflow); it sits on the
//! values layer, below `pyvalue` (`Py::Grid` holds index vectors) and everything that evaluates.

use super::arith::lin;
use penguin::{AffineExpr, MaskBound, Predicate};

/// The `len` indices `start + k·step` (`k` in `0..len`) along `axis` of an `ndim`-axis index
/// space (axis 0 for partitions, 1 for the free axis of a 2-D one; `None` for a 1-D
/// `nl.arange` not yet placed); `start` is affine in the loop variables
/// (`ix = i * 128 + nl.arange(128)[:, None]`). A subscript takes only `step == 1` (a
/// contiguous range); `nisa.iota` and masks take any step.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IndexVec {
    pub start: AffineExpr,
    pub len: u64,
    pub axis: Option<usize>,
    pub step: i64,
    /// The number of axes of its placement (`[:, None]` is 2, `[:, None, None]` is 3), 1 while
    /// unplaced.
    pub ndim: usize,
    /// Further vectors added to this one (`512 * i_p + i_f`, a flattened offset): each term's
    /// indices `k·step` (`k` in `0..len`) along its axis. Empty for a vector of one axis; only a
    /// mask takes a sum of vectors.
    pub extra: Vec<VecTerm>,
}

/// One vector of a sum of index vectors ([`IndexVec::extra`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VecTerm {
    pub len: u64,
    pub axis: Option<usize>,
    pub step: i64,
    pub ndim: usize,
}

/// One piece of a mask: a conjunction of bounds on the tile's indices and of guards on the
/// loop indices alone (the whole instruction runs, or not, in an iteration: `mask_guards.rs`).
/// The default keeps every element in every iteration.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MaskPiece {
    pub bounds: Vec<MaskBound>,
    pub guards: Vec<Predicate>,
    /// Bounds on a free axis of a tile of more than 2 axes, resolved into `bounds` (and more
    /// pieces) once the instruction's tile is known (`mask_nd.rs`).
    pub nd: Vec<NdBound>,
}

/// A bound on the index of free axis `axis` (of `len` indices) of an `ndim`-axis tile:
/// `idx >= bound` (`lower`) or `idx < bound`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NdBound {
    pub axis: usize,
    pub ndim: usize,
    pub len: u64,
    pub lower: bool,
    pub bound: AffineExpr,
}

impl MaskPiece {
    /// The piece of these bounds, with no guard.
    pub(crate) fn of_bounds(bounds: Vec<MaskBound>) -> MaskPiece {
        MaskPiece {
            bounds,
            ..MaskPiece::default()
        }
    }

    /// Both pieces at once.
    fn and(&self, other: &MaskPiece) -> MaskPiece {
        MaskPiece {
            bounds: self.bounds.iter().chain(&other.bounds).cloned().collect(),
            guards: self.guards.iter().chain(&other.guards).cloned().collect(),
            nd: self.nd.iter().chain(&other.nd).cloned().collect(),
        }
    }
}

/// A mask as the union of disjoint pieces (`[MaskPiece::default()]`: every element; `[]`: none,
/// in any iteration).
pub(crate) type MaskPieces = Vec<MaskPiece>;

/// Both masks at once: every pair of their pieces.
pub(crate) fn mask_and(a: &MaskPieces, b: &MaskPieces) -> MaskPieces {
    a.iter()
        .flat_map(|x| b.iter().map(move |y| x.and(y)))
        .collect()
}

/// Most pieces of one mask (each piece is one more copy of the masked instructions).
pub(crate) const MAX_MASK_PIECES: usize = 8;

impl IndexVec {
    /// The contiguous vector `start..start + len` along `axis` of `ndim` axes.
    pub(crate) fn range(start: i64, len: u64, axis: Option<usize>, ndim: usize) -> IndexVec {
        IndexVec {
            start: AffineExpr::constant(start),
            len,
            axis,
            step: 1,
            ndim,
            extra: Vec::new(),
        }
    }

    /// Its vectors as `(coefficient, len, axis, ndim)`, the main one first.
    pub(crate) fn terms(&self) -> Vec<(i64, u64, Option<usize>, usize)> {
        std::iter::once((self.step, self.len, self.axis, self.ndim))
            .chain(self.extra.iter().map(|t| (t.step, t.len, t.axis, t.ndim)))
            .collect()
    }

    /// Its least value and the length of the range of values it spans: `step` may be negative
    /// or above 1 (`None` on overflow).
    pub(crate) fn span_range(&self) -> Option<(AffineExpr, u64)> {
        let last = self.step.checked_mul(self.len as i64 - 1)?;
        let lo = if last < 0 {
            lin(&self.start, 1, &AffineExpr::constant(last), 1)?
        } else {
            self.start.clone()
        };
        Some((lo, last.unsigned_abs().checked_add(1)?))
    }
}
