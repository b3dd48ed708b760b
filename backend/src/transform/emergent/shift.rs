//! The single shift: the fallback realisation of a ring loop, its loads issued `P` iterations
//! ahead in one predicated loop, without peeling.
//!
//! [`shift_loads`] hoists the loads [`super::plan::hoistable_loads`] picks (loops of loads
//! included) to the front of the body, guarded by `iv < ub`; every other statement is guarded by
//! `iv >= lb + P` and works on iteration `iv - P`; the loop runs `P` more iterations. `P` is the
//! smallest ring depth of the hoisted loads minus one, so the slot a load fills was last read
//! `P + 1` iterations earlier; minus two for a tile of at least 3 slots that a store reads (the
//! store's transfer holds the slot for a DMA latency after its iteration's compute, so one more
//! slot keeps the load from waiting for the previous iteration's store, issue 32). Every hoisted load reads a kernel input, which nothing writes, so
//! issuing it earlier reads the same values.
//!
//! Invariants: the function changes only when there is at least one hoisted load, `P >= 1`, and
//! some statement is not hoisted; then the loop's upper bound grows by exactly `P`, and every
//! statement of the body keeps its instructions (only its guards, order and index expressions
//! change).

use super::plan::hoistable_loads;
use super::remark::EmergentRemark;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{Op, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};

/// Issues the loads of loop `l` that fill a ring `P` iterations ahead, in one predicated loop
/// (see the module doc); `rings` are `l`'s rings with their depths. Logs what it did.
pub fn shift_loads(
    func: &mut Function,
    l: Axis,
    rings: &[(Tensor, u32)],
    log: &mut Vec<EmergentRemark>,
) {
    let Some((loads, p)) = plan_shift(func, l, rings) else {
        return;
    };
    let body = func.axes[l].body.clone();
    let hoisted: Vec<Stmt> = loads.iter().map(|&(s, _, _)| s).collect();
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let shifted = AffineExpr::from_terms([(l, 1)], -p);
    let rest: Vec<Stmt> = body
        .iter()
        .copied()
        .filter(|s| !hoisted.contains(s))
        .collect();
    for &s in &hoisted {
        func.stmts[s].preds.push(Predicate {
            expr: AffineExpr::iv(l),
            cmp: CmpOp::Lt,
            bound: ub,
        });
    }
    for &s in &rest {
        shift_stmt(func, s, l, &shifted);
        func.stmts[s].preds.push(Predicate {
            expr: AffineExpr::iv(l),
            cmp: CmpOp::Ge,
            bound: lb + p,
        });
    }
    func.axes[l].ub = ub + p;
    func.axes[l].body = hoisted.iter().chain(rest.iter()).copied().collect();
    let names: Vec<String> = loads
        .iter()
        .map(|&(_, t, _)| func.display_name(t).to_string())
        .collect();
    log.push(EmergentRemark::Shifted {
        iv: func.display_iv(l).to_string(),
        tiles: names,
        ahead: p,
        iterations: ub + p - lb,
    });
}

/// Whether [`shift_loads`] changes loop `l` with rings `rings` (the module doc's invariant: a
/// hoisted load, `P >= 1`, and a statement not hoisted).
pub fn shifts_loads(func: &Function, l: Axis, rings: &[(Tensor, u32)]) -> bool {
    plan_shift(func, l, rings).is_some()
}

/// The loads the single shift hoists (each statement, its tile and its ring depth) and their
/// distance `P`.
type ShiftPlan = (Vec<(Stmt, Tensor, u32)>, i64);

/// The loads [`shift_loads`] hoists and their distance `P`, or `None` when it changes nothing.
fn plan_shift(func: &Function, l: Axis, rings: &[(Tensor, u32)]) -> Option<ShiftPlan> {
    let body = &func.axes[l].body;
    let loads = hoistable_loads(func, l, rings, true);
    let p = loads
        .iter()
        .map(
            |&(_, t, depth)| match depth >= 3 && stored_in(func, body, t) {
                true => depth - 2,
                false => depth - 1,
            },
        )
        .min()
        .unwrap_or(0);
    if loads.is_empty() || p == 0 || loads.len() == body.len() {
        return None;
    }
    Some((loads, i64::from(p)))
}

/// Whether a store of `body` (at any depth) reads tile `t`: its transfer then holds `t`'s slot
/// for a DMA latency after `sp` issues it, behind the iteration's compute, so a load issued
/// `depth - 1` iterations ahead would wait for it in every iteration (issue 32).
fn stored_in(func: &Function, body: &[Stmt], t: Tensor) -> bool {
    body.iter().any(|&s| match &func.stmts[s].kind {
        StmtKind::Insts(insts) => insts.iter().any(|&i| {
            let d = &func.insts[i];
            matches!(d.op, Op::Store) && d.srcs.iter().any(|o| o.tensor == t)
        }),
        StmtKind::Loop(a) => stored_in(func, &func.axes[*a].body, t),
    })
}

/// Replaces `iv(l)` by `by` in every access and guard of `s` and everything nested in it.
pub fn shift_stmt(func: &mut Function, s: Stmt, l: Axis, by: &AffineExpr) {
    func.map_exprs(s, &|e| e.substitute(l, by));
}
