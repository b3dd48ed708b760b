//! The `nkc` command line.

use clap::{Parser, Subcommand, ValueEnum};
use nkc::compare::{self, CompareOptions, SuiteEntry};
use nkc::driver::{self, ColorMode, Failure, Source};
use nkc::pipeline::{self, CompileOptions, Context, PipelineMode, PrintAfter};
use nkc::run::{self, Engine, RunOptions};
use nkc::sim::{self as simcmd, SimOptions};
use penguin::listing::capped_list;
use penguin::pipeline::{PipelineLog, PipelineOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "nkc", version, about = "A compiler for NKI-style kernels")]
struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorMode::Auto, global = true)]
    color: ColorMode,
    /// Print a pass's decision log on standard error (repeatable).
    #[arg(long = "log", value_enum, global = true)]
    log: Vec<LogKind>,
    /// Skip the pipeliner's legality check (an escape hatch: an illegal schedule then runs).
    #[arg(long, global = true)]
    no_legality_check: bool,
    #[command(subcommand)]
    command: Command,
}

/// How untyped (shape-generic) kernel parameters are specialised.
#[derive(clap::Args, Clone, Default)]
struct SpecArgs {
    /// The shape of an untyped parameter, `NAME=ROWSxCOLS` (repeatable); an `--input` array
    /// gives its own.
    #[arg(long = "shape", value_parser = driver::parse_shape)]
    shapes: Vec<(String, Vec<u64>)>,
    /// The dtype of the untyped parameters.
    #[arg(long, value_enum)]
    dtype: Option<DTypeArg>,
    /// The value of a scalar kernel parameter, `NAME=VALUE` (repeatable): a Python literal such
    /// as `1e-5`, `128`, `True`.
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = driver::parse_arg)]
    args: Vec<(String, String)>,
}

/// Printing the IR between passes (on standard error).
#[derive(clap::Args, Clone, Default)]
struct PrintArgs {
    /// Print the IR after every pass, each block after a header line naming the pass.
    #[arg(long)]
    print_after_all: bool,
    /// Print the IR after this pass (repeatable); a name that is no pass gets the list.
    #[arg(long = "print-after", value_name = "PASS", value_parser = pipeline::parse_pass)]
    print_after: Vec<String>,
}

impl PrintArgs {
    fn print_after(self) -> PrintAfter {
        if self.print_after_all {
            PrintAfter::All
        } else if self.print_after.is_empty() {
            PrintAfter::Nothing
        } else {
            PrintAfter::Passes(self.print_after)
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum DTypeArg {
    Float32,
    Bfloat16,
}

impl SpecArgs {
    fn specialise(self) -> driver::Specialise {
        driver::Specialise {
            args: self.args,
            shapes: self.shapes,
            dtype: self.dtype.map(|d| match d {
                DTypeArg::Float32 => penguin::DType::F32,
                DTypeArg::Bfloat16 => penguin::DType::Bf16,
            }),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Check a kernel file: exit 0 when it is good, 1 with diagnostics when it is not.
    Check(CheckArgs),
    /// Compile a kernel and print an intermediate form.
    Compile(CompileArgs),
    /// Compile a kernel and run it.
    Run(RunArgs),
    /// Compile and simulate a kernel on every pipelining path (none, emergent, and annotated when
    /// the kernel is annotated), check each against the interpreter, and compare them side by
    /// side. Several files print the suite's table of cycles / lower bound.
    Compare(CompareArgs),
    /// Search the pipelining annotation of each loop that measures fastest (legal, bit-exact) and
    /// print it as a diff of the source.
    Suggest(SuggestArgs),
    /// Run a pseudo-ISA program (`.s`) on the simulator of the Neuron-like core.
    Sim(SimArgs),
}

// The arguments of `nkc check`.
#[derive(clap::Args)]
struct CheckArgs {
    file: PathBuf,
    /// Check only this kernel (default: every kernel in the file).
    #[arg(long)]
    kernel: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
}

// The arguments of `nkc compile`.
#[derive(clap::Args)]
struct CompileArgs {
    file: PathBuf,
    #[arg(long)]
    kernel: Option<String>,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Emit::Penguin)]
    emit: Emit,
    /// Which pipelining path loops take (for `--emit bir|isa`).
    #[arg(long, value_enum, default_value_t = PipelineMode::Default)]
    pipeline: PipelineMode,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Peel the loops the annotated pipeliner extended: a physical prologue and epilogue
    /// beside a steady-state loop without guards, instead of one predicated loop.
    #[arg(long)]
    peel: bool,
    /// Print each pass's wall-clock time (verifier included) on standard error.
    #[arg(long)]
    time_passes: bool,
    #[command(flatten)]
    spec: SpecArgs,
    #[command(flatten)]
    print: PrintArgs,
}

// The arguments of `nkc run`.
#[derive(clap::Args)]
struct RunArgs {
    file: PathBuf,
    #[arg(long)]
    kernel: Option<String>,
    /// What executes the kernel.
    #[arg(long, value_enum, default_value_t = Engine::Sim)]
    engine: Engine,
    /// Also run the interpreter, and fail unless the outputs agree bit for bit.
    #[arg(long)]
    check: bool,
    /// Write the simulator's timeline (Chrome trace-event JSON, for Perfetto) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Which pipelining path loops take.
    #[arg(long, value_enum, default_value_t = PipelineMode::Default)]
    pipeline: PipelineMode,
    /// An input array, `NAME=PATH.npy` (repeatable); other parameters get random inputs.
    #[arg(long = "input", value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write each returned array to `DIR/NAME.npy`.
    #[arg(long = "output")]
    output: Option<PathBuf>,
    /// Print one JSON object on standard output instead of a summary.
    #[arg(long)]
    json: bool,
    /// Stop (error E0902) once the simulated clock passes this many cycles, or once more
    /// instructions than this have run (the interpreter: once the kernel has more
    /// instruction instances than this).
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    max_cycles: u64,
    /// Peel the loops the annotated pipeliner extended: a physical prologue and epilogue
    /// beside a steady-state loop without guards, instead of one predicated loop.
    #[arg(long)]
    peel: bool,
    #[command(flatten)]
    spec: SpecArgs,
    #[command(flatten)]
    print: PrintArgs,
}

// The arguments of `nkc compare`.
#[derive(clap::Args)]
struct CompareArgs {
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[arg(long)]
    kernel: Option<String>,
    /// Print one JSON object keyed by path name (by file, then path, for several files).
    #[arg(long)]
    json: bool,
    /// Draw the paths' simulated timelines, stacked, as SVG in this file.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also run the annotated path peeled (a physical prologue and epilogue), beside the
    /// predicated one: cycles, instructions executed and program size of both.
    #[arg(long)]
    peel: bool,
    #[command(flatten)]
    spec: SpecArgs,
}

// The arguments of `nkc suggest`.
#[derive(clap::Args)]
struct SuggestArgs {
    file: PathBuf,
    #[arg(long)]
    kernel: Option<String>,
    /// Apply the diff to the file.
    #[arg(long)]
    write: bool,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    spec: SpecArgs,
}

// The arguments of `nkc sim`.
#[derive(clap::Args)]
struct SimArgs {
    /// The program, in the text form documented in `runtime-sim/src/text.rs`.
    program: PathBuf,
    /// Write a Chrome trace-event timeline (open it in Perfetto) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print one JSON object on standard output instead of a summary.
    #[arg(long)]
    json: bool,
    /// An input tensor, `NAME=PATH.npy` (repeatable); other inputs get random values.
    #[arg(long = "input", value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write each output tensor to `DIR/NAME.npy`.
    #[arg(long = "output")]
    output: Option<PathBuf>,
    /// Timing only: skip the arithmetic (outputs are zeros).
    #[arg(long)]
    no_numerics: bool,
    /// Stop (error E0902) once the simulated clock passes this many cycles, or once more
    /// instructions than this have run.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    max_cycles: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogKind {
    /// The annotated software pipeliner.
    Pipeliner,
    /// The backend's emergent pipelining heuristic.
    Backend,
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    /// The syntax tree, as Rust's debug form.
    Ast,
    /// The Penguin IR text form.
    Penguin,
    /// The Penguin IR after the annotated pipeliner.
    Pipelined,
    /// The backend's BIR (per-engine instructions on logical buffers).
    Bir,
    /// The pseudo-ISA program (the input of `nkc sim`).
    Isa,
}

fn parse_input(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("expected NAME=PATH.npy, found `{s}`")),
    }
}

fn main() -> ExitCode {
    install_panic_hook();
    let cli = Cli::parse();
    let popts = PipelineOptions {
        legality_check: !cli.no_legality_check,
    };
    let mut log = PipelineLog::default();
    let show_backend = cli.log.contains(&LogKind::Backend);
    let result = execute(cli.command, &popts, &mut log, show_backend, cli.color);
    if cli.log.contains(&LogKind::Pipeliner) {
        eprint!("{log}");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((failure, source)) => {
            driver::report(&failure, source.as_ref(), cli.color);
            ExitCode::from(failure.exit_code() as u8)
        }
    }
}

type Outcome = Result<(), (Failure, Option<Source>)>;

/// What every command shares: the global options and the pipeliner's log.
struct Env<'a> {
    log: &'a mut PipelineLog,
    show_backend: bool,
    color: ColorMode,
}

fn execute(
    command: Command,
    popts: &PipelineOptions,
    log: &mut PipelineLog,
    show_backend: bool,
    color: ColorMode,
) -> Outcome {
    let mut env = Env {
        log,
        show_backend,
        color,
    };
    match command {
        Command::Check(a) => check_command(a, popts, &mut env),
        Command::Compile(a) => compile_command(a, popts, &mut env),
        Command::Run(a) => run_command(a, popts, &mut env),
        Command::Suggest(a) => suggest(a),
        Command::Compare(a) => compare_command(a, popts, env.color),
        Command::Sim(a) => sim(a),
    }
}

/// `nkc check`.
fn check_command(a: CheckArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    let src = read(&a.file)?;
    let specs = a.spec.specialise().specs(&[]).map_err(|f| (f, None))?;
    driver::check(&src, a.kernel.as_deref(), &specs, popts, env.log).map_err(|f| (f, Some(src)))
}

/// `nkc compile`: the options, then [`compile`], then the output.
fn compile_command(a: CompileArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    let src = read(&a.file)?;
    let specs = a.spec.specialise().specs(&[]).map_err(|f| (f, None))?;
    let copts = CompileOptions {
        mode: a.pipeline,
        legality_check: popts.legality_check,
        peel: a.peel,
        print_after: a.print.print_after(),
        print_to_stderr: true,
        ..CompileOptions::default()
    };
    let (text, times) = compile(&src, a.kernel.as_deref(), &specs, a.emit, copts, env)
        .map_err(|f| (f, Some(src)))?;
    if a.time_passes {
        eprint!("{}", pipeline::format_pass_times(&times));
    }
    write_output(a.output.as_deref(), &text)
}

/// `nkc compile`: the phases `emit` needs, through the compile context; returns the text and
/// the time each pass took.
fn compile(
    src: &Source,
    kernel: Option<&str>,
    specs: &frontend::Specs,
    emit: Emit,
    copts: CompileOptions,
    env: &mut Env<'_>,
) -> Result<(String, Vec<pipeline::PassTime>), Failure> {
    if let Emit::Ast = emit {
        if src.is_penguin() {
            return Err(Failure::User(format!(
                "`{}` is Penguin IR: it has no syntax tree (`--emit ast` takes a `.nk` file)",
                src.display_name()
            )));
        }
        let module = driver::parse(src)?;
        return Ok((format!("{module:#?}\n"), Vec::new()));
    }
    // `--print-after` runs every pass, whatever `--emit` prints.
    let printing = copts.print_after != PrintAfter::Nothing;
    let mut cx = Context::new(copts, env.log);
    let mut func = cx.lower(src, kernel, specs)?;
    let text = match emit {
        Emit::Ast => unreachable!("handled above"),
        Emit::Penguin => penguin::write::write_function(&func),
        Emit::Pipelined if !printing => {
            // The annotated path as written (whatever `--pipeline` says), peeled with `--peel`.
            cx.pipeline_annotated(&mut func)?;
            if cx.opts.peel {
                cx.peel(&mut func)?;
            }
            penguin::write::write_function(&func)
        }
        Emit::Pipelined | Emit::Bir | Emit::Isa => String::new(),
    };
    if !printing && matches!(emit, Emit::Penguin | Emit::Pipelined) {
        return Ok((text, cx.times));
    }
    cx.pipeline(&mut func)?;
    for note in &cx.notes {
        eprintln!("note: {note}");
    }
    let pipelined = penguin::write::write_function(&func);
    cx.prepare_backend(&mut func)?;
    if env.show_backend {
        for l in &cx.backend_log {
            eprintln!("{l}");
        }
    }
    let compiled = cx.codegen(&func, Some(&src.text))?;
    let text = match emit {
        Emit::Ast | Emit::Penguin => text,
        Emit::Pipelined => pipelined,
        Emit::Bir => backend::bir::write_bir(&compiled.func, &compiled.bir),
        Emit::Isa => runtime_sim::text::print(&compiled.program),
    };
    Ok((text, cx.times))
}

/// `nkc run`: the options, the run, the report.
fn run_command(a: RunArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    let opts = RunOptions {
        max_cycles: a.max_cycles,
        specialise: a.spec.specialise(),
        kernel: a.kernel,
        engine: a.engine,
        pipeline: a.pipeline,
        inputs: a.inputs,
        seed: a.seed,
        output_dir: a.output,
        legality_check: popts.legality_check,
        check: a.check,
        trace: a.trace,
        timeline: false,
        peel: a.peel,
        print_after: a.print.print_after(),
    };
    let src = read(&a.file)?;
    let report = run::run(&src, &opts, env.log).map_err(|f| (f, Some(src)))?;
    if env.show_backend {
        for l in &report.backend_log {
            eprintln!("{l}");
        }
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    if a.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    Ok(())
}

/// `nkc suggest`.
fn suggest(a: SuggestArgs) -> Outcome {
    let opts = nkc::suggest::SuggestOptions {
        kernel: a.kernel,
        seed: a.seed,
        specialise: a.spec.specialise(),
    };
    let file = &a.file;
    let src = read(file)?;
    let s = nkc::suggest::suggest(&src, &opts).map_err(|f| (f, Some(src)))?;
    print!("{}", s.to_text(&file.display().to_string()));
    if a.write && s.suggested != s.original {
        std::fs::write(file, &s.suggested).map_err(|e| {
            (
                Failure::User(format!("cannot write `{}`: {e}", file.display())),
                None,
            )
        })?;
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}

/// `nkc compare`: one file, or a suite.
fn compare_command(a: CompareArgs, popts: &PipelineOptions, color: ColorMode) -> Outcome {
    let opts = CompareOptions {
        kernel: a.kernel,
        seed: a.seed,
        specialise: a.spec.specialise(),
        legality_check: popts.legality_check,
        timelines: a.svg.is_some(),
        peel: a.peel,
    };
    match a.files.as_slice() {
        [file] => compare_one(file, &opts, a.json, a.svg.as_deref()),
        files => compare_suite(files, &opts, a.json, a.svg.as_deref(), color),
    }
}

/// `nkc compare FILE`.
fn compare_one(
    file: &std::path::Path,
    opts: &CompareOptions,
    json: bool,
    svg: Option<&std::path::Path>,
) -> Outcome {
    let src = read(file)?;
    let c = compare::compare(&src, opts).map_err(|f| (f, Some(src)))?;
    if let Some(path) = svg {
        write_output(Some(path), &nkc::timeline_svg::render(&[&c]))?;
    }
    if json {
        println!("{}", c.to_json());
    } else {
        print!("{}", c.to_text());
    }
    Ok(())
}

/// `nkc compare FILE...`: a suite. A broken file is reported and marked in the table; the others
/// still run, and the command fails at the end.
fn compare_suite(
    files: &[PathBuf],
    opts: &CompareOptions,
    json: bool,
    svg: Option<&std::path::Path>,
    color: ColorMode,
) -> Outcome {
    // Read every file first; the comparisons then run together ([`compare::compare_each`]),
    // and each failure is reported in file order.
    let sources: Vec<Result<Source, Failure>> = files.iter().map(|f| Source::read(f)).collect();
    let readable: Vec<&Source> = sources.iter().filter_map(|s| s.as_ref().ok()).collect();
    let mut compared = compare::compare_each(&readable, opts).into_iter();
    let mut entries = Vec::new();
    for (file, src) in files.iter().zip(&sources) {
        entries.push(match src {
            Err(f) => {
                driver::report(f, None, color);
                SuiteEntry::failed(file.display().to_string(), f)
            }
            Ok(src) => match compared.next() {
                Some(Ok(c)) => SuiteEntry::Compared(c),
                Some(Err(f)) => {
                    driver::report(&f, Some(src), color);
                    SuiteEntry::failed(src.display_name(), &f)
                }
                None => unreachable!("compare_each gives one result per source"),
            },
        });
    }
    if let Some(path) = svg {
        let done: Vec<&compare::Comparison> =
            entries.iter().filter_map(SuiteEntry::comparison).collect();
        write_output(Some(path), &nkc::timeline_svg::render(&done))?;
    }
    if json {
        println!("{}", compare::suite_json(&entries));
    } else {
        print!("{}", compare::suite_table(&entries));
    }
    suite_outcome(&entries)
}

/// `nkc sim`.
fn sim(a: SimArgs) -> Outcome {
    let opts = SimOptions {
        inputs: a.inputs,
        seed: a.seed,
        output_dir: a.output,
        trace: a.trace,
        no_numerics: a.no_numerics,
        max_cycles: a.max_cycles,
    };
    let src = read(&a.program)?;
    let report = simcmd::sim(&src, &opts).map_err(|f| (f, None))?;
    if a.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    match report.races_failure() {
        Some(f) => Err((f, None)),
        None => Ok(()),
    }
}

/// The end of a suite: success, or one failure naming the files that failed (each was reported
/// already); a bug in nkc on any file makes it an internal error (exit code 101).
fn suite_outcome(entries: &[SuiteEntry]) -> Outcome {
    let failed: Vec<&str> = entries
        .iter()
        .filter_map(|e| match e {
            SuiteEntry::Failed { file, .. } => Some(file.as_str()),
            SuiteEntry::Compared(_) => None,
        })
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    let msg = format!(
        "{} of the {} files failed: {}",
        failed.len(),
        entries.len(),
        capped_list(&failed, ", ")
    );
    let internal = entries
        .iter()
        .any(|e| matches!(e, SuiteEntry::Failed { internal: true, .. }));
    let failure = if internal {
        Failure::Internal(msg)
    } else {
        Failure::User(msg)
    };
    Err((failure, None))
}

fn read(file: &std::path::Path) -> Result<Source, (Failure, Option<Source>)> {
    Source::read(file).map_err(|f| (f, None))
}

fn write_output(path: Option<&std::path::Path>, text: &str) -> Outcome {
    match path {
        Some(p) => std::fs::write(p, text).map_err(|e| {
            (
                Failure::User(format!("cannot write `{}`: {e}", p.display())),
                None,
            )
        }),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// A panic is a bug: say so the way compilers do, then let it end the process (exit code 101).
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        eprintln!("error: internal compiler error: nkc panicked");
        eprintln!("note: this is a bug in nkc; please report it with the kernel that caused it");
    }));
}
