//! The resource side of the modulo scheduler ([`crate::codegen::modulo`]): each instruction's
//! busy cycles weighted by its share of the iterations that run it (the steady state's, or the
//! average over the whole loop), the busiest DMA queue's cycles, and ResMII from them.
//!
//! Invariants: a share `(num, den)` has `num <= den` (an instruction runs at most every
//! iteration counted), so a weighted busy time is at most the instruction's busy time; ResMII
//! is at least 1 (its resource is `nothing` when no engine or queue is busy).

use crate::codegen::bir::{dma_tile, tile_bytes, transfer_bytes, Bir};
use crate::codegen::ldg::LoopDeps;
use crate::codegen::queues::QueuePlan;
use crate::cost::guards::{guard_fraction, running_iterations};
use penguin::{Axis, Function};
use runtime_sim::isa::Engine;
use runtime_sim::machine::{self, DMA_QUEUES};
use std::ops::Range;

/// The busy cycles of a loop's instructions ([`compute_loads`]), weighted two ways.
pub(super) struct LoadData {
    /// Per instruction, its busy time times its [`guard_fraction`]: the average over the whole
    /// loop, fill and drain included, which the II search reserves.
    pub(super) busy: Vec<u64>,
    /// Per instruction, its busy time times its [steady share](steady_shares) (in a loop without
    /// a steady state: whole, or its average when it takes turns): what ResMII, the order's
    /// choice and its predicted period use.
    pub(super) steady: Vec<u64>,
    /// Whether the loop has a steady state ([`steady_shares`]).
    pub(super) steady_state: bool,
    /// The busiest DMA queue's cycles per iteration with the shares of `steady`.
    pub(super) queue_bound: u64,
    /// The busiest DMA queue's cycles per iteration averaged over the whole loop.
    pub(super) average_queues: u64,
}

/// The busy cycles of the instructions of `deps` (a loop over `axis`), weighted by their
/// average and by their steady shares, and the busiest DMA queue's under each.
pub(super) fn compute_loads(
    func: &Function,
    bir: &Bir,
    plan: &QueuePlan,
    deps: &LoopDeps,
    axis: Axis,
) -> LoadData {
    // The II search reserves each instruction's average over the whole loop, fill and drain
    // included, from the MII of those averages: in a loop of few iterations, most are fill or
    // drain (measured: searching with steady-state reservations instead cost up to 9% on the
    // auto path of `tests/good/many_psum.nk`, ten iterations in seven stages, and 3% on two
    // `tests/nki` kernels, and gained nothing on the examples).
    let average: Vec<(u64, u64)> = (deps.insts.iter())
        .map(|&i| guard_fraction(func, &bir.insts[i].guards))
        .collect();
    let busy = busy_by_share(deps, &average);
    // ResMII, the order's choice and its predicted period are the steady state's. A loop
    // without one is all fill and drain: each instruction counts whole there too, except that
    // instructions that take turns count for their average (measured: their averages alone
    // choose orders up to 3% slower on two such `tests` kernels).
    let shares = steady_shares(func, bir, deps, axis);
    let steady_state = shares.is_some();
    let shares = shares.unwrap_or_else(|| {
        (0..deps.insts.len())
            .map(|k| match takes_turns(deps, k) {
                true => average[k],
                false => (1, 1),
            })
            .collect()
    });
    let steady = busy_by_share(deps, &shares);
    let queue_bound = steady_queue_bound(func, bir, plan, deps, &shares);
    let average_queues = steady_queue_bound(func, bir, plan, deps, &average);
    LoadData {
        busy,
        steady,
        steady_state,
        queue_bound,
        average_queues,
    }
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
pub(super) fn steady_shares(
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
pub(super) fn compute_res_mii(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    queues: u64,
) -> (u64, String) {
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
