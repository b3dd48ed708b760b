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
//! a kernel of more instruction instances than that for the interpreter (E0902), and a store of
//! undefined values (memory nothing wrote, or values computed from it) into HBM, on either
//! engine (E0900, at the statement).
//!
//! Layout: this module holds the options, the report's types and [`run`] in its steps (compile,
//! execute on one engine, `--check`, write the outputs); [`inputs`] gathers the input arrays,
//! [`limits`] holds the size and cycle limits, [`report`] prints the report as text and JSON.

use crate::driver::{self, CheckHead, Failure, InternalCause, Source, UserCause};
use crate::error::RunError;
use crate::pipeline::{CompileOptions, Context, PrintAfter};
use inputs::{gather_inputs, refuse_inputs_as_outputs};
pub use limits::check_size;
use limits::{check_interp_budget, cycle_limit};
use penguin::interp::{self, Array};
use penguin::pipeline::PipelineLog;
use penguin::{Function, Tensor};
pub use report::dtype_name;
use std::path::PathBuf;

pub(crate) mod files;
mod inputs;
mod limits;
mod report;

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
    let mut cx = Context::new(compile_options(opts), log);
    let kernels = compile_kernel(&mut cx, source, &specs, opts)?;
    let mut compile_seconds = started.elapsed().as_secs_f64();

    let inputs = gather_inputs(&kernels.func, opts)?;
    let executed = match opts.engine {
        Engine::Interp => interpret(&kernels.oracle, &inputs, opts)?,
        Engine::Sim => simulate(
            &mut cx,
            source,
            &kernels,
            &inputs,
            opts,
            &mut compile_seconds,
        )?,
    };
    let Executed {
        arrays,
        mut interp_stats,
        sim,
    } = executed;
    let Kernels {
        written,
        oracle,
        func,
    } = kernels;
    let mut checked = false;
    if opts.check {
        let stats = check_outputs(&written, &oracle, &func, &inputs, &arrays, opts)?;
        interp_stats = interp_stats.or(Some(stats));
        checked = true;
    }
    let outputs = write_outputs(&func, arrays, opts)?;
    let backend_log = backend_log(&cx.remarks, sim.as_ref());
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

/// The compile options of a run.
fn compile_options(opts: &RunOptions) -> CompileOptions {
    CompileOptions {
        mode: opts.pipeline,
        legality_check: opts.legality_check,
        peel: opts.peel,
        print_after: opts.print_after.clone(),
        print_to_stderr: true,
        ..CompileOptions::default()
    }
}

/// The kernel at the three points a run needs it.
struct Kernels {
    /// As written: the oracle of `--check`.
    written: Function,
    /// As the annotated path left it: what the interpreter runs (the oracle of `--check`, and
    /// `--engine interp`).
    oracle: Function,
    /// After the backend's own transformations (zero folding, emergent pipelining): what the
    /// backend compiles.
    func: Function,
}

/// Lowers the kernel, checks its size and the files the run writes, and pipelines it.
fn compile_kernel(
    cx: &mut Context<'_>,
    source: &Source,
    specs: &frontend::Specs,
    opts: &RunOptions,
) -> Result<Kernels, Failure> {
    let mut func = cx.lower(source, opts.kernel.as_deref(), specs)?;
    check_size(&func)?;
    refuse_inputs_as_outputs(source, &func, opts)?;
    let written = func.clone();
    cx.pipeline(&mut func)?;
    let oracle = func.clone();
    cx.prepare_backend(&mut func)?;
    Ok(Kernels {
        written,
        oracle,
        func,
    })
}

/// What an engine gave: the output arrays, and the interpreter's statistics or the simulator's
/// measurements.
struct Executed {
    arrays: Vec<Array>,
    interp_stats: Option<interp::Stats>,
    sim: Option<SimRun>,
}

/// `--engine interp`: the reference interpreter on the kernel as the annotated path left it.
fn interpret(oracle: &Function, inputs: &[Array], opts: &RunOptions) -> Result<Executed, Failure> {
    check_interp_budget(oracle, opts.max_cycles)?;
    let r = interp::interpret(oracle, inputs).map_err(|e| interp_failure(oracle, &e))?;
    Ok(Executed {
        arrays: r.outputs,
        interp_stats: Some(r.stats),
        sim: None,
    })
}

/// `--engine sim`: compiles the kernel with the backend (its time added to `compile_seconds`)
/// and runs the program on the simulator, writing the `--trace`; a data race fails the run.
fn simulate(
    cx: &mut Context<'_>,
    source: &Source,
    kernels: &Kernels,
    inputs: &[Array],
    opts: &RunOptions,
    compile_seconds: &mut f64,
) -> Result<Executed, Failure> {
    let (written, func) = (&kernels.written, &kernels.func);
    let backend_started = std::time::Instant::now();
    let compiled = cx.codegen(func, Some(&source.text))?;
    *compile_seconds += backend_started.elapsed().as_secs_f64();
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
        runtime_sim::sim::simulate_with_progress(program, inputs, &sopts, &mut |p| bar.update(p))
            .map_err(|e| sim_failure(kernels, inputs, &e, opts))?;
    drop(bar);
    if let Some(path) = &opts.trace {
        crate::write_file::write_atomically(
            path,
            runtime_sim::sim::trace::to_chrome_json(&r.trace).as_bytes(),
        )
        .map_err(|e| Failure::user(UserCause::Write(e)))?;
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
    let loops = crate::loops::compute_loop_stats(func, &compiled, &source.text, &r.trace);
    cx.remarks.extend(compiled.expansions.iter().cloned());
    let sim = SimRun {
        kernel_bounds: backend::cost::dep_bound::compute_kernel_bounds(written),
        annotated_loops: annotated_loops(func),
        loops,
        stats: r.stats,
        races: r.races.iter().map(|x| x.to_string()).collect(),
        sbuf_bytes: compiled.sbuf_bytes,
        psum_banks: compiled.psum_banks,
        program_size: runtime_sim::sim::program_size(&compiled.program),
        trace: opts.trace.clone(),
        timeline: if opts.timeline { r.trace } else { Vec::new() },
    };
    Ok(Executed {
        arrays,
        interp_stats: None,
        sim: Some(sim),
    })
}

/// Every loop the annotated pipeliner extended: `(iv, stages, iterations)`.
fn annotated_loops(func: &Function) -> Vec<(String, u32, i64)> {
    func.axes
        .iter()
        .filter_map(|(ax, a)| {
            let p = a.attrs.pipelined?;
            Some((func.display_iv(ax).to_string(), p.num_stages, p.orig_trip))
        })
        .collect()
}

/// The outputs by their names, each written as `NAME.npy` under `--output DIR` when given.
fn write_outputs(
    func: &Function,
    arrays: Vec<Array>,
    opts: &RunOptions,
) -> Result<Vec<Output>, Failure> {
    let mut outputs = Vec::new();
    if let Some(dir) = &opts.output_dir {
        files::create_output_dir(dir)?;
    }
    for (&tensor, array) in func.outputs.iter().zip(arrays) {
        let name = output_name(func, tensor);
        let dtype = func.tensors[tensor].dtype;
        let file = match &opts.output_dir {
            Some(dir) => Some(files::write_output(
                dir,
                &name,
                &array,
                files::FileDtype::of(dtype, func.int_dtypes.get(&tensor).copied()),
            )?),
            None => None,
        };
        outputs.push(Output {
            name,
            dtype,
            array,
            file,
        });
    }
    Ok(outputs)
}

/// The passes' remarks, then every modulo-scheduled loop's account.
fn backend_log(
    remarks: &[backend::transform::remark::Remark],
    sim: Option<&SimRun>,
) -> Vec<String> {
    backend::transform::remark::remark_lines(remarks)
        .into_iter()
        .chain(
            sim.iter()
                .flat_map(|s| s.loops.iter().map(|l| l.summary.to_string())),
        )
        .collect()
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

/// What an interpreter error means for the user. Storing undefined values (memory that nothing
/// wrote, or values computed from it) into HBM is the kernel's fault, and becomes a diagnostic at
/// the statement (for Penguin IR text, which has no spans, at
/// the file, the note naming the instruction); anything else, on IR that the checks and the
/// verifier accepted, is a bug in nkc.
fn interp_failure(func: &Function, e: &interp::InterpError) -> Failure {
    let span = e
        .inst()
        .and_then(|i| func.inst_spans.get(i).copied().flatten());
    match (e, span) {
        (interp::InterpError::Uninitialised { tensor, dest, .. }, span) => {
            Failure::Diagnostics(vec![RunError::UndefinedStore {
                tensor: tensor.to_string(),
                dest: dest.to_string(),
                at: span.map_or(0..0, |s| s.range()),
                detail: e.to_string(),
            }
            .to_diagnostic()])
        }
        (interp::InterpError::IndexOutOfRange { tensor, .. }, span) => {
            Failure::Diagnostics(vec![RunError::IndexOutOfRange {
                tensor: tensor.to_string(),
                at: span.map_or(0..0, |s| s.range()),
                detail: e.to_string(),
            }
            .to_diagnostic()])
        }
        _ => Failure::internal(InternalCause::Interpreter(e.clone())),
    }
}

/// What a simulator error on a compiled program means for the user. Storing undefined values
/// into HBM is the kernel's fault when the kernel as written does it too: the interpreter,
/// run on it, then gives the very diagnostic `--engine interp` gives (E0900, at the statement).
/// When the kernel as written stores no undefined value but the program does, and the legality
/// check was skipped, the pipelining is to blame (as for a differing output, `--check` or not).
/// Anything else, on a program the backend emitted, is a bug in nkc.
fn sim_failure(
    kernels: &Kernels,
    inputs: &[Array],
    e: &runtime_sim::sim::SimError,
    opts: &RunOptions,
) -> Failure {
    let (written, max_cycles) = (&kernels.written, opts.max_cycles);
    let internal = || Failure::internal(InternalCause::SimRejected(e.clone()));
    let undefined = match e {
        runtime_sim::sim::SimError::Uninitialised {
            tensor, element, ..
        } => Some((tensor, *element)),
        // An indirect DMA's index out of range: the kernel's fault when the kernel as written
        // indexes out of range too.
        runtime_sim::sim::SimError::Access { .. } => None,
        runtime_sim::sim::SimError::CycleLimit { .. } => {
            return cycle_limit(written, max_cycles, e.to_string())
        }
        _ => return internal(),
    };
    if check_interp_budget(written, max_cycles).is_err() {
        return internal();
    }
    // `undefined` is `None` exactly for an out-of-range index (`Access`): the others returned.
    match (interp::interpret(written, inputs), undefined) {
        (Err(ie @ interp::InterpError::Uninitialised { .. }), Some(_))
        | (Err(ie @ interp::InterpError::IndexOutOfRange { .. }), None) => {
            interp_failure(written, &ie)
        }
        (Ok(_), Some((tensor, element))) if !opts.legality_check => {
            let cols = (written.tensors.values())
                .find(|t| t.name == *tensor)
                .and_then(|t| t.shape.get(1).copied())
                .unwrap_or(1)
                .max(1);
            let head = CheckHead {
                output: tensor.clone(),
                path: format!(
                    "the simulated program on `--pipeline {}{}`",
                    opts.pipeline.name(),
                    if opts.peel { " --peel" } else { "" }
                ),
                difference: format!(
                    "element [{}, {}] is undefined (the program stores memory nothing wrote, or a value computed from it)",
                    element / cols,
                    element % cols
                ),
            };
            let why = interp::interpret(&kernels.func, inputs)
                .err()
                .map(|e| e.to_string());
            Failure::user(UserCause::CheckUnchecked { head, why })
        }
        _ => internal(),
    }
}

/// The name `return` gave an output.
fn output_name(func: &Function, tensor: Tensor) -> String {
    func.tensors[tensor].name.clone()
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
