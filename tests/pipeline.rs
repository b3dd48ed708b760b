//! The pipeliner corpus: every `tests/pipeline/*.nk` states its expectation in header comments.
//!
//! - `# expect: CODE @ LINE` (one or more): the pipeliner (with its legality check) rejects the
//!   kernel with exactly these diagnostics (code and 1-based line of the primary span); the
//!   rendered diagnostics are snapshotted with insta.
//! - `# runs` and `# log: TEXT` lines: the kernel is pipelined, every `TEXT` appears in a line of
//!   the `--log pipeliner` log, and the interpreter gives identical bits on the original and the
//!   pipelined IR, on several seeded inputs.
//!
//! Every example and every `tests/good` kernel must also keep its bits through the pipeliner.

use penguin::interp;
use penguin::pipeline::{self, PipelineLog, PipelineOptions};
use penguin::Function;

mod common;

use common::{expectations, line_of, nk_files};

enum Expect {
    Errors(Vec<(String, usize)>),
    Runs(Vec<String>),
}

fn expectation(source: &str) -> Expect {
    let errors = expectations(source);
    let runs = source.lines().any(|l| l.trim() == "# runs");
    assert!(
        runs == errors.is_empty(),
        "a corpus file states either `# runs` or `# expect:` lines"
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

/// Pipelines `func` and checks that it keeps its bits; returns the log.
fn assert_same_bits(func: &Function, what: &str) -> PipelineLog {
    let mut piped = func.clone();
    let mut log = PipelineLog::default();
    // `num_stages="auto"` becomes stage ids first, as the driver does.
    for line in backend::emergent::choose_auto_stages(&mut piped) {
        log.push(line);
    }
    if let Err(errors) =
        pipeline::pipeline_function_logged(&mut piped, &PipelineOptions::default(), &mut log)
    {
        panic!("{what}: the pipeliner rejects it: {errors:#?}\n{log}");
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
fn check_off_changes_result(func: &Function, source: &str, file: &str) -> Option<String> {
    let mut piped = func.clone();
    let off = PipelineOptions {
        legality_check: false,
    };
    if pipeline::pipeline_function(&mut piped, &off).is_err() {
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
            "{file}: with the legality check off the pipelined kernel gives {} bits",
            if same { "the same" } else { "other" }
        )
    })
}

#[test]
fn pipeline_corpus() {
    let files = nk_files("tests/pipeline");
    assert!(files.len() >= 25, "the corpus has {} files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("UTF-8 file name")
            .to_string();
        let file = format!("tests/pipeline/{name}.nk");
        let source = std::fs::read_to_string(path).expect("readable file");
        let func = frontend::compile(&source, None)
            .unwrap_or_else(|e| panic!("{file} does not compile: {e:#?}"));
        match expectation(&source) {
            Expect::Runs(lines) => {
                let log = assert_same_bits(&func, &file);
                assert!(
                    log.lines
                        .iter()
                        .any(|l| l.contains("created the extended loop")),
                    "{file}: no loop was pipelined\n{log}"
                );
                for want in &lines {
                    if !log.contains(want) {
                        failures.push(format!("{file}: the log lacks `{want}`:\n{log}"));
                    }
                }
            }
            Expect::Errors(mut expected) => {
                let mut piped = func.clone();
                backend::emergent::choose_auto_stages(&mut piped);
                let errors =
                    match pipeline::pipeline_function(&mut piped, &PipelineOptions::default()) {
                        Ok(_) => {
                            failures.push(format!("{file}: the pipeliner accepts it"));
                            continue;
                        }
                        Err(e) => e,
                    };
                assert!(
                    errors.iter().all(|e| !e.is_internal()),
                    "{file}: internal error {errors:#?}"
                );
                let diags: Vec<_> = errors.iter().map(|e| e.to_diagnostic()).collect();
                let mut actual: Vec<(String, usize)> = diags
                    .iter()
                    .map(|e| (e.code.to_string(), line_of(&source, e.span.start)))
                    .collect();
                expected.sort();
                actual.sort();
                let text = frontend::diagnostic::render_plain(&file, &source, &diags);
                if expected != actual {
                    failures.push(format!(
                        "{file}:\n  expected {expected:?}\n  actual   {actual:?}\n{text}"
                    ));
                    continue;
                }
                // On error the function is left as it was.
                assert_eq!(
                    penguin::write_function(&piped),
                    penguin::write_function(&func),
                    "{file}: a failed pipeliner changed the function"
                );
                insta::assert_snapshot!(name, text);
                if let Some(failure) = check_off_changes_result(&func, &source, &file) {
                    failures.push(failure);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
