//! The nkc backend: Penguin IR (pipelined or not) to the pseudo-ISA of `../shared/MACHINE.md`.
//!
//! Before it, on Penguin IR (run by the driver's compile context, `nkc::pipeline::Context`,
//! verifying after each): [`transform::fold_zeros::fold_psum_zeros`] folds a PSUM accumulator's zeroing into
//! its first matmul, on every path; on the paths that pipeline un-annotated loops,
//! [`transform::unroll::unroll_loops`] unrolls the innermost un-annotated loops whose transfers spread better
//! over the DMA queues unrolled, and [`transform::emergent::pipeline_emergent`] pipelines the loops that carry
//! no annotation (rings for load/store tiles, loads issued ahead in one predicated loop, compute
//! spread over stages, or, for a short loop nested in un-annotated loops, across the nest:
//! [`transform::emergent::nest`]); then [`retime::retime_stores`] issues a store whose data is late one
//! iteration later, after the next iteration's loads, where the modulo scheduler predicts a gain. `num_stages="auto"` is chosen earlier still, before the annotated
//! pipeliner ([`transform::emergent::choose_auto_stages`]).
//!
//! The passes, in order ([`compile`]; their names, [`PASSES`], are those of `--print-after`, and
//! [`compile_observed`] shows each one's output to an observer):
//! 1. [`bir::lower_function`]: BIR, per-engine instructions on logical buffers; an annotated loop
//!    stays one hardware loop whose stage predicates are instruction guards; then
//!    [`schedule::schedule_bodies`] (the list scheduler: every body's order by critical path)
//!    and, for every flat loop body, [`modulo::schedule_loops`] (the modulo scheduler): the loop
//!    dependence graph ([`ldg`]) and an iterative modulo schedule, whose start-offset order an
//!    annotated loop's body takes when it is predicted faster; when a pipelined loop's recurrence
//!    runs through the reuse of a tile, [`expand::expand_recurrence`] gives the tile one more ring
//!    slot and the steps repeat (at most [`MAX_EXPANSIONS`] times);
//! 2. [`alloc::allocate`]: colouring allocators (live ranges, petgraph interference graph) for
//!    SBUF, PSUM banks and HBM scratch (an arena per dtype), or a diagnostic naming the buffers
//!    and bytes;
//! 3. [`emit::emit_nodes`]: addresses with address rotation (ring slots as modulo terms), DMA
//!    splitting over the queues ([`queues::compute_queue_plan`] balances each loop body's
//!    transfers over the 16 queues and `sp`'s issue slots), footprints;
//! 4. [`sync::compute_sync`]: a semaphore for every cross-engine dependence, with waits affine in
//!    the iteration registers;
//! 5. [`hb::compute_pruned_waits`] (`prune-waits`): waits that other waits imply are dropped, decided by a static
//!    happens-before analysis of the program (never by simulating it; the race detector is the
//!    tests' oracle for it, `tests/static_pruning.rs`);
//! 6. [`assemble()`]: one in-order stream per engine (the program order of the kernel), hardware
//!    loops, the remaining redundant waits dropped; then a peeled loop's waits that hold in every
//!    iteration once they held before it go before it ([`hoist::hoist_invariant_waits`]), and
//!    the program is validated (`runtime_sim::validate`).
//!
//! BIR's instructions and loops are entities ([`bir::BirInst`], [`bir::BirLoop`]) in
//! `PrimaryMap`s, with per-instruction and per-loop side tables in `SecondaryMap`s (the queue
//! plan, the emitted kernel's loops); a `usize` beside them is a position (in a body, a
//! dependence graph, the emitted nodes), never an id. BIR has a text form that reads back
//! ([`bir::write_bir`], [`bir_parse::parse_bir`]) and a verifier ([`bir_verify::verify_bir`])
//! that runs after lowering, the list scheduler and the modulo scheduler in debug builds (a
//! failure is an internal error naming the pass).
//!
//! Steps 4 and 5 run on [`clamp::clamp_trips`]'s copy of the kernel (`clamp`), whose long loops run a
//! bounded number of iterations that still show every pattern (the module argues the bound); the
//! decisions (which waits, at which distances) are realised on the real kernel by
//! [`sync::realise`]. So compile time does not grow with the trip count.
//!
//! [`cost::dep_bound`] computes the dependence bound of a kernel as written (a lower bound of every
//! path's cycles, beside the simulator's resource bound). Every error a kernel can cause is a
//! [`BackendError`] with a stable code ([`error`]), never a panic.
//!
//! The folders say the pipeline: [`transform`] holds the Penguin → Penguin passes,
//! [`codegen`] the BIR → ISA passes (which read the Penguin function and never rewrite it:
//! [`codegen::expand`] decides a ring slot, [`transform::ring_slots`] realises it), and [`cost`]
//! the machine-cost model both read. [`retime`] sits above both: a Penguin pass that measures its
//! moves with codegen's modulo scheduler.
//!
//! Dependency direction: `backend → penguin, runtime-sim`; the cost model is
//! `runtime_sim::machine`, never a copy. Within the crate no file imports one that imports it
//! back, `transform/` and `cost/` never import `codegen/`, and `cost/` never `transform/`
//! (the workspace's `tests/no_import_cycles.rs`; one edge is still listed there as known).

pub mod codegen;
pub mod cost;
pub mod error;
pub mod retime;
pub mod transform;

pub use codegen::assemble::assemble;
pub use error::BackendError;

use codegen::emit::Emitted;
use codegen::sync::Sync;
use codegen::{
    alloc, bir, bir_verify, clamp, emit, expand, hb, hoist, modulo, queues, schedule, sync,
};
use penguin::Function;
use runtime_sim::isa::{Program, Role, TensorDecl};

/// A compiled kernel.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub bir: bir::Bir,
    /// The kernel `bir` references: the input with the ring slots [`expand`] added (print BIR
    /// with this one: `bir::write_bir(&compiled.func, &compiled.bir)`).
    pub func: Function,
    pub program: Program,
    /// SBUF bytes per partition allocated.
    pub sbuf_bytes: u64,
    /// PSUM banks allocated.
    pub psum_banks: u64,
    /// Dependences that needed a wait, before redundant ones were dropped.
    pub dependences: usize,
    /// Waits dropped because another wait implies them (an earlier one of the same engine, or
    /// one of the same consumer on a later instruction of the same queue or engine).
    pub redundant_waits: usize,
    /// Loops whose trip count the synchronisation analysis clamped ([`clamp`]).
    pub clamped_loops: usize,
    /// The modulo schedule of every loop body it reordered ([`modulo`]).
    pub schedules: Vec<modulo::ModuloSchedule>,
    /// The ring slots [`expand`] added, for the log.
    pub expansions: Vec<String>,
}

/// The most ring slots [`expand`] adds to one kernel.
pub const MAX_EXPANSIONS: usize = 8;

/// Compiles `func`; `source` (the kernel file's text) gives the trace its line numbers.
pub fn compile(func: &Function, source: Option<&str>) -> Result<Compiled, BackendError> {
    compile_with(func, source, true)
}

/// [`compile`], choosing whether the synchronisation analysis and the wait pruning run on a
/// trip-clamped copy of the kernel ([`clamp`]; `false` runs them on the full trip counts, which
/// costs time growing with the trip counts and must give the same program).
pub fn compile_with(
    func: &Function,
    source: Option<&str>,
    clamp_trips: bool,
) -> Result<Compiled, BackendError> {
    compile_with_pruner(func, source, clamp_trips, &|em, sync, _| {
        hb::compute_pruned_waits(em, sync)
    })
}

/// How the waits that others imply are dropped from the kernel they were computed on (the
/// trip-clamped copy when there is one): returns how many. The compiler's is
/// [`hb::compute_pruned_waits`]; the tests pass the race detector as an oracle.
#[doc(hidden)]
pub type Pruner<'a> = &'a dyn Fn(&Emitted, &mut Sync, &[TensorDecl]) -> usize;

/// [`compile_with`], with the wait pruning `prune` (the tests' oracle for [`hb`]).
#[doc(hidden)]
pub fn compile_with_pruner(
    func: &Function,
    source: Option<&str>,
    clamp_trips: bool,
    prune: Pruner<'_>,
) -> Result<Compiled, BackendError> {
    compile_observed(func, source, clamp_trips, prune, &mut |_, _| {})
}

/// The backend's passes, in the order [`compile_observed`] runs them (`lower-bir`, `schedule`,
/// `modulo` and `expand` repeat while [`expand`] adds ring slots). These are the names
/// `nkc compile --print-after PASS` takes.
pub const PASSES: &[&str] = &[
    "lower-bir",
    "schedule",
    "modulo",
    "expand",
    "alloc",
    "emit",
    "clamp",
    "sync",
    "prune-waits",
    "assemble",
    "hoist",
];

/// What a backend pass leaves, as [`compile_observed`] shows it to its observer.
pub enum PassOutput<'a> {
    /// Penguin IR: the kernel with the ring slots [`expand`] added.
    Penguin(&'a Function),
    /// BIR, with the kernel it references.
    Bir(&'a Function, &'a bir::Bir),
    /// The pseudo-ISA program.
    Program(&'a Program),
    /// A pass whose product has no text form (allocation, emission, synchronisation): a
    /// one-line summary of it.
    Summary(String),
}

/// Sees each backend pass's output, by the pass's name (one of [`PASSES`]).
pub type Observer<'a> = &'a mut dyn FnMut(&'static str, PassOutput<'_>);

/// [`compile_with_pruner`], showing the output of every pass to `observe` as it completes.
#[doc(hidden)]
pub fn compile_observed(
    func: &Function,
    source: Option<&str>,
    clamp_trips: bool,
    prune: Pruner<'_>,
    observe: Observer<'_>,
) -> Result<Compiled, BackendError> {
    // Plan with the critical-path schedule; when its PSUM buffers do not fit the banks, plan
    // again with every body's PSUM budget (`schedule::schedule_bodies_fitting`).
    let (expanded, bir, schedules, expansions, alloc) = match plan(func, false, observe) {
        Err(BackendError::PsumOverflow { .. }) => plan(func, true, observe)?,
        other => other?,
    };
    let func = &expanded;
    observe(
        "alloc",
        PassOutput::Summary(format!(
            "SBUF {} bytes per partition, {} PSUM bank(s), {} HBM scratch arena(s)",
            alloc.sbuf_bytes,
            alloc.psum_banks,
            alloc.arenas.len()
        )),
    );
    let info = source.map(|text| emit::SourceInfo { text });
    let em = emit::emit_nodes(func, &bir, &alloc, info.as_ref())?;
    observe(
        "emit",
        PassOutput::Summary(format!(
            "{} instruction(s) in {} loop(s)",
            em.nodes.len(),
            bir.loops.len()
        )),
    );
    let mut tensors = Vec::new();
    for &t in &alloc.hbm {
        let d = &func.tensors[t];
        tensors.push(TensorDecl {
            name: d.name.clone(),
            dtype: d.dtype,
            shape: d.shape.clone(),
            role: if func.params.contains(&t) {
                Role::Input
            } else {
                Role::Output
            },
        });
    }
    tensors.extend(alloc.arenas.iter().cloned());
    // The analyses run on a trip-clamped copy when there is one (same decisions, bounded cost).
    let small = if clamp_trips {
        clamp::clamp_trips(&em)
    } else {
        None
    };
    let clamped_loops = small.as_ref().map_or(0, |s| {
        s.loops
            .values()
            .zip(em.loops.values())
            .filter(|(a, b)| a.0 != b.0)
            .count()
    });
    observe(
        "clamp",
        PassOutput::Summary(format!(
            "{clamped_loops} of {} loop(s) clamped for the synchronisation analysis",
            bir.loops.len()
        )),
    );
    let analysed = small.as_ref().unwrap_or(&em);
    // The peeled loops (`penguin::pipeline::peel`): their steady-state bodies hold no guard.
    let peeled: cranelift_entity::SecondaryMap<bir::BirLoop, bool> = bir
        .loops
        .iter()
        .map(|(l, lp)| {
            (
                l,
                func.axes[lp.axis].attrs.pipelined.is_some_and(|p| p.peeled),
            )
        })
        .collect();
    let mut sync = sync::compute_sync(analysed, &peeled);
    observe(
        "sync",
        PassOutput::Summary(format!(
            "{} semaphore(s), {} dependence(s) needing a wait, {} wait(s)",
            sync.semaphores.len(),
            sync.dependences,
            sync.waits.iter().map(Vec::len).sum::<usize>()
        )),
    );
    let pruned = prune(analysed, &mut sync, &tensors);
    if small.is_some() {
        sync = sync::realise(&em, &sync);
    }
    observe(
        "prune-waits",
        PassOutput::Summary(format!(
            "{pruned} wait(s) pruned, {} kept",
            sync.waits.iter().map(Vec::len).sum::<usize>()
        )),
    );
    let (mut program, redundant) = assemble(&em, &sync, tensors);
    observe("assemble", PassOutput::Program(&program));
    hoist::hoist_invariant_waits(&mut program, &em, &sync, &peeled);
    observe("hoist", PassOutput::Program(&program));
    runtime_sim::validate::validate(&program).map_err(|e| {
        BackendError::internal(format!("the backend emitted an invalid program: {e}"))
    })?;
    Ok(Compiled {
        bir,
        func: func.clone(),
        program,
        sbuf_bytes: alloc.sbuf_bytes,
        psum_banks: alloc.psum_banks,
        dependences: sync.dependences,
        redundant_waits: redundant + sync.implied_waits + pruned,
        clamped_loops,
        schedules,
        expansions,
    })
}

/// A kernel's plan: the kernel with its ring slots, its scheduled BIR, the modulo schedules, the
/// expansions' log lines and the allocation.
type Plan = (
    Function,
    bir::Bir,
    Vec<modulo::ModuloSchedule>,
    Vec<String>,
    alloc::Allocation,
);

/// Lowers, schedules (keeping PSUM within its banks with `fit_psum`), gives one more slot to a
/// tile whose reuse bounds a pipelined loop ([`expand`]) until no recurrence runs through such a
/// tile, and allocates.
fn plan(func: &Function, fit_psum: bool, observe: Observer<'_>) -> Result<Plan, BackendError> {
    let mut expanded = func.clone();
    let mut expansions = Vec::new();
    let (bir, schedules) = loop {
        let mut bir = bir::lower_function(&expanded)?;
        debug_verify_bir(&expanded, &bir, "lowering")?;
        observe("lower-bir", PassOutput::Bir(&expanded, &bir));
        schedule::schedule_bodies_fitting(&expanded, &mut bir, fit_psum);
        debug_verify_bir(&expanded, &bir, "the list scheduler")?;
        observe("schedule", PassOutput::Bir(&expanded, &bir));
        let plan = queues::compute_queue_plan(&expanded, &bir);
        let schedules = modulo::schedule_loops(&expanded, &mut bir, &plan);
        debug_verify_bir(&expanded, &bir, "the modulo scheduler")?;
        observe("modulo", PassOutput::Bir(&expanded, &bir));
        if expansions.len() >= MAX_EXPANSIONS {
            break (bir, schedules);
        }
        let note = expand_recurrence(&mut expanded, &bir, &schedules);
        observe("expand", PassOutput::Penguin(&expanded));
        match note {
            Some(note) => expansions.push(note),
            None => break (bir, schedules),
        }
    };
    let alloc = alloc::allocate(&expanded, &bir)?;
    Ok((expanded, bir, schedules, expansions, alloc))
}

/// Gives one more ring slot to the tile whose reuse bounds a pipelined loop, as the modulo
/// scheduler's recurrences decide ([`expand::compute_expansion`], on BIR) and the Penguin side
/// realises ([`transform::ring_slots::apply`]); returns the log's line, `None` when no tile
/// qualifies.
pub(crate) fn expand_recurrence(
    func: &mut Function,
    bir: &bir::Bir,
    schedules: &[modulo::ModuloSchedule],
) -> Option<String> {
    let x = expand::compute_expansion(func, bir, schedules)?;
    transform::ring_slots::apply(func, x.tensor, x.axis, x.slots);
    Some(x.note)
}

/// Runs the BIR verifier ([`bir_verify`]) after backend pass `pass` in debug builds (and so in
/// tests); a failure is an internal error naming the pass.
fn debug_verify_bir(func: &Function, bir: &bir::Bir, pass: &str) -> Result<(), BackendError> {
    if cfg!(debug_assertions) {
        bir_verify::verify_after(func, bir, pass).map_err(BackendError::internal)?;
    }
    Ok(())
}
