//! `nkc run`, `nkc suggest` and `nkc sim`: the options, the run, the report.

use super::args::{RunArgs, SimArgs, SuggestArgs};
use super::{json_error, out, read_kernel, read_program, usage_error, Env, Outcome};
use nkc::driver::{Failure, Source, UserCause};
use nkc::run::{self, Engine, RunOptions};
use nkc::sim::{self as simcmd, SimOptions};
use penguin::pipeline::PipelineOptions;

/// `nkc run`: the options, the run, the report.
pub(crate) fn run_command(a: RunArgs, popts: &PipelineOptions, env: &mut Env<'_>) -> Outcome {
    if a.engine == Engine::Interp && a.trace.is_some() {
        usage_error(
            "`--trace` writes the simulator's timeline, and `--engine interp` has none: drop \
             `--trace`, or run on the simulator (`--engine sim`, the default)"
                .into(),
        );
    }
    let json = a.json && !env.json_messages;
    let fail = |f: Failure, s: Option<Source>| if json { json_error(f, s) } else { (f, s) };
    let specialise = a.passes.spec.specialise().map_err(|f| fail(f, None))?;
    let opts = RunOptions {
        max_cycles: a.max_cycles,
        specialise,
        kernel: a.target.name.kernel,
        engine: a.engine,
        pipeline: a.pipeline,
        inputs: a.passes.spec.inputs,
        seed: a.seed.seed,
        output_dir: a.output,
        legality_check: popts.legality_check,
        check: a.check,
        trace: a.trace,
        timeline: false,
        peel: a.peel.peel,
        print_after: a.passes.print.print_after(),
    };
    let src = read_kernel(&a.target.file).map_err(|(f, s)| fail(f, s))?;
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
pub(crate) fn suggest(a: SuggestArgs) -> Outcome {
    let specialise = a.spec.specialise().map_err(|f| (f, None))?;
    let opts = nkc::suggest::SuggestOptions {
        kernel: a.target.name.kernel,
        seed: a.seed.seed,
        specialise,
        inputs: a.spec.inputs,
        max_cycles: a.max_cycles,
    };
    let file = &a.target.file;
    let src = read_kernel(file)?;
    let s = nkc::suggest::suggest(&src, &opts).map_err(|f| (f, Some(src)))?;
    if a.json {
        out(&format!("{}\n", s.to_json(&file.display().to_string())));
    } else {
        out(&s.to_text(&file.display().to_string()));
    }
    if a.write && s.suggested != s.original {
        nkc::write_file::write_atomically(file, s.suggested.as_bytes())
            .map_err(|e| (Failure::user(UserCause::Write(e)), None))?;
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}

/// `nkc sim`.
pub(crate) fn sim(a: SimArgs) -> Outcome {
    let opts = SimOptions {
        inputs: a.inputs,
        seed: a.seed.seed,
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
