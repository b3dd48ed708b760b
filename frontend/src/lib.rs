//! The nkc front end: the kernel language of `LANGUAGE.md`, from source text to Penguin IR.
//!
//! The stages run in order: [`parse`] (lexer and parser, with recovery), [`check::check_module`]
//! (the semantic checks, producing a resolved form of each kernel) and [`lower::lower_kernel`]
//! (to Penguin IR). [`check_source`] and [`compile`] chain them. After a syntax error neither runs
//! the semantic checks, so that recovery nodes never cause follow-on diagnostics.

pub mod ast;
pub mod check;
pub mod codes;
pub mod diagnostic;
pub mod lexer;
pub mod lower;
pub mod parser;

/// Parses a whole file. Always returns a module (with `Error` nodes where recovery happened) and
/// every syntax error found, in source order.
pub fn parse(source: &str) -> (ast::Module, Vec<diagnostic::Error>) {
    parser::parse(source)
}

/// Parses, checks and collects every diagnostic of the file (all kernels, or only `kernel`).
/// Empty means the file is good. Used by `nkc check`. A file with no kernel is an error here as
/// in [`compile`], so that `check` and `run` agree.
pub fn check_source(source: &str, kernel: Option<&str>) -> Vec<diagnostic::Error> {
    let (module, errors) = parse(source);
    if !errors.is_empty() {
        return errors;
    }
    let mut errors = match check::check_module(&module, kernel) {
        Ok(_) => Vec::new(),
        Err(errors) => errors,
    };
    if kernel.is_none() && module.kernels.is_empty() {
        errors.push(no_kernel());
    }
    errors
}

/// The diagnostic for a file that defines no kernel.
fn no_kernel() -> diagnostic::Error {
    diagnostic::Error::new(codes::CHOOSE_KERNEL, "this file defines no kernel", 0..0)
        .with_help("define one with `def name(a: nl.hbm[nl.float32, ROWS, COLS]): ...`")
}

/// The whole front end for one kernel: parse, check, lower. With several kernels and no `kernel`
/// given, an error lists their names. After syntax errors, stop (do not run the checks).
pub fn compile(
    source: &str,
    kernel: Option<&str>,
) -> Result<penguin::Function, Vec<diagnostic::Error>> {
    let (module, errors) = parse(source);
    if !errors.is_empty() {
        return Err(errors);
    }
    let name = match (kernel, module.kernels.as_slice()) {
        (Some(name), _) => name.to_string(),
        (None, [only]) => only.name.name.clone(),
        (None, []) => return Err(vec![no_kernel()]),
        (None, several) => {
            let names: Vec<String> = several
                .iter()
                .map(|k| format!("`{}`", k.name.name))
                .collect();
            return Err(vec![diagnostic::Error::new(
                codes::CHOOSE_KERNEL,
                format!(
                    "this file defines {} kernels; choose one with --kernel",
                    several.len()
                ),
                several[1].name.span.clone(),
            )
            .with_label("another kernel")
            .with_note(format!(
                "the kernels are {}",
                penguin::listing::capped_list(&names, ", ")
            ))]);
        }
    };
    let mut checked = check::check_module(&module, Some(&name))?;
    // Exactly one kernel is selected by name; duplicates are an error reported above.
    let k = checked
        .pop()
        .expect("check_module returns the selected kernel when it reports no error");
    Ok(lower::lower_kernel(&k))
}
