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
//! [`retime_stores`] plans nothing when no flat loop holds a store that may move (below): there
//! is nothing to measure, and the plan would often be dropped anyway (a store after an inner loop
//! is moved by `delay_stores` after it); whoever needs the plan computes it.
//!
//! Otherwise it measures before it moves: for every flat loop body that has a steady state
//! and whose predicted period ([`crate::codegen::modulo`]) is above its MII (a cycle through the
//! engines' in-order sequences sets it, which a resource or a recurrence alone would not), it retimes each store that may move,
//! one at a time on a copy of the kernel, and keeps the move whose loop's predicted period is
//! the shortest (of equal periods, the one that takes the least SBUF), when that gains at least [`crate::codegen::modulo::MIN_GAIN_PERCENT`] (an added
//! iteration runs only the store, whose value the last body left ready, so it is not counted); then it looks again, at most [`MAX_RETIMES`]
//! times and [`MAX_TRIALS`] trials per kernel. A loop without a steady state (its stages never
//! all run in two consecutive iterations) is all fill and drain, where the predicted period
//! says little and one more iteration costs (measured: tests/nki's rmsnorm_arange, two
//! iterations in seven stages, ran 1.17x as long retimed).
//!
//! A store moves at most `n − 1` iterations in all, in a loop of `n` iterations before any
//! move: that far it follows the loads of every later iteration, and a store moved further
//! only adds iterations, which the periods compared do not count.
//!
//! A store may move when: its loop is not peeled and its body holds only instruction
//! statements; it is its statement's last instruction (a statement that computes the value and
//! stores it is split in two, the store alone in the second); no other statement of the body touches the
//! HBM bytes it writes in the instances it moves past: those after it in its own iteration and
//! those before it in the next ([`never_meet`]: the other accesses of its tensor lie in other
//! rows or columns in every iteration, such as the other column block of one output; or
//! [`never_meet_shifted`]: in those two iterations, such as the reload of an earlier
//! iteration's rows a stage later), so moving its write changes no value any statement sees, and
//! it still lands before anything after the loop runs; and its value's
//! ring holds the value one iteration longer. Either the ring already does: a ring along the
//! loop whose slots outlive the moved read, because another statement reads the same value later
//! still (the user's stages often give a tile read in a later stage as many slots as that stage's
//! distance, so a store of it in an earlier stage may move up to that distance for free, which
//! the ring's depth limit would otherwise forbid); or the tile takes one more slot along the loop
//! ([`crate::codegen::expand`]'s rule: SBUF local, within the depth and SBUF budgets). Either
//! way every read finding the same write is checked again after the move
//! ([`crate::transform::ring_reads`]).
//!
//! Invariants: a moved store runs exactly the instances it ran before, each one iteration of
//! the loop later (its index expressions, slot selectors and guards are those of `iv − 1`);
//! every other statement runs exactly the instances it ran before; a pipelined loop's bounds
//! stay `orig_trip + num_stages − 1` (a store moved past the last stage adds a stage).

use crate::codegen::modulo::MIN_GAIN_PERCENT;
use crate::cost::budget;
use crate::cost::guards::running_iterations;
use crate::planned::{compute_planned, Planned};
use crate::transform::delay_stores::split_store;
use crate::transform::remark::Remark;
use crate::transform::ring_reads::compute_reads_kept;
use crate::transform::ring_slots;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{Op, Operand, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::collections::HashMap;

/// The most stores one kernel retimes.
pub const MAX_RETIMES: usize = 4;

/// The most retimings one kernel tries (each lowers and schedules the kernel once).
pub const MAX_TRIALS: usize = 12;

/// One loop's figures: its predicted period, whether that is above its MII, and its iterations.
pub(crate) struct LoopFigures {
    pub(crate) axis: Axis,
    pub(crate) predicted: u64,
    above_mii: bool,
    /// Whether the loop has a steady state ([`crate::codegen::modulo::ModuloSchedule::steady_state`]).
    pub(crate) steady_state: bool,
    /// Whether the resource that sets the loop's resource MII is `sp` or the DMA queues.
    pub(crate) dma_bound: bool,
    trip: u64,
}

/// The best retiming tried in one round: the kernel with it, its remark and its figures.
struct Kept {
    /// The loop's original iterations times its predicted period, then the SBUF bytes in use.
    key: (u128, u64),
    /// The loop and the tile of the store it moves.
    store: (Axis, Tensor),
    func: Function,
    note: Remark,
    figures: Vec<LoopFigures>,
    /// The plan of `func`.
    planned: Planned,
}

/// Retimes the stores of `func` that the module doc describes; returns what it did, for the log.
pub fn retime_stores(func: &mut Function) -> Vec<Remark> {
    retime_stores_planned(func).0
}

/// [`retime_stores`], and the plan of `func` as it leaves it ([`crate::planned`]: the last one
/// it computed, of the kernel as given or of the trial it kept last), `None` when it planned
/// nothing or the kernel does not lower.
pub fn retime_stores_planned(func: &mut Function) -> (Vec<Remark>, Option<Planned>) {
    let mut log = Vec::new();
    // No store may move: nothing to measure, so nothing is planned here (whoever needs the plan
    // computes it: `prefetch` when a loop of its may move, else the backend, unless a later
    // transformation changes the kernel first, as `delay_stores` does after an inner loop).
    let facts = ring_slots::KernelFacts::new(func);
    if !func
        .axes
        .keys()
        .any(|l| !candidates(func, l, &facts).is_empty())
    {
        return (log, None);
    }
    let mut trials = 0;
    // The figures and the plan of the kernel as it stands: those of the trial kept last, when
    // there is one.
    let mut current: Option<(Vec<LoopFigures>, Planned)> = None;
    // The plan of `func` as it stands, once computed.
    let mut planned: Option<Planned> = None;
    // Each loop's iterations before any move, and how far each store has moved in it.
    let mut initial: HashMap<Axis, u64> = HashMap::new();
    let mut moved: HashMap<(Axis, Tensor), u64> = HashMap::new();
    while log.len() < MAX_RETIMES && trials < MAX_TRIALS {
        let Some((figures, plan)) = current.take().or_else(|| compute_figures_planned(func)) else {
            break;
        };
        planned = Some(plan);
        for f in &figures {
            initial.entry(f.axis).or_insert(f.trip);
        }
        let mut best: Option<Kept> = None;
        // `func` stays as it is for the whole round (each trial edits a copy).
        let facts = ring_slots::KernelFacts::new(func);
        for f in figures.iter().filter(|f| f.above_mii && f.steady_state) {
            let before = u128::from(f.predicted) * u128::from(f.trip);
            for c in candidates(func, f.axis, &facts) {
                if trials >= MAX_TRIALS {
                    break;
                }
                // A store `k` iterations late follows the loads of the `k` iterations after its
                // own: in a loop of `n` iterations there are `n − 1` (measured beyond: sdk
                // matmul_128x128x512_spmd, a loop of 2 iterations whose store moved three times
                // within its ring, 29,275 → 33,008 cycles).
                let far = moved.get(&(f.axis, c.tile)).copied().unwrap_or(0);
                if far + 1 >= initial.get(&f.axis).copied().unwrap_or(f.trip) {
                    continue;
                }
                trials += 1;
                let mut trial = func.clone();
                let Some(slots) = retime(&mut trial, f.axis, &c) else {
                    continue;
                };
                let Some((all, trial_plan)) = compute_figures_planned(&trial) else {
                    continue;
                };
                let Some(after) = all.iter().find(|g| g.axis == f.axis) else {
                    continue;
                };
                // The added iteration, if any, runs only the store, whose data the last body
                // left ready: the loop's original iterations are what the periods compare.
                let cost = u128::from(after.predicted) * u128::from(f.trip);
                let gains = cost * 100 <= before * u128::from(100 - MIN_GAIN_PERCENT);
                // Of two moves predicted as fast, the one that takes less SBUF (a store whose
                // ring already holds its value, or a smaller tile's slot).
                let key = (cost, budget::sbuf_in_use(&trial));
                if gains && best.as_ref().is_none_or(|b| key < b.key) {
                    let note = Remark::Retimed {
                        iv: func.display_iv(f.axis).to_string(),
                        tile: func.display_name(c.tile).to_string(),
                        slots,
                        grown: slots > c.slots,
                        predicted: after.predicted,
                        trip: after.trip,
                        was: f.predicted,
                        was_trip: f.trip,
                    };
                    best = Some(Kept {
                        key,
                        store: (f.axis, c.tile),
                        func: trial,
                        note,
                        figures: all,
                        planned: trial_plan,
                    });
                }
            }
        }
        let Some(kept) = best else {
            break;
        };
        *moved.entry(kept.store).or_insert(0) += 1;
        *func = kept.func;
        planned = None;
        current = Some((kept.figures, kept.planned));
        log.push(kept.note);
    }
    let planned = current.map(|(_, p)| p).or(planned);
    (log, planned)
}

/// The figures of every flat loop that the modulo scheduler schedules, as the backend would
/// compile `func` now (lowered, scheduled, and given the ring slots [`crate::codegen::expand`]
/// adds, as [`crate::context::Context::run`] does), with the plan they are read from
/// ([`crate::planned::compute_planned`]); `None` when it does not lower.
pub(crate) fn compute_figures_planned(func: &Function) -> Option<(Vec<LoopFigures>, Planned)> {
    let planned = compute_planned(func)?;
    Some((compute_planned_figures(&planned), planned))
}

/// The figures of every flat loop of `planned` (its modulo schedules).
pub(crate) fn compute_planned_figures(planned: &Planned) -> Vec<LoopFigures> {
    let bir = &planned.bir;
    (planned.schedules.iter())
        .map(|s| LoopFigures {
            axis: bir.loops[s.lp].axis,
            predicted: s.predicted,
            above_mii: s.predicted_above_mii(),
            steady_state: s.steady_state,
            dma_bound: matches!(s.res_resource.as_str(), "sp" | "dma queues"),
            trip: bir.loops[s.lp].trip,
        })
        .collect()
}

/// A store that may move one iteration later (module doc).
struct Candidate {
    /// The store's statement.
    stmt: Stmt,
    /// The tile it stores.
    tile: Tensor,
    /// The tile's slots along the loop (1 when it is not blocked).
    slots: u32,
    /// Whether the tile may take one more slot ([`ring_slots::expandable`]); when not, the
    /// store moves only if its ring already holds the value one iteration longer.
    may_grow: bool,
}

/// The stores of loop `l` that may move (module doc); `facts` are those of `func`.
fn candidates(func: &Function, l: Axis, facts: &ring_slots::KernelFacts<'_>) -> Vec<Candidate> {
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
    for (p, &(s, i)) in insts.iter().enumerate() {
        let d = &func.insts[i];
        let (Op::Store, [src]) = (&d.op, d.srcs.as_slice()) else {
            continue;
        };
        // The store is its statement's last instruction (a statement computing the stored
        // value and storing it is split in two when the store moves, [`crate::transform::delay_stores::split_store`]).
        let last = matches!(&func.stmts[s].kind, StmtKind::Insts(is) if is.last() == Some(&i));
        let hbm = d.dst.tensor;
        // The store of iteration `k` moves from its place in body `k` to the same place in body
        // `k + 1`: the accesses it passes are those after it in body `k` and those before it in
        // body `k + 1`.
        let shared = insts.iter().enumerate().any(|(q, &(_, j))| {
            let o = &func.insts[j];
            let shift = i64::from(q < p);
            let touches = |x: &Operand| {
                x.tensor == hbm
                    && !never_meet(func, &d.dst, x)
                    && !never_meet_shifted(func, l, &d.dst, x, shift)
            };
            j != i && (touches(&o.dst) || o.srcs.iter().any(touches))
        });
        if !last || shared || out.iter().any(|c: &Candidate| c.tile == src.tensor) {
            continue;
        }
        let t = src.tensor;
        if let Some(n) = facts.expandable(t, l) {
            out.push(Candidate {
                stmt: s,
                tile: t,
                slots: n,
                may_grow: true,
            });
        } else if let Some(n) = ring_along(func, t, l) {
            out.push(Candidate {
                stmt: s,
                tile: t,
                slots: n,
                may_grow: false,
            });
        }
    }
    out
}

/// Whether accesses `a` and `b` of one tensor never touch a common element, in any iterations
/// of the loops they name: in some dimension, the ranges their boxes cover over every value of
/// the loop variables are disjoint (an access pattern's box is its bounding box, a superset of
/// its values; an indirect transfer's, the box of every row it may name).
fn never_meet(func: &Function, a: &Operand, b: &Operand) -> bool {
    let bounds = |x: Axis| {
        let ad = &func.axes[x];
        (ad.lb, (ad.ub - 1).max(ad.lb))
    };
    let (sa, sb) = (&a.access, &b.access);
    (sa.start.iter().zip(&sa.size))
        .zip(sb.start.iter().zip(&sb.size))
        .any(|((ea, &na), (eb, &nb))| {
            let ((alo, ahi), (blo, bhi)) = (ea.range(bounds), eb.range(bounds));
            ahi + na as i64 <= blo || bhi + nb as i64 <= alo
        })
}

/// Whether access `a` in any iteration `k` of loop `l` and access `b` in iteration
/// `k + shift` (every other loop at the same iteration: both are in the body of `l`) never
/// touch a common element: in some dimension, the difference of their starts keeps the boxes
/// apart over every value of the loop variables (the rows a reload reads back in a later stage
/// are those of another iteration than the store's).
fn never_meet_shifted(func: &Function, l: Axis, a: &Operand, b: &Operand, shift: i64) -> bool {
    let bounds = |x: Axis| {
        let ad = &func.axes[x];
        (ad.lb, (ad.ub - 1).max(ad.lb))
    };
    let later = AffineExpr::from_terms([(l, 1)], shift);
    let (sa, sb) = (&a.access, &b.access);
    (sa.start.iter().zip(&sa.size))
        .zip(sb.start.iter().zip(&sb.size))
        .any(|((ea, &na), (eb, &nb))| {
            // `b`'s start minus `a`'s, over every iteration.
            let (lo, hi) = eb.substitute(l, &later).sub(ea).range(bounds);
            lo >= na as i64 || hi + nb as i64 <= 0
        })
}

/// The slots of `t` when it is a ring along `l` of at least two slots (a ring that may already
/// hold a value one iteration longer than a read of it needs).
fn ring_along(func: &Function, t: Tensor, l: Axis) -> Option<u32> {
    match func.tensors[t].block.as_slice() {
        [b] if b.axis == l && b.count >= 2 => Some(b.count),
        _ => None,
    }
}

/// Moves store statement `c.stmt` of loop `l` one iteration later (split from the statement that
/// computes its value first, [`crate::transform::delay_stores::split_store`]); its value's tile keeps
/// its slots when its ring already holds the value one iteration longer, else gets one more.
/// Returns the tile's slots, or `None` (with `func` in any state) when the ring would not keep
/// every read.
fn retime(func: &mut Function, l: Axis, c: &Candidate) -> Option<u32> {
    let (t, n) = (c.tile, c.slots);
    let s = split_store(func, l, c.stmt);
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let trip = (ub - lb).max(0) as u64;
    let runs = |func: &Function, s: Stmt| running_iterations(func, &func.stmts[s].preds, l);
    let store_runs = runs(func, s)?;
    let first = store_runs.first().is_some_and(|r| r.start == 0);
    let last = store_runs.last().is_some_and(|r| r.end == trip);
    // A ring along `l` keeps its slots when they hold the moved read too (checked after the
    // move); an unblocked tile has no selector to shift, so it always takes a ring of two.
    let keeps = ring_along(func, t, l).is_some() && {
        let mut moved = func.clone();
        let earlier = AffineExpr::from_terms([(l, 1)], -1);
        moved.map_exprs(s, &|e| e.substitute(l, &earlier));
        compute_reads_kept(&moved, t, l, n)
    };
    if !keeps && !c.may_grow {
        return None;
    }
    let slots = if keeps { n } else { n + 1 };
    ring_slots::apply(func, t, l, slots);
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
            let r = runs(func, other)?;
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
    compute_reads_kept(func, t, l, slots).then_some(slots)
}
