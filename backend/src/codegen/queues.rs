//! DMA queue planning: how many pieces each transfer is split into, and on which queues.
//!
//! A transfer of `B` bytes keeps the queues busy `B / 19` cycles in total however it is split
//! (MACHINE.md), but every piece costs `sp` one issue slot of [`machine::dma_issue_cycles`]. The
//! queues are static per instruction (a DMA instruction names its queue), so the balance that
//! matters is the one of a loop body: in the steady state of a pipelined loop, one iteration's
//! transfers must fit in one iteration's time on the busiest queue and on `sp`.
//!
//! [`compute_queue_plan`] plans every body of the BIR loop tree (and the top level) on its own.
//! Guarded transfers are seen per iteration when their guards can be enumerated and none is rare
//! ([`Together`]): the iterations fall into classes by which transfers run in them
//! ([`run_classes`]), and a queue's time per iteration, as transfer `t` sees it, is that of the
//! pieces on it in the busiest class that runs `t`: in a pipelined loop, the steady state, where
//! every stage's transfers run together (not an average over the fill and the drain, which run
//! fewer and would let `sp` issue more pieces than a steady iteration has time for).
//! Transfers that never run together — a stage's fill against another stage's drain, in a loop
//! of few iterations — then share every queue, instead of each taking half of them for the
//! whole loop. Otherwise (no guard, too many iterations, or a transfer that runs in fewer than
//! one iteration in [`RARE`], such as a first execution's loads, whose latency matters more than
//! its share of a queue) a guarded transfer counts for the fraction of iterations its guard lets
//! it run ([`guard_fraction`]): the copies of one load that take turns — a prefetch's in-loop
//! and carry copies — share the time of one, while each piece's length still comes from the
//! whole tile. For a body with transfers `t` of queue time `Q_t`, it looks for the smallest
//! per-iteration time `T` such that:
//! - every transfer, taken by decreasing `Q_t`, fits on the `p` least-loaded queues (as it sees
//!   them; ties to the queues with the least time of any transfer) with each queue's load, in
//!   every class of iterations that runs the transfer, plus its piece at most `T`, for the smallest power of two `p`
//!   (dividing the tile's partitions, at most [`DMA_QUEUES`]) that fits;
//! - `sp` issues the pieces in time: `Σ p_t · issue ≤ T`, in every class of iterations.
//!
//! `T` starts at the resource bound of the body, `max(Σ Q_t / 16, issue · #transfers)` as the
//! transfer that sees the most sees it, and grows
//! by 1/32 until the packing fits; it always ends, since splitting every transfer 16 ways fits any
//! `T` at least `Σ Q_t / 16 + 16 · issue · #transfers`. A transfer whose tile has fewer partitions
//! than the pieces it would need takes the largest split it has. Ties between queues go to the
//! lowest index after a rotation that advances from body to body, so that successive bodies do
//! not all start on queue 0.
//!
//! That plan uses as few pieces as the throughput allows, and few pieces make each transfer's
//! latency longer (one piece of `Q/p` cycles after the fixed latency). When the body's compute is
//! slower than its transfers anyway (the busiest compute engine's cycles per iteration `C` exceed
//! `T`), the DMA time has slack up to `C`: the plan then spreads each transfer, largest first,
//! over as many queues as still fit in `C` on every queue and in `0.9 C` on `sp` (on average over
//! the iterations, as `C` is; keeping one
//! issue slot for each transfer still to place; `sp` is in order, also waits, and issues the
//! transfers of enclosing bodies, so it keeps a tenth to itself), and keeps the first plan when
//! that does not pack. Shorter pieces shorten each transfer's latency, which is what a
//! compute-bound loop's fill and drain wait for, down to the split that ends the transfer
//! soonest ([`soonest_split`]: `p · issue + Q / p` least), where the spread starts: past it,
//! each piece's issue slot delays the last piece more than its bytes are shortened (a 26 KiB
//! load split 16 ways lands 500 cycles after one split 4 ways).
//!
//! With classes of iterations known, a last search ([`search_splits`]) weighs every choice of
//! split per transfer over the fill, the steady state and the drain together (the views fit one
//! per-iteration time, so a loop of few iterations whose fill runs only loads keeps half the
//! queues idle there to balance its steady state), and replaces the views' plan when its
//! iterations take at least [`STEADY_GAIN_PERCENT`] less time by [`estimate_time`].
//!
//! Last, the steady state's plans ([`steady`]): each transfer split by what binds the steady
//! state (`sp`'s issue slots or the busiest queue), into any number of pieces that divides its
//! partitions up to its power-of-two split, and the pieces of every transfer placed together,
//! longest first, on the queues least busy in the steady state. The best of them by the
//! estimate over every class replaces the plan under the same rule (at least
//! [`STEADY_GAIN_PERCENT`] less time), with no fewer pieces than the plan it replaces (for the
//! latency the estimate does not see). A body without guards is one class; a body that the
//! views plan in the average because of a rare transfer ([`RARE`]) is weighed over its classes
//! too, the rare transfer split its largest way (its latency is what its iterations wait for).
//!
//! A body that runs once (the kernel's top level, unless it holds a peeled pipeline's fill and
//! drain) has no steady state: when its chain of dependences is longer than the packing's
//! time, it is bound by its latency, and each chain of transfers takes the split that ends it
//! soonest ([`latency`]) instead, its pieces placed by time: on the queues free soonest at its
//! estimated start, a chain's followers behind their leader's pieces and counted on its queues. Where the time is a chain — such a body, or a loop whose
//! iterations chain through a transfer (a reload of what the previous iteration stored, a store
//! of what it reloaded) — a transfer that follows a transfer of its body (reads what it wrote,
//! or stores HBM bytes it read or wrote) takes the leader's queues, piece for piece ([`chain`]):
//! a queue is first in, first out, so the follower needs no semaphore and moves its bytes right
//! after the leader's, without a second latency. A loop every transfer of which is on such a
//! chain runs the chain once per iteration, one iteration after the other: it is split for the
//! chain's latency like a body that runs once, when one iteration's chain is longer than the
//! packing's time. Last, once every body is planned, a transfer of HBM whose latest conflicting
//! transfer is in another body (a loop reading what an earlier loop or the top level stored)
//! follows it on its queues the same way ([`chain::align_across_bodies`]).
//!
//! `sp` is one issue stream for every body: in a loop nest, the bodies are planned again with the
//! `sp` time the other bodies of the nest take per iteration ([`shared_sp`]), and a body takes
//! that plan (fewer, longer pieces) where `sp` then binds its iteration.
//!
//! The plan is computed once per plan of the kernel (the `modulo` pass): the modulo scheduler
//! costs it and the emitter splits the transfers by it.
//!
//! **A scatter moves as one piece.** Its rows are the values of its index tile, so any two of
//! its pieces may write the same HBM bytes, and the program must order them: on one queue, or
//! the second issued after the first has landed. Either way their bytes move one after the
//! other, and split on several queues every piece after the first also waits a whole latency
//! (`indirect_add`'s `scatter_add_bf16`: four pieces took 11,256 cycles, one 5,604). The planner
//! sees a scatter as a transfer of one partition, which splits no way.
//!
//! Invariant of the plan: every load and store of the BIR has an entry; its queues are distinct,
//! as many as its pieces, and its pieces divide its partitions.

use crate::codegen::bir::{dma_tile, estimate, transfer_bytes, BNode, Bir, BirInst, BirLoop};
use crate::cost::guards::{guard_fraction, may_run_shifted, run_classes};
#[cfg(doc)]
use crate::cost::queue_pack::soonest_split;
use crate::cost::queue_pack::{
    largest_split, pack_search, pack_search_reserved, spread, Together, Transfer,
};
pub use crate::cost::queue_pack::{packed_period, SplitData};
use cranelift_entity::{EntityRef, SecondaryMap};
use penguin::ir::Op;
use penguin::{Axis, Function};
use runtime_sim::isa::Engine;
use runtime_sim::machine::{self, DMA_QUEUES};

/// The split of every load and store, by BIR instruction (`None` for any other instruction).
#[derive(Clone, Debug, Default)]
pub struct QueuePlan {
    pub splits: SecondaryMap<BirInst, Option<SplitData>>,
    /// The transfers that queue behind, or lead, another transfer of their body ([`chain`]):
    /// their split is their body's chain's, which [`chain::align_across_bodies`] keeps.
    chained: std::collections::HashSet<BirInst>,
}

impl QueuePlan {
    /// The split of instruction `i`: `Some` for every load and store.
    pub fn split(&self, i: BirInst) -> Option<&SplitData> {
        self.splits[i].as_ref()
    }
}

/// How many of instruction `i`'s instances its guards let run, out of how many (never zero: a
/// transfer that never runs is still planned, as one that runs once).
fn on_fraction(func: &Function, bir: &Bir, i: BirInst) -> (u64, u64) {
    let (on, total) = guard_fraction(func, &bir.insts[i].guards);
    (on.max(1), total)
}

/// Plans the split and the queues of every transfer of `bir`.
pub fn compute_queue_plan(func: &Function, bir: &Bir) -> QueuePlan {
    let mut plan = QueuePlan::default();
    let mut rotation = 0;
    plan_body(func, bir, &bir.body, None, 0, &mut plan, &mut rotation);
    // The rotation each loop's body started with, to plan it again alike.
    let mut starts: SecondaryMap<BirLoop, usize> = SecondaryMap::new();
    for (l, data) in bir.loops.iter() {
        starts[l] = rotation;
        plan_body(
            func,
            bir,
            &data.body,
            Some(data.axis),
            0,
            &mut plan,
            &mut rotation,
        );
    }
    // `sp` is shared by every body of a nest: each body planned again, once, with what the
    // others take from it under the plans alone ([`shared_sp`]; a second round from the first's
    // plans oscillates: on nest_staged_holder it gave back the plans of the bodies alone).
    let compute = |l: BirLoop| compute_cycles(func, bir, &bir.loops[l].body);
    let reserves = shared_sp::compute_sp_reserves(func, bir, &plan, compute);
    for (l, data) in bir.loops.iter() {
        if reserves[l] > 0 {
            plan_with_reserve(
                func,
                bir,
                (&data.body, data.axis),
                starts[l],
                reserves[l],
                compute(l),
                &mut plan,
            );
        }
    }
    chain::align_across_bodies(bir, &mut plan);
    plan
}

/// Plans loop body `body` again with `reserve` cycles of `sp` per iteration taken by the other
/// bodies of its nest, starting from queue `rotation` as its first plan did, and keeps the new
/// plan only where `sp` binds the body (the new iteration, with the reserve, is shorter than the
/// plan alone's) and no transfer loses more than half its pieces (fewer pieces lengthen its
/// latency, which the reserve does not weigh); a smaller reserve when the first cuts deeper,
/// else `plan` gets the body's plan alone back. `compute` is the body's busiest engine's cycles
/// per iteration.
fn plan_with_reserve(
    func: &Function,
    bir: &Bir,
    (body, iv): (&[BNode], Axis),
    rotation: usize,
    mut reserve: u64,
    compute: u64,
    plan: &mut QueuePlan,
) {
    let alone: Vec<(BirInst, u64)> = (body.iter())
        .filter_map(|n| match *n {
            BNode::Inst(i) => plan.split(i).map(|s| (i, s.pieces())),
            BNode::Loop(_) => None,
        })
        .collect();
    let saved: Vec<Option<SplitData>> =
        alone.iter().map(|&(i, _)| plan.splits[i].clone()).collect();
    // Which of them the plan alone chained within the body: a plan made again records its own
    // chains, and a plan given back gets these back.
    let saved_chained: Vec<BirInst> = (alone.iter())
        .map(|&(i, _)| i)
        .filter(|i| plan.chained.contains(i))
        .collect();
    let before = |reserve| {
        let alone_plan = saved_plan(&alone, &saved);
        shared_sp::iteration_time(func, bir, body, &alone_plan, reserve, compute)
    };
    for _ in 0..RESERVE_TRIES {
        if reserve == 0 {
            break;
        }
        for &(i, _) in &alone {
            plan.chained.remove(&i);
        }
        let mut rotation = rotation;
        plan_body(func, bir, body, Some(iv), reserve, plan, &mut rotation);
        let halved_at_most =
            (alone.iter()).all(|&(i, p)| plan.split(i).is_some_and(|s| s.pieces() * 2 >= p));
        if halved_at_most {
            if shared_sp::iteration_time(func, bir, body, plan, reserve, compute) < before(reserve)
            {
                return;
            }
            break;
        }
        reserve /= 2;
    }
    for (&(i, _), s) in alone.iter().zip(&saved) {
        plan.splits[i] = s.clone();
        plan.chained.remove(&i);
    }
    plan.chained.extend(saved_chained);
}

/// A plan holding only `saved`, the splits of `alone`'s instructions.
fn saved_plan(alone: &[(BirInst, u64)], saved: &[Option<SplitData>]) -> QueuePlan {
    let mut plan = QueuePlan::default();
    for (&(i, _), s) in alone.iter().zip(saved) {
        plan.splits[i] = s.clone();
    }
    plan
}

/// How many reserves, each half the last, a body of a nest tries before it keeps its plan
/// alone: a reserve is kept when no transfer of the body loses more than half its pieces.
const RESERVE_TRIES: usize = 3;

/// Plans the transfers of `body` (`iv`: its loop, `None` for the kernel's top level, which runs
/// once), with `reserve` cycles of `sp` per iteration taken by the other bodies of its nest
/// ([`shared_sp`]).
fn plan_body(
    func: &Function,
    bir: &Bir,
    body: &[BNode],
    iv: Option<Axis>,
    reserve: u64,
    plan: &mut QueuePlan,
    rotation: &mut usize,
) {
    let mut transfers: Vec<Transfer> = body
        .iter()
        .filter_map(|n| match *n {
            BNode::Inst(i) => transfer(func, bir, i),
            BNode::Loop(_) => None,
        })
        .collect();
    if transfers.is_empty() {
        return;
    }
    let once = iv.is_none();
    // Largest first; the instruction (in lowering order) breaks ties, so the plan is
    // deterministic.
    transfers.sort_by_key(|t| (std::cmp::Reverse(t.bytes), t.inst));
    let guards: Vec<&[penguin::affine::Predicate]> = transfers
        .iter()
        .map(|t| bir.insts[BirInst::new(t.inst)].guards.as_slice())
        .collect();
    let together = compute_together(func, &guards);
    // A body that runs once and whose chain is longer than its transfers' packing is bound by
    // its latency: each transfer split for it ([`latency`]). Not the fill and drain of a peeled
    // pipeline (transfers of a stage), which overlap the loop between them like its iterations.
    let staged = (transfers.iter()).any(|t| bir.insts[BirInst::new(t.inst)].stage.is_some());
    if once && !staged {
        let pairs = chain::chained_pairs(bir, body, &transfers, false);
        let links: Vec<(usize, usize)> = pairs.iter().map(|&(w, r, _)| (w, r)).collect();
        if let Some(lat) = latency::compute_latency_pieces(bir, body, &transfers, &links) {
            let (target, _) = pack_search(&transfers, &together, *rotation);
            if lat.chain > target {
                // Placed by time: a chain's followers' queues are busy only after its
                // leaders' (grouping the chains by their queues' whole load queued
                // dma_chains' once_round_trip's second store behind its first, +4.4%), and
                // a leader's queues carry its followers' bytes too ([`latency`]).
                let mut splits = latency::place_pieces_by_time(
                    &transfers,
                    &lat.pieces,
                    &lat.starts,
                    *rotation,
                    &links,
                );
                let linked = chain::align_chained_queues(bir, body, &transfers, &mut splits, pairs);
                plan.chained.extend(linked);
                record(plan, &transfers, splits, rotation);
                return;
            }
        }
    }
    let compute = compute_cycles(func, bir, body);
    let mut splits = plan_view(&transfers, &together, compute, reserve, *rotation);
    // The steady view's plan, kept when its iterations take less time, class by class (by at
    // least [`STEADY_GAIN_PERCENT`]: the estimate ignores latencies).
    if let Together::Counted { classes, .. } = &together {
        let steady = Together::counted(classes.clone(), true);
        let other = plan_view(&transfers, &steady, compute, reserve, *rotation);
        let before = estimate_time(&transfers, classes, &splits, compute, reserve);
        let after = estimate_time(&transfers, classes, &other, compute, reserve);
        if after * 100 < before * u128::from(100 - STEADY_GAIN_PERCENT) {
            splits = other;
        }
        // Every split of every transfer, placed on the queues the iterations use least: kept
        // when its iterations take less time still (fill and drain included, class by class).
        let pieces: u64 = splits.iter().map(SplitData::pieces).sum();
        let searched = search_splits(&transfers, classes, compute, reserve, pieces, *rotation);
        if let Some(searched) = searched {
            let sp = (SEARCH_SP, reserve);
            let best = estimate_time_with(&transfers, classes, &splits, compute, sp);
            let found = estimate_time_with(&transfers, classes, &searched, compute, sp);
            if found * 100 < best * u128::from(100 - STEADY_GAIN_PERCENT) {
                splits = searched;
            }
        }
    }
    // The steady state's plan: splits by what binds it, every piece balanced over the queues
    // ([`steady`]); kept when its iterations take less time still, fill and drain included. A
    // body without guards is one class of iterations, every transfer running.
    let whole: Option<Vec<(Vec<bool>, u64)>> = match &together {
        Together::Counted { .. } => None,
        Together::Always if transfers.iter().all(|t| t.on == t.total) => {
            Some(vec![(vec![true; transfers.len()], 1)])
        }
        // (A body with a rare transfer: its classes all the same, for the estimate.)
        Together::Always => run_classes(func, &guards).map(|classes| {
            (classes.into_iter())
                .filter(|(h, _)| h.contains(&true))
                .collect()
        }),
    };
    let classes = match &together {
        Together::Counted { classes, .. } => Some(classes.as_slice()),
        Together::Always => whole.as_deref(),
    };
    // Counted classes whose steady class runs once have no steady period to shorten
    // ([`steady`]'s module doc); a body without guards is one class for every iteration.
    let unguarded = transfers.iter().all(|t| t.on == t.total);
    let classes = classes.filter(|c| unguarded || steady::has_period(&transfers, c));
    if let Some(classes) = classes {
        let pieces = |s: &[SplitData]| -> u64 { s.iter().map(SplitData::pieces).sum() };
        let least = pieces(&splits);
        let sp = (SEARCH_SP, reserve);
        let time = |s: &[SplitData]| estimate_time_with(&transfers, classes, s, compute, sp);
        let best = time(&splits);
        let score = |s: &[SplitData]| (pieces(s) >= least).then(|| time(s));
        let found =
            steady::compute_best_steady_plan(&transfers, classes, compute, *rotation, score);
        if let Some(steady) = found {
            if time(&steady) * 100 < best * u128::from(100 - STEADY_GAIN_PERCENT) {
                splits = steady;
            }
        }
    }
    // A loop whose iterations chain through its transfers takes the time of its chain: the
    // readers of the chain queue behind their writers ([`chain`]).
    if !once {
        let pairs = chain::chained_pairs(bir, body, &transfers, true);
        if pairs.iter().any(|&(_, _, carried)| carried) {
            // When every transfer is on a chain its iterations carry, they run the chain one
            // after the other: if one iteration's chain is longer than the packing's time, each
            // chain is split for its latency, as in a body that runs once ([`latency`]). (A
            // transfer off the chains, such as a load of the next iteration's input, lets a
            // pipelined loop overlap its iterations: the throughput's plan stays.)
            let links: Vec<(usize, usize)> = pairs.iter().map(|&(w, r, _)| (w, r)).collect();
            let lat = chain::all_carried(transfers.len(), &pairs)
                .then(|| latency::compute_latency_pieces(bir, body, &transfers, &links))
                .flatten();
            if let Some(lat) = lat {
                let (target, _) = pack_search(&transfers, &together, *rotation);
                if lat.chain > target {
                    splits = latency::place_pieces(&transfers, &lat.pieces, *rotation, &links);
                }
            }
            let linked = chain::align_chained_queues(bir, body, &transfers, &mut splits, pairs);
            plan.chained.extend(linked);
        } else if let Some(iv) = iv {
            let cost = (&together, compute, reserve);
            let at = (pairs, iv);
            let linked = align_when_free(func, bir, body, &transfers, &mut splits, at, cost);
            plan.chained.extend(linked);
        }
    }
    record(plan, &transfers, splits, rotation);
}

/// In a loop whose iterations do not chain through their transfers, lines up the followers of
/// the body's forward pairs ([`chain::chained_pairs`]) and of its pairs across stages
/// ([`chain::shifted_pairs`]: a reload in the stage after the store of its rows) behind their
/// leaders, when that costs no throughput that the wait saved would not: the time of the
/// iterations by [`estimate_time_with`] (every class of iterations, `sp` counted [`SEARCH_SP`])
/// stays within the time before, or, for a loop with pairs across stages and no more pieces in
/// all (`sp`'s issue slots), within the wait each iteration has unaligned (the longest such
/// leader's latency over its distance `δ`). A follower lined up
/// needs no semaphore on its leader (a queue is first in, first out, and `sp` issued the leader
/// first), so `sp` issues it when it reaches it instead of waiting there for the leader to land
/// with every transfer behind it, the next iterations' loads included (issue 32, item 1). Returns
/// the transfers lined up (none when the plan is kept).
fn align_when_free(
    func: &Function,
    bir: &Bir,
    body: &[BNode],
    transfers: &[Transfer],
    splits: &mut Vec<SplitData>,
    (pairs, iv): (Vec<(usize, usize, bool)>, Axis),
    (together, compute, reserve): (&Together, u64, u64),
) -> Vec<BirInst> {
    // Only pairs whose leader runs at the iteration the follower needs it: two versions of one
    // masked statement, or a fill's copy and a drain's, never queue behind each other.
    let guards = |k: usize| bir.insts[BirInst::new(transfers[k].inst)].guards.as_slice();
    let run = |l: usize, f: usize, d: u32| may_run_shifted(func, guards(l), guards(f), iv, d);
    let pairs: Vec<_> = (pairs.into_iter())
        .filter(|&(l, f, _)| run(l, f, 0))
        .collect();
    let shifted: Vec<_> = (chain::shifted_pairs(bir, transfers, iv).into_iter())
        .filter(|&(l, f, d)| run(l, f, d))
        .collect();
    if pairs.is_empty() && shifted.is_empty() {
        return Vec::new();
    }
    let mut aligned = vec![false; transfers.len()];
    let mut trial = splits.clone();
    let mut linked =
        chain::align_chained_marking(bir, body, transfers, &mut trial, pairs, &mut aligned);
    linked.extend(chain::align_shifted_queues(
        bir,
        transfers,
        &mut trial,
        &shifted,
        iv,
        &mut aligned,
    ));
    if linked.is_empty() {
        return linked;
    }
    let all = [(vec![true; transfers.len()], 1)];
    let classes = match together {
        Together::Counted { classes, .. } => classes.as_slice(),
        Together::Always => &all[..],
    };
    // Unaligned, a follower waits on `sp` for its leader to land: a whole latency after the
    // leader's issue, `δ` bodies earlier, so each of its
    // iterations takes at least that latency over `δ`.
    let latency = |l: usize| {
        let piece = transfers[l].bytes / splits[l].pieces().max(1);
        machine::DMA_LATENCY + machine::dma_queue_cycles(piece)
    };
    let held = (shifted.iter())
        .map(|&(l, _, d)| latency(l) / u64::from(d))
        .max()
        .unwrap_or(0);
    let iterations: u64 = classes.iter().map(|(_, n)| n).sum();
    let sp = (SEARCH_SP, reserve);
    let before = estimate_time_with(transfers, classes, splits, compute, sp);
    let after = estimate_time_with(transfers, classes, &trial, compute, sp);
    // A loss of throughput is taken for the wait only with no more pieces in all: more pieces
    // take more of `sp`'s issue slots, which `sp`, in order, pays whether or not it would wait.
    let pieces = |s: &[SplitData]| -> u64 { s.iter().map(SplitData::pieces).sum() };
    // Only across stages: a forward pair's follower waits within the body that issued its
    // leader, which the body's other transfers overlap (`emission.rs`'s balanced queues).
    let within_wait = !shifted.is_empty()
        && after <= u128::from(held) * u128::from(iterations)
        && pieces(&trial) <= pieces(splits);
    if after > before && !within_wait {
        return Vec::new();
    }
    *splits = trial;
    linked
}

/// Records the splits of a body's `transfers` in `plan`, and advances the rotation.
fn record(
    plan: &mut QueuePlan,
    transfers: &[Transfer],
    splits: Vec<SplitData>,
    rotation: &mut usize,
) {
    for (t, s) in transfers.iter().zip(splits) {
        plan.splits[BirInst::new(t.inst)] = Some(s);
    }
    *rotation = (*rotation + transfers.len()) % DMA_QUEUES;
}

/// The smallest gain, in percent of the estimated time, for which the steady view's plan
/// replaces the average's ([`Together`]), and the searched plan the views' ([`search_splits`]).
const STEADY_GAIN_PERCENT: u64 = 2;

/// The most plans [`search_splits`] weighs (the product of every transfer's split choices).
const SEARCH_PLANS: usize = 4096;

/// How [`search_splits`] counts `sp`'s issue slots, as a fraction `(num, den)`: `sp` is in
/// order and also waits (a store for its data), so a class its issue slots bind runs longer than
/// they add up to (measured on exp_stages: 16-way splits with `sp` binding the steady state ran
/// 3.5% slower than 8-way ones that the unscaled estimate found 11% slower).
const SEARCH_SP: (u64, u64) = (10, 9);

/// The plan of least [`estimate_time`] over every choice of split per transfer (1, 2, 4, ... up
/// to its largest), each transfer placed, largest first, on the queues least busy over the
/// iterations (a piece counts its cycles times the iterations its transfer runs in; ties to the
/// lowest index after `rotation`); ties between plans go to the fewest pieces. The views plan
/// each transfer with the fewest pieces that fit a per-iteration time, so when the fill runs
/// only loads and the drain only stores, the loads keep half the queues idle in the fill (and
/// the stores in the drain) to balance the steady state; this search weighs every phase.
/// Only plans of at least `min_pieces` pieces in all count: the views spread a compute-bound
/// body's transfers over more queues for their latency, which the estimate does not see
/// (measured: rmsnorm and softmax ran 2-4% slower with half the pieces), so the search moves
/// pieces between transfers and queues but never shortens the plan. `sp` counts
/// [`SEARCH_SP`]. `None` when there are more than [`SEARCH_PLANS`] choices.
fn search_splits(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    compute: u64,
    reserve: u64,
    min_pieces: u64,
    rotation: usize,
) -> Option<Vec<SplitData>> {
    let choices: Vec<Vec<u64>> = (ts.iter())
        .map(|t| {
            let most = largest_split(t.partitions);
            std::iter::successors(Some(1u64), |p| (p * 2 <= most).then_some(p * 2)).collect()
        })
        .collect();
    let plans = (choices.iter()).try_fold(1usize, |n, c| n.checked_mul(c.len()))?;
    if plans > SEARCH_PLANS {
        return None;
    }
    let runs: Vec<u64> = (0..ts.len())
        .map(|k| (classes.iter()).filter(|(h, _)| h[k]).map(|(_, n)| n).sum())
        .collect();
    let mut best: Option<(u128, u64, Vec<SplitData>)> = None;
    for mut index in 0..plans {
        let mut busy = [0u64; DMA_QUEUES];
        let mut splits = Vec::with_capacity(ts.len());
        for (k, t) in ts.iter().enumerate() {
            let p = choices[k][index % choices[k].len()];
            index /= choices[k].len();
            let piece = machine::dma_queue_cycles(t.bytes / p);
            let mut order: Vec<usize> = (0..DMA_QUEUES)
                .map(|j| (j + rotation) % DMA_QUEUES)
                .collect();
            order.sort_by_key(|&q| busy[q]);
            let mut chosen: Vec<usize> = order.into_iter().take(p as usize).collect();
            chosen.sort_by_key(|&q| (q + DMA_QUEUES - rotation) % DMA_QUEUES);
            for &q in &chosen {
                busy[q] += piece * runs[k].max(1);
            }
            splits.push(SplitData {
                queues: chosen.into_iter().map(|q| q as u8).collect(),
            });
        }
        let pieces: u64 = splits.iter().map(SplitData::pieces).sum();
        if pieces < min_pieces {
            continue;
        }
        let time = estimate_time_with(ts, classes, &splits, compute, (SEARCH_SP, reserve));
        if best
            .as_ref()
            .is_none_or(|(bt, bp, _)| (time, pieces) < (*bt, *bp))
        {
            best = Some((time, pieces, splits));
        }
    }
    best.map(|(_, _, splits)| splits)
}

/// The plan of a body's transfers in view `together`: the tightest packing
/// ([`pack_search`]), spread over more queues when the body's compute `compute` leaves the
/// transfers slack (module doc).
fn plan_view(
    transfers: &[Transfer],
    together: &Together,
    compute: u64,
    reserve: u64,
    rotation: usize,
) -> Vec<SplitData> {
    let (target, splits) = pack_search_reserved(transfers, together, rotation, reserve);
    if compute > target {
        // `sp` is in order, also waits, and issues the transfers of the enclosing bodies: it keeps
        // a tenth of the compute time to itself, and what the other bodies of the nest take
        // (`reserve`).
        let sp = (compute * 9 / 10).saturating_sub(reserve);
        if let Some(spread) = spread(transfers, together, compute, sp, rotation) {
            return spread;
        }
    }
    splits
}

/// The transfers' [`Together`] from their guards (in the plan's order), in the average view.
fn compute_together(func: &Function, guards: &[&[penguin::affine::Predicate]]) -> Together {
    let n = guards.len();
    let Some(classes) = run_classes(func, guards) else {
        return Together::Always;
    };
    let total: u64 = classes.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return Together::Always;
    }
    // A transfer that runs in few iterations (a first execution's loads) costs little on
    // average, and its latency matters more than its share of a queue: such a body keeps the
    // average view.
    let runs = |k: usize| -> u64 { (classes.iter()).filter(|(h, _)| h[k]).map(|(_, c)| c).sum() };
    if (0..n).any(|k| runs(k).saturating_mul(RARE) < total) {
        return Together::Always;
    }
    let classes: Vec<(Vec<bool>, u64)> = (classes.into_iter())
        .filter(|(h, _)| h.contains(&true))
        .collect();
    Together::counted(classes, false)
}

/// The time a plan takes over the iterations of `classes`: in each class, the longest of
/// `sp`'s issue slots (with the `reserve` the other bodies of the nest take per iteration,
/// [`shared_sp`]), the busiest queue and the body's compute `compute`, times the class's
/// iterations.
fn estimate_time(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    splits: &[SplitData],
    compute: u64,
    reserve: u64,
) -> u128 {
    estimate_time_with(ts, classes, splits, compute, ((1, 1), reserve))
}

/// [`estimate_time`] with `sp`'s issue slots counted `sp.0.0 / sp.0.1` times, and `sp.1` cycles
/// of `sp` per iteration reserved for the other bodies of the nest.
fn estimate_time_with(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    splits: &[SplitData],
    compute: u64,
    (sp_scale, reserve): ((u64, u64), u64),
) -> u128 {
    let issue = machine::dma_issue_cycles();
    (classes.iter())
        .map(|(h, n)| {
            let mut queues = [0u64; DMA_QUEUES];
            let mut sp = 0;
            for (k, (t, s)) in ts.iter().zip(splits).enumerate() {
                if !h[k] {
                    continue;
                }
                sp += issue * s.pieces();
                let piece = machine::dma_queue_cycles(t.bytes / s.pieces().max(1));
                for &q in &s.queues {
                    queues[q as usize] += piece;
                }
            }
            let busiest = queues.into_iter().max().unwrap_or(0);
            let sp = ((sp + reserve) * sp_scale.0).div_ceil(sp_scale.1.max(1));
            u128::from(sp.max(busiest).max(compute)) * u128::from(*n)
        })
        .sum()
}

/// A transfer that runs in fewer than one iteration in `RARE` is rare ([`compute_together`]).
const RARE: u64 = 4;

/// The busiest compute engine's cycles for one pass over `body` (nested loops times their trips),
/// each instruction weighted by how often its guard lets it run.
fn compute_cycles(func: &Function, bir: &Bir, body: &[BNode]) -> u64 {
    fn add(func: &Function, bir: &Bir, body: &[BNode], times: u64, busy: &mut [u64; 5]) {
        for &n in body {
            match n {
                BNode::Inst(i) => {
                    let bi = &bir.insts[i];
                    if bi.engine != Engine::Sp {
                        // Weighted like the transfers: an instruction its guard turns off in
                        // some iterations (a pipeline stage's fill or drain) costs nothing there.
                        let (on, total) = on_fraction(func, bir, i);
                        let cost = times * estimate(bi.engine, &bi.op, &bi.dst, &bi.srcs);
                        busy[bi.engine.index()] += (cost * on).div_ceil(total);
                    }
                }
                BNode::Loop(l) => add(
                    func,
                    bir,
                    &bir.loops[l].body,
                    times * bir.loops[l].trip,
                    busy,
                ),
            }
        }
    }
    let mut busy = [0; 5];
    add(func, bir, body, 1, &mut busy);
    busy.into_iter().max().unwrap_or(0)
}

/// The transfer of BIR instruction `i`, if it is a load or a store.
fn transfer(func: &Function, bir: &Bir, i: BirInst) -> Option<Transfer> {
    let bi = &bir.insts[i];
    let tile = dma_tile(&bi.op, &bi.dst, &bi.srcs)?;
    // A scatter moves as one piece (module doc): its pieces could not overlap.
    let partitions = match bi.op {
        Op::Scatter { .. } => 1,
        _ => tile.access.size.first().copied().unwrap_or(1).max(1),
    };
    // The bytes the transfer moves on its queues (in the HBM side's type), which set its pieces'
    // lengths.
    let bytes = transfer_bytes(func, &bi.op, &bi.dst, &bi.srcs)?;
    let (on, total) = on_fraction(func, bir, i);
    Some(Transfer {
        inst: i.index(),
        partitions,
        bytes,
        on,
        total,
    })
}

mod chain;
pub(crate) use chain::queued_behind;
mod latency;
mod shared_sp;
mod steady;
#[cfg(test)]
mod tests;
