//! Issue 14, "no input may panic, abort, flood or hang nkc": one regression test per item fixed
//! here. Each runs the binary under the 2 GiB address-space cap of [`common::nkc_capped`] and
//! asserts exit code 1 (a diagnostic, not 101 for a panic nor a signal for an abort) with the
//! diagnostic's code or first line; the items about floods also bound the size of stderr.

mod common;

use common::{nkc_capped, scratch, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Writes `text` as `dir/name` and returns the path as a string for the command line.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).expect("the scratch directory is writable");
    path.to_str().expect("UTF-8 temporary path").to_string()
}

/// Asserts exit code 1 and that stderr holds `needle`; returns stderr.
fn fails_with(o: &Output, needle: &str, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{what}: expected exit code 1, got {:?}\n{err}",
        o.status
    );
    assert!(err.contains(needle), "{what}: no `{needle}` in\n{err}");
    err
}

/// A two-iteration Mode B loop whose store has stage `stage` (the load has stage 0).
fn staged(stage: &str) -> String {
    format!(
        "def k(a: nl.hbm[nl.float32, 256, 512]):\n\
         \x20   c = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   for i in nl.affine_range(2):\n\
         \x20       t = nl.load(a[i * 128:(i + 1) * 128, :], stage_id=0)\n\
         \x20       nl.store(c[i * 128:(i + 1) * 128, :], value=t, stage_id={stage})\n\
         \x20   return c\n"
    )
}

/// One 128 × 512 tile copied through SBUF, with `loop_header` (a `for` line) around it.
fn one_loop(loop_header: &str) -> String {
    format!(
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n\
         \x20   c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   {loop_header}\n\
         \x20       t = nl.load(a[0:128, :])\n\
         \x20       nl.store(c[0:128, :], value=t)\n\
         \x20   return c\n"
    )
}

/// The tile copy without a loop, as a kernel named `name`.
fn copy_kernel(name: &str) -> String {
    format!(
        "def {name}(a: nl.hbm[nl.float32, 128, 512]):\n\
         \x20   c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   t = nl.load(a[0:128, :])\n\
         \x20   u = nl.exp(t)\n\
         \x20   nl.store(c[0:128, :], value=u)\n\
         \x20   return c\n"
    )
}

#[test]
fn item01_stage_id_u32_max_is_a_gap_not_a_panic() {
    // `max + 1` stages overflowed u32 in the schedule context.
    let dir = scratch("hardening", "item01");
    let f = write(&dir, "k.nk", &staged("4294967295"));
    for cmd in ["check", "run"] {
        let err = fails_with(&nkc_capped(&[cmd, &f]), "error[E0406]", cmd);
        assert!(
            err.contains("do not run from 0 to 4294967295 without a gap"),
            "{err}"
        );
    }
}

#[test]
fn item02_loop_bounds_near_i64_max_are_rejected_by_check_and_run_alike() {
    // `check` accepted the range and `run` overflowed in the pipeliners' arithmetic.
    let dir = scratch("hardening", "item02");
    let f = write(
        &dir,
        "k.nk",
        &one_loop("for i in range(9223372036854775800, 9223372036854775807):"),
    );
    for cmd in ["check", "run"] {
        let err = fails_with(&nkc_capped(&[cmd, &f]), "error[E0202]", cmd);
        assert!(
            err.contains("a loop bound must lie between -16777216 and 16777216"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn item03_an_output_too_large_to_run_is_rejected_by_check() {
    // The front end's limit is the simulator's (and the interpreter's).
    assert_eq!(
        frontend::check::MAX_HBM_ELEMENTS,
        runtime_sim::sim::MAX_HBM_ELEMS
    );
    let dir = scratch("hardening", "item03");
    let f = write(
        &dir,
        "k.nk",
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n\
         \x20   c = nl.ndarray((1000000, 1000000), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   t = nl.load(a[0:128, :])\n\
         \x20   nl.store(c[0:128, 0:512], value=t)\n\
         \x20   return c\n",
    );
    for cmd in ["check", "run"] {
        let err = fails_with(&nkc_capped(&[cmd, &f]), "error[E0173]", cmd);
        assert!(
            err.contains("more than the 134217728 (2^27) nkc can run"),
            "{err}"
        );
        assert!(!err.contains("internal compiler error"), "{err}");
    }
}

#[test]
fn item07_memory_does_not_grow_with_the_value_of_a_stage_id() {
    // A stage id of 10^9 asked for a table of 10^9 entries (24 GB); under the 2 GiB cap that is
    // an abort. Now the ids are kept sorted, one per statement.
    let dir = scratch("hardening", "item07");
    let f = write(&dir, "k.nk", &staged("1000000000"));
    let start = std::time::Instant::now();
    fails_with(&nkc_capped(&["check", &f]), "error[E0406]", "check");
    assert!(
        start.elapsed().as_secs() < 20,
        "took {:?}: the gap is walked, not counted",
        start.elapsed()
    );
}

#[test]
fn item08_a_stage_gap_of_ten_million_prints_a_short_diagnostic() {
    // E0406 listed every missing stage: 178 MB of stderr.
    let dir = scratch("hardening", "item08");
    let f = write(&dir, "k.nk", &staged("10000000"));
    let o = nkc_capped(&["check", &f]);
    let err = fails_with(&o, "error[E0406]", "check");
    assert!(
        err.contains("no statement has stage 1, 2, 3, 4, 5, 6, 7, 8 and 9,999,991 more"),
        "{err}"
    );
    assert!(o.stderr.len() < 4096, "{} bytes of stderr", o.stderr.len());
}

#[test]
fn item09_deep_nesting_is_one_error_and_a_file_stops_after_twenty() {
    // 2,000 nested loops gave one E0008 per line deeper than 64 (1,936 errors; 5,000 gave 101 MB).
    let depth = 2000;
    let mut text = String::from(
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n",
    );
    for d in 0..depth {
        text += &format!("{}for i{d} in nl.affine_range(1):\n", "    ".repeat(d + 1));
    }
    text += &format!("{}t = nl.load(a[0:128, :])\n", "    ".repeat(depth + 1));
    text += &format!(
        "{}nl.store(c[0:128, :], value=t)\n",
        "    ".repeat(depth + 1)
    );
    text += "    return c\n";
    let dir = scratch("hardening", "item09");
    let f = write(&dir, "deep.nk", &text);
    let o = nkc_capped(&["check", &f]);
    let err = fails_with(&o, "error[E0008]: blocks nested too deeply", "deep");
    assert_eq!(err.matches("error[").count(), 1, "{err}");
    assert!(err.contains("more than 64 nested blocks"), "{err}");

    // 100 undefined names: the first 20 diagnostics, then one note counting the others.
    let mut text = String::from(
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n",
    );
    for n in 0..100 {
        text += &format!("    x{n} = nl.exp(undefined{n})\n");
    }
    text += "    return c\n";
    let f = write(&dir, "many.nk", &text);
    let o = nkc_capped(&["check", &f]);
    let err = fails_with(
        &o,
        "note: aborting after 20 errors (80 more not shown)",
        "many",
    );
    assert_eq!(err.matches("error[E0100]").count(), 20, "{err}");
}

#[test]
fn item14_what_cpython_rejects_nkc_rejects() {
    // CPython refuses a NUL byte even in a comment, and a file ending in a line continuation.
    let dir = scratch("hardening", "item14");
    let good = copy_kernel("k");
    let nul = write(&dir, "nul.nk", &format!("{good}# a\0b\n"));
    let err = fails_with(
        &nkc_capped(&["check", &nul]),
        "error[E0017]: the source contains a NUL byte",
        "NUL",
    );
    assert!(!err.contains('\0'), "a raw NUL byte on stderr: {err:?}");
    let cont = write(&dir, "cont.nk", &format!("{good}\\\n"));
    fails_with(
        &nkc_capped(&["check", &cont]),
        "error[E0018]: the file ends right after a line continuation",
        "continuation",
    );
}

#[test]
fn item15_stage_id_beyond_u32_states_the_real_limit() {
    let dir = scratch("hardening", "item15");
    for v in ["4294967296", "9223372036854775807"] {
        let f = write(&dir, "k.nk", &staged(v));
        fails_with(
            &nkc_capped(&["check", &f]),
            "error[E0180]: `stage_id` must be an integer from 0 to 4294967295",
            v,
        );
    }
}

#[test]
fn item16_compare_reports_a_broken_file_and_goes_on() {
    let dir = scratch("hardening", "item16");
    let a = write(&dir, "a.nk", &copy_kernel("first"));
    let bad = write(
        &dir,
        "bad.nk",
        "def k(a: nl.hbm[nl.float32, 128, 128]):\n    return b\n",
    );
    let c = write(&dir, "c.nk", &copy_kernel("third"));

    let o = nkc_capped(&["compare", &a, &bad, &c]);
    let err = fails_with(&o, "error[E0100]: cannot find `b` in this kernel", "table");
    assert!(err.contains("1 of the 3 files failed"), "{err}");
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 5, "header, rule and three rows:\n{out}");
    assert!(rows[2].starts_with("| first | "), "{out}");
    assert!(
        rows[3].starts_with(&format!("| {bad} | failed | failed | failed |")),
        "{out}"
    );
    assert!(rows[4].starts_with("| third | "), "{out}");

    let o = nkc_capped(&["compare", &a, &bad, &c, "--json"]);
    fails_with(&o, "error[E0100]", "json");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v[&bad]["failed"], true, "{v}");
    assert_eq!(
        v[&bad]["error"], "error[E0100]: cannot find `b` in this kernel",
        "{v}"
    );
    assert!(v[&a]["none"]["cycles"].as_u64().is_some(), "{v}");
    assert!(v[&c]["emergent"]["cycles"].as_u64().is_some(), "{v}");
}

#[test]
fn item18_check_agrees_with_run_inputs_are_unique_and_sim_escapes_nul() {
    let dir = scratch("hardening", "item18");
    // A file with no kernel: E0198 from `check` as from `run`.
    let empty = write(&dir, "empty.nk", "N = 4\n");
    for cmd in ["check", "run"] {
        fails_with(
            &nkc_capped(&[cmd, &empty]),
            "error[E0198]: this file defines no kernel",
            cmd,
        );
    }
    // `--input a=…` twice.
    let k = write(&dir, "k.nk", &copy_kernel("k"));
    let x = dir.join("x.npy");
    let y = dir.join("y.npy");
    let (xa, ya) = (format!("a={}", x.display()), format!("a={}", y.display()));
    fails_with(
        &nkc_capped(&["run", &k, "--input", &xa, "--input", &ya]),
        "error: `--input a` is given twice",
        "run --input twice",
    );
    let prog = write(&dir, "p.s", "tensor a: f32[4, 256] input\n");
    fails_with(
        &nkc_capped(&["sim", &prog, "--input", &xa, "--input", &ya]),
        "error: `--input a` is given twice",
        "sim --input twice",
    );
    // A NUL byte in a program is quoted escaped, as the front end quotes it.
    let nul = write(&dir, "nul.s", "tensor x\0y: f32[4, 256] input\n");
    let o = nkc_capped(&["sim", &nul]);
    let err = fails_with(&o, "unexpected character `\\0`", "sim NUL");
    assert!(!o.stderr.contains(&0), "a raw NUL byte on stderr: {err:?}");
}
