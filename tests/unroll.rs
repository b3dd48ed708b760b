//! The emergent path's unroll (`backend::transform::unroll`): the factor its log reports, the remainder
//! loop and the full unroll, each run on the simulator and checked bit for bit against the
//! kernel as written, with no races.

mod common;

use common::{nkc, scratch, stderr, stdout};

/// A loop of `n` PE transposes of 128 × 128 f32 tiles: two 64 KiB transfers per iteration, which
/// the queues carry best unrolled.
fn transposes(n: usize) -> String {
    format!(
        "def tr(x: nl.hbm[nl.float32, 128, {w}]):
    y = nl.ndarray(({w}, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    for c in nl.affine_range({n}):
        t = nl.load(x[:, c * 128:(c + 1) * 128])
        tp = nisa.nc_transpose(t)
        o = nl.copy(tp)
        nl.store(y[c * 128:(c + 1) * 128, :], value=o)
    return y
",
        w = 128 * n
    )
}

/// Runs `text` with `--check --log backend` on `path`; returns stdout + stderr.
fn run_checked(tag: &str, text: &str, path: &str) -> String {
    let dir = scratch("unroll", tag);
    let f = dir.join("k.nk");
    std::fs::write(&f, text).unwrap();
    let o = nkc(&[
        "run",
        f.to_str().unwrap(),
        "--pipeline",
        path,
        "--check",
        "--log",
        "backend",
    ]);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{all}");
    assert!(all.contains("bit for bit"), "{all}");
    assert!(all.contains("no races"), "{all}");
    all
}

fn cycles(out: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.trim_start().split(' ').nth(1) == Some("cycles"))
        .unwrap_or_else(|| panic!("no cycles line in {out}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn sixteen_transposes_unroll_by_four_and_run_faster() {
    let out = run_checked("sixteen", &transposes(16), "emergent");
    assert!(
        out.contains("unroll: loop `c` (trip 16): factor 4:"),
        "{out}"
    );
    // Each copy's tiles are rings of their own.
    assert!(out.contains("`t.u3` becomes a ring"), "{out}");
    let none = run_checked("sixteen-none", &transposes(16), "none");
    assert!(cycles(&out) * 2 < cycles(&none), "{out}\n{none}");
}

#[test]
fn a_trip_the_factor_does_not_divide_gets_a_remainder_loop() {
    // 18 = 4 × 4 + 2.
    let out = run_checked("eighteen", &transposes(18), "emergent");
    assert!(
        out.contains("unroll: loop `c` (trip 18): factor 4, remainder loop of 2:"),
        "{out}"
    );
}

#[test]
fn a_short_loop_keeps_enough_iterations_to_pipeline() {
    // Factor 4 would leave 2 iterations; factor 2 leaves 5.
    let out = run_checked("ten", &transposes(10), "emergent");
    assert!(
        out.contains("unroll: loop `c` (trip 10): factor 2:"),
        "{out}"
    );
}

#[test]
fn a_nested_loop_unrolls_fully_into_the_enclosing_loop() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/transpose.nk"
    ))
    .unwrap();
    let out = run_checked("nest", &text, "default");
    assert!(
        out.contains("unroll: loop `c` (trip 4): factor 4:"),
        "{out}"
    );
    // The enclosing loop `r` now pipelines the four copies.
    assert!(
        out.contains("emergent: loop `r` (trip 4): `t.u3` becomes a ring"),
        "{out}"
    );
}

#[test]
fn loops_that_gain_nothing_and_annotated_loops_are_not_unrolled() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/softmax.nk"))
        .unwrap();
    // The annotated loop is the user's: no unroll on the default path.
    let out = run_checked("softmax-default", &text, "default");
    assert!(!out.contains("unroll: loop"), "{out}");
    // On the emergent path its two 256 KiB transfers already fill the queues in 8 pieces each.
    let out = run_checked("softmax-emergent", &text, "emergent");
    assert!(
        out.contains("unroll: loop `i` (trip 8): factor 1: unrolling does not spread"),
        "{out}"
    );
}

/// A short inner loop whose trip no power of two divides (5, 3) is unrolled fully into the loop
/// around it when that spreads its transfers better: into an un-annotated loop, whose pipelining
/// rings each copy's tiles, and into a user's stage of an extended loop, under that stage's
/// guards (`default` only: `annotated` keeps the loop as written). Bit-exact, race-free, and
/// faster than the loop kept (measured: unroll_odd_inner 15,636 → 9,997 cycles on `emergent`,
/// unroll_in_stage 16,501 → 13,535 on `default`). Without the full unroll at such trips the
/// log says "factor 1" for both loops.
#[test]
fn a_short_inner_loop_of_any_trip_unrolls_fully_into_the_loop_around_it() {
    for (file, line, paths) in [
        (
            "tests/good/unroll_odd_inner.nk",
            "unroll: loop `c` (trip 5): factor 5:",
            &["emergent", "default"][..],
        ),
        (
            "tests/good/unroll_in_stage.nk",
            "unroll: loop `k` (trip 3): factor 3:",
            &["default", "emergent"][..],
        ),
    ] {
        let text = std::fs::read_to_string(file).unwrap();
        let tag = file.rsplit('/').next().unwrap().trim_end_matches(".nk");
        for path in paths {
            let out = run_checked(&format!("{tag}-{path}"), &text, path);
            assert!(out.contains(line), "{file} on {path}: {out}");
        }
        let annotated = run_checked(&format!("{tag}-annotated"), &text, "annotated");
        assert!(!annotated.contains("unroll:"), "{annotated}");
    }
}
