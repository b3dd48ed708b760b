//! The discrete-event simulator of one Neuron-like core (MACHINE.md).
//!
//! [`simulate`] validates a program ([`crate::validate`]), loads its input tensors into HBM (output
//! tensors start as zeros; they, scratch tensors and on-chip memory start undefined: reading an
//! undefined element yields poison, and writing poison into an HBM output or scratch tensor is an
//! error) and runs every engine's stream in order (`exec`): compute instructions take the cost
//! table's cycles ([`crate::machine`]), `sp` issues DMA transfers onto 16 queues, waits block
//! until their semaphore's count is reached. A predicated-off instruction takes no time but still
//! signals; a predicated-off DMA signals once its semaphore's earlier signals are counted
//! (increments stay in issue order), so a DMA's semaphore counts completed instances. It returns
//! the output tensors, the [`Stats`], the races the detector found ([`race`]) and, when asked,
//! the timeline ([`trace`]). A bad program is a
//! [`SimError`], never a panic.

mod exec;
mod gather_moves;
pub mod memory;
pub mod race;
pub mod trace;

use crate::isa::{Engine, Program, Role};
use crate::machine::DMA_QUEUES;
use crate::validate::ValidateError;
use std::collections::BTreeMap;
use std::fmt;

pub use memory::AccessError;
pub use trace::{Slice, Track};

/// What to compute besides timing.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Compute values (off: timing only, `--no-numerics`; outputs are then zeros).
    pub numerics: bool,
    /// Run the race detector.
    pub races: bool,
    /// Record the timeline (its first [`MAX_TRACE_SLICES`] slices).
    pub trace: bool,
    /// Stop collecting races after this many distinct instruction pairs.
    pub max_races: usize,
    /// Stop with [`SimError::CycleLimit`] once the clock passes this many cycles, or once more
    /// instructions than this have been processed (waits and signals take no time, so a loop of
    /// them would otherwise never reach the limit): `--max-cycles`.
    pub max_cycles: u64,
}

/// The default of [`Options::max_cycles`]: 10^7 cycles (7 ms of the core's time), a hundred
/// times what the largest example takes (10^5), and reached within seconds: an endless loop of
/// signals (3.6 × 10^6 a second) stops after about 3 s, a loop of whole-tile transfers (4 × 10^6
/// cycles a second) after about 2.5 s, in a release build on a busy two-core machine.
pub const DEFAULT_MAX_CYCLES: u64 = 10_000_000;

/// The most slices a timeline holds (each some 200 bytes: about 50 MB in all; the examples make
/// at most 4 × 10^4); the run goes on past them unrecorded, counted in [`Stats::trace_dropped`].
pub const MAX_TRACE_SLICES: usize = 1 << 18;

/// How far a run is, as [`simulate_with_progress`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Instructions executed or skipped so far (see [`Stats::instructions`]; out of
    /// [`instruction_instances`]).
    pub instructions: u64,
    /// The latest cycle reached so far.
    pub cycle: u64,
}

/// Every instruction instance of the program: each instruction of each stream times the trip
/// counts of its enclosing loops (saturating). A run executes or skips each once.
pub fn instruction_instances(p: &Program) -> u64 {
    count_instructions(p, true)
}

/// The size of a program: the instructions written in its streams, each loop body once.
pub fn program_size(p: &Program) -> u64 {
    count_instructions(p, false)
}

/// The instructions of `p`, each loop body counted `trip` times (`by_trip`) or once.
fn count_instructions(p: &Program, by_trip: bool) -> u64 {
    fn count(stmts: &[crate::isa::Stmt], by_trip: bool) -> u64 {
        stmts
            .iter()
            .map(|s| match s {
                crate::isa::Stmt::Inst(_) => 1,
                crate::isa::Stmt::Loop(l) => {
                    let times = if by_trip { l.trip } else { 1 };
                    times.saturating_mul(count(&l.body, by_trip))
                }
            })
            .fold(0, u64::saturating_add)
    }
    Engine::ALL
        .iter()
        .map(|&e| count(p.stream(e), by_trip))
        .fold(0, u64::saturating_add)
}

impl Default for Options {
    fn default() -> Options {
        Options {
            numerics: true,
            races: true,
            trace: false,
            max_races: 32,
            max_cycles: DEFAULT_MAX_CYCLES,
        }
    }
}

/// A row-major float32 array (the shared vocabulary's).
pub use vocab::Array;

/// One instruction execution, for reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstInfo {
    pub engine: Engine,
    /// Line in the program text.
    pub line: u32,
    /// The instruction's text.
    pub text: String,
    /// Values of the enclosing loops' registers, outermost first.
    pub iters: Vec<(u8, i64)>,
}

impl fmt::Display for InstInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} line {} `{}`",
            self.engine.name(),
            self.line,
            self.text
        )?;
        if !self.iters.is_empty() {
            let it: Vec<String> = self
                .iters
                .iter()
                .map(|(r, v)| format!("r{r}={v}"))
                .collect();
            write!(f, " ({})", it.join(", "))?;
        }
        Ok(())
    }
}

/// Two unordered conflicting accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// The earlier access (in simulation order) and whether it writes.
    pub first: InstInfo,
    pub first_writes: bool,
    pub second: InstInfo,
    pub second_writes: bool,
    /// `sbuf`, `psum` or `hbm NAME`.
    pub memory: String,
    /// Overlapping partitions `[p0, p1)` (0..1 for HBM).
    pub partitions: (u32, u32),
    /// The first overlapping range in each partition: bytes (HBM: elements).
    pub bytes: (u64, u64),
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rw = |w: bool| if w { "writes" } else { "reads" };
        let unit = if self.memory.starts_with("hbm") {
            "elements"
        } else {
            "bytes"
        };
        write!(
            f,
            "race on {} partitions {}..{} {unit} {}..{}: {} {} it, and {} {} it, with no semaphore ordering them",
            self.memory,
            self.partitions.0,
            self.partitions.1,
            self.bytes.0,
            self.bytes.1,
            self.first,
            rw(self.first_writes),
            self.second,
            rw(self.second_writes)
        )
    }
}

/// One blocked engine of a deadlock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub inst: InstInfo,
    pub semaphore: String,
    pub needs: i128,
    pub has: u64,
}

/// Why a simulation failed.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// The program breaks a static rule.
    Invalid(ValidateError),
    /// The inputs do not fit the program's tensors.
    Input(String),
    /// An access out of range at run time (outside a memory or tensor, across a PSUM bank).
    Access {
        inst: InstInfo,
        error: Box<AccessError>,
    },
    /// Every unfinished engine waits for a count that can never come.
    Deadlock { cycle: u64, blocked: Vec<Blocked> },
    /// The program's HBM tensors hold more than [`MAX_HBM_ELEMS`] elements in all.
    TooLarge {
        /// Elements over all tensors (saturated at `u64::MAX`).
        elems: u64,
        /// The largest tensor and its elements.
        largest: String,
        largest_elems: u64,
    },
    /// The run passed [`Options::max_cycles`] (its clock, or its count of instructions).
    CycleLimit {
        limit: u64,
        /// The clock when it stopped.
        cycle: u64,
        /// Instructions processed when it stopped.
        instructions: u64,
    },
    /// A transfer would write an undefined value (memory nothing wrote, or a value computed from
    /// it) into an HBM output or scratch tensor.
    Uninitialised {
        inst: InstInfo,
        /// The HBM tensor's name.
        tensor: String,
        /// The first element it would write undefined (row-major, in the tensor).
        element: u64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Invalid(e) => write!(f, "{e}"),
            SimError::Input(m) => write!(f, "{m}"),
            SimError::Access { inst, error } => write!(f, "{inst}: {error}"),
            SimError::TooLarge {
                elems,
                largest,
                largest_elems,
            } => {
                let count = |n: u64| match n {
                    u64::MAX => "2^64 or more".to_string(),
                    n => n.to_string(),
                };
                write!(
                    f,
                    "the tensors hold {} elements in all (`{largest}` {}), more than the simulator's limit of {MAX_HBM_ELEMS} ({} MiB of f32)",
                    count(*elems),
                    count(*largest_elems),
                    (MAX_HBM_ELEMS * 4) >> 20
                )
            }
            SimError::CycleLimit {
                limit,
                cycle,
                instructions,
            } => write!(
                f,
                "the simulation passed its limit of {limit} cycles (--max-cycles): stopped at cycle {cycle} after {instructions} instructions"
            ),
            SimError::Uninitialised {
                inst,
                tensor,
                element,
            } => write!(
                f,
                "{inst}: writes element {element} of HBM tensor `{tensor}` with an undefined value: memory nothing wrote, or a value computed from it"
            ),
            SimError::Deadlock { cycle, blocked } => {
                write!(
                    f,
                    "deadlock at cycle {cycle}: every unfinished engine is blocked"
                )?;
                for b in blocked {
                    write!(
                        f,
                        "\n  {} waits for `{}` >= {}, but it is {} and nothing else can signal it",
                        b.inst, b.semaphore, b.needs, b.has
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SimError {}

/// Per-engine figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineStats {
    /// Cycles spent executing (waits excluded).
    pub busy: u64,
    /// Instructions executed with their predicate on (waits and signals included).
    pub instructions: u64,
    /// Instructions skipped by their predicate.
    pub predicated_off: u64,
    /// The cycle its last instruction finished.
    pub finish: u64,
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Cycle at which the last engine or transfer finished.
    pub cycles: u64,
    /// Indexed by [`Engine::index`].
    pub engines: [EngineStats; 5],
    /// Cycles each queue spent moving bytes (its latency excluded).
    pub queue_busy: [u64; DMA_QUEUES],
    /// Transfers per queue.
    pub queue_transfers: [u64; DMA_QUEUES],
    pub dma_bytes: u64,
    /// Highest byte touched plus one, per partition.
    pub sbuf_high_water: u64,
    pub psum_high_water: u64,
    /// Executed instructions by opcode.
    pub opcodes: BTreeMap<&'static str, u64>,
    /// How many times the race detector dropped records every engine had seen (a diagnostic).
    pub race_prunes: u64,
    /// Timeline slices not recorded: a trace keeps the first [`MAX_TRACE_SLICES`] (a diagnostic;
    /// 0 when the whole run is in it).
    pub trace_dropped: u64,
    /// The most signals any semaphore kept at once (its history is a bounded window of the
    /// signals that can still matter; a diagnostic).
    pub sem_window_peak: u64,
}

impl Stats {
    /// The busy cycles of the busiest compute engine.
    pub fn compute_bound(&self) -> u64 {
        Engine::COMPUTE
            .iter()
            .map(|e| self.engines[e.index()].busy)
            .max()
            .unwrap_or(0)
    }

    /// All queues' busy cycles over 16, rounded up.
    pub fn dma_bound(&self) -> u64 {
        self.queue_busy
            .iter()
            .sum::<u64>()
            .div_ceil(DMA_QUEUES as u64)
    }

    /// The resource lower bound: the larger of the two bounds (MACHINE.md).
    pub fn bound(&self) -> u64 {
        self.compute_bound().max(self.dma_bound())
    }

    /// `cycles / bound` (1 when the bound is 0).
    pub fn cycles_over_bound(&self) -> f64 {
        match self.bound() {
            0 => 1.0,
            b => self.cycles as f64 / b as f64,
        }
    }

    /// Busy cycles over total cycles.
    pub fn utilisation(&self, busy: u64) -> f64 {
        if self.cycles == 0 {
            0.0
        } else {
            busy as f64 / self.cycles as f64
        }
    }

    /// Instructions executed or skipped, over every engine.
    pub fn instructions(&self) -> u64 {
        self.engines
            .iter()
            .map(|e| e.instructions + e.predicated_off)
            .sum()
    }
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct SimResult {
    /// The output tensors, in declaration order.
    pub outputs: Vec<(String, Array)>,
    pub stats: Stats,
    pub races: Vec<Race>,
    /// The timeline, when asked.
    pub trace: Vec<Slice>,
}

/// The most elements the simulator holds over all HBM tensors (inputs, outputs and scratch): 2^27,
/// 512 MiB of f32. `nkc run --check` holds the HBM tensors up to three times over (the inputs,
/// the simulator's memory or the interpreter's, and the outputs), so one process stays well under
/// 2 GiB. A timing-only run without data ([`simulate`] with numerics off and no inputs) has no
/// limit.
pub const MAX_HBM_ELEMS: u64 = 1 << 27;

/// Whether the program's HBM tensors fit [`MAX_HBM_ELEMS`]: check it before allocating anything
/// per element of an untrusted program (as [`try_random_inputs`] does).
pub fn check_hbm_size(p: &Program) -> Result<(), SimError> {
    let elems = p
        .tensors
        .iter()
        .map(|t| t.elems())
        .fold(0, u64::saturating_add);
    if elems <= MAX_HBM_ELEMS {
        return Ok(());
    }
    let largest = p.tensors.iter().max_by_key(|t| t.elems());
    Err(SimError::TooLarge {
        elems,
        largest: largest.map_or(String::new(), |t| t.name.clone()),
        largest_elems: largest.map_or(0, |t| t.elems()),
    })
}

/// [`random_inputs`], after [`check_hbm_size`]: an untrusted program's inputs, or why they are
/// too large to make.
pub fn try_random_inputs(p: &Program, seed: u64) -> Result<Vec<Array>, SimError> {
    check_hbm_size(p)?;
    Ok(random_inputs(p, seed))
}

/// Seeded inputs, one per input tensor in declaration order: values in `[-1, 1)` drawn as `nkc
/// run` draws them (SplitMix64, the top 24 bits over 2^23, minus one), rounded to the dtype. It
/// allocates every input element: on an untrusted program, use [`try_random_inputs`].
pub fn random_inputs(p: &Program, seed: u64) -> Vec<Array> {
    let mut rng = vocab::SplitMix64(seed);
    let mut next = move || rng.next_unit();
    p.tensors
        .iter()
        .filter(|t| t.role == Role::Input)
        .map(|t| Array {
            shape: t.shape.iter().map(|&d| d as usize).collect(),
            data: (0..t.elems())
                .map(|_| crate::numerics::round_to(t.dtype, next()))
                .collect(),
        })
        .collect()
}

/// Runs a program on `inputs` (one per input tensor, in declaration order). A timing-only run
/// (`numerics` off) may pass no inputs at all: nothing reads them, and its outputs are then empty
/// arrays of the declared shapes (so any HBM size can be simulated for timing and races).
pub fn simulate(p: &Program, inputs: &[Array], opts: &Options) -> Result<SimResult, SimError> {
    simulate_with_progress(p, inputs, opts, &mut |_| {})
}

/// [`simulate`], telling `progress` how far the run is every few tens of thousands of
/// instructions (for a progress bar).
pub fn simulate_with_progress(
    p: &Program,
    inputs: &[Array],
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimResult, SimError> {
    crate::validate::validate(p).map_err(SimError::Invalid)?;
    exec::run(
        p,
        inputs,
        opts,
        exec::RaceMode::Rect,
        exec::SEM_WINDOW,
        progress,
    )
}

/// [`simulate`] with the element-by-element race detector the rectangle one replaced: the oracle
/// of the race detector's tests.
#[cfg(test)]
pub(crate) fn simulate_exact(
    p: &Program,
    inputs: &[Array],
    opts: &Options,
) -> Result<SimResult, SimError> {
    crate::validate::validate(p).map_err(SimError::Invalid)?;
    exec::run(
        p,
        inputs,
        opts,
        exec::RaceMode::Exact,
        exec::SEM_WINDOW,
        &mut |_| {},
    )
}

/// [`simulate`] with the semaphores' history compacted first at `window` signals (`usize::MAX`:
/// never, the whole history kept): the tests check that the window changes no verdict.
#[cfg(test)]
pub(crate) fn simulate_window(
    p: &Program,
    inputs: &[Array],
    opts: &Options,
    window: usize,
) -> Result<SimResult, SimError> {
    crate::validate::validate(p).map_err(SimError::Invalid)?;
    exec::run(p, inputs, opts, exec::RaceMode::Rect, window, &mut |_| {})
}
