//! Index vectors and masks: `nl.arange`, `nl.mgrid`, `nl.ds`, and `mask=`.
//!
//! NKI indexes tiles with vectors of indices: `i_p = nl.arange(128)[:, None]` is the column of
//! partition indices 0..128, `i_f = nl.arange(512)[None, :]` the row of free indices, and
//! `i_p, i_f = nl.mgrid[0:128, 0:512]` both at once. In a subscript, `a[i * 128 + i_p, i_f]`
//! selects the tile whose rows are `i * 128 + 0..128`: an affine start plus a contiguous range,
//! which is exactly a slice. This module recognises those forms and turns them into slices
//! ([`Checker::vector_index`]); `nl.ds(start, size)` is the slice `start:start + size`.
//!
//! Rules (each break is a diagnostic):
//! - an index vector is `nl.arange(n)` or `nl.arange(a, b)` (step 1), made 2-D with `[:, None]`
//!   (partitions) or `[None, :]` (the free axis); a vector of the partition axis indexes the
//!   first dimension and one of the free axis the second;
//! - an index holds at most one vector, added to (or subtracted from) an affine expression;
//!   a vector times a number would be a strided access pattern, which nkc does not have;
//! - `mask=` is a conjunction of comparisons, each of one index vector (plus an affine offset)
//!   with an affine bound, or a name bound to such a conjunction. A comparison that holds over
//!   the whole box of loop bounds and vector ranges keeps every element and adds nothing (so a
//!   mask on a shape that divides into whole tiles changes no code); any other becomes a
//!   [`MaskBound`] on the partition (`[:, None]` vector) or free (`[None, :]`) index of the
//!   instruction's tile (`i * 128 + i_p < n` is `p < n - 128*i`). While a masked call is
//!   checked, its subscripts may reach past a tensor's end where the mask drops those elements
//!   ([`Checker::mask_keeps_in_bounds`]).

use super::consts::lin;
use super::error::CheckError;
use super::slices::range128;
use super::{Checker, Value};
use crate::ast::{BinOp, CmpOp, Expr, ExprKind, Index};
use penguin::{AffineExpr, MaskBound, TileDim};

/// One side of a mask comparison: its affine part and, when it holds an index vector, the
/// vector's length and axis.
type MaskSide = (AffineExpr, Option<(u64, Option<usize>)>);

/// A contiguous range of indices `start..start + len` along `axis` (0 for partitions, 1 for the
/// free axis; `None` for a 1-D `nl.arange` not yet placed); `start` is affine in the loop
/// variables (`ix = i * 128 + nl.arange(128)[:, None]`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IndexVec {
    pub start: AffineExpr,
    pub len: u64,
    pub axis: Option<usize>,
}

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

    /// An index vector: `nl.arange(...)`, optionally `[:, None]` / `[None, :]`, or a name.
    pub(crate) fn index_vec(&mut self, e: &Expr) -> Option<IndexVec> {
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
                if stop <= start || stop.abs_diff(start) > super::ops::MAX_EXTENT as u64 {
                    self.error(CheckError::ArangeRange {
                        start,
                        stop,
                        at: e.span.clone(),
                    });
                    return None;
                }
                Some(IndexVec {
                    start: AffineExpr::constant(start),
                    len: stop.abs_diff(start),
                    axis: None,
                })
            }
            ExprKind::Subscript { value, indices } => {
                let v = self.index_vec(value)?;
                let axis = match indices.as_slice() {
                    [Index::Slice {
                        lo: None, hi: None, ..
                    }, Index::Expr(n)]
                        if n.kind == ExprKind::None =>
                    {
                        0
                    }
                    [Index::Expr(n), Index::Slice {
                        lo: None, hi: None, ..
                    }] if n.kind == ExprKind::None => 1,
                    _ => {
                        self.error(CheckError::VectorPlacement { at: e.span.clone() });
                        return None;
                    }
                };
                if v.axis.is_some() {
                    self.error(CheckError::VectorPlacedTwice { at: e.span.clone() });
                    return None;
                }
                Some(IndexVec {
                    axis: Some(axis),
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

    /// `nl.mgrid[a:b, c:d]`: the partition and free index vectors.
    pub(crate) fn mgrid(&mut self, e: &Expr) -> Option<Vec<IndexVec>> {
        let ExprKind::Subscript { indices, .. } = &e.kind else {
            return None;
        };
        let mut out = Vec::new();
        for (axis, ix) in indices.iter().enumerate() {
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
            let stop = self.const_int(hi)?;
            if stop <= start || axis > 1 || stop.abs_diff(start) > super::ops::MAX_EXTENT as u64 {
                self.error(CheckError::MgridShape { at: ix.span() });
                return None;
            }
            out.push(IndexVec {
                start: AffineExpr::constant(start),
                len: stop.abs_diff(start),
                axis: Some(axis),
            });
        }
        Some(out)
    }

    /// Whether `e` is `nl.mgrid[...]`.
    pub(crate) fn is_mgrid(e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Subscript { value, .. } if matches!(&value.kind,
            ExprKind::Attribute { value: m, attr } if attr.name == "mgrid"
                && matches!(&m.kind, ExprKind::Name(n) if n == "nl")))
    }

    /// An index of dimension `dim` written with an index vector (`i * 128 + i_p`) or `nl.ds`:
    /// its start and size. `None` inside when the index is an ordinary one.
    pub(crate) fn vector_index(
        &mut self,
        e: &Expr,
        dim: usize,
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
        let v = self.offset_vector(e)?;
        if let Some(axis) = v.axis.filter(|&a| a != dim) {
            self.error(CheckError::VectorAxis {
                axis,
                dim,
                at: e.span.clone(),
            });
            return None;
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

    /// `affine + vector`, `vector + affine`, `vector - affine`: the one vector, shifted.
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
                    (false, true, BinOp::Add) => {
                        let a = self.affine(lhs);
                        let v = self.offset_vector(rhs);
                        self.shifted(v?, &a?, 1, e)
                    }
                    _ => self.unsupported_vector(e, "an index holds one index vector, added to an affine offset"),
                }
            }
            ExprKind::Binary { .. } | ExprKind::Unary { .. } => self.unsupported_vector(
                e,
                "a scaled or negated index vector is a strided access pattern, which nkc does not have",
            ),
            _ => self.index_vec(e),
        }
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
    pub(crate) fn mask(&mut self, cond: &Expr) -> Option<Vec<MaskBound>> {
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
                let mut a = a?;
                a.extend(b?);
                Some(a)
            }
            ExprKind::Name(n) => match self.lookup(n, &cond.span) {
                Value::Mask(bounds) => Some(bounds),
                Value::Bool(true) | Value::None => Some(Vec::new()),
                Value::Error => None,
                _ => {
                    self.error(CheckError::MaskNotComparison {
                        at: cond.span.clone(),
                    });
                    None
                }
            },
            ExprKind::Bool(true) | ExprKind::None => Some(Vec::new()),
            ExprKind::Compare { op, lhs, rhs } => {
                let a = self.mask_side(lhs);
                let b = self.mask_side(rhs);
                let (a, b) = (a?, b?);
                if self.mask_always_holds(*op, &a, &b) {
                    return Some(Vec::new());
                }
                self.mask_bounds(*op, a, b, cond)
            }
            ExprKind::Error => None,
            _ => {
                self.error(CheckError::MaskNotComparison {
                    at: cond.span.clone(),
                });
                None
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
        hi += a.1.map_or(0, |(len, _)| len as i128 - 1);
        lo -= b.1.map_or(0, |(len, _)| len as i128 - 1);
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
        let (axis, op, x) = match (a.1, b.1) {
            (Some((_, axis)), None) => (axis, op, lin(&b.0, 1, &a.0, -1)),
            (None, Some((_, axis))) => {
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
    /// that dimension keeps `lo + bound` within `0` (lower) or `extent` (upper) in every
    /// iteration. `violates_low` / `violates_high` say which side the plain check failed on.
    pub(crate) fn mask_keeps_in_bounds(
        &self,
        lo: &AffineExpr,
        dim: usize,
        extent: u64,
        violates_low: bool,
        violates_high: bool,
    ) -> bool {
        if self.active_mask.is_empty() || dim > 1 {
            return false;
        }
        let bounds = |a: penguin::Axis| {
            let l = self.loop_data(a);
            (l.lb, (l.ub - 1).max(l.lb))
        };
        let held = |lower: bool| {
            self.active_mask
                .iter()
                .filter(|b| b.dim.index() == dim && b.lower == lower)
                .any(|b| match lin(lo, 1, &b.bound, 1) {
                    Some(e) => {
                        let (min, max) = range128(&e, &bounds);
                        if lower {
                            min >= 0
                        } else {
                            max <= extent as i128
                        }
                    }
                    None => false,
                })
        };
        (!violates_low || held(true)) && (!violates_high || held(false))
    }

    /// One side of a mask comparison: its least value, affine, and the length and axis of its
    /// vector.
    fn mask_side(&mut self, e: &Expr) -> Option<MaskSide> {
        if self.is_vector_expr(e) {
            let v = self.offset_vector(e)?;
            Some((v.start, Some((v.len, v.axis))))
        } else {
            Some((self.affine(e)?, None))
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
            ExprKind::Name(n) => matches!(self.find(n).map(|b| &b.value), Some(Value::Mask(_))),
            _ => false,
        }
    }
}
