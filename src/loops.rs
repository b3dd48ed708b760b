//! Per-loop figures of a simulated run: what the modulo scheduler predicted for every pipelined
//! loop ([`backend::modulo`]) beside the iteration period the simulation measured.
//!
//! The measured **steady-state period** of a loop is read off the timeline. For every instruction
//! of its body (by its source line and engine): its start per iteration of the loop, in the
//! execution of the loop that ran the most iterations, and the slope between the iterations at one
//! quarter and three quarters of those that ran, which leaves out the fill and the drain. The
//! period is the largest slope: in a steady state every instruction advances at the same rate, and
//! in a short loop that never settles, the slowest instruction is the one that sets the pace (an
//! engine that runs ahead, such as `sp` filling free ring slots, shows a smaller slope). A loop
//! whose instructions ran fewer than three times has no measured period.

use backend::emit::line_of;
use backend::modulo::{Limit, ModuloSchedule};
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
    pub ii: u64,
    pub mii: u64,
    pub res_mii: u64,
    pub rec_mii: u64,
    /// The predicted steady-state period of the emitted order.
    pub predicted: u64,
    /// `resource NAME` or `recurrence CYCLE`.
    pub limited_by: String,
    /// When the predicted period is more than 2% above the MII: the cycle through the engines'
    /// orders that sets it ([`ModuloSchedule::period_cycle`]); otherwise empty.
    pub period_set_by: String,
    /// The measured steady-state iteration period, in cycles.
    pub period: Option<f64>,
    /// The scheduler's one-line account (`--log backend`).
    pub text: String,
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
    let period = marker
        .and_then(|(i, line)| measure(timeline, bir.insts[i].engine, line, lp.depth, lp.trip));
    LoopStats {
        name: lp.iv.clone(),
        line: marker.map(|m| m.1),
        trip: lp.trip,
        ii: s.ii,
        mii: s.mii(),
        res_mii: s.res_mii,
        rec_mii: s.rec_mii,
        predicted: s.predicted,
        limited_by: match s.limited_by() {
            Limit::Resource(r) => format!("resource {r}"),
            Limit::Recurrence(c) => format!("recurrence {c}"),
        },
        period,
        period_set_by: if s.predicted_above_mii() {
            s.period_cycle(func, bir)
        } else {
            String::new()
        },
        text: s.describe(func, bir),
    }
}

/// The steady-state period of the slices of `engine` from source `line` at loop depth `depth`.
fn measure(
    timeline: &[Slice],
    engine: runtime_sim::isa::Engine,
    line: u32,
    depth: usize,
    trip: u64,
) -> Option<f64> {
    // Per execution of the loop (the outer registers): the earliest start per iteration.
    let mut runs: BTreeMap<Vec<i64>, BTreeMap<i64, u64>> = BTreeMap::new();
    for sl in timeline {
        if sl.track != Track::Engine(engine) || sl.meta.line != Some(line) {
            continue;
        }
        if sl.iters.len() != depth + 1 {
            continue;
        }
        let outer: Vec<i64> = sl.iters[..depth].iter().map(|x| x.1).collect();
        let r = sl.iters[depth].1;
        let e = runs.entry(outer).or_default().entry(r).or_insert(u64::MAX);
        *e = (*e).min(sl.start);
    }
    let run = runs.values().max_by_key(|r| r.len())?;
    if run.len() < 3 || trip < 3 {
        return None;
    }
    let points: Vec<(i64, u64)> = run.iter().map(|(&r, &t)| (r, t)).collect();
    let (a, b) = (points[points.len() / 4], points[(3 * points.len()) / 4]);
    (b.0 > a.0).then(|| (b.1 as f64 - a.1 as f64) / (b.0 - a.0) as f64)
}
