//! Nested pipelining: a pipelined loop inside a pipelined loop. The inner loop is pipelined first,
//! then it is one statement of the outer pipeline. The two examples with both levels annotated
//! (`examples/matmul_nested.nk`, `examples/attention_nested.nk`) run bit for bit like the kernel
//! as written, with no races, and faster on the `annotated` path than with the inner level alone;
//! the nesting example of LANGUAGE.md runs as written.

mod common;

use common::{nkc, run_checked_json, scratch_kernel, stderr};

/// Cycles of `text` on `path`, checked bit for bit against the kernel as written, with no races.
fn cycles(tag: &str, text: &str, path: &str) -> u64 {
    let file = scratch_kernel("nested_pipelining", tag, text);
    let (v, _) = run_checked_json(&file, &["--pipeline", path]);
    v["cycles"].as_u64().expect("cycles")
}

/// The example, and its text with the outer loop's annotation removed.
fn both_and_inner(name: &str, outer: &str, bare: &str) -> (String, String) {
    let text = std::fs::read_to_string(format!("examples/{name}.nk")).unwrap();
    assert!(text.contains(outer), "{name} has no `{outer}`");
    let inner = text.replace(outer, bare);
    (text, inner)
}

#[test]
fn both_levels_beat_the_inner_level_alone() {
    for (name, outer, bare) in [
        (
            "matmul_nested",
            "for n in nl.affine_range(8, num_stages=2):",
            "for n in nl.affine_range(8):",
        ),
        (
            "attention_nested",
            "for i in nl.affine_range(4, num_stages=3):",
            "for i in nl.affine_range(4):",
        ),
    ] {
        let (both, inner) = both_and_inner(name, outer, bare);
        let b = cycles(&format!("{name}_both"), &both, "annotated");
        let i = cycles(&format!("{name}_inner"), &inner, "annotated");
        assert!(b < i, "{name}: both levels {b} cycles, inner alone {i}");
    }
}

#[test]
fn the_nesting_example_of_the_language_runs_as_written() {
    // LANGUAGE.md, "Nesting", in a kernel of its shapes.
    let text = "def nest(at: nl.hbm[nl.float32, 1024, 512], b: nl.hbm[nl.float32, 1024, 512]):
    c = nl.ndarray((512, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(4, num_stages=2):
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(8, num_stages=2):
            lhs = nl.load(at[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
            rhs = nl.load(b[k * 128:(k + 1) * 128, :])
            acc += nl.matmul(lhs, rhs, transpose_x=True)
        res = nl.copy(acc)
        nl.store(c[m * 128:(m + 1) * 128, :], value=res)
    return c
";
    for path in ["annotated", "default", "emergent"] {
        cycles(&format!("language_{path}"), text, path);
    }
    let file = scratch_kernel("nested_pipelining", "language_log", text);
    let o = nkc(&["check", "--log", "pipeliner", &file]);
    let log = stderr(&o);
    assert!(o.status.success(), "{log}");
    // The inner loop is pipelined first, then it is one statement of the outer pipeline.
    let inner = log
        .find("loop `k`: applied software pipelining")
        .expect("k pipelined");
    let outer = log
        .find("loop `m`: applied software pipelining")
        .expect("m pipelined");
    assert!(inner < outer, "{log}");
    assert!(
        log.contains("loop `m`: stage 0: acc = memset, loop k"),
        "{log}"
    );
}
