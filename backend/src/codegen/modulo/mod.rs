//! The modulo scheduler: the order in which every engine runs a pipelined loop's body.
//!
//! Both pipelining paths hand the backend one extended loop per pipelined loop (the annotated
//! pipeliner's, or the emergent path's): every instruction already belongs to a stage, which its
//! index offset `iv − s` and its ring slots express. What is left is the **order of the body**:
//! each engine runs its instructions of one body in that order, in order, iteration after
//! iteration, so an order that puts later-stage work whose inputs are ready (from earlier
//! iterations) before earlier-stage work that waits for a load lets the engines overlap.
//!
//! [`compute_modulo_schedule`] is an iterative modulo scheduler (after Rau, 1994) over the loop
//! dependence graph ([`crate::codegen::ldg`]), in the extended loop's own frame (the user's stages are
//! fixed; a schedule only chooses start offsets):
//! - **ResMII** per resource: each compute engine's busy cycles per iteration of the **steady
//!   state**, `sp`'s issue slots, and the busiest of the 16 DMA queues (from the queue plan). In
//!   the steady state every stage runs: an instruction counts for its steady share
//!   ([`steady_shares`](shares::steady_shares)), the fraction of the iterations that run it over that of the
//!   instruction run most often (a stage's work counts whole although the fill and the drain
//!   skip it; a prefetch's copies that take turns share one; an inner loop's executions that
//!   its enclosing stage turns off do not count). The same busy cycles drive the II search and
//!   the predicted periods, so ResMII bounds them. (The average over the fill and the drain,
//!   [`ModuloSchedule::res_average`], is kept for [`crate::codegen::expand`]: a loop of few iterations
//!   is mostly fill and drain.);
//! - **RecMII** from the dependence cycles: the smallest `II` for which no cycle has
//!   `Σ latency > II · Σ distance`, found by binary search with a longest-path (Bellman-Ford)
//!   check (which stops at the first cycle of its predecessor graph, [`feasible`](recurrence::feasible)); buffer
//!   recurrences are cycles like any other (the anti edge from a ring's last reader
//!   to its next writer has the ring's depth as distance). The cycle that sets it is reported;
//! - `II` searched upward from `MII = max(ResMII, RecMII)` in steps of 1%: each instruction, in
//!   list order over the same-iteration edges (earliest start first, then longest path to the
//!   end), gets the earliest start `σ` that meets every scheduled neighbour's edge
//!   (`σ_c + d·II ≥ σ_p + latency`) and a free slot of its engine in a modulo reservation table;
//!   each engine's work of one body also fits in one window of `II` cycles, because an in-order
//!   engine cannot start body `j + 1` before it finishes body `j`. Two instructions whose guards
//!   never hold in one iteration ([`LoopDeps::exclusive`]: the copies of a prefetch, or a folded
//!   zeroing's first matmul and the accumulating one) never share their engine in an iteration:
//!   neither the table nor the window counts one against the other.
//!
//! The search is a function of the loop's graph, busy cycles and MII alone; each thread
//! remembers its latest searches, so a loop scheduled again unchanged (by the retiming's trials,
//! a ring expansion's next round, the compilation of the kernel they keep) is not searched again.
//!
//! The order of `σ` (ties in program order), improved by single moves ([`improve_order`]), is
//! emitted when its predicted steady-state period ([`compute_order_period`]: the dependence
//! cycles plus each in-order engine's sequence) is at least [`MIN_GAIN_PERCENT`] shorter than the
//! body's order before (the written order after the list scheduler); otherwise the body keeps
//! its order, and the log says so. A loop the annotated pipeliner did not touch (the emergent
//! path's, which chose its order by measurement, or one not pipelined) always keeps its order
//! and is not searched. Either way, the **II is that of the emitted order**: its predicted
//! period (at least the MII), with offsets where that order starts each instruction
//! ([`order_offsets`]). The II search's reservation table does not see that the engines run in
//! order, so the order it proposes can run slower than the II it reached (reported beside it);
//! what runs is the emitted order. Every same-iteration edge has a positive latency, so
//! `σ_p < σ_c`, and a
//! move is kept only when every same-iteration edge still goes forward: the new order keeps
//! every dependence of the body, so the sequential meaning of the loop is unchanged (the
//! synchronisation analysis then derives the waits from the new order), only the engines'
//! interleaving changes.
//!
//! One analysis per file: `shares` weighs the busy cycles and finds ResMII, `recurrence`
//! finds RecMII and its cycle, `search` is the II search, `order` predicts, improves and
//! places body orders; this file puts them together ([`compute_modulo_schedule`]) and reorders
//! the bodies ([`schedule_loops`]).
//!
//! Invariant: a loop is reordered only when its schedule exists; its order is a topological order
//! of the same-iteration edges of its dependence graph.

mod order;
mod recurrence;
mod search;
mod shares;
#[cfg(test)]
mod tests;

use crate::codegen::bir::{dma_tile, BNode, Bir, BirInst, BirLoop};
use crate::codegen::ldg::{compute_loop_deps, DepKind, LoopDeps};
use crate::codegen::queues::QueuePlan;
use penguin::{Function, Tensor};
use recurrence::compute_rec_mii;
use search::search_schedule_remembered;
use shares::{compute_loads, compute_res_mii, LoadData};

pub use order::{compute_order_cycle, compute_order_period, MAX_ENGINE_ORDERS, MAX_IMPROVE};
use order::{exhaust_engine_orders, improve_order, order_offsets};

/// The smallest predicted gain, in percent of the period, for which a body is reordered.
pub const MIN_GAIN_PERCENT: u64 = 2;

pub use crate::codegen::schedule_summary::Limit;
use crate::codegen::schedule_summary::{CycleData, OffsetData, ScheduleSummaryData};

/// The schedule of one pipelined loop.
#[derive(Clone, Debug)]
pub struct ModuloSchedule {
    /// The BIR loop.
    pub lp: BirLoop,
    /// The II of the emitted order: its predicted period (at least the MII).
    pub ii: u64,
    /// Whether the loop has a steady state ([`steady_shares`](shares::steady_shares)); without one, ResMII and the
    /// predicted periods are averages over its iterations, all fill and drain.
    pub steady_state: bool,
    /// The II the search reached ([`search_schedule`](search::search_schedule); a kept-order loop's is its II). Its
    /// reservation table does not see that engines run in order, so the emitted order's period
    /// can be above it ([`crate::codegen::expand`] compares a peeled loop's recurrence with it).
    pub search_ii: u64,
    pub res_mii: u64,
    /// The busiest resource's cycles per iteration averaged over the whole loop, fill and drain
    /// included (each instruction's busy time times the fraction of the iterations its guard
    /// runs it, [`guard_fraction`](crate::cost::guards::guard_fraction)): at most ResMII. In a loop of few iterations, most are fill
    /// or drain, and its time follows this average more than the steady state
    /// ([`crate::codegen::expand`] adds ring slots against it).
    pub res_average: u64,
    /// The resource that sets `res_mii`.
    pub res_resource: String,
    pub rec_mii: u64,
    /// The dependence cycle that sets `rec_mii` (empty when there is none).
    pub rec_cycle: CycleData,
    /// That cycle's edges: kind, buffer, and whether its two instructions run on different
    /// engines (an edge within one in-order engine is that engine's order anyway), or its source
    /// is a transfer (which reads or writes the slot until it lands, long after `sp` issued it:
    /// a store's slot reused by the next load waits for the store's DMA, not for `sp`'s order).
    pub rec_edges: Vec<(DepKind, Tensor, bool)>,
    /// Per body instruction (program order): the instruction, its stage and its start offset `σ`.
    pub insts: Vec<(BirInst, Option<u32>, u64)>,
    /// The predicted steady-state period of the order the body is emitted in
    /// ([`compute_order_period`]).
    pub predicted: u64,
    /// The predicted period of the body's order before this pass (program order after the list
    /// scheduler, or the emergent path's order).
    pub predicted_before: u64,
    /// The predicted period of the schedule's order (offset order, improved by
    /// [`improve_order`]), emitted unless the body keeps its order.
    pub scheduled: u64,
    /// Whether the body keeps its earlier order (predicted no slower than the schedule's).
    pub kept_order: bool,
    /// The body's instructions in the order the schedule emits them: by start offset, then
    /// improved by [`improve_order`].
    pub order: Vec<BirInst>,
    /// The shortest predicted period of any order of the body, and how many orders of its
    /// engines' sequences that is the best of ([`exhaust_engine_orders`]): for a searched loop
    /// whose engines' sequences combine in at most [`MAX_ENGINE_ORDERS`] ways, else `None`.
    pub order_bound: Option<(u64, usize)>,
    /// The loop's dependence graph and its instructions' weighted busy cycles, for
    /// [`ModuloSchedule::period_cycle`].
    deps: LoopDeps,
    busy: Vec<u64>,
}

impl ModuloSchedule {
    pub fn mii(&self) -> u64 {
        self.res_mii.max(self.rec_mii)
    }

    /// What sets the MII.
    pub fn limited_by(&self) -> Limit {
        if self.rec_mii > self.res_mii {
            Limit::Recurrence(self.rec_cycle.clone())
        } else {
            Limit::Resource(self.res_resource.clone())
        }
    }

    /// Whether the predicted period of the emitted order is more than 2% above the MII: then a
    /// cycle through the engines' orders, not a resource or a recurrence alone, sets it.
    pub fn predicted_above_mii(&self) -> bool {
        self.predicted * 100 > self.mii() * 102
    }

    /// The body order the loop is emitted in.
    pub fn emitted_order(&self) -> Vec<BirInst> {
        if self.kept_order {
            self.deps.insts.clone()
        } else {
            self.order.clone()
        }
    }

    /// The dependence cycle, through the in-order engines' sequences in the emitted order, that
    /// sets the predicted period ([`compute_order_cycle`]): when the period is above the MII, the
    /// chain of stages, buffers and engine orders that holds the loop back.
    fn period_cycle(&self, func: &Function, bir: &Bir) -> CycleData {
        let pos: Vec<usize> = self
            .emitted_order()
            .iter()
            .filter_map(|i| self.deps.insts.iter().position(|x| x == i))
            .collect();
        compute_order_cycle(func, bir, &self.deps, &self.busy, &pos)
    }

    /// The typed account of this schedule (its `Display` is the line of `--log backend`).
    pub fn summary(&self, func: &Function, bir: &Bir) -> ScheduleSummaryData {
        let lp = &bir.loops[self.lp];
        let mut offsets: Vec<&(BirInst, Option<u32>, u64)> = self.insts.iter().collect();
        offsets.sort_by_key(|x| x.2);
        ScheduleSummaryData {
            loop_name: func.display_iv(lp.axis).to_string(),
            trip: lp.trip,
            ii: self.ii,
            mii: self.mii(),
            res_mii: self.res_mii,
            res_resource: self.res_resource.clone(),
            rec_mii: self.rec_mii,
            rec_cycle: self.rec_cycle.clone(),
            search_ii: self.search_ii,
            kept_order: self.kept_order,
            predicted: self.predicted,
            predicted_before: self.predicted_before,
            scheduled: self.scheduled,
            period_cycle: self
                .predicted_above_mii()
                .then(|| self.period_cycle(func, bir)),
            order_bound: self.order_bound,
            steady_state: self.steady_state,
            offsets: offsets
                .into_iter()
                .map(|&(i, stage, sigma)| OffsetData {
                    inst: inst_label(func, bir, i),
                    stage,
                    sigma,
                })
                .collect(),
        }
    }
}

/// A short name of an instruction: engine, operation and destination buffer.
pub fn inst_label(func: &Function, bir: &Bir, i: BirInst) -> String {
    let bi = &bir.insts[i];
    let buf = dma_tile(&bi.op, &bi.dst, &bi.srcs).unwrap_or(&bi.dst);
    format!(
        "{}.{}({})",
        bi.engine.name(),
        bi.op.name(),
        func.display_name(buf.tensor)
    )
}

/// The modulo schedule of BIR loop `l`, or `None` when its body holds a nested loop or fewer
/// than two instructions, or runs fewer than two iterations.
pub fn compute_modulo_schedule(
    func: &Function,
    bir: &Bir,
    plan: &QueuePlan,
    l: BirLoop,
) -> Option<ModuloSchedule> {
    if bir.loops[l].trip < 2 || bir.loops[l].body.len() < 2 {
        return None;
    }
    let deps = compute_loop_deps(func, bir, plan, l)?;
    let load = compute_loads(func, bir, plan, &deps, bir.loops[l].axis);
    let (res_mii, res_resource) = compute_res_mii(bir, &deps, &load.steady, load.queue_bound);
    let (res_average, _) = compute_res_mii(bir, &deps, &load.busy, load.average_queues);
    let (rec_mii, rec_cycle, rec_edges) = compute_rec_mii(func, bir, &deps);
    let mii = res_mii.max(rec_mii).max(1);
    let search_from = res_average.max(rec_mii).max(1);
    let written: Vec<usize> = (0..deps.insts.len()).collect();
    let predicted_before =
        compute_order_period(bir, &deps, &load.steady, &written).max(load.queue_bound);
    let choice = if func.axes[bir.loops[l].axis].attrs.pipelined.is_none() {
        // A loop the annotated pipeliner did not touch keeps its order: the emergent path
        // chose it by measurement (`emergent::stages`; measured on the suite, offset order
        // costs rmsnorm 3% and layernorm 0.2% there), and an unpipelined loop runs as
        // written.
        OrderChoice {
            search_ii: predicted_before.max(search_from),
            order: written.clone(),
            scheduled: predicted_before,
            kept_order: true,
            order_bound: None,
        }
    } else {
        search_order(bir, &deps, &load, search_from, predicted_before)?
    };
    // What runs is the emitted order: its II is that order's predicted period, and its offsets
    // where that order starts each instruction. (The II search's reservation table does not
    // see that the engines are in order; it only proposes the order.)
    let (emitted, predicted) = match choice.kept_order {
        true => (&written, predicted_before),
        false => (&choice.order, choice.scheduled),
    };
    let ii = predicted.max(mii);
    let sigma = order_offsets(bir, &deps, &load.steady, ii, emitted);
    Some(ModuloSchedule {
        steady_state: load.steady_state,
        predicted,
        predicted_before,
        scheduled: choice.scheduled,
        kept_order: choice.kept_order,
        lp: l,
        ii,
        search_ii: choice.search_ii,
        res_mii,
        res_resource,
        res_average,
        rec_mii,
        rec_cycle,
        rec_edges,
        order: choice.order.iter().map(|&k| deps.insts[k]).collect(),
        order_bound: choice.order_bound,
        busy: load.steady,
        insts: offsets(bir, &deps, &sigma),
        deps,
    })
}

/// The order [`compute_modulo_schedule`] chooses for a body, before it decides which order is
/// emitted.
struct OrderChoice {
    /// The II the search reached ([`ModuloSchedule::search_ii`]).
    search_ii: u64,
    /// The schedule's order (positions in program order).
    order: Vec<usize>,
    /// Its predicted period ([`ModuloSchedule::scheduled`]).
    scheduled: u64,
    /// Whether the body keeps its earlier order ([`ModuloSchedule::kept_order`]).
    kept_order: bool,
    /// [`ModuloSchedule::order_bound`].
    order_bound: Option<(u64, usize)>,
}

/// The order of a body the annotated pipeliner pipelined: the II search's offset order from
/// `search_from`, replaced by the best of every order of its engines' sequences when there are
/// few and it is faster, then improved by single moves; kept only for a predicted gain of at
/// least [`MIN_GAIN_PERCENT`] over `predicted_before`. `None` when the search finds no
/// schedule.
fn search_order(
    bir: &Bir,
    deps: &LoopDeps,
    load: &LoadData,
    search_from: u64,
    predicted_before: u64,
) -> Option<OrderChoice> {
    let (steady, queue_bound) = (&load.steady, load.queue_bound);
    let (ii, sigma) = search_schedule_remembered(bir, deps, &load.busy, steady, search_from)?;
    let mut order: Vec<usize> = (0..sigma.len()).collect();
    order.sort_by_key(|&k| (sigma[k], k));
    let mut order_bound = None;
    // The best of every order when there are few, else single moves from offset order.
    let best = exhaust_engine_orders(bir, deps, steady, &order);
    if let Some((o, p, n)) = best {
        order_bound = Some((p.max(queue_bound), n));
        if p < compute_order_period(bir, deps, steady, &order) {
            order = o;
        }
    }
    let predicted = improve_order(bir, deps, steady, &mut order).max(queue_bound);
    // The costs are estimates, so a small predicted gain can be a measured loss: the
    // body is reordered only for a predicted gain of at least [`MIN_GAIN_PERCENT`].
    let kept_order = predicted * 100 > predicted_before * (100 - MIN_GAIN_PERCENT);
    Some(OrderChoice {
        search_ii: ii,
        order,
        scheduled: predicted,
        kept_order,
        order_bound,
    })
}

/// Each instruction of the body with its stage and its start offset (`sigma`, from the
/// earliest).
fn offsets(bir: &Bir, deps: &LoopDeps, sigma: &[i64]) -> Vec<(BirInst, Option<u32>, u64)> {
    let base = sigma.iter().copied().min().unwrap_or(0);
    (deps.insts.iter().zip(sigma))
        .map(|(&i, &s)| (i, bir.insts[i].stage, (s - base) as u64))
        .collect()
}

/// Schedules every flat loop body of `bir` that runs at least two iterations and reorders it by
/// start offset; returns the schedules.
pub fn schedule_loops(func: &Function, bir: &mut Bir, plan: &QueuePlan) -> Vec<ModuloSchedule> {
    let mut out = Vec::new();
    for l in bir.loops.keys() {
        let Some(s) = compute_modulo_schedule(func, bir, plan, l) else {
            continue;
        };
        if s.kept_order {
            out.push(s);
            continue;
        }
        bir.loops[l].body = s.order.iter().map(|&i| BNode::Inst(i)).collect();
        out.push(s);
    }
    out
}
