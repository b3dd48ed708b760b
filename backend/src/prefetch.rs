//! Prefetching in a user-pipelined loop: a load whose value is read too soon after it is issued
//! goes some iterations earlier than the user's stages put it, into a deeper ring, so that its
//! latency overlaps the iterations before.
//!
//! On `default` (and `auto`), the user's stages say which iteration a statement belongs to; when
//! its transfer is issued is the backend's (issue 32, item 1). A loop the annotated pipeliner
//! extended often loads a tile in the stage that reads it (Mode B's `stage_id=0` on the load and
//! on its first reader): every iteration then waits for its own load, its latency and its pieces,
//! however the body is ordered. The emergent path rings such a tile and issues its loads ahead
//! (`emergent::plan`'s depth `1 + ceil(DMA / compute)`); this is the same for the user's loop,
//! the mirror of [`crate::retime`] (which issues a late store one iteration later).
//!
//! [`prefetch_loads`] looks at every loop the annotated pipeliner extended that is not peeled,
//! stands in no other loop (a nested one's executions are [`crate::transform::emergent::carry`]'s,
//! whose slots continue across them), and whose body's statements carry stage tags: instruction
//! statements, or loops too (a loop that holds a loop, below). A candidate is a statement
//! holding one load of a whole SBUF tile that only this loop touches (one writer,
//! [`crate::transform::ring_reads`]'s rule), from an HBM tensor that no other statement of the
//! body writes. Its transfer takes `dma` cycles (latency, queue time and
//! issue: [`crate::cost::loop_cost::wanted_depth`]); an iteration of the steady state takes
//! `period`, the loop's period as the modulo scheduler predicts it (after `retime`, as the
//! backend would compile the kernel: [`crate::retime`]'s figures). The load wants to be issued
//! `ceil(dma / period)` iterations before its first reader; the user's stages give it `dist`
//! (its first reader's stage less its own); it goes the difference earlier, at most as far as its
//! ring may grow ([`crate::transform::ring_slots::expandable`]: SBUF, depth cap) and less than
//! the loop's trip. Only a loop whose resource bound is `sp`'s issue or the DMA queues moves its
//! loads (where a compute engine sets the pace, the loads overlap its work; measured on the
//! corpus: prefetching in compute-bound loops lost up to 1.7%, layernorm_stages and rmsnorm_mode_b
//! on `default`, carried_accumulator on `auto`). A loop with a steady state moves its loads only
//! as far as leaves it one: the loads go at most `cap` iterations ahead, `cap` from the farthest
//! wanted down to one, the first that keeps a steady state (measured on the corpus: moves that
//! left none lost up to 9%, `many_psum` on `auto`, and two_stores_staged 3.8% with a third
//! iteration ahead where two kept one); the farthest move is taken when no move keeps one, or
//! when its predicted period gains [`MIN_GAIN_PERCENT`] on the nearer move's that keeps one
//! (measured: mix_ragged_staged, three iterations ahead predicted at 896 against one at 1,348,
//! ran 12,662 -> 11,068, 1.06x `emergent`). A
//! loop without a steady state (as many stages as iterations, or a store `retime` moved past the
//! last stage) has none to lose, and its loads go as far as they want (measured:
//! stage_reload_rows 17,344 -> 15,386 on `default`, 1.01x `emergent`; stream_mode_b_store_first
//! 10,298 -> 9,727). What a prefetch gains
//! (each iteration's wait for its own load, in the fill and in the steady state) the predicted
//! period does not show, so it is not asked to shorten; but a move after which the queue plan
//! splits the loop's transfers finer (its guarded transfers run in fewer of the extended
//! iterations: the plan averages over the fill and the drain, issue 32 item 2) lengthens it, and
//! such moves lost on the corpus. The move is kept when the predicted period grows by at most
//! [`MAX_LONGER_EIGHTHS`] eighths (measured: late_mode_b 977 → 1,024 ran 13% faster and
//! two_stores_staged 1,375 → 1,536 4% faster; stream_staged_three_stores 1,111 → 1,457 ran 5%
//! slower, 11% on `auto`, and phases_stores_first 1,294 → 1,536 0.3% slower; exp_stages,
//! 1,725 → 2,048, ran 6% faster but is left as it was with them).
//!
//! A loop that holds a loop has no modulo schedule and no predicted period; it runs its body in
//! the order written, so a load in its first reader's stage into a tile of one slot waits, every
//! iteration, for the previous iteration's reader, and the reader for the load's latency: the
//! later stages' work covers that in the steady state, nothing does in the fill (attention's
//! query tile: the Tensor engine idled ~3,000 cycles before its second product). There the
//! period is the compute engines' cycles of a steady iteration added up (at least the period
//! when the engines run side by side, so a load goes no further ahead than its transfer outlasts
//! the whole body's work), the loads go at most as far as keeps a steady state (the original
//! trip at least the stages), and the move is kept when every read finds its write
//! ([`prefetch_holder`]). Measured: tests/good/prefetch_holder.nk 1.64x, 1.41x and 1.29x of
//! `emergent` before, at most 1.04x after; attention_stages 6.9% faster; no other kernel of the
//! corpus changed. (A holder whose period is a recurrence through a store of a one-slot
//! accumulator, which the load does not feed, ran 3 to 7% slower with its load moved: the moved
//! load goes ahead of the inner loop's first loads on `sp`; no kernel of the corpus has it.)
//!
//! The edit: loads that go `d_L` earlier, `D` the largest `d_L`; every other statement goes `D`
//! iterations later and each moved load `D − d_L` (its index expressions, slot selectors and
//! guards those of `iv − δ`, a guard added where it ran in the first or the last iteration, its
//! stage tag `+ δ`); the loop runs `D` more iterations (the pipelined loop's stages grow by `D`);
//! each moved tile gets `d_L` more slots. Every read of a moved tile is checked to find the same
//! write ([`crate::transform::ring_reads::compute_reads_kept`]); when one does not, the loop is
//! left as it was.
//!
//! Invariants: every statement runs exactly the instances it ran before, in the same order
//! relative to every statement that touches the same HBM bytes or on-chip tile (only the moved
//! loads' tiles change order, and each value keeps its own slot); the function verifies after
//! the pass; the loop's bounds stay `orig_trip + num_stages − 1`.

use crate::codegen::modulo::MIN_GAIN_PERCENT;
use crate::cost::guards::running_iterations;
use crate::cost::loop_cost::{steady_issue_and_compute, wanted_depth};
use crate::planned::{compute_planned, Planned};
use crate::transform::remark::Remark;
use crate::transform::ring_reads::compute_reads_kept;
use crate::transform::ring_slots;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::edit;
use penguin::ir::{Memory, Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::collections::HashMap;

/// How much longer (in eighths) the predicted period of a loop may get from its prefetch.
pub const MAX_LONGER_EIGHTHS: u64 = 1;

/// One load to issue earlier: its statement, its tile, and how many iterations.
#[derive(Clone, Copy)]
struct Move {
    stmt: Stmt,
    tile: Tensor,
    by: u32,
    /// The slots the tile had.
    slots: u32,
    dma: u64,
}

/// Issues the loads of user-pipelined loops ahead where their latency is not covered (module
/// doc); returns one remark per load moved.
pub fn prefetch_loads(func: &mut Function) -> Vec<Remark> {
    prefetch_loads_planned(func, None).0
}

/// [`prefetch_loads`], given the plan of `func` when there is one ([`crate::planned`]: the
/// predicted periods are read from it instead of planning `func` again); returns the plan of
/// `func` as it leaves it (the one given, the one it computed, or that of the trial it kept
/// last), `None` when it has none.
pub fn prefetch_loads_planned(
    func: &mut Function,
    mut planned: Option<Planned>,
) -> (Vec<Remark>, Option<Planned>) {
    let mut log = Vec::new();
    let loops: Vec<Axis> = func.axes.keys().collect();
    // The predicted periods, computed once, and only when some loop may move a load.
    // Each loop's predicted period and whether it has a steady state.
    let mut periods: Option<HashMap<Axis, (u64, bool)>> = None;
    for l in loops {
        let Some(pipe) = func.axes[l].attrs.pipelined else {
            continue;
        };
        if pipe.peeled || func.axes[l].trip_count() < 2 {
            continue;
        }
        let top = edit::locate_loop(func, l).is_some_and(|(parent, _)| parent.is_none());
        let body = func.axes[l].body.clone();
        if !top {
            continue;
        }
        // A loop that holds a loop: no modulo schedule, its body runs in the order written
        // (the loops the emergent path put beside the user's, such as a nest's first loads,
        // carry no stage tag).
        if body
            .iter()
            .any(|&s| matches!(func.stmts[s].kind, StmtKind::Loop(_)))
        {
            if let Some((trial, moves, trial_plan, period)) = prefetch_holder(func, l, &body, pipe)
            {
                *func = trial;
                planned = Some(trial_plan);
                periods = None;
                log.extend(moved_remarks(func, l, &moves, period));
            }
            continue;
        }
        if body.iter().any(|&s| func.stage_tags[s].is_none()) {
            continue;
        }
        let periods = periods.get_or_insert_with(|| {
            if planned.is_none() {
                planned = compute_planned(func);
            }
            (planned.as_ref())
                .map(crate::retime::compute_planned_figures)
                .unwrap_or_default()
                .into_iter()
                .filter(|f| f.dma_bound)
                .map(|f| (f.axis, (f.predicted, f.steady_state)))
                .collect()
        });
        // A loop whose compute sets its pace overlaps its loads with that compute.
        let Some(&(period, steady)) = periods.get(&l) else {
            continue;
        };
        let period = period.max(1);
        let wanted = compute_moves(func, l, &body, period);
        // The farthest moves that leave the loop a steady state when it has one: each load at
        // most `cap` iterations ahead, `cap` from the farthest wanted down to one.
        let far = wanted.iter().map(|m| m.by).max().unwrap_or(0);
        let mut kept = None;
        // The farthest move that leaves no steady state, taken when no move keeps one.
        let mut unsteady = None;
        let mut steady_found = None;
        for cap in (1..=far).rev() {
            let moves: Vec<Move> = wanted
                .iter()
                .map(|m| Move {
                    by: m.by.min(cap),
                    ..*m
                })
                .collect();
            let mut trial = func.clone();
            if !apply(&mut trial, l, &body, &moves) {
                continue;
            }
            // The loop's figures after the move: a steady state if it had one (else a shorter
            // move may keep it), at a predicted period at most `MAX_LONGER_EIGHTHS` eighths longer (else the
            // loop keeps its loads where they are).
            let Some((figures, trial_plan)) = crate::retime::compute_figures_planned(&trial) else {
                continue;
            };
            let Some(after) = figures.into_iter().find(|f| f.axis == l) else {
                continue;
            };
            let short = after.predicted * 8 <= period * (8 + MAX_LONGER_EIGHTHS);
            if steady && !after.steady_state {
                if short && unsteady.is_none() {
                    unsteady = Some((after.predicted, (trial, moves, trial_plan)));
                }
                continue;
            }
            steady_found = Some(after.predicted);
            if short {
                kept = Some((trial, moves, trial_plan));
            }
            break;
        }
        // The farther move that leaves no steady state is taken when no move keeps one, or
        // when its predicted period gains on the nearer move's that keeps it.
        if let Some((unsteady_period, farther)) = unsteady {
            let gains = steady_found.is_none_or(|p| {
                u128::from(unsteady_period) * 100
                    <= u128::from(p) * u128::from(100 - MIN_GAIN_PERCENT)
            });
            if gains {
                kept = Some(farther);
            }
        }
        let Some((trial, moves, trial_plan)) = kept else {
            continue;
        };
        *func = trial;
        planned = Some(trial_plan);
        log.extend(moved_remarks(func, l, &moves, period));
    }
    (log, planned)
}

/// One remark per load of loop `l` that `moves` issue earlier (`period`: the iteration's
/// cycles they were weighed against).
fn moved_remarks(func: &Function, l: Axis, moves: &[Move], period: u64) -> Vec<Remark> {
    let iv = func.display_iv(l).to_string();
    (moves.iter())
        .map(|m| Remark::Prefetched {
            iv: iv.clone(),
            tile: func.display_name(m.tile).to_string(),
            by: m.by,
            slots: m.slots + m.by,
            dma: m.dma,
            period,
        })
        .collect()
}

/// [`prefetch_loads`] on a user-pipelined loop `l` (top level, not peeled) whose body holds a
/// loop: the trial kernel with its loads moved, the moves, the trial's plan and the period the
/// moves were weighed against, or `None` when no load moves.
///
/// Such a loop has no modulo schedule (its body runs in the order written), so its period is
/// not predicted: an iteration of the steady state is taken to last as long as the compute
/// engines' cycles of its body added up (every engine's, nested loops times their trips:
/// [`steady_issue_and_compute`], at least as long as the engines running side by side take), so
/// that a load moves only where its transfer outlasts that. What a move gains there is the
/// fill: with the load in its first reader's stage, each iteration's load of a tile of one slot
/// waits for the previous iteration's reader, and the reader for its latency, which only the
/// work of the later stages covers, and the fill has none. The moves keep the loop a steady
/// state (its original trip at least its stages after the move, `retime`'s rule); the rest is
/// [`prefetch_loads`]'s (the ring's depth and SBUF, every read finding its write).
fn prefetch_holder(
    func: &Function,
    l: Axis,
    body: &[Stmt],
    pipe: penguin::ir::Pipelined,
) -> Option<(Function, Vec<Move>, Planned, u64)> {
    let (_, compute) = steady_issue_and_compute(func, l, &pipe);
    let period = compute.max(1);
    let wanted = compute_moves(func, l, body, period);
    let far = wanted.iter().map(|m| m.by).max().unwrap_or(0);
    let room = u32::try_from(pipe.orig_trip)
        .ok()?
        .checked_sub(pipe.num_stages)?;
    let cap = far.min(room);
    if cap == 0 {
        return None;
    }
    let moves: Vec<Move> = (wanted.iter())
        .map(|m| Move {
            by: m.by.min(cap),
            ..*m
        })
        .collect();
    let mut trial = func.clone();
    if !apply(&mut trial, l, body, &moves) {
        return None;
    }
    let (_, trial_plan) = crate::retime::compute_figures_planned(&trial)?;
    Some((trial, moves, trial_plan, period))
}

/// The loads of loop `l` (body `body`, an iteration at least `period` cycles) to issue earlier,
/// each as far as it wants and its ring may grow.
fn compute_moves(func: &Function, l: Axis, body: &[Stmt], period: u64) -> Vec<Move> {
    let trip = func.axes[l].trip_count().max(0) as u64;
    let stage = |s: Stmt| func.stage_tags[s].unwrap_or(0);
    let mut out = Vec::new();
    for &s in body {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            continue;
        };
        let [i] = insts.as_slice() else {
            continue;
        };
        let d = &func.insts[*i];
        let (Op::Load, [src]) = (&d.op, d.srcs.as_slice()) else {
            continue;
        };
        let t = d.dst.tensor;
        let td = &func.tensors[t];
        if td.memory != Memory::Sbuf || td.kind != TensorKind::Local {
            continue;
        }
        // No other statement of the body writes the bytes the load reads (it moves past them).
        let hbm = src.tensor;
        let written = body.iter().any(|&o| {
            o != s
                && penguin::edit::subtree_insts(func, o)
                    .into_iter()
                    .any(|j| func.insts[j].dst.tensor == hbm)
        });
        if written {
            continue;
        }
        // Its first reader's distance in the user's stages.
        let readers: Vec<u32> = body
            .iter()
            .filter(|&&o| {
                o != s
                    && penguin::edit::subtree_insts(func, o)
                        .into_iter()
                        .any(|j| func.insts[j].srcs.iter().any(|x| x.tensor == t))
            })
            .map(|&o| stage(o))
            .collect();
        let Some(&first) = readers.iter().min() else {
            continue;
        };
        let Some(dist) = first.checked_sub(stage(s)) else {
            continue;
        };
        let fit = wanted_depth(func, t, l);
        let wanted = fit.dma.div_ceil(period);
        let want = wanted.saturating_sub(u64::from(dist));
        if want == 0 {
            continue;
        }
        // As far as the ring may grow, one slot at a time (its depth cap and SBUF), and less
        // than the loop's trip.
        let mut probe = func.clone();
        let mut by = 0u32;
        let mut slots = None;
        while u64::from(by) < want && u64::from(by) + 1 < trip {
            let Some(n) = ring_slots::expandable(&probe, t, l) else {
                break;
            };
            slots.get_or_insert(n);
            ring_slots::apply(&mut probe, t, l, n + 1);
            by += 1;
        }
        if let (Some(slots), true) = (slots, by > 0) {
            out.push(Move {
                stmt: s,
                tile: t,
                by,
                slots,
                dma: fit.dma,
            });
        }
    }
    out
}

/// Moves `moves`' loads earlier in loop `l` (module doc); `false` (with `func` in any state)
/// when a guard cannot be enumerated or a moved tile's read would not find its write.
fn apply(func: &mut Function, l: Axis, body: &[Stmt], moves: &[Move]) -> bool {
    let far = moves.iter().map(|m| m.by).max().unwrap_or(0);
    let shift: HashMap<Stmt, u32> = moves.iter().map(|m| (m.stmt, far - m.by)).collect();
    for m in moves {
        ring_slots::apply(func, m.tile, l, m.slots + m.by);
    }
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let trip = (ub - lb).max(0) as u64;
    for &s in body {
        let delta = shift.get(&s).copied().unwrap_or(far);
        if delta == 0 {
            continue;
        }
        let Some(runs) = running_iterations(func, &func.stmts[s].preds, l) else {
            return false;
        };
        let first = runs.first().is_some_and(|r| r.start == 0);
        let last = runs.last().is_some_and(|r| r.end == trip);
        let later = AffineExpr::from_terms([(l, 1)], -i64::from(delta));
        func.map_exprs(s, &|e| e.substitute(l, &later));
        if first {
            func.stmts[s].preds.push(Predicate {
                expr: AffineExpr::iv(l),
                cmp: CmpOp::Ge,
                bound: lb + i64::from(delta),
            });
        }
        if last {
            func.stmts[s].preds.push(Predicate {
                expr: AffineExpr::iv(l),
                cmp: CmpOp::Lt,
                bound: ub + i64::from(delta),
            });
        }
        if let Some(tag) = func.stage_tags[s].as_mut() {
            *tag += delta;
        }
    }
    // The statements that did not move and ran in the last iteration stop there.
    for &s in body {
        if shift.get(&s).copied().unwrap_or(far) != 0 {
            continue;
        }
        let Some(runs) = running_iterations(func, &func.stmts[s].preds, l) else {
            return false;
        };
        if runs.last().is_some_and(|r| r.end == trip) {
            func.stmts[s].preds.push(Predicate {
                expr: AffineExpr::iv(l),
                cmp: CmpOp::Lt,
                bound: ub,
            });
        }
    }
    func.axes[l].ub = ub + i64::from(far);
    if let Some(p) = func.axes[l].attrs.pipelined.as_mut() {
        p.num_stages += far;
    }
    moves
        .iter()
        .all(|m| compute_reads_kept(func, m.tile, l, m.slots + m.by))
}
