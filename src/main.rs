//! The `nkc` command line: argument parsing, reading the files, printing what the commands
//! return (the commands themselves live in the library).
//!
//! Output conventions: what a command produces goes to standard output, written by [`cli::out`], so
//! that a closed pipe (`nkc ... | head`) ends nkc quietly with exit code 0, as rustc, cargo and
//! ripgrep do, never as an internal error; diagnostics, logs and progress go to standard error
//! (or, with `--message-format json`, diagnostics to standard output as JSON lines).
//! Exit codes: 0 success, 1 an error in the kernel or its inputs, 2 a usage error (clap's),
//! 101 a bug in nkc.
//!
//! This file holds `main`: parse, run the command, report the failure, exit; the command line's
//! parts live in [`cli`].

mod cli;

use clap::Parser;
use cli::args::{Cli, Command, CompileFlags, LogKind, MessageFormat};
use cli::{report, Env, Outcome};
use penguin::pipeline::{PipelineLog, PipelineOptions};
use std::process::ExitCode;

fn main() -> ExitCode {
    install_panic_hook();
    let cli = Cli::parse();
    let flags = match &cli.command {
        Command::Check(a) => a.flags.clone(),
        Command::Compile(a) => a.passes.flags.clone(),
        Command::Run(a) => a.passes.flags.clone(),
        Command::Compare(a) => CompileFlags {
            log: Vec::new(),
            legality: a.legality.clone(),
        },
        Command::Suggest(_) | Command::Sim(_) | Command::Explain(_) => CompileFlags::default(),
    };
    let popts = PipelineOptions {
        legality_check: !flags.legality.no_legality_check,
        ..Default::default()
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

fn execute(command: Command, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    match command {
        Command::Check(a) => cli::compile::check_command(a, popts, env),
        Command::Compile(a) => cli::compile::compile_command(a, popts, env),
        Command::Run(a) => cli::run::run_command(a, popts, env),
        Command::Suggest(a) => cli::run::suggest(a),
        Command::Compare(a) => cli::compare::compare_command(a, popts, env),
        Command::Sim(a) => cli::run::sim(a),
        Command::Explain(a) => cli::explain(&a.code),
    }
}

/// A panic is a bug: say so the way compilers do, then let it end the process (exit code 101).
/// The one exception is a print to a closed pipe (`eprintln!` into `| head` after `2>&1`), which
/// is the reader's choice: nkc then stops quietly, as [`cli::out`] does for standard output.
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
