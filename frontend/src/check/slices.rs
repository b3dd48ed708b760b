//! Subscripts of tensors: `a[r0:r1, c0:c1]`, `a[:, c]`, and their bounds.
//!
//! A subscript has one index per dimension (two). A slice `lo:hi` has affine bounds (missing ones
//! are `0` and the axis size); its size `hi − lo` must be a positive compile-time constant. A plain
//! index `e` selects the size-1 range `e:e+1`. Every range must lie inside the tensor (or the view
//! being subscripted) for every iteration of the enclosing loops: the check takes the exact minimum
//! and maximum of the start over the box of loop bounds, and on failure names the first iteration,
//! in loop order, where the slice leaves the tensor.

use super::arith::{lin, MAX_EXTENT};
use super::error::CheckError;
use super::{Checker, TileVal};
use crate::ast::{ExprKind, Index, Span};
use penguin::{AffineExpr, Axis};

/// The exact `(min, max)` of `e` over a box of inclusive bounds, in 128-bit arithmetic so that no
/// coefficient overflows (the same computation as `AffineExpr::range`).
pub(super) fn range128(e: &AffineExpr, bounds: &dyn Fn(Axis) -> (i64, i64)) -> (i128, i128) {
    let (mut lo, mut hi) = (e.constant_term() as i128, e.constant_term() as i128);
    for &(a, c) in e.terms() {
        let (amin, amax) = bounds(a);
        let (x, y) = (c as i128 * amin as i128, c as i128 * amax as i128);
        lo += x.min(y);
        hi += x.max(y);
    }
    (lo, hi)
}

impl Checker<'_> {
    pub(super) fn overflow(&mut self, span: Span) {
        self.error(CheckError::SliceOverflow { at: span });
    }
}

/// The least `v` in `[lo, hi]` where the monotone predicate `p` holds (it holds either on a prefix
/// or on a suffix of the interval).
fn first_where(p: &dyn Fn(i64) -> bool, lo: i64, hi: i64) -> Option<i64> {
    if p(lo) {
        return Some(lo);
    }
    if !p(hi) {
        return None;
    }
    let (mut l, mut h) = (lo, hi);
    while h - l > 1 {
        let mid = l + (h - l) / 2;
        if p(mid) {
            h = mid;
        } else {
            l = mid;
        }
    }
    Some(h)
}

impl Checker<'_> {
    /// The tile `base[indices]`; `name` is the tensor's source name for messages.
    pub(super) fn subscript(
        &mut self,
        base: &TileVal,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<TileVal> {
        // `t[...]`: the whole tile.
        if let [Index::Expr(e)] = indices {
            if e.kind == ExprKind::Ellipsis {
                return Some(base.clone());
            }
        }
        // indirect: a tile's values as the row index (gather / scatter).
        if let Some(r) = self.subscript_indirect(base, name, indices, span) {
            return r;
        }
        // tile_nd: multi-dimensional on-chip tiles and reshaped HBM views.
        if let Some(r) = self.subscript_tile_nd(base, name, indices, span) {
            return r;
        }
        // hbm_view: a subscript of a bound HBM access-pattern view, along its axes.
        if let Some(r) = self.subscript_hbm_view(base, name, indices, span) {
            return r;
        }
        if let Some(dims) = self.logical_dims(base).cloned() {
            return self.subscript_nd(base, &dims, name, indices, span);
        }
        // patterns: strided slices, sums of index vectors.
        if let Some(r) = self.subscript_pattern(base, name, indices, span) {
            return r;
        }
        if indices.len() != 2 {
            // A window written with index vectors (`t[i0, 2 * i1 + i2, 2 * i3 + i4]`) is
            // what to report: it is refused whatever the tile's dimensions.
            let mut window = false;
            for ix in indices {
                if let Index::Expr(e) = ix {
                    window |= self.is_vector_expr(e) && self.single_vector(e).is_none();
                }
            }
            if window {
                return None;
            }
            self.error(CheckError::WrongIndexCount {
                name: name.to_string(),
                indices: indices.len(),
                at: span.clone(),
            });
            return None;
        }
        let mut out = base.clone();
        let mut ok = true;
        for (dim, index) in indices.iter().enumerate() {
            match self.index_in(base.size[dim], name, dim, dim, index) {
                Some((lo, size)) => {
                    match lin(&base.start[dim], 1, &lo, 1) {
                        Some(s) => out.start[dim] = s,
                        None => {
                            self.overflow(index.span());
                            ok = false;
                        }
                    }
                    out.size[dim] = size;
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// The start (relative to its base) and size of one index of a dimension of `extent`
    /// elements; `dim` is 0 for rows (partitions) and 1 for columns (the free axis), `pos` the
    /// index's position in its subscript.
    pub(super) fn index_in(
        &mut self,
        extent: u64,
        name: &str,
        dim: usize,
        pos: usize,
        index: &Index,
    ) -> Option<(AffineExpr, u64)> {
        let (lo, size) = match index {
            Index::Expr(e) => match self.vector_index(e, dim, pos)? {
                Some(range) => range,
                None => (self.affine(e)?, 1u64),
            },
            Index::Slice { lo, hi, step, span } => {
                if let Some(step) = step {
                    self.error(crate::diagnostic::Error::new(
                        crate::codes::PYTHON_UNSUPPORTED,
                        "a slice of a tile with a step",
                        step.span.clone(),
                    )
                    .with_label("a strided slice: nkc's tiles are boxes of consecutive elements")
                    .with_help("slice with step 1 (`t[:, a:b]`): nkc has no strided access, so select every other element with nl.matmul by a 0/1 matrix, or store the whole tile and split it outside the kernel"));
                    return None;
                }
                let l = lo.as_ref().map(|e| self.affine(e));
                let h = hi.as_ref().map(|e| self.affine(e));
                let l = l.unwrap_or(Some(AffineExpr::constant(0)))?;
                let h = h.unwrap_or(Some(AffineExpr::constant(extent as i64)))?;
                let Some(diff) = lin(&h, 1, &l, -1) else {
                    self.overflow(span.clone());
                    return None;
                };
                let Some(size) = diff.as_constant() else {
                    let shown = self.show(&diff);
                    self.error(CheckError::SliceSizeNotConst {
                        shown,
                        at: span.clone(),
                    });
                    return None;
                };
                if size <= 0 {
                    self.error(CheckError::EmptySlice {
                        size,
                        at: span.clone(),
                    });
                    return None;
                }
                (l, size as u64)
            }
        };
        self.check_bounds(&lo, size, extent, name, dim, index.span())?;
        Some((lo, size))
    }

    /// Reports `lo..lo+size` leaving `0..extent` in some iteration of the enclosing loops.
    pub(super) fn check_bounds(
        &mut self,
        lo: &AffineExpr,
        size: u64,
        extent: u64,
        name: &str,
        dim: usize,
        span: Span,
    ) -> Option<()> {
        self.check_bounds_masked(lo, size, extent, name, dim, Some((1, 0)), span)
    }

    /// [`Checker::check_bounds`] of a dimension whose elements under a mask bound `b` on index
    /// `dim` reach from `lo + scale·b` to `lo + scale·b + shift` (`(1, 0)` for a box; a
    /// pattern's: its masked axis's step, and what its other axes reach past that axis);
    /// `None` when no mask bound cuts the dimension.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_bounds_masked(
        &mut self,
        lo: &AffineExpr,
        size: u64,
        extent: u64,
        name: &str,
        dim: usize,
        reach: Option<(i64, i64)>,
        span: Span,
    ) -> Option<()> {
        // With two iterations or more, a larger coefficient already leaves the tensor; with one,
        // it would overflow once a pipeliner shifts the loop variable by a stage.
        if let Some(&(axis, c)) = lo
            .terms()
            .iter()
            .find(|(_, c)| c.unsigned_abs() > MAX_EXTENT as u64)
        {
            let iv = self.loop_data(axis).iv.clone();
            self.error(CheckError::IndexCoeffRange {
                iv,
                coeff: c,
                start: self.show(lo),
                at: span,
            });
            return None;
        }
        let bounds = |a: Axis| {
            let l = self.loop_data(a);
            (l.lb, (l.ub - 1).max(l.lb))
        };
        let violates = |b: &dyn Fn(Axis) -> (i64, i64)| {
            let (min, max) = range128(lo, b);
            min < 0 || max + size as i128 > extent as i128
        };
        if !violates(&bounds) {
            return Some(());
        }
        // Under a mask (vectors.rs), a slice may reach past the tensor where the mask drops it,
        // and in the iterations its guards skip (mask_guards.rs).
        let in_bounds = |b: &dyn Fn(Axis) -> (i64, i64)| {
            let (min, max) = range128(lo, b);
            let (low, high) = (min < 0, max + size as i128 > extent as i128);
            !(low || high)
                || reach
                    .is_some_and(|r| self.mask_keeps_in_bounds(lo, dim, extent, (low, high), r, b))
        };
        if self.all_guarded_boxes(&in_bounds) {
            return Some(());
        }
        // The first violating iteration in loop order: fix each axis, outermost first, to the
        // smallest value that still leaves a violating completion. With the other axes free, the
        // set of such values is an interval for each of the two conditions, so a binary search
        // finds its least element.
        let axes: Vec<Axis> = lo.axes().collect();
        let mut fixed: Vec<(Axis, i64)> = Vec::new();
        for &axis in &axes {
            let (amin, amax) = bounds(axis);
            // The (min, max) of the start with `axis` at `v`, earlier axes fixed, later ones free.
            let range_at = |v: i64| {
                let b = |a: Axis| {
                    if a == axis {
                        (v, v)
                    } else if let Some(&(_, f)) = fixed.iter().find(|(x, _)| *x == a) {
                        (f, f)
                    } else {
                        bounds(a)
                    }
                };
                range128(lo, &b)
            };
            let below = |v: i64| range_at(v).0 < 0;
            let above = |v: i64| range_at(v).1 + size as i128 > extent as i128;
            let v = [
                first_where(&below, amin, amax),
                first_where(&above, amin, amax),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(amin);
            fixed.push((axis, v));
        }
        let at = |a: Axis| {
            fixed
                .iter()
                .find(|(x, _)| *x == a)
                .map_or((0, 0), |&(_, v)| (v, v))
        };
        let start = range128(lo, &at).0;
        let when = fixed
            .iter()
            .map(|&(a, v)| format!("{} = {v}", self.loop_data(a).iv))
            .collect();
        self.error(CheckError::SliceOutOfBounds {
            dim,
            start,
            end: start + size as i128,
            tensor: name.to_string(),
            extent,
            when,
            shown: self.show(lo),
            size,
            at: span,
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{first_where, range128};
    use penguin::{AffineExpr, Axis};

    #[test]
    fn first_where_finds_the_least_value() {
        assert_eq!(first_where(&|v| v >= 7, 0, 15), Some(7));
        assert_eq!(first_where(&|v| v <= 3, 0, 15), Some(0));
        assert_eq!(first_where(&|v| v > 20, 0, 15), None);
        assert_eq!(first_where(&|v| v >= 15, 0, 15), Some(15));
    }

    #[test]
    fn range128_does_not_overflow() {
        let e = AffineExpr::from_terms([(Axis::from_u32(0), i64::MAX)], i64::MAX);
        let (lo, hi) = range128(&e, &|_| (0, 2));
        assert_eq!(lo, i64::MAX as i128);
        assert_eq!(hi, 3 * i64::MAX as i128);
    }
}
