//! The backend's compile context, on the model of Cranelift's `Context`: one [`Context`] owns
//! everything the passes of [`crate::passes::PASSES`] build (the kernel with its ring slots, the
//! BIR, the queue plan, the modulo schedules, the allocation, the emitted nodes, the
//! synchronisation, the program), and the driver loop ([`Context::run`], in
//! [`crate::passes`]) walks that static table.
//!
//! After every pass that ran, the driver loop verifies the IR by the form the pass leaves
//! ([`IrForm`]: Penguin IR with `penguin::verify`, BIR with [`crate::codegen::bir_verify`], the
//! program with `runtime_sim::validate`) when [`Options::verify`] is on (debug builds, and
//! `NKC_VERIFY=1` in release), then records it in the [`Instrument`] the driver handed down (its
//! time, and its IR when `--print-after` asks). A verifier failure is an internal error naming
//! the pass. Whatever the options, the final program is validated.
//!
//! Invariant: a field a pass builds is `Some` (or filled) once that pass has run; a pass only
//! reads what an earlier pass of the table built ([`built`] panics, naming the invariant,
//! otherwise).

use crate::codegen::emit::Emitted;
use crate::codegen::sync::Sync;
use crate::codegen::{alloc, bir, modulo, queues};
use crate::instrument::Instrument;
use crate::planned::Planned;
use crate::{BackendError, Compiled, Pruner};
use cranelift_entity::SecondaryMap;
use penguin::Function;
use runtime_sim::isa::{Program, TensorDecl};

/// How the backend compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Run the synchronisation analysis and the wait pruning on a trip-clamped copy of the kernel
    /// ([`crate::codegen::clamp`]; `false` runs them on the full trip counts, which costs time
    /// growing with the trip counts and must give the same program).
    pub clamp_trips: bool,
    /// Verify the IR after every pass ([`verify_by_default`]).
    pub verify: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clamp_trips: true,
            verify: verify_by_default(),
        }
    }
}

/// Whether the IR is verified after every pass unless told: in debug builds (and so in the
/// tests), and in release builds with `NKC_VERIFY=1`.
pub fn verify_by_default() -> bool {
    cfg!(debug_assertions) || std::env::var("NKC_VERIFY").is_ok_and(|v| v == "1")
}

/// The IR a pass leaves, which says how the driver loop verifies and prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrForm {
    /// Penguin IR: the kernel with the ring slots [`crate::codegen::expand`] added.
    Penguin,
    /// BIR as lowered, in program order.
    Bir,
    /// BIR with every body in its scheduled order.
    ScheduledBir,
    /// The allocation (no text form).
    Allocated,
    /// The emitted nodes (no text form).
    Emitted,
    /// The synchronisation: semaphores and waits (no text form).
    Synchronised,
    /// The pseudo-ISA program.
    Program,
}

/// The backend's compile context: the kernel, what the passes built from it, and the instrument
/// the driver handed down.
pub struct Context<'a> {
    pub opts: Options,
    /// The kernel file's text: it gives the trace its line numbers.
    pub source: Option<&'a str>,
    /// How the waits that others imply are dropped ([`Pruner`]).
    pub prune: Pruner<'a>,
    /// The kernel as the backend got it (a plan that keeps PSUM within its banks starts again
    /// from it).
    pub input: &'a Function,
    /// The kernel with the ring slots [`crate::codegen::expand`] added.
    pub func: Function,
    /// Whether the list scheduler keeps every body within its PSUM budget (set when the
    /// critical-path schedule's PSUM buffers did not fit the banks).
    pub fit_psum: bool,
    pub bir: bir::Bir,
    pub queue_plan: queues::QueuePlan,
    /// The modulo schedule of every loop body it reordered.
    pub schedules: Vec<modulo::ModuloSchedule>,
    /// The ring slots [`crate::codegen::expand`] added, for the log.
    pub expansions: Vec<crate::transform::remark::Remark>,
    pub alloc: Option<alloc::Allocation>,
    pub emitted: Option<Emitted>,
    /// The kernel's HBM tensors and scratch arenas, as the program declares them.
    pub tensors: Vec<TensorDecl>,
    /// The trip-clamped copy of [`Context::emitted`], when there is one.
    pub clamped: Option<Emitted>,
    pub clamped_loops: usize,
    /// The peeled loops: their steady-state bodies hold no guard.
    pub peeled: SecondaryMap<bir::BirLoop, bool>,
    pub sync: Option<Sync>,
    /// Waits the pruner dropped.
    pub pruned: usize,
    pub program: Option<Program>,
    /// Waits the assembler dropped as redundant.
    pub redundant: usize,
    pub instrument: &'a mut Instrument,
    /// The plan of [`Context::input`] that an earlier transformation computed
    /// ([`Context::with_planned`]), until [`Context::run`] adopts it.
    pub planned: Option<Planned>,
}

/// What an earlier pass built (`what` names it): an invariant of the pass table's order.
pub(crate) fn built<'x, T>(x: &'x Option<T>, what: &str) -> &'x T {
    x.as_ref()
        .unwrap_or_else(|| panic!("invariant: the pass that builds {what} ran before"))
}

impl<'a> Context<'a> {
    pub fn new(
        input: &'a Function,
        source: Option<&'a str>,
        opts: Options,
        prune: Pruner<'a>,
        instrument: &'a mut Instrument,
    ) -> Self {
        Context {
            opts,
            source,
            prune,
            input,
            func: input.clone(),
            fit_psum: false,
            bir: bir::Bir::default(),
            queue_plan: queues::QueuePlan::default(),
            schedules: Vec::new(),
            expansions: Vec::new(),
            alloc: None,
            emitted: None,
            tensors: Vec::new(),
            clamped: None,
            clamped_loops: 0,
            peeled: SecondaryMap::new(),
            sync: None,
            pruned: 0,
            program: None,
            redundant: 0,
            instrument,
            planned: None,
        }
    }

    /// Hands the context the plan of its input kernel ([`crate::planned`]), which a
    /// transformation before the backend computed: [`Context::run`] adopts it in place of the
    /// passes `lower-bir` to `expand`, and records those passes as the plan ran them, each with
    /// the time since the previous pass (the work was timed in the pass that planned). It plans
    /// again when those passes are verified or printed, whose IR between rounds the plan does
    /// not keep.
    ///
    /// Invariant (the caller's): `planned` was computed from exactly [`Context::input`].
    pub fn with_planned(mut self, planned: Option<Planned>) -> Self {
        self.planned = planned;
        self
    }

    /// The compiled kernel, once every pass ran; the program is validated whatever the options.
    pub(crate) fn finish(self) -> Result<Compiled, BackendError> {
        let program = self
            .program
            .expect("invariant: the pass table ends in a pass that builds the program");
        runtime_sim::validate::validate(&program).map_err(BackendError::InvalidProgram)?;
        let alloc = built(&self.alloc, "the allocation");
        let sync = built(&self.sync, "the synchronisation");
        Ok(Compiled {
            sbuf_bytes: alloc.sbuf_bytes,
            psum_banks: alloc.psum_banks,
            dependences: sync.dependences,
            redundant_waits: self.redundant + sync.implied_waits + self.pruned,
            clamped_loops: self.clamped_loops,
            bir: self.bir,
            func: self.func,
            program,
            schedules: self.schedules,
            expansions: self.expansions,
        })
    }
}
