//! Masks over a sum of index vectors: `mask=(512 * i_p + i_f < n)`, the flattened offset of a
//! row-major tile compared with an element count.
//!
//! The elements such a comparison keeps are not a box of the tile but a polyhedron: in the
//! row-major case, "whole rows below a row `Q`, the first `r` elements of row `Q`, nothing
//! after". [`Checker::mask_sum`] covers it exactly with disjoint boxes ("pieces"), each an
//! ordinary conjunction of [`MaskBound`]s, so every layer below the front end (Penguin IR, its
//! interpreter, the ISL check, the backend's guarded versions, the simulator) sees plain masked
//! instructions: the masked call is emitted once per piece (`core_ops.rs`, `apply_mask`).
//!
//! The form covered: after moving everything to one side, `a·x + y < E` or `a·x + y >= L` (also
//! `<=`, `>`, and either side order), with `x` and `y` index vectors on the two axes of a 2-D
//! tile, `a > 0`, `y` of step 1 with at most `a` elements (so rows do not overlap), and every
//! loop-variable coefficient of `E` divisible by `a` (so the row `Q = floor(E / a)` is affine in
//! the loop variables and `r = E mod a` a constant). Then, for `<`:
//! `a·x + y < E  ⟺  x < Q  ∨  (x == Q ∧ y < r)`, and for `>=`:
//! `a·x + y >= L  ⟺  x > Q  ∨  (x == Q ∧ y >= r)`. Anything else is an `E0206` that says what
//! it covers. A comparison that holds for every element of every iteration keeps everything.

use super::arith::lin;
use super::error::CheckError;
use super::index_vec::{MaskPiece, MaskPieces, MAX_MASK_PIECES};
use super::slices::range128;
use super::Checker;
use crate::ast::{CmpOp, Expr};
use penguin::{AffineExpr, MaskBound, TileDim};

/// One vector of a side: `(coefficient, len, axis, ndim)`.
type Term = (i64, u64, Option<usize>, usize);

impl Checker<'_> {
    /// The pieces of `lhs op rhs`, a comparison that sums several index vectors.
    pub(crate) fn mask_sum(
        &mut self,
        op: CmpOp,
        lhs: &Expr,
        rhs: &Expr,
        cond: &Expr,
    ) -> Option<MaskPieces> {
        let unsupported = |cx: &mut Self, why: String| {
            cx.error(CheckError::MaskUnsupported {
                why,
                at: cond.span.clone(),
            });
            None
        };
        let a = self.sum_side(lhs);
        let b = self.sum_side(rhs);
        let ((sa, ta), (sb, tb)) = (a?, b?);
        // `S + Σ c·idx  op  0`, S = sa - sb.
        let Some(s) = lin(&sa, 1, &sb, -1) else {
            self.error(CheckError::IndexOverflow {
                at: cond.span.clone(),
            });
            return None;
        };
        let mut terms: Vec<Term> = ta;
        for (c, len, axis, ndim) in tb {
            terms.push((c.checked_neg()?, len, axis, ndim));
        }
        // Merge the vectors of one axis (their lengths agree: both span the tile's axis).
        let mut by_axis: [Option<(i64, u64)>; 2] = [None, None];
        for &(c, len, axis, ndim) in &terms {
            let ax = match (axis, ndim) {
                (Some(ax @ (0 | 1)), 2) => ax,
                _ => {
                    return unsupported(
                        self,
                        "it sums index vectors that are not the two axes of a 2-D tile (`[:, None]` and `[None, :]`)".into(),
                    )
                }
            };
            let slot = &mut by_axis[ax];
            *slot = match *slot {
                None => Some((c, len)),
                Some((c0, l0)) if l0 == len => Some((c0.checked_add(c)?, len)),
                Some(_) => {
                    return unsupported(
                        self,
                        "it sums vectors of different lengths on one axis".into(),
                    )
                }
            };
        }
        // Normalised to `Σ c·idx < e` (upper) or `Σ c·idx >= e` (lower).
        let neg = |x: &AffineExpr, k: i64| lin(&AffineExpr::constant(k), 1, x, -1);
        let (upper, e) = match op {
            CmpOp::Lt => (true, neg(&s, 0)),
            CmpOp::Le => (true, neg(&s, 1)),
            CmpOp::Ge => (false, neg(&s, 0)),
            CmpOp::Gt => (false, neg(&s, 1)),
            _ => {
                return unsupported(
                    self,
                    "a comparison of a sum of index vectors takes `<`, `<=`, `>` or `>=`".into(),
                )
            }
        };
        let Some(e) = e else {
            self.error(CheckError::IndexOverflow {
                at: cond.span.clone(),
            });
            return None;
        };
        let coeffs: Vec<(usize, i64, u64)> = by_axis
            .iter()
            .enumerate()
            .filter_map(|(ax, t)| t.filter(|&(c, _)| c != 0).map(|(c, l)| (ax, c, l)))
            .collect();
        // Negative coefficients: `-Σ < e` is `Σ > -e`, i.e. `Σ >= 1 - e`.
        let (upper, e, coeffs) = if coeffs.iter().all(|&(_, c, _)| c < 0) {
            let e2 = neg(&e, if upper { 1 } else { 0 });
            let Some(e2) = e2 else {
                self.error(CheckError::IndexOverflow {
                    at: cond.span.clone(),
                });
                return None;
            };
            let c2 = coeffs.iter().map(|&(ax, c, l)| (ax, -c, l)).collect();
            (!upper, e2, c2)
        } else {
            (upper, e, coeffs)
        };
        let dim_of = |ax: usize| {
            if ax == 0 {
                TileDim::Partition
            } else {
                TileDim::Free
            }
        };
        // The value range of `Σ c·idx` over the tile, to drop comparisons that always hold.
        let (smin, smax) = coeffs.iter().fold((0i128, 0i128), |(lo, hi), &(_, c, l)| {
            let x = i128::from(c) * (l as i128 - 1);
            (lo + x.min(0), hi + x.max(0))
        });
        let bounds = |a: penguin::Axis| {
            let l = self.loop_data(a);
            (l.lb, (l.ub - 1).max(l.lb))
        };
        let (emin, emax) = range128(&e, &bounds);
        if (upper && smax < emin) || (!upper && smin >= emax) {
            return Some(vec![MaskPiece::default()]);
        }
        let piece = |dim: TileDim, lower: bool, bound: AffineExpr| MaskBound { dim, lower, bound };
        let ((ox, a, _), (iy, _, _)) = match coeffs[..] {
            [] => {
                return unsupported(
                    self,
                    "its index vectors cancel out, so it keeps all of the tile or none of it"
                        .into(),
                )
            }
            [(ax, 1, _)] => {
                // One axis left: a plain bound.
                let b = piece(dim_of(ax), !upper, e);
                return Some(vec![MaskPiece::of_bounds(vec![b])]);
            }
            [x, y] if y.1 == 1 && y.2 <= x.1 as u64 && x.1 > 0 => (x, y),
            [y, x] if y.1 == 1 && y.2 <= x.1 as u64 && x.1 > 0 => (x, y),
            [x, y] if (x.1 > 0) != (y.1 > 0) => {
                return unsupported(
                    self,
                    "it compares index vectors against each other (a triangle such as `i_p < i_f`); nkc's masks keep boxes of the tile or the elements below a flattened offset (`512 * i_p + i_f < n`): select a triangle with `nisa.affine_select`".into(),
                )
            }
            _ => {
                return unsupported(
                    self,
                    "it is not a flattened row-major offset: nkc covers `a * x + y < n` (or `>=`) with `y` of step 1 and at most `a` elements, the form of `512 * i_p + i_f`".into(),
                )
            }
        };
        // Q = floor(e / a), r = e mod a: every loop coefficient of `e` divisible by `a`.
        if e.terms().iter().any(|&(_, k)| k % a != 0) {
            return unsupported(
                self,
                format!(
                    "its bound changes with the loop by steps that are not multiples of {a}, so the partial row moves within the tile from one iteration to the next"
                ),
            );
        }
        let c0 = e.constant_term();
        let (qc, r) = (c0.div_euclid(a), c0.rem_euclid(a));
        let q = AffineExpr::from_terms(e.terms().iter().map(|&(ax, k)| (ax, k / a)), qc);
        let q1 = lin(&q, 1, &AffineExpr::constant(1), 1)?;
        let (xd, yd) = (dim_of(ox), dim_of(iy));
        let mut out: MaskPieces = Vec::new();
        if upper {
            out.push(MaskPiece::of_bounds(vec![piece(xd, false, q.clone())]));
            if r > 0 {
                out.push(MaskPiece::of_bounds(vec![
                    piece(xd, true, q),
                    piece(xd, false, q1),
                    piece(yd, false, AffineExpr::constant(r)),
                ]));
            }
        } else if r > 0 {
            out.push(MaskPiece::of_bounds(vec![piece(xd, true, q1.clone())]));
            out.push(MaskPiece::of_bounds(vec![
                piece(xd, true, q),
                piece(xd, false, q1),
                piece(yd, true, AffineExpr::constant(r)),
            ]));
        } else {
            out.push(MaskPiece::of_bounds(vec![piece(xd, true, q)]));
        }
        debug_assert!(out.len() <= MAX_MASK_PIECES);
        Some(out)
    }

    /// One side of a comparison: its affine part and its vectors.
    fn sum_side(&mut self, e: &Expr) -> Option<(AffineExpr, Vec<Term>)> {
        if !self.is_vector_expr(e) {
            return Some((self.affine(e)?, Vec::new()));
        }
        let v = self.offset_vector(e)?;
        let terms = v.terms();
        Some((v.start, terms))
    }
}

/// The bounds every piece of `pieces` implies: per bound of the first piece, the loosest bound
/// of the same kind in every piece when they differ by constants (`p < Q` and `p < Q + 1` give
/// `p < Q + 1`). A superset of the mask, for the in-bounds check of subscripts.
pub(crate) fn mask_hull(pieces: &MaskPieces) -> Vec<MaskBound> {
    let Some((first, rest)) = pieces.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    'bounds: for b in &first.bounds {
        let mut best = b.clone();
        for p in rest {
            let mut found = None;
            for c in (p.bounds.iter()).filter(|c| c.dim == b.dim && c.lower == b.lower) {
                if let Some(d) = lin(&c.bound, 1, &best.bound, -1).and_then(|d| d.as_constant()) {
                    let looser = if b.lower { d < 0 } else { d > 0 };
                    found = Some(if looser { c.clone() } else { best.clone() });
                    break;
                }
            }
            match found {
                Some(f) => best = f,
                None => continue 'bounds,
            }
        }
        out.push(best);
    }
    out
}
