//! `t.ap(pattern=[[step, count], ...], offset=k)` of an HBM tensor: NKI's explicit access pattern
//! over the tensor's flat, row-major elements, whose first pair is the partition axis of the
//! value it reads or writes (`x.ap(pattern=[[1, 128]], offset=h * 128)` of an `[N, 128]` tensor
//! puts 128 consecutive elements on 128 partitions, one each).
//!
//! nkc stores an HBM tensor as the 2-D array `[rows, cols]`; an element `f` of the flat tensor
//! is `(f div cols, f mod cols)`. A flat step `s` is the stored step `[s div cols, s mod cols]`
//! and a flat offset affine in loop indices splits the same way coefficient by coefficient
//! ([`split_offset`]), so `row·cols + col` is the flat element exactly. The value's every element
//! lies inside the stored array (both parts bounds-checked over the enclosing loops), so the
//! split is the element NKI addresses.
//!
//! Invariants of what this returns: steps are positive; at most 4 axes in all (a DMA's
//! dimensions); a pattern whose partition axis steps one row and whose free elements are one
//! unit-step run is a box, exactly as a subscript would give it.

use super::arith::lin;
use super::{Checker, TileVal};
use crate::ast::Span;
use penguin::{AffineExpr, PatAxis};

/// Help for an HBM `.ap` nkc refuses.
const HELP: &str = "write `t.ap(pattern=[[step, count], ...], offset=k)` over the tensor's flat elements: the partition pair first, then up to 3 free pairs, all with positive steps, and an offset affine in the loop indices";

/// The flat offset `o` as `(rows, cols)` of a stored array of `row` columns: each coefficient
/// and the constant split by Euclidean division, so `rows·row + cols = o` for every value of
/// the loop indices. `None` for a row length of 0.
pub(super) fn split_offset(o: &AffineExpr, row: i64) -> Option<(AffineExpr, AffineExpr)> {
    if row <= 0 {
        return None;
    }
    let c = o.constant_term();
    let mut r = AffineExpr::constant(c.div_euclid(row));
    let mut f = AffineExpr::constant(c.rem_euclid(row));
    for &(axis, k) in o.terms() {
        r.add_term(axis, k.div_euclid(row));
        f.add_term(axis, k.rem_euclid(row));
    }
    Some((r, f))
}

impl Checker<'_> {
    /// The value `base.ap(...)` reads or writes for the `[step, count]` pairs `axes` (the first
    /// the partition axis) from the flat element `offset` of the HBM tensor `base`.
    pub(super) fn hbm_ap(
        &mut self,
        base: TileVal,
        name: &str,
        axes: &[(i64, u64)],
        offset: &AffineExpr,
        span: &Span,
    ) -> Option<TileVal> {
        let refuse = |cx: &mut Self, why: String| cx.refuse_pattern(why, HELP, span);
        let [rows, cols] = self.tensor(base.tensor).shape;
        let row = cols as i64;
        if axes.len() > 4 {
            return refuse(
                self,
                format!(
                    "it has {} axes; an HBM access pattern has at most 4",
                    axes.len()
                ),
            );
        }
        if let Some(&(s, _)) = axes.iter().find(|a| a.0 <= 0 && a.1 > 1) {
            return refuse(self, format!("a step of {s}: nkc takes positive steps"));
        }
        let Some((dr, dc)) = split_offset(offset, row) else {
            return refuse(self, format!("`{name}` has rows of no elements"));
        };
        // Each axis's stored step, and how far the value reaches along rows and columns.
        let steps: Vec<(u64, [i64; 2])> = axes
            .iter()
            .map(|&(s, c)| {
                let st = if c > 1 {
                    [s.div_euclid(row), s.rem_euclid(row)]
                } else {
                    [0, 0]
                };
                (c, st)
            })
            .collect();
        let reach = |k: usize| {
            steps.iter().fold(1u64, |a, &(c, st)| {
                a.saturating_add((c - 1).saturating_mul(st[k] as u64))
            })
        };
        let (rext, cext) = (reach(0), reach(1));
        self.check_bounds(&dr, rext, rows, name, 0, span.clone())?;
        self.check_bounds(&dc, cext, cols, name, 1, span.clone())?;
        let (Some(p0), Some(f0)) = (
            lin(&base.start[0], 1, &dr, 1),
            lin(&base.start[1], 1, &dc, 1),
        ) else {
            self.overflow(span.clone());
            return None;
        };
        let (pcount, pstep) = steps[0];
        let part = PatAxis {
            count: pcount,
            step: if pcount > 1 { pstep } else { [1, 0] }.to_vec(),
        };
        let free = (steps[1..].iter())
            .filter(|a| a.0 > 1)
            .map(|&(count, st)| PatAxis {
                count,
                step: st.to_vec(),
            })
            .collect();
        Some(TileVal::of_pattern(base.tensor, [p0, f0], part, free))
    }
}
