//! Peeling (`--peel`, opt-in): the extended loop's prologue and epilogue as physical code.
//!
//! The pipeliner realises a loop of `N` stages as one extended loop (`super::extend`) whose
//! iteration `k` runs stage `s` when `s <= k < trip + s` (its guards). [`peel_extended_loops`]
//! rewrites every such loop, after the legality check and on the pipelined function, into the
//! same instruction instances in the same order, without those guards:
//! - the **steady state** keeps the loop (its axis, statements and instructions) over the extended
//!   iterations `lb + N − 1 .. lb + trip`, where every stage runs: each child loses the guards on
//!   the loop's own variable that hold throughout that range, which are all of the pipeliner's.
//!   The loop stays `pipelined`, marked `peeled` ([`crate::ir::Pipelined::peeled`]);
//! - the **prologue** (the extended iterations before it) and the **epilogue** (those after it)
//!   are straight-line copies beside the loop: for each iteration `k`, in order, a copy of every
//!   child whose guards hold at `k`, with the induction variable replaced by the constant `k`
//!   everywhere in its subtree (tile starts, predicates, and ring slots, which become constants
//!   `k − s` taken modulo the ring when used, so a ring the backend later deepens stays right).
//!   A nested loop in a copied child is copied too, with a fresh induction variable (`k.i0`: loop
//!   `k` copied for `i = 0`);
//! - when `trip < N` there is no steady state: every extended iteration is peeled, each child's
//!   last copy reuses its original statement, and the loop remains, empty, with no iteration
//!   (every axis is the loop of exactly one statement). A child that never runs (a trip count of
//!   0) stays in that empty loop.
//!
//! The copies are made with [`crate::edit`]: a copy keeps its child's stage tag, annotations and
//! spans, and a nested loop's copy is named by the naming rule (`k.n0`); the loop statement's own
//! predicates (none, unless the loop is itself nested in a guarded statement) are prepended to
//! every copy's. Loops are peeled innermost first, so a copy of a loop nested in another's stage
//! is already peeled. The meaning is unchanged: the instances that run, their order and their
//! addresses are those of the extended loop, so the legality check's verdict holds as it was.

use super::error::{axis_span, PipelineError};
use super::log::{PipelineLog, PipelineRemark};
use crate::affine::AffineExpr;
use crate::edit::{self, Cursor, Subst};
use crate::entities::{Axis, Stmt};
use crate::ir::{Function, StmtKind};

/// The most instructions the copies of one function's prologues and epilogues may hold: peeling
/// copies up to `stages − 1` iterations on each side of every loop, which a long body in many
/// stages makes quadratic in the body's size.
pub const MAX_PEELED_INSTS: usize = 1 << 16;

/// Peels every extended loop of `func` that is not peeled yet; logs what it did. Copies of more
/// than [`MAX_PEELED_INSTS`] instructions in all are an error ([`codes::PEEL_TOO_LARGE`]), and
/// leave `func` as it was.
pub fn peel_extended_loops(
    func: &mut Function,
    log: &mut PipelineLog,
) -> Result<(), Vec<PipelineError>> {
    let mut loops = Vec::new();
    func.walk_stmts(|s, _| {
        if let StmtKind::Loop(a) = func.stmts[s].kind {
            if func.axes[a].attrs.pipelined.is_some_and(|p| !p.peeled) {
                loops.push(a);
            }
        }
    });
    let before = func.clone();
    let mut copied = 0;
    // In program order a nested loop comes after the loop around it: reversed, innermost first.
    for &a in loops.iter().rev() {
        if let Err(e) = peel_loop(func, a, &mut copied, log) {
            *func = before;
            return Err(e);
        }
    }
    Ok(())
}

/// One copy to make: child `child` of the loop body at extended iteration `k`, or the original
/// statement rewritten in place (`in_place`).
struct Copy {
    k: i64,
    child: Stmt,
    in_place: bool,
}

/// Peels loop `a`; `copied` counts the instructions copied so far in the function.
fn peel_loop(
    func: &mut Function,
    a: Axis,
    copied: &mut usize,
    log: &mut PipelineLog,
) -> Result<(), Vec<PipelineError>> {
    let Some(p) = func.axes[a].attrs.pipelined else {
        return Ok(());
    };
    let (lb, ub) = (func.axes[a].lb, func.axes[a].ub);
    let steady_lo = (lb + i64::from(p.num_stages) - 1).min(ub);
    let steady_hi = steady_lo.max(lb + p.orig_trip).min(ub);
    let steady = steady_hi > steady_lo;
    let body = func.axes[a].body.clone();
    give_single_slots(func, a, &body);

    let copies = plan_copies(func, a, &body, (steady_lo, steady_hi), copied);
    if *copied > MAX_PEELED_INSTS {
        let iv = func.axis_name(a);
        return Err(vec![PipelineError::PeelTooLarge {
            iv: iv.to_string(),
            limit: MAX_PEELED_INSTS,
            trip_count: p.orig_trip,
            num_stages: p.num_stages,
            header: axis_span(func, a),
        }]);
    }

    let place = edit::locate_loop(func, a).expect("a pipelined loop of the walk is in the tree");
    let loop_stmt = func.block(place.0)[place.1];
    let mut made = make_copies(func, a, loop_stmt, &copies);

    // The steady state: the children not reused as copies, without the guards that always hold.
    let kept: Vec<Stmt> = body
        .iter()
        .copied()
        .filter(|s| !copies.iter().any(|c| c.in_place && c.child == *s))
        .collect();
    if steady {
        for &s in &kept {
            func.stmts[s].preds.retain(|g| {
                let only_a = g.expr.axes().all(|x| x == a);
                let holds = |k: i64| g.holds(&ivs_at(a, k));
                !(only_a && holds(steady_lo) && holds(steady_hi - 1))
            });
        }
    }
    let ad = &mut func.axes[a];
    ad.lb = steady_lo;
    ad.ub = steady_hi;
    ad.body = kept;
    ad.attrs.pipelined = Some(crate::ir::Pipelined { peeled: true, ..p });

    let split = copies.iter().take_while(|c| c.k < steady_lo).count();
    let epilogue = made.split_off(split);
    let (n_pro, n_epi) = (made.len(), epilogue.len());
    let mut at = Cursor::at(func, place);
    at.insert_before(made);
    at.insert_after(epilogue);

    let iv = func.display_iv(a).to_string();
    log.push(if steady {
        PipelineRemark::Peeled {
            iv,
            prologue: n_pro,
            epilogue: n_epi,
            lb,
            lo: steady_lo,
            hi: steady_hi,
            ub,
        }
    } else {
        PipelineRemark::PeeledFlat {
            iv,
            trip: p.orig_trip,
            stages: p.num_stages,
            iterations: ub - lb,
            statements: n_pro + n_epi,
        }
    });
    Ok(())
}

/// The copies to make of the children of loop `a` (`body`) for the extended iterations outside
/// the steady state `[lo, hi)`, in order; `copied` counts their instructions. Counted as they are
/// planned, so that a loop too large to peel stops early. Without a steady state, each child's
/// last copy is its original statement and copies nothing.
fn plan_copies(
    func: &Function,
    a: Axis,
    body: &[Stmt],
    (steady_lo, steady_hi): (i64, i64),
    copied: &mut usize,
) -> Vec<Copy> {
    let (lb, ub) = (func.axes[a].lb, func.axes[a].ub);
    let sizes: Vec<usize> = body.iter().map(|&c| count_insts(func, c)).collect();
    let stop = MAX_PEELED_INSTS + sizes.iter().sum::<usize>();
    let mut copies: Vec<Copy> = Vec::new();
    'plan: for k in (lb..steady_lo).chain(steady_hi..ub) {
        for (&child, &size) in body.iter().zip(&sizes) {
            if runs_at(func, child, a, k) {
                copies.push(Copy {
                    k,
                    child,
                    in_place: false,
                });
                *copied += size;
                if *copied > stop {
                    break 'plan;
                }
            }
        }
    }
    if steady_hi <= steady_lo {
        // Each child's last copy is its original statement.
        for (&child, &size) in body.iter().zip(&sizes) {
            if let Some(c) = copies.iter_mut().rev().find(|c| c.child == child) {
                c.in_place = true;
                *copied -= size;
            }
        }
    }
    copies
}

/// The statements of `copies`, in order: fresh copies first, from the unchanged originals, then
/// the originals reused in place, each bound to its iteration; every one gets the predicates of
/// the loop statement `loop_stmt` before its own, and its stage tag when it has one.
fn make_copies(func: &mut Function, a: Axis, loop_stmt: Stmt, copies: &[Copy]) -> Vec<Stmt> {
    let outer_preds = func.stmts[loop_stmt].preds.clone();
    let outer_tag = func.stage_tags[loop_stmt];
    let made: Vec<Stmt> = copies
        .iter()
        .map(|c| {
            if c.in_place {
                c.child
            } else {
                // `k.n0`: loop `k` copied for `n = 0`.
                let tag = edit::tag(func.axis_name(a), c.k);
                let copy = edit::copy_stmt(func, c.child, &Subst::new(), &tag);
                edit::bind_iv(func, copy, a, c.k);
                copy
            }
        })
        .collect();
    for (c, &s) in copies.iter().zip(&made) {
        if c.in_place {
            edit::bind_iv(func, s, a, c.k);
        }
    }
    for &s in &made {
        let mut preds = outer_preds.clone();
        preds.append(&mut func.stmts[s].preds);
        func.stmts[s].preds = preds;
        if outer_tag.is_some() {
            func.stage_tags[s] = outer_tag;
        }
    }
    made
}

/// The instructions of statement `s` and everything nested in it.
fn count_insts(func: &Function, s: Stmt) -> usize {
    match &func.stmts[s].kind {
        StmtKind::Insts(insts) => insts.len(),
        StmtKind::Loop(inner) => func.axes[*inner]
            .body
            .iter()
            .map(|&c| count_insts(func, c))
            .sum(),
    }
}

/// Gives every SBUF tile that is local to one iteration of loop `a` and has one buffer (accessed
/// only by instruction statements of the body, and not multi-buffered) a block dimension of one
/// slot along `a`, selected in stage `s` by `iv − s`, the original iteration: the same memory,
/// but its copies in the prologue and epilogue then name their iteration (a constant slot), as
/// the multi-buffered tiles' do, so that the backend may still give it more slots.
fn give_single_slots(func: &mut Function, a: Axis, body: &[Stmt]) {
    let touches =
        |d: &crate::ir::InstData, t| d.dst.tensor == t || d.srcs.iter().any(|o| o.tensor == t);
    let mut stages = Vec::new();
    for &child in body {
        let (StmtKind::Insts(insts), Some(s)) = (&func.stmts[child].kind, func.stage_tags[child])
        else {
            continue;
        };
        stages.extend(insts.iter().map(|&i| (i, s)));
    }
    let tiles: Vec<crate::entities::Tensor> = func
        .tensors
        .iter()
        .filter(|(t, d)| {
            d.memory == crate::ir::Memory::Sbuf
                && d.kind == crate::ir::TensorKind::Local
                && d.block.is_empty()
                && func
                    .insts
                    .iter()
                    .all(|(i, d)| !touches(d, *t) || stages.iter().any(|&(j, _)| j == i))
                && stages.iter().any(|&(i, _)| touches(&func.insts[i], *t))
        })
        .map(|(t, _)| t)
        .collect();
    for &t in &tiles {
        func.tensors[t]
            .block
            .push(crate::ir::BlockDim { axis: a, count: 1 });
    }
    for &(i, s) in &stages {
        let sel = AffineExpr::from_terms([(a, 1)], -i64::from(s));
        let d = &mut func.insts[i];
        for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
            if tiles.contains(&o.tensor) {
                o.access.slots.push(sel.clone());
            }
        }
    }
}

/// The induction-variable values where only `a` is set, to `k`.
fn ivs_at(a: Axis, k: i64) -> cranelift_entity::SecondaryMap<Axis, i64> {
    let mut ivs = cranelift_entity::SecondaryMap::new();
    ivs[a] = k;
    ivs
}

/// Whether statement `s` runs at iteration `k` of loop `a`: every guard of `s` in `a` alone holds
/// there (a guard in other loops too is decided at run time, and stays on the copy).
fn runs_at(func: &Function, s: Stmt, a: Axis, k: i64) -> bool {
    let ivs = ivs_at(a, k);
    func.stmts[s]
        .preds
        .iter()
        .all(|g| g.expr.axes().any(|x| x != a) || g.holds(&ivs))
}
