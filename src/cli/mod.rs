//! The `nkc` command line's parts: [`args`] (clap), [`compile`] (`check`, `compile`), [`run`]
//! (`run`, `suggest`, `sim`), [`compare`]; this module holds what they share: the [`Env`] of
//! every command, printing output ([`out`]) and failures ([`report`], [`json_error`]), reading
//! and writing files, usage errors, and `explain`.

pub(crate) mod args;
pub(crate) mod compare;
pub(crate) mod compile;
pub(crate) mod run;

use args::Cli;
use clap::CommandFactory;
use nkc::driver::{self, ColorMode, Failure, Source, UserCause};
use penguin::pipeline::PipelineLog;
use std::io::Write;
use std::path::Path;

pub(crate) type Outcome = Result<(), (Failure, Option<Source>)>;

/// What every command shares: the global options and the pipeliner's log.
pub(crate) struct Env<'a> {
    pub(crate) log: &'a mut PipelineLog,
    pub(crate) show_backend: bool,
    pub(crate) color: ColorMode,
    /// `--message-format json`: diagnostics as JSON lines on standard output.
    pub(crate) json_messages: bool,
    /// The highest exit code of failures already reported (several files of `check`).
    pub(crate) worst: i32,
}

/// Prints a failure: rendered on standard error, or as JSON lines on standard output.
pub(crate) fn report(failure: &Failure, source: Option<&Source>, color: ColorMode, json: bool) {
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
pub(crate) fn out(text: &str) {
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

/// A usage error (exit code 2), in clap's form: an option that means nothing with the others.
pub(crate) fn usage_error(msg: String) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, msg)
        .exit()
}

/// `--json` of a command that failed: one JSON object on standard output, so that a script
/// reading it always gets one (`error`: the first message; `exit_code`; `diagnostics`: the
/// objects of `--message-format json`). The failure is reported on standard error as well.
pub(crate) fn json_error(failure: Failure, source: Option<Source>) -> (Failure, Option<Source>) {
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

/// `nkc explain CODE`: the long explanation of a diagnostic code.
pub(crate) fn explain(code: &str) -> Outcome {
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

/// A kernel file (source or Penguin IR). A pseudo-ISA program (`.s`) is refused with the
/// command that runs it.
pub(crate) fn read_kernel(file: &Path) -> Result<Source, (Failure, Option<Source>)> {
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
pub(crate) fn read_program(file: &Path) -> Result<Source, (Failure, Option<Source>)> {
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
pub(crate) fn refuse_inputs_as_outputs<'a>(
    outputs: impl IntoIterator<Item = (&'a str, &'a std::path::Path)>,
    inputs: &[&std::path::Path],
) -> Outcome {
    nkc::write_file::refuse_inputs_as_outputs(outputs, inputs)
        .map_err(|e| (Failure::user(UserCause::Write(e)), None))
}

pub(crate) fn write_output(path: Option<&Path>, text: &str) -> Outcome {
    match path {
        Some(p) => nkc::write_file::write_atomically(p, text.as_bytes())
            .map_err(|e| (Failure::user(UserCause::Write(e)), None)),
        None => {
            out(text);
            Ok(())
        }
    }
}
