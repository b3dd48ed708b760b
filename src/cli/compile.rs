//! `nkc check` and `nkc compile`: the options, the phases `--emit` needs, the output.

use super::args::{CheckArgs, CompileArgs, Emit, LogKind};
use super::{
    read_kernel, refuse_inputs_as_outputs, report, usage_error, write_output, Env, Outcome,
};
use clap::ValueEnum;
use nkc::driver::{self, Failure, Source, UserCause};
use nkc::pipeline::{self, CompileOptions, Context, PipelineMode, PrintAfter};
use penguin::pipeline::PipelineOptions;

/// `nkc check FILE...`: each file's diagnostics, reported in file order; the command fails
/// with the worst exit code.
pub(crate) fn check_command(a: CheckArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
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
pub(crate) fn compile_command(
    a: CompileArgs,
    popts: &PipelineOptions,
    env: &mut Env<'_>,
) -> Outcome {
    refuse_unused_compile_options(&a);
    refuse_inputs_as_outputs(a.output.as_deref().map(|o| ("-o", o)), &[&a.target.file])?;
    let src = read_kernel(&a.target.file)?;
    let specs = a
        .passes
        .spec
        .specialise()
        .and_then(|s| s.specs(&src, a.target.name.kernel.as_deref(), &a.passes.spec.inputs))
        .map_err(|f| (f, Some(src.clone())))?;
    let copts = CompileOptions {
        mode: a.pipeline,
        legality_check: popts.legality_check,
        peel: a.peel.peel,
        print_after: a.passes.print.print_after(),
        print_to_stderr: true,
        ..CompileOptions::default()
    };
    let (text, times) = compile(
        &src,
        a.target.name.kernel.as_deref(),
        &specs,
        a.emit,
        copts,
        env,
    )
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
    if a.passes.print.print_after_all || !a.passes.print.print_after.is_empty() {
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
    if !backend && a.passes.flags.log.contains(&LogKind::Backend) {
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
        if a.passes.flags.log.contains(&LogKind::Pipeliner) {
            unused("--log pipeliner", runs);
        }
        if a.peel.peel {
            unused("--peel", runs);
        }
        if a.passes.flags.legality.no_legality_check {
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
