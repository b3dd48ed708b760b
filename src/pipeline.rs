//! The compile pipeline: one [`Context`] owns the ordered, named passes from a kernel's source to
//! its program, and every command (`check`, `compile`, `run`, `compare`, `suggest`) and every test
//! goes through it. Cranelift's `Context` is the model.
//!
//! The passes, in order ([`PASSES`]), each followed by the verifier of the IR it leaves:
//!
//! | pass | IR after it | what it does |
//! | --- | --- | --- |
//! | `lower` | Penguin | the front end: parse, check, lower (or, for a `.pir` file, read Penguin text) |
//! | `strip-annotations` | Penguin | `--pipeline none|emergent|auto`: forget every pipelining annotation |
//! | `mark-auto` | Penguin | `--pipeline auto`: mark every loop `num_stages="auto"` |
//! | `choose-auto-stages` | Penguin | `num_stages="auto"` becomes stage ids, as if written in Mode B |
//! | `pipeline` | Penguin | the annotated software pipeliner with its legality check |
//! | `peel` | Penguin | `--peel`: the extended loops' prologue and epilogue as physical code |
//! | `fold-zeros` | Penguin | a PSUM accumulator's zeroing goes into its first matmul |
//! | `flatten` | Penguin | `default|auto`: unroll a short, issue-bound annotated loop into the loop around it |
//! | `unroll` | Penguin | `default|emergent|auto`: unroll loops whose transfers spread better |
//! | `emergent` | Penguin | `default|emergent|auto`: the backend's emergent pipelining |
//! | `retime` | Penguin | `default|emergent|auto`: a store whose data is late issued one iteration later (a flat loop's where the modulo scheduler predicts a gain; one after an inner loop after the next iteration's inner loops); a load of a user-pipelined loop issued the iterations ahead its latency wants |
//! | `lower-bir` … `hoist` | BIR, then ISA | the backend's passes ([`backend::passes::PASSES`]) |
//!
//! The phases are methods so that a command can stop between them or keep the IR of one: `run`
//! keeps the kernel as the annotated path leaves it ([`Context::pipeline`]) as the interpreter's
//! oracle, before [`Context::prepare_backend`] and [`Context::codegen`]. A pass that does not
//! apply on the path (`peel` without `--peel`) does not run and prints nothing.
//!
//! `--print-after-all` and `--print-after PASS` ([`PrintAfter`]) print the IR after a pass, each
//! block preceded by a header line `# *** IR after PASS (FORM) ***`; every Penguin, BIR and ISA
//! block reads back with its parser. Passes whose product has no text form (`alloc`, `emit`,
//! `clamp`, `sync`, `prune-waits`) print a one-line summary as a `#` comment instead. Every pass
//! ends in the same place, which also times it ([`Instrument::times`], `--time-passes`).
//!
//! Invariant: after every pass the IR verifies; a verifier failure is an internal error naming
//! the pass. The Penguin passes here verify always; the backend's passes are one static table
//! ([`backend::passes::PASSES`]) that [`backend::Context`] runs, verifying by IR form when
//! [`CompileOptions::verify`] is on (debug builds, `NKC_VERIFY=1`). This context hands its
//! [`Instrument`] down to the backend's, so the times and printed blocks of both halves form one
//! list, in pass order.

use crate::driver::{self, Failure, Source};
pub use backend::instrument::{
    format_pass_times, split_printed, Form, Instrument, PassTime, PrintAfter, Printed,
};
use backend::transform::remark::Remark;
use penguin::listing::capped_list;
use penguin::pipeline::{PipelineLog, PipelineOptions};
use penguin::Function;

/// Which pipelining path loops take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PipelineMode {
    /// What `nkc run` does: annotated loops pipelined as annotated (the Penguin pipeliner),
    /// every other loop by the backend (emergent pipelining).
    #[default]
    Default,
    /// Only the annotated loops are pipelined, as annotated; the other loops get no emergent
    /// pipelining (often much slower than `default`): what the annotations alone give.
    Annotated,
    /// Annotations ignored; the backend pipelines every loop (rings, loads issued ahead,
    /// unrolling).
    Emergent,
    /// Nothing pipelined: annotations ignored, no emergent pipelining (the baseline).
    None,
    /// Annotations replaced by `num_stages="auto"` (stages the compiler chooses) on every loop
    /// outside a nest, then as `default`.
    Auto,
}

impl PipelineMode {
    /// Every path, in the order the tests and `docs/` list them.
    pub const ALL: [PipelineMode; 5] = [
        PipelineMode::Default,
        PipelineMode::Annotated,
        PipelineMode::Emergent,
        PipelineMode::None,
        PipelineMode::Auto,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PipelineMode::Default => "default",
            PipelineMode::Annotated => "annotated",
            PipelineMode::Emergent => "emergent",
            PipelineMode::None => "none",
            PipelineMode::Auto => "auto",
        }
    }

    /// Whether the backend's emergent pipelining (and unrolling) runs on this path.
    pub fn emergent(self) -> bool {
        matches!(
            self,
            PipelineMode::Default | PipelineMode::Emergent | PipelineMode::Auto
        )
    }
}

/// The passes on Penguin IR, in order, before the backend's ([`backend::passes::PASSES`]).
const PENGUIN_PASSES: &[&str] = &[
    "lower",
    "strip-annotations",
    "mark-auto",
    "choose-auto-stages",
    "pipeline",
    "peel",
    "fold-zeros",
    "flatten",
    "unroll",
    "emergent",
    "retime",
];

/// The passes a kernel can go through, in order; the names `--print-after` takes.
pub static PASSES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    PENGUIN_PASSES
        .iter()
        .copied()
        .chain(backend::passes::pass_names())
        .collect()
});

/// Whether `name` is a pass of [`PASSES`].
pub fn is_pass(name: &str) -> bool {
    PASSES.contains(&name)
}

/// `--print-after PASS` (as a value parser): a pass name, or the list of them.
pub fn parse_pass(s: &str) -> Result<String, UnknownPass> {
    if is_pass(s) {
        Ok(s.to_string())
    } else {
        Err(UnknownPass {
            name: s.to_string(),
        })
    }
}

/// `--print-after NAME` with a name not in [`PASSES`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not a pass; the passes are: {}", PASSES.join(", "))]
pub struct UnknownPass {
    pub name: String,
}

/// How a kernel is compiled.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    pub mode: PipelineMode,
    /// Run the pipeliner's legality check (`--no-legality-check` turns it off).
    pub legality_check: bool,
    /// Peel the loops the annotated pipeliner extended (`--peel`).
    pub peel: bool,
    /// Run the backend's synchronisation analysis on a trip-clamped copy ([`backend::codegen::clamp`]).
    pub clamp_trips: bool,
    pub print_after: PrintAfter,
    /// Write each printed block to standard error as soon as its pass completes (the CLI);
    /// otherwise they are only kept in [`Instrument::printed`].
    pub print_to_stderr: bool,
    /// Verify the IR after every backend pass ([`backend::context::verify_by_default`]; the
    /// Penguin IR is verified after every pass whatever this says).
    pub verify: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            mode: PipelineMode::Default,
            legality_check: true,
            peel: false,
            clamp_trips: true,
            print_after: PrintAfter::Nothing,
            print_to_stderr: false,
            verify: backend::context::verify_by_default(),
        }
    }
}

impl CompileOptions {
    /// The defaults on path `mode`.
    pub fn for_mode(mode: PipelineMode) -> Self {
        CompileOptions {
            mode,
            ..CompileOptions::default()
        }
    }
}

/// The compile pipeline of one kernel: its options, the logs its passes write, and the IR it
/// printed.
pub struct Context<'l> {
    pub opts: CompileOptions,
    /// The annotated pipeliner's decisions (`--log pipeliner`).
    pub log: &'l mut PipelineLog,
    /// The backend's decisions on Penguin IR: zero folding, unrolling, emergent pipelining
    /// (`--log backend`: their `Display`), each pass's pushed in order.
    pub remarks: Vec<Remark>,
    /// The loops the backend unrolled (`backend::transform::unroll`).
    pub unrolled: Vec<backend::transform::unroll::UnrolledData>,
    /// Notes for the user, such as `--peel` on a kernel with nothing to peel.
    pub notes: Vec<String>,
    /// The passes run so far with their times (`nkc compile --time-passes`), and the blocks
    /// printed (`print_after`); handed down to the backend's context, so both halves of the
    /// pipeline record in it.
    pub instrument: Instrument,
    /// The backend's plan of the kernel [`Context::prepare_backend`] left, when its
    /// transformations computed one ([`backend::planned`]); the next [`Context::codegen`] takes
    /// it.
    pub planned: Option<backend::planned::Planned>,
}

impl<'l> Context<'l> {
    pub fn new(opts: CompileOptions, log: &'l mut PipelineLog) -> Self {
        let instrument = Instrument::new(opts.print_after.clone(), opts.print_to_stderr);
        Context {
            opts,
            log,
            remarks: Vec::new(),
            unrolled: Vec::new(),
            notes: Vec::new(),
            instrument,
            planned: None,
        }
    }

    /// Records that `pass` completed ([`Instrument::record`]: its time, and its IR when asked).
    fn print(&mut self, pass: &str, form: Form, text: impl FnOnce() -> String) {
        self.instrument.record(pass, form, text);
    }

    /// Verifies `func` after `pass` (`what` names it in the internal error), then prints it.
    fn after(&mut self, pass: &str, what: &str, func: &Function) -> Result<(), Failure> {
        driver::verify(func, what)?;
        self.print(pass, Form::Penguin, || penguin::write_function(func));
        Ok(())
    }

    /// `lower`: the front end on one kernel of `source` (or, for a `.pir` file, its Penguin
    /// text read and verified), then the verifier.
    pub fn lower(
        &mut self,
        source: &Source,
        kernel: Option<&str>,
        specs: &frontend::Specs,
    ) -> Result<Function, Failure> {
        let func = driver::compile_with(source, kernel, specs)?;
        self.notes.extend(func.notes.iter().cloned());
        self.print("lower", Form::Penguin, || penguin::write_function(&func));
        Ok(func)
    }

    /// The pipelining path [`CompileOptions::mode`] asks for, on the kernel as lowered:
    /// `strip-annotations` and `mark-auto` as the path says, the annotated pipeliner
    /// ([`Context::pipeline_annotated`]) on `default|annotated|auto`, then `peel` with `--peel`
    /// (a note says when no loop was extended, so nothing was peeled).
    pub fn pipeline(&mut self, func: &mut Function) -> Result<(), Failure> {
        let mode = self.opts.mode;
        match mode {
            PipelineMode::Auto => {
                strip_annotations(func);
                self.print("strip-annotations", Form::Penguin, || {
                    penguin::write_function(func)
                });
                backend::transform::emergent::mark_auto_loops(func);
                self.after("mark-auto", "marking loops num_stages=\"auto\"", func)?;
            }
            PipelineMode::Emergent | PipelineMode::None => {
                if has_annotations(func) {
                    strip_annotations(func);
                    self.after("strip-annotations", "removing pipelining annotations", func)?;
                }
            }
            PipelineMode::Default | PipelineMode::Annotated => {}
        }
        if matches!(
            mode,
            PipelineMode::Default | PipelineMode::Annotated | PipelineMode::Auto
        ) {
            self.pipeline_annotated(func)?;
        }
        if !self.opts.peel {
            return Ok(());
        }
        if func.axes.values().all(|a| a.attrs.pipelined.is_none()) {
            self.notes.push(format!(
                "--peel: no loop of `{}` is pipelined by the annotated path on `--pipeline {}`, so nothing is peeled",
                func.name,
                mode.name()
            ));
            return Ok(());
        }
        self.peel(func)
    }

    /// `choose-auto-stages` then `pipeline`: `num_stages="auto"` becomes stage ids, as if
    /// written in Mode B; then the annotated pipeliner with its legality check, on every
    /// annotated loop.
    pub fn pipeline_annotated(&mut self, func: &mut Function) -> Result<(), Failure> {
        for remark in backend::transform::emergent::choose_auto_stages(func) {
            self.log
                .push(penguin::pipeline::PipelineRemark::foreign(remark));
        }
        self.after(
            "choose-auto-stages",
            "choosing `num_stages=\"auto\"` stages",
            func,
        )?;
        let popts = PipelineOptions {
            legality_check: self.opts.legality_check,
            order_holders: matches!(self.opts.mode, PipelineMode::Default | PipelineMode::Auto),
        };
        penguin::pipeline::pipeline_function_logged(func, &popts, self.log)
            .map_err(driver::pipeline_failure)?;
        // Every command that pipelines says so (`check` and `--emit pipelined` too).
        if !self.opts.legality_check {
            warn_unchecked(func);
        }
        self.after("pipeline", "the pipeliner", func)
    }

    /// `peel`: the extended loops' prologue and epilogue as physical code
    /// ([`penguin::pipeline::peel::peel_extended_loops`]).
    pub fn peel(&mut self, func: &mut Function) -> Result<(), Failure> {
        penguin::pipeline::peel::peel_extended_loops(func, self.log)
            .map_err(driver::pipeline_failure)?;
        self.after("peel", "peeling", func)
    }

    /// The backend's transformations on Penguin IR: on every path `fold-zeros` (a PSUM
    /// accumulator's zeroing goes into its first matmul, [`backend::transform::fold_zeros`]); then, on the
    /// paths that have it ([`PipelineMode::emergent`]), `flatten` (a short, issue-bound
    /// annotated loop unrolled into the un-annotated loop around it, [`backend::transform::flatten`]),
    /// `unroll` and `emergent` pipelining on
    /// the loops the path gives it (`default`: the loops the annotated pipeliner left alone;
    /// `emergent`: every loop, the annotations being stripped), and `retime` (a store whose data
    /// is late goes one iteration later: [`backend::retime`] in a flat loop,
    /// [`backend::transform::delay_stores`] after an inner loop; a load of a user-pipelined loop
    /// goes the iterations ahead its latency wants, [`backend::prefetch`]; then a ring along a
    /// short inner loop takes the slots it cannot use along the loop around it,
    /// [`backend::transform::emergent::outer_slots`]). Their decisions go to
    /// [`Context::remarks`]. The backend's plan of the kernel it leaves, when `retime` computed
    /// one and neither `delay_stores` nor `outer_slots` changed the kernel after it, is kept for
    /// the next [`Context::codegen`] ([`Context::planned`]).
    pub fn prepare_backend(&mut self, func: &mut Function) -> Result<(), Failure> {
        self.planned = None;
        let log = backend::transform::fold_zeros::fold_psum_zeros(func);
        self.remarks.extend(log);
        self.after("fold-zeros", "folding PSUM zeroing", func)?;
        if self.opts.mode.emergent() {
            let log = backend::transform::flatten::flatten_short_pipelines(func);
            self.remarks.extend(log);
            self.after("flatten", "flattening short pipelined loops", func)?;
            let (unrolled, log) = backend::transform::unroll::unroll_loops(func);
            self.unrolled.extend(unrolled);
            self.remarks.extend(log);
            self.after("unroll", "unrolling", func)?;
            let log = backend::transform::emergent::pipeline_emergent(func);
            self.remarks.extend(log.into_iter().map(Remark::Emergent));
            self.after("emergent", "emergent pipelining", func)?;
            let (log, planned) = backend::retime::retime_stores_planned(func);
            self.remarks.extend(log);
            let (log, planned) = backend::prefetch::prefetch_loads_planned(func, planned);
            self.remarks.extend(log);
            let delayed = backend::transform::delay_stores::delay_stores(func);
            let spread = backend::transform::emergent::outer_slots::spread_outer_slots(func);
            // A store delayed or a ring spread changed the kernel: the plan is no longer its.
            self.planned = planned.filter(|_| delayed.is_empty() && spread.is_empty());
            self.remarks.extend(delayed);
            self.remarks
                .extend(spread.into_iter().map(Remark::Emergent));
            self.after("retime", "retiming stores", func)?;
        }
        Ok(())
    }

    /// The backend's passes ([`backend::passes::PASSES`]) on a kernel [`Context::prepare_backend`]
    /// left; `source` (the kernel file's text) gives the trace its line numbers. It adopts the
    /// plan [`Context::prepare_backend`] kept ([`backend::context::Context::with_planned`]), so
    /// `func` must be the kernel exactly as that left it (or [`Context::planned`] cleared).
    pub fn codegen(
        &mut self,
        func: &Function,
        source: Option<&str>,
    ) -> Result<backend::Compiled, Failure> {
        self.codegen_with_pruner(func, source, &|em, sync, _| {
            backend::codegen::hb::compute_pruned_waits(em, sync)
        })
    }

    /// [`Context::codegen`] with the wait pruning `prune` (the tests' oracle for `backend::codegen::hb`).
    #[doc(hidden)]
    pub fn codegen_with_pruner(
        &mut self,
        func: &Function,
        source: Option<&str>,
        prune: backend::Pruner<'_>,
    ) -> Result<backend::Compiled, Failure> {
        let opts = backend::context::Options {
            clamp_trips: self.opts.clamp_trips,
            verify: self.opts.verify,
        };
        // The plan `prepare_backend` left is of the kernel it left, which the caller passes.
        let planned = self.planned.take();
        backend::Context::new(func, source, opts, prune, &mut self.instrument)
            .with_planned(planned)
            .run()
            .map_err(driver::backend_failure)
    }

    /// Every phase: `lower`, the pipelining path, the backend's transformations and the
    /// backend; returns the compiled kernel.
    pub fn compile(
        &mut self,
        source: &Source,
        kernel: Option<&str>,
        specs: &frontend::Specs,
    ) -> Result<backend::Compiled, Failure> {
        let mut func = self.lower(source, kernel, specs)?;
        self.compile_function(&mut func, Some(&source.text))
    }

    /// Every phase after `lower`, on `func` (left as the backend got it).
    pub fn compile_function(
        &mut self,
        func: &mut Function,
        source: Option<&str>,
    ) -> Result<backend::Compiled, Failure> {
        self.pipeline(func)?;
        self.prepare_backend(func)?;
        self.codegen(func, source)
    }
}

/// The pipelining path `mode` on `func` with the default options ([`Context::pipeline`]); the
/// pipeliner's decisions go to `log`. A shorthand for tests and benches.
pub fn pipeline_path(
    func: &mut Function,
    mode: PipelineMode,
    log: &mut PipelineLog,
) -> Result<(), Failure> {
    Context::new(CompileOptions::for_mode(mode), log).pipeline(func)
}

/// The backend's transformations on Penguin IR on path `mode` ([`Context::prepare_backend`]);
/// returns their remarks.
pub fn prepare_backend(func: &mut Function, mode: PipelineMode) -> Result<Vec<Remark>, Failure> {
    let mut log = PipelineLog::default();
    let mut cx = Context::new(CompileOptions::for_mode(mode), &mut log);
    cx.prepare_backend(func)?;
    Ok(cx.remarks)
}

/// The backend's passes on `func` ([`Context::codegen`]), the synchronisation analysis on a
/// trip-clamped copy or not.
pub fn codegen(
    func: &Function,
    source: Option<&str>,
    clamp_trips: bool,
) -> Result<backend::Compiled, Failure> {
    let mut log = PipelineLog::default();
    let opts = CompileOptions {
        clamp_trips,
        ..CompileOptions::default()
    };
    Context::new(opts, &mut log).codegen(func, source)
}

/// Every phase after `lower` on path `mode` with the default options
/// ([`Context::compile_function`]).
pub fn compile_function(
    func: &mut Function,
    mode: PipelineMode,
    source: Option<&str>,
) -> Result<backend::Compiled, Failure> {
    let mut log = PipelineLog::default();
    Context::new(CompileOptions::for_mode(mode), &mut log).compile_function(func, source)
}

/// `--no-legality-check`: a warning naming the loops whose pipelining is therefore unverified.
fn warn_unchecked(func: &Function) {
    let loops: Vec<String> = func
        .axes
        .iter()
        .filter(|(_, a)| a.attrs.pipelined.is_some())
        .map(|(a, _)| format!("`{}`", func.display_iv(a)))
        .collect();
    if !loops.is_empty() {
        eprintln!(
            "warning: the legality check was skipped (--no-legality-check) for the pipelined loop(s) {}: their pipelining is not verified",
            capped_list(&loops, ", ")
        );
    }
}

/// Whether the kernel carries any pipelining annotation (a stage count, stage ids, buffering).
pub fn has_annotations(func: &Function) -> bool {
    func.axes.values().any(|a| {
        a.attrs.num_stages.is_some_and(|n| n > 1)
            || a.attrs.auto_stages
            || a.attrs.multi_buffer.is_some()
            || a.attrs.disable_auto_buffer
    }) || func
        .annots
        .values()
        .any(|a| a.stage_id.is_some() || a.execution_order.is_some())
}

/// Forgets every pipelining annotation.
fn strip_annotations(func: &mut Function) {
    for axis in func.axes.values_mut() {
        axis.attrs.num_stages = None;
        axis.attrs.auto_stages = false;
        axis.attrs.multi_buffer = None;
        axis.attrs.disable_auto_buffer = false;
        axis.attrs.disable_execution_order_check = false;
    }
    func.annots.clear();
}

/// `nkc check`: every diagnostic of the file (all kernels, or only `kernel`): the front end's,
/// then, when it has none, for each kernel the reads of HBM scratch that certainly find nothing
/// written (E0900, [`driver::unwritten_scratch_reads`]), the pipeliner's and its legality check's.
pub fn check(
    source: &Source,
    kernel: Option<&str>,
    specs: &frontend::Specs,
    opts: &PipelineOptions,
    log: &mut PipelineLog,
) -> Result<(), Failure> {
    if source.is_penguin() {
        let copts = CompileOptions {
            legality_check: opts.legality_check,
            ..CompileOptions::default()
        };
        let mut cx = Context::new(copts, log);
        let mut func = cx.lower(source, kernel, specs)?;
        let mut all = driver::unwritten_scratch_reads(&func);
        match cx.pipeline_annotated(&mut func) {
            Ok(()) => {}
            Err(Failure::Diagnostics(mut e)) => all.append(&mut e),
            Err(other) => return Err(other),
        }
        return if all.is_empty() {
            Ok(())
        } else {
            Err(Failure::Diagnostics(all))
        };
    }
    driver::check_kernel_option(source, kernel)?;
    frontend::set_kernel_file(&source.path, source.text.len());
    let errors = frontend::check_source_with(&source.text, kernel, specs);
    if !errors.is_empty() {
        return Err(Failure::Diagnostics(errors));
    }
    let names: Vec<String> = match kernel {
        Some(k) => vec![k.to_string()],
        None => driver::parse(source)?
            .kernels
            .iter()
            .map(|k| k.name.name.clone())
            .collect(),
    };
    let mut all = Vec::new();
    let copts = CompileOptions {
        legality_check: opts.legality_check,
        ..CompileOptions::default()
    };
    let mut cx = Context::new(copts, log);
    for name in names {
        let mut func = cx.lower(source, Some(&name), specs)?;
        all.extend(driver::unwritten_scratch_reads(&func));
        match cx.pipeline_annotated(&mut func) {
            Ok(()) => {}
            Err(Failure::Diagnostics(mut e)) => all.append(&mut e),
            Err(other) => return Err(other),
        }
    }
    if all.is_empty() {
        Ok(())
    } else {
        Err(Failure::Diagnostics(all))
    }
}
