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
//!   ([`steady_shares`]), the fraction of the iterations that run it over that of the
//!   instruction run most often (a stage's work counts whole although the fill and the drain
//!   skip it; a prefetch's copies that take turns share one; an inner loop's executions that
//!   its enclosing stage turns off do not count). The same busy cycles drive the II search and
//!   the predicted periods, so ResMII bounds them. (The average over the fill and the drain,
//!   [`ModuloSchedule::res_average`], is kept for [`crate::codegen::expand`]: a loop of few iterations
//!   is mostly fill and drain.);
//! - **RecMII** from the dependence cycles: the smallest `II` for which no cycle has
//!   `Σ latency > II · Σ distance`, found by binary search with a longest-path (Bellman-Ford)
//!   check (which stops at the first cycle of its predecessor graph, [`feasible`]); buffer
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
//! Invariant: a loop is reordered only when its schedule exists; its order is a topological order
//! of the same-iteration edges of its dependence graph.

use crate::codegen::bir::{dma_tile, tile_bytes, transfer_bytes, BNode, Bir, BirInst, BirLoop};
use crate::codegen::ldg::{compute_loop_deps, DepData, DepKind, LoopDeps};
use crate::codegen::queues::QueuePlan;
use crate::cost::guards::{guard_fraction, running_iterations};
use penguin::{Axis, Function, Tensor};
use petgraph::visit::EdgeRef;
use runtime_sim::isa::Engine;
use runtime_sim::machine::{self, DMA_QUEUES};
use std::ops::Range;

/// The smallest predicted gain, in percent of the period, for which a body is reordered.
pub const MIN_GAIN_PERCENT: u64 = 2;

pub use crate::codegen::schedule_summary::Limit;
use crate::codegen::schedule_summary::{
    CycleData, CycleEdge, CycleStep, OffsetData, ScheduleSummaryData,
};

/// The schedule of one pipelined loop.
#[derive(Clone, Debug)]
pub struct ModuloSchedule {
    /// The BIR loop.
    pub lp: BirLoop,
    /// The II of the emitted order: its predicted period (at least the MII).
    pub ii: u64,
    /// Whether the loop has a steady state ([`steady_shares`]); without one, ResMII and the
    /// predicted periods are averages over its iterations, all fill and drain.
    pub steady_state: bool,
    /// The II the search reached ([`search_schedule`]; a kept-order loop's is its II). Its
    /// reservation table does not see that engines run in order, so the emitted order's period
    /// can be above it ([`crate::codegen::expand`] compares a peeled loop's recurrence with it).
    pub search_ii: u64,
    pub res_mii: u64,
    /// The busiest resource's cycles per iteration averaged over the whole loop, fill and drain
    /// included (each instruction's busy time times the fraction of the iterations its guard
    /// runs it, [`guard_fraction`]): at most ResMII. In a loop of few iterations, most are fill
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

/// The **steady state** of a pipelined loop is the iterations in which every stage of its body
/// runs (every iteration, in a loop without stages); the fill and the drain run only some
/// stages. Each instruction's **steady share** is the fraction of those iterations that run it,
/// as `(numerator, denominator)`: a stage's work counts whole, and instructions that take turns
/// (a prefetch's copies; a folded zeroing's first matmul and the accumulating one) count for
/// their turns. An inner loop's executions that its enclosing stage turns off run empty and do
/// not count ([`running_iterations`]). `None` when the loop has no steady state (no two
/// consecutive iterations run every stage: fewer iterations than stages, or one more), or its
/// guards name loops together past [`crate::cost::guards::MAX_GUARD_ENUMERATION`] points.
fn steady_shares(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
    axis: Axis,
) -> Option<Vec<(u64, u64)>> {
    let runs: Vec<Vec<Range<u64>>> = deps
        .insts
        .iter()
        .map(|&i| running_iterations(func, &bir.insts[i].guards, axis))
        .collect::<Option<_>>()?;
    let stage = |k: usize| bir.insts[deps.insts[k]].stage;
    let mut stages: Vec<u32> = (0..runs.len()).filter_map(stage).collect();
    stages.sort_unstable();
    stages.dedup();
    // The iterations cut into segments in which every instruction runs throughout or not at
    // all: one test per segment, however many iterations it holds.
    let trip = func.axes[axis].trip_count().max(0) as u64;
    let mut cuts: Vec<u64> = runs
        .iter()
        .flatten()
        .flat_map(|r| [r.start, r.end])
        .collect();
    cuts.extend([0, trip]);
    cuts.sort_unstable();
    cuts.dedup();
    let runs_at = |k: usize, v: u64| runs[k].iter().any(|r| r.contains(&v));
    let mut on = vec![0u64; runs.len()];
    let (mut steady, mut consecutive, mut last_full) = (0u64, false, false);
    for w in cuts.windows(2) {
        let (v, len) = (w[0], w[1] - w[0]);
        let full =
            (stages.iter()).all(|&s| (0..runs.len()).any(|k| stage(k) == Some(s) && runs_at(k, v)));
        consecutive |= full && (len >= 2 || last_full);
        last_full = full;
        if full {
            steady += len;
            for (k, n) in on.iter_mut().enumerate() {
                *n += if runs_at(k, v) { len } else { 0 };
            }
        }
    }
    if !consecutive {
        return None;
    }
    Some(on.into_iter().map(|n| (n, steady)).collect())
}

/// `x` times a steady share, rounded up.
fn share_of(x: u64, (num, den): (u64, u64)) -> u64 {
    let v = (u128::from(x) * u128::from(num)).div_ceil(u128::from(den.max(1)));
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// Whether position `k` takes turns with another instruction ([`LoopDeps::exclusive`]).
fn takes_turns(deps: &LoopDeps, k: usize) -> bool {
    deps.exclusive.iter().any(|&(a, b)| a == k || b == k)
}

/// Each instruction's busy time times its share (its [steady share](steady_shares): the busy
/// cycles per iteration of the steady state, which ResMII and the predicted period of an order
/// use; or its [`guard_fraction`]: the average over the whole loop, which the II search uses).
fn busy_by_share(deps: &LoopDeps, shares: &[(u64, u64)]) -> Vec<u64> {
    deps.busy
        .iter()
        .zip(shares)
        .map(|(&b, &sh)| share_of(b, sh))
        .collect()
}

/// The busiest DMA queue's cycles in one steady-state iteration (each transfer's pieces times
/// its [steady share](steady_shares)): transfers on one queue run first in, first out, so no
/// order of the body runs faster.
fn steady_queue_bound(
    func: &Function,
    bir: &Bir,
    plan: &QueuePlan,
    deps: &LoopDeps,
    shares: &[(u64, u64)],
) -> u64 {
    let mut queues = [0u64; DMA_QUEUES];
    for (k, &i) in deps.insts.iter().enumerate() {
        let bi = &bir.insts[i];
        let Some(split) = plan.split(i) else {
            continue;
        };
        let tile = dma_tile(&bi.op, &bi.dst, &bi.srcs).unwrap_or(&bi.dst);
        let bytes = transfer_bytes(func, &bi.op, &bi.dst, &bi.srcs)
            .unwrap_or_else(|| tile_bytes(func, tile));
        let piece = machine::dma_queue_cycles(bytes.div_ceil(split.pieces().max(1)));
        for &q in &split.queues {
            queues[q as usize] += share_of(piece, shares[k]);
        }
    }
    queues.iter().copied().max().unwrap_or(0)
}

/// ResMII and its resource: the busiest engine's steady busy cycles per iteration
/// ([`busy_by_share`]), or the busiest DMA queue's, `queues` ([`steady_queue_bound`] with the same
/// shares as `busy`).
fn compute_res_mii(bir: &Bir, deps: &LoopDeps, busy: &[u64], queues: u64) -> (u64, String) {
    let mut per_engine = [0u64; 5];
    for (k, &i) in deps.insts.iter().enumerate() {
        per_engine[bir.insts[i].engine.index()] += busy[k];
    }
    let mut best = (1u64, "nothing".to_string());
    for e in Engine::ALL {
        if per_engine[e.index()] > best.0 {
            best = (per_engine[e.index()], e.name().to_string());
        }
    }
    if queues > best.0 {
        best = (queues, "dma queues".to_string());
    }
    best
}

fn longest_paths(deps: &LoopDeps, ii: u64, pred: &mut [Option<usize>]) -> Result<Vec<i64>, usize> {
    let n = deps.insts.len();
    let mut dist = vec![0i64; n];
    for round in 0..=n {
        let mut changed = None;
        for e in deps.graph.edge_references() {
            let (p, c) = (e.source().index(), e.target().index());
            let w = e.weight().latency as i64 - i64::from(e.weight().distance) * ii as i64;
            if dist[p] + w > dist[c] {
                dist[c] = dist[p] + w;
                pred[c] = Some(p);
                changed = Some(c);
            }
        }
        match changed {
            None => return Ok(dist),
            Some(c) if round == n => return Err(c),
            Some(_) => {}
        }
    }
    Ok(dist)
}

/// Whether no cycle of `deps` is positive at `ii` ([`longest_paths`] succeeds). The relaxation
/// stops as soon as its predecessor graph has a cycle: the last node of such a cycle to be
/// raised was raised from its predecessor's final distance, while its successor was raised
/// from a smaller one, so the cycle's weights sum to more than zero.
fn feasible(deps: &LoopDeps, ii: u64) -> bool {
    let n = deps.insts.len();
    let edges: Vec<(usize, usize, i64)> = deps
        .graph
        .edge_references()
        .map(|e| {
            let w = e.weight().latency as i64 - i64::from(e.weight().distance) * ii as i64;
            (e.source().index(), e.target().index(), w)
        })
        .collect();
    let mut dist = vec![0i64; n];
    let mut pred = vec![usize::MAX; n];
    for _ in 0..=n {
        let mut changed = false;
        for &(p, c, w) in &edges {
            if dist[p] + w > dist[c] {
                dist[c] = dist[p] + w;
                pred[c] = p;
                changed = true;
            }
        }
        if !changed {
            return true;
        }
        if has_cycle(&pred) {
            return false;
        }
    }
    false
}

/// Whether following `pred` (`usize::MAX`: none) from some node comes back to it.
fn has_cycle(pred: &[usize]) -> bool {
    // 0: unseen, 1: on the walk under way, 2: known to lead to no cycle.
    let mut state = vec![0u8; pred.len()];
    for start in 0..pred.len() {
        let mut v = start;
        while v != usize::MAX && state[v] == 0 {
            state[v] = 1;
            v = pred[v];
        }
        if v != usize::MAX && state[v] == 1 {
            return true;
        }
        let mut u = start;
        while u != usize::MAX && state[u] == 1 {
            state[u] = 2;
            u = pred[u];
        }
    }
    false
}

/// The smallest `II` at which no cycle of `deps` has `Σ latency > II · Σ distance` (binary search
/// over [`feasible`]); 0 when the graph has no cycle (every cycle has a positive distance, so
/// `II = 0` fails exactly when one exists).
fn smallest_ii(deps: &LoopDeps) -> u64 {
    if feasible(deps, 0) {
        return 0;
    }
    let total: u64 = deps
        .graph
        .edge_references()
        .map(|e| e.weight().latency)
        .sum();
    search_ii(deps, total.max(1))
}

/// [`smallest_ii`] when it is below `bound`, else `None`: one check at `bound − 1` answers
/// most candidates of a search that keeps only shorter periods. (Feasibility is monotone in
/// `II`: each edge's weight `latency − II · distance` only falls as `II` grows.)
fn smallest_ii_below(deps: &LoopDeps, bound: u64) -> Option<u64> {
    if bound == 0 || !feasible(deps, bound - 1) {
        return None;
    }
    if feasible(deps, 0) {
        return Some(0);
    }
    Some(search_ii(deps, bound - 1))
}

/// The smallest feasible `II` in `(0, hi]`, given that `0` is not feasible and `hi` is
/// (binary search over [`feasible`]).
fn search_ii(deps: &LoopDeps, hi: u64) -> u64 {
    let (mut lo, mut hi) = (0u64, hi);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if feasible(deps, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// RecMII, the cycle that sets it, and that cycle's edges.
fn compute_rec_mii(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
) -> (u64, CycleData, Vec<(DepKind, Tensor, bool)>) {
    let hi = smallest_ii(deps);
    if hi == 0 {
        return (0, CycleData::default(), Vec::new());
    }
    let (cycle, edges) = critical_cycle(func, bir, deps, hi);
    (hi, cycle, edges)
}

/// The cycle of `deps` that needs `hi` (its smallest feasible `II`): a positive cycle at
/// `hi − 1`, named by its instructions and edges, and its edges' kinds and buffers.
fn critical_cycle(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
    hi: u64,
) -> (CycleData, Vec<(DepKind, Tensor, bool)>) {
    let n = deps.insts.len();
    let mut pred = vec![None; n];
    let Err(mut v) = longest_paths(deps, hi.saturating_sub(1), &mut pred) else {
        return (CycleData::default(), Vec::new());
    };
    for _ in 0..n {
        v = pred[v].unwrap_or(v);
    }
    let mut cycle = vec![v];
    let mut u = pred[v].unwrap_or(v);
    while u != v && cycle.len() <= n {
        cycle.push(u);
        u = pred[u].unwrap_or(v);
    }
    cycle.reverse();
    let mut text = CycleData::default();
    let mut edges = Vec::new();
    for (k, &a) in cycle.iter().enumerate() {
        let b = cycle[(k + 1) % cycle.len()];
        // The heaviest edge from `a` to `b` at `hi − 1` is the one the relaxation followed.
        let w = |e: &DepData| e.latency as i64 - i64::from(e.distance) * (hi as i64 - 1);
        let e = deps
            .graph
            .edges_connecting(deps.node(a), deps.node(b))
            .map(|e| *e.weight())
            .max_by_key(w);
        let (ia, ib) = (deps.insts[a], deps.insts[b]);
        if let Some(e) = e {
            edges.push((
                e.kind,
                e.tensor,
                bir.insts[ia].engine != bir.insts[ib].engine || bir.insts[ia].engine == Engine::Sp,
            ));
        }
        if k == 0 {
            text.start = inst_label(func, bir, ia);
        }
        text.edges.push(edge_label(func, bir, ia, ib, e));
    }
    (text, edges)
}

/// The edge of a cycle from instruction `a` to `b`: the iteration distance and buffer of a
/// loop-carried dependence, the user's stages of a flow into a later stage, an in-order engine's
/// next instruction.
fn edge_label(func: &Function, bir: &Bir, a: BirInst, b: BirInst, e: Option<DepData>) -> CycleEdge {
    let to = inst_label(func, bir, b);
    let Some(e) = e else {
        return CycleEdge {
            step: CycleStep::Direct,
            to,
        };
    };
    let tensor = func.display_name(e.tensor).to_string();
    let distance = e.distance;
    let step = match e.kind {
        DepKind::Order => CycleStep::InOrder {
            engine: bir.insts[a].engine,
            next_body: distance > 0,
        },
        _ if distance == 0 => CycleStep::Direct,
        DepKind::Flow => CycleStep::Flow {
            distance,
            tensor,
            stages: match (bir.insts[a].stage, bir.insts[b].stage) {
                (Some(sa), Some(sb)) if sb > sa => Some((sa, sb)),
                _ => None,
            },
        },
        DepKind::Anti => CycleStep::SlotReused { distance, tensor },
        _ => CycleStep::Carried { distance, tensor },
    };
    CycleEdge { step, to }
}

/// Whether `[t, t + b)` overlaps `[x, x + bx)` modulo `ii`; when it does, how far `t` must move
/// later to clear it.
fn modulo_clash(t: i64, b: i64, x: i64, bx: i64, ii: i64) -> Option<i64> {
    if b == 0 || bx == 0 {
        return None;
    }
    let r = (t - x).rem_euclid(ii);
    if r < bx {
        Some(bx - r)
    } else if r + b > ii {
        Some(ii - r + bx)
    } else {
        None
    }
}

/// The order in which [`try_schedule`] places the ready instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Priority {
    /// Earliest start first, then the longest path to the end: the classic list order.
    Earliest,
    /// Latest earliest-start first: an instruction that a long same-iteration chain (a load's
    /// latency) pushes late is placed before the flexible work of its engine, which then fills
    /// the engine's window around it.
    Constrained,
}

/// Per `II`: the earliest starts ([`longest_paths`]) and the longest path from each instruction
/// to the end (the reverse relaxation), or `None` when a cycle needs a larger `II`. Every list
/// order of [`compute_modulo_schedule`] searches the same `II`s, so each is computed once.
#[derive(Default)]
struct PathCache(std::collections::HashMap<u64, Option<Paths>>);

/// The earliest starts and the heights at one `II`.
type Paths = (Vec<i64>, Vec<i64>);

impl PathCache {
    fn get(&mut self, deps: &LoopDeps, ii: u64) -> Option<&Paths> {
        self.0
            .entry(ii)
            .or_insert_with(|| {
                let n = deps.insts.len();
                let iii = ii as i64;
                let est = longest_paths(deps, ii, &mut vec![None; n]).ok()?;
                let mut height = vec![0i64; n];
                // (The edges backwards: a height flows from consumer to producer, so a chain
                // whose edges come in program order settles in one round, not one per link.)
                for _ in 0..=n {
                    let mut changed = false;
                    for e in deps.graph.raw_edges().iter().rev() {
                        let (p, c) = (e.source().index(), e.target().index());
                        let w = e.weight.latency as i64 - i64::from(e.weight.distance) * iii;
                        if height[c] + w > height[p] {
                            height[p] = height[c] + w;
                            changed = true;
                        }
                    }
                    if !changed {
                        break;
                    }
                }
                Some((est, height))
            })
            .as_ref()
    }
}

/// A schedule at `ii`: the start offset of every instruction, or `None`.
fn try_schedule(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    ii: u64,
    priority: Priority,
    from_est: bool,
    paths: &mut PathCache,
) -> Option<Vec<i64>> {
    let n = deps.insts.len();
    let iii = ii as i64;
    let (est, height) = paths.get(deps, ii)?;
    let mut pending: Vec<usize> = vec![0; n];
    for e in deps.graph.edge_references() {
        if e.weight().distance == 0 {
            pending[e.target().index()] += 1;
        }
    }
    let mut sigma: Vec<Option<i64>> = vec![None; n];
    // Per engine: the placed (start, busy, position) intervals.
    let mut table: Vec<Vec<(i64, i64, usize)>> = vec![Vec::new(); 5];
    // Without exclusive pairs, every placed interval of an engine is clear of the others modulo
    // `ii`, so the engine's reservations are kept sorted ([`Reservations`]) and its window as
    // a running minimum and maximum; with them, the intervals are scanned as placed.
    let disjoint = deps.exclusive.is_empty();
    let mut reserved: Vec<Reservations> = vec![Reservations::default(); 5];
    // The ready instructions, by the priority's key (unique: it ends with the position), the
    // smallest on top.
    let key = |k: usize| match priority {
        Priority::Earliest => std::cmp::Reverse((est[k], -height[k], k)),
        Priority::Constrained => std::cmp::Reverse((-est[k], -height[k], k)),
    };
    let mut ready: std::collections::BinaryHeap<_> =
        (0..n).filter(|&k| pending[k] == 0).map(key).collect();
    for _ in 0..n {
        let std::cmp::Reverse((_, _, k)) = ready.pop()?;
        // With `from_est`, the earliest start over every path (not only from the placed
        // neighbours), a lower bound of any schedule with non-negative starts: starting there
        // keeps an engine's flexible work out of the window that its late, chained work needs.
        let mut lower = if from_est { est[k].max(0) } else { 0 };
        let mut upper = i64::MAX;
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Incoming)
        {
            if let Some(sp) = sigma[e.source().index()] {
                let w = e.weight().latency as i64 - i64::from(e.weight().distance) * iii;
                lower = lower.max(sp + w);
            }
        }
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Outgoing)
        {
            if let Some(sc) = sigma[e.target().index()] {
                let w = e.weight().latency as i64 - i64::from(e.weight().distance) * iii;
                upper = upper.min(sc - w);
            }
        }
        let r = bir.insts[deps.insts[k]].engine.index();
        let b = busy[k] as i64;
        let placed = if disjoint {
            reserved[r].place(lower, upper, b, iii)
        } else {
            place_scanning(deps, &table[r], k, lower, upper, b, iii)
        }?;
        sigma[k] = Some(placed);
        match disjoint {
            true => reserved[r].insert(placed, b, iii),
            false => table[r].push((placed, b, k)),
        }
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Outgoing)
        {
            if e.weight().distance == 0 {
                let c = e.target().index();
                pending[c] -= 1;
                if pending[c] == 0 {
                    ready.push(key(c));
                }
            }
        }
    }
    sigma.into_iter().collect()
}

/// The earliest start in `[lower, upper]`, and before `lower + ii`, at which `k` (busy `b`
/// cycles) clashes modulo `ii` with none of its engine's placed intervals `table` that may run
/// in its iteration, and the engine's work of one body still fits one window of `ii` cycles.
fn place_scanning(
    deps: &LoopDeps,
    table: &[(i64, i64, usize)],
    k: usize,
    lower: i64,
    upper: i64,
    b: i64,
    ii: i64,
) -> Option<i64> {
    // Only the work that may run in the same iteration shares the engine with `k`.
    let slots: Vec<(i64, i64)> = table
        .iter()
        .filter(|s| !deps.excludes(k, s.2))
        .map(|s| (s.0, s.1))
        .collect();
    // The engine's window: all of one body's work within `ii` cycles.
    let lo_e = slots.iter().map(|s| s.0).min();
    let hi_e = slots.iter().map(|s| s.0 + s.1).max();
    let mut t = lower;
    let last = lower + ii;
    loop {
        if t > upper || t >= last {
            return None;
        }
        if let Some(step) = slots
            .iter()
            .filter_map(|&(x, bx)| modulo_clash(t, b, x, bx, ii))
            .max()
        {
            t += step;
            continue;
        }
        let lo = lo_e.map_or(t, |v| v.min(t));
        let hi = hi_e.map_or(t + b, |v| v.max(t + b));
        if hi - lo > ii {
            // Later only widens the window when the engine's work starts earlier.
            if lo < t {
                return None;
            }
            t += 1.max(hi - lo - ii);
            continue;
        }
        return Some(t);
    }
}

/// One engine's modulo reservation table when no two of its intervals may overlap (no
/// exclusive pairs): the placed intervals of positive length by start modulo `ii` (clear of
/// each other modulo `ii`, each at most `ii` long: the window holds it), and the window of
/// every placed interval (zero-length ones included). [`Reservations::place`] answers what
/// [`place_scanning`] answers, finding each clash from the neighbours of a start in the sorted
/// table instead of over every interval.
#[derive(Clone, Default)]
struct Reservations {
    /// Start modulo `ii` → length.
    by_start: std::collections::BTreeMap<i64, i64>,
    /// The earliest start and the latest end placed.
    window: Option<(i64, i64)>,
}

impl Reservations {
    fn insert(&mut self, t: i64, b: i64, ii: i64) {
        self.window = Some(
            self.window
                .map_or((t, t + b), |(lo, hi)| (lo.min(t), hi.max(t + b))),
        );
        if b > 0 {
            self.by_start.insert(t.rem_euclid(ii), b);
        }
    }

    /// How far `[t, t + b)` must move later to clear the interval it clashes with modulo `ii`
    /// (the end of the first interval it meets), or `None` when it clashes with none. The
    /// intervals are clear of each other: only the one that starts at or before `t` (modulo
    /// `ii`, cyclically) and the next one after `t` can overlap it.
    fn clash(&self, t: i64, b: i64, ii: i64) -> Option<i64> {
        if b == 0 || self.by_start.is_empty() {
            return None;
        }
        let tm = t.rem_euclid(ii);
        let before =
            (self.by_start.range(..=tm).next_back()).or_else(|| self.by_start.iter().next_back());
        if let Some((&x, &bx)) = before {
            if let Some(step) = modulo_clash(t, b, x, bx, ii) {
                return Some(step);
            }
        }
        let after = (self.by_start.range(tm + 1..).next()).or_else(|| self.by_start.iter().next());
        let (&x, &bx) = after?;
        modulo_clash(t, b, x, bx, ii)
    }

    /// [`place_scanning`] over this table.
    fn place(&self, lower: i64, upper: i64, b: i64, ii: i64) -> Option<i64> {
        let mut t = lower;
        let last = lower + ii;
        loop {
            if t > upper || t >= last {
                return None;
            }
            if let Some(step) = self.clash(t, b, ii) {
                t += step;
                continue;
            }
            let lo = self.window.map_or(t, |w| w.0.min(t));
            let hi = self.window.map_or(t + b, |w| w.1.max(t + b));
            if hi - lo > ii {
                // Later only widens the window when the engine's work starts earlier.
                if lo < t {
                    return None;
                }
                t += 1.max(hi - lo - ii);
                continue;
            }
            return Some(t);
        }
    }
}

/// The steady-state period of the body run in `order` (positions in program order) by in-order
/// engines: the largest `Σ latency / Σ distance` over the cycles of the dependence graph plus, per
/// engine, its instructions in `order` chained by their busy times and its last instruction
/// followed by its first of the next iteration (`d = 1`). Found like RecMII.
pub fn compute_order_period(bir: &Bir, deps: &LoopDeps, busy: &[u64], order: &[usize]) -> u64 {
    smallest_ii(&order_graph(bir, deps, busy, order))
}

/// [`compute_order_period`] of `order` when it is below `bound`, else `None`.
fn order_period_below(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &[usize],
    bound: u64,
) -> Option<u64> {
    smallest_ii_below(&order_graph(bir, deps, busy, order), bound)
}

/// The cycle that sets [`compute_order_period`] of `order`, named like RecMII's (empty when no
/// cycle does).
pub fn compute_order_cycle(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &[usize],
) -> CycleData {
    let g = order_graph(bir, deps, busy, order);
    let hi = smallest_ii(&g);
    if hi == 0 {
        return CycleData::default();
    }
    critical_cycle(func, bir, &g, hi).0
}

/// `deps` with each in-order engine's sequence in `order` as [`DepKind::Order`] edges: each
/// instruction to its engine's next one, after its busy time, and its engine's last to its
/// first of the next iteration (`d = 1`).
fn order_graph(bir: &Bir, deps: &LoopDeps, busy: &[u64], order: &[usize]) -> LoopDeps {
    let mut g = deps.clone();
    for e in Engine::ALL {
        let seq: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&k| bir.insts[deps.insts[k]].engine == e)
            .collect();
        for (a, b) in seq.iter().zip(seq.iter().skip(1).chain(seq.first())) {
            let wrap = seq.last() == Some(a);
            g.graph.add_edge(
                deps.node(*a),
                deps.node(*b),
                DepData {
                    kind: DepKind::Order,
                    distance: u32::from(wrap),
                    latency: busy[*a],
                    tensor: bir.insts[deps.insts[*a]].dst.tensor,
                },
            );
        }
    }
    g
}

/// The most instructions of a body whose offset order [`improve_order`] searches around.
pub const MAX_IMPROVE: usize = 16;

/// Local search on a body order (positions in program order), by the in-order engines' predicted
/// period ([`compute_order_period`]): moving one instruction to another place, as long as every
/// same-iteration edge still goes forward, is kept when it shortens the period; repeated until no
/// move does (a few passes). The offsets of a modulo schedule come from a greedy placement that
/// can leave an engine idle while it waits for another (softmax: `dve` idles during `act`'s
/// `exp` when the independent work of a later stage was placed first), which a move repairs.
/// Bodies of more than [`MAX_IMPROVE`] instructions keep their offset order. Returns the period.
fn improve_order(bir: &Bir, deps: &LoopDeps, busy: &[u64], order: &mut Vec<usize>) -> u64 {
    let mut best = compute_order_period(bir, deps, busy, order);
    let n = order.len();
    if n > MAX_IMPROVE {
        return best;
    }
    let forward = |o: &[usize]| {
        let mut pos = vec![0; n];
        for (i, &k) in o.iter().enumerate() {
            pos[k] = i;
        }
        deps.graph
            .edge_references()
            .all(|e| e.weight().distance > 0 || pos[e.source().index()] < pos[e.target().index()])
    };
    for _ in 0..4 {
        let mut improved = false;
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let mut cand = order.clone();
                let x = cand.remove(a);
                cand.insert(b, x);
                if !forward(&cand) {
                    continue;
                }
                if let Some(p) = order_period_below(bir, deps, busy, &cand, best) {
                    best = p;
                    *order = cand;
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
    best
}

/// The most combinations of per-engine sequences [`exhaust_engine_orders`] tries.
pub const MAX_ENGINE_ORDERS: u64 = 2_000;

/// Every combination of the engines' sequences of the body (each engine's instructions in every
/// order), merged into one body order that keeps every same-iteration edge forward, when there
/// are at most [`MAX_ENGINE_ORDERS`] of them: the one with the shortest predicted period
/// ([`compute_order_period`]; the first found among equals, the engines' sequences in `order`
/// first), that period, and how many combinations merge; `None` when there are too many. The
/// period of an order depends only on each engine's sequence (the same-iteration edges hold in
/// any merge), so this is the best period of any order of the body: exact where the single moves
/// of [`improve_order`] could stop at a local optimum, and the proof, when the emitted order
/// reaches it, that the user's stages and buffers, not the order, hold the loop above its MII.
fn exhaust_engine_orders(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &[usize],
) -> Option<(Vec<usize>, u64, usize)> {
    let seqs: Vec<Vec<usize>> = Engine::ALL
        .iter()
        .map(|&e| {
            (order.iter().copied())
                .filter(|&k| bir.insts[deps.insts[k]].engine == e)
                .collect()
        })
        .filter(|s: &Vec<usize>| !s.is_empty())
        .collect();
    let mut count = 1u64;
    for s in &seqs {
        for f in 2..=s.len() as u64 {
            count = count.saturating_mul(f);
        }
    }
    if count > MAX_ENGINE_ORDERS {
        return None;
    }
    let perms: Vec<Vec<Vec<usize>>> = seqs.iter().map(|s| permutations(s)).collect();
    let mut pick = vec![0usize; perms.len()];
    let mut best: Option<(Vec<usize>, u64, usize)> = None;
    let mut merged = 0;
    loop {
        let chosen: Vec<&Vec<usize>> = pick.iter().zip(&perms).map(|(&i, p)| &p[i]).collect();
        if let Some(o) = merge_sequences(deps, order, &chosen) {
            merged += 1;
            let p = match &best {
                None => Some(compute_order_period(bir, deps, busy, &o)),
                Some(b) => order_period_below(bir, deps, busy, &o, b.1),
            };
            if let Some(p) = p {
                best = Some((o, p, 0));
            }
        }
        // The next combination, the last engine's sequence fastest.
        let mut e = pick.len();
        loop {
            if e == 0 {
                return best.map(|(o, p, _)| (o, p, merged));
            }
            e -= 1;
            pick[e] += 1;
            if pick[e] < perms[e].len() {
                break;
            }
            pick[e] = 0;
        }
    }
}

/// Every order of `items`, `items` itself first.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// One body order in which each engine runs its sequence of `seqs` and every same-iteration edge
/// goes forward (at each step, of the engines' next instructions whose same-iteration
/// predecessors are all placed, the one earliest in `order`), or `None` when there is none.
fn merge_sequences(deps: &LoopDeps, order: &[usize], seqs: &[&Vec<usize>]) -> Option<Vec<usize>> {
    let n = deps.insts.len();
    let mut rank = vec![0usize; n];
    for (i, &k) in order.iter().enumerate() {
        rank[k] = i;
    }
    let mut pending = vec![0usize; n];
    for e in deps.graph.edge_references() {
        if e.weight().distance == 0 {
            pending[e.target().index()] += 1;
        }
    }
    let mut next = vec![0usize; seqs.len()];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let (s, k) = (0..seqs.len())
            .filter_map(|s| seqs[s].get(next[s]).map(|&k| (s, k)))
            .filter(|&(_, k)| pending[k] == 0)
            .min_by_key(|&(_, k)| rank[k])?;
        next[s] += 1;
        out.push(k);
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Outgoing)
        {
            if e.weight().distance == 0 {
                pending[e.target().index()] -= 1;
            }
        }
    }
    Some(out)
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
    // The II search reserves each instruction's average over the whole loop, fill and drain
    // included, from the MII of those averages: in a loop of few iterations, most are fill or
    // drain (measured: searching with steady-state reservations instead cost up to 9% on the
    // auto path of `tests/good/many_psum.nk`, ten iterations in seven stages, and 3% on two
    // `tests/nki` kernels, and gained nothing on the examples).
    let average: Vec<(u64, u64)> = (deps.insts.iter())
        .map(|&i| guard_fraction(func, &bir.insts[i].guards))
        .collect();
    let busy = busy_by_share(&deps, &average);
    // ResMII, the order's choice and its predicted period are the steady state's. A loop
    // without one is all fill and drain: each instruction counts whole there too, except that
    // instructions that take turns count for their average (measured: their averages alone
    // choose orders up to 3% slower on two such `tests` kernels).
    let shares = steady_shares(func, bir, &deps, bir.loops[l].axis);
    let steady_state = shares.is_some();
    let shares = shares.unwrap_or_else(|| {
        (0..deps.insts.len())
            .map(|k| match takes_turns(&deps, k) {
                true => average[k],
                false => (1, 1),
            })
            .collect()
    });
    let steady = busy_by_share(&deps, &shares);
    let queue_bound = steady_queue_bound(func, bir, plan, &deps, &shares);
    let average_queues = steady_queue_bound(func, bir, plan, &deps, &average);
    let (res_mii, res_resource) = compute_res_mii(bir, &deps, &steady, queue_bound);
    let (res_average, _) = compute_res_mii(bir, &deps, &busy, average_queues);
    let (rec_mii, rec_cycle, rec_edges) = compute_rec_mii(func, bir, &deps);
    let mii = res_mii.max(rec_mii).max(1);
    let search_from = res_average.max(rec_mii).max(1);
    let written: Vec<usize> = (0..deps.insts.len()).collect();
    let predicted_before = compute_order_period(bir, &deps, &steady, &written).max(queue_bound);
    let mut order_bound = None;
    let (search_ii, order, scheduled, kept_order) =
        if func.axes[bir.loops[l].axis].attrs.pipelined.is_none() {
            // A loop the annotated pipeliner did not touch keeps its order: the emergent path
            // chose it by measurement (`emergent::stages`; measured on the suite, offset order
            // costs rmsnorm 3% and layernorm 0.2% there), and an unpipelined loop runs as
            // written.
            let ii = predicted_before.max(search_from);
            (ii, written.clone(), predicted_before, true)
        } else {
            let (ii, sigma) = search_schedule_remembered(bir, &deps, &busy, &steady, search_from)?;
            let mut order: Vec<usize> = (0..sigma.len()).collect();
            order.sort_by_key(|&k| (sigma[k], k));
            // The best of every order when there are few, else single moves from offset order.
            let best = exhaust_engine_orders(bir, &deps, &steady, &order);
            if let Some((o, p, n)) = best {
                order_bound = Some((p.max(queue_bound), n));
                if p < compute_order_period(bir, &deps, &steady, &order) {
                    order = o;
                }
            }
            let predicted = improve_order(bir, &deps, &steady, &mut order).max(queue_bound);
            // The costs are estimates, so a small predicted gain can be a measured loss: the
            // body is reordered only for a predicted gain of at least [`MIN_GAIN_PERCENT`].
            let kept_order = predicted * 100 > predicted_before * (100 - MIN_GAIN_PERCENT);
            (ii, order, predicted, kept_order)
        };
    // What runs is the emitted order: its II is that order's predicted period, and its offsets
    // where that order starts each instruction. (The II search's reservation table does not
    // see that the engines are in order; it only proposes the order.)
    let (emitted, predicted) = match kept_order {
        true => (&written, predicted_before),
        false => (&order, scheduled),
    };
    let ii = predicted.max(mii);
    let sigma = order_offsets(bir, &deps, &steady, ii, emitted);
    Some(ModuloSchedule {
        steady_state,
        predicted,
        predicted_before,
        scheduled,
        kept_order,
        lp: l,
        ii,
        search_ii,
        res_mii,
        res_resource,
        res_average,
        rec_mii,
        rec_cycle,
        rec_edges,
        order: order.iter().map(|&k| deps.insts[k]).collect(),
        order_bound,
        busy: steady,
        insts: offsets(bir, &deps, &sigma),
        deps,
    })
}

/// Everything [`search_schedule`] reads: per position its engine, the dependence edges
/// (`source, target, latency, distance`), the exclusive pairs, the latencies, both busy
/// vectors, and the MII it starts from.
#[derive(PartialEq, Eq)]
struct SearchKey {
    engines: Vec<usize>,
    edges: Vec<(usize, usize, u64, u32)>,
    exclusive: Vec<(usize, usize)>,
    latency: Vec<u64>,
    busy: Vec<u64>,
    steady: Vec<u64>,
    mii: u64,
}

/// What [`search_schedule`] returns: the II and the start offsets, or `None`.
type Searched = Option<(u64, Vec<i64>)>;

/// How many searches [`SEARCHES`] remembers.
const REMEMBERED_SEARCHES: usize = 8;

thread_local! {
    /// The latest II searches of this thread and their results. One kernel's loops are
    /// scheduled again with the same graphs: by each round of [`crate::expand_recurrence`], by
    /// the retiming's trials ([`crate::retime`]) and by the compilation of the kernel they keep.
    static SEARCHES: std::cell::RefCell<std::collections::VecDeque<(SearchKey, Searched)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

/// [`search_schedule`], answered from [`SEARCHES`] when its inputs are those of a search this
/// thread made lately (the search is a function of them alone).
fn search_schedule_remembered(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    steady: &[u64],
    mii: u64,
) -> Option<(u64, Vec<i64>)> {
    let key = SearchKey {
        engines: (deps.insts.iter())
            .map(|&i| bir.insts[i].engine.index())
            .collect(),
        edges: (deps.graph.edge_references())
            .map(|e| {
                let w = e.weight();
                (
                    e.source().index(),
                    e.target().index(),
                    w.latency,
                    w.distance,
                )
            })
            .collect(),
        exclusive: deps.exclusive.clone(),
        latency: deps.latency.clone(),
        busy: busy.to_vec(),
        steady: steady.to_vec(),
        mii,
    };
    let found = SEARCHES.with(|m| {
        (m.borrow().iter())
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.clone())
    });
    if let Some(r) = found {
        return r;
    }
    let r = search_schedule(bir, deps, busy, steady, mii);
    SEARCHES.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= REMEMBERED_SEARCHES {
            m.pop_front();
        }
        m.push_back((key, r.clone()));
    });
    r
}

/// The II search: every list order, with and without the global earliest starts as lower
/// bounds, searches its own smallest II upward from `mii`; the schedule whose order the engines
/// run fastest is kept (its II and start offsets), or `None` when no order fits.
fn search_schedule(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    steady: &[u64],
    mii: u64,
) -> Option<(u64, Vec<i64>)> {
    // A sequential body always fits: every start after every predecessor's completion.
    let sequential: u64 = deps.latency.iter().sum::<u64>() + busy.iter().sum::<u64>();
    let mut best: Option<(u64, u64, Vec<i64>)> = None;
    let mut paths = PathCache::default();
    for priority in [Priority::Earliest, Priority::Constrained] {
        for from_est in [true, false] {
            let mut ii = mii;
            let sigma = loop {
                if let Some(s) = try_schedule(bir, deps, busy, ii, priority, from_est, &mut paths) {
                    break Some(s);
                }
                if ii >= sequential.max(mii) {
                    break None;
                }
                ii = (ii + (ii / 100).max(1)).min(sequential.max(mii));
            };
            let Some(sigma) = sigma else { continue };
            let mut order: Vec<usize> = (0..sigma.len()).collect();
            order.sort_by_key(|&k| (sigma[k], k));
            let period = compute_order_period(bir, deps, steady, &order);
            if best.as_ref().is_none_or(|b| (period, ii) < (b.0, b.1)) {
                best = Some((period, ii, sigma));
            }
        }
    }
    best.map(|(_, ii, sigma)| (ii, sigma))
}

/// The start offsets of a body run in `order`: each instruction after the one before it on its
/// engine, and after every dependence on an instruction placed before it (at `ii` cycles per
/// iteration of distance).
fn order_offsets(bir: &Bir, deps: &LoopDeps, busy: &[u64], ii: u64, order: &[usize]) -> Vec<i64> {
    let mut sigma: Vec<Option<i64>> = vec![None; deps.insts.len()];
    let mut free = [0i64; 5];
    for &k in order {
        let r = bir.insts[deps.insts[k]].engine.index();
        let mut t = free[r];
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Incoming)
        {
            if let Some(sp) = sigma[e.source().index()] {
                let w = e.weight().latency as i64 - i64::from(e.weight().distance) * ii as i64;
                t = t.max(sp + w);
            }
        }
        sigma[k] = Some(t);
        free[r] = t + busy[k] as i64;
    }
    sigma.into_iter().map(|s| s.unwrap_or(0)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;
    use petgraph::graph::DiGraph;
    use proptest::prelude::*;

    /// A loop dependence graph on `n` instructions with the given edges
    /// `(from, to, latency, distance)`.
    fn graph(n: usize, edges: &[(usize, usize, u64, u32)]) -> LoopDeps {
        let mut g = DiGraph::new();
        for k in 0..n {
            g.add_node(k);
        }
        for &(a, b, latency, distance) in edges {
            // As in a real body, a same-iteration edge goes forward: every cycle has a distance.
            let (a, b) = (a % n, b % n);
            let (a, b) = if distance == 0 {
                (a.min(b), a.max(b))
            } else {
                (a, b)
            };
            if distance == 0 && a == b {
                continue;
            }
            g.add_edge(
                petgraph::graph::NodeIndex::new(a),
                petgraph::graph::NodeIndex::new(b),
                DepData {
                    kind: DepKind::Flow,
                    distance,
                    latency,
                    tensor: Tensor::new(0),
                },
            );
        }
        LoopDeps {
            lp: crate::codegen::bir::BirLoop::new(0),
            insts: (0..n).map(BirInst::new).collect(),
            graph: g,
            busy: vec![1; n],
            latency: vec![1; n],
            exclusive: Vec::new(),
        }
    }

    proptest! {
        /// The early-stopping feasibility test agrees with the full relaxation at every `II`,
        /// and the binary search finds the smallest feasible `II`.
        #[test]
        fn feasible_agrees_with_longest_paths(
            n in 1usize..8,
            edges in proptest::collection::vec((0usize..8, 0usize..8, 0u64..200, 0u32..4), 0..20),
        ) {
            let deps = graph(n, &edges);
            let full = |ii: u64| longest_paths(&deps, ii, &mut vec![None; n]).is_ok();
            for ii in (0..=800).step_by(7) {
                prop_assert_eq!(feasible(&deps, ii), full(ii), "II {}", ii);
            }
            let hi = smallest_ii(&deps);
            prop_assert!(full(hi));
            prop_assert!(hi == 0 || !full(hi - 1));
            // Below a bound, the search finds the same `II`; at or above it, nothing.
            for bound in 0..hi + 3 {
                let below = smallest_ii_below(&deps, bound);
                prop_assert_eq!(below, (hi < bound).then_some(hi), "bound {}", bound);
            }
        }

        /// The sorted reservation table places every interval where the scan over every
        /// placed interval does, as the II search fills an engine (placing each at the answer).
        #[test]
        fn reservations_place_where_the_scan_does(
            ii in 1i64..60,
            items in proptest::collection::vec((-40i64..80, 0i64..40, 0i64..25), 1..30),
        ) {
            let deps = graph(items.len(), &[]);
            let mut table: Vec<(i64, i64, usize)> = Vec::new();
            let mut reserved = Reservations::default();
            for (k, &(lower, span, b)) in items.iter().enumerate() {
                let upper = lower + span;
                let scanned = place_scanning(&deps, &table, k, lower, upper, b, ii);
                prop_assert_eq!(reserved.place(lower, upper, b, ii), scanned, "item {}", k);
                if let Some(t) = scanned {
                    table.push((t, b, k));
                    reserved.insert(t, b, ii);
                }
            }
        }
    }
}
