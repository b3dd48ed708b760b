//! Emergent stages for compute: spreads the direct statements of a ring loop over pipeline stages
//! by their cross-engine hand-offs, the way a modulo scheduler would, instead of shifting every
//! non-load statement by the same prefetch depth `P` ([`super::shift`]).
//!
//! [`stage_loop`] runs on one loop `l` whose load/store tiles [`super::plan::ring_tiles`] already
//! made rings (block dimension on `l`, slot `iv(l)`):
//! 1. **Engines.** Every instruction of `l`'s subtree has one engine; a `copy` (which `act`, `dve`
//!    or `pool` may run) is pinned here to the candidate least loaded by the loop's own work,
//!    costed with the shared machine description (the rule of `bir.rs`, applied to the loop), so
//!    that the hand-offs computed below are the ones the scheduler will see.
//! 2. **Stages.** The hoisted loads (those [`super::plan::hoistable_loads`] picks) get stage 0.
//!    Every other child of `l` (statement or nested loop) gets `P + h`: the stage of each earlier
//!    child it depends on (flow, anti or output, through any tensor), plus one when the
//!    dependence is a flow through a tile renamed per iteration (see 3.) from an instruction on
//!    one engine to an instruction on another (a hand-off; `sp` counts as an engine, so a store
//!    follows its producer by one stage), `h` capped at `cap`. A child with no producer in the iteration (a
//!    `memset` of an accumulator) is then placed as late as its consumers allow. Children that
//!    touch one tensor which is not renamed per iteration and is written in the loop (loop-carried
//!    state: an accumulator read before written, a buffer made outside the loop and updated in it,
//!    an output in HBM) are merged into the latest of their stages, and the stages are propagated
//!    again until nothing moves. So a statement never runs in an earlier stage than one it depends
//!    on, and loop-carried state keeps all its accesses in one stage. The rule splits every
//!    hand-off: measured with the number of split hand-offs capped (`--pipeline emergent`,
//!    cycles), softmax gives 31,798 / 27,550 / 27,426 with at most 0 / 1 / 2 or more, attention
//!    42,464 / 42,404 / 37,332, layernorm 61,846 / 57,270 / 56,278; no kernel gains from merging
//!    stages when the rings fit. Not counting the hand-off to a store's `sp` measured the same.
//! 3. **Rings.** A tile renamed per iteration (its first access in an iteration writes all of it,
//!    unconditionally, from a direct statement of `l`) whose accesses span stages `d..=u` gets
//!    `u - d + 1` slots, one more for the tile of a hoisted load (so that `sp` may fill it before
//!    the consumers of the previous trip are done with the slot it reuses), and at least the DMA
//!    heuristic's depth for a load/store ring. SBUF (192 KiB/partition, every SBUF tensor counted)
//!    and PSUM (8 banks, one per slot, every PSUM tensor counted) must hold them
//!    ([`crate::cost::budget::check_rings`]); when they do not, `cap` is lowered (fewer hand-offs
//!    split, stages merged) down to 1; below that the caller falls back to the single shift.
//! 4. **Legality.** The plan (stages, execution order, rings) is checked by the annotated
//!    pipeliner's ISL legality check ([`penguin::pipeline::compute_violations`]) on the function as
//!    it was before emergent pipelining; a refusal (or a model it cannot build) falls back to the
//!    single shift, and the log says why.
//! 5. **Apply.** The loop runs `S` (the largest stage) more iterations; a child of stage `s` works
//!    on iteration `iv - s` and is guarded by `iv >= lb + s` (when `s > 0`) and `iv < ub + s` (when
//!    `s < S`), exactly as the single shift does for `P`. The body runs the hoisted loads first,
//!    then the other children in program order ([`StageOrder::Program`]), or by decreasing stage
//!    when a child is a nested loop ([`StageOrder::Mixed`]). Measured (`--pipeline emergent`,
//!    cycles): program order gives softmax 27,426 and attention 38,536, decreasing stage 31,554
//!    and 37,332. In program order each hand-off's source comes early in its engine's stream (the
//!    `dve` op that feeds `act` in the same trip); but a nested loop is one long multi-engine
//!    block there, and the work after it that only waits on earlier trips (attention's
//!    `reciprocal`) queues behind it on its engine, which the oldest-first order avoids.
//!
//! The caller skips this pass for a loop that even a ring of [`super::MAX_DEPTH`] slots cannot
//! hide the DMA of (the loop is bound by DMA latency: transpose's inner loop took 42,948 cycles
//! staged against 38,852 single-shifted, the extra stages only lengthening its ramp).
//!
//! `l` may have no ring of its own (`rings` empty: a loop that holds a loop, see [`super`]); its
//! stages then come from its compute hand-offs alone. Around a loop realised across its nest the
//! caller asks for a plan whose stages split compute ([`StageOptions::compute_split`]), and the
//! legality check sees the plan restricted to the children `l` had before emergent pipelining
//! ([`project_plan`]).
//!
//! Invariants: on `false` the function is unchanged; on `true` every child of `l` has a stage, the
//! loop's trip count grew by the largest stage, and every ring of `l` has at least as many slots as
//! the span of stages of its accesses.

use super::plan::hoistable_loads;
use super::remark::{EmergentRemark, Refused, RingDepth};
use super::shift::shift_stmt;
use crate::cost::budget::check_rings;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{BlockDim, EngineClass, Memory, Op, StmtKind, TensorKind};
use penguin::pipeline::{LegalityReport, PipelinePlan};
use penguin::{Axis, Function, Inst, Stmt, Tensor};
use runtime_sim::isa::Engine;
use runtime_sim::machine;
use std::collections::{BTreeMap, BTreeSet};

/// In which order the children of a staged loop run in one trip of the extended loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageOrder {
    /// Hoisted loads, then the other children by decreasing stage (program order within one).
    Descending,
    /// Hoisted loads, then the other children in program order.
    Program,
    /// `Descending` when a child is a nested loop, else `Program`.
    Mixed,
}

/// How [`stage_loop`] plans (the stage fields of `super::EmergentOptions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageOptions {
    /// The execution order of the staged loop's body.
    pub order: StageOrder,
    /// Keep loop-carried state in one stage (off only in tests of the legality check).
    pub carried_rule: bool,
    /// Stage the loop only when at least two stages hold compute (work of an engine other than
    /// `sp`): a plan that only moves transfers to other stages is what the single shift
    /// already does, without the reordering of the body.
    pub compute_split: bool,
}

/// One access of a tensor by an instruction of a child of the loop.
#[derive(Clone, Copy, Debug)]
struct Access {
    child: usize,
    inst: Inst,
    engine: EngineClass,
    writes: bool,
    reads: bool,
}

/// Everything the planner reads about loop `l`.
pub(super) struct LoopFacts {
    /// Per tensor touched in `l`'s subtree, its accesses in program order.
    accesses: BTreeMap<Tensor, Vec<Access>>,
    /// Children that are hoisted loads (stage 0).
    hoisted: Vec<bool>,
    /// The tiles the hoisted loads fill.
    hoisted_tiles: BTreeSet<Tensor>,
    /// The prefetch depth of the hoisted loads (0 when none).
    p: u32,
    /// Tensors renamed per iteration of `l`, with the slots they already have (1 for a compute
    /// tile that is not a ring yet).
    renamed: BTreeMap<Tensor, u32>,
    /// Groups of children that must share a stage (loop-carried state), with the tensor why.
    groups: Vec<(Tensor, Vec<usize>)>,
    /// HBM tensors each iteration of `l` accesses in rows of its own ([`compute_private_rows`]):
    /// no state carried across iterations, and a reload of what a store wrote is a hand-off
    /// (the store lands a DMA latency later).
    private_rows: BTreeSet<Tensor>,
    /// The engine of every instruction of the subtree (copies pinned).
    engines: BTreeMap<Inst, EngineClass>,
    /// Each engine's cycles of work in one iteration (`sp`: issue only).
    pub(super) loads: BTreeMap<&'static str, u64>,
    /// Split hand-offs through every tensor and drop the groups (the carried-state rule off: only
    /// to test that the legality check catches what the rule prevents).
    unsafe_split: bool,
}

/// A stage plan for one loop.
struct StagePlan {
    stages: Vec<u32>,
    /// Every ring of the loop with its slot count.
    rings: Vec<(Tensor, u32)>,
    cap: u32,
}

/// Spreads loop `l`'s compute over stages; returns `false` (function unchanged) when the single
/// shift should be used instead. `original` is the function before emergent pipelining (for the
/// legality check); `rings` the load/store rings of `l` with their depths.
pub fn stage_loop(
    func: &mut Function,
    original: &Function,
    l: Axis,
    rings: &[(Tensor, u32)],
    opts: &StageOptions,
    log: &mut Vec<EmergentRemark>,
) -> bool {
    let iv = func.display_iv(l).to_string();
    let mut facts = compute_facts(func, l, rings);
    if !opts.carried_rule {
        facts.groups.clear();
        facts.unsafe_split = true;
    }
    // A chain of `n` children has fewer than `n` hand-offs: with that cap none is merged.
    let n = func.axes[l].body.len() as u32;
    let max_cap = compute_stages(&facts, n)
        .into_iter()
        .max()
        .unwrap_or(0)
        .saturating_sub(facts.p);
    if max_cap == 0 {
        // A loop with no ring of its own (one that holds a loop) stays as it was: no line.
        if !rings.is_empty() {
            log.push(EmergentRemark::NoHandOff { iv });
        }
        return false;
    }
    let Some(plan) = fitting_plan(func, &facts, max_cap, &iv, log) else {
        log.push(EmergentRemark::NoSplitFits { iv });
        return false;
    };
    if opts.compute_split && compute_stage_count(func, l, &facts, &plan.stages) < 2 {
        log.push(EmergentRemark::OnlyTransfersSplit { iv });
        return false;
    }
    let has_loop = func.axes[l]
        .body
        .iter()
        .any(|&s| matches!(func.stmts[s].kind, StmtKind::Loop(_)));
    let order = compute_order(&facts, &plan.stages, opts.order, has_loop);
    let last = plan.stages.iter().copied().max().unwrap_or(0);
    let pplan = PipelinePlan {
        axis: l,
        num_stages: last + 1,
        stages: plan.stages.clone(),
        order: order.clone(),
        buffers: plan.rings.clone(),
    };
    let checked = project_plan(func, original, &pplan);
    // Refused, the caller shifts the loop's loads ([`super::shift`]), when that changes it.
    let then = if super::shift::shifts_loads(func, l, rings) {
        Refused::SingleShift
    } else {
        Refused::Unchanged
    };
    let Some(verdict) = check_legality(original, &checked, &iv, then, log) else {
        return false;
    };
    log_plan(func, l, &facts, &plan, (max_cap, verdict), log);
    apply(func, l, &facts, &plan, &order);
    true
}

/// The plan with the largest cap (at most `max_cap` hand-offs split) whose rings fit SBUF and
/// PSUM ([`check_rings`]), or `None`; each cap that does not fit is logged.
fn fitting_plan(
    func: &Function,
    facts: &LoopFacts,
    max_cap: u32,
    iv: &str,
    log: &mut Vec<EmergentRemark>,
) -> Option<StagePlan> {
    for cap in (1..=max_cap).rev() {
        let stages = compute_stages(facts, cap);
        let rings = compute_rings(facts, &stages);
        match check_rings(func, &rings) {
            Ok(()) => return Some(StagePlan { stages, rings, cap }),
            Err(why) => log.push(EmergentRemark::StagesDoNotFit {
                iv: iv.to_string(),
                cap,
                why,
            }),
        }
    }
    None
}

/// `pplan` restricted to the children that loop `l` had before emergent pipelining, for the
/// legality check on `original`: a loop realised across its nest earlier may have added a
/// sibling (the first execution's loads in a loop of their own, [`super::nest`]), which loads a
/// kernel input into a ring of that nest and shares a stage with the ring's readers (the ring is
/// state carried across the iterations of `l`, kept in one stage). When a child of `original` is
/// no longer in the body, the plan is returned whole and the check reports the mismatch.
pub(super) fn project_plan(
    func: &Function,
    original: &Function,
    pplan: &PipelinePlan,
) -> PipelinePlan {
    let l = pplan.axis;
    let now = &func.axes[l].body;
    let Some(before) = original.axes.get(l).map(|a| &a.body) else {
        return pplan.clone();
    };
    if before == now {
        return pplan.clone();
    }
    let Some(index): Option<Vec<usize>> = before
        .iter()
        .map(|s| now.iter().position(|t| t == s))
        .collect()
    else {
        return pplan.clone();
    };
    let stages = index.iter().map(|&c| pplan.stages[c]).collect();
    let order = pplan
        .order
        .iter()
        .filter_map(|c| index.iter().position(|i| i == c))
        .collect();
    PipelinePlan {
        stages,
        order,
        ..pplan.clone()
    }
}

/// How many distinct stages of `stages` hold an instruction of an engine other than `sp`.
pub(super) fn compute_stage_count(
    func: &Function,
    l: Axis,
    facts: &LoopFacts,
    stages: &[u32],
) -> usize {
    let mut with_compute = BTreeSet::new();
    for (c, &s) in func.axes[l].body.iter().enumerate() {
        let mut insts = Vec::new();
        subtree_insts(func, s, &mut insts);
        if insts
            .iter()
            .any(|i| facts.engines.get(i).is_some_and(|&e| e != EngineClass::Dma))
        {
            with_compute.insert(stages[c]);
        }
    }
    with_compute.len()
}

/// The ISL legality check of `pplan` on the function before emergent pipelining: the verdict
/// for the log, or `None` (logged) when the check refuses the plan or cannot build its model.
pub(super) fn check_legality(
    original: &Function,
    pplan: &PipelinePlan,
    iv: &str,
    then: Refused,
    log: &mut Vec<EmergentRemark>,
) -> Option<LegalityReport> {
    match penguin::pipeline::compute_violations(original, pplan) {
        Ok(r) if r.is_legal() => Some(r),
        Ok(r) => {
            let v = &r.violations[0];
            log.push(EmergentRemark::StagesIllegal {
                iv: iv.to_string(),
                violations: r.violations.len(),
                kind: v.kind,
                tensor: original.display_name(v.tensor).to_string(),
                then,
            });
            None
        }
        Err(why) => {
            log.push(EmergentRemark::StagesUnchecked {
                iv: iv.to_string(),
                why,
                then,
            });
            None
        }
    }
}

/// Logs the stage plan of loop `l` (each child with its stage) and every ring with its span;
/// `max_cap` is the cap before merging, `verdict` the legality check's.
fn log_plan(
    func: &Function,
    l: Axis,
    facts: &LoopFacts,
    plan: &StagePlan,
    (max_cap, verdict): (u32, LegalityReport),
    log: &mut Vec<EmergentRemark>,
) {
    let iv = func.display_iv(l);
    let last = plan.stages.iter().copied().max().unwrap_or(0);
    let body = func.axes[l].body.clone();
    let children = body
        .iter()
        .enumerate()
        .map(|(c, &s)| (describe_child(func, s, facts), plan.stages[c]))
        .collect();
    log.push(EmergentRemark::Staged {
        iv: iv.to_string(),
        trip: func.axes[l].trip_count(),
        stages: last + 1,
        depth: facts.p,
        merged: (plan.cap < max_cap).then_some(plan.cap),
        max_cap,
        verdict,
        children,
    });
    for &(t, count) in &plan.rings {
        let (d, u) = stage_span(facts, &plan.stages, t);
        log.push(EmergentRemark::StageRing {
            iv: iv.to_string(),
            tile: func.display_name(t).to_string(),
            slots: count,
            written: d,
            used: u,
            depth: if count == u - d + 1 {
                RingDepth::Span
            } else if facts.hoisted_tiles.contains(&t) && count == u - d + 2 {
                RingDepth::OneMore
            } else {
                RingDepth::Heuristic
            },
        });
    }
}

/// The engine class name of the machine.
fn engine_name(e: EngineClass) -> &'static str {
    match e {
        EngineClass::Dma => "sp",
        EngineClass::Tensor => "pe",
        EngineClass::Vector => "dve",
        EngineClass::Scalar => "act",
        EngineClass::GpSimd => "pool",
        EngineClass::Any => "any",
    }
}

pub(super) fn describe_child(func: &Function, s: Stmt, facts: &LoopFacts) -> String {
    match &func.stmts[s].kind {
        StmtKind::Insts(insts) => {
            let parts: Vec<String> = insts
                .iter()
                .map(|i| {
                    format!(
                        "{}.{}",
                        func.display_name(func.insts[*i].dst.tensor),
                        engine_name(facts.engines[i])
                    )
                })
                .collect();
            format!("`{}`", parts.join(","))
        }
        StmtKind::Loop(a) => format!("`loop {}`", func.display_iv(*a)),
    }
}

/// The instructions of `s` and everything nested in it, in program order.
fn subtree_insts(func: &Function, s: Stmt, out: &mut Vec<Inst>) {
    match &func.stmts[s].kind {
        StmtKind::Insts(insts) => out.extend(insts.iter().copied()),
        StmtKind::Loop(a) => {
            for &c in &func.axes[*a].body {
                subtree_insts(func, c, out);
            }
        }
    }
}

/// The repetitions of `s`'s instructions per iteration of its parent (nested trips).
fn inst_reps(func: &Function, s: Stmt, reps: u64, out: &mut BTreeMap<Inst, u64>) {
    match &func.stmts[s].kind {
        StmtKind::Insts(insts) => {
            for &i in insts {
                out.insert(i, reps);
            }
        }
        StmtKind::Loop(a) => {
            let t = func.axes[*a].trip_count().max(0) as u64;
            for &c in &func.axes[*a].body {
                inst_reps(func, c, reps * t, out);
            }
        }
    }
}

/// The engine of every instruction of `l`'s subtree, copies pinned by the backend's chooser
/// ([`crate::cost::engine_choice`], on the loop's own work), and each engine's cycles of work per iteration.
fn compute_engines(
    func: &Function,
    l: Axis,
) -> (BTreeMap<Inst, EngineClass>, BTreeMap<&'static str, u64>) {
    let mut reps = BTreeMap::new();
    for &c in &func.axes[l].body {
        inst_reps(func, c, 1, &mut reps);
    }
    let cost = |e: EngineClass, op: &Op, n: u64| -> u64 {
        match (e, op) {
            (EngineClass::Dma, _) => machine::dma_issue_cycles(),
            (EngineClass::GpSimd, _) => machine::pool_cycles(n),
            (EngineClass::Scalar, _) => machine::activation_cycles(n),
            (EngineClass::Tensor, _) => {
                machine::matmul_cycles(runtime_sim::isa::DType::F32, 128, n)
            }
            (_, Op::TensorTensor { .. }) => machine::tensor_tensor_cycles(n, false),
            _ => machine::vector_cycles(n),
        }
    };
    let mut load: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut engines = BTreeMap::new();
    for (&i, &r) in &reps {
        let d = &func.insts[i];
        if d.engine != EngineClass::Any {
            let n = d.dst.access.size.iter().skip(1).product::<u64>().max(1);
            *load.entry(engine_name(d.engine)).or_default() += r * cost(d.engine, &d.op, n);
            engines.insert(i, d.engine);
        }
    }
    // Copies by the chooser of the backend, on the loop's own body (`compute_body_choice`).
    let choice = crate::cost::engine_choice::compute_body_choice(func, &func.axes[l].body);
    for (&i, &r) in &reps {
        let d = &func.insts[i];
        let Some(e) = choice[i] else {
            continue;
        };
        let best = match e {
            Engine::Act => EngineClass::Scalar,
            Engine::Pool => EngineClass::GpSimd,
            _ => EngineClass::Vector,
        };
        let n = d.dst.access.size.iter().skip(1).product::<u64>().max(1);
        *load.entry(engine_name(best)).or_default() += r * cost(best, &d.op, n);
        engines.insert(i, best);
    }
    (engines, load)
}

/// The hoisted loads of `l` ([`hoistable_loads`]) and their prefetch depth.
pub fn hoisted_loads(func: &Function, l: Axis, rings: &[(Tensor, u32)]) -> (Vec<Stmt>, u32) {
    let loads = hoistable_loads(func, l, rings, false);
    let p = loads
        .iter()
        .map(|&(_, _, depth)| depth - 1)
        .min()
        .unwrap_or(0);
    (loads.into_iter().map(|(s, _, _)| s).collect(), p)
}

pub(super) fn compute_facts(func: &Function, l: Axis, rings: &[(Tensor, u32)]) -> LoopFacts {
    let body = func.axes[l].body.clone();
    let (engines, loads) = compute_engines(func, l);
    let (hoisted_stmts, p) = hoisted_loads(func, l, rings);
    let hoisted: Vec<bool> = body.iter().map(|s| hoisted_stmts.contains(s)).collect();
    let mut hoisted_tiles = BTreeSet::new();
    for &s in &hoisted_stmts {
        let mut insts = Vec::new();
        subtree_insts(func, s, &mut insts);
        hoisted_tiles.extend(insts.iter().map(|&i| func.insts[i].dst.tensor));
    }
    let mut accesses: BTreeMap<Tensor, Vec<Access>> = BTreeMap::new();
    for (child, &s) in body.iter().enumerate() {
        let mut insts = Vec::new();
        subtree_insts(func, s, &mut insts);
        for i in insts {
            let d = &func.insts[i];
            let engine = engines[&i];
            for o in &d.srcs {
                accesses.entry(o.tensor).or_default().push(Access {
                    child,
                    inst: i,
                    engine,
                    writes: false,
                    reads: true,
                });
            }
            accesses.entry(d.dst.tensor).or_default().push(Access {
                child,
                inst: i,
                engine,
                writes: true,
                reads: matches!(d.op, Op::Matmul { accumulate: true }),
            });
        }
    }
    // How many accesses each tensor has in the whole function's tree.
    let mut placed: BTreeMap<Tensor, usize> = BTreeMap::new();
    func.walk_stmts(|s, _| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                for o in std::iter::once(&d.dst).chain(d.srcs.iter()) {
                    *placed.entry(o.tensor).or_default() += 1;
                }
            }
        }
    });
    let mut renamed = BTreeMap::new();
    let mut groups = Vec::new();
    let mut private_rows = BTreeSet::new();
    for (&t, acc) in &accesses {
        let td = &func.tensors[t];
        let children: BTreeSet<usize> = acc.iter().map(|a| a.child).collect();
        if let Some(&(_, depth)) = rings.iter().find(|(r, _)| *r == t) {
            renamed.insert(t, depth);
            continue;
        }
        let all_here = placed.get(&t).copied().unwrap_or(0) == acc.len();
        let first = &acc[0];
        let fd = &func.insts[first.inst];
        let fs = body[first.child];
        let direct = matches!(&func.stmts[fs].kind, StmtKind::Insts(i) if i.contains(&first.inst))
            && func.stmts[fs].preds.is_empty();
        let whole = fd.dst.tensor == t && fd.writes_whole(&td.shape);
        let renamable = matches!(td.memory, Memory::Sbuf | Memory::Psum)
            && td.kind == TensorKind::Local
            && td.block.is_empty()
            && all_here
            && direct
            && whole
            && first.writes
            && !first.reads;
        if renamable {
            if children.len() > 1 {
                renamed.insert(t, 1);
            }
            continue;
        }
        // Only a tensor the loop reads back: its stores alone stay together, as before.
        let chained = acc.iter().any(|a| a.writes) && acc.iter().any(|a| a.reads);
        if td.memory == Memory::Hbm && chained && compute_private_rows(func, l, t, acc) {
            private_rows.insert(t);
            continue;
        }
        let written = acc.iter().any(|a| a.writes);
        if written && children.len() > 1 {
            groups.push((t, children.into_iter().collect()));
        }
    }
    LoopFacts {
        accesses,
        hoisted,
        hoisted_tiles,
        p,
        renamed,
        groups,
        private_rows,
        engines,
        loads,
        unsafe_split: false,
    }
}

/// Whether every iteration of `l` accesses `t` (through `acc`) in elements no other iteration
/// touches: along some dimension every access starts at `a·iv + c` (the same `a`, no other
/// loop's variable) and all of them, boxes or patterns' bounding boxes, fit in a window of
/// `|a|` elements. Then the accesses of different iterations are disjoint, whatever their
/// stages.
fn compute_private_rows(func: &Function, l: Axis, t: Tensor, acc: &[Access]) -> bool {
    let mut ops = Vec::new();
    for a in acc {
        let d = &func.insts[a.inst];
        if d.op.is_indirect() {
            return false;
        }
        ops.extend(
            std::iter::once(&d.dst)
                .chain(&d.srcs)
                .filter(|o| o.tensor == t),
        );
    }
    let Some(first) = ops.first() else {
        return false;
    };
    (0..first.access.start.len()).any(|dim| {
        let a = first.access.start[dim].coeff(l);
        if a == 0 {
            return false;
        }
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        for o in &ops {
            let e = &o.access.start[dim];
            if e.coeff(l) != a || e.terms().len() != 1 {
                return false;
            }
            let c = e.constant_term();
            lo = lo.min(c);
            hi = hi.max(c + o.access.size[dim] as i64);
        }
        hi - lo <= a.abs()
    })
}

/// The facts of loop `l` realised across its nest ([`super::nest`]): its load copies (the
/// direct statements that are one load from a kernel input: prologue, carries, in-loop copy),
/// already issued ahead, count as hoisted at stage 0 with no prefetch depth after them, so that
/// the stages split only the compute. `rings`: the rings of `l` that the nest realisation did
/// not re-slot (its PSUM rings).
pub(super) fn compute_nest_facts(
    func: &Function,
    l: Axis,
    rings: &[(Tensor, u32)],
) -> (LoopFacts, Vec<bool>) {
    let mut facts = compute_facts(func, l, rings);
    let body = func.axes[l].body.clone();
    let hoisted: Vec<bool> = body
        .iter()
        .map(|&s| match &func.stmts[s].kind {
            StmtKind::Insts(insts) if insts.len() == 1 => {
                let d = &func.insts[insts[0]];
                matches!(d.op, Op::Load)
                    && d.srcs
                        .iter()
                        .all(|o| func.tensors[o.tensor].kind == TensorKind::Input)
            }
            _ => false,
        })
        .collect();
    facts.hoisted_tiles = body
        .iter()
        .zip(&hoisted)
        .filter(|(_, &h)| h)
        .filter_map(|(&s, _)| match &func.stmts[s].kind {
            StmtKind::Insts(insts) => Some(func.insts[insts[0]].dst.tensor),
            StmtKind::Loop(_) => None,
        })
        .collect();
    facts.hoisted = hoisted.clone();
    facts.p = 0;
    (facts, hoisted)
}

/// Per child of the loop, where its accesses sit in each tensor's list: `(accesses, ring,
/// private, own)`,
/// the tensor's accesses in program order and the range of them that are the child's (a
/// tensor's accesses are listed child by child, so the earlier children's are the prefix before
/// `own` and the later children's the suffix after it). The stage rules of [`lower_bound`] and
/// [`compute_stages`] visit, per child, only the tensors it touches: linear in a body whose
/// tensors each have a few accesses, where a scan of every tensor per child was quadratic
/// (a chain of 1,024 statements: 987 M instructions of the stage search).
type ChildAccesses<'f> = Vec<Vec<(&'f [Access], bool, bool, std::ops::Range<usize>)>>;

/// [`ChildAccesses`] of `facts` (the flags: the tensor is renamed per iteration, or every split
/// is allowed, so a flow through it may be a split hand-off; the tensor is HBM rows private to
/// each iteration, [`compute_private_rows`], whose reload follows its store a stage later).
fn index_children(facts: &LoopFacts) -> ChildAccesses<'_> {
    let mut by_child: ChildAccesses<'_> = vec![Vec::new(); facts.hoisted.len()];
    for (t, acc) in &facts.accesses {
        let ring = facts.unsafe_split || facts.renamed.contains_key(t);
        let private = facts.private_rows.contains(t);
        let mut k = 0;
        while k < acc.len() {
            let c = acc[k].child;
            let end = k + acc[k..].iter().take_while(|a| a.child == c).count();
            by_child[c].push((&acc[..], ring, private, k..end));
            k = end;
        }
    }
    by_child
}

/// The lowest stage child `c` may take given the stages of the children before it, and whether it
/// has a producer in the iteration.
fn lower_bound(
    facts: &LoopFacts,
    index: &ChildAccesses<'_>,
    stages: &[u32],
    c: usize,
    cap: u32,
) -> (u32, bool) {
    let top = facts.p + cap;
    let mut s = facts.p;
    let mut has_pred = false;
    for (acc, ring, private, own) in &index[c] {
        // Only a tile renamed per iteration can carry a value to a later stage; every other
        // tensor written in the loop keeps its accesses in one stage (the groups).
        for a in &acc[..own.start] {
            for b in &acc[own.clone()] {
                let flow = a.writes && b.reads;
                if !(flow || b.writes && (a.reads || a.writes)) {
                    continue;
                }
                has_pred = true;
                let hand = u32::from(
                    (*ring && a.engine != b.engine || *private) && flow && !facts.hoisted[a.child],
                );
                s = s.max((stages[a.child] + hand).min(top).max(stages[a.child]));
            }
        }
    }
    (s, has_pred)
}

/// The stage of every child of the loop, with at most `cap` hand-offs split.
pub(super) fn compute_stages(facts: &LoopFacts, cap: u32) -> Vec<u32> {
    let n = facts.hoisted.len();
    let index = index_children(facts);
    let mut stages = vec![0u32; n];
    let mut sources = Vec::new();
    for c in 0..n {
        if facts.hoisted[c] {
            continue;
        }
        let (s, has_pred) = lower_bound(facts, &index, &stages, c, cap);
        stages[c] = s;
        if !has_pred {
            sources.push(c);
        }
    }
    // A child with no producer in the iteration runs as late as its consumers allow.
    for &c in sources.iter().rev() {
        let mut latest = u32::MAX;
        for (acc, ring, private, own) in &index[c] {
            for a in &acc[own.clone()] {
                for b in &acc[own.end..] {
                    let flow = a.writes && b.reads;
                    if !(flow || b.writes && (a.reads || a.writes)) {
                        continue;
                    }
                    let hand = u32::from((*ring && a.engine != b.engine || *private) && flow);
                    latest = latest.min(stages[b.child].saturating_sub(hand));
                }
            }
        }
        if latest != u32::MAX {
            stages[c] = stages[c].max(latest);
        }
    }
    // Loop-carried state keeps its accesses in one stage; propagate until nothing moves.
    loop {
        let mut changed = false;
        for (_, g) in &facts.groups {
            let m = g.iter().map(|&c| stages[c]).max().unwrap_or(0);
            for &c in g {
                if stages[c] != m {
                    stages[c] = m;
                    changed = true;
                }
            }
        }
        for c in 0..n {
            if facts.hoisted[c] {
                continue;
            }
            let (s, _) = lower_bound(facts, &index, &stages, c, cap);
            if s > stages[c] {
                stages[c] = s;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    stages
}

/// The stages of the first and of the last access of `t`.
fn stage_span(facts: &LoopFacts, stages: &[u32], t: Tensor) -> (u32, u32) {
    let acc = &facts.accesses[&t];
    let d = acc.iter().map(|a| stages[a.child]).min().unwrap_or(0);
    let u = acc.iter().map(|a| stages[a.child]).max().unwrap_or(0);
    (d, u)
}

/// Every ring of the loop and its slot count under `stages`.
pub(super) fn compute_rings(facts: &LoopFacts, stages: &[u32]) -> Vec<(Tensor, u32)> {
    let mut rings = Vec::new();
    for (&t, &depth) in &facts.renamed {
        let (d, u) = stage_span(facts, stages, t);
        // A hoisted load's ring keeps one slot more than its span, so that `sp` may issue the
        // load of a trip before the consumers of the trip before it are done with the slot.
        let extra = u32::from(d == 0 && facts.hoisted_tiles.contains(&t));
        let count = depth.max(u - d + 1 + extra);
        if count >= 2 {
            rings.push((t, count));
        }
    }
    rings
}

/// The execution order of the children in one trip of the extended loop.
fn compute_order(
    facts: &LoopFacts,
    stages: &[u32],
    rule: StageOrder,
    has_loop: bool,
) -> Vec<usize> {
    let rule = match rule {
        StageOrder::Mixed if has_loop => StageOrder::Descending,
        StageOrder::Mixed => StageOrder::Program,
        r => r,
    };
    let n = stages.len();
    let mut order: Vec<usize> = (0..n).filter(|&c| facts.hoisted[c]).collect();
    let mut rest: Vec<usize> = (0..n).filter(|&c| !facts.hoisted[c]).collect();
    if rule == StageOrder::Descending {
        rest.sort_by_key(|&c| std::cmp::Reverse(stages[c]));
    }
    order.extend(rest);
    order
}

/// Realises the plan: pinned copies, ring slots, shifted and guarded children, extended loop.
fn apply(func: &mut Function, l: Axis, facts: &LoopFacts, plan: &StagePlan, order: &[usize]) {
    for (&i, &e) in &facts.engines {
        func.insts[i].engine = e;
    }
    let sel = AffineExpr::iv(l);
    for &(t, count) in &plan.rings {
        func.tensors[t].block = vec![BlockDim { axis: l, count }];
        for a in &facts.accesses[&t] {
            let d = &mut func.insts[a.inst];
            for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
                if o.tensor == t {
                    o.access.slots = vec![sel.clone()];
                }
            }
        }
    }
    let body = func.axes[l].body.clone();
    let last = plan.stages.iter().copied().max().unwrap_or(0);
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    for (c, &s) in body.iter().enumerate() {
        let st = plan.stages[c];
        if st > 0 {
            let shifted = AffineExpr::from_terms([(l, 1)], -i64::from(st));
            shift_stmt(func, s, l, &shifted);
            func.stmts[s].preds.push(Predicate {
                expr: AffineExpr::iv(l),
                cmp: CmpOp::Ge,
                bound: lb + i64::from(st),
            });
        }
        if st < last {
            func.stmts[s].preds.push(Predicate {
                expr: AffineExpr::iv(l),
                cmp: CmpOp::Lt,
                bound: ub + i64::from(st),
            });
        }
        if matches!(func.stmts[s].kind, StmtKind::Insts(_)) {
            func.stage_tags[s] = Some(st);
        }
    }
    func.axes[l].ub = ub + i64::from(last);
    func.axes[l].body = order.iter().map(|&c| body[c]).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop of `n` statements, each reading the tile the one before wrote, on `act` and `dve`
    /// by turns, between a load and a store.
    fn chain(n: usize) -> String {
        let mut s = String::from(
            "kernel chain(a) -> (c) {\n  tensor a: hbm f32[1024, 8] input\n  \
             tensor c: hbm f32[1024, 8] output\n",
        );
        for k in 0..=n {
            s += &format!("  tensor t{k}: sbuf f32[128, 8] local\n");
        }
        s += "  loop i in 0..8 affine {\n    stmt {\n      \
              t0[0 +: 128, 0 +: 8] = load.dma a[128*i +: 128, 0 +: 8]\n    }\n";
        for k in 1..=n {
            let op = if k % 2 == 1 {
                "activation.act(func=exp, scale=1.0, bias=false)"
            } else {
                "tensor_scalar.dve(op=add, imm=1.0, reverse=false)"
            };
            s += &format!(
                "    stmt {{\n      t{k}[0 +: 128, 0 +: 8] = {op} t{}[0 +: 128, 0 +: 8]\n    }}\n",
                k - 1
            );
        }
        s += &format!(
            "    stmt {{\n      c[128*i +: 128, 0 +: 8] = store.dma t{n}[0 +: 128, 0 +: 8]\n    \
             }}\n  }}\n}}\n"
        );
        s
    }

    /// [`lower_bound`] by the definition: every access of every tensor by an earlier child.
    fn lower_bound_by_scan(facts: &LoopFacts, stages: &[u32], c: usize, cap: u32) -> u32 {
        let mut s = facts.p;
        for (t, acc) in &facts.accesses {
            let ring = facts.unsafe_split || facts.renamed.contains_key(t);
            for a in acc.iter().filter(|a| a.child < c) {
                for b in acc.iter().filter(|b| b.child == c) {
                    let flow = a.writes && b.reads;
                    if !(flow || b.writes && (a.reads || a.writes)) {
                        continue;
                    }
                    let hand =
                        u32::from(ring && flow && a.engine != b.engine && !facts.hoisted[a.child]);
                    s = s.max(
                        (stages[a.child] + hand)
                            .min(facts.p + cap)
                            .max(stages[a.child]),
                    );
                }
            }
        }
        s
    }

    /// The stage rules visit, per child, only the accesses of the tensors it touches by the
    /// children before it: in a chain, the one access that wrote its operand. (A scan of every
    /// tensor per child, as before, visits the whole loop's accesses per child.) Their answer is
    /// the definition's.
    #[test]
    fn the_stage_rules_visit_only_the_tensors_a_child_touches() {
        let n = 200;
        let func = penguin::parse::parse_function(&chain(n)).expect("the test kernel parses");
        let l = (func.axes.keys())
            .find(|&a| func.axes[a].iv_name == "i")
            .expect("the loop is named i");
        let facts = compute_facts(&func, l, &[]);
        let index = index_children(&facts);
        assert_eq!(index.len(), n + 2, "one entry per child");
        let earlier: usize = (index.iter().flatten())
            .map(|(_, _, _, own)| own.start)
            .sum();
        assert!(
            earlier <= n + 1,
            "each child sees the one earlier access of its operand, {earlier} in all"
        );
        for cap in [1, 3, n as u32] {
            let stages = compute_stages(&facts, cap);
            for c in 0..stages.len() {
                let (s, _) = lower_bound(&facts, &index, &stages, c, cap);
                assert_eq!(s, lower_bound_by_scan(&facts, &stages, c, cap), "child {c}");
            }
            // Every hand-off between `act` and `dve` is split, up to the cap.
            assert_eq!(stages.iter().copied().max(), Some(cap));
        }
    }
}
