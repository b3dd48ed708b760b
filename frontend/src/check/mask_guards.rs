//! Mask conditions on loop indices alone: instruction guards.
//!
//! A comparison of affine values of loop indices with no index vector (`(2 * i + g) * 128 <
//! seqlen`, `i * 128 >= j * 512`) selects iterations, not elements: in an iteration where it
//! holds the call's instructions run whole, elsewhere they do not run at all (on the hardware,
//! an instruction predicate). Passed as `mask=` (alone or joined with `&` to bounds on index
//! vectors), it becomes guards of the pieces of the mask ([`MaskPiece::guards`]); the lowering
//! puts guarded instructions in statements of their own, whose predicates the interpreter, the
//! ISL model, the backend and the simulator all honour. The same comparison written as a value
//! (`causal = i * 128 >= j * 512`) is a mask value ([`Checker::guard_value`]), so it can be
//! named, joined with `&` and passed as `mask=` later; a Python `if` on it guards the
//! instructions of its branches (`if_guards.rs`), and any other truth test of it (`and`, `or`,
//! `assert`) has no value at compile time and stays a diagnostic (`E0212`).
//!
//! Rules: each guard is normalised to `Σ cᵢ·ivᵢ cmp b` with the coefficients' gcd divided out
//! (`2*i + g < 4`, `i >= 1`); a comparison that holds in every iteration of the loops' box adds
//! nothing, one that holds in none drops the piece; `!=` is the union of `<` and `>`.

use super::index_vec::{MaskPiece, MaskPieces};
use super::slices::range128;
use super::{Checker, Value};
use crate::ast::{CmpOp, Span};
use crate::codes;
use penguin::{AffineExpr, Axis, CmpOp as GuardCmp, Predicate};

/// Most points of the guarded loops enumerated to check a guarded call's subscripts.
const MAX_GUARD_POINTS: u64 = 1 << 16;

/// Each loop's range of values `(min, max)` in a box of iterations.
type LoopBox<'a> = &'a dyn Fn(Axis) -> (i64, i64);

/// Where a guard stands over the box of its loops' bounds.
enum Verdict {
    Always,
    Never,
    Sometimes(Predicate),
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Checker<'_> {
    /// The pieces of `a op b`, both affine in loop indices: `None` (reported) when `op` is not a
    /// comparison of numbers or an expression overflows.
    pub(crate) fn guard_pieces(
        &mut self,
        op: CmpOp,
        a: &AffineExpr,
        b: &AffineExpr,
        at: &Span,
    ) -> Option<MaskPieces> {
        let overflow = |cx: &mut Self| {
            cx.error(super::error::CheckError::IndexOverflow { at: at.clone() });
            None
        };
        // `a - b op 0`: `terms op' -c`.
        let Some(d) = super::arith::lin(a, 1, b, -1) else {
            return overflow(self);
        };
        let c = d.constant_term();
        let terms = AffineExpr::from_terms(d.terms().iter().copied(), 0);
        let Some(nc) = c.checked_neg() else {
            return overflow(self);
        };
        let Some(nc1) = nc.checked_add(1) else {
            return overflow(self);
        };
        // Each alternative is a conjunction of guards; the mask is their (disjoint) union.
        let alternatives: Vec<Vec<(GuardCmp, i64)>> = match op {
            CmpOp::Lt => vec![vec![(GuardCmp::Lt, nc)]],
            CmpOp::Le => vec![vec![(GuardCmp::Lt, nc1)]],
            CmpOp::Gt => vec![vec![(GuardCmp::Ge, nc1)]],
            CmpOp::Ge => vec![vec![(GuardCmp::Ge, nc)]],
            CmpOp::Eq | CmpOp::Is => vec![vec![(GuardCmp::Eq, nc)]],
            CmpOp::Ne | CmpOp::IsNot => vec![vec![(GuardCmp::Lt, nc)], vec![(GuardCmp::Ge, nc1)]],
            CmpOp::In | CmpOp::NotIn => {
                self.error(super::error::CheckError::MaskUnsupported {
                    why: "`in` is not a comparison of loop indices: compare with `<`, `<=`, `>`, `>=`, `==` or `!=`".into(),
                    at: at.clone(),
                });
                return None;
            }
        };
        let mut out = Vec::new();
        'alts: for alt in alternatives {
            let mut piece = MaskPiece::default();
            for (cmp, bound) in alt {
                match self.guard_verdict(&terms, cmp, bound) {
                    Verdict::Always => {}
                    Verdict::Never => continue 'alts,
                    Verdict::Sometimes(p) => piece.guards.push(p),
                }
            }
            out.push(piece);
        }
        Some(out)
    }

    /// `terms cmp bound` normalised (the coefficients' gcd divided out) and judged over the box
    /// of the loops' bounds.
    fn guard_verdict(&self, terms: &AffineExpr, cmp: GuardCmp, bound: i64) -> Verdict {
        let g = terms.terms().iter().fold(0, |g, &(_, k)| gcd(g, k));
        if g == 0 {
            // No loop index left: a constant comparison.
            let holds = match cmp {
                GuardCmp::Lt => 0 < bound,
                GuardCmp::Ge => 0 >= bound,
                GuardCmp::Eq => bound == 0,
            };
            return if holds {
                Verdict::Always
            } else {
                Verdict::Never
            };
        }
        let expr = AffineExpr::from_terms(terms.terms().iter().map(|&(a, k)| (a, k / g)), 0);
        let ceil = |b: i64| b.div_euclid(g) + i64::from(b.rem_euclid(g) != 0);
        let bound = match cmp {
            GuardCmp::Lt | GuardCmp::Ge => ceil(bound),
            GuardCmp::Eq if bound.rem_euclid(g) != 0 => return Verdict::Never,
            GuardCmp::Eq => bound / g,
        };
        let loops = |a: penguin::Axis| {
            let l = self.loop_data(a);
            (l.lb, (l.ub - 1).max(l.lb))
        };
        let (lo, hi) = range128(&expr, &loops);
        let b = i128::from(bound);
        let (always, never) = match cmp {
            GuardCmp::Lt => (hi < b, lo >= b),
            GuardCmp::Ge => (lo >= b, hi < b),
            GuardCmp::Eq => (lo == b && hi == b, b < lo || b > hi),
        };
        if always {
            Verdict::Always
        } else if never {
            Verdict::Never
        } else {
            Verdict::Sometimes(Predicate { expr, cmp, bound })
        }
    }

    /// `a op b` evaluated on two values, at least one an affine value of loop indices (and none
    /// of a `range` loop being tried as a hardware loop, whose comparison asks for unrolling):
    /// the mask value of that condition. `None` when the comparison is an ordinary one.
    pub(crate) fn guard_value(
        &mut self,
        op: CmpOp,
        a: &Value,
        b: &Value,
        at: &Span,
    ) -> Option<Option<Value>> {
        if matches!(op, CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
            return None;
        }
        let affine = |v: &Value| match v {
            Value::Int(x) => Some(x.clone()),
            Value::Iv(axis) => Some(AffineExpr::iv(*axis)),
            Value::Bool(x) => Some(AffineExpr::constant(i64::from(*x))),
            _ => None,
        };
        let (x, y) = (affine(a)?, affine(b)?);
        if x.as_constant().is_some() && y.as_constant().is_some() {
            return None;
        }
        if x.axes()
            .chain(y.axes())
            .any(|ax| self.soft_axes.contains(&ax))
        {
            return None;
        }
        Some(
            self.guard_pieces(op, &x, &y, at)
                .map(|p| match p.as_slice() {
                    // It holds in every iteration, or in none: Python's own value.
                    [] => Value::Bool(false),
                    [only] if *only == MaskPiece::default() => Value::Bool(true),
                    _ => Value::Mask(p),
                }),
        )
    }

    /// Whether `holds` holds for every box of loop values where the active guards (those of
    /// the masked call being checked) hold: each guarded loop fixed to one of the values that
    /// satisfy them, the others over their whole range. Without guards, the one box of every
    /// loop's range. False when the guards' loops have more than [`MAX_GUARD_POINTS`] points.
    pub(crate) fn all_guarded_boxes(&self, holds: &dyn Fn(LoopBox<'_>) -> bool) -> bool {
        let range = |a: Axis| {
            let l = self.loop_data(a);
            (l.lb, (l.ub - 1).max(l.lb))
        };
        if self.active_guards.is_empty() {
            return holds(&range);
        }
        let mut axes: Vec<Axis> = self
            .active_guards
            .iter()
            .flat_map(|g| g.expr.axes())
            .collect();
        axes.sort();
        axes.dedup();
        let mut count: u64 = 1;
        for &a in &axes {
            let (lo, hi) = range(a);
            count = count.saturating_mul((hi - lo + 1).max(0) as u64);
        }
        if count > MAX_GUARD_POINTS {
            return false;
        }
        let mut point: Vec<i64> = axes.iter().map(|&a| range(a).0).collect();
        for _ in 0..count {
            let fixed = |a: Axis| match axes.iter().position(|&x| x == a) {
                Some(k) => (point[k], point[k]),
                None => range(a),
            };
            let guard_holds = |g: &Predicate| {
                let v = g.expr.range(fixed).0;
                match g.cmp {
                    GuardCmp::Ge => v >= g.bound,
                    GuardCmp::Lt => v < g.bound,
                    GuardCmp::Eq => v == g.bound,
                }
            };
            if self.active_guards.iter().all(guard_holds) && !holds(&fixed) {
                return false;
            }
            // The next point, the last axis fastest.
            for k in (0..axes.len()).rev() {
                if point[k] < range(axes[k]).1 {
                    point[k] += 1;
                    break;
                }
                point[k] = range(axes[k]).0;
            }
        }
        true
    }

    /// Whether `e` is a condition of loop indices alone: names bound to masks with no bound on
    /// an index vector, comparisons of values, joined with `&`, `|` or `and` / `or`.
    pub(crate) fn is_guard_expr(&self, e: &crate::ast::Expr) -> bool {
        use crate::ast::{BinOp, ExprKind};
        match &e.kind {
            ExprKind::Name(n) => match self.find(n).map(|b| &b.value) {
                Some(Value::Mask(p)) => p.iter().all(|p| p.bounds.is_empty()),
                _ => !self.traced(e),
            },
            ExprKind::Binary {
                op: BinOp::BitAnd | BinOp::BitOr,
                lhs,
                rhs,
            }
            | ExprKind::BoolOp { lhs, rhs, .. } => {
                self.is_guard_expr(lhs) && self.is_guard_expr(rhs)
            }
            ExprKind::Compare { lhs, rhs, .. } => !self.traced(lhs) && !self.traced(rhs),
            _ => !self.traced(e),
        }
    }

    /// A truth test other than `if` (`and`, `or`, `assert`, `bool(...)`) on a condition of loop
    /// indices alone (`pieces`): it has no value at compile time (`E0212`), with what to write
    /// instead.
    pub(crate) fn guard_condition(&mut self, pieces: &MaskPieces, at: &crate::ast::Expr) {
        let guard = pieces.iter().flat_map(|p| p.guards.first()).next();
        let (shown, axis) = match guard {
            Some(g) => (
                format!("{} {} {}", self.show(&g.expr), g.cmp.symbol(), g.bound),
                g.expr.terms().first().map(|t| t.0),
            ),
            None => ("the condition".to_string(), None),
        };
        let (iv, range) = match axis {
            Some(a) => {
                let l = self.loop_data(a);
                let range = match l.kind {
                    penguin::LoopKind::Sequential => "nl.sequential_range",
                    penguin::LoopKind::Range => "range",
                    _ => "nl.affine_range",
                };
                (l.iv.clone(), range)
            }
            None => ("i".to_string(), "nl.affine_range"),
        };
        self.raise(
            codes::LOOP_INDEX_VALUE,
            format!("`{shown}` has no value at compile time: `{iv}` is the index of a `{range}` loop, which runs on the device"),
            &at.span,
        );
        if let Some(last) = self.errors.last_mut() {
            last.notes.push(format!(
                "help: to run calls only in the iterations where the condition holds, test it with `if cond:` (or pass it as a call's mask, `nl.exp(t, mask=cond)`) and join conditions with `&`; to run Python for each value of `{iv}`, iterate `nl.static_range(...)` instead"
            ));
        }
    }
}

/// The guards of a mask when every piece has the same ones (empty otherwise, or when none).
pub(crate) fn common_guards(pieces: &MaskPieces) -> Vec<Predicate> {
    match pieces.split_first() {
        Some((first, rest)) if rest.iter().all(|p| p.guards == first.guards) => {
            first.guards.clone()
        }
        _ => Vec::new(),
    }
}
