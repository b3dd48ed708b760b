//! Per-loop figures of a simulated run: what the modulo scheduler predicted for every pipelined
//! loop ([`backend::codegen::modulo`]) beside the iteration period the simulation measured.
//!
//! The measured **steady-state period** of a loop is read off the timeline. For every instruction
//! of its body (by its source line and engine): its start per iteration of the loop, in the
//! execution of the loop that ran the most instructions. The steady state is the iterations in
//! which the most body instructions run (every stage; the fill and the drain run only some). Each
//! steady iteration is marked by the latest start of any of its instructions, and the period is
//! the median of the differences between consecutive marks: in a steady state every instruction
//! advances by the same period each iteration. An engine that runs ahead, such as `sp` filling
//! the free slots of a deep ring, starts its instructions early, so it never sets a mark; in a
//! short loop it may run ahead through the whole steady state (matmul_mode_b's `k`, four steady
//! iterations and rings of four slots), and a median over every instruction's differences would
//! then measure `sp`'s pace, not the loop's. The median ignores the few differences that a ramp
//! distorts. A loop whose stages never all run in two consecutive iterations has no steady
//! state, and no measured period.

use backend::codegen::emit::line_of;
use backend::codegen::modulo::ModuloSchedule;
use backend::codegen::schedule_summary::{CycleData, Limit, ScheduleSummaryData};
use backend::Compiled;
use penguin::Function;
use runtime_sim::sim::trace::{Slice, Track};
use std::collections::BTreeMap;

/// One pipelined loop's prediction and measurement.
#[derive(Clone, Debug)]
pub struct LoopStats {
    /// The loop's induction variable.
    pub name: String,
    /// The source line of the loop's marker instruction.
    pub line: Option<u32>,
    pub trip: u64,
    /// Whether the loop is pipelined (an extended loop of either path: its instructions have
    /// stages); the others are scheduled and reported alike but run one iteration after another.
    pub pipelined: bool,
    /// Whether the loop has a steady state: two consecutive iterations that run every stage
    /// ([`ModuloSchedule::steady_state`]).
    pub steady_state: bool,
    pub ii: u64,
    pub mii: u64,
    pub res_mii: u64,
    pub rec_mii: u64,
    /// The predicted steady-state period of the emitted order.
    pub predicted: u64,
    /// The resource or recurrence that sets the MII (its `Display`: `resource NAME` or
    /// `recurrence CYCLE`).
    pub limited_by: Limit,
    /// When the predicted period is more than 2% above the MII: the cycle through the engines'
    /// orders that sets it (empty when none does); otherwise `None`.
    pub period_set_by: Option<CycleData>,
    /// The shortest predicted period of any order of the body, when the scheduler tried them
    /// all ([`ModuloSchedule::order_bound`]: an annotated loop with few orders).
    pub order_bound: Option<u64>,
    /// The measured steady-state iteration period, in cycles.
    pub period: Option<f64>,
    /// The scheduler's account (`--log backend`: its one line is this summary's `Display`).
    pub summary: ScheduleSummaryData,
}

/// The prediction and measurement of every loop `compiled` modulo-scheduled.
pub fn compute_loop_stats(
    func: &Function,
    compiled: &Compiled,
    source: &str,
    timeline: &[Slice],
) -> Vec<LoopStats> {
    compiled
        .schedules
        .iter()
        .map(|s| stats(func, compiled, source, timeline, s))
        .collect()
}

fn stats(
    func: &Function,
    compiled: &Compiled,
    source: &str,
    timeline: &[Slice],
    s: &ModuloSchedule,
) -> LoopStats {
    let bir = &compiled.bir;
    let lp = &bir.loops[s.lp];
    let marker = s
        .insts
        .iter()
        .find_map(|&(i, _, _)| bir.insts[i].span.map(|sp| (i, line_of(source, sp.start))));
    let mut body: Vec<(runtime_sim::isa::Engine, u32)> = s
        .insts
        .iter()
        .filter_map(|&(i, _, _)| {
            let sp = bir.insts[i].span?;
            Some((bir.insts[i].engine, line_of(source, sp.start)))
        })
        .collect();
    body.sort_by_key(|&(e, l)| (e.index(), l));
    body.dedup();
    let period = measure(timeline, &body, lp.depth, lp.trip);
    let summary = s.summary(func, bir);
    LoopStats {
        name: compiled.func.display_iv(lp.axis).to_string(),
        line: marker.map(|m| m.1),
        trip: lp.trip,
        pipelined: s.insts.iter().any(|&(_, stage, _)| stage.is_some()),
        steady_state: s.steady_state,
        ii: summary.ii,
        mii: summary.mii,
        res_mii: summary.res_mii,
        rec_mii: summary.rec_mii,
        predicted: summary.predicted,
        limited_by: summary.limited_by(),
        period,
        order_bound: summary.order_bound.map(|(b, _)| b),
        period_set_by: summary.period_cycle.clone(),
        summary,
    }
}

/// The steady-state period of a loop whose body instructions are `body` (engine and source
/// line) at loop depth `depth`, in the execution of the loop that ran the most instructions:
/// the median, over the pairs of consecutive iterations of the steady state, of the difference
/// of their latest instruction starts. The steady state is the iterations in which the most body
/// instructions run: every stage (the fill and the drain run only some).
/// A loop whose stages never all run in two consecutive iterations (fewer iterations than
/// stages, or barely more) never reaches a steady state and has no measured period.
fn measure(
    timeline: &[Slice],
    body: &[(runtime_sim::isa::Engine, u32)],
    depth: usize,
    trip: u64,
) -> Option<f64> {
    if trip < 3 {
        return None;
    }
    // Per execution of the loop (the outer registers), per body instruction: the earliest start
    // per iteration.
    type Starts = BTreeMap<(usize, u32), BTreeMap<i64, u64>>;
    let mut runs: BTreeMap<Vec<i64>, Starts> = BTreeMap::new();
    for sl in timeline {
        let (Track::Engine(engine), Some(line)) = (sl.track, sl.meta.line) else {
            continue;
        };
        if sl.iters.len() != depth + 1 || !body.contains(&(engine, line)) {
            continue;
        }
        let outer: Vec<i64> = sl.iters[..depth].iter().map(|x| x.1).collect();
        let r = sl.iters[depth].1;
        let e = runs
            .entry(outer)
            .or_default()
            .entry((engine.index(), line))
            .or_default()
            .entry(r)
            .or_insert(u64::MAX);
        *e = (*e).min(sl.start);
    }
    let run = runs
        .values()
        .max_by_key(|r| r.values().map(BTreeMap::len).sum::<usize>())?;
    let mut running: BTreeMap<i64, usize> = BTreeMap::new();
    for iters in run.values() {
        for &r in iters.keys() {
            *running.entry(r).or_default() += 1;
        }
    }
    let full = running.values().copied().max()?;
    let steady = |r: i64| running.get(&r) == Some(&full);
    // Per steady iteration, the latest start of a body instruction: an engine that runs ahead
    // (such as `sp` filling free ring slots of a short loop) starts early and never sets it.
    let mut latest: BTreeMap<i64, u64> = BTreeMap::new();
    for iters in run.values() {
        for (&r, &t) in iters {
            if steady(r) {
                let l = latest.entry(r).or_insert(0);
                *l = (*l).max(t);
            }
        }
    }
    let mut diffs: Vec<u64> = latest
        .iter()
        .filter_map(|(&r, &t)| latest.get(&(r + 1)).map(|&next| next.saturating_sub(t)))
        .collect();
    if diffs.is_empty() {
        return None;
    }
    diffs.sort_unstable();
    Some(diffs[diffs.len() / 2] as f64)
}
