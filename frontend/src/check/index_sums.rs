//! An index read as an affine start plus terms: the reading both access-pattern files share
//! (`patterns` for 2-D tiles, `patterns_nd` for tensors of any number of dimensions).
//!
//! [`Checker::index_sum`] turns one index of a subscript (a slice with a step, an index-vector
//! expression with constant coefficients, `nl.ds`) into a [`Sum`]: its least value, affine in the
//! loop variables, and its [`Term`]s, each `count` indices `step` elements apart, keyed by the
//! value axis it spans (a vector's axis in its grid, a stepped slice's position in the subscript).
//! [`Checker::needs_pattern`] says whether an index needs that reading at all (a plain box is left
//! to `slices`).
//!
//! Invariant: a `Sum` is built with checked arithmetic (an overflow is a diagnostic); its terms
//! are in the order the index names them, not merged.

use super::arith::lin;
use super::error::CheckError;
use super::index_vec::IndexVec;
use super::Checker;
use crate::ast::{BinOp, Expr, ExprKind, Index, Span, UnaryOp};
use penguin::AffineExpr;

/// Help for a 2-D pattern nkc refuses (`patterns`), and for an index this reading refuses.
pub(super) const HELP: &str = "index the partitions with a unit-step range (`i_p`, `lo:hi`) and the free axis with sums of index vectors or slices whose steps are positive constants, at most 4 free axes";

/// One term of an index: `count` indices `step` apart, spanning value axis `key`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Term {
    pub key: usize,
    pub count: u64,
    pub step: i64,
    /// The number of axes of the index grid of the vector it comes from (`None`: a slice).
    pub grid: Option<usize>,
}

/// An index as an affine start plus terms.
#[derive(Clone, Debug)]
pub(super) struct Sum {
    pub start: AffineExpr,
    pub terms: Vec<Term>,
}

impl Sum {
    fn constant(start: AffineExpr) -> Sum {
        Sum {
            start,
            terms: Vec::new(),
        }
    }
}

impl Checker<'_> {
    /// Reports an access pattern nkc refuses (`why`, with `help` saying what to write) and gives
    /// `None`: the one refusal both pattern files make.
    pub(super) fn refuse_pattern<T>(
        &mut self,
        why: String,
        help: &'static str,
        at: &Span,
    ) -> Option<T> {
        self.error(CheckError::AccessPattern {
            why,
            help,
            at: at.clone(),
        });
        None
    }

    /// Whether an index needs a pattern: a slice with a step, or an index-vector expression
    /// that is not one unit-step vector plus an offset.
    pub(super) fn needs_pattern(&mut self, ix: &Index) -> bool {
        match ix {
            Index::Slice { step, .. } => step.is_some(),
            Index::Expr(e) if self.is_vector_expr(e) => {
                !self.is_one_vector(e)
                    || self
                        .peek_vector(e)
                        .is_some_and(|v| !v.extra.is_empty() || (v.step != 1 && v.len > 1))
            }
            Index::Expr(_) => false,
        }
    }

    /// The index vector an expression evaluates to, without diagnostics: `None` when it is not
    /// one (the caller's own evaluation then reports why).
    pub(super) fn peek_vector(&mut self, e: &Expr) -> Option<IndexVec> {
        let n = self.errors.len();
        let v = self.offset_vector(e);
        self.errors.truncate(n);
        v
    }

    /// One index as a sum: a slice (with or without a step), a vector sum, or an affine integer.
    pub(super) fn index_sum(&mut self, ix: &Index, dim: usize, extent: u64) -> Option<Sum> {
        match ix {
            // `nl.ds(start, size)`: the unit-step range it names.
            Index::Expr(e) if is_ds(e) => {
                let (start, count) = self.vector_index(e, dim.min(1), dim)??;
                Some(Sum {
                    start,
                    terms: vec![Term {
                        key: dim,
                        count,
                        step: 1,
                        grid: None,
                    }],
                })
            }
            Index::Slice { lo, hi, step, span } => {
                let l = lo.as_ref().map(|e| self.affine(e));
                let h = hi.as_ref().map(|e| self.affine(e));
                let st = match step {
                    Some(e) => self.const_int(e)?,
                    None => 1,
                };
                let l = l.unwrap_or(Some(AffineExpr::constant(0)))?;
                let h = h.unwrap_or(Some(AffineExpr::constant(extent as i64)))?;
                let Some(size) = lin(&h, 1, &l, -1).and_then(|d| d.as_constant()) else {
                    let shown = lin(&h, 1, &l, -1)
                        .map(|d| self.show(&d))
                        .unwrap_or_default();
                    self.error(CheckError::SliceSizeNotConst {
                        shown,
                        at: span.clone(),
                    });
                    return None;
                };
                if st <= 0 {
                    self.error(CheckError::AccessPattern {
                        why: format!("a slice with step {st}: nkc takes positive steps"),
                        help: HELP,
                        at: span.clone(),
                    });
                    return None;
                }
                if size <= 0 {
                    self.error(CheckError::EmptySlice {
                        size,
                        at: span.clone(),
                    });
                    return None;
                }
                let count = (size as u64).div_ceil(st as u64);
                Some(Sum {
                    start: l,
                    terms: vec![Term {
                        key: dim,
                        count,
                        step: st,
                        grid: None,
                    }],
                })
            }
            Index::Expr(e) if self.is_vector_expr(e) => self.vector_sum(e, dim),
            Index::Expr(e) => Some(Sum::constant(self.affine(e)?)),
        }
    }

    /// An index-vector expression as a sum of vectors with integer coefficients plus an affine
    /// offset; `dim` keys a vector of 1 or 2 axes.
    fn vector_sum(&mut self, e: &Expr, dim: usize) -> Option<Sum> {
        match &e.kind {
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub),
                lhs,
                rhs,
            } => {
                let a = self.pattern_sum_side(lhs, dim);
                let b = self.pattern_sum_side(rhs, dim);
                let k = if *op == BinOp::Add { 1 } else { -1 };
                let (a, b) = (a?, b?);
                let b = self.scale_sum(b, k, e)?;
                let Some(start) = lin(&a.start, 1, &b.start, 1) else {
                    self.error(CheckError::IndexOverflow { at: e.span.clone() });
                    return None;
                };
                let mut terms = a.terms;
                terms.extend(b.terms);
                Some(Sum { start, terms })
            }
            ExprKind::Binary {
                op: BinOp::Mul,
                lhs,
                rhs,
            } => {
                let (v, k) = match (self.is_vector_expr(lhs), self.is_vector_expr(rhs)) {
                    (true, false) => (lhs, rhs),
                    (false, true) => (rhs, lhs),
                    // The diagnostics of `vectors` (a product of two vectors).
                    _ => return self.offset_vector(e).and(None),
                };
                let v = self.vector_sum(v, dim);
                let k = self.const_int(k);
                self.scale_sum(v?, k?, e)
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let v = self.vector_sum(operand, dim)?;
                self.scale_sum(v, -1, e)
            }
            ExprKind::Unary {
                op: UnaryOp::Pos,
                operand,
            } => self.vector_sum(operand, dim),
            ExprKind::Binary { .. } => self.offset_vector(e).and(None),
            _ => {
                // A name may hold a sum of vectors (`i_w = 2 * i_o + i_k`): every term.
                let v: IndexVec = self.index_vec(e)?;
                let terms = v
                    .terms()
                    .into_iter()
                    .map(|(step, count, axis, ndim)| Term {
                        key: axis.unwrap_or(dim),
                        count,
                        step,
                        grid: axis.map(|_| ndim),
                    })
                    .collect();
                Some(Sum {
                    start: v.start.clone(),
                    terms,
                })
            }
        }
    }

    fn pattern_sum_side(&mut self, e: &Expr, dim: usize) -> Option<Sum> {
        if self.is_vector_expr(e) {
            self.vector_sum(e, dim)
        } else {
            Some(Sum::constant(self.affine(e)?))
        }
    }

    fn scale_sum(&mut self, s: Sum, k: i64, e: &Expr) -> Option<Sum> {
        let start = lin(&s.start, k, &AffineExpr::constant(0), 0);
        let terms: Option<Vec<Term>> = s
            .terms
            .iter()
            .map(|t| t.step.checked_mul(k).map(|step| Term { step, ..*t }))
            .collect();
        match (start, terms) {
            (Some(start), Some(terms)) => Some(Sum { start, terms }),
            _ => {
                self.error(CheckError::IndexOverflow { at: e.span.clone() });
                None
            }
        }
    }
}

impl Checker<'_> {
    /// Whether an index-vector expression holds at most one vector, with unit coefficient (then
    /// `vectors` takes it as a box, or reports it).
    fn is_one_vector(&self, e: &Expr) -> bool {
        let (n, scaled) = self.pattern_vector_count(e);
        n <= 1 && !scaled
    }

    /// The number of vectors an index expression adds, and whether one is scaled.
    fn pattern_vector_count(&self, e: &Expr) -> (usize, bool) {
        match &e.kind {
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub,
                lhs,
                rhs,
            } => {
                let (a, sa) = self.pattern_vector_count(lhs);
                let (b, sb) = self.pattern_vector_count(rhs);
                (a + b, sa || sb)
            }
            ExprKind::Binary {
                op: BinOp::Mul,
                lhs,
                rhs,
            } => {
                let (a, _) = self.pattern_vector_count(lhs);
                let (b, _) = self.pattern_vector_count(rhs);
                (a + b, a + b > 0)
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let (a, _) = self.pattern_vector_count(operand);
                (a, a > 0)
            }
            ExprKind::Unary { operand, .. } => self.pattern_vector_count(operand),
            _ => (usize::from(self.is_vector_expr(e)), false),
        }
    }
}

/// Whether `e` is `nl.ds(...)`.
pub(super) fn is_ds(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, .. } if func.attr_of(&["nl"]) == Some("ds"))
}
