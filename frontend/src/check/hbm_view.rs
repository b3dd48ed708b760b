//! A subscript of a bound HBM access-pattern view: `v = X[b, :, i:i + h, j:j + w]` of a 4-D
//! tensor (rows that are not contiguous, so an access pattern, `patterns_nd`), then
//! `v[k * 128:(k + 1) * 128, r, 0:w]`, as numpy and NKI index the view's own dimensions.
//!
//! The view's dimensions are its pattern's axes, the partition axis first (what
//! `value_dims` reports as its NKI shape). Each index of the new subscript selects along one
//! axis: an integer `e` moves the start by `e` steps of that axis and drops it; a unit-step slice
//! `a:b` moves the start by `a` steps and keeps `b - a` elements of it; a missing trailing index
//! keeps the axis whole. The first kept axis is the partition axis of the result. Every index
//! is bounds-checked against its axis's count, so the result reaches only elements of the view.
//!
//! Invariants: taken only for an HBM view with a pattern and a subscript of scalar indices and
//! slices, no more of them than the view has axes (index vectors keep the earlier paths); the
//! result's steps are the view's (positive); one that is a unit-step run per partition is a box.

use super::arith::lin;
use super::{Checker, TileVal};
use crate::ast::{Index, Span};
use penguin::{AffineExpr, PatAxis};

impl Checker<'_> {
    /// `base[indices]` of an HBM access-pattern view, composed onto its axes: `None` when this
    /// is not such a subscript (the other paths take it), `Some(None)` after a diagnostic.
    pub(super) fn subscript_hbm_view(
        &mut self,
        base: &TileVal,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<Option<TileVal>> {
        let pat = base.pattern.as_ref()?;
        if self.tensor(base.tensor).memory != penguin::Memory::Hbm
            || base.indirect.is_some()
            || indices.len() > pat.axes.len()
        {
            return None;
        }
        let vector = indices.iter().any(|ix| match ix {
            Index::Expr(e) => self.is_vector_expr(e),
            Index::Slice { step, .. } => step.is_some(),
        });
        if vector {
            return None;
        }
        let axes = pat.axes.clone();
        let mut start = base.start.clone();
        let mut kept: Vec<PatAxis> = Vec::new();
        for (k, a) in axes.iter().enumerate() {
            let (lo, count, keep) = match indices.get(k) {
                None => (AffineExpr::constant(0), a.count, true),
                Some(ix) => {
                    let dim = usize::from(k > 0);
                    let (lo, size) = match self.index_in(a.count, name, dim, k, ix) {
                        Some(r) => r,
                        None => return Some(None),
                    };
                    (lo, size, matches!(ix, Index::Slice { .. }))
                }
            };
            for (d, s) in start.iter_mut().enumerate() {
                let step = a.step.get(d).copied().unwrap_or(0);
                match lin(s, 1, &lo, step) {
                    Some(x) => *s = x,
                    None => {
                        self.overflow(span.clone());
                        return Some(None);
                    }
                }
            }
            if keep {
                kept.push(PatAxis {
                    count,
                    step: a.step.clone(),
                });
            }
        }
        let (part, free) = match kept.split_first() {
            Some((p, f)) => (p.clone(), f.to_vec()),
            None => (
                PatAxis {
                    count: 1,
                    step: vec![1, 0],
                },
                Vec::new(),
            ),
        };
        let part = if part.count > 1 {
            part
        } else {
            PatAxis {
                count: 1,
                step: vec![1, 0],
            }
        };
        Some(Some(TileVal::of_pattern(base.tensor, start, part, free)))
    }
}
