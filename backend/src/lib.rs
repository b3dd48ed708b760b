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
//! iteration later, after the next iteration's loads, where the modulo scheduler predicts a gain, [`prefetch::prefetch_loads`] issues a load of a user-pipelined loop the iterations ahead its latency wants, and [`transform::delay_stores::delay_stores`] issues a store that follows an inner loop in the next iteration of its nest, after that iteration's inner loops. `num_stages="auto"` is chosen earlier still, before the annotated
//! pipeliner ([`transform::emergent::choose_auto_stages`]).
//!
//! The passes, in order: the static table [`passes::PASSES`] (their names are those of
//! `--print-after`), which one [`context::Context`] runs ([`context::Context::run`]: it times,
//! verifies by IR form and prints each pass; [`compile`] is the shorthand):
//! 1. [`bir::lower_function`]: BIR, per-engine instructions on logical buffers; an annotated loop
//!    stays one hardware loop whose stage predicates are instruction guards; then
//!    [`codegen::schedule::schedule_bodies`] (the list scheduler: every body's order by critical path,
//!    a ready load before a store whose data is not ready)
//!    and, for every flat loop body, [`modulo::schedule_loops`] (the modulo scheduler): the loop
//!    dependence graph ([`ldg`]) and an iterative modulo schedule, whose start-offset order an
//!    annotated loop's body takes when it is predicted faster; when a pipelined loop's recurrence
//!    runs through the reuse of a tile, [`expand::expand_recurrence`] gives the tile one more ring
//!    slot and the steps repeat (at most [`MAX_EXPANSIONS`] times);
//! 2. [`codegen::alloc::allocate`]: colouring allocators (live ranges, petgraph interference graph) for
//!    SBUF, PSUM banks and HBM scratch (an arena per dtype), or a diagnostic naming the buffers
//!    and bytes;
//! 3. [`codegen::emit::emit_nodes`]: addresses with address rotation (ring slots as modulo terms), DMA
//!    splitting over the queues ([`codegen::queues::compute_queue_plan`] balances each loop body's
//!    transfers over the 16 queues and `sp`'s issue slots), footprints;
//! 4. [`codegen::sync::compute_sync`]: a semaphore for every cross-engine dependence, with waits affine in
//!    the iteration registers;
//! 5. [`hb::compute_pruned_waits`] (`prune-waits`): waits that other waits imply are dropped, decided by a static
//!    happens-before analysis of the program (never by simulating it; the race detector is the
//!    tests' oracle for it, `tests/static_pruning.rs`);
//! 6. [`codegen::redundant::drop_redundant_waits`]: the one place that decides the final set of
//!    waits and signals (the waits that a wait kept before them implies, or that always hold,
//!    dropped); [`assemble()`] prints them: one in-order stream per engine (the program order of
//!    the kernel), hardware loops; then a peeled loop's waits that hold in every
//!    iteration once they held before it go before it ([`codegen::hoist::hoist_invariant_waits`]), and
//!    the program is validated (`runtime_sim::validate`).
//!
//! BIR's instructions and loops are entities ([`bir::BirInst`], [`bir::BirLoop`]) in
//! `PrimaryMap`s, with per-instruction and per-loop side tables in `SecondaryMap`s (the queue
//! plan, the emitted kernel's loops); a `usize` beside them is a position (in a body, a
//! dependence graph, the emitted nodes), never an id. BIR has a text form that reads back
//! ([`bir::write_bir`], [`codegen::bir_parse::parse_bir`]) and a verifier ([`codegen::bir_verify::verify_bir`])
//! that the driver loop runs after every pass that leaves BIR when verification is on (debug
//! builds, `NKC_VERIFY=1`; a failure is an internal error naming the pass).
//!
//! Steps 4 and 5 run on [`codegen::clamp::clamp_trips`]'s copy of the kernel (`clamp`), whose long loops run a
//! bounded number of iterations that still show every pattern (the module argues the bound); the
//! decisions (which waits, at which distances) are realised on the real kernel by
//! [`codegen::sync::realise`]. So compile time does not grow with the trip count.
//!
//! [`cost::dep_bound`] computes the dependence bound of a kernel as written (a lower bound of every
//! path's cycles, beside the simulator's resource bound). Every error a kernel can cause is a
//! [`BackendError`] with a stable code ([`error`]), never a panic.
//!
//! The folders say the pipeline: [`transform`] holds the Penguin → Penguin passes,
//! [`codegen`] the BIR → ISA passes (which read the Penguin function and never rewrite it:
//! [`codegen::expand`] decides a ring slot, [`transform::ring_slots`] realises it), and [`cost`]
//! the machine-cost model both read. [`retime`] and [`prefetch`] sit above both: Penguin passes
//! that weigh their moves with codegen's modulo scheduler.
//!
//! Dependency direction: `backend → penguin, runtime-sim`; the cost model is
//! `runtime_sim::machine`, never a copy. Within the crate no file imports one that imports it
//! back, `transform/` and `cost/` never import `codegen/`, and `cost/` never `transform/`
//! (the workspace's `tests/no_import_cycles.rs`; one edge is still listed there as known).

pub mod codegen;
pub mod context;
pub mod cost;
pub mod error;
pub mod instrument;
pub mod passes;
pub mod planned;
pub mod prefetch;
pub mod retime;
pub mod transform;

pub use codegen::assemble::assemble;
pub use error::BackendError;

use codegen::emit::Emitted;
use codegen::sync::Sync;
use codegen::{bir, expand, hb, modulo};
pub use context::Context;
use penguin::Function;
use runtime_sim::isa::{Program, TensorDecl};

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
    /// Loops whose trip count the synchronisation analysis clamped ([`codegen::clamp`]).
    pub clamped_loops: usize,
    /// The modulo schedule of every loop body it reordered ([`modulo`]).
    pub schedules: Vec<modulo::ModuloSchedule>,
    /// The ring slots [`expand`] added, for the log.
    pub expansions: Vec<transform::remark::Remark>,
}

/// The most ring slots [`expand`] adds to one kernel.
pub const MAX_EXPANSIONS: usize = 8;

/// Compiles `func`; `source` (the kernel file's text) gives the trace its line numbers.
pub fn compile(func: &Function, source: Option<&str>) -> Result<Compiled, BackendError> {
    compile_with(func, source, true)
}

/// [`compile`], choosing whether the synchronisation analysis and the wait pruning run on a
/// trip-clamped copy of the kernel ([`codegen::clamp`]; `false` runs them on the full trip counts, which
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
    let mut instrument = instrument::Instrument::default();
    let opts = context::Options {
        clamp_trips,
        ..context::Options::default()
    };
    context::Context::new(func, source, opts, prune, &mut instrument).run()
}

/// The program the backend builds from the waits of `sync` on `em`: the redundant ones dropped
/// ([`codegen::redundant::drop_redundant_waits`], on a copy), then [`assemble()`]d; with the
/// number dropped. (The wait pruning's oracle, `tests/static_pruning.rs`, simulates it.)
pub fn build_program(em: &Emitted, sync: &Sync, tensors: Vec<TensorDecl>) -> (Program, usize) {
    let mut sync = sync.clone();
    let dropped = codegen::redundant::drop_redundant_waits(em, &mut sync);
    (assemble(em, &sync, tensors), dropped)
}

/// Gives one more ring slot to the tile whose reuse bounds a pipelined loop, as the modulo
/// scheduler's recurrences decide ([`expand::compute_expansion`], on BIR) and the Penguin side
/// realises ([`transform::ring_slots::apply`]); returns the decision, `None` when no tile
/// qualifies.
pub(crate) fn expand_recurrence(
    func: &mut Function,
    bir: &bir::Bir,
    schedules: &[modulo::ModuloSchedule],
) -> Option<transform::remark::Remark> {
    let x = expand::compute_expansion(func, bir, schedules)?;
    transform::ring_slots::apply(func, x.tensor, x.axis, x.slots);
    Some(x.remark)
}
