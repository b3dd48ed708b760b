//! `nkc run`: compile a kernel, gather its inputs, execute it and report its outputs.
//!
//! Inputs come from `--input NAME=PATH.npy` or, for every parameter not given, from the seeded
//! generator (`--seed`). The default engine compiles the kernel with the backend and runs the
//! pseudo-ISA program on the simulator (`--engine sim`); `--engine interp` runs the reference
//! interpreter. `--check` runs both on the same inputs and fails unless every output is equal bit
//! for bit. A data race found by the simulator fails the run (exit 1). Outputs are reported by the
//! names `return` gives them, and written as `NAME.npy` files with `--output DIR`. With `--peel`
//! ([`crate::pipeline::Context::pipeline`]) the loops the annotated pipeliner extended are peeled before the
//! interpreter (the oracle of the pipelined kernel) and the backend see them.
//!
//! Limits, each a diagnostic with exit code 1 before the work it bounds: HBM tensors of more
//! elements than the simulator holds (E0901, [`check_size`]), a simulation past `--max-cycles` or
//! a kernel of more instruction instances than that for the interpreter (E0902), and a read of
//! HBM scratch that nothing wrote, on either engine (E0900, at the statement).

use crate::driver::{self, CheckHead, Failure, InternalCause, Source, UserCause};
use crate::error::RunError;
use crate::npy;
use crate::pipeline::{CompileOptions, Context, PrintAfter};
use penguin::interp::{self, Array};
use penguin::pipeline::PipelineLog;
use penguin::{Function, Tensor};
use serde_json::json;
use std::path::PathBuf;

/// Which engine executes the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Engine {
    /// Compile with the backend and run the program on the simulator of the core.
    #[default]
    Sim,
    /// The reference interpreter of Penguin IR.
    Interp,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sim => "sim",
            Engine::Interp => "interp",
        }
    }
}

pub use crate::pipeline::PipelineMode;

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub kernel: Option<String>,
    pub engine: Engine,
    pub pipeline: PipelineMode,
    /// `NAME=PATH` pairs.
    pub inputs: Vec<(String, PathBuf)>,
    pub seed: u64,
    pub output_dir: Option<PathBuf>,
    /// Run the pipeliner's legality check (`--no-legality-check` turns it off).
    pub legality_check: bool,
    /// Also run the interpreter and fail unless the outputs agree bit for bit (`--check`).
    pub check: bool,
    /// Write the simulator's timeline here (`--trace FILE`).
    pub trace: Option<PathBuf>,
    /// Keep the simulator's timeline in [`SimRun::timeline`] (`nkc compare --svg`).
    pub timeline: bool,
    /// Stop with E0902 once the simulator's clock passes this many cycles, or its instructions
    /// this many; the interpreter, which has no clock, refuses a kernel of more instruction
    /// instances than this (`--max-cycles`).
    pub max_cycles: u64,
    /// Peel the loops the annotated pipeliner extended: physical prologue and epilogue
    /// (`--peel`).
    pub peel: bool,
    /// The shapes and dtype of untyped parameters (`--shape`, `--dtype`; `--input` arrays give
    /// their own shapes).
    pub specialise: driver::Specialise,
    /// After which passes the IR is printed on standard error (`--print-after-all`,
    /// `--print-after PASS`).
    pub print_after: PrintAfter,
}

impl Default for RunOptions {
    /// The defaults of `nkc run`: the simulator, every pipelining path, seeded random inputs
    /// (seed 0), the legality check on, no `--check`, the default cycle limit.
    fn default() -> Self {
        RunOptions {
            kernel: None,
            engine: Engine::default(),
            pipeline: PipelineMode::default(),
            inputs: Vec::new(),
            seed: 0,
            output_dir: None,
            legality_check: true,
            check: false,
            trace: None,
            timeline: false,
            max_cycles: runtime_sim::sim::DEFAULT_MAX_CYCLES,
            specialise: driver::Specialise::default(),
            peel: false,
            print_after: PrintAfter::Nothing,
        }
    }
}

/// One returned array.
#[derive(Clone, Debug)]
pub struct Output {
    pub name: String,
    /// The dtype the kernel declares for it (a bfloat16 output's values are bfloat16's).
    pub dtype: penguin::DType,
    pub array: Array,
    pub file: Option<PathBuf>,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunReport {
    pub kernel: String,
    pub engine: Engine,
    pub pipeline: PipelineMode,
    /// Notes for the user (printed on stderr), such as a pipelining mode that is not available yet.
    pub notes: Vec<String>,
    pub outputs: Vec<Output>,
    /// The interpreter's statistics (engine `interp`).
    pub stats: Option<interp::Stats>,
    /// What the simulator measured (engine `sim`).
    pub sim: Option<SimRun>,
    /// The backend's decisions (`--log backend`): [`RunReport::remarks`] rendered, then every
    /// modulo-scheduled loop's account.
    pub backend_log: Vec<String>,
    /// The decisions of the backend's passes, typed.
    pub remarks: Vec<backend::transform::remark::Remark>,
    /// The loops the backend unrolled (`backend::transform::unroll`: the emergent path's).
    pub unrolled: Vec<backend::transform::unroll::UnrolledData>,
    /// Whether `--check` compared the outputs with the interpreter's (they agreed, or the run
    /// failed).
    pub checked: bool,
    /// Wall-clock seconds spent compiling: front end, pipelining, backend (not the execution).
    pub compile_seconds: f64,
    /// Whether `--peel` peeled loops the annotated pipeliner extended.
    pub peeled: bool,
}

/// A simulated run.
#[derive(Debug)]
pub struct SimRun {
    pub stats: runtime_sim::sim::Stats,
    pub races: Vec<String>,
    pub sbuf_bytes: u64,
    pub psum_banks: u64,
    /// The instructions written in the program, each loop body once
    /// ([`runtime_sim::sim::program_size`]).
    pub program_size: u64,
    pub trace: Option<PathBuf>,
    /// The timeline, when [`RunOptions::timeline`] asked for it (empty otherwise).
    pub timeline: Vec<runtime_sim::sim::trace::Slice>,
    /// Every modulo-scheduled loop: the predicted II and the measured period.
    pub loops: Vec<crate::loops::LoopStats>,
    /// Every loop the annotated pipeliner extended: `(iv, stages, iterations)`.
    pub annotated_loops: Vec<(String, u32, i64)>,
    /// The dependence and fill bounds of the kernel as written ([`backend::cost::dep_bound`]; `None`
    /// when it has too many instances to walk).
    pub kernel_bounds: Option<backend::cost::dep_bound::KernelBoundsData>,
}

impl SimRun {
    /// The resource bound (the simulator's: the busiest engine, or all queues' DMA time / 16).
    pub fn resource_bound(&self) -> u64 {
        self.stats.bound()
    }

    /// The dependence bound of the kernel as written, when computed.
    pub fn dependence_bound(&self) -> Option<u64> {
        self.kernel_bounds.as_ref().map(|b| b.dependence)
    }

    /// The fill bound of the kernel as written, when computed.
    pub fn fill_bound(&self) -> Option<u64> {
        self.kernel_bounds.as_ref().map(|b| b.fill)
    }

    /// `max(resource bound, dependence bound, fill bound)`: no schedule of the kernel ends sooner.
    pub fn lower_bound(&self) -> u64 {
        self.resource_bound()
            .max(self.dependence_bound().unwrap_or(0))
            .max(self.fill_bound().unwrap_or(0))
    }

    /// Which bound is the lower bound: `resource`, `dependence`, or `fill (R)` with the resource
    /// whose fill and drain set it. Ties go to the simpler bound, in that order.
    pub fn bound_by(&self) -> String {
        let lb = self.lower_bound();
        match &self.kernel_bounds {
            _ if lb == self.resource_bound() => "resource".to_string(),
            Some(b) if lb == b.dependence => "dependence".to_string(),
            Some(b) => format!("fill ({})", b.fill_resource),
            None => "resource".to_string(),
        }
    }

    /// `cycles / lower bound` (1 when the bound is 0).
    pub fn cycles_over_bound(&self) -> f64 {
        match self.lower_bound() {
            0 => 1.0,
            b => self.stats.cycles as f64 / b as f64,
        }
    }
}

/// Compiles and runs the kernel. The pipeliner's decisions go to `log`, also when it fails.
pub fn run(
    source: &Source,
    opts: &RunOptions,
    log: &mut PipelineLog,
) -> Result<RunReport, Failure> {
    let started = std::time::Instant::now();
    let specs = opts
        .specialise
        .specs(source, opts.kernel.as_deref(), &opts.inputs)?;
    let copts = CompileOptions {
        mode: opts.pipeline,
        legality_check: opts.legality_check,
        peel: opts.peel,
        print_after: opts.print_after.clone(),
        print_to_stderr: true,
        ..CompileOptions::default()
    };
    let mut cx = Context::new(copts, log);
    let mut func = cx.lower(source, opts.kernel.as_deref(), &specs)?;
    check_size(&func)?;
    refuse_inputs_as_outputs(source, &func, opts)?;
    // The kernel as written: the oracle of `--check`.
    let written = func.clone();
    cx.pipeline(&mut func)?;
    // The interpreter (the oracle of --check, and --engine interp) runs the kernel as the
    // annotated path left it; the backend gets it after its own transformations (zero folding,
    // emergent pipelining).
    let oracle = func.clone();
    cx.prepare_backend(&mut func)?;
    let mut compile_seconds = started.elapsed().as_secs_f64();

    let inputs = gather_inputs(&func, opts)?;
    let mut sim = None;
    let mut interp_stats = None;
    let arrays: Vec<Array> = match opts.engine {
        Engine::Interp => {
            check_interp_budget(&oracle, opts.max_cycles)?;
            let r = interp::interpret(&oracle, &inputs).map_err(|e| interp_failure(&oracle, &e))?;
            interp_stats = Some(r.stats);
            r.outputs
        }
        Engine::Sim => {
            let backend_started = std::time::Instant::now();
            let compiled = cx.codegen(&func, Some(&source.text))?;
            compile_seconds += backend_started.elapsed().as_secs_f64();
            // One array type for the interpreter and the simulator (`vocab::Array`): the inputs
            // are held once, lent to each engine.
            // The timeline also gives each pipelined loop's measured period.
            let sopts = runtime_sim::sim::Options {
                trace: true,
                max_cycles: opts.max_cycles,
                ..runtime_sim::sim::Options::default()
            };
            let program = &compiled.program;
            let mut bar = crate::sim::ProgressBar::new(
                runtime_sim::sim::instruction_instances(program).min(opts.max_cycles),
            );
            let mut r =
                runtime_sim::sim::simulate_with_progress(program, &inputs, &sopts, &mut |p| {
                    bar.update(p)
                })
                .map_err(|e| sim_failure(&written, &inputs, &e, opts.max_cycles))?;
            drop(bar);
            if let Some(path) = &opts.trace {
                crate::write_file::write_atomically(
                    path,
                    runtime_sim::sim::trace::to_chrome_json(&r.trace).as_bytes(),
                )
                .map_err(|e| Failure::user(UserCause::Other(e)))?;
            }
            if !r.races.is_empty() {
                return Err(Failure::internal(InternalCause::Races(
                    r.races.iter().map(|x| x.to_string()).collect(),
                )));
            }
            let arrays = std::mem::take(&mut r.outputs)
                .into_iter()
                .map(|(_, a)| a)
                .collect();
            let loops = crate::loops::compute_loop_stats(&func, &compiled, &source.text, &r.trace);
            cx.remarks.extend(compiled.expansions.iter().cloned());
            let annotated_loops = func
                .axes
                .iter()
                .filter_map(|(ax, a)| {
                    let p = a.attrs.pipelined?;
                    Some((func.display_iv(ax).to_string(), p.num_stages, p.orig_trip))
                })
                .collect();
            sim = Some(SimRun {
                kernel_bounds: backend::cost::dep_bound::compute_kernel_bounds(&written),
                annotated_loops,
                loops,
                stats: r.stats,
                races: r.races.iter().map(|x| x.to_string()).collect(),
                sbuf_bytes: compiled.sbuf_bytes,
                psum_banks: compiled.psum_banks,
                program_size: runtime_sim::sim::program_size(&compiled.program),
                trace: opts.trace.clone(),
                timeline: if opts.timeline { r.trace } else { Vec::new() },
            });
            arrays
        }
    };
    let mut checked = false;
    if opts.check {
        let stats = check_outputs(&written, &oracle, &func, &inputs, &arrays, opts)?;
        interp_stats = interp_stats.or(Some(stats));
        checked = true;
    }
    let result = RunResultParts { outputs: arrays };

    let mut outputs = Vec::new();
    if let Some(dir) = &opts.output_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::user(UserCause::CreateDir {
                dir: dir.clone(),
                error: e.to_string(),
            })
        })?;
    }
    for (&tensor, array) in func.outputs.iter().zip(result.outputs) {
        let name = output_name(&func, tensor);
        let dtype = func.tensors[tensor].dtype;
        let file = match &opts.output_dir {
            Some(dir) => {
                let path = dir.join(format!("{name}.npy"));
                match dtype {
                    penguin::DType::Bf16 => npy::write_npy_bf16(&path, &array),
                    penguin::DType::F32 => npy::write_npy(&path, &array),
                }
                .map_err(|e| Failure::user(UserCause::Other(e)))?;
                Some(path)
            }
            None => None,
        };
        outputs.push(Output {
            name,
            dtype,
            array,
            file,
        });
    }
    // The passes' remarks, then every modulo-scheduled loop's account.
    let backend_log = backend::transform::remark::remark_lines(&cx.remarks)
        .into_iter()
        .chain(
            sim.iter()
                .flat_map(|s| s.loops.iter().map(|l| l.summary.to_string())),
        )
        .collect();
    Ok(RunReport {
        kernel: func.name.clone(),
        engine: opts.engine,
        pipeline: opts.pipeline,
        notes: cx.notes,
        outputs,
        stats: interp_stats,
        sim,
        backend_log,
        remarks: cx.remarks,
        unrolled: cx.unrolled,
        checked,
        compile_seconds,
        peeled: func
            .axes
            .values()
            .any(|a| a.attrs.pipelined.is_some_and(|p| p.peeled)),
    })
}

struct RunResultParts {
    outputs: Vec<Array>,
}

/// `--check`: the outputs (`got`, from the simulator or the interpreter on the path's kernel)
/// against the interpreter's on the kernel **as written** (`written`, no pipelining). On a
/// difference, the interpreter on the pipelined kernel (`pipelined`, as the annotated path left
/// it) says which side changed the result: if it agrees with the kernel as written, the backend
/// (or the simulator) did, a bug in nkc; if not, the pipelining did, which is the user's doing
/// when the legality check was skipped, and a bug in nkc otherwise. Returns the interpreter's
/// statistics on the kernel as written.
fn check_outputs(
    written: &Function,
    pipelined: &Function,
    func: &Function,
    inputs: &[Array],
    got: &[Array],
    opts: &RunOptions,
) -> Result<interp::Stats, Failure> {
    check_interp_budget(written, opts.max_cycles)?;
    let want = interp::interpret(written, inputs).map_err(|e| interp_failure(written, &e))?;
    let path = format!(
        "the {} on `--pipeline {}{}`",
        match opts.engine {
            Engine::Sim => "simulated program",
            Engine::Interp => "interpreted kernel",
        },
        opts.pipeline.name(),
        if opts.peel { " --peel" } else { "" }
    );
    // An output missing on one side is a mismatch, never a shorter comparison.
    if want.outputs.len() != got.len() || func.outputs.len() != got.len() {
        return Err(Failure::internal(InternalCause::CheckOutputCount {
            path,
            got: got.len(),
            want: want.outputs.len(),
            declared: func.outputs.len(),
        }));
    }
    let outputs = func.outputs.iter().zip(&want.outputs).zip(got);
    for (index, ((&tensor, want_a), got_a)) in outputs.enumerate() {
        let Some(msg) = first_difference(want_a, got_a) else {
            continue;
        };
        let name = output_name(func, tensor);
        // The pipelined kernel, interpreted: its output, or what stopped it (a read of memory
        // nothing wrote: a pipelining that reads a tile before its load).
        let (pipeliner_changed, why) = match interp::interpret(pipelined, inputs) {
            Ok(piped) => (
                piped
                    .outputs
                    .get(index)
                    .is_some_and(|p| first_difference(want_a, p).is_some()),
                None,
            ),
            Err(e) => (true, Some(e.to_string())),
        };
        let head = CheckHead {
            output: name,
            path: path.clone(),
            difference: msg,
        };
        return Err(if !pipeliner_changed {
            Failure::internal(InternalCause::CheckBackendChanged { head })
        } else if !opts.legality_check {
            Failure::user(UserCause::CheckUnchecked { head, why })
        } else {
            Failure::internal(InternalCause::CheckLegalityMissed { head, why })
        });
    }
    Ok(want.stats)
}

/// The first element where two arrays differ in their bits, described; `None` when equal.
pub fn first_difference(want: &Array, got: &Array) -> Option<String> {
    if want.shape != got.shape {
        return Some(format!("shape {:?}, want {:?}", got.shape, want.shape));
    }
    let cols = want.shape.get(1).copied().unwrap_or(1).max(1);
    want.data
        .iter()
        .zip(&got.data)
        .position(|(a, b)| a.to_bits() != b.to_bits())
        .map(|i| {
            format!(
                "element [{}, {}] is {} (bits {:#010x}), want {} (bits {:#010x})",
                i / cols,
                i % cols,
                got.data[i],
                got.data[i].to_bits(),
                want.data[i],
                want.data[i].to_bits()
            )
        })
}

/// What an interpreter error means for the user. Reading memory that nothing wrote is the kernel's
/// fault, and becomes a diagnostic at the statement (for Penguin IR text, which has no spans, at
/// the file, the note naming the instruction); anything else, on IR that the checks and the
/// verifier accepted, is a bug in nkc.
fn interp_failure(func: &Function, e: &interp::InterpError) -> Failure {
    let span = e
        .inst()
        .and_then(|i| func.inst_spans.get(i).copied().flatten());
    match (e, span) {
        (interp::InterpError::Uninitialised { tensor, .. }, span) => {
            Failure::Diagnostics(vec![RunError::UnwrittenRead {
                tensor: tensor.to_string(),
                at: span.map_or(0..0, |s| s.range()),
                element: None,
                detail: Some(e.to_string()),
            }
            .to_diagnostic()])
        }
        _ => Failure::internal(InternalCause::Interpreter(e.clone())),
    }
}

/// Whether the kernel's HBM tensors (parameters, outputs, scratch) fit what `nkc run` holds: the
/// simulator's [`runtime_sim::sim::MAX_HBM_ELEMS`] elements over all of them, on either engine.
/// Checked on the Penguin IR before any input is made or read, whatever the front end accepted:
/// too large is E0901 at the largest tensor.
pub fn check_size(func: &Function) -> Result<(), Failure> {
    let limit = runtime_sim::sim::MAX_HBM_ELEMS;
    let hbm = || {
        func.tensors
            .iter()
            .filter(|(_, t)| t.memory == penguin::Memory::Hbm)
    };
    let elems = hbm()
        .map(|(_, t)| t.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d)))
        .fold(0u64, u64::saturating_add);
    if elems <= limit {
        return Ok(());
    }
    let Some((largest, data)) =
        hbm().max_by_key(|(_, t)| t.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d)))
    else {
        return Ok(());
    };
    let count = |n: u64| match n {
        u64::MAX => "2^64 or more".to_string(),
        n => n.to_string(),
    };
    let span = func
        .tensor_spans
        .get(largest)
        .copied()
        .flatten()
        .map_or(0..0, |s| s.range());
    Err(Failure::Diagnostics(vec![RunError::TooLargeToRun {
        kernel: func.name.clone(),
        elems: count(elems),
        limit,
        largest: data.name.clone(),
        shape: data.shape.clone(),
        at: span,
    }
    .to_diagnostic()]))
}

/// The instruction instances of a kernel (each instruction times the trip counts of its loops,
/// saturating), and the loop that runs most often in all, with that count.
fn instances(func: &Function) -> (u64, Option<(penguin::Axis, u64)>) {
    let (n, _, busiest) = compute_instances_and_work(func);
    (n, busiest)
}

/// The element operations of one instruction: the elements of its largest operand, or, for a
/// matmul, its multiply-adds over [`MACS_PER_ELEMENT`] (at least 1).
fn inst_work(func: &Function, inst: penguin::Inst) -> u64 {
    let Some(d) = func.insts.get(inst) else {
        return 1;
    };
    let elems = |o: &penguin::Operand| o.access.size.iter().fold(1u64, |a, &x| a.saturating_mul(x));
    let largest = std::iter::once(&d.dst)
        .chain(&d.srcs)
        .map(elems)
        .max()
        .unwrap_or(1);
    let work = match d.op {
        penguin::Op::Matmul { .. } => d.srcs.first().map_or(largest, |lhs| {
            let macs = elems(lhs).saturating_mul(d.dst.access.size.get(1).copied().unwrap_or(1));
            largest.max(macs / MACS_PER_ELEMENT)
        }),
        _ => largest,
    };
    work.max(1)
}

/// The instruction instances of a kernel and their element operations ([`inst_work`]), each
/// instruction times the trip counts of its loops (saturating), and the loop that runs most
/// often in all, with that count.
fn compute_instances_and_work(func: &Function) -> (u64, u64, Option<(penguin::Axis, u64)>) {
    fn walk(
        func: &Function,
        stmts: &[penguin::Stmt],
        times: u64,
        busiest: &mut Option<(penguin::Axis, u64)>,
    ) -> (u64, u64) {
        let (mut n, mut work) = (0u64, 0u64);
        for &s in stmts {
            let Some(data) = func.stmts.get(s) else {
                continue;
            };
            let (here, here_work) = match &data.kind {
                penguin::StmtKind::Insts(insts) => (
                    times.saturating_mul(insts.len() as u64),
                    insts
                        .iter()
                        .map(|&i| times.saturating_mul(inst_work(func, i)))
                        .fold(0u64, u64::saturating_add),
                ),
                penguin::StmtKind::Loop(axis) => {
                    let Some(a) = func.axes.get(*axis) else {
                        continue;
                    };
                    let inner = times.saturating_mul(a.trip_count().max(0) as u64);
                    if busiest.is_none_or(|(_, b)| inner > b) {
                        *busiest = Some((*axis, inner));
                    }
                    walk(func, &a.body, inner, busiest)
                }
            };
            n = n.saturating_add(here);
            work = work.saturating_add(here_work);
        }
        (n, work)
    }
    let mut busiest = None;
    let (n, work) = walk(func, &func.body, 1, &mut busiest);
    (n, work, busiest)
}

/// How many of the interpreter's matmul multiply-adds take the time of one element of another
/// operation (its matmul runs on register tiles: some 1.3 × 10^9 multiply-adds a second, against
/// some 10^8 elements of a copy or an add).
const MACS_PER_ELEMENT: u64 = 16;

/// The element operations the interpreter may spend per cycle of `--max-cycles`: so that a run
/// at the default limit ends within seconds (the interpreter does some 10^8 element operations a
/// second), and a kernel that the simulator runs under the limit interprets too (an engine of the
/// simulated core processes up to a partition's worth, 128 elements, a cycle, but rarely that
/// many on average).
pub const INTERP_WORK_PER_CYCLE: u64 = 16;

/// The interpreter has no clock: it refuses a kernel of more instruction instances than
/// `max_cycles`, or of more element operations than [`INTERP_WORK_PER_CYCLE`] times that (E0902),
/// which it would take too long to run.
fn check_interp_budget(func: &Function, max_cycles: u64) -> Result<(), Failure> {
    let (n, work, _) = compute_instances_and_work(func);
    let work_limit = max_cycles.saturating_mul(INTERP_WORK_PER_CYCLE);
    if n > max_cycles {
        return Err(cycle_limit(
            func,
            max_cycles,
            format!("the interpreter would execute {n} instructions, more than the limit"),
        ));
    }
    if work > work_limit {
        return Err(cycle_limit(
            func,
            max_cycles,
            format!(
                "the interpreter would process {work} elements, more than {INTERP_WORK_PER_CYCLE} per cycle of the limit ({work_limit})"
            ),
        ));
    }
    Ok(())
}

/// E0902, at the loop of `func` that runs most often: a run over `--max-cycles`.
fn cycle_limit(func: &Function, max_cycles: u64, detail: String) -> Failure {
    let (_, busiest) = instances(func);
    let busiest = busiest.map(|(axis, n)| {
        let span = func.axis_spans.get(axis).copied().flatten();
        (span.map_or(0..0, |s| s.range()), n)
    });
    Failure::Diagnostics(vec![RunError::CycleLimit {
        kernel: func.name.clone(),
        max_cycles,
        busiest,
        detail,
    }
    .to_diagnostic()])
}

/// What a simulator error on a compiled program means for the user. A read of HBM scratch that
/// nothing wrote is the kernel's fault when the kernel as written does it too: the interpreter,
/// run on it, then gives the very diagnostic `--engine interp` gives (E0900, at the statement).
/// Anything else, on a program the backend emitted, is a bug in nkc.
fn sim_failure(
    written: &Function,
    inputs: &[Array],
    e: &runtime_sim::sim::SimError,
    max_cycles: u64,
) -> Failure {
    let internal = || Failure::internal(InternalCause::SimRejected(e.clone()));
    match e {
        runtime_sim::sim::SimError::Uninitialised { .. } => {}
        runtime_sim::sim::SimError::CycleLimit { .. } => {
            return cycle_limit(written, max_cycles, e.to_string())
        }
        _ => return internal(),
    }
    if check_interp_budget(written, max_cycles).is_err() {
        return internal();
    }
    match interp::interpret(written, inputs) {
        Err(ie @ interp::InterpError::Uninitialised { .. }) => interp_failure(written, &ie),
        _ => internal(),
    }
}

/// An error when a file the run would write (`--trace`, `--output DIR/NAME.npy`) is the kernel
/// or one of its `--input` files: checked before anything runs.
fn refuse_inputs_as_outputs(
    source: &Source,
    func: &Function,
    opts: &RunOptions,
) -> Result<(), Failure> {
    crate::write_file::refuse_run_outputs(
        &source.path,
        &opts.inputs,
        opts.trace.as_deref(),
        opts.output_dir.as_deref(),
        func.outputs.iter().map(|&t| func.tensors[t].name.as_str()),
    )
    .map_err(|e| Failure::user(UserCause::Other(e)))
}

/// The name `return` gave an output.
fn output_name(func: &Function, tensor: Tensor) -> String {
    func.tensors[tensor].name.clone()
}

fn gather_inputs(func: &Function, opts: &RunOptions) -> Result<Vec<Array>, Failure> {
    let param_names: Vec<&str> = func
        .params
        .iter()
        .map(|&t| func.tensors[t].name.as_str())
        .collect();
    driver::unique_inputs(&opts.inputs)?;
    // An output parameter (one the kernel stores into) takes its shape from its `--input`, which
    // the front end read; its contents are not an input.
    let outputs: Vec<&str> = func
        .outputs
        .iter()
        .map(|&t| func.tensors[t].name.as_str())
        .collect();
    for (name, _) in &opts.inputs {
        if !param_names.contains(&name.as_str()) && !outputs.contains(&name.as_str()) {
            return Err(Failure::user(UserCause::NotAParameter {
                name: name.clone(),
                kernel: func.name.clone(),
                params: param_names.iter().map(|p| p.to_string()).collect(),
            }));
        }
    }
    let mut inputs = interp::random_inputs(func, opts.seed);
    for (i, &tensor) in func.params.iter().enumerate() {
        let data = &func.tensors[tensor];
        let given = opts.inputs.iter().find(|(n, _)| *n == data.name);
        if let Some((name, path)) = given {
            // The random values it replaces go first: the inputs are held once.
            inputs[i].data = Vec::new();
            let array = npy::read_npy(path).map_err(|e| Failure::user(UserCause::Other(e)))?;
            let want: Vec<usize> = data.shape.iter().map(|&d| d as usize).collect();
            // A tensor of other than 2 dimensions is stored as [leading product, last].
            let stored: Option<Vec<usize>> = frontend::check::stored_shape(&array.shape);
            if stored.as_ref() == Some(&want) && array.shape != want {
                inputs[i] = Array {
                    shape: want,
                    data: array.data,
                };
            } else {
                if array.shape != want {
                    return Err(Failure::user(UserCause::InputShape {
                        name: name.clone(),
                        path: path.clone(),
                        got: array.shape.clone(),
                        kernel: func.name.clone(),
                        want,
                    }));
                }
                inputs[i] = array;
            }
        }
        // A float32 file given for a bfloat16 parameter: its values rounded, as a store would.
        if data.dtype == penguin::DType::Bf16 && given.is_some() {
            for x in &mut inputs[i].data {
                *x = penguin::interp::round_bf16(*x);
            }
        }
    }
    Ok(inputs)
}

impl RunReport {
    /// The `--json` form.
    pub fn to_json(&self) -> serde_json::Value {
        let outputs: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| (o.name.clone(), json!(o.array.shape)))
            .collect();
        let dtypes: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| (o.name.clone(), json!(dtype_name(o.dtype))))
            .collect();
        let files: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .filter_map(|o| {
                o.file
                    .as_ref()
                    .map(|f| (o.name.clone(), json!(f.display().to_string())))
            })
            .collect();
        let summary: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| {
                let s = Summary::of(&o.array.data);
                (
                    o.name.clone(),
                    json!({"min": s.min, "max": s.max, "mean": s.mean, "checksum": s.checksum}),
                )
            })
            .collect();
        let mut j = json!({
            "kernel": self.kernel,
            "engine": self.engine.name(),
            "pipeline": self.pipeline.name(),
            "outputs": outputs,
            "dtypes": dtypes,
            "files": files,
            "summary": summary,
            "checked": self.checked,
            "compile_seconds": self.compile_seconds,
            "peeled": self.peeled,
        });
        if let Some(stats) = &self.stats {
            j["stats"] = stats_json(stats);
        }
        if let Some(sim) = &self.sim {
            let s = &sim.stats;
            let engines = crate::sim::engines_json(s);
            j["cycles"] = json!(s.cycles);
            j["lower_bound"] = json!(sim.lower_bound());
            j["resource_bound"] = json!(sim.resource_bound());
            j["dependence_bound"] = json!(sim.dependence_bound());
            j["fill_bound"] = json!(sim.fill_bound());
            j["bound_by"] = json!(sim.bound_by());
            j["cycles_over_bound"] = json!(sim.cycles_over_bound());
            j["races"] = json!(sim.races);
            j["engines"] = json!(engines);
            j["sbuf_bytes"] = json!(sim.sbuf_bytes);
            j["psum_banks"] = json!(sim.psum_banks);
            j["instructions"] = json!(s.instructions());
            j["program_size"] = json!(sim.program_size);
            j["dma_bytes"] = json!(s.dma_bytes);
            j["trace"] = json!(sim.trace.as_ref().map(|p| p.display().to_string()));
            j["loops"] = json!(sim
                .loops
                .iter()
                .map(|l| json!({
                    "loop": l.name,
                    "line": l.line,
                    "trip": l.trip,
                    "ii": l.ii,
                    "mii": l.mii,
                    "res_mii": l.res_mii,
                    "rec_mii": l.rec_mii,
                    "predicted_period": l.predicted,
                    "pipelined": l.pipelined,
                    "steady_state": l.steady_state,
                    "limited_by": l.limited_by.to_string(),
                    "period_set_by": l
                        .period_set_by
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    "order_bound": l.order_bound,
                    "measured_period": l.period,
                }))
                .collect::<Vec<_>>());
        }
        j
    }

    /// The human summary.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "ran `{}` on the {} (pipeline: {}){}\n",
            self.kernel,
            match self.engine {
                Engine::Sim => "simulator",
                Engine::Interp => "interpreter",
            },
            self.pipeline.name(),
            if self.checked {
                "; --check: outputs equal the kernel's as written (interpreted) bit for bit"
            } else {
                ""
            }
        );
        for o in &self.outputs {
            let sum = Summary::of(&o.array.data);
            s += &format!(
                "  {}: {}{:?}  min {:.6}  max {:.6}  mean {:.6}",
                o.name,
                o.dtype.name(),
                o.array.shape,
                sum.min,
                sum.max,
                sum.mean
            );
            if let Some(f) = &o.file {
                s += &format!("  -> {}", f.display());
            }
            s.push('\n');
        }
        if let Some(sim) = &self.sim {
            let st = &sim.stats;
            s += &format!(
                "  {} cycles ({:.2} µs at 1.4 GHz); lower bound {} cycles (resource {}, dependence {}, fill {}; set by {}); cycles / bound = {:.3}\n",
                st.cycles,
                st.cycles as f64 / runtime_sim::machine::CYCLES_PER_US,
                sim.lower_bound(),
                sim.resource_bound(),
                sim.dependence_bound()
                    .map_or("not computed".to_string(), |d| d.to_string()),
                sim.fill_bound()
                    .map_or("not computed".to_string(), |d| d.to_string()),
                sim.bound_by(),
                sim.cycles_over_bound()
            );
            for e in runtime_sim::isa::Engine::ALL {
                let es = &st.engines[e.index()];
                if es.instructions + es.predicated_off == 0 {
                    continue;
                }
                s += &format!(
                    "  {:<5} busy {:>9} ({:>5.1}%)  {} instructions, {} predicated off\n",
                    e.name(),
                    es.busy,
                    100.0 * st.utilisation(es.busy),
                    es.instructions,
                    es.predicated_off
                );
            }
            s += &format!(
                "  SBUF {} bytes per partition, {} PSUM bank(s), no races\n",
                sim.sbuf_bytes, sim.psum_banks
            );
            if let Some(p) = &sim.trace {
                s += &format!("  trace -> {}", p.display());
                if st.trace_dropped > 0 {
                    s += &format!(
                        " (its first {} slices; {} more not recorded)",
                        runtime_sim::sim::MAX_TRACE_SLICES,
                        st.trace_dropped
                    );
                }
                s.push('\n');
            }
        } else if let Some(stats) = &self.stats {
            s += &stats_text(stats);
        }
        s
    }
}

/// The NumPy-style name of a dtype (`float32`, `bfloat16`), as `--dtype` takes it.
pub fn dtype_name(d: penguin::DType) -> &'static str {
    match d {
        penguin::DType::F32 => "float32",
        penguin::DType::Bf16 => "bfloat16",
    }
}

/// A few figures that identify an output at a glance.
struct Summary {
    min: f32,
    max: f32,
    mean: f64,
    /// The sum of all values in f64, in order: equal outputs give equal checksums.
    checksum: f64,
}

impl Summary {
    fn of(data: &[f32]) -> Summary {
        let min = data.iter().copied().fold(f32::INFINITY, f32::min);
        let max = data.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let checksum: f64 = data.iter().map(|&x| f64::from(x)).sum();
        let mean = if data.is_empty() {
            0.0
        } else {
            checksum / data.len() as f64
        };
        Summary {
            min,
            max,
            mean,
            checksum,
        }
    }
}

fn stats_json(stats: &interp::Stats) -> serde_json::Value {
    let counters = |m: &std::collections::BTreeMap<&'static str, interp::Counter>| {
        m.iter()
            .map(|(k, c)| {
                (
                    k.to_string(),
                    json!({"insts": c.insts, "elements": c.elements}),
                )
            })
            .collect::<serde_json::Map<_, _>>()
    };
    json!({
        "insts": stats.total.insts,
        "elements": stats.total.elements,
        "matmul_macs": stats.matmul_macs,
        "stmts_skipped": stats.stmts_skipped,
        "by_op": counters(&stats.by_op),
        "by_engine": counters(&stats.by_engine),
    })
}

fn stats_text(stats: &interp::Stats) -> String {
    let engines: Vec<String> = stats
        .by_engine
        .iter()
        .map(|(name, c)| format!("{name} {}", c.insts))
        .collect();
    format!(
        "  executed {} instructions ({}), {} matmul multiply-adds\n",
        stats.total.insts,
        engines.join(", "),
        stats.matmul_macs
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_OUTPUTS: &str = "def k(a: nl.hbm[nl.float32, 128, 8]):\n    c = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n    d = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(c, value=t)\n    u = nl.add(t, t)\n    nl.store(d, value=u)\n    return c, d\n";

    /// `--check` compares the output counts: an output missing from the checked side is a
    /// mismatch, not a shorter comparison; the same outputs pass.
    #[test]
    fn check_outputs_compares_the_count() {
        let func = frontend::compile(TWO_OUTPUTS, None).expect("the kernel compiles");
        let inputs = interp::random_inputs(&func, 0);
        let want = interp::interpret(&func, &inputs).expect("the kernel runs");
        let opts = RunOptions::default();
        assert!(check_outputs(&func, &func, &func, &inputs, &want.outputs, &opts).is_ok());
        let fewer = &want.outputs[..1];
        let e = check_outputs(&func, &func, &func, &inputs, fewer, &opts).unwrap_err();
        assert!(
            matches!(
                &e,
                Failure::Internal(cause) if matches!(**cause, InternalCause::CheckOutputCount {
                    got: 1,
                    want: 2,
                    declared: 2,
                    ..
                })
            ),
            "{e:?}"
        );
    }
}
