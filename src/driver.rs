//! What every command shares around the compile pipeline (`crate::pipeline`): read a kernel file
//! (kernel source, or Penguin IR text for a `.pir` file: [`read_penguin`]), run the front end,
//! verify the IR, turn pipeliner and backend errors into failures, and report failures.
//!
//! Failures are of three kinds ([`Failure`]): diagnostics in the kernel's source (exit code 1),
//! other user errors such as a missing file or a bad `.npy` input (exit code 1), and internal
//! errors, which are bugs in nkc (exit code 101, like a panic). Diagnostics become codespan output
//! only here, at the edge.

pub use crate::cause::{CheckHead, FilesFailed, InternalCause, UserCause};
use crate::error::RunError;
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use frontend::diagnostic::{self, Diagnostic, Error};
use penguin::listing::capped_list;
use penguin::pipeline::PipelineError;
use penguin::Function;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// A kernel file read into memory.
#[derive(Clone, Debug)]
pub struct Source {
    pub path: PathBuf,
    pub text: String,
}

impl Source {
    pub fn read(path: &Path) -> Result<Source, Failure> {
        let bytes = std::fs::read(path).map_err(|e| {
            Failure::user(UserCause::Read {
                path: path.to_path_buf(),
                error: e.to_string(),
            })
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            Failure::user(UserCause::NotUtf8 {
                path: path.to_path_buf(),
                byte: e.utf8_error().valid_up_to(),
            })
        })?;
        Ok(Source {
            path: path.to_path_buf(),
            text,
        })
    }

    /// Whether the file holds Penguin IR text (a `.pir` file) rather than kernel source.
    pub fn is_penguin(&self) -> bool {
        self.path.extension().is_some_and(|e| e == "pir")
    }

    /// The name diagnostics show for the file.
    pub fn display_name(&self) -> String {
        self.path.display().to_string()
    }
}

/// Why a command failed.
#[derive(Debug)]
pub enum Failure {
    /// Errors in the kernel's source.
    Diagnostics(Vec<Error>),
    /// Any other error the user can fix.
    User(Box<UserCause>),
    /// An error of a command-line option about the kernel (a `--kernel` or `--shape` name that
    /// the file does not define): a diagnostic with no place in the file, printed without a
    /// snippet (its code may be empty).
    Unplaced(Box<Diagnostic>),
    /// A bug in nkc.
    Internal(Box<InternalCause>),
}

impl Failure {
    /// An error the user can fix, for `cause`.
    pub fn user(cause: UserCause) -> Failure {
        Failure::User(Box::new(cause))
    }

    /// A bug in nkc, for `cause`.
    pub fn internal(cause: InternalCause) -> Failure {
        Failure::Internal(Box::new(cause))
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Diagnostics(_) | Failure::User(_) | Failure::Unplaced(_) => 1,
            Failure::Internal(_) => 101,
        }
    }
}

/// When diagnostics are coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorMode {
    /// Colour when standard error is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

/// Prints a failure on standard error.
pub fn report(failure: &Failure, source: Option<&Source>, color: ColorMode) {
    match failure {
        Failure::Diagnostics(errors) => match source {
            Some(src) => emit_diagnostics(src, errors, color),
            None => {
                for e in errors.iter().take(diagnostic::MAX_DIAGNOSTICS) {
                    eprintln!("error[{}]: {}", e.code, printable(&e.message));
                    for n in &e.notes {
                        eprintln!("  = {}", printable(n));
                    }
                }
                if errors.len() > diagnostic::MAX_DIAGNOSTICS {
                    eprintln!("note: {}", diagnostic::aborting_note(errors.len()));
                }
            }
        },
        Failure::User(cause) => eprintln!("error: {}", printable(&cause.to_string())),
        Failure::Unplaced(d) => {
            match d.code {
                "" => eprintln!("error: {}", printable(&d.message)),
                code => eprintln!("error[{code}]: {}", printable(&d.message)),
            }
            for n in &d.notes {
                eprintln!("  = {}", printable(n));
            }
        }
        Failure::Internal(cause) => {
            eprintln!(
                "error: internal compiler error: {}",
                printable(&cause.to_string())
            );
            eprintln!(
                "note: this is a bug in nkc; please report it with the kernel that caused it"
            );
        }
    }
}

/// A message as it may reach a terminal: control characters other than a line break or a tab
/// (a NUL byte quoted from a program, an escape sequence in a file name) are escaped the way the
/// front end writes them (`\0`, `\u{1b}`).
pub fn printable(msg: &str) -> String {
    msg.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Renders diagnostics against their source on standard error.
pub fn emit_diagnostics(source: &Source, errors: &[Error], color: ColorMode) {
    let choice = match color {
        ColorMode::Always => ColorChoice::Always,
        ColorMode::Never => ColorChoice::Never,
        ColorMode::Auto if std::io::stderr().is_terminal() => ColorChoice::Auto,
        ColorMode::Auto => ColorChoice::Never,
    };
    let mut stream = StandardStream::stderr(choice);
    // A failure to write to stderr leaves nothing better to report it on.
    let _ = diagnostic::render(&mut stream, &source.display_name(), &source.text, errors);
}

/// The reads of HBM scratch that certainly find elements nothing wrote
/// ([`penguin::uninit`]), as the diagnostic the interpreter gives when it runs into one (E0900).
pub fn unwritten_scratch_reads(func: &Function) -> Vec<Error> {
    penguin::uninit::unwritten_scratch_reads(func)
        .into_iter()
        .filter_map(|u| {
            let span = func.inst_spans.get(u.inst).copied().flatten()?;
            Some(
                RunError::UnwrittenRead {
                    tensor: func.tensors[u.tensor].name.clone(),
                    at: span.range(),
                    element: Some(u.element),
                    detail: None,
                }
                .to_diagnostic(),
            )
        })
        .collect()
}

/// Pipeliner errors as a failure: diagnostics, or an internal error if any is a bug of nkc.
pub fn pipeline_failure(errors: Vec<PipelineError>) -> Failure {
    if let Some(e) = errors.iter().find(|e| e.is_internal()) {
        return Failure::internal(InternalCause::Pipeliner(Box::new(e.clone())));
    }
    Failure::Diagnostics(errors.iter().map(PipelineError::to_diagnostic).collect())
}

/// The syntax tree of the file, or its syntax errors.
pub fn parse(source: &Source) -> Result<frontend::ast::Module, Failure> {
    let (module, errors) = frontend::parse(&source.text);
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(Failure::Diagnostics(errors))
    }
}

/// The front end for one kernel, then the verifier on its Penguin IR. A `.pir` file is read as
/// Penguin IR text instead ([`read_penguin`]).
pub fn compile(source: &Source, kernel: Option<&str>) -> Result<Function, Failure> {
    compile_with(source, kernel, &frontend::Specs::new())
}

/// [`compile`], with the kernel's untyped parameters specialised for `specs`.
pub fn compile_with(
    source: &Source,
    kernel: Option<&str>,
    specs: &frontend::Specs,
) -> Result<Function, Failure> {
    if source.is_penguin() {
        return read_penguin(source, kernel);
    }
    check_kernel_option(source, kernel)?;
    // Imports of the kernel's package resolve from its file's directory.
    frontend::set_kernel_file(&source.path, source.text.len());
    let func = frontend::compile_with(&source.text, kernel, specs).map_err(Failure::Diagnostics)?;
    verify(&func, "lowering")?;
    Ok(func)
}

/// A `.pir` file: its Penguin IR text read ([`penguin::parse_function`]; a syntax error is
/// E0050 at its line and column) and verified with the machine's limits (a violated invariant or
/// a tensor too large for its memory is E0051, the user's: the text came from the user), then
/// looked at for reads of memory nothing wrote ([`penguin::uninit`] over every tensor but the
/// inputs: E0051 at the instruction, on every command, so that no path runs on what an
/// uninitialised buffer happens to hold).
/// `kernel`, when given, must be the function's name. Its shapes are concrete, so `--shape` and
/// `--dtype` do not apply.
pub fn read_penguin(source: &Source, kernel: Option<&str>) -> Result<Function, Failure> {
    let text = &source.text;
    let (func, inst_at) = penguin::parse::parse_function_located(text).map_err(|e| {
        let at = byte_offset(text, e.line, e.col);
        let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
        Failure::Diagnostics(vec![RunError::PenguinSyntax {
            message: e.message.clone(),
            at: at..end,
        }
        .to_diagnostic()])
    })?;
    if let Err(errors) = penguin::verify_limits::verify_input(&func) {
        return Err(Failure::Diagnostics(vec![RunError::PenguinInvalid {
            function: func.name.clone(),
            errors: errors.iter().map(|e| e.to_string()).collect(),
        }
        .to_diagnostic()]));
    }
    let unwritten: Vec<Error> =
        penguin::uninit::unwritten_reads(&func, penguin::uninit::Scope::AllButInputs)
            .into_iter()
            .map(|u| {
                let at = inst_at
                    .get(u.inst.as_u32() as usize)
                    .map_or(0..0, |&(line, col)| {
                        let start = byte_offset(text, line, col);
                        let end = text[start..].find('\n').map_or(text.len(), |n| start + n);
                        start..end
                    });
                RunError::PenguinUnwrittenRead {
                    function: func.name.clone(),
                    tensor: func.tensors[u.tensor].name.clone(),
                    at,
                    element: u.element,
                }
                .to_diagnostic()
            })
            .collect();
    if !unwritten.is_empty() {
        return Err(Failure::Diagnostics(unwritten));
    }
    if let Some(k) = kernel.filter(|k| *k != func.name) {
        return Err(Failure::user(UserCause::WrongKernel {
            file: source.display_name(),
            holds: func.name.clone(),
            asked: k.to_string(),
        }));
    }
    Ok(func)
}

/// The byte offset of 1-based `line` and character column `col` in `text` (clamped to its end).
fn byte_offset(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = &text[start.min(text.len())..];
    let in_line = rest
        .char_indices()
        .take_while(|(_, c)| *c != '\n')
        .nth(col.saturating_sub(1))
        .map_or_else(|| rest.find('\n').unwrap_or(rest.len()), |(i, _)| i);
    (start + in_line).min(text.len())
}

/// A backend error as a failure: an internal error, or a diagnostic at the kernel's source.
pub fn backend_failure(e: backend::BackendError) -> Failure {
    if e.is_internal() {
        return Failure::internal(InternalCause::Backend(Box::new(e)));
    }
    Failure::Diagnostics(vec![e.to_diagnostic()])
}

/// How a command specialises a kernel's untyped parameters: `--shape NAME=ROWSxCOLS` (repeatable),
/// `--dtype DTYPE` (every untyped parameter; float32 by default) and `--dtype NAME=DTYPE` (one
/// parameter), and the shapes (and, for a bfloat16 `.npy`, the dtype) of the arrays given with
/// `--input`.
#[derive(Clone, Debug, Default)]
pub struct Specialise {
    pub shapes: Vec<(String, Vec<u64>)>,
    /// `--dtype DTYPE`: every untyped parameter without a dtype of its own.
    pub dtype: Option<penguin::DType>,
    /// `--dtype NAME=DTYPE`: one parameter's.
    pub dtypes: Vec<(String, penguin::DType)>,
    /// `--arg NAME=VALUE`: the values of scalar parameters.
    pub args: Vec<(String, String)>,
    /// `--grid AxB`: the SPMD launch grid, one extent per axis.
    pub grid: Option<Vec<u64>>,
}

/// Why the value of a command-line option does not parse (`--arg`, `--shape`, `--grid`,
/// `--dtype`, `--input`); clap shows the Display text after the option's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// `text` is not of the option's form (`form`, such as `NAME=VALUE`).
    #[error("expected {form}, found `{text}`")]
    Form { form: &'static str, text: String },
    #[error("a launch grid has at most {max} axes, found {axes} in `{text}`")]
    GridAxes {
        max: usize,
        axes: usize,
        text: String,
    },
    #[error("every axis of a launch grid has at least one program, found `{text}`")]
    EmptyGridAxis { text: String },
    #[error("`{text}` launches {programs} programs; nkc runs at most {MAX_GRID_PROGRAMS}")]
    GridPrograms { text: String, programs: u64 },
    /// NKI's spelling of a grid (`2,4`, `[2, 4]`); `suggested` is the `x` form.
    #[error(
        "expected the extents of the grid separated by `x`, found `{text}`; did you mean `--grid {suggested}`?"
    )]
    GridSeparator { text: String, suggested: String },
    #[error("`{dtype}` is not a dtype nkc takes: float32 or bfloat16")]
    UnknownDtype { dtype: String },
}

impl ValueError {
    /// `text` is not of the form `form`.
    pub fn form(form: &'static str, text: &str) -> ValueError {
        ValueError::Form {
            form,
            text: text.to_string(),
        }
    }
}

/// `NAME=VALUE` of `--arg`.
pub fn parse_arg(text: &str) -> Result<(String, String), ValueError> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(ValueError::form("NAME=VALUE", text)),
    }
}

impl Specialise {
    /// The shape and dtype of every parameter named by `--shape` or `--input`, after checking
    /// every name against the kernel ([`Specialise::validate`]). A name given by both, or twice,
    /// is an error, and so is a dtype for a parameter with no shape.
    pub fn specs(
        &self,
        source: &Source,
        kernel: Option<&str>,
        inputs: &[(String, PathBuf)],
    ) -> Result<frontend::Specs, Failure> {
        unique_inputs(inputs)?;
        self.validate(source, kernel, inputs)?;
        let dtype_of = |name: &str, file: Option<penguin::DType>| {
            let own = self.dtypes.iter().find(|(n, _)| n == name).map(|(_, d)| *d);
            own.or(file).or(self.dtype).unwrap_or(penguin::DType::F32)
        };
        let mut specs = frontend::Specs::new();
        specs.grid = self.grid.clone();
        for (k, (name, _)) in self.dtypes.iter().enumerate() {
            if self.dtypes[..k].iter().any(|(n, _)| n == name) {
                return Err(Failure::user(UserCause::DtypeTwice { name: name.clone() }));
            }
        }
        for (name, value) in &self.args {
            specs
                .args
                .insert(name.clone(), frontend::ScalarArg::parse(value));
        }
        for (name, shape) in &self.shapes {
            let spec = frontend::ParamSpec {
                dtype: dtype_of(name, None),
                shape: shape.clone(),
            };
            if specs.insert(name.clone(), spec).is_some() {
                return Err(Failure::user(UserCause::ShapeTwice { name: name.clone() }));
            }
        }
        for (name, path) in inputs {
            if specs.contains_key(name) {
                return Err(Failure::user(UserCause::ShapeAndInput {
                    name: name.clone(),
                }));
            }
            let (array, file_dtype) =
                crate::npy::read_npy_typed(path).map_err(|e| Failure::user(UserCause::Npy(e)))?;
            let shape = array.shape.iter().map(|&d| d as u64).collect();
            let dtype = dtype_of(
                name,
                Some(file_dtype).filter(|d| *d == penguin::DType::Bf16),
            );
            specs.insert(name.clone(), frontend::ParamSpec { dtype, shape });
        }
        for (name, _) in &self.dtypes {
            if !specs.contains_key(name) {
                return Err(Failure::user(UserCause::DtypeWithoutShape {
                    name: name.clone(),
                }));
            }
        }
        Ok(specs)
    }

    /// Every `--shape`, `--dtype NAME=` and `--input` name against the kernel(s) it specialises
    /// (`kernel`, or every kernel of the file): a name that is no parameter (with a did-you-mean),
    /// a typed parameter given a shape or a dtype, and a scalar parameter given a shape or an
    /// array are errors, never silently ignored. A `.pir` file has concrete shapes: `--shape`
    /// and `--dtype` are errors there. A file with syntax errors is left to the front end.
    pub fn validate(
        &self,
        source: &Source,
        kernel: Option<&str>,
        inputs: &[(String, PathBuf)],
    ) -> Result<(), Failure> {
        if source.is_penguin() {
            if let Some(flag) =
                (!self.shapes.is_empty())
                    .then_some("--shape")
                    .or((self.dtype.is_some() || !self.dtypes.is_empty()).then_some("--dtype"))
            {
                return Err(Failure::user(UserCause::NotForPenguin {
                    flag,
                    file: source.display_name(),
                }));
            }
            return Ok(());
        }
        let (module, errors) = frontend::parse(&source.text);
        if !errors.is_empty() {
            return Ok(());
        }
        // A factory's call (`--kernel 'make_kernel(128)[0]'`): the parameters of the function
        // it returns. One that does not evaluate is left to the front end's diagnostic.
        let made;
        let kernels: Vec<&frontend::ast::Kernel> = match kernel {
            Some(k) if !frontend::check::factory::is_kernel_name(k) => {
                match frontend::check::factory_kernel_def(&module, k) {
                    Some(def) => {
                        made = def;
                        vec![&made]
                    }
                    None => return Ok(()),
                }
            }
            Some(k) => {
                check_kernel_name(source, &module, k)?;
                module.kernels.iter().filter(|x| x.name.name == k).collect()
            }
            None => module.kernels.iter().collect(),
        };
        if kernels.is_empty() {
            return Ok(());
        }
        let untyped = kernels
            .iter()
            .flat_map(|k| &k.params)
            .any(|p| p.ty.is_none() && p.default.is_none());
        if self.dtype.is_some() && !untyped {
            return Err(Failure::Unplaced(Box::new(
                option_error(format!(
                    "`--dtype` sets the dtype of untyped parameters, and {} has none",
                    capped_list(kernels.iter().map(|k| format!("`{}`", k.name.name)), ", ")
                ))
                .with_help("drop `--dtype`: typed parameters declare their dtype"),
            )));
        }
        let names = self
            .shapes
            .iter()
            .map(|(n, _)| (n, "--shape"))
            .chain(self.dtypes.iter().map(|(n, _)| (n, "--dtype")))
            .chain(inputs.iter().map(|(n, _)| (n, "--input")));
        for (name, flag) in names {
            check_option_param(source, &kernels, name, flag)?;
        }
        Ok(())
    }
}

/// `FLAG NAME` (`--shape`, `--dtype`, `--input`) names a tensor parameter of one of `kernels`
/// whose shape and dtype the option may give: an untyped one (or, for `--input`, any tensor).
fn check_option_param(
    source: &Source,
    kernels: &[&frontend::ast::Kernel],
    name: &str,
    flag: &str,
) -> Result<(), Failure> {
    let params: Vec<&frontend::ast::Param> = kernels
        .iter()
        .flat_map(|k| &k.params)
        .filter(|p| p.name.name == name)
        .collect();
    let kernel_names = match kernels {
        [one] => format!("`{}`", one.name.name),
        several => format!(
            "none of the kernels {} has a parameter `{name}`;",
            capped_list(several.iter().map(|k| format!("`{}`", k.name.name)), ", ")
        ),
    };
    let Some(p) = params.first() else {
        let all: Vec<&str> = kernels
            .iter()
            .flat_map(|k| &k.params)
            .map(|p| p.name.name.as_str())
            .collect();
        let what = if kernels.len() == 1 {
            format!("{kernel_names} has no parameter `{name}`")
        } else {
            kernel_names.trim_end_matches(';').to_string()
        };
        let d = option_error(format!("`{flag} {name}`: {what}")).with_help_opt(
            did_you_mean(name, all.iter().copied()).map(|c| format!("did you mean `{c}`?")),
        );
        let d = if all.is_empty() {
            d.with_note("it takes no parameter")
        } else {
            d.with_note(format!("its parameters are {}", capped_list(&all, ", ")))
        };
        return Err(Failure::Unplaced(Box::new(d)));
    };
    let text = |e: &frontend::ast::Expr| source.text[e.span.clone()].to_string();
    // `NAME=None` is an optional tensor, which a shape, a dtype or an array makes a tensor.
    if let Some(default) = p
        .default
        .as_ref()
        .filter(|d| !matches!(d.kind, frontend::ast::ExprKind::None))
    {
        let what = match flag {
            "--input" => "array",
            "--dtype" => "dtype",
            _ => "shape",
        };
        return Err(Failure::Unplaced(Box::new(
            option_error(format!(
                "`{flag} {name}`: `{name}` is a scalar parameter (default `{}`), not a tensor: it takes no {what}",
                text(default)
            ))
            .with_help(format!("give its value with `--arg {name}=VALUE`")),
        )));
    }
    if let Some(ty) =
        p.ty.as_ref()
            .filter(|t| !frontend::check::annotation_is_hint(t))
    {
        if flag != "--input" {
            let what = if flag == "--shape" { "shape" } else { "dtype" };
            return Err(Failure::Unplaced(Box::new(
                option_error(format!(
                    "`{flag} {name}`: `{name}` declares its type, `{}`, so its {what} is that one",
                    text(ty)
                ))
                .with_help(format!(
                    "drop `{flag} {name}`, or remove the annotation to make `{name}` shape-generic"
                )),
            )));
        }
    }
    Ok(())
}

/// E0197 without a span: `--kernel NAME` names no kernel of the file, with the closest name
/// when one is close (a did-you-mean) and the kernels it defines.
pub fn check_kernel_name(
    source: &Source,
    module: &frontend::ast::Module,
    kernel: &str,
) -> Result<(), Failure> {
    let names: Vec<&str> = module
        .kernels
        .iter()
        .map(|k| k.name.name.as_str())
        .collect();
    if names.contains(&kernel) {
        return Ok(());
    }
    let d = Diagnostic::new(
        frontend::codes::UNKNOWN_KERNEL,
        format!(
            "`--kernel {kernel}`: `{}` defines no kernel `{kernel}`",
            source.display_name()
        ),
        0..0,
    )
    .with_help_opt(
        did_you_mean(kernel, names.iter().copied()).map(|c| format!("did you mean `{c}`?")),
    );
    let d = if names.is_empty() {
        d.with_note("it defines no kernel")
    } else {
        d.with_note(format!(
            "its kernels are {}",
            capped_list(names.iter().map(|n| format!("`{n}`")), ", ")
        ))
    };
    Err(Failure::Unplaced(Box::new(d)))
}

/// An error of a command-line option, as a diagnostic without a code or a place.
fn option_error(message: String) -> Diagnostic {
    Diagnostic::new("", message, 0..0)
}

/// `--kernel` checked before the front end runs, so that a wrong name gets a did-you-mean and
/// no label inside the file: see [`check_kernel_name`]. A file with syntax errors is left to
/// the front end; a `.pir` file is checked by [`read_penguin`].
pub fn check_kernel_option(source: &Source, kernel: Option<&str>) -> Result<(), Failure> {
    let Some(k) = kernel else { return Ok(()) };
    // An expression (a factory's call) is evaluated by the front end (`check/factory.rs`).
    if source.is_penguin() || !frontend::check::factory::is_kernel_name(k) {
        return Ok(());
    }
    let (module, errors) = frontend::parse(&source.text);
    if !errors.is_empty() {
        return Ok(());
    }
    check_kernel_name(source, &module, k)
}

/// The candidate closest to `name`, when it is close enough to be a typo (Jaro-Winkler
/// similarity of at least 0.8, as rustc's and clap's suggestions are for short names).
pub fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .filter(|c| *c != name)
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Parses `NAME=ROWSxCOLS` (any number of dimensions, `x`-separated), the value of `--shape`.
pub fn parse_shape(s: &str) -> Result<(String, Vec<u64>), ValueError> {
    let bad = || ValueError::form("NAME=ROWSxCOLS (such as `a=2048x512`)", s);
    let (name, dims) = s.split_once('=').ok_or_else(bad)?;
    if name.is_empty() {
        return Err(bad());
    }
    let dims: Vec<u64> = dims
        .split(['x', 'X'])
        .map(|d| d.trim().parse::<u64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    Ok((name.to_string(), dims))
}

/// The most programs a launch grid may have: they run one after the other, as loops.
pub const MAX_GRID_PROGRAMS: u64 = 1 << 16;

/// A launch grid as `--grid` gives it: one extent per axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid(pub Vec<u64>);

/// Parses `--grid`: one extent per axis, `4`, `2x4` or `2x2x2` (at most
/// [`frontend::check::grid::MAX_GRID_AXES`] axes, each at least 1, at most [`MAX_GRID_PROGRAMS`]
/// programs together). NKI's spellings `2,4`, `[2, 4]` and `(2, 4)` are refused with the `x`
/// form to write instead.
pub fn parse_grid(s: &str) -> Result<Grid, ValueError> {
    let t = s.trim();
    let bare = t
        .trim_start_matches(['(', '['])
        .trim_end_matches([')', ']']);
    let parts: Vec<&str> = bare
        .split([',', '*', ' ', 'x', 'X'])
        .filter(|p| !p.is_empty())
        .collect();
    let numbers: Option<Vec<u64>> = parts.iter().map(|p| p.parse::<u64>().ok()).collect();
    let written = numbers
        .as_ref()
        .map(|n| n.iter().map(u64::to_string).collect::<Vec<_>>().join("x"));
    let plain = !t.is_empty() && t.split(['x', 'X']).all(|p| p.parse::<u64>().is_ok());
    match (plain, numbers, written) {
        (true, Some(dims), _) => {
            if dims.len() > frontend::check::grid::MAX_GRID_AXES {
                return Err(ValueError::GridAxes {
                    max: frontend::check::grid::MAX_GRID_AXES,
                    axes: dims.len(),
                    text: s.to_string(),
                });
            }
            if dims.contains(&0) {
                return Err(ValueError::EmptyGridAxis {
                    text: s.to_string(),
                });
            }
            let programs = dims.iter().fold(1u64, |a, &d| a.saturating_mul(d));
            if programs > MAX_GRID_PROGRAMS {
                return Err(ValueError::GridPrograms {
                    text: s.to_string(),
                    programs,
                });
            }
            Ok(Grid(dims))
        }
        (false, Some(dims), Some(suggested)) if !dims.is_empty() => {
            Err(ValueError::GridSeparator {
                text: s.to_string(),
                suggested,
            })
        }
        _ => Err(ValueError::form(
            "the extents of the grid separated by `x` (such as `2x4`)",
            s,
        )),
    }
}

/// Runs the verifier; a failure after a pass is a bug in that pass.
pub fn verify(func: &Function, after: &str) -> Result<(), Failure> {
    penguin::verify::verify_function(func).map_err(|errors| {
        Failure::internal(InternalCause::InvalidPenguin {
            after: after.to_string(),
            function: func.name.clone(),
            errors,
        })
    })
}

/// `--input NAME=PATH` given twice for one name is an error (which one was meant?), never a silent
/// choice of the last.
pub fn unique_inputs(inputs: &[(String, PathBuf)]) -> Result<(), Failure> {
    for (k, (name, path)) in inputs.iter().enumerate() {
        if let Some((_, first)) = inputs[..k].iter().find(|(n, _)| n == name) {
            return Err(Failure::user(UserCause::InputTwice {
                name: name.clone(),
                first: first.clone(),
                second: path.clone(),
            }));
        }
    }
    Ok(())
}
