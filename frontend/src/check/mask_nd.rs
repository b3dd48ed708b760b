//! Mask bounds on a free axis of a tile of more than 2 axes.
//!
//! nkc folds the free axes of an N-D tile into the one free axis of a Penguin tile, row-major
//! (`tile_nd.rs`): element `[p, a, b]` of a `[P, A, B]` tile is at free offset `a·B + b`. A mask
//! bound on free axis `k` (`i_a < x`, `i_a = nl.arange(A)[None, :, None]`) keeps, for each index
//! `r` of the axes before it (`R` of them), the free range `[r·span, r·span + x·S)`, with `S`
//! the product of the lengths of the axes after `k` and `span = len_k · S`. On the first free
//! axis (`R = 1`) that is one bound on the folded index, exact; on an inner axis, `R` disjoint
//! boxes, each one more copy of the instruction (at most [`MAX_MASK_PIECES`] pieces in all, as
//! for flattened offsets, `mask_sums.rs`).
//!
//! The axes' lengths come from the mask's own index vectors (each spans its axis); one free axis
//! the mask does not mention takes the rest of the instruction's free extent. The bounds are
//! resolved when the masked call's instructions are known ([`Checker::resolve_nd_mask`]).

use super::arith::lin;
use super::error::CheckError;
use super::index_vec::{MaskPiece, MaskPieces, MAX_MASK_PIECES};
use super::Checker;
use crate::ast::Span;
use penguin::{AffineExpr, MaskBound, TileDim};

impl Checker<'_> {
    /// `pieces` with their N-D bounds ([`MaskPiece::nd`]) resolved into bounds on the folded
    /// free index of an instruction of `free` free elements (`None` when there is none to
    /// resolve against, or reported).
    pub(crate) fn resolve_nd_mask(
        &mut self,
        pieces: MaskPieces,
        free: Option<u64>,
        at: &Span,
    ) -> Option<MaskPieces> {
        if pieces.iter().all(|p| p.nd.is_empty()) {
            return Some(pieces);
        }
        let refuse = |cx: &mut Self, why: String| {
            cx.error(CheckError::MaskUnsupported {
                why,
                at: at.clone(),
            });
            None
        };
        let Some(free) = free else {
            return refuse(
                self,
                "it bounds a free axis of a tile of more than 2 axes, on an operation whose tile is not one".into(),
            );
        };
        let mut out: MaskPieces = Vec::new();
        for piece in pieces {
            let Some(lens) = self.nd_lens(&piece, free) else {
                return refuse(
                    self,
                    format!("it bounds free axes of a tile of more than 2 axes whose lengths it does not give: name each free axis of the tile (of {free} elements in all) with an index vector in the mask, or all but one"),
                );
            };
            let mut acc = vec![MaskPiece {
                nd: Vec::new(),
                ..piece.clone()
            }];
            for b in &piece.nd {
                let k = b.axis;
                let stride: u64 = lens[k + 1..].iter().product();
                let outer: u64 = lens[1..k].iter().product();
                let span = lens[k] * stride;
                if (acc.len() as u64).saturating_mul(outer) > MAX_MASK_PIECES as u64 {
                    return refuse(
                        self,
                        format!("it bounds axis {k} of the tile, which repeats {outer} times in its free elements: more than {MAX_MASK_PIECES} boxes of the tile; mask the first free axis, or the partition axis"),
                    );
                }
                let mut next = Vec::new();
                for p in &acc {
                    for r in 0..outer {
                        let base = (r * span) as i64;
                        let scaled = lin(&b.bound, stride as i64, &AffineExpr::constant(base), 1);
                        let Some(scaled) = scaled else {
                            self.error(CheckError::IndexOverflow { at: at.clone() });
                            return None;
                        };
                        let mut q = p.clone();
                        let free_bound = |lower: bool, bound: AffineExpr| MaskBound {
                            dim: TileDim::Free,
                            lower,
                            bound,
                        };
                        if outer > 1 {
                            q.bounds.push(free_bound(true, AffineExpr::constant(base)));
                            q.bounds
                                .push(free_bound(false, AffineExpr::constant(base + span as i64)));
                        }
                        q.bounds.push(free_bound(b.lower, scaled));
                        next.push(q);
                    }
                }
                acc = next;
            }
            // A box its constant bounds leave empty (`f >= 24, f < 24`) keeps nothing.
            acc.retain(|p| {
                let consts = |lower: bool| {
                    p.bounds
                        .iter()
                        .filter(move |b| b.dim == TileDim::Free && b.lower == lower)
                        .filter_map(|b| b.bound.as_constant())
                };
                let lo = consts(true).max().unwrap_or(i64::MIN);
                let hi = consts(false).min().unwrap_or(i64::MAX);
                lo < hi
            });
            out.extend(acc);
        }
        if out.len() > MAX_MASK_PIECES {
            return refuse(
                self,
                format!(
                    "it is the union of {} boxes of the tile (at most {MAX_MASK_PIECES})",
                    out.len()
                ),
            );
        }
        Some(out)
    }

    /// The lengths of the axes of a piece's N-D tile (index 0, the partition axis, unused):
    /// those of its bounds' vectors, and one axis it does not name taking the rest of `free`.
    /// `None` when they cannot be known or do not multiply to `free`.
    fn nd_lens(&self, piece: &MaskPiece, free: u64) -> Option<Vec<u64>> {
        let ndim = piece.nd.first()?.ndim;
        let mut lens: Vec<Option<u64>> = vec![None; ndim];
        lens[0] = Some(1);
        for b in &piece.nd {
            if b.ndim != ndim || b.axis == 0 || b.axis >= ndim {
                return None;
            }
            lens[b.axis] = Some(b.len);
        }
        let known: u64 = lens.iter().flatten().product();
        let unknown: Vec<usize> = (0..ndim).filter(|&k| lens[k].is_none()).collect();
        match unknown.as_slice() {
            [] => {}
            [k] if known > 0 && free.is_multiple_of(known) => lens[*k] = Some(free / known),
            _ => return None,
        }
        let lens: Vec<u64> = lens.into_iter().map(|l| l.unwrap_or(0)).collect();
        (lens[1..].iter().product::<u64>() == free).then_some(lens)
    }
}
