//! The compile pipeline from the command line: `--print-after-all` and `--print-after PASS`
//! print every pass's IR in order and each printed block reads back with its parser; `nkc`
//! takes Penguin IR text (`.pir`) and reports its errors as diagnostics.

mod common;

use common::{nkc, scratch, stderr, stdout};
use nkc::pipeline::{split_printed, Form, PASSES};

/// Each block of `--print-after-all`'s output reads back with its form's parser.
fn assert_reads_back(what: &str, blocks: &[nkc::pipeline::Printed]) {
    for b in blocks {
        let r = match b.form {
            Form::Penguin => penguin::parse_function(&b.text)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Form::Bir => backend::codegen::bir_parse::parse_bir(&b.text)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Form::Isa => runtime_sim::text::parse(&b.text)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Form::Summary => {
                assert!(b.text.starts_with("# "), "{what}: {}", b.text);
                Ok(())
            }
        };
        if let Err(e) = r {
            panic!(
                "{what}: the IR after `{}` does not read back: {e}\n{}",
                b.pass, b.text
            );
        }
    }
}

/// The passes printed run in the order of [`PASSES`], but that the backend's `lower-bir`,
/// `schedule`, `modulo` and `expand` repeat as a group while `expand` adds ring slots.
fn assert_in_order(what: &str, blocks: &[nkc::pipeline::Printed]) {
    let index = |p: &str| PASSES.iter().position(|x| *x == p).expect("a known pass");
    for w in blocks.windows(2) {
        let (a, b) = (index(&w[0].pass), index(&w[1].pass));
        let repeat = w[0].pass == "expand" && w[1].pass == "lower-bir";
        assert!(
            a < b || repeat,
            "{what}: `{}` printed after `{}`",
            w[1].pass,
            w[0].pass
        );
    }
}

#[test]
fn print_after_all_prints_every_pass_in_order_and_each_block_reads_back() {
    let cases = [
        ("examples/matmul.nk", "default", true),
        ("examples/matmul.nk", "auto", false),
        ("examples/matmul_mode_b.nk", "annotated", true),
        ("examples/softmax_stages.nk", "emergent", false),
        ("examples/layernorm_stages.nk", "none", false),
        ("examples/exp_stages.nk", "default", false),
    ];
    for (file, path, peel) in cases {
        let mut args = vec!["compile", file, "--emit", "isa", "--pipeline", path];
        args.push("--print-after-all");
        let o = nkc(&args);
        let what = format!("{file} --pipeline {path}");
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let blocks = split_printed(&stderr(&o));
        assert_reads_back(&what, &blocks);
        assert_in_order(&what, &blocks);
        let passes: Vec<&str> = blocks.iter().map(|b| b.pass.as_str()).collect();
        for must in [
            "lower",
            "fold-zeros",
            "lower-bir",
            "schedule",
            "modulo",
            "alloc",
            "emit",
            "clamp",
            "sync",
            "prune-waits",
            "assemble",
            "hoist",
        ] {
            assert!(passes.contains(&must), "{what}: no `{must}` in {passes:?}");
        }
        // The last block is the program `--emit isa` prints.
        let plain = nkc(&["compile", file, "--emit", "isa", "--pipeline", path]);
        assert_eq!(
            blocks.last().map(|b| b.text.as_str()),
            Some(&*stdout(&plain))
        );
        assert_eq!(
            stdout(&o),
            stdout(&plain),
            "{what}: --print-after-all changed stdout"
        );
        if peel {
            let o = nkc(&[
                "compile",
                file,
                "--emit",
                "isa",
                "--pipeline",
                path,
                "--peel",
                "--print-after-all",
            ]);
            assert!(o.status.success(), "{what} --peel: {}", stderr(&o));
            let blocks = split_printed(&stderr(&o));
            assert_reads_back(&what, &blocks);
            assert_in_order(&what, &blocks);
        }
    }
}

/// On `examples/matmul.nk` every pass of the default path prints, in the order of `PASSES`.
#[test]
fn print_after_all_on_matmul_names_each_pass() {
    let o = nkc(&["compile", "examples/matmul.nk", "--print-after-all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let passes: Vec<String> = split_printed(&stderr(&o))
        .into_iter()
        .map(|b| b.pass)
        .collect();
    assert_eq!(
        passes,
        [
            "lower",
            "choose-auto-stages",
            "pipeline",
            "fold-zeros",
            "flatten",
            "unroll",
            "emergent",
            "retime",
            "lower-bir",
            "schedule",
            "modulo",
            "expand",
            "alloc",
            "emit",
            "clamp",
            "sync",
            "prune-waits",
            "assemble",
            "hoist"
        ]
    );
    // Without `--emit`, standard output is still the Penguin IR as lowered.
    let plain = nkc(&["compile", "examples/matmul.nk"]);
    assert_eq!(stdout(&o), stdout(&plain));
}

#[test]
fn print_after_one_pass_prints_only_it() {
    let o = nkc(&[
        "compile",
        "examples/exp_stages.nk",
        "--emit",
        "bir",
        "--print-after",
        "pipeline",
        "--print-after",
        "sync",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let blocks = split_printed(&stderr(&o));
    let passes: Vec<&str> = blocks.iter().map(|b| b.pass.as_str()).collect();
    assert_eq!(passes, ["pipeline", "sync"]);
    assert!(
        blocks[0].text.contains("pipelined(stages=3"),
        "{}",
        blocks[0].text
    );
    // `run` prints too.
    let o = nkc(&["run", "examples/exp_stages.nk", "--print-after", "emergent"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(split_printed(&stderr(&o)).len(), 1);
    // A name that is no pass is a usage error listing the passes.
    let o = nkc(&["compile", "examples/exp_stages.nk", "--print-after", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the passes are: lower, "),
        "{}",
        stderr(&o)
    );
}

/// `nkc compile FILE.pir` starts from Penguin text: the Penguin IR `--emit pipelined` printed
/// compiles to the program the `.nk` file compiles to on the annotated path, `check` and
/// `run --check` take it too.
#[test]
fn penguin_text_is_an_input() {
    let dir = scratch("print-after", "pir");
    for ex in ["exp_stages", "matmul", "softmax_stages"] {
        let nk = format!("examples/{ex}.nk");
        let o = nkc(&["compile", &nk, "--emit", "pipelined"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let pir = dir.join(format!("{ex}.pir"));
        std::fs::write(&pir, stdout(&o)).expect("writable scratch file");
        let pir = pir.to_str().expect("UTF-8 path");
        for path in ["annotated", "none"] {
            let from_pir = nkc(&["compile", pir, "--emit", "isa", "--pipeline", path]);
            assert!(from_pir.status.success(), "{ex}: {}", stderr(&from_pir));
            let from_nk = nkc(&["compile", &nk, "--emit", "isa", "--pipeline", "annotated"]);
            if path == "annotated" {
                // The pipelined IR carries no source spans; the program's instructions are the
                // same, their source lines aside.
                let strip = |s: String| -> String {
                    s.lines()
                        .map(|l| l.split(" # line").next().unwrap_or(l).to_string() + "\n")
                        .collect()
                };
                assert_eq!(
                    strip(stdout(&from_pir)).lines().count(),
                    strip(stdout(&from_nk)).lines().count(),
                    "{ex}"
                );
            }
        }
        let o = nkc(&["check", pir]);
        assert!(o.status.success(), "{ex}: {}", stderr(&o));
        let o = nkc(&["run", pir, "--check"]);
        assert!(o.status.success(), "{ex}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("--check: outputs equal"),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn malformed_penguin_text_is_a_diagnostic() {
    let dir = scratch("print-after", "bad-pir");
    let bad = dir.join("bad.pir");
    std::fs::write(
        &bad,
        "kernel k(a) -> (c) {\n  tensor a: hbm f32[128, 64] input\n  tensor c: hbm f32[128, 64] output\n  loop i in 0..4 affine {\n    stmt {\n      c[0 +: 128, 0 +: 64] = frobnicate.dve a[0 +: 128, 0 +: 64]\n    }\n  }\n}\n",
    )
    .expect("writable scratch file");
    let bad = bad.to_str().expect("UTF-8 path");
    for cmd in ["compile", "check", "run"] {
        let o = nkc(&[cmd, bad, "--color", "never"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("error[E0050]: invalid Penguin IR"),
            "{cmd}: {err}"
        );
        assert!(
            err.contains("bad.pir:6:"),
            "{cmd}: no line and column: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // Text that reads but breaks an invariant: E0051 with the verifier's messages.
    let o = nkc(&[
        "compile",
        "filetests/pir/verify/access_arity.pir",
        "--emit",
        "isa",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error[E0051]: the Penguin IR of `k` does not verify (3 error(s))"),
        "{err}"
    );
    assert!(
        err.contains("destination `t` has 0 slot expression(s)"),
        "{err}"
    );
    // Empty and binary files.
    for (name, bytes) in [("empty.pir", &b""[..]), ("nul.pir", &b"kernel \0"[..])] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("writable scratch file");
        let o = nkc(&["compile", p.to_str().expect("UTF-8 path")]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("error[E005"), "{name}: {}", stderr(&o));
    }
    // A `.pir` file has no syntax tree.
    let o = nkc(&["compile", bad, "--emit", "ast"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is Penguin IR"), "{}", stderr(&o));
}

/// `--time-passes` lists the passes that ran, in the order `--print-after-all` prints them, each
/// with a time, then a total that is their sum.
#[test]
fn time_passes_lists_each_pass_and_the_total() {
    let args = ["compile", "examples/matmul.nk", "--emit", "isa"];
    let printed = nkc(&[&args[..], &["--print-after-all"]].concat());
    let timed = nkc(&[&args[..], &["--time-passes"]].concat());
    assert!(timed.status.success(), "{}", stderr(&timed));
    assert_eq!(
        stdout(&timed),
        stdout(&printed),
        "the program does not change"
    );
    let text = stderr(&timed);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# pass times (ms)"));
    let rows: Vec<(f64, String)> = lines
        .map(|l| {
            let (ms, pass) = l.trim().split_once("  ").expect("`MS  PASS`");
            (ms.parse().expect("milliseconds"), pass.trim().to_string())
        })
        .collect();
    let (total, passes) = rows.split_last().expect("a total line");
    assert_eq!(total.1, "total");
    let names: Vec<&str> = passes.iter().map(|(_, p)| p.as_str()).collect();
    let want: Vec<String> = split_printed(&stderr(&printed))
        .into_iter()
        .map(|b| b.pass)
        .collect();
    assert_eq!(names, want);
    let sum: f64 = passes.iter().map(|(ms, _)| ms).sum();
    assert!(passes.iter().all(|(ms, _)| *ms >= 0.0));
    assert!(
        (sum - total.0).abs() < 0.001 * passes.len() as f64 + 1e-9,
        "{sum} vs {}",
        total.0
    );
}
