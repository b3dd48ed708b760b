//! End-to-end tests of the `nkc` binary: exit codes, stderr, `compile --emit penguin`, and `run` on
//! every example with outputs checked against references computed here, independently of nkc.

mod common;

use common::{nkc, scratch, stderr, stdout};

use nkc::npy::{read_npy, write_npy};
use penguin::interp::Array;
use std::path::Path;

const EXAMPLES: [&str; 4] = [
    "examples/tensor_add.nk",
    "examples/matmul.nk",
    "examples/softmax.nk",
    "examples/exp_stages.nk",
];

#[test]
fn check_accepts_every_example_silently() {
    for ex in EXAMPLES {
        let o = nkc(&["check", ex]);
        assert_eq!(o.status.code(), Some(0), "{ex}: {}", stderr(&o));
        assert!(
            o.stderr.is_empty(),
            "{ex} printed on stderr: {}",
            stderr(&o)
        );
    }
}

#[test]
fn check_rejects_a_bad_kernel_with_exit_1_and_plain_diagnostics() {
    let dir = scratch("cli", "bad");
    let path = dir.join("bad.nk");
    std::fs::write(
        &path,
        "def k(a: nl.hbm[nl.float32, 128, 64]):\n    t = nl.load(a[0:128, :])\n    u = nl.exp(v)\n    return t\n",
    )
    .unwrap();
    let o = nkc(&["check", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("error["), "{err}");
    assert!(
        err.contains("bad.nk:3:"),
        "the diagnostic names the line: {err}"
    );
    assert!(
        !err.contains("\u{1b}["),
        "no colour when stderr is not a terminal: {err}"
    );
    let colored = nkc(&["--color", "always", "check", path.to_str().unwrap()]);
    assert!(stderr(&colored).contains("\u{1b}["), "colour on request");
}

#[test]
fn missing_file_is_an_error_not_a_panic() {
    let o = nkc(&["check", "no/such/kernel.nk"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
}

#[test]
fn compile_emits_penguin_text_that_parses_back() {
    for ex in EXAMPLES {
        let o = nkc(&["compile", ex, "--emit", "penguin"]);
        assert_eq!(o.status.code(), Some(0), "{ex}: {}", stderr(&o));
        let text = stdout(&o);
        let func = penguin::parse::parse_function(&text)
            .unwrap_or_else(|e| panic!("{ex}: the emitted IR does not parse: {e}\n{text}"));
        assert_eq!(penguin::write::write_function(&func), text, "{ex}");
    }
    let dir = scratch("cli", "emit");
    let out = dir.join("t.pir");
    let o = nkc(&[
        "compile",
        "examples/tensor_add.nk",
        "--emit",
        "penguin",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("tensor_add"));
}

/// A deterministic input: small values that differ per element.
fn input(shape: &[usize], salt: u32) -> Array {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| {
            let h = (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(salt.wrapping_mul(40_503));
            ((h >> 8) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    Array {
        shape: shape.to_vec(),
        data,
    }
}

/// Runs an example with the given inputs and returns its outputs by name.
fn run_example(ex: &str, inputs: &[(&str, &Array)], outputs: &[&str]) -> Vec<Array> {
    let dir = scratch("cli", Path::new(ex).file_stem().unwrap().to_str().unwrap());
    let mut args: Vec<String> = vec![
        "run".into(),
        ex.into(),
        "--engine".into(),
        "interp".into(),
        "--output".into(),
        dir.join("out").display().to_string(),
    ];
    for (name, array) in inputs {
        let p = dir.join(format!("{name}.npy"));
        write_npy(&p, array).unwrap();
        args.push("--input".into());
        args.push(format!("{name}={}", p.display()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = nkc(&args);
    assert_eq!(o.status.code(), Some(0), "{ex}: {}", stderr(&o));
    outputs
        .iter()
        .map(|name| read_npy(&dir.join("out").join(format!("{name}.npy"))).unwrap())
        .collect()
}

fn assert_close(got: &Array, want: &[f32], shape: &[usize], rel: f32, what: &str) {
    assert_eq!(got.shape, shape, "{what}: shape");
    for (i, (&g, &w)) in got.data.iter().zip(want).enumerate() {
        let tol = rel * w.abs().max(1.0);
        assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn tensor_add_runs_and_adds_exactly() {
    let a = input(&[2048, 512], 1);
    let b = input(&[2048, 512], 2);
    let c = &run_example("examples/tensor_add.nk", &[("a", &a), ("b", &b)], &["c"])[0];
    let want: Vec<f32> = a.data.iter().zip(&b.data).map(|(x, y)| x + y).collect();
    assert_close(c, &want, &[2048, 512], 0.0, "c");
}

#[test]
fn matmul_runs_and_matches_a_naive_product() {
    let at = input(&[512, 512], 3);
    let b = input(&[512, 1024], 4);
    let c = &run_example("examples/matmul.nk", &[("at", &at), ("b", &b)], &["c"])[0];
    assert_eq!(c.shape, [512, 1024]);
    // Every 7th row (all four row tiles, every column), in f64.
    for m in (0..512).step_by(7) {
        for n in 0..1024 {
            let mut s = 0f64;
            for k in 0..512 {
                s += f64::from(at.data[k * 512 + m]) * f64::from(b.data[k * 1024 + n]);
            }
            let (got, want) = (c.data[m * 1024 + n], s as f32);
            assert!(
                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                "c[{m}][{n}]: got {got}, want {want}"
            );
        }
    }
}

#[test]
fn softmax_runs_and_matches_a_naive_softmax() {
    let x = input(&[1024, 512], 5);
    let y = &run_example("examples/softmax.nk", &[("x", &x)], &["y"])[0];
    let mut want = vec![0f32; 1024 * 512];
    for r in 0..1024 {
        let row = &x.data[r * 512..(r + 1) * 512];
        let mx = row
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, |m, v| m.max(f64::from(v)));
        let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - mx).exp()).collect();
        let s: f64 = e.iter().sum();
        for c in 0..512 {
            want[r * 512 + c] = (e[c] / s) as f32;
        }
    }
    assert_close(y, &want, &[1024, 512], 1e-5, "y");
    // Every row sums to one.
    for r in 0..1024 {
        let s: f32 = y.data[r * 512..(r + 1) * 512].iter().sum();
        assert!((s - 1.0).abs() < 1e-4, "row {r} sums to {s}");
    }
}

#[test]
fn exp_stages_runs_and_matches_exp() {
    let a = input(&[1024, 512], 6);
    let c = &run_example("examples/exp_stages.nk", &[("a", &a)], &["c"])[0];
    let want: Vec<f32> = a
        .data
        .iter()
        .map(|&v| (f64::from(v).exp()) as f32)
        .collect();
    assert_close(c, &want, &[1024, 512], 1e-6, "c");
}

#[test]
fn run_json_reports_outputs_by_name_and_shape() {
    let o = nkc(&["run", "examples/softmax.nk", "--json", "--seed", "7"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["outputs"]["y"], serde_json::json!([1024, 512]));
    assert_eq!(v["kernel"], "softmax");
    // The seed decides the inputs: the same seed gives the same checksum, another seed another.
    let again = nkc(&["run", "examples/softmax.nk", "--json", "--seed", "7"]);
    let other = nkc(&["run", "examples/tensor_add.nk", "--json", "--seed", "8"]);
    let first = nkc(&["run", "examples/tensor_add.nk", "--json", "--seed", "7"]);
    let w: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(v["summary"], w["summary"]);
    let x: serde_json::Value = serde_json::from_str(&stdout(&other)).unwrap();
    let y: serde_json::Value = serde_json::from_str(&stdout(&first)).unwrap();
    assert_ne!(x["summary"]["c"]["checksum"], y["summary"]["c"]["checksum"]);
}

#[test]
fn run_pipelines_annotated_loops_and_gives_the_same_bits() {
    let piped = nkc(&[
        "run",
        "examples/tensor_add.nk",
        "--engine",
        "interp",
        "--json",
        "--log",
        "pipeliner",
    ]);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert!(
        stderr(&piped).contains("created the extended loop with bounds [0, 18)"),
        "{}",
        stderr(&piped)
    );
    let none = nkc(&[
        "run",
        "examples/tensor_add.nk",
        "--engine",
        "interp",
        "--json",
        "--pipeline",
        "none",
    ]);
    assert_eq!(none.status.code(), Some(0));
    assert!(none.stderr.is_empty(), "{}", stderr(&none));
    let a: serde_json::Value = serde_json::from_str(&stdout(&piped)).unwrap();
    let b: serde_json::Value = serde_json::from_str(&stdout(&none)).unwrap();
    assert_eq!(a["summary"], b["summary"]);
    assert_eq!(a["pipeline"], "default");
    // The pipelined loop runs two more iterations, in which some stages are off.
    assert!(a["stats"]["stmts_skipped"].as_u64().unwrap() > 0);
    let emergent = nkc(&[
        "run",
        "examples/tensor_add.nk",
        "--check",
        "--pipeline",
        "emergent",
        "--log",
        "backend",
    ]);
    assert_eq!(emergent.status.code(), Some(0), "{}", stderr(&emergent));
    assert!(
        stderr(&emergent).contains("emergent: loop `i`: the loads of `ta`, `tb` are issued"),
        "{}",
        stderr(&emergent)
    );
}

#[test]
fn compile_emits_the_pipelined_ir() {
    let o = nkc(&["compile", "examples/tensor_add.nk", "--emit", "pipelined"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("pipelined(stages=3, trip=16)"), "{text}");
    assert!(text.contains("block[i: 2]"), "{text}");
    assert!(text.contains("stage=2 if i >= 2 {"), "{text}");
}

#[test]
fn check_runs_the_legality_check_and_it_can_be_switched_off() {
    let dir = scratch("cli", "legality");
    let p = dir.join("bad.nk");
    std::fs::write(
        &p,
        "def k(a: nl.hbm[nl.float32, 512, 128]):\n    s = nl.ndarray((512, 128), dtype=nl.float32, buffer=nl.shared_hbm)\n    acc = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.sbuf)\n    for i in nl.sequential_range(4):\n        t = nl.load(a[i * 128:(i + 1) * 128, :], stage_id=0)\n        acc += nl.exp(t, stage_id=0)\n        u = nl.copy(acc, stage_id=1)\n        nl.store(s[i * 128:(i + 1) * 128, :], value=u, stage_id=1)\n    return s\n",
    )
    .unwrap();
    let path = p.to_str().unwrap();
    let o = nkc(&["check", path]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("E0430"), "{}", stderr(&o));
    let off = nkc(&["check", path, "--no-legality-check"]);
    assert_eq!(off.status.code(), Some(0), "{}", stderr(&off));
}

#[test]
fn a_wrong_input_is_a_clear_error() {
    let dir = scratch("cli", "wrong");
    let p = dir.join("a.npy");
    write_npy(&p, &input(&[128, 512], 0)).unwrap();
    let arg = format!("a={}", p.display());
    let o = nkc(&["run", "examples/tensor_add.nk", "--input", &arg]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("has shape [128, 512]"),
        "{}",
        stderr(&o)
    );
    let bogus = format!("zz={}", p.display());
    let o = nkc(&["run", "examples/tensor_add.nk", "--input", &bogus]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("has no parameter `zz`"),
        "{}",
        stderr(&o)
    );
    let o = nkc(&["run", "examples/tensor_add.nk", "--input", "a=/no/such.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot open"), "{}", stderr(&o));
}

#[test]
fn storing_unwritten_memory_is_a_diagnostic_at_the_store() {
    let dir = scratch("cli", "uninit");
    let path = dir.join("uninit.nk");
    std::fs::write(
        &path,
        "def k(a: nl.hbm[nl.float32, 128, 64]):\n    c = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    buf = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)\n    t = nl.load(a[0:128, :])\n    buf[0:128, 0:32] = nl.copy(t[0:128, 0:32])\n    u = nl.exp(buf)\n    nl.store(c[0:128, :], value=u)\n    return c\n",
    )
    .unwrap();
    // Reading the unwritten half of `buf` (statement 6) is not the error: storing its exp into
    // the output is. Every engine finds it: the interpreter, `--check`, and the simulator alone
    // (whose on-chip memory tracks undefined values too).
    let o = nkc(&["run", path.to_str().unwrap(), "--engine", "interp"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for args in [&["--check"][..], &[][..]] {
        let mut all = vec!["run", path.to_str().unwrap()];
        all.extend(args);
        let ran = nkc(&all);
        assert_eq!(ran.status.code(), Some(1), "{}", stderr(&ran));
        assert!(stderr(&ran).contains("error[E0900]"), "{}", stderr(&ran));
        assert!(stderr(&ran).contains("uninit.nk:7:"), "{}", stderr(&ran));
    }
    let err = stderr(&o);
    assert!(
        err.contains("error[E0900]: this stores undefined values of `u` into `c`"),
        "{err}"
    );
    assert!(err.contains("uninit.nk:7:"), "points at the store: {err}");
    assert!(err.contains("element [0, 32] of `u`"), "{err}");
    assert!(
        err.contains("help: store into `c` only the elements"),
        "{err}"
    );
}

/// Garbage that never reaches an output is no error: a masked load leaves rows of a tile
/// undefined, the whole tile is squared and summed, and a store with the same mask writes only
/// the defined rows. Both engines run it and agree.
#[test]
fn garbage_in_rows_a_mask_skipped_runs_when_no_output_sees_it() {
    let dir = scratch("cli", "masked-rows");
    let path = dir.join("rows.nk");
    std::fs::write(
        &path,
        "def k(a: nl.hbm[nl.float32, 100, 64]):\n    c = nl.ndarray((100, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    ix = nl.arange(128)[:, None]\n    iy = nl.arange(64)[None, :]\n    t = nl.load(a[ix, iy], mask=(ix < 100))\n    s = nl.sum(nl.square(t), axis=[1])\n    u = nl.multiply(t, s)\n    nl.store(c[ix, iy], value=u, mask=(ix < 100))\n    return c\n",
    )
    .unwrap();
    let o = nkc(&["run", path.to_str().unwrap(), "--check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Without the store's mask, rows 100.. would reach HBM: out of range here, so widen `c`.
    let wide = std::fs::read_to_string(&path)
        .unwrap()
        .replace("(100, 64), dtype", "(128, 64), dtype")
        .replace(", mask=(ix < 100))\n    return", ")\n    return");
    std::fs::write(&path, wide).unwrap();
    for engine in ["interp", "sim"] {
        let o = nkc(&["run", path.to_str().unwrap(), "--engine", engine]);
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("error[E0900]"), "{engine}: {err}");
        assert!(err.contains("rows.nk:8:"), "{engine}: {err}");
        assert!(err.contains("element [100, 0] of `u`"), "{engine}: {err}");
    }
}

#[test]
fn emit_ast_prints_the_syntax_tree() {
    let o = nkc(&["compile", "examples/tensor_add.nk", "--emit", "ast"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Kernel") && out.contains("\"tensor_add\""),
        "{out}"
    );
}

/// `--check` compares with the kernel as written: every kernel of the pipeliner corpus that the
/// legality check rejects (E0430), run with the check skipped, fails with exit 1 and names the
/// first differing element, after the warning that the check was skipped. The one exception is
/// the corpus's documented harmless reordering (`# check off: same bits`: two writes reversed
/// whose last still wins), which runs and passes `--check`, with the warning.
#[test]
fn check_off_runs_fail_check_against_the_kernel_as_written() {
    let mut rejected = 0;
    for entry in std::fs::read_dir("filetests/pipeline").expect("the corpus exists") {
        let path = entry.expect("a directory entry").path();
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        if !text.lines().any(|l| l.starts_with("# expect: E0430")) {
            continue;
        }
        rejected += 1;
        let file = path.to_str().expect("UTF-8 path");
        let o = nkc(&["run", file, "--no-legality-check", "--check"]);
        let err = stderr(&o);
        assert!(
            err.contains("warning: the legality check was skipped"),
            "{file}: no warning:\n{err}"
        );
        if text.lines().any(|l| l.trim() == "# check off: same bits") {
            assert_eq!(o.status.code(), Some(0), "{file}: {err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(1), "{file}: {err}");
        assert!(
            err.contains("differs from the kernel as written: element ["),
            "{file}: no first differing element:\n{err}"
        );
    }
    assert!(rejected >= 3, "the corpus has legality rejections");
}
