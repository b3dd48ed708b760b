//! Retiming of stores: a store whose data is not ready when `sp` reaches it goes one iteration
//! later, after the next iteration's loads, so that it no longer holds them.
//!
//! `sp` issues every transfer of a loop body from one in-order stream. In a pipelined loop, a
//! store whose value the same body computes waits for that compute, and every transfer behind
//! it on `sp` waits too: the next body's loads, prefetches included (the compare line's
//! `sp.store(r) → (sp in order, next body) sp.load(t)`). No order of one body avoids that
//! when the store's value is computed late in the body; issuing the store of iteration `k` in
//! the body of iteration `k + 1` does, and costs its value one more ring slot (the slot is read
//! one iteration later) and, when the store ran in the loop's last iteration, one more
//! iteration of the loop. On the paths where the backend chooses when a transfer is issued
//! (`default`, `emergent`, `auto`; `annotated` keeps the user's stages as written), the
//! statements keep the iteration they belong to; only the store's issue moves.
//!
//! A store after an inner loop (in a loop that holds a loop, which the modulo scheduler does not
//! schedule) is [`crate::transform::delay_stores`]'s.
//!
//! [`retime_stores`] measures before it moves: for every flat loop body that has a steady state
//! and whose predicted period ([`crate::codegen::modulo`]) is above its MII (a cycle through the
//! engines' in-order sequences sets it, which a resource or a recurrence alone would not), it retimes each store that may move,
//! one at a time on a copy of the kernel, and keeps the move whose loop's predicted period is
//! the shortest, when that gains at least [`crate::codegen::modulo::MIN_GAIN_PERCENT`] (an added
//! iteration runs only the store, whose value the last body left ready, so it is not counted); then it looks again, at most [`MAX_RETIMES`]
//! times and [`MAX_TRIALS`] trials per kernel. A loop without a steady state (its stages never
//! all run in two consecutive iterations) is all fill and drain, where the predicted period
//! says little and one more iteration costs (measured: tests/nki's rmsnorm_arange, two
//! iterations in seven stages, ran 1.17x as long retimed).
//!
//! A store may move when: its loop is not peeled and its body holds only instruction
//! statements; it is its statement's last instruction (a statement that computes the value and
//! stores it is split in two, the store alone in the second); no other statement of the body touches the
//! HBM tensor it writes (so moving its write past the next iteration's statements changes no
//! value they see, and it still lands before anything after the loop runs); and its value's
//! tile takes one more slot along the loop ([`crate::codegen::expand`]'s rule: SBUF local, within the
//! depth and SBUF budgets, every read finding the same write, checked again after the move).
//!
//! Invariants: a moved store runs exactly the instances it ran before, each one iteration of
//! the loop later (its index expressions, slot selectors and guards are those of `iv − 1`);
//! every other statement runs exactly the instances it ran before; a pipelined loop's bounds
//! stay `orig_trip + num_stages − 1` (a store moved past the last stage adds a stage).

use crate::codegen::bir::{lower_function, Bir};
use crate::codegen::modulo::{schedule_loops, MIN_GAIN_PERCENT};
use crate::codegen::queues::compute_queue_plan;
use crate::codegen::schedule::schedule_bodies;
use crate::cost::guards::running_iterations;
use crate::transform::delay_stores::split_store;
use crate::transform::remark::Remark;
use crate::transform::ring_reads::compute_reads_kept;
use crate::transform::ring_slots;
use crate::MAX_EXPANSIONS;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{Op, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};

/// The most stores one kernel retimes.
pub const MAX_RETIMES: usize = 4;

/// The most retimings one kernel tries (each lowers and schedules the kernel once).
pub const MAX_TRIALS: usize = 12;

/// One loop's figures: its predicted period, whether that is above its MII, and its iterations.
struct LoopFigures {
    axis: Axis,
    predicted: u64,
    above_mii: bool,
    /// Whether the loop has a steady state ([`crate::codegen::modulo::ModuloSchedule::steady_state`]).
    steady_state: bool,
    trip: u64,
}

/// Retimes the stores of `func` that the module doc describes; returns what it did, for the log.
pub fn retime_stores(func: &mut Function) -> Vec<Remark> {
    let mut log = Vec::new();
    let mut trials = 0;
    // The figures of the kernel as it stands: those of the trial kept last, when there is one.
    let mut current: Option<Vec<LoopFigures>> = None;
    while log.len() < MAX_RETIMES && trials < MAX_TRIALS {
        let Some(figures) = current.take().or_else(|| compute_figures(func)) else {
            break;
        };
        let mut best: Option<(u128, Function, Remark, Vec<LoopFigures>)> = None;
        for f in figures.iter().filter(|f| f.above_mii && f.steady_state) {
            let before = u128::from(f.predicted) * u128::from(f.trip);
            for (s, t, n) in candidates(func, f.axis) {
                if trials >= MAX_TRIALS {
                    break;
                }
                trials += 1;
                let mut trial = func.clone();
                if !retime(&mut trial, f.axis, s, t, n) {
                    continue;
                }
                let Some(all) = compute_figures(&trial) else {
                    continue;
                };
                let Some(after) = all.iter().find(|g| g.axis == f.axis) else {
                    continue;
                };
                // The added iteration, if any, runs only the store, whose data the last body
                // left ready: the loop's original iterations are what the periods compare.
                let cost = u128::from(after.predicted) * u128::from(f.trip);
                let gains = cost * 100 <= before * u128::from(100 - MIN_GAIN_PERCENT);
                if gains && best.as_ref().is_none_or(|b| cost < b.0) {
                    let note = Remark::Retimed {
                        iv: func.axis_name(f.axis).to_string(),
                        tile: func.tensors[t].name.clone(),
                        slots: n + 1,
                        predicted: after.predicted,
                        trip: after.trip,
                        was: f.predicted,
                        was_trip: f.trip,
                    };
                    best = Some((cost, trial, note, all));
                }
            }
        }
        let Some((_, trial, note, all)) = best else {
            break;
        };
        *func = trial;
        current = Some(all);
        log.push(note);
    }
    log
}

/// The figures of every flat loop that the modulo scheduler schedules, as the backend would
/// compile `func` now: lowered, scheduled, and given the ring slots [`crate::codegen::expand`] adds, as
/// [`crate::context::Context::run`] does; `None` when it does not lower.
fn compute_figures(func: &Function) -> Option<Vec<LoopFigures>> {
    let mut expanded = func.clone();
    let mut expansions = 0;
    loop {
        let mut bir: Bir = lower_function(&expanded).ok()?;
        schedule_bodies(&expanded, &mut bir);
        let plan = compute_queue_plan(&expanded, &bir);
        let schedules = schedule_loops(&expanded, &mut bir, &plan);
        if expansions < MAX_EXPANSIONS
            && crate::expand_recurrence(&mut expanded, &bir, &schedules).is_some()
        {
            expansions += 1;
            continue;
        }
        return Some(
            schedules
                .iter()
                .map(|s| LoopFigures {
                    axis: bir.loops[s.lp].axis,
                    predicted: s.predicted,
                    above_mii: s.predicted_above_mii(),
                    steady_state: s.steady_state,
                    trip: bir.loops[s.lp].trip,
                })
                .collect(),
        );
    }
}

/// The stores of loop `l` that may move (module doc): each statement, its value's tile and the
/// tile's slot count.
fn candidates(func: &Function, l: Axis) -> Vec<(Stmt, Tensor, u32)> {
    let ad = &func.axes[l];
    if ad.attrs.pipelined.is_some_and(|p| p.peeled) || ad.trip_count() < 2 {
        return Vec::new();
    }
    let mut insts = Vec::new();
    for &s in &ad.body {
        match &func.stmts[s].kind {
            StmtKind::Insts(is) => insts.extend(is.iter().map(|&i| (s, i))),
            StmtKind::Loop(_) => return Vec::new(),
        }
    }
    let mut out = Vec::new();
    for &(s, i) in &insts {
        let d = &func.insts[i];
        let (Op::Store, [src]) = (&d.op, d.srcs.as_slice()) else {
            continue;
        };
        // The store is its statement's last instruction (a statement computing the stored
        // value and storing it is split in two when the store moves, [`crate::transform::delay_stores::split_store`]).
        let last = matches!(&func.stmts[s].kind, StmtKind::Insts(is) if is.last() == Some(&i));
        let hbm = d.dst.tensor;
        let shared = insts.iter().any(|&(_, j)| {
            j != i && {
                let o = &func.insts[j];
                o.dst.tensor == hbm || o.srcs.iter().any(|x| x.tensor == hbm)
            }
        });
        if !last || shared || out.iter().any(|&(_, t, _)| t == src.tensor) {
            continue;
        }
        if let Some(n) = ring_slots::expandable(func, src.tensor, l) {
            out.push((s, src.tensor, n));
        }
    }
    out
}

/// Moves store statement `s` of loop `l` one iteration later (split from the statement that
/// computes its value first, [`crate::transform::delay_stores::split_store`]), giving its value's tile `t`
/// `n + 1` slots; `false` (with `func` in any state) when the ring would not keep every read.
fn retime(func: &mut Function, l: Axis, s: Stmt, t: Tensor, n: u32) -> bool {
    let s = split_store(func, l, s);
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let trip = (ub - lb).max(0) as u64;
    let runs = |func: &Function, s: Stmt| running_iterations(func, &func.stmts[s].preds, l);
    let Some(store_runs) = runs(func, s) else {
        return false;
    };
    let first = store_runs.first().is_some_and(|r| r.start == 0);
    let last = store_runs.last().is_some_and(|r| r.end == trip);
    ring_slots::apply(func, t, l, n + 1);
    let earlier = AffineExpr::from_terms([(l, 1)], -1);
    func.map_exprs(s, &|e| e.substitute(l, &earlier));
    if first {
        func.stmts[s].preds.push(Predicate {
            expr: AffineExpr::iv(l),
            cmp: CmpOp::Ge,
            bound: lb + 1,
        });
    }
    if last {
        // One more iteration, in which only the moved store runs.
        for other in func.axes[l].body.clone() {
            if other == s {
                continue;
            }
            let Some(r) = runs(func, other) else {
                return false;
            };
            if r.last().is_some_and(|r| r.end == trip) {
                func.stmts[other].preds.push(Predicate {
                    expr: AffineExpr::iv(l),
                    cmp: CmpOp::Lt,
                    bound: ub,
                });
            }
        }
        func.axes[l].ub = ub + 1;
        if let Some(p) = func.axes[l].attrs.pipelined.as_mut() {
            p.num_stages += 1;
        }
    }
    if let Some(stage) = func.stage_tags[s].as_mut() {
        *stage += 1;
    }
    compute_reads_kept(func, t, l, n + 1)
}
