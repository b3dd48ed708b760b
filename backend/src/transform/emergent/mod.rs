//! Emergent pipelining of loops that carry no annotation: load and store tiles become rings, and
//! the loads are issued ahead.
//!
//! [`pipeline_emergent`] runs in two steps, with data flowing one way through the files of this
//! folder (no file imports one that imports it back; `backend/tests/no_import_cycles.rs` checks):
//! 1. **Plan** ([`plan`]): every SBUF tile a DMA moves, and every PSUM tile, whose innermost
//!    enclosing loop `L` starts each iteration by writing all of it, becomes a ring of `N` slots
//!    along `L`. The synchronisation analysis then sees the write-after-read distance grow from 1
//!    to `N` iterations, so the in-order `sp` stream issues the loads of later iterations while
//!    the compute engines still work on earlier ones: pipelining emerges from the rings, the
//!    per-engine streams and the exact waits, without peeling. The depth is
//!    `1 + ceil(DMA time / compute time)` ([`cost`]) between 2 and `MAX_RING_DEPTH`, at most the trip count, lowered until
//!    SBUF holds every buffer ([`budget`], the one SBUF/PSUM accounting of every pass that adds
//!    slots). Unrolling, which the seed's heuristic also decides, runs before this pass
//!    ([`crate::transform::unroll`]): it gives each copy its own tiles, so every copy's tile becomes a ring of
//!    its own here.
//! 2. **Realise** each ringed loop, innermost first ([`plan::innermost_first`]), in exactly one
//!    way: a loop nested in un-annotated loops prefetches across the whole nest when the
//!    heuristic agrees ([`nest`]: no fill or drain per execution of the loop); otherwise, one
//!    predicated loop: by default [`stages`] also spreads the loop's compute statements over
//!    stages by their engine hand-offs (rings for the tiles that cross stages, checked by the
//!    annotated pipeliner's ISL legality check), and the single shift ([`shift`]: every non-load
//!    statement shifted by the same prefetch depth) is the fallback (a loop bound by DMA latency,
//!    no hand-off, no room, a plan the check refuses, or a loop that runs several times around
//!    a nest realised across it), logged with its reason. A loop around one the annotated
//!    pipeliner extended gets no compute stages ([`EmergentRemark::HoldsExtended`]): the
//!    carry overlaps the inner loop's executions and `retime` moves its stores, where stages
//!    would add a fill and a drain around every execution.
//!
//!    **A loop that holds a loop** is staged like a flat loop, the inner loop one child with the
//!    engines of its whole subtree (its hand-offs in and out are those of its instructions), so
//!    that the next iteration's work before the inner loop overlaps this iteration's inner loop,
//!    and the work after it the next one's:
//!    - a loop with no ring of its own (it moves no tile by DMA; its loops do) is a candidate too
//!      ([`nest_holders`]): its compute tiles renamed per iteration become the rings of its
//!      stages, and when no split exists it stays as it is;
//!    - around a loop realised across its nest, stages add a fill and a drain to every execution
//!      of the staged loop, which is what the nest realisation removed: only a loop that runs
//!      once in the kernel ([`executions`]) is staged there (one fill and one drain in all;
//!      measured without that rule: matmul_blocked 84,786 → 90,470 cycles, `tests/good`'s
//!      nest_deep_top 21,976 → 24,810), and only when two of its stages hold compute
//!      ([`stages::StageOptions::compute_split`]): a plan that only moves a store later or a
//!      loop of loads earlier is what the single shift does, in body order (matmul_blocked's `m`
//!      staged so ran 85,883 cycles against 84,786). The nest realisation may have put the
//!      first execution's loads in a loop of their own beside the inner loop; that loop shares
//!      the stage of the ring's readers (the ring is state carried across the staged loop's
//!      iterations), and the legality check runs on the children the loop had before.
//!
//!    - inside a loop realised across its nest, the compute splits over two stages by its
//!      hand-offs when both hold compute and the rings have room ([`drain`]: a PSUM tile of two
//!      banks lets the Tensor engine transpose the next chunk while another engine copies this
//!      one out); the last iteration's stage 1 is peeled after the loop instead of an extra
//!      iteration, so the nest realisation keeps its trip count.
//!
//!    Measured (cycles, `default` = `emergent` on these): the public mamba kernels v1 245,127 →
//!    227,518 and v2/v3 246,882 → 205,546 (the drain: `i_state`'s scan chain over two stages);
//!    nest_psum_chain 57,231 → 55,855 (both mechanisms; sched_stream's stream_inner_psum 16,809 → 16,860: its inner loop is bound by
//!    its loads' in-order chain on `sp`, so the split frees nothing and the peeled copy and
//!    matmul after the loop cost 51 cycles); `tests/good`'s nest_outer_stages
//!    45,272 → 43,148, nest_two_inner 61,651 → 59,420, nest_staged_holder 57,952 → 56,928;
//!    nest_deep_top 21,340 → 21,976 (its bias exponential, staged a trip ahead, is read only at
//!    the inner loop's end, and its first matmul waits 863 cycles longer on a DMA queue shared
//!    with the bias load); every other kernel of the corpus compiles to the same program.
//!
//! Before both steps, a tile that sibling loops use in turn, each writing all of it first, gets a
//! copy per loop ([`privatise`]: the copies of a loop in a peeled prologue and epilogue), so that
//! each loop's tile is planned in that loop alone; and every loop the annotated pipeliner
//! extended that sits in a nest carries the stage-0 loads of each next execution into the drain
//! of the one before ([`carry`]): the user's stages stay as written, and the ring's slots
//! continue across executions.
//!
//! Once the stores are retimed ([`crate::retime`], which deepens rings along one loop), a ring
//! along a short inner loop whose slots outnumber the loop's iterations takes its slots along
//! the loop around it too ([`outer_slots`], a step of its own that the driver runs last), so
//! that the next execution of the inner loop writes other slots.
//!
//! `num_stages="auto"` ([`auto`]) reuses the stage rule before the annotated pipeliner runs.
//!
//! Invariants: a loop takes exactly one path: a loop the annotated pipeliner extended gets no
//! ring of its own (only [`carry`]'s copies, within its stages), and a loop with a `num_stages`
//! annotation is skipped; each decision and its reason is logged (a loop with no ring of its own
//! is logged only when it is staged, its plan is refused, or it holds an extended loop).
//! The files import downwards only: `mod` → `auto`, `carry`, `drain`, `nest`, `outer_slots`, `privatise`,
//! `stages`, `shift`, `plan`; `drain` → `stages`, `budget`; `auto` → `stages`, `budget`, `cost`; `carry` → `nest`, `budget`, `cost`;
//! `nest` → `plan`, `budget`, `cost`; `privatise` → `plan`, `budget`; `stages` → `shift`,
//! `plan`, `budget`; `shift` → `plan`; `plan` → `budget`, `cost`.

pub mod auto;
pub mod carry;
pub mod drain;
pub mod nest;
pub mod outer_slots;
pub mod plan;
pub mod privatise;
pub mod remark;
pub mod shift;
pub mod stages;

pub use crate::cost::loop_cost::{wanted_depth, DmaFit, MAX_DEPTH};
pub use auto::{choose_auto_stages, choose_auto_stages_with, mark_auto_loops, AutoOptions};
pub use remark::{AutoRemark, EmergentRemark};
pub use stages::StageOrder;

use penguin::ir::{Op, StmtKind};
use penguin::{Axis, Function, Tensor};

/// How the emergent path realises a ring loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmergentOptions {
    /// Spread compute over stages by engine hand-offs ([`stages`]); `false`: the single shift.
    pub stages: bool,
    /// The execution order of a staged loop's body.
    pub order: StageOrder,
    /// Keep loop-carried state in one stage (always on; off only to test that the ISL legality
    /// check catches the plans this rule prevents).
    pub carried_rule: bool,
    /// Let a ring loop nested in un-annotated loops prefetch across the nest ([`nest`]);
    /// `false` realises every ring in its own loop.
    pub across_nests: bool,
    /// Stage a loop that holds a loop: one with no ring of its own, or one that runs once around
    /// a nest realised across it; `false` leaves the first alone and gives the second the
    /// single shift (to measure what the stages gain).
    pub stage_nests: bool,
}

impl Default for EmergentOptions {
    fn default() -> Self {
        EmergentOptions {
            stages: true,
            order: StageOrder::Mixed,
            carried_rule: true,
            across_nests: true,
            stage_nests: true,
        }
    }
}

/// Turns the load and store tiles of un-annotated loops into rings; returns the log lines.
pub fn pipeline_emergent(func: &mut Function) -> Vec<EmergentRemark> {
    pipeline_emergent_with(func, &EmergentOptions::default())
}

/// [`pipeline_emergent`] with options.
pub fn pipeline_emergent_with(func: &mut Function, opts: &EmergentOptions) -> Vec<EmergentRemark> {
    let mut log = Vec::new();
    privatise::privatise_tiles(func, &mut log);
    if opts.across_nests {
        let extended: Vec<Axis> = func
            .axes
            .keys()
            .filter(|&a| func.axes[a].attrs.pipelined.is_some())
            .collect();
        for e in extended {
            carry::carry_across_executions(func, e, &mut log);
        }
    }
    let original = opts.stages.then(|| func.clone());
    let mut plan = plan::ring_tiles(func, &mut log);
    if opts.stages && opts.stage_nests {
        // A loop that holds a loop is staged like a flat loop even when it rings no tile of
        // its own: its compute tiles renamed per iteration are the rings of its stages.
        for l in nest_holders(func) {
            plan.rings.entry(l).or_default();
        }
    }
    // The loops realised across their nest so far.
    let mut across: Vec<Axis> = Vec::new();
    for (l, rings) in plan::innermost_first(func, plan.rings) {
        let dma_bound = plan.dma_bound.get(&l).copied().unwrap_or(false);
        let ctx = Realise {
            original: original.as_ref(),
            opts,
            dma_bound,
        };
        if ctx.realise_loop(func, l, &rings, &across, &mut log) {
            across.push(l);
        }
    }
    log
}

/// What realising one ring loop reads besides the function.
struct Realise<'a> {
    /// The function before emergent pipelining, when stages are on (for the legality check).
    original: Option<&'a Function>,
    opts: &'a EmergentOptions,
    /// Even the deepest ring cannot hide a tile's DMA behind the loop's compute.
    dma_bound: bool,
}

impl Realise<'_> {
    /// Realises the rings of loop `l` in one of the ways of the module doc; returns whether the
    /// loop was realised across its nest. `across`: the loops realised across their nest so far.
    fn realise_loop(
        &self,
        func: &mut Function,
        l: Axis,
        rings: &[(Tensor, u32)],
        across: &[Axis],
        log: &mut Vec<EmergentRemark>,
    ) -> bool {
        // A short loop nested in un-annotated loops prefetches across the nest (no fill or
        // drain per execution); otherwise compute stages, or the single shift. A loop with no
        // ring of its own (one that holds a loop) has nothing to prefetch: stages or nothing.
        if !rings.is_empty()
            && self.opts.across_nests
            && nest::prefetch_across_nest(func, l, rings, log)
        {
            if let Some(orig) = self.original.filter(|_| self.opts.stage_nests) {
                drain::stage_with_peeled_drain(func, orig, l, rings, log);
            }
            return true;
        }
        // Staging a loop around a nest realised across it adds a fill and a drain to every
        // execution of the loop, which is what the nest realisation removed (measured: matmul
        // 90063 cycles unstaged against 111545 staged). A loop that runs once has one fill and
        // one drain in the whole kernel: it is staged like a flat loop, the inner loop one child
        // with its own engines, when its stages split compute (a plan that only moves
        // transfers is the single shift's, which keeps the body's order).
        let around = across.iter().copied().find(|&a| encloses(func, l, a));
        if let Some(inner) = around.filter(|_| !self.opts.stage_nests || executions(func, l) > 1) {
            if !rings.is_empty() {
                log.push(EmergentRemark::EnclosesNest {
                    iv: func.display_iv(l).to_string(),
                    inner: func.display_iv(inner).to_string(),
                });
                shift::shift_loads(func, l, rings, log);
            }
            return false;
        }
        // A loop that holds a loop the annotated pipeliner extended gets no compute stages: the
        // user's stages pipeline the inner loop, its carried loads overlap one execution's drain
        // with the next one's fill ([`carry`]), and `retime` issues a store after the inner loop
        // behind the next iteration's inner loops and their loads, so it no longer holds `sp` in
        // front of them; stages of its own would add a fill and a drain of this loop around
        // those executions, and put the stores of its drain in front of the next execution's
        // loads (measured on the default path: matmul_mode_b 87,503 cycles staged against
        // 77,867 unstaged, with `--peel` 94,345 against 89,179; `tests/good`'s
        // carry_executions two_stages 46,327 against 43,115; no kernel of the corpus slower).
        if let Some(inner) = (self.original.is_some())
            .then(|| holds_extended(func, l))
            .flatten()
        {
            log.push(EmergentRemark::HoldsExtended {
                iv: func.display_iv(l).to_string(),
                inner: func.display_iv(inner).to_string(),
            });
            if !rings.is_empty() {
                shift::shift_loads(func, l, rings, log);
            }
            return false;
        }
        let staged = match self.original {
            Some(_) if self.dma_bound && !transfers_mid_chain(func, l) => {
                log.push(EmergentRemark::DmaBound {
                    iv: func.display_iv(l).to_string(),
                    max: MAX_DEPTH,
                });
                false
            }
            Some(orig) => stages::stage_loop(
                func,
                orig,
                l,
                rings,
                &stages::StageOptions {
                    order: self.opts.order,
                    carried_rule: self.opts.carried_rule,
                    compute_split: around.is_some(),
                },
                log,
            ),
            None => false,
        };
        if !staged && !rings.is_empty() {
            shift::shift_loads(func, l, rings, log);
        }
        false
    }
}

/// Whether a transfer into a tile in `l`'s body reads what the body writes (a gather of indices
/// it computes, a reload of rows it stored): then the DMA latency is a link of each
/// iteration's chain, which only stages overlap across iterations (no ring issues that transfer
/// ahead), so a loop bound by DMA latency is still staged.
fn transfers_mid_chain(func: &Function, l: Axis) -> bool {
    let mut written = std::collections::BTreeSet::new();
    let mut transfers = Vec::new();
    func.walk_stmts(|s, loops| {
        if !loops.contains(&l) {
            return;
        }
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                written.insert(d.dst.tensor);
                if matches!(d.op, Op::Load | Op::Gather { .. }) {
                    transfers.push(i);
                }
            }
        }
    });
    transfers.iter().any(|&i| {
        func.insts[i]
            .srcs
            .iter()
            .any(|o| written.contains(&o.tensor))
    })
}

/// Whether loop `outer` encloses loop `inner` (at any depth).
fn encloses(func: &Function, outer: Axis, inner: Axis) -> bool {
    func.axes[outer]
        .body
        .iter()
        .any(|&s| match func.stmts[s].kind {
            StmtKind::Loop(a) => a == inner || encloses(func, a, inner),
            StmtKind::Insts(_) => false,
        })
}

/// A loop the annotated pipeliner extended that loop `l` encloses (at any depth), if any.
fn holds_extended(func: &Function, l: Axis) -> Option<Axis> {
    func.axes
        .keys()
        .find(|&a| func.axes[a].attrs.pipelined.is_some() && encloses(func, l, a))
}

/// How many times loop `l` runs: the product of the trip counts of the loops around it.
fn executions(func: &Function, l: Axis) -> i64 {
    let mut n = 1;
    func.walk_stmts(|s, loops| {
        if func.stmts[s].kind == StmtKind::Loop(l) {
            n = loops
                .iter()
                .map(|&a| (func.axes[a].ub - func.axes[a].lb).max(0))
                .product();
        }
    });
    n
}

/// The loops that hold a loop (a direct child) and that emergent pipelining may stage: not
/// annotated, not extended by the annotated pipeliner, of at least two iterations.
fn nest_holders(func: &Function) -> Vec<Axis> {
    func.axes
        .keys()
        .filter(|&l| {
            let a = &func.axes[l];
            a.attrs.num_stages.is_none()
                && a.attrs.pipelined.is_none()
                && a.trip_count() >= 2
                && a.body
                    .iter()
                    .any(|&s| matches!(func.stmts[s].kind, StmtKind::Loop(_)))
        })
        .collect()
}
