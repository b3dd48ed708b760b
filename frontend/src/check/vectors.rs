//! Index vectors and masks: `nl.arange`, `nl.mgrid`, `nl.ds`, and `mask=`.
//!
//! NKI indexes tiles with vectors of indices: `i_p = nl.arange(128)[:, None]` is the column of
//! partition indices 0..128, `i_f = nl.arange(512)[None, :]` the row of free indices, and
//! `i_p, i_f = nl.mgrid[0:128, 0:512]` both at once. In a subscript, `a[i * 128 + i_p, i_f]`
//! selects the tile whose rows are `i * 128 + 0..128`: an affine start plus a contiguous range,
//! which is exactly a slice. This module recognises those forms and turns them into slices
//! ([`Checker::vector_index`]); `nl.ds(start, size)` is the slice `start:start + size`.
//!
//! Index vectors are compile-time values ([`Value::Vec`]); `nl.mgrid[...]` is one too
//! (`Py::Grid`, built by [`Checker::mgrid_value`]), whose fields `.p`, `.x`, `.y`, `.z` (or its
//! unpacking) are its vectors, and which indexes a tensor whole (`t[grid]`).
//!
//! Rules (each break is a diagnostic):
//! - an index vector is `nl.arange(n)` or `nl.arange(a, b)` (step 1), placed with one `:` among
//!   `None`s (`[:, None]` partitions, `[None, :]` the free axis, `[None, :, None]` the middle
//!   axis of three); an `nl.mgrid` of `k` ranges gives `k` vectors, one per axis of `k`;
//! - a vector of 2 axes indexes the partition (axis 0) or the free dimension (axis 1); a vector
//!   of more axes indexes the dimension at its own position in the subscript;
//! - an index vector expression holds one vector, added to an affine expression, multiplied by
//!   an integer or negated: a vector with a step (`expr * -1`, `5 + 2 * i_p`). `nisa.iota`,
//!   `nisa.affine_select` and masks take any step; a subscript only step 1 (a tile is a box of
//!   consecutive elements); two vectors in one index (`i_h + i_kh`, a window) are refused
//!   ([`Checker::single_vector`]); a sum of vectors ([`IndexVec::extra`], `512 * i_p + i_f`) is
//!   a value only a mask takes (`mask_sums.rs`);
//! - `mask=` is a conjunction of comparisons, each of one index vector (plus an affine offset)
//!   with an affine bound, or a name bound to such a conjunction. A comparison that holds over
//!   the whole box of loop bounds and vector ranges keeps every element and adds nothing (so a
//!   mask on a shape that divides into whole tiles changes no code); any other becomes a
//!   [`MaskBound`] on the partition (`[:, None]` vector) or free (`[None, :]`) index of the
//!   instruction's tile (`i * 128 + i_p < n` is `p < n - 128*i`). While a masked call is
//!   checked, its subscripts may reach past a tensor's end where the mask drops those elements
//!   ([`Checker::mask_keeps_in_bounds`]).

use super::arith::lin;
use super::error::CheckError;
use super::index_vec::{
    mask_and, IndexVec, MaskPiece, MaskPieces, NdBound, VecTerm, MAX_MASK_PIECES,
};
use super::pyvalue::Py;
use super::slices::range128;
use super::{Checker, Value};
use crate::ast::{BinOp, CmpOp, Expr, ExprKind, Index, Span, UnaryOp};
use penguin::{AffineExpr, MaskBound, TileDim};

/// One side of a mask comparison: its least value, affine, and, when it holds an index vector,
/// the number of indices it spans, its axis, its step and the number of axes of its placement.
type MaskSide = (AffineExpr, Option<(u64, Option<usize>, i64, usize)>);

/// Whether `func` is `nl.NAME`.
fn is_nl(func: &Expr, name: &str) -> bool {
    func.attr_of(&["nl"]) == Some(name)
}

/// Whether an expression mentions an index vector syntactically (an `nl.arange` / `nl.mgrid`)
/// or a name bound to one.
fn mentions_vector(cx: &Checker<'_>, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(n) => matches!(cx.find(n).map(|b| &b.value), Some(Value::Vec(_))),
        ExprKind::Call { func, .. } => is_nl(func, "arange"),
        ExprKind::Subscript { value, .. } => {
            mentions_vector(cx, value)
                || matches!(&value.kind, ExprKind::Attribute { attr, .. } if attr.name == "mgrid")
        }
        ExprKind::Binary { lhs, rhs, .. } => mentions_vector(cx, lhs) || mentions_vector(cx, rhs),
        ExprKind::Unary { operand, .. } => mentions_vector(cx, operand),
        _ => false,
    }
}

impl Checker<'_> {
    /// Whether `e` is an index-vector expression (to be bound as one, or used as an index).
    pub(crate) fn is_vector_expr(&self, e: &Expr) -> bool {
        mentions_vector(self, e)
    }

    /// An index vector: `nl.arange(...)`, optionally `[:, None]` / `[None, :]`, or a name;
    /// along an axis being unrolled, its value there (`unroll_axes`).
    pub(crate) fn index_vec(&mut self, e: &Expr) -> Option<IndexVec> {
        let v = self.index_vec_as_bound(e)?;
        Some(self.fix_vector(v))
    }

    fn index_vec_as_bound(&mut self, e: &Expr) -> Option<IndexVec> {
        match &e.kind {
            ExprKind::Name(n) => match self.lookup(n, &e.span) {
                Value::Vec(v) => Some(v),
                Value::Error => None,
                _ => self.not_a_vector(e),
            },
            ExprKind::Call { func, args, kwargs } if is_nl(func, "arange") => {
                let bounds: Vec<Option<i64>> = args.iter().map(|a| self.const_int(a)).collect();
                let (start, stop) = match (bounds.as_slice(), kwargs.is_empty()) {
                    ([n], true) => (0, (*n)?),
                    ([a, b], true) => ((*a)?, (*b)?),
                    _ => {
                        self.error(CheckError::ArangeArgs { at: e.span.clone() });
                        return None;
                    }
                };
                if stop <= start || stop.abs_diff(start) > super::arith::MAX_EXTENT as u64 {
                    self.error(CheckError::ArangeRange {
                        start,
                        stop,
                        at: e.span.clone(),
                    });
                    return None;
                }
                Some(IndexVec::range(start, stop.abs_diff(start), None, 1))
            }
            ExprKind::Subscript { value, indices } => {
                let v = self.index_vec_as_bound(value)?;
                // `[:, None]`, `[None, :, None]`, ...: one whole slice (the vector's axis) among
                // `None`s (new axes of one element).
                let whole = |ix: &Index| {
                    matches!(
                        ix,
                        Index::Slice {
                            lo: None,
                            hi: None,
                            step: None,
                            ..
                        }
                    )
                };
                let none = |ix: &Index| matches!(ix, Index::Expr(n) if n.kind == ExprKind::None);
                let axis = indices.iter().position(whole);
                let placed = indices.len() >= 2
                    && indices.iter().filter(|ix| whole(ix)).count() == 1
                    && indices.iter().all(|ix| whole(ix) || none(ix));
                let Some(axis) = axis.filter(|_| placed) else {
                    self.error(CheckError::VectorPlacement { at: e.span.clone() });
                    return None;
                };
                if v.axis.is_some() || !v.extra.is_empty() {
                    self.error(CheckError::VectorPlacedTwice { at: e.span.clone() });
                    return None;
                }
                Some(IndexVec {
                    axis: Some(axis),
                    ndim: indices.len(),
                    ..v
                })
            }
            ExprKind::Error => None,
            _ => self.not_a_vector(e),
        }
    }

    fn not_a_vector(&mut self, e: &Expr) -> Option<IndexVec> {
        self.error(CheckError::NotAVector { at: e.span.clone() });
        None
    }

    /// `nl.mgrid[a:b, c:d]` written in the core language: the partition and free index vectors.
    pub(crate) fn mgrid(&mut self, e: &Expr) -> Option<Vec<IndexVec>> {
        let ExprKind::Subscript { indices, .. } = &e.kind else {
            return None;
        };
        let mut items = Vec::new();
        for ix in indices {
            let Index::Slice {
                lo, hi: Some(hi), ..
            } = ix
            else {
                self.error(CheckError::MgridItem { at: ix.span() });
                return None;
            };
            let start = match lo {
                Some(l) => self.const_int(l)?,
                None => 0,
            };
            items.push((start, self.const_int(hi)?, ix.span()));
        }
        self.grid_vectors(&items)
    }

    /// `nl.mgrid[...]` evaluated: a grid of as many axes as it has ranges (`items` are the
    /// evaluated subscript items and their spans), each a compile-time `start:stop`.
    pub(crate) fn mgrid_value(&mut self, items: &[(Value, Span)]) -> Option<Value> {
        let mut bounds = Vec::new();
        for (v, at) in items {
            let part = |x: &Value, dflt: Option<i64>| match x {
                Value::None => dflt,
                _ => x.as_int(),
            };
            let range = match v.as_py() {
                Some(Py::Slice(lo, hi, step)) if part(step, Some(1)) == Some(1) => {
                    part(lo, Some(0)).zip(part(hi, None))
                }
                _ => None,
            };
            let Some((start, stop)) = range else {
                self.error(CheckError::MgridItem { at: at.clone() });
                return None;
            };
            bounds.push((start, stop, at.clone()));
        }
        self.grid_vectors(&bounds).map(|g| Value::py(Py::Grid(g)))
    }

    /// The index vectors of a grid of ranges `start..stop`, one axis each.
    fn grid_vectors(&mut self, items: &[(i64, i64, Span)]) -> Option<Vec<IndexVec>> {
        let mut out = Vec::new();
        for (axis, (start, stop, at)) in items.iter().enumerate() {
            if stop <= start || stop.abs_diff(*start) > super::arith::MAX_EXTENT as u64 {
                self.error(CheckError::MgridShape { at: at.clone() });
                return None;
            }
            out.push(IndexVec::range(
                *start,
                stop.abs_diff(*start),
                Some(axis),
                items.len(),
            ));
        }
        Some(out)
    }

    /// `nl.ds(start, size)` outside a subscript (`sl = nl.ds(j * 128, 128)`, then `x[:, sl]`):
    /// the slice `start:start + size`, a compile-time value like any `slice`, which a subscript
    /// reads as it reads `nl.ds` written in it. `start` may depend on loop indices; `size` is a
    /// positive compile-time integer.
    pub(crate) fn ds_value(
        &mut self,
        pos: Vec<Value>,
        spans: &[Span],
        kws: Vec<(String, Value, Span)>,
        e: &Expr,
    ) -> Option<Value> {
        let mut extra = pos.len() > 2;
        let mut pos = pos.into_iter().zip(spans.iter().cloned());
        let mut start = pos.next();
        let mut size = pos.next();
        for (k, v, at) in kws {
            match k.as_str() {
                "start" if start.is_none() => start = Some((v, at)),
                "size" if size.is_none() => size = Some((v, at)),
                _ => extra = true,
            }
        }
        let (Some((start, start_at)), Some((size, size_at)), false) = (start, size, extra) else {
            self.error(CheckError::DsArgs { at: e.span.clone() });
            return None;
        };
        let start = match start {
            Value::Int(a) => a,
            Value::Iv(axis) => AffineExpr::iv(axis),
            Value::Error => return None,
            _ => {
                self.error(CheckError::DsArgs { at: start_at });
                return None;
            }
        };
        let Some(size) = size.as_int() else {
            if !matches!(size, Value::Error) {
                self.error(CheckError::DsArgs { at: size_at });
            }
            return None;
        };
        if size < 1 {
            self.error(CheckError::DsEmpty { size, at: size_at });
            return None;
        }
        let stop = start.add(&AffineExpr::constant(size));
        Some(Value::py(Py::Slice(
            Value::Int(start),
            Value::Int(stop),
            Value::None,
        )))
    }

    /// Whether `e` is `nl.mgrid[...]`.
    pub(crate) fn is_mgrid(e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Subscript { value, .. } if matches!(&value.kind,
            ExprKind::Attribute { value: m, attr } if attr.name == "mgrid"
                && matches!(&m.kind, ExprKind::Name(n) if n == "nl")))
    }

    /// An index of dimension `dim` (0 for partitions, 1 for the free axis), at position `pos`
    /// of its subscript, written with an index vector (`i * 128 + i_p`) or `nl.ds`: its start
    /// and size. `None` inside when the index is an ordinary one.
    pub(crate) fn vector_index(
        &mut self,
        e: &Expr,
        dim: usize,
        pos: usize,
    ) -> Option<Option<(AffineExpr, u64)>> {
        if let ExprKind::Call { func, args, kwargs } = &e.kind {
            if is_nl(func, "ds") {
                if args.len() != 2 || !kwargs.is_empty() {
                    self.error(CheckError::DsArgs { at: e.span.clone() });
                    return None;
                }
                let start = self.affine(&args[0]);
                let size = self.const_int(&args[1]);
                let (start, size) = (start?, size?);
                if size < 1 {
                    self.error(CheckError::DsEmpty {
                        size,
                        at: args[1].span.clone(),
                    });
                    return None;
                }
                return Some(Some((start, size as u64)));
            }
        }
        if !self.is_vector_expr(e) {
            return Some(None);
        }
        let v = self.single_vector(e)?;
        if v.step != 1 && v.len > 1 {
            return self.unsupported_vector(
                e,
                &format!(
                    "it steps by {} between elements: a strided access pattern, which nkc's tiles do not have",
                    v.step
                ),
            );
        }
        match v.axis {
            // A vector of a grid of more than 2 axes indexes the dimension at its own position.
            Some(axis) if v.ndim > 2 && axis != pos => {
                return self.unsupported_vector(
                    e,
                    &format!(
                        "it varies along axis {axis} of a {}-axis grid but indexes dimension {pos}",
                        v.ndim
                    ),
                );
            }
            Some(axis) if v.ndim <= 2 && axis != dim => {
                self.error(CheckError::VectorAxis {
                    axis,
                    dim,
                    at: e.span.clone(),
                });
                return None;
            }
            _ => {}
        }
        Some(Some((v.start, v.len)))
    }

    /// `start + k·b`, or an overflow diagnostic.
    fn shifted(&mut self, v: IndexVec, b: &AffineExpr, k: i64, e: &Expr) -> Option<IndexVec> {
        match lin(&v.start, 1, b, k) {
            Some(start) => Some(IndexVec { start, ..v }),
            None => {
                self.error(CheckError::IndexOverflow { at: e.span.clone() });
                None
            }
        }
    }

    /// `k·v`: every index and the step scaled, or an overflow diagnostic.
    fn scaled(&mut self, v: IndexVec, k: i64, e: &Expr) -> Option<IndexVec> {
        let start = lin(&v.start, k, &AffineExpr::constant(0), 0);
        let extra: Option<Vec<VecTerm>> = v
            .extra
            .iter()
            .map(|t| {
                Some(VecTerm {
                    step: t.step.checked_mul(k)?,
                    ..t.clone()
                })
            })
            .collect();
        match (start, v.step.checked_mul(k), extra) {
            (Some(start), Some(step), Some(extra)) => Some(IndexVec {
                start,
                step,
                extra,
                ..v
            }),
            _ => {
                self.error(CheckError::IndexOverflow { at: e.span.clone() });
                None
            }
        }
    }

    /// An index-vector expression: one vector, added to (or subtracted from) an affine offset,
    /// multiplied by or negated with integers (`i * 128 + i_p`, `expr * -1`, `5 + 2 * i_p`).
    pub(crate) fn offset_vector(&mut self, e: &Expr) -> Option<IndexVec> {
        match &e.kind {
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub),
                lhs,
                rhs,
            } => {
                let (l, r) = (self.is_vector_expr(lhs), self.is_vector_expr(rhs));
                match (l, r, op) {
                    (true, false, _) => {
                        let v = self.offset_vector(lhs);
                        let b = self.affine(rhs);
                        let k = if *op == BinOp::Add { 1 } else { -1 };
                        self.shifted(v?, &b?, k, e)
                    }
                    (false, true, _) => {
                        let a = self.affine(lhs);
                        let v = self.offset_vector(rhs)?;
                        let v = if *op == BinOp::Sub { self.scaled(v, -1, e)? } else { v };
                        self.shifted(v, &a?, 1, e)
                    }
                    (true, true, _) => {
                        // A sum of vectors (`512 * i_p + i_f`): a mask takes it, a subscript
                        // does not ([`Checker::single_vector`]).
                        let l = self.offset_vector(lhs);
                        let r = self.offset_vector(rhs)?;
                        let r = if *op == BinOp::Sub { self.scaled(r, -1, e)? } else { r };
                        let mut l = self.shifted(l?, &r.start, 1, e)?;
                        l.extra.push(VecTerm {
                            len: r.len,
                            axis: r.axis,
                            step: r.step,
                            ndim: r.ndim,
                        });
                        l.extra.extend(r.extra);
                        Some(l)
                    }
                    (false, false, _) => self.unsupported_vector(e, "it holds no index vector"),
                }
            }
            ExprKind::Binary {
                op: BinOp::Mul,
                lhs,
                rhs,
            } => {
                let (l, r) = (self.is_vector_expr(lhs), self.is_vector_expr(rhs));
                let (v, k) = match (l, r) {
                    (true, false) => (lhs, rhs),
                    (false, true) => (rhs, lhs),
                    _ => {
                        return self.unsupported_vector(
                            e,
                            "a product of two index vectors is not affine",
                        )
                    }
                };
                let v = self.offset_vector(v);
                let k = self.const_int(k);
                self.scaled(v?, k?, e)
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let v = self.offset_vector(operand)?;
                self.scaled(v, -1, e)
            }
            ExprKind::Unary {
                op: UnaryOp::Pos,
                operand,
            } => self.offset_vector(operand),
            ExprKind::Binary { op, .. } => self.unsupported_vector(
                e,
                &format!(
                    "`{}` of an index vector is not affine: index vectors take `+`, `-` and `*` by an integer (`np.arange` is an index vector too, not a numpy array: compute a list of indices with a Python list comprehension)",
                    op.symbol()
                ),
            ),
            _ => self.index_vec(e),
        }
    }

    /// [`Checker::offset_vector`] for an index: one vector, not a sum of several.
    pub(crate) fn single_vector(&mut self, e: &Expr) -> Option<IndexVec> {
        let v = self.offset_vector(e)?;
        if !v.extra.is_empty() {
            return self.unsupported_vector(
                e,
                "it combines two index vectors: a multi-dimensional access pattern (a window, a transpose), which nkc's tiles do not have; index with one vector per index, and for a window one tile per window offset (`for kh in nl.static_range(k):` ... `x[i_h + kh, i_w]`)",
            );
        }
        Some(v)
    }

    fn unsupported_vector<T>(&mut self, e: &Expr, why: &str) -> Option<T> {
        self.error(CheckError::UnsupportedVector {
            why: why.to_string(),
            at: e.span.clone(),
        });
        None
    }

    /// `mask=`: its bounds on the tile's partition and free indices (empty when it keeps every
    /// element in every iteration). `cond` is a comparison of an index expression with an affine
    /// one, several joined with `&` (or `and`), or a name bound to a mask; `None` and `True` keep
    /// everything.
    pub(crate) fn mask(&mut self, cond: &Expr) -> Option<MaskPieces> {
        match &cond.kind {
            ExprKind::BoolOp {
                and: true,
                lhs,
                rhs,
            }
            | ExprKind::Binary {
                op: BinOp::BitAnd,
                lhs,
                rhs,
            } => {
                let a = self.mask(lhs);
                let b = self.mask(rhs);
                let (a, b) = (a?, b?);
                let out = mask_and(&a, &b);
                if out.len() > MAX_MASK_PIECES {
                    self.error(CheckError::MaskUnsupported {
                        why: format!(
                            "it is the union of {} boxes of the tile (at most {MAX_MASK_PIECES})",
                            out.len()
                        ),
                        at: cond.span.clone(),
                    });
                    return None;
                }
                Some(out)
            }
            ExprKind::Name(n) if self.deferred_pred(n).is_some() => {
                let e = self.deferred_pred(n)?;
                self.mask(&e)
            }
            ExprKind::Name(n) => match self.lookup(n, &cond.span) {
                Value::Mask(pieces) => Some(pieces),
                Value::Bool(true) | Value::None => Some(vec![MaskPiece::default()]),
                Value::Bool(false) => Some(Vec::new()),
                Value::Error => None,
                _ => {
                    self.error(CheckError::MaskNotComparison {
                        at: cond.span.clone(),
                    });
                    None
                }
            },
            ExprKind::Bool(true) | ExprKind::None => Some(vec![MaskPiece::default()]),
            ExprKind::Bool(false) => Some(Vec::new()),
            ExprKind::Compare { op, lhs, rhs } => {
                if self.vector_count(lhs) + self.vector_count(rhs) > 1 {
                    // mask_sums.rs: a comparison of a sum of vectors (`512 * i_p + i_f < n`).
                    return self.mask_sum(*op, lhs, rhs, cond);
                }
                let a = self.mask_side(lhs);
                let b = self.mask_side(rhs);
                let (a, b) = (a?, b?);
                if self.mask_always_holds(*op, &a, &b) {
                    return Some(vec![MaskPiece::default()]);
                }
                if a.1.is_none() && b.1.is_none() {
                    // mask_guards.rs: a condition on loop indices alone.
                    return self.guard_pieces(*op, &a.0, &b.0, &cond.span);
                }
                if let Some(v) = a.1.or(b.1).filter(|v| v.3 > 2 && v.1 != Some(0)) {
                    return self.nd_free_bound(*op, a, b, v, cond);
                }
                self.mask_bounds(*op, a, b, cond)
                    .map(|b| vec![MaskPiece::of_bounds(b)])
            }
            ExprKind::Error => None,
            _ => {
                // Any other expression (`m if causal else None`): its value, a mask or a bool.
                match self.eval(cond)? {
                    Value::Mask(pieces) => Some(pieces),
                    Value::Bool(true) | Value::None => Some(vec![MaskPiece::default()]),
                    Value::Bool(false) => Some(Vec::new()),
                    Value::Error => None,
                    _ => {
                        self.error(CheckError::MaskNotComparison {
                            at: cond.span.clone(),
                        });
                        None
                    }
                }
            }
        }
    }

    /// Whether `a op b` holds over the whole box of loop bounds and vector ranges (so the
    /// comparison drops nothing), in 128-bit arithmetic.
    fn mask_always_holds(&self, op: CmpOp, a: &MaskSide, b: &MaskSide) -> bool {
        let bounds = |ax| {
            let l = self.loop_data(ax);
            (l.lb, l.ub - 1)
        };
        let (alo, ahi) = range128(&a.0, &bounds);
        let (blo, bhi) = range128(&b.0, &bounds);
        let (mut lo, mut hi) = (alo - bhi, ahi - blo);
        hi += a.1.map_or(0, |(len, ..)| len as i128 - 1);
        lo -= b.1.map_or(0, |(len, ..)| len as i128 - 1);
        match op {
            CmpOp::Lt => hi < 0,
            CmpOp::Le => hi <= 0,
            CmpOp::Gt => lo > 0,
            CmpOp::Ge => lo >= 0,
            CmpOp::Eq | CmpOp::Is => lo == 0 && hi == 0,
            CmpOp::Ne | CmpOp::IsNot => lo > 0 || hi < 0,
            CmpOp::In | CmpOp::NotIn => false,
        }
    }

    /// A comparison that drops elements by an index vector on free axis `k` of a tile of more
    /// than 2 axes (`v`: its side's vector): its bounds on that axis's index, kept beside the
    /// piece ([`MaskPiece::nd`]) until the instruction's tile is known (`mask_nd.rs`). The
    /// partition axis is axis 0 whatever the tile's rank: a bound on it is a partition bound.
    fn nd_free_bound(
        &mut self,
        op: CmpOp,
        a: MaskSide,
        b: MaskSide,
        v: (u64, Option<usize>, i64, usize),
        cond: &Expr,
    ) -> Option<MaskPieces> {
        let (len, axis, _, ndim) = v;
        // The same bounds as on the free axis of a 2-D tile, in units of axis `k`'s index.
        let as_free = |s: MaskSide| (s.0, s.1.map(|(l, _, st, _)| (l, Some(1), st, 2)));
        let bounds = self.mask_bounds(op, as_free(a), as_free(b), cond)?;
        let axis = axis.unwrap_or(1);
        Some(vec![MaskPiece {
            nd: bounds
                .into_iter()
                .map(|bound| NdBound {
                    axis,
                    ndim,
                    len,
                    lower: bound.lower,
                    bound: bound.bound,
                })
                .collect(),
            ..MaskPiece::default()
        }])
    }

    /// The bounds of a comparison `a op b` that drops elements: exactly one side holds an index
    /// vector, placed on an axis; the comparison is `<`, `<=`, `>`, `>=` or `==`.
    fn mask_bounds(
        &mut self,
        op: CmpOp,
        a: MaskSide,
        b: MaskSide,
        cond: &Expr,
    ) -> Option<Vec<MaskBound>> {
        let unsupported = |cx: &mut Self, why: &str| {
            cx.error(CheckError::MaskUnsupported {
                why: why.to_string(),
                at: cond.span.clone(),
            });
            None
        };
        // `idx op' x`: the vector's index against an affine value.
        let step = a.1.or(b.1).map_or(1, |(_, _, step, _)| step);
        if step != 1 {
            return unsupported(
                self,
                "its index vector has a step, so the elements it keeps are not a box of the tile; compare a vector of step 1 (`nl.arange(n)`) with a bound",
            );
        }
        let (axis, op, x) = match (a.1, b.1) {
            (Some((_, axis, _, _)), None) => (axis, op, lin(&b.0, 1, &a.0, -1)),
            (None, Some((_, axis, _, _))) => {
                let flipped = match op {
                    CmpOp::Lt => CmpOp::Gt,
                    CmpOp::Le => CmpOp::Ge,
                    CmpOp::Gt => CmpOp::Lt,
                    CmpOp::Ge => CmpOp::Le,
                    other => other,
                };
                (axis, flipped, lin(&a.0, 1, &b.0, -1))
            }
            (Some(_), Some(_)) => {
                return unsupported(
                    self,
                    "it compares two index vectors; compare one index vector with a bound",
                )
            }
            (None, None) => {
                return unsupported(
                    self,
                    "it holds no index vector, so it would keep all of the tile or none of it; select the iterations with the loop's range instead",
                )
            }
        };
        let dim = match axis {
            Some(0) => TileDim::Partition,
            Some(1) => TileDim::Free,
            _ => {
                return unsupported(
                    self,
                    "its index vector is not placed on an axis; write `nl.arange(n)[:, None]` (partitions) or `nl.arange(n)[None, :]` (free axis)",
                )
            }
        };
        let Some(x) = x else {
            self.error(CheckError::IndexOverflow {
                at: cond.span.clone(),
            });
            return None;
        };
        let plus1 = |e: &AffineExpr| lin(e, 1, &AffineExpr::constant(1), 1);
        let bound =
            |lower: bool, e: Option<AffineExpr>| e.map(|bound| MaskBound { dim, lower, bound });
        let out = match op {
            CmpOp::Lt => vec![bound(false, Some(x))],
            CmpOp::Le => vec![bound(false, plus1(&x))],
            CmpOp::Gt => vec![bound(true, plus1(&x))],
            CmpOp::Ge => vec![bound(true, Some(x))],
            CmpOp::Eq | CmpOp::Is => vec![bound(true, Some(x.clone())), bound(false, plus1(&x))],
            CmpOp::Ne | CmpOp::IsNot | CmpOp::In | CmpOp::NotIn => {
                return unsupported(
                    self,
                    "a mask keeps a box of the tile: compare with `<`, `<=`, `>`, `>=` or `==`",
                )
            }
        };
        let out: Option<Vec<MaskBound>> = out.into_iter().collect();
        if out.is_none() {
            self.error(CheckError::IndexOverflow {
                at: cond.span.clone(),
            });
        }
        out
    }

    /// Whether the subscript of dimension `dim` starting at `lo` (of `size` elements, in a tensor
    /// of `extent`) stays inside the tensor where the active mask keeps it: some mask bound on
    /// that dimension keeps `lo + scale·bound` at least `0` (lower), or `lo + scale·bound +
    /// shift` at most `extent` (upper), in every iteration of the box `bounds` gives each loop
    /// (`(scale, shift)` is `(1, 0)` for a box; [`Checker::check_bounds_masked`]).
    /// `violates_low` / `violates_high` say which side the plain check failed on.
    pub(crate) fn mask_keeps_in_bounds(
        &self,
        lo: &AffineExpr,
        dim: usize,
        extent: u64,
        (violates_low, violates_high): (bool, bool),
        (scale, shift): (i64, i64),
        bounds: &dyn Fn(penguin::Axis) -> (i64, i64),
    ) -> bool {
        if self.active_mask.is_empty() || dim > 1 {
            return false;
        }
        let held = |lower: bool| {
            self.active_mask
                .iter()
                .filter(|b| b.dim.index() == dim && b.lower == lower)
                .any(|b| {
                    match lin(lo, 1, &b.bound, scale).and_then(|e| {
                        lin(
                            &e,
                            1,
                            &AffineExpr::constant(if lower { 0 } else { shift }),
                            1,
                        )
                    }) {
                        Some(e) => {
                            let (min, max) = range128(&e, bounds);
                            if lower {
                                min >= 0
                            } else {
                                max <= extent as i128
                            }
                        }
                        None => false,
                    }
                })
        };
        (!violates_low || held(true)) && (!violates_high || held(false))
    }

    /// One side of a mask comparison: its least value, affine, and the length and axis of its
    /// vector.
    fn mask_side(&mut self, e: &Expr) -> Option<MaskSide> {
        if self.is_vector_expr(e) {
            let v = self.offset_vector(e)?;
            let Some((lo, len)) = v.span_range() else {
                self.error(CheckError::IndexOverflow { at: e.span.clone() });
                return None;
            };
            Some((lo, Some((len, v.axis, v.step, v.ndim))))
        } else {
            Some((self.affine(e)?, None))
        }
    }

    /// The number of index vectors `e` sums, syntactically (0 for an affine value; a name bound
    /// to a sum counts its vectors). Errors are reported when the side is evaluated.
    pub(crate) fn vector_count(&self, e: &Expr) -> usize {
        if !self.is_vector_expr(e) {
            return 0;
        }
        match &e.kind {
            ExprKind::Name(n) => match self.find(n).map(|b| &b.value) {
                Some(Value::Vec(v)) => 1 + v.extra.len(),
                _ => 0,
            },
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub,
                lhs,
                rhs,
            } => self.vector_count(lhs) + self.vector_count(rhs),
            ExprKind::Binary { lhs, rhs, .. } => self.vector_count(lhs).max(self.vector_count(rhs)),
            ExprKind::Unary { operand, .. } => self.vector_count(operand),
            _ => 1,
        }
    }

    /// Whether `e` is a mask: a comparison that mentions an index vector, several joined with
    /// `&` (or `and`), or a name bound to one (`valid = (i * 128 + i_p < n) & (i_f < d)`).
    pub(crate) fn is_mask_expr(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::BoolOp {
                and: true,
                lhs,
                rhs,
            }
            | ExprKind::Binary {
                op: BinOp::BitAnd,
                lhs,
                rhs,
            } => self.is_mask_expr(lhs) || self.is_mask_expr(rhs),
            ExprKind::Compare { lhs, rhs, .. } => {
                self.is_vector_expr(lhs) || self.is_vector_expr(rhs)
            }
            ExprKind::Name(n) => {
                matches!(self.find(n).map(|b| &b.value), Some(Value::Mask(_)))
                    || self.deferred_pred(n).is_some()
            }
            _ => false,
        }
    }
}
