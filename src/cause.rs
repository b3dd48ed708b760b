//! Why a command failed, when the failure is not a diagnostic at the kernel's source: the typed
//! causes of [`crate::driver::Failure::User`] ([`UserCause`]) and
//! [`crate::driver::Failure::Internal`] ([`InternalCause`]).
//!
//! Each variant is one decision of the driver or a command (an option refused, an input that does
//! not fit, a check that fails), carrying its data; Rust code matches the variant and the
//! terminal and JSON messages get its [`fmt::Display`], the wording they have always had. Only text
//! made elsewhere stays text: an operating-system error, a `.npy` file's or a program text's
//! parse error, inside the variant that says what was being done; the `.npy` and output-file
//! helpers' errors are typed ([`UserCause::Npy`], [`UserCause::Write`]), their Display their own
//! sentences.
//!
//! Invariant: nothing here reads the file system or the IR; names and paths are the ones the user
//! sees, taken when the cause is made.

use penguin::listing::capped_list;
use penguin::pipeline::PipelineError;
use std::fmt;
use std::path::PathBuf;

/// Why a command failed in a way the user can fix (exit code 1).
#[derive(Debug)]
pub enum UserCause {
    /// The file cannot be read: the operating system's error.
    Read { path: PathBuf, error: String },
    /// The file is not UTF-8: the first bad byte.
    NotUtf8 { path: PathBuf, byte: usize },
    /// A `.pir` file holds another kernel than `--kernel` names.
    WrongKernel {
        file: String,
        holds: String,
        asked: String,
    },
    /// `--dtype NAME=...` twice for one name.
    DtypeTwice { name: String },
    /// `--dtype DTYPE` (every parameter) twice.
    DtypeAllTwice,
    /// `--shape NAME` twice for one name.
    ShapeTwice { name: String },
    /// Both `--shape` and `--input` for one name.
    ShapeAndInput { name: String },
    /// `--dtype NAME=...` for a name with no shape.
    DtypeWithoutShape { name: String },
    /// `flag` given for a `.pir` file.
    NotForPenguin { flag: &'static str, file: String },
    /// `--input NAME` twice.
    InputTwice {
        name: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// `--input NAME` names no parameter of the kernel.
    NotAParameter {
        name: String,
        kernel: String,
        params: Vec<String>,
    },
    /// An `--input` array's shape is not the parameter's.
    InputShape {
        name: String,
        path: PathBuf,
        got: Vec<usize>,
        kernel: String,
        want: Vec<usize>,
    },
    /// A pseudo-ISA program's syntax error: the parser's message at its line and column.
    ProgramSyntax {
        file: String,
        line: u32,
        col: u32,
        message: String,
    },
    /// `--input NAME` names no input of the pseudo-ISA program.
    NotAProgramInput { name: String, inputs: Vec<String> },
    /// An `--input` array's shape is not the program's.
    ProgramInputShape {
        name: String,
        path: PathBuf,
        got: Vec<usize>,
        want: Vec<usize>,
    },
    /// The simulator refuses the pseudo-ISA program.
    ProgramRejected {
        file: String,
        error: runtime_sim::sim::SimError,
    },
    /// The pseudo-ISA program has data races (each rendered).
    ProgramRaces { program: String, races: Vec<String> },
    /// The output directory cannot be created: the operating system's error.
    CreateDir { dir: PathBuf, error: String },
    /// `--emit ast` on a `.pir` file.
    NoSyntaxTree { file: String },
    /// A pseudo-ISA program given as a kernel.
    IsProgram { file: PathBuf },
    /// A kernel given as a pseudo-ISA program.
    IsKernel { file: PathBuf },
    /// `nkc explain CODE` with no such code: the closest code, and the range of codes.
    UnknownCode {
        code: String,
        close: Option<String>,
        first: String,
        last: String,
    },
    /// Files of a suite failed (each reported already).
    FilesFailed(FilesFailed),
    /// `--check` on a path whose pipelining changed the result with the legality check off.
    CheckUnchecked {
        head: CheckHead,
        why: Option<String>,
    },
    /// `nkc suggest`: a statement of the loop has no call to carry `stage_id`.
    NoStageCall,
    /// One path of `nkc compare` failed.
    OnPath { path: String, cause: Box<UserCause> },
    /// A `.npy` file not read or written (its error is its own sentence).
    Npy(crate::npy::NpyError),
    /// An output file not written, or one that is an input (its error is its own sentence).
    Write(crate::write_file::WriteError),
}

/// The files of a suite that failed, of `total`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilesFailed {
    pub failed: Vec<String>,
    pub total: usize,
}

impl fmt::Display for FilesFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of the {} files failed: {}",
            self.failed.len(),
            self.total,
            capped_list(&self.failed, ", ")
        )
    }
}

/// The start of a `--check` mismatch: output `output` of `path` (`the simulated program on
/// `--pipeline default``) differs from the kernel as written, `difference` first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckHead {
    pub output: String,
    pub path: String,
    pub difference: String,
}

impl fmt::Display for CheckHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--check: output `{}` of {} differs from the kernel as written: {}",
            self.output, self.path, self.difference
        )
    }
}

/// ` (interpreted, the pipelined kernel stops: ...)`, or nothing.
fn stops(why: &Option<String>) -> String {
    why.as_ref().map_or_else(String::new, |e| {
        format!(" (interpreted, the pipelined kernel stops: {e})")
    })
}

impl fmt::Display for UserCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use UserCause as U;
        match self {
            U::Read { .. }
            | U::NotUtf8 { .. }
            | U::WrongKernel { .. }
            | U::CreateDir { .. }
            | U::NoSyntaxTree { .. }
            | U::IsProgram { .. }
            | U::IsKernel { .. }
            | U::Npy(..)
            | U::Write(..) => fmt_files(self, f),
            U::DtypeTwice { .. }
            | U::DtypeAllTwice
            | U::ShapeTwice { .. }
            | U::ShapeAndInput { .. }
            | U::DtypeWithoutShape { .. }
            | U::NotForPenguin { .. }
            | U::InputTwice { .. }
            | U::NotAParameter { .. }
            | U::InputShape { .. }
            | U::UnknownCode { .. } => fmt_options(self, f),
            U::ProgramSyntax { .. }
            | U::NotAProgramInput { .. }
            | U::ProgramInputShape { .. }
            | U::ProgramRejected { .. }
            | U::ProgramRaces { .. } => fmt_program(self, f),
            U::FilesFailed(..) | U::CheckUnchecked { .. } | U::NoStageCall | U::OnPath { .. } => {
                fmt_runs(self, f)
            }
        }
    }
}

/// The causes about files: one not read, not written, or of the wrong kind.
fn fmt_files(c: &UserCause, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use UserCause as U;
    match c {
        U::Read { path, error } => write!(f, "cannot read `{}`: {error}", path.display()),
        U::NotUtf8 { path, byte } => {
            write!(f, "`{}` is not valid UTF-8 (byte {byte})", path.display())
        }
        U::WrongKernel { file, holds, asked } => {
            write!(f, "`{file}` holds the kernel `{holds}`, not `{asked}`")
        }
        U::CreateDir { dir, error } => write!(
            f,
            "cannot create output directory `{}`: {error}",
            dir.display()
        ),
        U::NoSyntaxTree { file } => write!(
            f,
            "`{file}` is Penguin IR: it has no syntax tree (`--emit ast` takes a `.nk` file)"
        ),
        U::IsProgram { file } => write!(
            f,
            "`{0}` is a pseudo-ISA program (`.s`), not a kernel: run it with `nkc sim {0}`",
            file.display()
        ),
        U::IsKernel { file } => write!(
            f,
            "`{0}` is a kernel, not a pseudo-ISA program (`.s`): run it with `nkc run {0}` (or compile it with `nkc compile {0} --emit isa -o prog.s`, then `nkc sim prog.s`)",
            file.display()
        ),
        U::Npy(e) => write!(f, "{e}"),
        U::Write(e) => write!(f, "{e}"),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The causes about options: given twice, for the wrong parameter, or of the wrong shape.
fn fmt_options(c: &UserCause, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use UserCause as U;
    match c {
        U::DtypeTwice { name } => write!(
            f,
            "`--dtype {name}=...` is given twice; give each dtype at most once"
        ),
        U::DtypeAllTwice => f.write_str(
            "`--dtype DTYPE` (every untyped parameter) is given twice; give it once, or name a parameter: `--dtype NAME=DTYPE`",
        ),
        U::ShapeTwice { name } => write!(
            f,
            "`--shape {name}` is given twice; give each shape at most once"
        ),
        U::ShapeAndInput { name } => write!(
            f,
            "`{name}` has both `--shape` and `--input`; the input's shape is its shape, drop `--shape {name}`"
        ),
        U::DtypeWithoutShape { name } => write!(
            f,
            "`--dtype {name}=...` gives a dtype but no shape: add `--shape {name}=ROWSxCOLS` or `--input {name}=FILE.npy`"
        ),
        U::NotForPenguin { flag, file } => write!(
            f,
            "`{flag}` does not apply to `{file}`: Penguin IR text has concrete shapes and dtypes"
        ),
        U::InputTwice {
            name,
            first,
            second,
        } => write!(
            f,
            "`--input {name}` is given twice (`{}` and `{}`); give each input at most once",
            first.display(),
            second.display()
        ),
        U::NotAParameter {
            name,
            kernel,
            params,
        } => write!(
            f,
            "`{name}` is not a parameter of `{kernel}`; its parameters are: {}",
            capped_list(params, ", ")
        ),
        U::InputShape {
            name,
            path,
            got,
            kernel,
            want,
        } => write!(
            f,
            "input `{name}` from `{}` has shape {got:?}, but `{kernel}` declares `{name}` as {want:?}",
            path.display()
        ),
        U::UnknownCode {
            code,
            close,
            first,
            last,
        } => {
            write!(f, "`{code}` is not a diagnostic code of nkc")?;
            if let Some(close) = close {
                write!(f, "\n  = help: did you mean `{close}`?")?;
            }
            write!(
                f,
                "\n  = note: the codes run from {first} to {last}; `nkc check` prints them in brackets (`error[E0205]`)"
            )
        }
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The causes about a pseudo-ISA program (`nkc sim`): its text, its inputs, its races.
fn fmt_program(c: &UserCause, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use UserCause as U;
    match c {
        U::ProgramSyntax {
            file,
            line,
            col,
            message,
        } => write!(f, "{file}:{line}:{col}: {message}"),
        U::NotAProgramInput { name, inputs } => write!(
            f,
            "`{name}` is not an input tensor of the program; its inputs are: {}",
            capped_list(inputs, ", ")
        ),
        U::ProgramInputShape {
            name,
            path,
            got,
            want,
        } => write!(
            f,
            "input `{name}` from `{}` has shape {got:?}, but the program declares {want:?}",
            path.display()
        ),
        U::ProgramRejected { file, error } => write!(f, "{file}: {error}"),
        U::ProgramRaces { program, races } => write!(
            f,
            "{program}: {} data race{} (unsynchronised accesses between engines):\n{}",
            races.len(),
            if races.len() == 1 { "" } else { "s" },
            capped_list(races.iter().map(|r| format!("  {r}")), "\n")
        ),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The causes about runs: a suite's failed files, a check, a suggestion, a path of a
/// comparison.
fn fmt_runs(c: &UserCause, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use UserCause as U;
    match c {
        U::FilesFailed(files) => write!(f, "{files}"),
        U::CheckUnchecked { head, why } => write!(
            f,
            "{head}; the pipelined kernel differs too{}: the pipelining changed the result, and its legality check was skipped (--no-legality-check)",
            stops(why)
        ),
        U::NoStageCall => f.write_str("a statement of the loop has no call to carry stage_id"),
        U::OnPath { path, cause } => write!(f, "path `{path}`: {cause}"),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// Why a command failed because of a bug in nkc (exit code 101).
#[derive(Debug)]
pub enum InternalCause {
    /// The pipeliner's internal error.
    Pipeliner(Box<PipelineError>),
    /// The backend's internal error.
    Backend(Box<backend::BackendError>),
    /// A pass (`after`) left Penguin IR that does not verify.
    InvalidPenguin {
        after: String,
        function: String,
        errors: Vec<penguin::verify::VerifierError>,
    },
    /// The compiled program has data races (each rendered).
    Races(Vec<String>),
    /// `--check`: the checked path gives another number of outputs.
    CheckOutputCount {
        path: String,
        got: usize,
        want: usize,
        declared: usize,
    },
    /// `--check`: the backend changed the result (the pipelined kernel interprets to the bits
    /// of the kernel as written).
    CheckBackendChanged { head: CheckHead },
    /// `--check`: the pipelining changed the result although its legality check accepted it.
    CheckLegalityMissed {
        head: CheckHead,
        why: Option<String>,
    },
    /// The interpreter failed on the kernel.
    Interpreter(penguin::interp::InterpError),
    /// The simulator rejected the compiled program.
    SimRejected(runtime_sim::sim::SimError),
    /// `nkc compare` compared nothing.
    NoComparison,
    /// `nkc suggest`: the kernel as given does not run on `on`.
    DoesNotRun { iv: String, on: &'static str },
    /// `nkc suggest`: the kernel runs on `mode` but does not match the interpreter, or races.
    NotBitExact { mode: &'static str },
    /// `nkc suggest`: the kernel is gone from the edited source.
    KernelVanished { name: String },
    /// `nkc suggest` lost track of a loop.
    LostLoop,
    /// Files of a suite failed, one with an internal error.
    FilesFailed(FilesFailed),
    /// One path of `nkc compare` failed.
    OnPath {
        path: String,
        cause: Box<InternalCause>,
    },
}

impl fmt::Display for InternalCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use InternalCause as I;
        match self {
            I::Pipeliner(e) => {
                let d = e.to_diagnostic();
                f.write_str(&d.message)?;
                for n in &d.notes {
                    write!(f, "\n{n}")?;
                }
                Ok(())
            }
            I::Backend(e) => f.write_str(&e.report()),
            I::InvalidPenguin {
                after,
                function,
                errors,
            } => write!(
                f,
                "{after} produced invalid Penguin IR for `{function}`:\n{}",
                capped_list(errors.iter().map(|e| format!("  {e}")), "\n")
            ),
            I::Races(races) => write!(
                f,
                "the compiled program has {} data race(s):\n{}",
                races.len(),
                capped_list(races.iter().map(|x| format!("  {x}")), "\n")
            ),
            I::CheckOutputCount {
                path,
                got,
                want,
                declared,
            } => write!(
                f,
                "--check: {path} gives {got} output(s), but the kernel as written gives {want} (and declares {declared})"
            ),
            I::CheckBackendChanged { head } => write!(
                f,
                "{head}; the pipelined kernel interprets to the bits of the kernel as written, so the backend changed the result"
            ),
            I::CheckLegalityMissed { head, why } => write!(
                f,
                "{head}; the pipelined kernel differs too{}, although its legality check accepted it",
                stops(why)
            ),
            I::Interpreter(e) => write!(f, "the interpreter failed: {e}"),
            I::SimRejected(e) => write!(f, "the simulator rejected the compiled program: {e}"),
            I::NoComparison => f.write_str("no comparison"),
            I::DoesNotRun { iv, on } => {
                write!(f, "loop `{iv}`: the kernel as given does not run on `{on}`")
            }
            I::NotBitExact { mode } => write!(
                f,
                "the kernel runs on `{mode}` but does not match the interpreter bit for bit, or races"
            ),
            I::KernelVanished { name } => write!(f, "kernel `{name}` vanished from the source"),
            I::LostLoop => f.write_str("suggest lost track of a loop"),
            I::FilesFailed(files) => write!(f, "{files}"),
            I::OnPath { path, cause } => write!(f, "path `{path}`: {cause}"),
        }
    }
}
