//! `--kernel EXPR`: a kernel made by a factory. Host code often builds a kernel by calling a
//! Python function that defines a jitted closure over its arguments and returns it (possibly in
//! a tuple with other values: `kernel, pad = get_kernel(seq_len, dim)`). NKI traces the function
//! object the host code calls; nkc does the same: the run's `--kernel` may be a Python expression
//! (`get_kernel(256, 64)[0]`), evaluated at compile time in the kernel's module, whose value is
//! the function to compile. Its parameters take the run's `--shape`, `--input` and `--arg` as a
//! kernel of the file does, and its body sees the names it closes over as they were when the
//! factory returned.
//!
//! Invariants: the expression is parsed from text appended after the file, so every span in it
//! lies past the file's end; diagnostics raised at such a span are reported without a place
//! (at `0..0`, as an option's error is), never at an unrelated place of the file. A value that
//! is not a function is E0197, naming its type.

use super::pyvalue::Py;
use super::{Bound, CheckedKernel, Checker, Value};
use crate::ast::{self, Expr, StmtKind};
use crate::codes;
use crate::diagnostic::Error;
use std::collections::HashMap;
use std::rc::Rc;

/// Whether `--kernel` names a function (a Python identifier) rather than an expression.
pub fn is_kernel_name(kernel: &str) -> bool {
    let mut chars = kernel.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// The binding the expression is parsed as, after the file's text.
const BINDING: &str = "__nkc_kernel__";

/// `kernel` parsed as an expression whose spans all start at or after `end` (the file's length).
fn parse_expr(end: usize, kernel: &str) -> Result<Expr, Box<Error>> {
    // Blank lines up to `end` keep the expression's offsets past every offset of the file.
    let text = format!("{}{BINDING} = {kernel}\n", "\n".repeat(end));
    let (module, errors) = crate::parser::parse(&text);
    let bad = || {
        Error::new(
            codes::UNKNOWN_KERNEL,
            format!("`--kernel {kernel}` is neither a kernel's name nor a Python expression"),
            0..0,
        )
        .with_help("name a kernel of the file (`--kernel NAME`), or call its factory (`--kernel 'make_kernel(128)'`)")
    };
    if !errors.is_empty() || !module.kernels.is_empty() || module.items.len() != 1 {
        return Err(Box::new(bad()));
    }
    match &module.items[0].kind {
        StmtKind::Assign { value, .. } => Ok(value.clone()),
        _ => Err(Box::new(bad())),
    }
}

/// A diagnostic at a span past the file's end (in the `--kernel` expression) moves to `0..0`.
fn placed(mut e: Error, end: usize, kernel: &str) -> Error {
    if e.span.start >= end {
        e.span = 0..0;
        e.label.clear();
        e.secondary.retain(|(s, _)| s.start < end);
        e = e.with_note(format!("while evaluating `--kernel {kernel}`"));
    }
    e
}

/// The function `--kernel EXPR` evaluates to, with the closure it runs in: the def and the
/// checker's scopes for its body. `None` after a diagnostic.
fn resolve(checker: &mut Checker<'_>, end: usize, kernel: &str) -> Option<Rc<ast::Kernel>> {
    let expr = match parse_expr(end, kernel) {
        Ok(e) => e,
        Err(e) => {
            checker.error(*e);
            return None;
        }
    };
    let value = checker.eval(&expr)?;
    if checker.stopped {
        return None;
    }
    match value.as_py() {
        Some(Py::Func(f)) => {
            let mut scopes = f.closure.clone();
            scopes.push(HashMap::<String, Bound>::new());
            checker.scopes = scopes;
            Some(f.def.clone())
        }
        _ if matches!(value, Value::Error) => None,
        _ => {
            checker.error(
                Error::new(
                    codes::UNKNOWN_KERNEL,
                    format!(
                        "`--kernel {kernel}` is a `{}`, not a function to compile",
                        value.type_name()
                    ),
                    0..0,
                )
                .with_help("the expression must give the kernel function: index a tuple the factory returns (`make_kernel(128)[0]`)"),
            );
            None
        }
    }
}

/// The file's length as the parser saw it: past the end of every item and kernel.
fn module_end(module: &ast::Module) -> usize {
    (module.items.iter().map(|s| s.span.end))
        .chain(module.kernels.iter().map(|k| k.span.end))
        .max()
        .unwrap_or(0)
}

/// Checks the kernel `--kernel EXPR` makes.
pub(super) fn check_factory_kernel(
    module: &ast::Module,
    globals: &HashMap<String, Bound>,
    kernel: &str,
    specs: &crate::Specs,
) -> Result<CheckedKernel, Vec<Error>> {
    let end = module_end(module) + 1;
    let mut errors = Vec::new();
    let checked = {
        let mut checker = Checker::new(globals, &mut errors);
        checker.specs = Some(specs);
        checker.args = Some(&specs.args);
        resolve(&mut checker, end, kernel).map(|def| checker.kernel(&def))
    };
    match checked {
        Some(k) if errors.is_empty() => Ok(k),
        _ => Err(errors.into_iter().map(|e| placed(e, end, kernel)).collect()),
    }
}

/// The def `--kernel EXPR` evaluates to (for the driver's check of `--shape` names against
/// its parameters); `None` when it does not evaluate to a function.
pub(super) fn factory_def(
    module: &ast::Module,
    globals: &HashMap<String, Bound>,
    kernel: &str,
) -> Option<ast::Kernel> {
    let end = module_end(module) + 1;
    let mut errors = Vec::new();
    let mut checker = Checker::new(globals, &mut errors);
    resolve(&mut checker, end, kernel).map(|def| (*def).clone())
}
