//! The command line's arguments: the clap structs of `nkc` and of each subcommand, their value
//! parsers, and the options they turn into. Their doc comments are the help text.

use clap::{Parser, Subcommand, ValueEnum};
use nkc::driver::{self, ColorMode, Failure, UserCause, ValueError};
use nkc::pipeline::{self, PipelineMode, PrintAfter};
use nkc::run::Engine;
use std::path::PathBuf;

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
pub(crate) struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorMode::Auto, global = true)]
    pub(crate) color: ColorMode,
    /// How errors are printed: `human` (on standard error), or `json` (one JSON object per
    /// diagnostic, one per line, on standard output: code, severity, message, spans, notes,
    /// help).
    #[arg(long, value_enum, default_value_t = MessageFormat::Human, global = true)]
    pub(crate) message_format: MessageFormat,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// How diagnostics are printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MessageFormat {
    /// Rendered with the source, on standard error.
    Human,
    /// One JSON object per diagnostic, one per line, on standard output.
    Json,
}

/// The options of every command that compiles a kernel (not `sim`, whose input is compiled).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct CompileFlags {
    /// Print a pass's decision log on standard error (repeatable).
    #[arg(long = "log", value_enum)]
    pub(crate) log: Vec<LogKind>,
    #[command(flatten)]
    pub(crate) legality: LegalityCheck,
}

/// Whether the pipeliner's legality check runs (every command that pipelines a kernel).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct LegalityCheck {
    /// Skip the pipeliner's legality check (an escape hatch: an illegal schedule then runs).
    #[arg(long)]
    pub(crate) no_legality_check: bool,
}

/// How untyped (shape-generic) kernel parameters are specialised, and the input arrays.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct SpecArgs {
    /// The shape of an untyped parameter (repeatable); an `--input` array gives its own. A typed
    /// or scalar parameter, or a name that is no parameter, is an error.
    #[arg(long = "shape", value_name = "NAME=ROWSxCOLS", value_parser = driver::parse_shape)]
    pub(crate) shapes: Vec<(String, Vec<u64>)>,
    /// The dtype of untyped parameters: `--dtype bfloat16` for all of them, `--dtype
    /// NAME=bfloat16` for one (repeatable); float32 by default. A bfloat16 `--input` file makes
    /// its parameter bfloat16.
    #[arg(long = "dtype", value_name = "[NAME=]DTYPE", value_parser = parse_dtype)]
    pub(crate) dtypes: Vec<(Option<String>, DTypeArg)>,
    /// An input array for a parameter (repeatable): a C-order `.npy` of float32, or of bfloat16
    /// as 16-bit patterns (`<u2` or `|V2`, as ml_dtypes saves them). It gives the parameter's
    /// shape; `run`, `compare` and `suggest` also run the kernel on it (other parameters get
    /// seeded random values).
    #[arg(long = "input", value_name = "NAME=PATH.npy", value_parser = parse_input)]
    pub(crate) inputs: Vec<(String, PathBuf)>,
    /// The value of a scalar kernel parameter, `NAME=VALUE` (repeatable): a Python literal such
    /// as `1e-5`, `128`, `True`.
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = driver::parse_arg)]
    pub(crate) args: Vec<(String, String)>,
    /// The SPMD launch grid of a kernel that uses `nl.program_id`: one extent per axis, `2x4`
    /// as NKI's `kernel[2, 4](...)`. The programs run one after the other, as loops around the
    /// kernel's body.
    #[arg(long = "grid", value_name = "AxB", value_parser = driver::parse_grid)]
    pub(crate) grid: Option<driver::Grid>,
}

/// The options of a command that runs the whole pipeline on one kernel (`compile`, `run`): the
/// specialisation, the IR printed between passes, the decision logs and the legality check, in
/// that order in the help.
#[derive(clap::Args)]
pub(crate) struct PassArgs {
    #[command(flatten)]
    pub(crate) spec: SpecArgs,
    #[command(flatten)]
    pub(crate) print: PrintArgs,
    #[command(flatten)]
    pub(crate) flags: CompileFlags,
}

/// Printing the IR between passes (on standard error).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct PrintArgs {
    /// Print the IR after every pass, each block after a header line naming the pass.
    #[arg(long)]
    pub(crate) print_after_all: bool,
    /// Print the IR after this pass (repeatable); a name that is no pass gets the list.
    #[arg(long = "print-after", value_name = "PASS", value_parser = pipeline::parse_pass)]
    pub(crate) print_after: Vec<String>,
}

impl PrintArgs {
    pub(crate) fn print_after(self) -> PrintAfter {
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
pub(crate) enum DTypeArg {
    Float32,
    Bfloat16,
}

impl DTypeArg {
    pub(crate) fn dtype(self) -> penguin::DType {
        match self {
            DTypeArg::Float32 => penguin::DType::F32,
            DTypeArg::Bfloat16 => penguin::DType::Bf16,
        }
    }
}

/// Parses `--dtype`: `DTYPE` or `NAME=DTYPE`, a dtype being `float32` or `bfloat16`.
fn parse_dtype(s: &str) -> Result<(Option<String>, DTypeArg), ValueError> {
    let (name, dtype) = match s.split_once('=') {
        Some((n, d)) if !n.is_empty() => (Some(n.to_string()), d),
        Some(_) => return Err(ValueError::form("DTYPE or NAME=DTYPE", s)),
        None => (None, s),
    };
    let dtype = match dtype {
        "float32" | "f32" => DTypeArg::Float32,
        "bfloat16" | "bf16" => DTypeArg::Bfloat16,
        other => {
            return Err(ValueError::UnknownDtype {
                dtype: other.to_string(),
            })
        }
    };
    Ok((name, dtype))
}

impl SpecArgs {
    pub(crate) fn specialise(&self) -> Result<driver::Specialise, Failure> {
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
pub(crate) enum Command {
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

/// The kernel of a command that compiles one: its file, and which kernel of the file.
#[derive(clap::Args)]
pub(crate) struct KernelFile {
    #[arg(help = FILE_HELP)]
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) name: KernelName,
}

/// Which kernel of a file a command takes.
#[derive(clap::Args)]
pub(crate) struct KernelName {
    /// Which kernel of the file (needed when it defines several).
    #[arg(long, value_name = "NAME")]
    pub(crate) kernel: Option<String>,
}

/// The seed of the random inputs of a command that runs kernels.
#[derive(clap::Args)]
pub(crate) struct Seed {
    /// The seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
}

/// Whether the loops the annotated pipeliner extended are peeled.
#[derive(clap::Args)]
pub(crate) struct Peel {
    /// Peel the loops the annotated pipeliner extended: a physical prologue and epilogue
    /// beside a steady-state loop without guards, instead of one predicated loop.
    #[arg(long)]
    pub(crate) peel: bool,
}

// The arguments of `nkc check`.
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The kernel files (one or more): NKI-style Python source (`.nk`, `.py`), or Penguin IR
    /// text (`.pir`).
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    /// Check only this kernel (default: every kernel in the file).
    #[arg(long, value_name = "NAME")]
    pub(crate) kernel: Option<String>,
    /// Print the diagnostics as JSON lines on standard output (`--message-format json`).
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) spec: SpecArgs,
    #[command(flatten)]
    pub(crate) flags: CompileFlags,
}

// The arguments of `nkc compile`.
#[derive(clap::Args)]
pub(crate) struct CompileArgs {
    #[command(flatten)]
    pub(crate) target: KernelFile,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Emit::Penguin)]
    pub(crate) emit: Emit,
    /// Which pipelining path loops take (for `--emit bir|isa`).
    #[arg(long, value_enum, default_value_t = PipelineMode::Default)]
    pub(crate) pipeline: PipelineMode,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) peel: Peel,
    /// Print each pass's wall-clock time (verifier included) on standard error.
    #[arg(long)]
    pub(crate) time_passes: bool,
    #[command(flatten)]
    pub(crate) passes: PassArgs,
}

// The arguments of `nkc run`.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) target: KernelFile,
    /// What executes the kernel.
    #[arg(long, value_enum, default_value_t = Engine::Sim)]
    pub(crate) engine: Engine,
    /// Also run the interpreter on the kernel as written, and fail unless the outputs agree
    /// bit for bit.
    #[arg(long)]
    pub(crate) check: bool,
    /// Write the simulator's timeline (Chrome trace-event JSON, for Perfetto) to this file
    /// (`--engine sim` only: the interpreter has no clock).
    #[arg(long)]
    pub(crate) trace: Option<PathBuf>,
    /// Which pipelining path loops take.
    #[arg(long, value_enum, default_value_t = PipelineMode::Default)]
    pub(crate) pipeline: PipelineMode,
    #[command(flatten)]
    pub(crate) seed: Seed,
    /// Write each returned array to `DIR/NAME.npy` (float32 `<f4`, or bfloat16 as `<u2`
    /// patterns).
    #[arg(long = "output", value_name = "DIR")]
    pub(crate) output: Option<PathBuf>,
    /// Print one JSON object on standard output instead of a summary (an `error` object when
    /// the run fails).
    #[arg(long)]
    pub(crate) json: bool,
    /// Stop (error E0902) once the simulated clock passes this many cycles, or once more
    /// instructions than this have run (the interpreter: once the kernel has more
    /// instruction instances than this).
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    pub(crate) max_cycles: u64,
    #[command(flatten)]
    pub(crate) peel: Peel,
    #[command(flatten)]
    pub(crate) passes: PassArgs,
}

// The arguments of `nkc compare`.
#[derive(clap::Args)]
pub(crate) struct CompareArgs {
    /// The kernel files (one, or several for a suite's table).
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) name: KernelName,
    /// Print one JSON object keyed by path name (by file, then path, for several files; an
    /// `error` object when a single file fails).
    #[arg(long)]
    pub(crate) json: bool,
    /// Draw the paths' simulated timelines, stacked, as SVG in this file.
    #[arg(long)]
    pub(crate) svg: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) seed: Seed,
    /// Also run the annotated path peeled (a physical prologue and epilogue), beside the
    /// predicated one: cycles, instructions executed and program size of both.
    #[arg(long)]
    pub(crate) peel: bool,
    /// Stop each path's simulation (error E0902) past this many cycles.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    pub(crate) max_cycles: u64,
    #[command(flatten)]
    pub(crate) legality: LegalityCheck,
    #[command(flatten)]
    pub(crate) spec: SpecArgs,
}

// The arguments of `nkc suggest`.
#[derive(clap::Args)]
pub(crate) struct SuggestArgs {
    #[command(flatten)]
    pub(crate) target: KernelFile,
    /// Apply the diff to the file (only the annotations change).
    #[arg(long)]
    pub(crate) write: bool,
    /// Print one JSON object (per loop: the annotation, its cycles, the suggestion) instead
    /// of the report and the diff.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) seed: Seed,
    /// Stop each candidate's simulation (error E0902) past this many cycles.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    pub(crate) max_cycles: u64,
    #[command(flatten)]
    pub(crate) spec: SpecArgs,
}

// The arguments of `nkc sim`.
#[derive(clap::Args)]
pub(crate) struct SimArgs {
    /// The program: pseudo-ISA text (`.s`), in the form documented in `runtime-sim/src/text.rs`.
    #[arg(value_name = "PROGRAM.s")]
    pub(crate) program: PathBuf,
    /// Write a Chrome trace-event timeline (open it in Perfetto) to this file.
    #[arg(long)]
    pub(crate) trace: Option<PathBuf>,
    /// Print one JSON object on standard output instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// An input tensor, `NAME=PATH.npy` (repeatable); other inputs get random values.
    #[arg(long = "input", value_name = "NAME=PATH.npy", value_parser = parse_input)]
    pub(crate) inputs: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub(crate) seed: Seed,
    /// Write each output tensor to `DIR/NAME.npy`.
    #[arg(long = "output", value_name = "DIR")]
    pub(crate) output: Option<PathBuf>,
    /// Timing only: skip the arithmetic (outputs are zeros).
    #[arg(long)]
    pub(crate) no_numerics: bool,
    /// Stop (error E0902) once the simulated clock passes this many cycles, or once more
    /// instructions than this have run.
    #[arg(long, default_value_t = runtime_sim::sim::DEFAULT_MAX_CYCLES)]
    pub(crate) max_cycles: u64,
}

// The arguments of `nkc explain`.
#[derive(clap::Args)]
pub(crate) struct ExplainArgs {
    /// A diagnostic code, such as `E0205` (the `E` and leading zeros may be left out).
    pub(crate) code: String,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogKind {
    /// The annotated software pipeliner.
    Pipeliner,
    /// The backend's emergent pipelining heuristic.
    Backend,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Emit {
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

fn parse_input(s: &str) -> Result<(String, PathBuf), ValueError> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(ValueError::form("NAME=PATH.npy", s)),
    }
}
