//! `num_stages="auto"`: the stages of a loop chosen by the compiler, and handed to the annotated
//! pipeliner as if the user had written them in Mode B.
//!
//! [`choose_auto_stages`] runs before the annotated pipeliner, on every loop marked
//! `auto_stages` whose body carries no `stage_id` or `execution_order` of the user's (one that
//! does is left marked, for the pipeliner to report both modes). It reuses the emergent stage
//! rule ([`super::stages`]): each child of the loop gets the stage of the children it depends on,
//! plus one per cross-engine hand-off through a tile renamed per iteration (a load's `sp` to a
//! compute engine, one compute engine to another, compute to the store's `sp`), with loop-carried
//! state kept in one stage.
//!
//! Mode B wants stage ids that never decrease in program order and that use `0..N-1` without a
//! gap, so the rule's stages are raised to their running maximum and renumbered. A dependence
//! runs from an earlier child to a later one in the iteration, so raising to the running maximum
//! never puts a consumer in an earlier stage than its producer.
//!
//! A loop bound by DMA latency (a tile whose transfer even a ring of [`crate::cost::loop_cost::MAX_DEPTH`]
//! slots does not hide behind the body's compute, [`crate::cost::loop_cost::wanted_depth`]) is declined: it
//! wants its loads several iterations ahead, which stage ids without a gap cannot say, and the
//! backend's emergent prefetch does.
//!
//! The split is tried with as many hand-offs as fit SBUF and PSUM, then with fewer. The first
//! that the pipeliner itself accepts (its buffer counts, its memory budget and its ISL legality
//! check, run on a copy of the function in which only this loop is annotated) is written as
//! `stage_id`s on the body, and the mark is cleared. When no split is accepted, or the body has
//! no hand-off to split, the mark is cleared and the loop is left un-annotated: on the `default`
//! path the backend's emergent pipelining then takes it.
//!
//! Invariants: only loops marked `auto_stages` change; on return no loop is marked except one
//! whose body carries the user's stage annotations; the stage ids written are `0..N-1` with
//! `N >= 2`, non-decreasing in program order, one on every child of the loop.

use super::remark::{AutoDecline, AutoRefusal, AutoRemark};
use super::stages::{compute_facts, compute_rings, compute_stages};
use crate::cost::budget::check_rings;
use crate::cost::loop_cost::{wanted_depth, MAX_DEPTH};
use penguin::ir::{Memory, Op, StmtAnnot, StmtKind};
use penguin::pipeline::{log::describe_stmt, pipeline_function, PipelineOptions};
use penguin::{Axis, Function};

/// `--pipeline auto`: marks `num_stages="auto"` on every loop that neither holds nor sits in
/// another loop. A nest is left un-annotated, for the backend's emergent pipelining to prefetch
/// across it. Returns how many loops it marked.
pub fn mark_auto_loops(func: &mut Function) -> usize {
    let mut marked = 0;
    for &s in &func.body.clone() {
        let StmtKind::Loop(l) = func.stmts[s].kind else {
            continue;
        };
        let nested = func.axes[l]
            .body
            .iter()
            .any(|&c| matches!(func.stmts[c].kind, StmtKind::Loop(_)));
        if !nested && func.axes[l].attrs.pipelined.is_none() {
            func.axes[l].attrs.auto_stages = true;
            marked += 1;
        }
    }
    marked
}

/// How [`choose_auto_stages_with`] chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoOptions {
    /// Decline a loop bound by DMA latency (on by default; off to exercise the stage rule on
    /// kernels whose tiles are too small to hide any transfer).
    pub decline_dma_bound: bool,
}

impl Default for AutoOptions {
    fn default() -> Self {
        AutoOptions {
            decline_dma_bound: true,
        }
    }
}

/// Replaces every `num_stages="auto"` by chosen `stage_id`s (see the module doc). Returns the
/// decision log, one line per loop.
pub fn choose_auto_stages(func: &mut Function) -> Vec<AutoRemark> {
    choose_auto_stages_with(func, &AutoOptions::default())
}

/// [`choose_auto_stages`] with options.
pub fn choose_auto_stages_with(func: &mut Function, opts: &AutoOptions) -> Vec<AutoRemark> {
    let mut log = Vec::new();
    let marked: Vec<Axis> = func
        .axes
        .keys()
        .filter(|&l| func.axes[l].attrs.auto_stages && func.axes[l].attrs.pipelined.is_none())
        .collect();
    for l in marked {
        let iv = func.display_iv(l).to_string();
        let body = func.axes[l].body.clone();
        let annotated = body.iter().any(|&s| {
            let a = func.annots[s];
            a.stage_id.is_some() || a.execution_order.is_some()
        });
        if annotated {
            continue;
        }
        func.axes[l].attrs.auto_stages = false;
        match compute_auto_stages(func, l, opts) {
            Ok((stages, aim)) => {
                for (&s, &stage) in body.iter().zip(&stages) {
                    func.annots[s] = StmtAnnot {
                        stage_id: Some(stage),
                        execution_order: None,
                    };
                }
                log.push(AutoRemark::Staged {
                    iv,
                    stages: stages.iter().max().map_or(0, |m| m + 1),
                    children: body
                        .iter()
                        .zip(&stages)
                        .map(|(&s, &stage)| (describe_stmt(func, s), stage))
                        .collect(),
                    aim,
                });
            }
            Err(why) => log.push(AutoRemark::Declined { iv, why }),
        }
    }
    log
}

/// The busiest engine and its cycles per iteration, which the II aims at ([`AutoRemark::Staged`]).
type Aim = Option<(String, u64)>;

/// The stage of every child of `l`, or why there is none worth giving.
fn compute_auto_stages(
    func: &Function,
    l: Axis,
    opts: &AutoOptions,
) -> Result<(Vec<u32>, Aim), AutoDecline> {
    // A transfer no ring of `MAX_DEPTH` slots hides behind the body's compute wants its loads
    // issued several iterations ahead, which stage ids without a gap cannot say.
    let body = if opts.decline_dma_bound {
        func.axes[l].body.as_slice()
    } else {
        &[]
    };
    for &s in body {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            continue;
        };
        for &i in insts {
            let d = &func.insts[i];
            let tile = match d.op {
                Op::Load => d.dst.tensor,
                Op::Store => d.srcs[0].tensor,
                _ => continue,
            };
            if func.tensors[tile].memory != Memory::Sbuf {
                continue;
            }
            let fit = wanted_depth(func, tile, l);
            if fit.wanted > u64::from(MAX_DEPTH) {
                return Err(AutoDecline::DmaBound {
                    tile: func.display_name(tile).to_string(),
                    dma: fit.dma,
                    compute: fit.compute,
                    max: MAX_DEPTH,
                });
            }
        }
    }
    let facts = compute_facts(func, l, &[]);
    let n = func.axes[l].body.len() as u32;
    let max_cap = compute_stages(&facts, n).into_iter().max().unwrap_or(0);
    if max_cap == 0 {
        return Err(AutoDecline::NoHandOff);
    }
    let mut refused = None;
    for cap in (1..=max_cap).rev() {
        let stages = monotone(&compute_stages(&facts, cap));
        if stages.iter().all(|&s| s == 0) {
            continue;
        }
        let rings = compute_rings(&facts, &stages);
        if let Err(why) = check_rings(func, &rings) {
            refused = Some(AutoRefusal::Rings(why));
            continue;
        }
        match accepted(func, l, &stages) {
            Ok(()) => {
                // With every hand-off in a stage of its own, an iteration starts as soon as the
                // busiest engine has done the previous one's work.
                let aim = facts
                    .loads
                    .iter()
                    .max_by_key(|&(_, &c)| c)
                    .map(|(e, &c)| (e.to_string(), c));
                return Ok((stages, aim));
            }
            Err(why) => refused = Some(why),
        }
    }
    Err(refused.map_or(AutoDecline::NoSplit, AutoDecline::Refused))
}

/// `stages` raised to their running maximum and renumbered `0..N-1`.
fn monotone(stages: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(stages.len());
    let (mut max, mut id) = (0, 0);
    for (k, &s) in stages.iter().enumerate() {
        if k > 0 && s > max {
            id += 1;
        }
        max = max.max(s);
        out.push(id);
    }
    out
}

/// Whether the annotated pipeliner accepts `stages` on `l`: run on a copy of the function whose
/// only annotation is this one.
fn accepted(func: &Function, l: Axis, stages: &[u32]) -> Result<(), AutoRefusal> {
    let mut trial = func.clone();
    let keys: Vec<Axis> = trial.axes.keys().collect();
    for a in keys {
        let attrs = &mut trial.axes[a].attrs;
        attrs.num_stages = None;
        attrs.auto_stages = false;
    }
    let stmts: Vec<_> = trial.stmts.keys().collect();
    for s in stmts {
        trial.annots[s] = StmtAnnot::default();
    }
    for (&s, &stage) in func.axes[l].body.iter().zip(stages) {
        trial.annots[s].stage_id = Some(stage);
    }
    match pipeline_function(&mut trial, &PipelineOptions::default()) {
        Ok(_) => Ok(()),
        Err(errors) => Err(errors.into_iter().next().map_or(AutoRefusal::Unknown, |e| {
            AutoRefusal::Pipeliner(Box::new(e))
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::monotone;

    #[test]
    fn stages_become_non_decreasing_and_gap_free() {
        assert_eq!(monotone(&[0, 1, 2]), vec![0, 1, 2]);
        assert_eq!(monotone(&[0, 2, 1, 3]), vec![0, 1, 1, 2]);
        assert_eq!(monotone(&[2, 0, 2, 4]), vec![0, 0, 0, 1]);
        assert_eq!(monotone(&[1, 1]), vec![0, 0]);
    }
}
