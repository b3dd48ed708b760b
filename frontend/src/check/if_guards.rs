//! A Python `if` on a condition of device loop indices alone: a guarded block.
//!
//! `if i * 128 >= j * 512:` inside `nl.affine_range` loops has no value at compile time
//! (`mask_guards.rs` makes the condition a mask of guards only). The tracer runs the body once,
//! as NKI's does, and every device instruction the body makes (nested calls, helper bodies,
//! inner loops) is guarded by the condition, joined with any enclosing guard and with the
//! instruction's own mask: in an iteration where the condition fails, the block does nothing.
//! `else` (and `elif`) runs once too, guarded by the negation: the negation of a conjunction of
//! guards is a union of disjoint conjunctions, and each is one more copy of the branch's
//! instructions (at most [`MAX_MASK_PIECES`] copies in all, with the enclosing guarded branches;
//! past that, a diagnostic).
//!
//! Python side effects happen as the tracer runs each branch (both run). A tile created inside a
//! guarded branch exists only in the iterations the guard admits: every instruction that reads
//! it must carry that branch's guards ([`Checker::check_guarded_reads`] reports a read that
//! does not, after the whole kernel is traced). Tiles created before the `if` and written in it
//! keep their earlier contents elsewhere, as on the device. `while` on such a condition, and a
//! `break`, `continue` or `return` inside a guarded branch, are diagnostics with what to write
//! instead.

use super::index_vec::{MaskPieces, MAX_MASK_PIECES};
use super::{CStmt, CStmtKind, Checker};
use crate::ast::{Span, Stmt};
use crate::codes;
use penguin::{AffineExpr, CmpOp, Predicate, Tensor};
use std::collections::HashMap;

/// One alternative of a condition: a conjunction of guards (empty: every iteration).
type Conj = Vec<Predicate>;

/// What the guarded `if`s of a kernel leave for later checks.
#[derive(Default)]
pub(crate) struct IfGuardsData {
    /// The number of copies the enclosing guarded branches make of an instruction (0: none
    /// open, that is one copy).
    pub(super) copies: usize,
    /// Each tile created inside a guarded branch: the alternatives of guards (one of which a
    /// read must carry) and the condition's span.
    created: HashMap<Tensor, (Vec<Conj>, Span)>,
}

impl IfGuardsData {
    /// Forgets the tiles numbered from `tensors` on (a traced attempt rolled back).
    pub(crate) fn truncate(&mut self, tensors: usize) {
        self.created.retain(|t, _| (t.as_u32() as usize) < tensors);
    }
}

impl Checker<'_> {
    /// `if test: body else: orelse` where `test` is the guard-only mask `pieces` (`negated`:
    /// `not` of it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exec_guarded_if(
        &mut self,
        pieces: &MaskPieces,
        negated: bool,
        test: &crate::ast::Expr,
        body: &[Stmt],
        orelse: &[Stmt],
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> super::stmts::Flow {
        use super::stmts::Flow;
        let holds: Vec<Conj> = pieces
            .iter()
            .filter_map(|p| self.simplify(p.guards.clone()))
            .collect();
        let (then, otherwise) = if negated {
            (self.negate_guards(&holds), holds)
        } else if orelse.is_empty() {
            (holds, Vec::new())
        } else {
            let fails = self.negate_guards(&holds);
            (holds, fails)
        };
        if !self.exec_guarded_branch(&then, test, body, out, in_loop) {
            return Flow::Stop;
        }
        if !orelse.is_empty() && !self.exec_guarded_branch(&otherwise, test, orelse, out, in_loop) {
            return Flow::Stop;
        }
        Flow::Next
    }

    /// Runs `body` with its instructions guarded by the union of `alts`: false when it stopped
    /// (reported).
    fn exec_guarded_branch(
        &mut self,
        alts: &[Conj],
        test: &crate::ast::Expr,
        body: &[Stmt],
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> bool {
        use super::stmts::Flow;
        let copies = self.if_guards.copies.max(1).saturating_mul(alts.len());
        if copies > MAX_MASK_PIECES {
            self.raise(
                codes::LOOP_INDEX_VALUE,
                format!("this condition of device loop indices splits the iterations of this branch into {} disjoint pieces: {copies} copies of its instructions with the enclosing guarded branches, more than {MAX_MASK_PIECES}", alts.len()),
                &test.span,
            );
            if let Some(last) = self.errors.last_mut() {
                last.notes.push("help: each `!=` (and the `else` of each `<`, `>=` or `==` in a conjunction) is one more piece: write the cases as separate `if`s on conjunctions of `<`, `>=` and `==` (`if (i < 1) & (j >= 2):`), or iterate `nl.static_range(...)` to decide in Python".into());
            }
            return false;
        }
        self.flush(out);
        let start = out.len();
        let tensors = self.tensors.len();
        let prev_copies = std::mem::replace(&mut self.if_guards.copies, copies);
        let prev_guards = self.active_guards.clone();
        if let [only] = alts {
            self.active_guards.extend(only.iter().cloned());
        }
        let flow = self.exec_block(body, out, in_loop);
        self.flush(out);
        self.active_guards = prev_guards;
        self.if_guards.copies = prev_copies;
        let what = match &flow {
            Flow::Next => None,
            Flow::Stop => return false,
            Flow::Break => Some("a `break`"),
            Flow::Continue => Some("a `continue`"),
            Flow::Return(..) => Some("a `return`"),
        };
        if let Some(what) = what {
            self.raise(
                codes::LOOP_INDEX_VALUE,
                format!("{what} under a condition of device loop indices: the condition has no value at compile time, so the loop cannot stop early"),
                &test.span,
            );
            if let Some(last) = self.errors.last_mut() {
                last.notes.push("help: guard the rest of the loop's body by the negated condition instead (`if not_done:` around it), or iterate `nl.static_range(...)` to decide in Python".into());
            }
            return false;
        }
        let mut stmts = out.split_off(start);
        guard_stmts(&mut stmts, alts);
        out.extend(stmts);
        // A tile of an inner guarded branch needs both branches' guards.
        for t in tensors..self.tensors.len() {
            let entry = self
                .if_guards
                .created
                .entry(Tensor::from_u32(t as u32))
                .or_insert_with(|| (vec![Vec::new()], test.span.clone()));
            entry.0 = alts
                .iter()
                .flat_map(|a| entry.0.iter().map(move |b| [&a[..], &b[..]].concat()))
                .collect();
        }
        true
    }

    /// The complement of the union of `alts` (disjoint conjunctions), as disjoint conjunctions:
    /// infeasible ones dropped, each simplified over the loops' box.
    fn negate_guards(&self, alts: &[Conj]) -> Vec<Conj> {
        let mut acc: Vec<Conj> = vec![Vec::new()];
        for conj in alts {
            // not (g1 and g2 and ...) = not g1, or g1 and not g2, or ...: disjoint.
            let mut not_conj: Vec<Conj> = Vec::new();
            for (k, g) in conj.iter().enumerate() {
                for n in negate(g) {
                    let mut c: Conj = conj[..k].to_vec();
                    c.push(n);
                    not_conj.push(c);
                }
            }
            acc = acc
                .iter()
                .flat_map(|a| not_conj.iter().map(move |b| [&a[..], &b[..]].concat()))
                .filter_map(|c| self.simplify(c))
                .collect();
        }
        acc
    }

    /// `conj` with its guards on one expression joined into at most two, those that always
    /// hold in the loops' box dropped: `None` when it holds in no iteration.
    fn simplify(&self, conj: Conj) -> Option<Conj> {
        let mut exprs: Vec<(AffineExpr, i128, i128)> = Vec::new();
        for g in conj {
            let at = match exprs.iter().position(|(e, ..)| *e == g.expr) {
                Some(k) => k,
                None => {
                    let loops = |a: penguin::Axis| {
                        let l = self.loop_data(a);
                        (l.lb, (l.ub - 1).max(l.lb))
                    };
                    let (lo, hi) = super::slices::range128(&g.expr, &loops);
                    exprs.push((g.expr.clone(), lo, hi + 1));
                    exprs.len() - 1
                }
            };
            let (_, lo, hi) = &mut exprs[at];
            let b = i128::from(g.bound);
            match g.cmp {
                CmpOp::Lt => *hi = (*hi).min(b),
                CmpOp::Ge => *lo = (*lo).max(b),
                CmpOp::Eq => {
                    *lo = (*lo).max(b);
                    *hi = (*hi).min(b + 1);
                }
            }
        }
        let mut out = Vec::new();
        for (expr, lo, hi) in exprs {
            if lo >= hi {
                return None;
            }
            let loops = |a: penguin::Axis| {
                let l = self.loop_data(a);
                (l.lb, (l.ub - 1).max(l.lb))
            };
            let (min, max) = super::slices::range128(&expr, &loops);
            let bound = |v: i128| i64::try_from(v).expect("a bound between two guards' bounds");
            if lo + 1 == hi && (lo > min || hi <= max) {
                out.push(Predicate {
                    expr,
                    cmp: CmpOp::Eq,
                    bound: bound(lo),
                });
                continue;
            }
            if lo > min {
                out.push(Predicate {
                    expr: expr.clone(),
                    cmp: CmpOp::Ge,
                    bound: bound(lo),
                });
            }
            if hi <= max {
                out.push(Predicate {
                    expr,
                    cmp: CmpOp::Lt,
                    bound: bound(hi),
                });
            }
        }
        Some(out)
    }

    /// `while` on a condition of device loop indices alone: reported, with what to write.
    pub(crate) fn while_guard(&mut self, test: &crate::ast::Expr) {
        self.raise(
            codes::LOOP_INDEX_VALUE,
            "`while` on a condition of device loop indices: the condition has no value at compile time, so the tracer cannot tell how often to run the body".to_string(),
            &test.span,
        );
        if let Some(last) = self.errors.last_mut() {
            last.notes.push("help: write `if` on the condition (its body runs only in the iterations where it holds), or loop over `nl.static_range(...)` to decide in Python".into());
        }
    }

    /// `a or b or ...` of conjunctions, as the user would write it.
    fn show_alts(&self, alts: &[Conj]) -> String {
        let conj = |c: &Conj| {
            c.iter()
                .map(|g| format!("{} {} {}", self.show(&g.expr), g.cmp.symbol(), g.bound))
                .collect::<Vec<_>>()
                .join(" and ")
        };
        alts.iter().map(conj).collect::<Vec<_>>().join(" or ")
    }

    /// Reports every instruction of `body` (the traced kernel) that reads a tile created inside
    /// a guarded branch without carrying that branch's guards: in the iterations the guard
    /// excludes, nothing wrote the tile.
    pub(crate) fn check_guarded_reads(&mut self, body: &[CStmt]) {
        if self.if_guards.created.is_empty() {
            return;
        }
        let mut bad: Vec<(Span, Tensor)> = Vec::new();
        visit_insts(body, &mut |inst| {
            for src in &inst.srcs {
                if let Some((alts, _)) = self.if_guards.created.get(&src.tensor) {
                    let covered = alts
                        .iter()
                        .any(|alt| alt.iter().all(|g| inst.guards.contains(g)));
                    if !covered && !bad.iter().any(|(s, t)| *s == inst.span && *t == src.tensor) {
                        bad.push((inst.span.clone(), src.tensor));
                    }
                }
            }
        });
        for (at, t) in bad {
            let (alts, cond) = self.if_guards.created[&t].clone();
            let shown = self.show_alts(&alts);
            let e = crate::diagnostic::Error::new(
                codes::LOOP_INDEX_VALUE,
                format!("this reads a tile created under `if {shown}`, in iterations where the condition may not hold and nothing wrote the tile"),
                at,
            )
            .with_label("reads the tile outside the condition")
            .with_secondary(cond, "the tile is created in a branch of this condition")
            .with_help("read it under the same condition (put the use inside the `if`), or create the tile before the `if` so it has a value in every iteration");
            self.error(e);
        }
    }
}

/// The negation of one guard, as disjoint guards.
fn negate(g: &Predicate) -> Vec<Predicate> {
    let with = |cmp, bound| Predicate {
        expr: g.expr.clone(),
        cmp,
        bound,
    };
    match g.cmp {
        CmpOp::Lt => vec![with(CmpOp::Ge, g.bound)],
        CmpOp::Ge => vec![with(CmpOp::Lt, g.bound)],
        CmpOp::Eq => vec![
            with(CmpOp::Lt, g.bound),
            with(CmpOp::Ge, g.bound.saturating_add(1)),
        ],
    }
}

/// Guards every instruction of `stmts` (inner loops included) by the union of `alts`: one copy
/// of a statement's instructions per alternative, in order.
fn guard_stmts(stmts: &mut [CStmt], alts: &[Conj]) {
    for s in stmts {
        match &mut s.kind {
            CStmtKind::Insts(insts) => {
                let orig = std::mem::take(insts);
                for alt in alts {
                    for i in &orig {
                        let mut i = i.clone();
                        for g in alt {
                            if !i.guards.contains(g) {
                                i.guards.push(g.clone());
                            }
                        }
                        insts.push(i);
                    }
                }
            }
            CStmtKind::Loop { body, .. } => guard_stmts(body, alts),
        }
    }
}

/// Calls `f` on every instruction of `stmts`, inner loops included.
fn visit_insts(stmts: &[CStmt], f: &mut dyn FnMut(&super::CInst)) {
    for s in stmts {
        match &s.kind {
            CStmtKind::Insts(insts) => insts.iter().for_each(&mut *f),
            CStmtKind::Loop { body, .. } => visit_insts(body, f),
        }
    }
}
