//! The filetests, in the style of Cranelift's `filetests/`: every file under `filetests/` (but
//! `filetests/examples/`) opens with a header line `# test: KIND [ARG]` naming its test; its
//! comments hold the expectation. One runner, [`filetests`], runs them all:
//!
//! - `test: pipeline` (`.nk`): the annotated pipeliner. `# expect: CODE @ LINE` lines: it rejects
//!   the kernel with exactly these diagnostics (the rendered text is an insta snapshot,
//!   `tests/snapshots/filetests__NAME.snap`), and with the legality check off the pipelined
//!   kernel changes the result (unless `# check off: same bits`); `# runs` and `# log: TEXT`
//!   lines: it pipelines the kernel, every `TEXT` is in its log, and the interpreter gives the same
//!   bits before and after.
//! - `test: bir` (`.bir`): BIR's text form and verifier. Without `# error:` lines the file reads,
//!   verifies, prints back as written, and lowering the Function the reader built gives it again;
//!   with `# error: MESSAGE` lines the verifier reports exactly those errors.
//! - `test: schedule` (`.pir` Penguin IR after the pipeliner, or `.bir`): the list scheduler, the
//!   queue plan, the loop dependence graph and the modulo scheduler; the file's `# schedule:`
//!   section is the expected rendering (`common/schedules.rs`).
//! - `test: print-after PASS` (`.nk` or `.pir`): the compile context (`nkc::pipeline::Context`)
//!   on the path `# pipeline: MODE` (default `default`; `# peel` peels), printing the IR after
//!   `PASS`; every printed block must read back with its parser. `test: emergent` is
//!   `print-after emergent`, `test: isa` the final program (`print-after hoist`).
//!
//! - `test: pir` (`.pir`): Penguin IR's text form and verifier. Without `# error:` lines the file
//!   parses, verifies, prints back exactly as written (comments and blank lines aside), and
//!   `parse(write(f))` holds the same entities; with one `# error: MESSAGE` line that the parser's
//!   error must contain (`line L:C: ...`), the parser rejects it; with `# error:` lines that parse,
//!   the verifier reports exactly that many errors, each containing one of them.
//! - `test: legality` (`.pir`, Penguin IR before pipelining): the ISL legality check
//!   (`penguin::pipeline::compute_violations`) of each `# plan: LOOP stages=.. order=..
//!   [buffers=T:N,..] [num_stages=N]` line's pipeline plan, with and without its fast path (which
//!   must agree); the `# output:` section is the verdict: each violated dependence with its
//!   instructions and first violating iterations, and the dependence counts.
//!
//! The printed output is checked by `# check: TEXT` / `# nextln: TEXT` / `# not: TEXT` lines when
//! the file has any ([`filecheck`]: `check` finds the next line containing TEXT, `nextln` must
//! be the line right after the previous match, `not` must not occur between the matches around
//! it), and otherwise equals the file's `# output:` section exactly.
//!
//! `NKC_BLESS=1 cargo test --test filetests` rewrites every `# output:` and `# schedule:` section
//! and the per-example snapshots of `filetests/examples/` (review the diff); the `pipeline`
//! diagnostics are insta snapshots (`INSTA_UPDATE=always`).
//!
//! [`example_snapshots`]: every `examples/*.nk` on each path (`default annotated emergent none
//! auto`): the Penguin IR the backend gets (`filetests/examples/NAME/PATH.pir`) and the program
//! (`PATH.isa`), so that a change in code generation shows in review.

mod common;
#[path = "common/schedules.rs"]
mod schedules;

use backend::codegen::bir::{lower_function, write_bir};
use backend::codegen::bir_parse::parse_bir;
use backend::codegen::bir_verify::verify_bir;
use common::{expectations, line_of, nk_files};
use nkc::driver::{self, Source};
use nkc::pipeline::{self, CompileOptions, Context, Form, PipelineMode, PrintAfter};
use penguin::interp;
use penguin::pipeline::{PipelineLog, PipelineOptions, PipelineRemark};
use penguin::Function;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests")
}

/// `NKC_BLESS=1` rewrites the expectations; any other value (`0`, empty) or none checks them.
fn bless() -> bool {
    std::env::var("NKC_BLESS").is_ok_and(|v| v == "1")
}

/// `NKC_FILETEST=TEXT` runs only the filetests whose path (from the repository) contains `TEXT`
/// (`NKC_FILETEST=isa/auto cargo test --test filetests filetests`); unset or empty, all.
fn filter() -> Option<String> {
    std::env::var("NKC_FILETEST").ok().filter(|f| !f.is_empty())
}

/// Every file under `dir`, recursively, sorted; `filetests/examples` holds snapshots, not tests.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "examples") {
                walk(&p, out);
            }
        } else {
            out.push(p);
        }
    }
}

/// The test a file's header names: `(kind, argument)`.
fn header(text: &str) -> Option<(String, String)> {
    let line = text.lines().next()?.strip_prefix("# test:")?.trim();
    let (kind, arg) = line.split_once(' ').unwrap_or((line, ""));
    Some((kind.to_string(), arg.trim().to_string()))
}

/// The value of a `# KEY: VALUE` option line.
fn option<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    text.lines()
        .find_map(|l| l.strip_prefix("# ")?.strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
}

#[test]
fn filetests() {
    let mut files = Vec::new();
    walk(&root(), &mut files);
    let mut failures = Vec::new();
    let mut n = 0;
    let only = filter();
    for path in &files {
        let rel = path
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap_or(path)
            .display()
            .to_string();
        if only.as_ref().is_some_and(|f| !rel.contains(f.as_str())) {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("readable filetest");
        let Some((kind, arg)) = header(&text) else {
            failures.push(format!("{rel}: no `# test: KIND` header line"));
            continue;
        };
        n += 1;
        let result = match kind.as_str() {
            "pipeline" => run_pipeline(path, &rel, &text),
            "bir" => run_bir(&text),
            "schedule" => run_schedule(path, &text),
            "print-after" => run_printed(path, &text, &arg),
            "emergent" => run_printed(path, &text, "emergent"),
            "isa" => run_printed(path, &text, "hoist"),
            "legality" => run_legality(path, &text),
            "pir" => run_pir(&text),
            other => Err(format!("unknown test kind `{other}`")),
        };
        if let Err(e) = result {
            failures.push(format!("{rel}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} filetests failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    match only {
        None => assert!(n >= 60, "at least 60 filetests, found {n}"),
        Some(f) => assert!(n >= 1, "NKC_FILETEST={f} names no filetest"),
    }
}

// ---- Expected sections and the check matcher ----

/// Splits `text` at the line `marker`: the input before it and the expected text after it (each
/// `# ` line without its prefix; a lone `#` is an empty line).
fn split_section<'t>(text: &'t str, marker: &str) -> (&'t str, Option<String>) {
    let at = text
        .match_indices(marker)
        .find(|(i, _)| *i == 0 || text.as_bytes()[i - 1] == b'\n')
        .map(|(i, _)| i);
    match at {
        None => (text, None),
        Some(at) => {
            let want = text[at + marker.len()..]
                .lines()
                .filter_map(|l| l.strip_prefix('#'))
                .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
                .collect();
            (&text[..at], Some(want))
        }
    }
}

/// `input` followed by the section `marker` holding `rendered`.
fn with_section(input: &str, marker: &str, rendered: &str) -> String {
    let mut new = input.trim_end().to_string();
    new.push_str("\n\n");
    new.push_str(marker);
    new.push('\n');
    for l in rendered.lines() {
        if l.is_empty() {
            new.push_str("#\n");
        } else {
            new.push_str("# ");
            new.push_str(l);
            new.push('\n');
        }
    }
    new
}

/// Compares `got` with the file's `marker` section, or (blessing) rewrites it.
fn expect_section(path: &Path, text: &str, marker: &str, got: &str) -> Result<(), String> {
    let (input, want) = split_section(text, marker);
    if want.as_deref() == Some(got) {
        return Ok(());
    }
    if bless() {
        std::fs::write(path, with_section(input, marker, got)).expect("writable filetest");
        return Ok(());
    }
    Err(format!(
        "{}\n(NKC_BLESS=1 rewrites the `{marker}` section)",
        diff(want.as_deref().unwrap_or(""), got)
    ))
}

/// A unified diff of `want` and `got`.
fn diff(want: &str, got: &str) -> String {
    similar::TextDiff::from_lines(want, got)
        .unified_diff()
        .header("want", "got")
        .to_string()
}

/// One line of a check script.
#[derive(Debug, PartialEq)]
enum Directive {
    Check(String),
    Nextln(String),
    Not(String),
}

/// The `# check:`, `# nextln:` and `# not:` lines of `text`, in order.
fn directives(text: &str) -> Vec<Directive> {
    text.lines()
        .filter_map(|l| {
            let l = l.strip_prefix("# ")?;
            let (key, pat) = l.split_once(':')?;
            let pat = pat.trim().to_string();
            match key {
                "check" => Some(Directive::Check(pat)),
                "nextln" => Some(Directive::Nextln(pat)),
                "not" => Some(Directive::Not(pat)),
                _ => None,
            }
        })
        .collect()
}

/// Matches `output` against `script`: each `check` finds the first line at or after the
/// current position that contains its text; `nextln` must be the line right after the last
/// match; a `not` must occur in no line between the match before it and the match after it (or
/// the end).
fn filecheck(output: &str, script: &[Directive]) -> Result<(), String> {
    let lines: Vec<&str> = output.lines().collect();
    let mut pos = 0;
    let mut last: Option<usize> = None;
    let mut nots: Vec<&str> = Vec::new();
    let check_nots = |nots: &mut Vec<&str>, from: usize, to: usize| -> Result<(), String> {
        for pat in nots.drain(..) {
            if let Some(i) = (from..to).find(|&i| lines[i].contains(pat)) {
                return Err(format!(
                    "`not: {pat}` occurs at output line {}: {}",
                    i + 1,
                    lines[i]
                ));
            }
        }
        Ok(())
    };
    for d in script {
        match d {
            Directive::Check(pat) => {
                let Some(i) = (pos..lines.len()).find(|&i| lines[i].contains(pat.as_str())) else {
                    return Err(format!(
                        "`check: {pat}` matches no line after output line {pos}"
                    ));
                };
                check_nots(&mut nots, pos, i)?;
                last = Some(i);
                pos = i + 1;
            }
            Directive::Nextln(pat) => {
                let Some(l) = last else {
                    return Err(format!("`nextln: {pat}` before any `check`"));
                };
                if !lines.get(l + 1).is_some_and(|x| x.contains(pat.as_str())) {
                    return Err(format!(
                        "`nextln: {pat}`: output line {} is `{}`",
                        l + 2,
                        lines.get(l + 1).copied().unwrap_or("<end>")
                    ));
                }
                last = Some(l + 1);
                pos = l + 2;
            }
            Directive::Not(pat) => nots.push(pat),
        }
    }
    check_nots(&mut nots, pos, lines.len())
}

#[test]
fn the_matcher_follows_check_nextln_and_not() {
    let out = "a one\nb two\nc three\nd four\n";
    let ok = |s: &str| filecheck(out, &directives(s));
    assert!(ok("# check: one\n# nextln: two\n# check: four\n").is_ok());
    assert!(ok("# check: two\n# check: one\n").is_err());
    assert!(ok("# check: one\n# nextln: three\n").is_err());
    assert!(ok("# check: one\n# not: three\n# check: four\n").is_err());
    assert!(ok("# check: one\n# not: zzz\n# check: four\n").is_ok());
    assert!(ok("# check: three\n# not: two\n").is_ok());
    assert!(ok("# check: two\n# not: four\n").is_err());
}

// ---- `test: pipeline` ----

enum Expect {
    Errors(Vec<(String, usize)>),
    Runs(Vec<String>),
}

fn expectation(source: &str) -> Expect {
    let errors = expectations(source);
    let runs = source.lines().any(|l| l.trim() == "# runs");
    assert!(
        runs == errors.is_empty(),
        "a pipeline filetest states either `# runs` or `# expect:` lines"
    );
    if runs {
        Expect::Runs(
            source
                .lines()
                .filter_map(|l| l.strip_prefix("# log:"))
                .map(|s| s.trim().to_string())
                .collect(),
        )
    } else {
        Expect::Errors(errors)
    }
}

/// The bits of every output, for `seed`'s inputs.
fn output_bits(func: &Function, seed: u64) -> Vec<Vec<u32>> {
    let inputs = interp::random_inputs(func, seed);
    let result = interp::interpret(func, &inputs)
        .unwrap_or_else(|e| panic!("`{}` does not interpret: {e}", func.name));
    result
        .outputs
        .iter()
        .map(|a| a.data.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// Pipelines `func` through the compile context (`choose-auto-stages`, `pipeline`) and checks
/// that it keeps its bits; returns the log.
fn assert_same_bits(func: &Function, what: &str) -> PipelineLog {
    let mut piped = func.clone();
    let mut log = PipelineLog::default();
    let result = Context::new(CompileOptions::default(), &mut log).pipeline_annotated(&mut piped);
    if let Err(f) = result {
        panic!("{what}: the pipeliner rejects it: {f:#?}\n{log}");
    }
    for seed in [0, 1, 2] {
        assert!(
            output_bits(func, seed) == output_bits(&piped, seed),
            "{what}: the pipelined IR gives other bits than the original (seed {seed})"
        );
    }
    log
}

/// For a kernel the legality check rejects: with the check off it is pipelined, and the result
/// changes (other bits, or a read of memory nothing wrote) — unless the header says
/// `# check off: same bits` (a reversed dependence whose reversal happens not to matter).
fn check_off_changes_result(func: &Function, source: &str) -> Option<String> {
    let mut piped = func.clone();
    let off = PipelineOptions {
        legality_check: false,
        ..Default::default()
    };
    if penguin::pipeline::pipeline_function(&mut piped, &off).is_err() {
        // Not a legality rejection.
        return None;
    }
    let same = [0, 1].iter().all(|&seed| {
        let inputs = interp::random_inputs(func, seed);
        let want = interp::interpret(func, &inputs).ok().map(|r| r.outputs);
        let got = interp::interpret(&piped, &inputs).ok().map(|r| r.outputs);
        let bits = |o: Option<Vec<interp::Array>>| {
            o.map(|v| {
                v.iter()
                    .map(|a| a.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            })
        };
        bits(want) == bits(got)
    });
    let says_same = source.lines().any(|l| l.trim() == "# check off: same bits");
    (same != says_same).then(|| {
        format!(
            "with the legality check off the pipelined kernel gives {} bits",
            if same { "the same" } else { "other" }
        )
    })
}

fn run_pipeline(path: &Path, file: &str, source: &str) -> Result<(), String> {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("UTF-8 file name")
        .to_string();
    let func = frontend::compile(source, None).map_err(|e| format!("does not compile: {e:#?}"))?;
    match expectation(source) {
        Expect::Runs(lines) => {
            let log = assert_same_bits(&func, file);
            if !log
                .remarks
                .iter()
                .any(|r| matches!(r, PipelineRemark::Extended { .. }))
            {
                return Err(format!("no loop was pipelined\n{log}"));
            }
            let missing: Vec<&String> = lines.iter().filter(|w| !log.contains(w)).collect();
            if !missing.is_empty() {
                return Err(format!("the log lacks {missing:?}:\n{log}"));
            }
            Ok(())
        }
        Expect::Errors(mut expected) => {
            let mut piped = func.clone();
            let mut log = PipelineLog::default();
            let failure = match Context::new(CompileOptions::default(), &mut log)
                .pipeline_annotated(&mut piped)
            {
                Ok(()) => return Err("the pipeliner accepts it".to_string()),
                Err(f) => f,
            };
            let diags = match failure {
                driver::Failure::Diagnostics(d) => d,
                other => return Err(format!("not a diagnostic: {other:?}")),
            };
            let mut actual: Vec<(String, usize)> = diags
                .iter()
                .map(|e| (e.code.to_string(), line_of(source, e.span.start)))
                .collect();
            expected.sort();
            actual.sort();
            let text = frontend::diagnostic::render_plain(file, source, &diags);
            if expected != actual {
                return Err(format!(
                    "\n  expected {expected:?}\n  actual   {actual:?}\n{text}"
                ));
            }
            // On error the function is left as it was.
            if penguin::write_function(&piped) != penguin::write_function(&func) {
                return Err("a failed pipeliner changed the function".to_string());
            }
            insta::assert_snapshot!(name, text);
            check_off_changes_result(&func, source).map_or(Ok(()), Err)
        }
    }
}

/// Every example and every `tests/good` kernel (good for the front end) is accepted and keeps its
/// bits; the good corpus includes a loop annotated inside an annotated loop (nested pipelining).
#[test]
fn examples_and_good_kernels_keep_their_bits() {
    let mut count = 0;
    for dir in ["examples", "tests/good"] {
        for path in nk_files(dir) {
            let source = std::fs::read_to_string(&path).expect("readable file");
            let (module, errors) = frontend::parse(&source);
            assert!(errors.is_empty(), "{}", path.display());
            for k in &module.kernels {
                let what = format!("{}::{}", path.display(), k.name.name);
                let func = frontend::compile(&source, Some(&k.name.name))
                    .unwrap_or_else(|e| panic!("{what} does not compile: {e:#?}"));
                assert_same_bits(&func, &what);
                count += 1;
            }
        }
    }
    assert!(count >= 8, "only {count} kernels");
}

#[test]
fn expectations_are_parsed() {
    match expectation("# expect: E0401 @ 3\n# expect: E0430 @ 12\ndef k():\n") {
        Expect::Errors(e) => {
            assert_eq!(e, vec![("E0401".to_string(), 3), ("E0430".to_string(), 12)])
        }
        Expect::Runs(_) => panic!("expected errors"),
    }
    match expectation("# runs\n# log: stage 0: t = load\n") {
        Expect::Runs(l) => assert_eq!(l, vec!["stage 0: t = load".to_string()]),
        Expect::Errors(_) => panic!("expected runs"),
    }
}

// ---- `test: bir` ----

fn expected_errors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# error: "))
        .map(str::to_string)
        .collect()
}

fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn run_bir(text: &str) -> Result<(), String> {
    let (func, bir) = parse_bir(text).map_err(|e| format!("does not read: {e}"))?;
    let expected = expected_errors(text);
    if expected.is_empty() {
        if let Err(errs) = verify_bir(&func, &bir) {
            let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            return Err(format!("does not verify:\n{}", msgs.join("\n")));
        }
        let written = write_bir(&func, &bir);
        if written != without_comments(text) {
            return Err(format!(
                "does not print back as written:\n{}",
                diff(&without_comments(text), &written)
            ));
        }
        let (func2, bir2) = parse_bir(&written).map_err(|e| format!("printed BIR: {e}"))?;
        if write_bir(&func2, &bir2) != written {
            return Err("the printed BIR does not print back the same".to_string());
        }
        let lowered = lower_function(&func).map_err(|e| format!("does not lower: {e}"))?;
        if write_bir(&func, &lowered) != written {
            return Err("lowering the reader's Function gives other BIR".to_string());
        }
        return Ok(());
    }
    let errs = match verify_bir(&func, &bir) {
        Ok(()) => return Err(format!("verified, expected `{}`", expected[0])),
        Err(errs) => errs,
    };
    let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    match_errors(&msgs, &expected)
}

/// Exactly the `expected` errors: each is contained in one of `msgs`, and there are as many.
fn match_errors(msgs: &[String], expected: &[String]) -> Result<(), String> {
    for want in expected {
        if !msgs.iter().any(|m| m.contains(want.as_str())) {
            return Err(format!(
                "no error contains `{want}`; errors:\n{}",
                msgs.join("\n")
            ));
        }
    }
    if msgs.len() != expected.len() {
        return Err(format!(
            "expected exactly the listed errors; got:\n{}",
            msgs.join("\n")
        ));
    }
    Ok(())
}

// ---- `test: pir` ----

fn run_pir(text: &str) -> Result<(), String> {
    use penguin::{parse_function, verify_function, write_function};
    let expected = expected_errors(text);
    let f = match parse_function(text) {
        Ok(f) => f,
        Err(e) => {
            let msg = e.to_string();
            return match expected.as_slice() {
                [want] if msg.contains(want.as_str()) => Ok(()),
                _ => Err(format!("does not parse: {msg}")),
            };
        }
    };
    let msgs: Vec<String> = match verify_function(&f) {
        Ok(()) => Vec::new(),
        Err(errs) => errs.iter().map(|e| e.to_string()).collect(),
    };
    if !expected.is_empty() {
        return match_errors(&msgs, &expected);
    }
    if !msgs.is_empty() {
        return Err(format!("does not verify:\n{}", msgs.join("\n")));
    }
    let written = write_function(&f);
    if written != without_comments(text) {
        return Err(format!(
            "the printer's canonical form differs from the file:\n{}",
            diff(&without_comments(text), &written)
        ));
    }
    let g = parse_function(&written).map_err(|e| format!("the printed text: {e}"))?;
    if write_function(&g) != written {
        return Err("the printed text does not print back the same".to_string());
    }
    same_entities(&f, &g)
}

/// Whether two functions hold the same entities, spans aside (immediates compared by their bits,
/// so that NaN payloads must survive too).
fn same_entities(a: &Function, b: &Function) -> Result<(), String> {
    fn bits(op: &penguin::Op) -> Vec<u32> {
        use penguin::{Op, Scale};
        match op {
            Op::TensorScalar { imm, .. } => vec![imm.to_bits()],
            Op::Activation {
                scale: Scale::Imm(v),
                ..
            } => vec![v.to_bits()],
            Op::Memset { value } => vec![value.to_bits()],
            _ => vec![],
        }
    }
    let same = |what: &str, x: String, y: String| {
        if x == y {
            Ok(())
        } else {
            Err(format!(
                "reading the printed text changes its {what}:\n{}",
                diff(&x, &y)
            ))
        }
    };
    same("name", a.name.clone(), b.name.clone())?;
    let tensors = |f: &Function| format!("{:#?}", f.tensors.iter().collect::<Vec<_>>());
    same("tensors", tensors(a), tensors(b))?;
    let axes = |f: &Function| format!("{:#?}", f.axes.iter().collect::<Vec<_>>());
    same("loops", axes(a), axes(b))?;
    let stmts = |f: &Function| {
        f.stmts
            .iter()
            .map(|(s, d)| format!("{s} {d:?} {:?} {:?}\n", f.annots[s], f.stage_tags[s]))
            .collect::<String>()
    };
    same("statements", stmts(a), stmts(b))?;
    let insts = |f: &Function| {
        f.insts
            .iter()
            .map(|(i, d)| format!("{i} {d:?} {:?}\n", bits(&d.op)))
            .collect::<String>()
    };
    same("instructions", insts(a), insts(b))?;
    let rest = |f: &Function| format!("{:?} {:?} {:?}", f.body, f.params, f.outputs);
    same("body, parameters and outputs", rest(a), rest(b))
}

// ---- `test: schedule` ----

const SCHEDULE: &str = "# schedule:";

fn run_schedule(path: &Path, text: &str) -> Result<(), String> {
    let (input, _) = split_section(text, SCHEDULE);
    let (func, bir) = if path.extension().is_some_and(|e| e == "bir") {
        let (func, bir) = parse_bir(input).map_err(|e| format!("does not read: {e}"))?;
        if write_bir(&func, &bir) != without_comments(input) {
            return Err("the BIR does not print back as written".to_string());
        }
        (func, bir)
    } else {
        let func = penguin::parse_function(input).map_err(|e| format!("does not parse: {e}"))?;
        penguin::verify_function(&func).map_err(|e| format!("does not verify: {e:?}"))?;
        let bir = lower_function(&func).map_err(|e| format!("does not lower: {e}"))?;
        (func, bir)
    };
    let got = schedules::render_schedules(&func, bir);
    expect_section(path, text, SCHEDULE, &got)
}

/// Every `.bir` schedule input generated from a `.pir` one is still what lowering that IR writes
/// (so both test the same BIR), and both expect the same schedule.
#[test]
fn generated_schedule_inputs_match_their_penguin_ir() {
    let dir = root().join("schedule");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("filetests/schedule exists") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_none_or(|e| e != "pir") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path.with_extension("bir")) else {
            continue;
        };
        n += 1;
        let ir = std::fs::read_to_string(&path).expect("readable filetest");
        let (ir_input, ir_schedule) = split_section(&ir, SCHEDULE);
        let func = penguin::parse_function(ir_input).expect("the filetest's IR parses");
        let bir = lower_function(&func).expect("the filetest's IR lowers");
        let (input, schedule) = split_section(&text, SCHEDULE);
        assert_eq!(
            write_bir(&func, &bir),
            without_comments(input),
            "{}: not what lowering its .pir writes (regenerate with --ignored)",
            path.display()
        );
        assert_eq!(
            schedule,
            ir_schedule,
            "{}: schedules differ",
            path.display()
        );
    }
    assert!(n >= 20, "{n} generated BIR schedule inputs");
}

/// Writes `filetests/schedule/NAME.bir` for every `NAME.pir` there: the lowered BIR and the
/// `.pir` file's expectation.
#[test]
#[ignore]
fn regenerate_bir_schedule_inputs() {
    let dir = root().join("schedule");
    for entry in std::fs::read_dir(&dir).expect("filetests/schedule exists") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_none_or(|e| e != "pir") {
            continue;
        }
        let ir = std::fs::read_to_string(&path).expect("readable filetest");
        let (input, schedule) = split_section(&ir, SCHEDULE);
        let func = penguin::parse_function(input).expect("the filetest's IR parses");
        let bir = lower_function(&func).expect("the filetest's IR lowers");
        let text = format!(
            "# test: schedule\n# Generated from filetests/schedule/{} (lowering + write_bir).\n{}",
            path.file_name().expect("a file name").to_string_lossy(),
            write_bir(&func, &bir)
        );
        std::fs::write(
            path.with_extension("bir"),
            with_section(&text, SCHEDULE, &schedule.unwrap_or_default()),
        )
        .expect("writable filetest");
    }
}

// ---- `test: print-after PASS`, `emergent`, `isa` ----

const OUTPUT: &str = "# output:";

/// Every printed block reads back with its form's parser.
fn reads_back(p: &pipeline::Printed) -> Result<(), String> {
    let r = match p.form {
        Form::Penguin => penguin::parse_function(&p.text)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Form::Bir => parse_bir(&p.text).map(|_| ()).map_err(|e| e.to_string()),
        Form::Isa => runtime_sim::text::parse(&p.text)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Form::Summary => Ok(()),
    };
    r.map_err(|e| format!("the IR printed after `{}` does not read back: {e}", p.pass))
}

/// The options of a print-after filetest: `# pipeline: MODE`, `# peel`.
fn compile_options(text: &str, pass: &str) -> Result<CompileOptions, String> {
    let mode = match option(text, "pipeline") {
        None => PipelineMode::Default,
        Some(m) => *PipelineMode::ALL
            .iter()
            .find(|x| x.name() == m)
            .ok_or_else(|| format!("unknown `# pipeline: {m}`"))?,
    };
    if !pipeline::is_pass(pass) {
        return Err(format!("`{pass}` is not a pass ({:?})", pipeline::PASSES));
    }
    Ok(CompileOptions {
        mode,
        peel: text.lines().any(|l| l.trim() == "# peel"),
        print_after: PrintAfter::Passes(vec![pass.to_string()]),
        ..CompileOptions::default()
    })
}

fn run_printed(path: &Path, text: &str, pass: &str) -> Result<(), String> {
    let opts = compile_options(text, pass)?;
    let (input, _) = split_section(text, OUTPUT);
    let source = Source {
        path: path.to_path_buf(),
        text: input.to_string(),
    };
    let mut log = PipelineLog::default();
    let mut cx = Context::new(opts, &mut log);
    let compiled = cx.compile(&source, None, &frontend::Specs::new());
    let mut got = String::new();
    for p in &cx.instrument.printed {
        reads_back(p)?;
        got.push_str(&p.render());
    }
    if let Err(f) = compiled {
        got.push_str(&format!("# error: {f:?}\n"));
    }
    if cx.instrument.printed.is_empty() {
        return Err(format!("the pass `{pass}` did not run:\n{got}"));
    }
    let script = directives(text);
    if script.is_empty() {
        expect_section(path, text, OUTPUT, &got)
    } else {
        filecheck(&got, &script).map_err(|e| format!("{e}\n--- output:\n{got}"))
    }
}

// ---- Per-example snapshots ----

/// The Penguin IR the backend gets and the program, on path `mode`; a failure is its debug form.
fn example_outputs(src: &Source, mode: PipelineMode) -> (String, String) {
    let mut log = PipelineLog::default();
    let mut cx = Context::new(CompileOptions::for_mode(mode), &mut log);
    let result = (|| {
        let mut func = cx.lower(src, None, &frontend::Specs::new())?;
        cx.pipeline(&mut func)?;
        cx.prepare_backend(&mut func)?;
        let pir = penguin::write_function(&func);
        let compiled = cx.codegen(&func, Some(&src.text))?;
        Ok::<_, driver::Failure>((pir, runtime_sim::text::print(&compiled.program)))
    })();
    result.unwrap_or_else(|f| {
        let e = format!("# error: {f:?}\n");
        (e.clone(), e)
    })
}

#[test]
fn example_snapshots() {
    let examples = nk_files("examples");
    assert!(examples.len() >= 20);
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = examples.get(i) else {
                    break;
                };
                let src = Source::read(path).expect("readable example");
                let stem = path.file_stem().expect("a name").to_string_lossy();
                let dir = root().join("examples").join(stem.as_ref());
                for mode in PipelineMode::ALL {
                    let (pir, isa) = example_outputs(&src, mode);
                    for (ext, got) in [("pir", pir), ("isa", isa)] {
                        let file = dir.join(format!("{}.{ext}", mode.name()));
                        let want = std::fs::read_to_string(&file).unwrap_or_default();
                        if want == got {
                            continue;
                        }
                        if bless() {
                            std::fs::create_dir_all(&dir).expect("creatable directory");
                            std::fs::write(&file, &got).expect("writable snapshot");
                        } else {
                            let mut d = diff(&want, &got);
                            if d.len() > 4000 {
                                d.truncate(4000);
                                d.push_str("\n...");
                            }
                            failures
                                .lock()
                                .expect("no panic holds the lock")
                                .push(format!(
                                    "{}: changed (NKC_BLESS=1 rewrites it)\n{d}",
                                    file.display()
                                ));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().expect("no panic holds the lock");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- `test: legality` ----

/// A `# plan:` line's pipeline plan of `func`.
fn parse_plan(func: &Function, line: &str) -> Result<penguin::pipeline::PipelinePlan, String> {
    let mut words = line.split_whitespace();
    let iv = words.next().ok_or("a plan names its loop")?;
    let axis = func
        .axes
        .iter()
        .find(|(_, a)| a.iv_name == iv)
        .map(|(ax, _)| ax)
        .ok_or_else(|| format!("no loop `{iv}`"))?;
    let list = |v: &str| -> Result<Vec<u32>, String> {
        v.split(',')
            .filter(|x| !x.is_empty())
            .map(|x| x.parse().map_err(|_| format!("bad number `{x}`")))
            .collect()
    };
    let (mut stages, mut order, mut buffers, mut num_stages) =
        (Vec::new(), Vec::new(), Vec::new(), None);
    for w in words {
        let (key, value) = w
            .split_once('=')
            .ok_or_else(|| format!("bad plan word `{w}`"))?;
        match key {
            "stages" => stages = list(value)?,
            "order" => order = list(value)?.into_iter().map(|x| x as usize).collect(),
            "num_stages" => num_stages = Some(value.parse().map_err(|_| "bad num_stages")?),
            "buffers" => {
                for b in value.split(',') {
                    let (t, n) = b
                        .split_once(':')
                        .ok_or_else(|| format!("bad buffer `{b}`"))?;
                    let tensor = func
                        .tensors
                        .iter()
                        .find(|(_, d)| d.name == t)
                        .map(|(t, _)| t)
                        .ok_or_else(|| format!("no tensor `{t}`"))?;
                    buffers.push((tensor, n.parse().map_err(|_| format!("bad count `{n}`"))?));
                }
            }
            _ => return Err(format!("unknown plan key `{key}`")),
        }
    }
    Ok(penguin::pipeline::PipelinePlan {
        axis,
        num_stages: num_stages.unwrap_or_else(|| stages.iter().max().map_or(1, |s| s + 1)),
        stages,
        order,
        buffers,
    })
}

/// The verdict on one plan, as the `# output:` section shows it.
fn render_legality(
    func: &Function,
    plan: &penguin::pipeline::PipelinePlan,
) -> Result<String, String> {
    use penguin::pipeline::{compute_violations, compute_violations_with, LegalityOptions};
    let fast = match compute_violations(func, plan) {
        Ok(r) => r,
        Err(e) => return Ok(format!("  error: {e}\n")),
    };
    let all = compute_violations_with(func, plan, &LegalityOptions { prefilter: false })
        .map_err(|e| format!("the check without its fast path fails: {e}"))?;
    if fast.violations != all.violations {
        return Err("the fast path changed the verdict".to_string());
    }
    if all.tensors_preserved != 0 {
        return Err("without its fast path the check proved a tensor without ISL".to_string());
    }
    let iters = |v: &[(penguin::Axis, i64)]| -> String {
        let parts: Vec<String> = v
            .iter()
            .map(|(a, i)| format!("{}={i}", func.axes[*a].iv_name))
            .collect();
        parts.join(", ")
    };
    let mut out = String::new();
    if fast.violations.is_empty() {
        out.push_str("  legal\n");
    }
    for v in &fast.violations {
        out.push_str(&format!(
            "  {:?} on `{}`: `{}` [{}] must run before `{}` [{}]\n",
            v.kind,
            func.tensors[v.tensor].name,
            penguin::verify::describe_inst(func, v.source),
            iters(&v.source_iter),
            penguin::verify::describe_inst(func, v.sink),
            iters(&v.sink_iter),
        ));
    }
    out.push_str(&format!(
        "  fast path: {} tensor(s) proved, {} checked by ISL; without it: flow {}, anti {}, output {}\n",
        fast.tensors_preserved, fast.tensors_checked, all.flow, all.anti, all.output
    ));
    Ok(out)
}

fn run_legality(path: &Path, text: &str) -> Result<(), String> {
    let (input, _) = split_section(text, OUTPUT);
    let func = penguin::parse_function(input).map_err(|e| format!("does not parse: {e}"))?;
    penguin::verify_function(&func).map_err(|e| format!("does not verify: {e:?}"))?;
    let mut got = String::new();
    let plans: Vec<&str> = input
        .lines()
        .filter_map(|l| l.strip_prefix("# plan:"))
        .map(str::trim)
        .collect();
    if plans.is_empty() {
        return Err("no `# plan:` line".to_string());
    }
    for line in plans {
        let plan = parse_plan(&func, line)?;
        got.push_str(&format!("plan {line}:\n"));
        got.push_str(&render_legality(&func, &plan)?);
    }
    expect_section(path, text, OUTPUT, &got)
}
