//! The `nkc` command line: argument parsing, reading the files, printing what the commands
//! return (the commands themselves live in the library).
//!
//! Output conventions: what a command produces goes to standard output, written by [`out`], so
//! that a closed pipe (`nkc ... | head`) ends nkc quietly with exit code 0, as rustc, cargo and
//! ripgrep do, never as an internal error; diagnostics, logs and progress go to standard error
//! (or, with `--message-format json`, diagnostics to standard output as JSON lines).
//! Exit codes: 0 success, 1 an error in the kernel or its inputs, 2 a usage error (clap's),
//! 101 a bug in nkc.

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use nkc::cause::FilesFailed;
use nkc::compare::{self, CompareOptions, SuiteEntry};
use nkc::driver::{self, ColorMode, Failure, InternalCause, Source, UserCause};
use nkc::pipeline::{self, CompileOptions, Context, PipelineMode, PrintAfter};
use nkc::run::{self, Engine, RunOptions};
use nkc::sim::{self as simcmd, SimOptions};
use penguin::pipeline::{PipelineLog, PipelineOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The exit codes, in every `--help`.
const EXIT_CODES: &str =
    "Exit codes: 0 success; 1 an error in the kernel, its inputs or its files \
(diagnostics on standard error); 2 a usage error (an unknown option, a bad value); 101 a bug in \
nkc (an internal compiler error: please report it).";

#[derive(Parser)]
#[command(
    name = "nkc",
    version,
    about = "A compiler for NKI-style kernels, with a simulator of a Neuron-like core",
    after_help = EXIT_CODES
)]
struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorMode::Auto, global = true)]
    color: ColorMode,
    /// How errors are printed: `human` (on standard error), or `json` (one JSON object per
    /// diagnostic, one per line, on standard output: code, severity, message, spans, notes,
    /// help).
    #[arg(long, value_enum, default_value_t = MessageFormat::Human, global = true)]
    message_format: MessageFormat,
    #[command(subcommand)]
    command: Command,
}

/// How diagnostics are printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MessageFormat {
    /// Rendered with the source, on standard error.
    Human,
    /// One JSON object per diagnostic, one per line, on standard output.
    Json,
}

/// The options of every command that compiles a kernel (not `sim`, whose input is compiled).
#[derive(clap::Args, Clone, Default)]
struct CompileFlags {
    /// Print a pass's decision log on standard error (repeatable).
    #[arg(long = "log", value_enum)]
    log: Vec<LogKind>,
    /// Skip the pipeliner's legality check (an escape hatch: an illegal schedule then runs).
    #[arg(long)]
    no_legality_check: bool,
}

/// How untyped (shape-generic) kernel parameters are specialised, and the input arrays.
#[derive(clap::Args, Clone, Default)]
struct SpecArgs {
    /// The shape of an untyped parameter (repeatable); an `--input` array gives its own. A typed
    /// or scalar parameter, or a name that is no parameter, is an error.
    #[arg(long = "shape", value_name = "NAME=ROWSxCOLS", value_parser = driver::parse_shape)]
    shapes: Vec<(String, Vec<u64>)>,
    /// The dtype of untyped parameters: `--dtype bfloat16` for all of them, `--dtype
    /// NAME=bfloat16` for one (repeatable); float32 by default. A bfloat16 `--input` file makes
    /// its parameter bfloat16.
    #[arg(long = "dtype", value_name = "[NAME=]DTYPE", value_parser = parse_dtype)]
    dtypes: Vec<(Option<String>, DTypeArg)>,
    /// An input array for a parameter (repeatable): a C-order `.npy` of float32, or of bfloat16
    /// as 16-bit patterns (`<u2` or `|V2`, as ml_dtypes saves them). It gives the parameter's
    /// shape; `run`, `compare` and `suggest` also run the kernel on it (other parameters get
    /// seeded random values).
    #[arg(long = "input", value_name = "NAME=PATH.npy", value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// The value of a scalar kernel parameter, `NAME=VALUE` (repeatable): a Python literal such
    /// as `1e-5`, `128`, `True`.
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = driver::parse_arg)]
    args: Vec<(String, String)>,
    /// The SPMD launch grid of a kernel that uses `nl.program_id`: one extent per axis, `2x4`
    /// as NKI's `kernel[2, 4](...)`. The programs run one after the other, as loops around the
    /// kernel's body.
    #[arg(long = "grid", value_name = "AxB", value_parser = driver::parse_grid)]
    grid: Option<driver::Grid>,
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

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DTypeArg {
    Float32,
    Bfloat16,
}

impl DTypeArg {
    fn dtype(self) -> penguin::DType {
        match self {
            DTypeArg::Float32 => penguin::DType::F32,
            DTypeArg::Bfloat16 => penguin::DType::Bf16,
        }
    }
}

/// Parses `--dtype`: `DTYPE` or `NAME=DTYPE`, a dtype being `float32` or `bfloat16`.
fn parse_dtype(s: &str) -> Result<(Option<String>, DTypeArg), String> {
    let (name, dtype) = match s.split_once('=') {
        Some((n, d)) if !n.is_empty() => (Some(n.to_string()), d),
        Some(_) => return Err(format!("expected DTYPE or NAME=DTYPE, found `{s}`")),
        None => (None, s),
    };
    let dtype = match dtype {
        "float32" | "f32" => DTypeArg::Float32,
        "bfloat16" | "bf16" => DTypeArg::Bfloat16,
        other => {
            return Err(format!(
                "`{other}` is not a dtype nkc takes: float32 or bfloat16"
            ))
        }
    };
    Ok((name, dtype))
}

impl SpecArgs {
    fn specialise(&self) -> Result<driver::Specialise, Failure> {
        let mut all = None;
        let mut dtypes = Vec::new();
        for (name, d) in &self.dtypes {
            match name {
                Some(n) => dtypes.push((n.clone(), d.dtype())),
                None if all.is_some() => return Err(Failure::user(UserCause::DtypeAllTwice)),
                None => all = Some(d.dtype()),
            }
        }
        Ok(driver::Specialise {
            shapes: self.shapes.clone(),
            dtype: all,
            dtypes,
            args: self.args.clone(),
            grid: self.grid.as_ref().map(|g| g.0.clone()),
        })
    }
}

#[derive(Subcommand)]
enum Command {
    /// Check kernel files: exit 0 and silence when they are good, 1 with every diagnostic when
    /// they are not.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Compile a kernel and print an intermediate form (the Penguin IR by default).
    #[command(after_help = EXIT_CODES)]
    Compile(CompileArgs),
    /// Compile a kernel and run it: by default compiled by the backend and run on the simulator
    /// of the core (cycles, bounds, engines); `--engine interp` runs the reference interpreter.
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Compile and simulate a kernel on every pipelining path (`none`, `emergent`, `auto`, and
    /// `annotated` when the kernel is annotated; `annotated_peeled` with `--peel`), check each
    /// against the interpreter, and compare them side by side. Several files print the suite's
    /// table of cycles / lower bound.
    #[command(after_help = EXIT_CODES)]
    Compare(CompareArgs),
    /// Search, per loop, the pipelining annotation that runs fastest on the path `nkc run`
    /// takes (`default`), legal and bit-exact, and print it as a diff of the source. Only
    /// annotations the legality check accepts are tried.
    #[command(after_help = EXIT_CODES)]
    Suggest(SuggestArgs),
    /// Run a pseudo-ISA program (`.s`, as `nkc compile --emit isa` writes it) on the simulator
    /// of the Neuron-like core. A kernel (`.nk`) runs with `nkc run`.
    #[command(after_help = EXIT_CODES)]
    Sim(SimArgs),
    /// Print the long explanation of a diagnostic code (`nkc explain E0205`).
    #[command(after_help = EXIT_CODES)]
    Explain(ExplainArgs),
}

/// The help of a kernel file argument.
const FILE_HELP: &str = "The kernel file: NKI-style Python source (`.nk`, `.py`), or Penguin IR \
text (`.pir`, as `nkc compile --emit penguin` writes it)";

// The arguments of `nkc check`.
#[derive(clap::Args)]
struct CheckArgs {
    /// The kernel files (one or more): NKI-style Python source (`.nk`, `.py`), or Penguin IR
    /// text (`.pir`).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Check only this kernel (default: every kernel in the file).
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// Print the diagnostics as JSON lines on standard output (`--message-format json`).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    spec: SpecArgs,
    #[command(flatten)]
    flags: CompileFlags,
}

// The arguments of `nkc compile`.
#[derive(clap::Args)]
struct CompileArgs {
    #[arg(help = FILE_HELP)]
    file: PathBuf,
    /// Which kernel of the file (needed when it defines several).
    #[arg(long, value_name = "NAME")]
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
    #[command(flatten)]
    flags: CompileFlags,
}

// The arguments of `nkc run`.
#[derive(clap::Args)]
struct RunArgs {
    #[arg(help = FILE_HELP)]
    file: PathBuf,
    /// Which kernel of the file (needed when it defines several).
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// What executes the kernel.
    #[arg(long, value_enum, default_value_t = Engine::Sim)]
    engine: Engine,
    /// Also run the interpreter on the kernel as written, and fail unless the outputs agree
    /// bit for bit.
    #[arg(long)]
    check: bool,
    /// Write the simulator's timeline (Chrome trace-event JSON, for Perfetto) to this file
    /// (`--engine sim` only: the interpreter has no clock).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Which pipelining path loops take.
    #[arg(long, value_enum, default_value_t = PipelineMode::Default)]
    pipeline: PipelineMode,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write each returned array to `DIR/NAME.npy` (float32 `<f4`, or bfloat16 as `<u2`
    /// patterns).
    #[arg(long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Print one JSON object on standard output instead of a summary (an `error` object when
    /// the run fails).
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
    #[command(flatten)]
    flags: CompileFlags,
}

// The arguments of `nkc compare`.
#[derive(clap::Args)]
struct CompareArgs {
    /// The kernel files (one, or several for a suite's table).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Which kernel of the file (needed when it defines several).
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// Print one JSON object keyed by path name (by file, then path, for several files; an
    /// `error` object when a single file fails).
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
    /// Stop each path's simulation (error E0902) past this many cycles.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    max_cycles: u64,
    /// Skip the pipeliner's legality check (an escape hatch: an illegal schedule then runs).
    #[arg(long)]
    no_legality_check: bool,
    #[command(flatten)]
    spec: SpecArgs,
}

// The arguments of `nkc suggest`.
#[derive(clap::Args)]
struct SuggestArgs {
    #[arg(help = FILE_HELP)]
    file: PathBuf,
    /// Which kernel of the file (needed when it defines several).
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// Apply the diff to the file (only the annotations change).
    #[arg(long)]
    write: bool,
    /// Print one JSON object (per loop: the annotation, its cycles, the suggestion) instead
    /// of the report and the diff.
    #[arg(long)]
    json: bool,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop each candidate's simulation (error E0902) past this many cycles.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    max_cycles: u64,
    #[command(flatten)]
    spec: SpecArgs,
}

// The arguments of `nkc sim`.
#[derive(clap::Args)]
struct SimArgs {
    /// The program: pseudo-ISA text (`.s`), in the form documented in `runtime-sim/src/text.rs`.
    #[arg(value_name = "PROGRAM.s")]
    program: PathBuf,
    /// Write a Chrome trace-event timeline (open it in Perfetto) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print one JSON object on standard output instead of a summary.
    #[arg(long)]
    json: bool,
    /// An input tensor, `NAME=PATH.npy` (repeatable); other inputs get random values.
    #[arg(long = "input", value_name = "NAME=PATH.npy", value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write each output tensor to `DIR/NAME.npy`.
    #[arg(long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Timing only: skip the arithmetic (outputs are zeros).
    #[arg(long)]
    no_numerics: bool,
    /// Stop (error E0902) once the simulated clock passes this many cycles, or once more
    /// instructions than this have run.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    max_cycles: u64,
}

// The arguments of `nkc explain`.
#[derive(clap::Args)]
struct ExplainArgs {
    /// A diagnostic code, such as `E0205` (the `E` and leading zeros may be left out).
    code: String,
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
    let flags = match &cli.command {
        Command::Check(a) => a.flags.clone(),
        Command::Compile(a) => a.flags.clone(),
        Command::Run(a) => a.flags.clone(),
        Command::Compare(a) => CompileFlags {
            log: Vec::new(),
            no_legality_check: a.no_legality_check,
        },
        Command::Suggest(_) | Command::Sim(_) | Command::Explain(_) => CompileFlags::default(),
    };
    let popts = PipelineOptions {
        legality_check: !flags.no_legality_check,
    };
    let json_messages = cli.message_format == MessageFormat::Json
        || matches!(&cli.command, Command::Check(a) if a.json);
    let mut log = PipelineLog::default();
    let mut env = Env {
        log: &mut log,
        show_backend: flags.log.contains(&LogKind::Backend),
        color: cli.color,
        json_messages,
        worst: 0,
    };
    let result = execute(cli.command, &popts, &mut env);
    let worst = env.worst;
    if flags.log.contains(&LogKind::Pipeliner) {
        eprint!("{log}");
    }
    let code = match result {
        Ok(()) => 0,
        Err((failure, source)) => {
            report(&failure, source.as_ref(), cli.color, json_messages);
            failure.exit_code()
        }
    };
    ExitCode::from(code.max(worst) as u8)
}

type Outcome = Result<(), (Failure, Option<Source>)>;

/// What every command shares: the global options and the pipeliner's log.
struct Env<'a> {
    log: &'a mut PipelineLog,
    show_backend: bool,
    color: ColorMode,
    /// `--message-format json`: diagnostics as JSON lines on standard output.
    json_messages: bool,
    /// The highest exit code of failures already reported (several files of `check`).
    worst: i32,
}

/// Prints a failure: rendered on standard error, or as JSON lines on standard output.
fn report(failure: &Failure, source: Option<&Source>, color: ColorMode, json: bool) {
    if json {
        let mut text = String::new();
        for v in nkc::message_format::failure_json(failure, source) {
            text += &format!("{v}\n");
        }
        out(&text);
    } else {
        driver::report(failure, source, color);
    }
}

/// Writes command output to standard output. A closed pipe (`nkc ... | head`) is the reader's
/// choice, not an error: nkc stops quietly with exit code 0, as rustc, cargo and ripgrep do.
/// Any other write error is reported and exits with code 1.
fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

fn execute(command: Command, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    match command {
        Command::Check(a) => check_command(a, popts, env),
        Command::Compile(a) => compile_command(a, popts, env),
        Command::Run(a) => run_command(a, popts, env),
        Command::Suggest(a) => suggest(a),
        Command::Compare(a) => compare_command(a, popts, env),
        Command::Sim(a) => sim(a),
        Command::Explain(a) => explain(&a.code),
    }
}

/// A usage error (exit code 2), in clap's form: an option that means nothing with the others.
fn usage_error(msg: String) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, msg)
        .exit()
}

/// `nkc check FILE...`: each file's diagnostics, reported in file order; the command fails
/// with the worst exit code.
fn check_command(a: CheckArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    if a.flags.log.contains(&LogKind::Backend) {
        usage_error(
            "`--log backend` logs the backend's decisions, and `nkc check` stops before the \
             backend (after the pipeliner's legality check): use it with `nkc run` or `nkc \
             compile --emit isa`"
                .into(),
        );
    }
    let spec = a.spec.specialise().map_err(|f| (f, None))?;
    let count = a.files.len();
    for (k, file) in a.files.iter().enumerate() {
        let result = read_kernel(file).and_then(|src| {
            let specs = spec
                .specs(&src, a.kernel.as_deref(), &a.spec.inputs)
                .map_err(|f| (f, Some(src.clone())))?;
            pipeline::check(&src, a.kernel.as_deref(), &specs, popts, env.log)
                .map_err(|f| (f, Some(src)))
        });
        match result {
            Ok(()) => {}
            // The last file's failure is the command's.
            Err(e) if k + 1 == count => return Err(e),
            Err((f, src)) => {
                report(&f, src.as_ref(), env.color, env.json_messages);
                env.worst = env.worst.max(f.exit_code());
            }
        }
    }
    Ok(())
}

/// `nkc compile`: the options, then [`compile`], then the output.
fn compile_command(a: CompileArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    refuse_unused_compile_options(&a);
    refuse_inputs_as_outputs(a.output.as_deref().map(|o| ("-o", o)), &[&a.file])?;
    let src = read_kernel(&a.file)?;
    let specs = a
        .spec
        .specialise()
        .and_then(|s| s.specs(&src, a.kernel.as_deref(), &a.spec.inputs))
        .map_err(|f| (f, Some(src.clone())))?;
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

/// `nkc compile`: a usage error for an option that the `--emit` asked for makes meaningless
/// (`--emit penguin` runs no pass after lowering, `--emit pipelined` no backend), rather than
/// ignoring it silently. `--print-after` runs every pass, so it makes each of them meaningful.
fn refuse_unused_compile_options(a: &CompileArgs) {
    if a.print.print_after_all || !a.print.print_after.is_empty() {
        return;
    }
    let emit = a
        .emit
        .to_possible_value()
        .map_or(String::new(), |v| v.get_name().to_string());
    let backend = matches!(a.emit, Emit::Bir | Emit::Isa);
    let pipeliner = backend || matches!(a.emit, Emit::Pipelined);
    let unused = |option: &str, needs: &str| {
        usage_error(format!(
            "`{option}` means nothing with `--emit {emit}`, which {needs}: use it with `--emit \
             bir` or `--emit isa` (or `--print-after PASS`)"
        ))
    };
    if !backend && a.flags.log.contains(&LogKind::Backend) {
        unused("--log backend", "runs no backend");
    }
    if !backend && a.pipeline != PipelineMode::Default {
        unused(
            "--pipeline",
            "prints the annotated path whatever the mode (or no pipelining at all)",
        );
    }
    if !pipeliner {
        let runs = if matches!(a.emit, Emit::Ast) {
            "only parses the file"
        } else {
            "prints the kernel before the pipeliner runs"
        };
        if a.flags.log.contains(&LogKind::Pipeliner) {
            unused("--log pipeliner", runs);
        }
        if a.peel {
            unused("--peel", runs);
        }
        if a.flags.no_legality_check {
            unused("--no-legality-check", runs);
        }
    }
    if matches!(a.emit, Emit::Ast) && a.time_passes {
        unused("--time-passes", "runs no pass (it only parses the file)");
    }
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
            return Err(Failure::user(UserCause::NoSyntaxTree {
                file: src.display_name(),
            }));
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
        return Ok((text, cx.instrument.times));
    }
    cx.pipeline(&mut func)?;
    for note in &cx.notes {
        eprintln!("note: {note}");
    }
    let pipelined = penguin::write::write_function(&func);
    cx.prepare_backend(&mut func)?;
    if env.show_backend {
        for l in &cx.remarks {
            eprintln!("{l}");
        }
    }
    let compiled = cx.codegen(&func, Some(&src.text))?;
    let text = match emit {
        Emit::Ast | Emit::Penguin => text,
        Emit::Pipelined => pipelined,
        Emit::Bir => backend::codegen::bir::write_bir(&compiled.func, &compiled.bir),
        Emit::Isa => runtime_sim::text::print(&compiled.program),
    };
    Ok((text, cx.instrument.times))
}

/// `--json` of a command that failed: one JSON object on standard output, so that a script
/// reading it always gets one (`error`: the first message; `exit_code`; `diagnostics`: the
/// objects of `--message-format json`). The failure is reported on standard error as well.
fn json_error(failure: Failure, source: Option<Source>) -> (Failure, Option<Source>) {
    let diagnostics = nkc::message_format::failure_json(&failure, source.as_ref());
    let first = diagnostics
        .first()
        .and_then(|d| d["message"].as_str())
        .unwrap_or_default()
        .to_string();
    let v = serde_json::json!({
        "error": first,
        "exit_code": failure.exit_code(),
        "diagnostics": diagnostics,
    });
    out(&format!("{v}\n"));
    (failure, source)
}

/// `nkc run`: the options, the run, the report.
fn run_command(a: RunArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    if a.engine == Engine::Interp && a.trace.is_some() {
        usage_error(
            "`--trace` writes the simulator's timeline, and `--engine interp` has none: drop \
             `--trace`, or run on the simulator (`--engine sim`, the default)"
                .into(),
        );
    }
    let json = a.json && !env.json_messages;
    let fail = |f: Failure, s: Option<Source>| if json { json_error(f, s) } else { (f, s) };
    let specialise = a.spec.specialise().map_err(|f| fail(f, None))?;
    let opts = RunOptions {
        max_cycles: a.max_cycles,
        specialise,
        kernel: a.kernel,
        engine: a.engine,
        pipeline: a.pipeline,
        inputs: a.spec.inputs,
        seed: a.seed,
        output_dir: a.output,
        legality_check: popts.legality_check,
        check: a.check,
        trace: a.trace,
        timeline: false,
        peel: a.peel,
        print_after: a.print.print_after(),
    };
    let src = read_kernel(&a.file).map_err(|(f, s)| fail(f, s))?;
    let report = run::run(&src, &opts, env.log).map_err(|f| fail(f, Some(src)))?;
    if env.show_backend {
        for l in &report.backend_log {
            eprintln!("{l}");
        }
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    if a.json {
        out(&format!("{}\n", report.to_json()));
    } else {
        out(&report.to_text());
    }
    Ok(())
}

/// `nkc suggest`.
fn suggest(a: SuggestArgs) -> Outcome {
    let specialise = a.spec.specialise().map_err(|f| (f, None))?;
    let opts = nkc::suggest::SuggestOptions {
        kernel: a.kernel,
        seed: a.seed,
        specialise,
        inputs: a.spec.inputs,
        max_cycles: a.max_cycles,
    };
    let file = &a.file;
    let src = read_kernel(file)?;
    let s = nkc::suggest::suggest(&src, &opts).map_err(|f| (f, Some(src)))?;
    if a.json {
        out(&format!("{}\n", s.to_json(&file.display().to_string())));
    } else {
        out(&s.to_text(&file.display().to_string()));
    }
    if a.write && s.suggested != s.original {
        nkc::write_file::write_atomically(file, s.suggested.as_bytes())
            .map_err(|e| (Failure::user(UserCause::Other(e)), None))?;
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}

/// `nkc compare`: one file, or a suite.
fn compare_command(a: CompareArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    let json = a.json && !env.json_messages && a.files.len() == 1;
    let specialise =
        a.spec
            .specialise()
            .map_err(|f| if json { json_error(f, None) } else { (f, None) })?;
    let files: Vec<&std::path::Path> = a.files.iter().map(|f| f.as_path()).collect();
    refuse_inputs_as_outputs(a.svg.as_deref().map(|o| ("--svg", o)), &files)?;
    let opts = CompareOptions {
        kernel: a.kernel,
        seed: a.seed,
        specialise,
        legality_check: popts.legality_check,
        timelines: a.svg.is_some(),
        peel: a.peel,
        inputs: a.spec.inputs,
        max_cycles: a.max_cycles,
    };
    match a.files.as_slice() {
        [file] => compare_one(file, &opts, a.json, a.svg.as_deref()).map_err(|(f, s)| {
            if json {
                json_error(f, s)
            } else {
                (f, s)
            }
        }),
        files => compare_suite(files, &opts, a.json, a.svg.as_deref(), env),
    }
}

/// `nkc compare FILE`.
fn compare_one(file: &Path, opts: &CompareOptions, json: bool, svg: Option<&Path>) -> Outcome {
    let src = read_kernel(file)?;
    let c = compare::compare(&src, opts).map_err(|f| (f, Some(src)))?;
    if let Some(path) = svg {
        write_output(Some(path), &nkc::timeline_svg::render(&[&c]))?;
    }
    if json {
        out(&format!("{}\n", c.to_json()));
    } else {
        out(&c.to_text());
    }
    Ok(())
}

/// `nkc compare FILE...`: a suite. A broken file is reported and marked in the table; the others
/// still run, and the command fails at the end.
fn compare_suite(
    files: &[PathBuf],
    opts: &CompareOptions,
    json: bool,
    svg: Option<&Path>,
    env: &Env<'_>,
) -> Outcome {
    // Read every file first; the comparisons then run together ([`compare::compare_each`]),
    // and each failure is reported in file order.
    let sources: Vec<Result<Source, Failure>> = files
        .iter()
        .map(|f| read_kernel(f).map_err(|(e, _)| e))
        .collect();
    let readable: Vec<&Source> = sources.iter().filter_map(|s| s.as_ref().ok()).collect();
    let mut compared = compare::compare_each(&readable, opts).into_iter();
    let mut entries = Vec::new();
    for (file, src) in files.iter().zip(&sources) {
        entries.push(match src {
            Err(f) => {
                report(f, None, env.color, env.json_messages);
                SuiteEntry::failed(file.display().to_string(), f)
            }
            Ok(src) => match compared.next() {
                Some(Ok(c)) => SuiteEntry::Compared(c),
                Some(Err(f)) => {
                    report(&f, Some(src), env.color, env.json_messages);
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
        out(&format!("{}\n", compare::suite_json(&entries)));
    } else {
        out(&compare::suite_table(&entries));
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
    let src = read_program(&a.program)?;
    let report = simcmd::sim(&src, &opts).map_err(|f| (f, None))?;
    if a.json {
        out(&format!("{}\n", report.to_json()));
    } else {
        out(&report.to_text());
    }
    match report.races_failure() {
        Some(f) => Err((f, None)),
        None => Ok(()),
    }
}

/// `nkc explain CODE`: the long explanation of a diagnostic code.
fn explain(code: &str) -> Outcome {
    let normal = frontend::explain::normalise(code);
    match frontend::explain::explain(&normal) {
        Some(text) => {
            out(&format!("{normal}: {text}\n"));
            Ok(())
        }
        None => {
            let codes: Vec<&str> = frontend::explain::EXPLANATIONS
                .iter()
                .map(|(c, _)| *c)
                .collect();
            let cause = UserCause::UnknownCode {
                code: code.to_string(),
                close: driver::did_you_mean(&normal, codes.iter().copied()).map(|c| c.to_string()),
                first: codes.first().unwrap_or(&"").to_string(),
                last: codes.last().unwrap_or(&"").to_string(),
            };
            Err((Failure::user(cause), None))
        }
    }
}

/// The end of a suite: success, or one failure naming the files that failed (each was reported
/// already); a bug in nkc on any file makes it an internal error (exit code 101).
fn suite_outcome(entries: &[SuiteEntry]) -> Outcome {
    let failed: Vec<String> = entries
        .iter()
        .filter_map(|e| match e {
            SuiteEntry::Failed { file, .. } => Some(file.clone()),
            SuiteEntry::Compared(_) => None,
        })
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    let files = FilesFailed {
        failed,
        total: entries.len(),
    };
    let internal = entries
        .iter()
        .any(|e| matches!(e, SuiteEntry::Failed { internal: true, .. }));
    let failure = if internal {
        Failure::internal(InternalCause::FilesFailed(files))
    } else {
        Failure::user(UserCause::FilesFailed(files))
    };
    Err((failure, None))
}

/// A kernel file (source or Penguin IR). A pseudo-ISA program (`.s`) is refused with the
/// command that runs it.
fn read_kernel(file: &Path) -> Result<Source, (Failure, Option<Source>)> {
    if file.extension().is_some_and(|e| e == "s") {
        return Err((
            Failure::user(UserCause::IsProgram {
                file: file.to_path_buf(),
            }),
            None,
        ));
    }
    Source::read(file).map_err(|f| (f, None))
}

/// A pseudo-ISA program. A kernel file (`.nk`, `.py`, `.pir`) is refused with the commands that
/// run it.
fn read_program(file: &Path) -> Result<Source, (Failure, Option<Source>)> {
    if file
        .extension()
        .is_some_and(|e| e == "nk" || e == "py" || e == "pir")
    {
        return Err((
            Failure::user(UserCause::IsKernel {
                file: file.to_path_buf(),
            }),
            None,
        ));
    }
    Source::read(file).map_err(|f| (f, None))
}

/// An error when an output file is one of the inputs, before anything runs.
fn refuse_inputs_as_outputs<'a>(
    outputs: impl IntoIterator<Item = (&'a str, &'a std::path::Path)>,
    inputs: &[&std::path::Path],
) -> Outcome {
    nkc::write_file::refuse_inputs_as_outputs(outputs, inputs)
        .map_err(|e| (Failure::user(UserCause::Other(e)), None))
}

fn write_output(path: Option<&Path>, text: &str) -> Outcome {
    match path {
        Some(p) => nkc::write_file::write_atomically(p, text.as_bytes())
            .map_err(|e| (Failure::user(UserCause::Other(e)), None)),
        None => {
            out(text);
            Ok(())
        }
    }
}

/// A panic is a bug: say so the way compilers do, then let it end the process (exit code 101).
/// The one exception is a print to a closed pipe (`eprintln!` into `| head` after `2>&1`), which
/// is the reader's choice: nkc then stops quietly, as [`out`] does for standard output.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if msg.starts_with("failed printing to std") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
        eprintln!("error: internal compiler error: nkc panicked");
        eprintln!("note: this is a bug in nkc; please report it with the kernel that caused it");
    }));
}
