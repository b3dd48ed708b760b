//! `nkc compare`: one file, or a suite of files with its table and outcome.

use super::args::CompareArgs;
use super::{
    json_error, out, read_kernel, refuse_inputs_as_outputs, report, write_output, Env, Outcome,
};
use nkc::cause::FilesFailed;
use nkc::compare::{self, CompareOptions, SuiteEntry};
use nkc::driver::{Failure, InternalCause, Source, UserCause};
use penguin::pipeline::PipelineOptions;
use std::path::{Path, PathBuf};

/// `nkc compare`: one file, or a suite.
pub(crate) fn compare_command(
    a: CompareArgs,
    popts: &PipelineOptions,
    env: &mut Env<'_>,
) -> Outcome {
    let json = a.json && !env.json_messages && a.files.len() == 1;
    let specialise =
        a.spec
            .specialise()
            .map_err(|f| if json { json_error(f, None) } else { (f, None) })?;
    let files: Vec<&std::path::Path> = a.files.iter().map(|f| f.as_path()).collect();
    refuse_inputs_as_outputs(a.svg.as_deref().map(|o| ("--svg", o)), &files)?;
    let opts = CompareOptions {
        kernel: a.name.kernel,
        seed: a.seed.seed,
        specialise,
        legality_check: popts.legality_check,
        timelines: a.svg.is_some(),
        peel: a.peel,
        inputs: a.spec.inputs,
        max_cycles: a.max_cycles,
    };
    match a.files.as_slice() {
        [file] => compare_one(file, &opts, a.json, a.svg.as_deref()).map_err(|(f, s)| {
            if json {
                json_error(f, s)
            } else {
                (f, s)
            }
        }),
        files => compare_suite(files, &opts, a.json, a.svg.as_deref(), env),
    }
}

/// `nkc compare FILE`.
fn compare_one(file: &Path, opts: &CompareOptions, json: bool, svg: Option<&Path>) -> Outcome {
    let src = read_kernel(file)?;
    let c = compare::compare(&src, opts).map_err(|f| (f, Some(src)))?;
    if let Some(path) = svg {
        write_output(Some(path), &nkc::timeline_svg::render(&[&c]))?;
    }
    if json {
        out(&format!("{}\n", c.to_json()));
    } else {
        out(&c.to_text());
    }
    Ok(())
}

/// `nkc compare FILE...`: a suite. A broken file is reported and marked in the table; the others
/// still run, and the command fails at the end.
fn compare_suite(
    files: &[PathBuf],
    opts: &CompareOptions,
    json: bool,
    svg: Option<&Path>,
    env: &Env<'_>,
) -> Outcome {
    // Read every file first; the comparisons then run together ([`compare::compare_each`]),
    // and each failure is reported in file order.
    let sources: Vec<Result<Source, Failure>> = files
        .iter()
        .map(|f| read_kernel(f).map_err(|(e, _)| e))
        .collect();
    let readable: Vec<&Source> = sources.iter().filter_map(|s| s.as_ref().ok()).collect();
    let mut compared = compare::compare_each(&readable, opts).into_iter();
    let mut entries = Vec::new();
    for (file, src) in files.iter().zip(&sources) {
        entries.push(match src {
            Err(f) => {
                report(f, None, env.color, env.json_messages);
                SuiteEntry::failed(file.display().to_string(), f)
            }
            Ok(src) => match compared.next() {
                Some(Ok(c)) => SuiteEntry::Compared(c),
                Some(Err(f)) => {
                    report(&f, Some(src), env.color, env.json_messages);
                    SuiteEntry::failed(src.display_name(), &f)
                }
                None => unreachable!("compare_each gives one result per source"),
            },
        });
    }
    if let Some(path) = svg {
        let done: Vec<&compare::Comparison> =
            entries.iter().filter_map(SuiteEntry::comparison).collect();
        write_output(Some(path), &nkc::timeline_svg::render(&done))?;
    }
    if json {
        out(&format!("{}\n", compare::suite_json(&entries)));
    } else {
        out(&compare::suite_table(&entries));
    }
    suite_outcome(&entries)
}

/// The end of a suite: success, or one failure naming the files that failed (each was reported
/// already); a bug in nkc on any file makes it an internal error (exit code 101).
fn suite_outcome(entries: &[SuiteEntry]) -> Outcome {
    let failed: Vec<String> = entries
        .iter()
        .filter_map(|e| match e {
            SuiteEntry::Failed { file, .. } => Some(file.clone()),
            SuiteEntry::Compared(_) => None,
        })
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    let files = FilesFailed {
        failed,
        total: entries.len(),
    };
    let internal = entries
        .iter()
        .any(|e| matches!(e, SuiteEntry::Failed { internal: true, .. }));
    let failure = if internal {
        Failure::internal(InternalCause::FilesFailed(files))
    } else {
        Failure::user(UserCause::FilesFailed(files))
    };
    Err((failure, None))
}
