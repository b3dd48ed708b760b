//! Statements whose access patterns the machine cannot take in one instruction, run once per
//! value of some axes of their index grid.
//!
//! A subscript's access pattern ([`super::patterns`], [`super::patterns_nd`]) takes positive
//! steps and at most 4 free axes. A statement over an index grid may ask for more: a reversed
//! axis (`in_tile[i_p, i_y + (1 - i_x)]`, step -1 along `i_x`) or more free axes than 4 (a grid
//! of 7 axes over a 4-D tile). Such an axis of the grid is *unrolled*: the statement is traced
//! once per value `j` of the axis, with every index vector along it replaced by its value there
//! (`start + j·step`, a vector of one element), so each copy's patterns lose that axis. Every
//! operand and the destination indexed by the grid lose it together, so the copies together
//! write what the statement does.
//!
//! Which axes: before tracing, every subscript of the statement that an index vector indexes is
//! read without diagnostics ([`Checker::unroll_plan`]); a refusal that unrolling cures names an
//! axis ([`UnrollAxesData::hint`]: a reversed axis, else the outermost free axis of a pattern of
//! too many), which is fixed, and the subscripts are read again, until all are accepted. A
//! statement that needs no unrolling is traced exactly as before; one that more than
//! [`MAX_COPIES`] copies would not cure keeps its diagnostic.
//!
//! Invariants: the fixed axes are never the partition axis (axis 0) of a grid; they are set
//! only while one statement is traced and empty otherwise.

use super::arith::lin;
use super::index_vec::{IndexVec, VecTerm};
use super::{Checker, Value};
use crate::ast::{Expr, ExprKind, Index, Stmt, StmtKind, Target};
use penguin::AffineExpr;

/// Most copies of one statement.
pub(super) const MAX_COPIES: u64 = 64;

/// The axes being unrolled, and what the last refused subscript asked for.
#[derive(Default)]
pub(crate) struct UnrollAxesData {
    /// `(ndim, axis, j)`: index vectors along `axis` of an `ndim`-axis grid are at index `j`.
    pub fixed: Vec<(usize, usize, u64)>,
    /// `(ndim, axis, count)`: an axis whose unrolling would cure the last refusal.
    pub hint: Option<(usize, usize, u64)>,
}

impl Checker<'_> {
    /// `v` with its vectors along fixed axes at their fixed index.
    pub(super) fn fix_vector(&self, v: IndexVec) -> IndexVec {
        let fixed = &self.unroll.fixed;
        if fixed.is_empty() {
            return v;
        }
        let mut start = v.start.clone();
        let mut kept: Vec<(i64, u64, Option<usize>, usize)> = Vec::new();
        for (step, len, axis, ndim) in v.terms() {
            let at = axis.and_then(|a| fixed.iter().find(|f| f.0 == ndim && f.1 == a));
            match at {
                Some(&(_, _, j)) if j < len => {
                    let off = step.checked_mul(j as i64);
                    match off.and_then(|o| lin(&start, 1, &AffineExpr::constant(o), 1)) {
                        Some(s) => start = s,
                        None => return v,
                    }
                }
                _ => kept.push((step, len, axis, ndim)),
            }
        }
        if kept.len() == v.extra.len() + 1 {
            return v;
        }
        let Some((&(step, len, axis, ndim), rest)) = kept.split_first() else {
            return IndexVec {
                start,
                len: 1,
                step: 1,
                extra: Vec::new(),
                ..v
            };
        };
        IndexVec {
            start,
            len,
            axis,
            step,
            ndim,
            extra: rest
                .iter()
                .map(|&(step, len, axis, ndim)| VecTerm {
                    len,
                    axis,
                    step,
                    ndim,
                })
                .collect(),
        }
    }

    /// Records that unrolling the axis of a vector term (`ndim`, `key`, `count`) would cure a
    /// refused pattern (never the partition axis, nor a slice's).
    pub(super) fn hint_unroll(&mut self, ndim: Option<usize>, key: usize, count: u64) {
        if let Some(ndim) = ndim.filter(|_| key > 0 && count > 1) {
            self.unroll.hint.get_or_insert((ndim, key, count));
        }
    }

    /// The axes to unroll statement `s` over, `(ndim, axis, count)`: empty when it needs none
    /// or unrolling does not cure it (then it is traced as written, and diagnosed).
    pub(super) fn unroll_plan(&mut self, s: &Stmt) -> Vec<(usize, usize, u64)> {
        let mut subs: Vec<Sub<'_>> = Vec::new();
        match &s.kind {
            StmtKind::Assign {
                target:
                    Target::Subscript {
                        base,
                        indices,
                        span,
                    },
                value,
            } => {
                subs.push((&base.name, indices, span));
                subscripts(value, &mut subs);
            }
            StmtKind::Expr(e) => subscripts(e, &mut subs),
            _ => return Vec::new(),
        }
        subs.retain(|&(name, ix, _)| {
            matches!(
                self.find(name).map(|b| &b.value),
                Some(Value::Tile(_) | Value::Param(_))
            ) && ix
                .iter()
                .any(|i| matches!(i, Index::Expr(e) if self.is_vector_expr(e)))
        });
        if subs.is_empty() {
            return Vec::new();
        }
        // Reading without diagnostics must not mark a name as reported: the statement's own
        // tracing reports it.
        let reported = (self.reported.clone(), self.unrun_uses, self.unrun_undefined);
        let plan = self.unroll_plan_quiet(subs);
        (self.reported, self.unrun_uses, self.unrun_undefined) = reported;
        plan
    }

    /// [`Checker::unroll_plan`] over the subscripts `subs`, read without diagnostics.
    fn unroll_plan_quiet(&mut self, mut subs: Vec<Sub<'_>>) -> Vec<(usize, usize, u64)> {
        // Only subscripts by an index vector that reverses an axis or comes from a grid of
        // more than 5 axes can be refused for what unrolling cures.
        let n = self.errors.len();
        subs.retain(|&(_, ix, _)| {
            ix.iter().any(|i| match i {
                Index::Expr(e) if self.is_vector_expr(e) => self.peek_vector(e).is_some_and(|v| {
                    v.terms()
                        .iter()
                        .any(|&(step, len, _, ndim)| (step < 0 && len > 1) || ndim > 5)
                }),
                _ => false,
            })
        });
        self.errors.truncate(n);
        if subs.is_empty() {
            return Vec::new();
        }
        let mut plan: Vec<(usize, usize, u64)> = Vec::new();
        let copies = |p: &[(usize, usize, u64)]| p.iter().fold(1u64, |a, x| a.saturating_mul(x.2));
        let cured = loop {
            self.unroll.fixed = plan.iter().map(|&(n, a, _)| (n, a, 0)).collect();
            self.unroll.hint = None;
            let n = self.errors.len();
            for &(name, indices, span) in &subs {
                if let Some(base) = self.tile_of_name(name, span) {
                    let _ = self.subscript(&base, name, indices, span);
                }
            }
            self.errors.truncate(n);
            match self.unroll.hint.take() {
                None => break true,
                Some(h) if !plan.iter().any(|p| (p.0, p.1) == (h.0, h.1)) => {
                    plan.push(h);
                    if copies(&plan) > MAX_COPIES {
                        break false;
                    }
                }
                Some(_) => break false,
            }
        };
        self.unroll.fixed.clear();
        if cured {
            plan
        } else {
            Vec::new()
        }
    }

    /// Every combination of indices of the axes of `plan`, as fixed axes.
    pub(super) fn unroll_copies(plan: &[(usize, usize, u64)]) -> Vec<Vec<(usize, usize, u64)>> {
        let mut out: Vec<Vec<(usize, usize, u64)>> = vec![Vec::new()];
        for &(n, a, count) in plan {
            out = out
                .iter()
                .flat_map(|c| {
                    (0..count).map(move |j| {
                        let mut c = c.clone();
                        c.push((n, a, j));
                        c
                    })
                })
                .collect();
        }
        out
    }
}

/// A subscript of a name: `(name, indices, span)`.
type Sub<'e> = (&'e str, &'e [Index], &'e crate::ast::Span);

/// The subscripts of names in `e`.
fn subscripts<'e>(e: &'e Expr, out: &mut Vec<Sub<'e>>) {
    match &e.kind {
        ExprKind::Subscript { value, indices } => {
            if let ExprKind::Name(n) = &value.kind {
                out.push((n, indices, &e.span));
            }
        }
        ExprKind::Call { func, args, kwargs } => {
            subscripts(func, out);
            for a in args {
                subscripts(a, out);
            }
            for k in kwargs {
                subscripts(&k.value, out);
            }
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            subscripts(lhs, out);
            subscripts(rhs, out);
        }
        ExprKind::Unary { operand, .. } => subscripts(operand, out),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            for i in items {
                subscripts(i, out);
            }
        }
        ExprKind::IfExp { test, body, orelse } => {
            subscripts(test, out);
            subscripts(body, out);
            subscripts(orelse, out);
        }
        _ => {}
    }
}
