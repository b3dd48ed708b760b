//! The nkc front end: the kernel language of `LANGUAGE.md`, from source text to Penguin IR.
//!
//! The stages run in order: [`parse`] (lexer and parser, with recovery), [`check::check_module`]
//! (the semantic checks, producing a resolved form of each kernel) and [`lower::lower_kernel`]
//! (to Penguin IR), then [`fit_arrays`] (arrays declared past their memory, contracted by
//! lifetime or diagnosed). [`check_source`] and [`compile`] chain them. After a syntax error both still
//! run the semantic checks on the rest of the file, and report their findings after (in source
//! order with) the syntax errors; recovery nodes are silent there, so that they cause no
//! follow-on diagnostics, and a file with a syntax error never compiles.

pub mod ast;
pub mod check;
pub use check::package_data::{clear_kernel_file, locate, set_kernel_file, SourceFile};
pub mod codes;
pub mod diagnostic;
pub mod explain;
pub mod fit_arrays;
pub mod lexer;
pub mod lower;
pub mod parser;
pub mod syntax_error;

use std::collections::HashMap;

/// The dtype and shape that a run gives a kernel parameter written without a type: the kernel is
/// specialised for them, as NKI's tracing specialises a kernel for its inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    pub dtype: penguin::DType,
    pub shape: Vec<u64>,
}

/// What a run gives a kernel's parameters: the [`ParamSpec`] of untyped tensor parameters, by
/// name (the map this dereferences to; typed parameters ignore it), and the values of scalar
/// parameters (`args`, from `--arg NAME=VALUE`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Specs {
    shapes: HashMap<String, ParamSpec>,
    pub args: Args,
    /// The SPMD launch grid (`--grid 2x4`): one extent per axis; `None` for no grid.
    pub grid: Option<Vec<u64>>,
}

impl Specs {
    pub fn new() -> Self {
        Specs::default()
    }
}

impl std::ops::Deref for Specs {
    type Target = HashMap<String, ParamSpec>;
    fn deref(&self) -> &Self::Target {
        &self.shapes
    }
}

impl std::ops::DerefMut for Specs {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.shapes
    }
}

/// The value a run gives a scalar kernel parameter (`--arg NAME=VALUE`): a Python literal.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarArg {
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    Str(String),
    /// `(3, 4)` or `[3, 4]`.
    Tuple(Vec<ScalarArg>),
    /// A dotted name (`nl.add`, `np.float32`, `nisa.reduce_cmd.reset_reduce`): the value it
    /// names in the kernel's module, as the caller's Python would pass it.
    Name(Vec<String>),
}

impl ScalarArg {
    /// Reads `VALUE` as Python would read the literal: `3`, `1e-5`, `True`, `None`, `'text'`;
    /// a dotted name (`nl.add`) is the value it names; anything else is a string.
    pub fn parse(text: &str) -> ScalarArg {
        let t = text.trim();
        if let Ok(v) = t.replace('_', "").parse::<i64>() {
            return ScalarArg::Int(v);
        }
        if let Ok(v) = t.parse::<f64>() {
            return ScalarArg::Float(v);
        }
        let inner = t
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .or_else(|| t.strip_prefix('[').and_then(|s| s.strip_suffix(']')));
        if let Some(inner) = inner {
            let items = split_top_level(inner)
                .into_iter()
                .filter(|s| !s.trim().is_empty())
                .map(ScalarArg::parse)
                .collect();
            return ScalarArg::Tuple(items);
        }
        let parts: Vec<&str> = t.split('.').collect();
        let ident = |p: &&str| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if parts.len() > 1 && parts.iter().all(ident) {
            return ScalarArg::Name(parts.iter().map(|p| p.to_string()).collect());
        }
        match t {
            "True" | "true" => ScalarArg::Bool(true),
            "False" | "false" => ScalarArg::Bool(false),
            "None" => ScalarArg::None,
            _ => {
                let unquoted = t
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .or_else(|| t.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
                    .unwrap_or(t);
                ScalarArg::Str(unquoted.to_string())
            }
        }
    }
}

/// The items of a tuple display's inside, split at its own commas (not at those of a nested
/// tuple or list: `(0, 0), (1, 1)` is two items).
fn split_top_level(inner: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
}

/// Parameter name to the value of a scalar parameter given by the run.
pub type Args = HashMap<String, ScalarArg>;

/// Parses a whole file. Always returns a module (with `Error` nodes where recovery happened) and
/// every syntax error found, in source order.
pub fn parse(source: &str) -> (ast::Module, Vec<diagnostic::Error>) {
    parser::parse(source)
}

/// Parses, checks and collects every diagnostic of the file (all kernels, or only `kernel`).
/// Empty means the file is good. Used by `nkc check`. A file with no kernel is an error here as
/// in [`compile`], so that `check` and `run` agree.
pub fn check_source(source: &str, kernel: Option<&str>) -> Vec<diagnostic::Error> {
    check_source_with(source, kernel, &Specs::new())
}

/// [`check_source`] with the shapes of untyped parameters.
pub fn check_source_with(
    source: &str,
    kernel: Option<&str>,
    specs: &Specs,
) -> Vec<diagnostic::Error> {
    let (module, syntax) = parse(source);
    let mut errors = match check::check_module(&module, kernel, specs) {
        // fit_arrays: an array declared past its memory is diagnosed only if it stays so.
        Ok(checked) => (checked.iter())
            .filter(|k| fit_arrays::needs_fit(k))
            .flat_map(|k| fit_arrays::fit_arrays(k, &mut lower::lower_kernel(k, source)))
            .collect(),
        Err(errors) => errors,
    };
    if kernel.is_none() && module.kernels.is_empty() && syntax.is_empty() {
        errors.push(no_kernel());
    }
    if syntax.is_empty() {
        return errors;
    }
    // The semantic errors of the rest of the file follow its syntax errors, in source order.
    let mut all = syntax;
    all.extend(errors);
    all.sort_by_key(|e| (e.span.start, e.span.end));
    all
}

/// The diagnostic for a file that defines no kernel.
fn no_kernel() -> diagnostic::Error {
    check::error::CheckError::NoKernel { at: 0..0 }.into()
}

/// The whole front end for one kernel: parse, check, lower. With several kernels and no `kernel`
/// given, an error lists their names. After syntax errors, stop (do not run the checks).
pub fn compile(
    source: &str,
    kernel: Option<&str>,
) -> Result<penguin::Function, Vec<diagnostic::Error>> {
    compile_with(source, kernel, &Specs::new())
}

/// [`compile`], with the kernel specialised for the shapes of its untyped parameters.
pub fn compile_with(
    source: &str,
    kernel: Option<&str>,
    specs: &Specs,
) -> Result<penguin::Function, Vec<diagnostic::Error>> {
    let (module, errors) = parse(source);
    if !errors.is_empty() {
        return Err(check_source_with(source, kernel, specs));
    }
    // With no kernel named, the one decorated kernel (`@nki.jit`) of a file with helpers.
    let decorated: Vec<&ast::Kernel> = module
        .kernels
        .iter()
        .filter(|k| k.is_nki_kernel())
        .collect();
    let name = match (kernel, module.kernels.as_slice()) {
        (Some(name), _) => name.to_string(),
        (None, [only]) => only.name.name.clone(),
        (None, _) if decorated.len() == 1 => decorated[0].name.name.clone(),
        (None, []) => return Err(vec![no_kernel()]),
        (None, several) => {
            let names: Vec<String> = several
                .iter()
                .map(|k| format!("`{}`", k.name.name))
                .collect();
            return Err(vec![check::error::CheckError::SeveralKernels {
                kernels: names,
                at: several[1].name.span.clone(),
            }
            .into()]);
        }
    };
    let mut checked = check::check_module(&module, Some(&name), specs)?;
    // Exactly one kernel is selected by name; duplicates are an error reported above.
    let k = checked
        .pop()
        .expect("check_module returns the selected kernel when it reports no error");
    let mut func = lower::lower_kernel(&k, source);
    let errors = fit_arrays::fit_arrays(&k, &mut func);
    if errors.is_empty() {
        Ok(func)
    } else {
        Err(errors)
    }
}
