//! `nkc suggest`: the fastest legal, bit-exact annotation per loop, as a diff of the source, and
//! `--write` applying it. The suggested file runs on `nkc run`'s default path bit for bit like
//! the kernel as written, and never slower there than the file given.

mod common;

use common::{nkc, run_checked_json, scratch, stderr, stdout};

/// Cycles of `file` on the path `nkc run` takes (`default`), checked bit for bit, with no
/// races.
fn default_cycles(file: &str) -> u64 {
    let (v, _) = run_checked_json(file, &[]);
    v["cycles"].as_u64().expect("cycles")
}

/// Copies `examples/NAME.nk` to a scratch file, runs `nkc suggest --write` on it; returns the
/// copy's path, the report and the copy's text afterwards.
fn suggest_written(name: &str) -> (String, String, String) {
    let dir = scratch("suggest", name);
    let file = dir.join(format!("{name}.nk"));
    std::fs::copy(format!("examples/{name}.nk"), &file).unwrap();
    let path = file.to_str().unwrap().to_string();
    let o = nkc(&["suggest", &path, "--write"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{name}: {out}{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    (path, out, text)
}

#[test]
fn a_stage_holding_a_hand_off_gets_a_faster_mode_b_suggestion() {
    let (path, out, text) = suggest_written("softmax_stages");
    assert!(out.contains("suggested: stage_id"), "{out}");
    assert!(
        out.contains("-    for i in nl.affine_range(8, num_stages=3):"),
        "{out}"
    );
    assert!(out.contains("+    for i in nl.affine_range(8):"), "{out}");
    assert!(
        text.contains("stage_id=") && !text.contains("num_stages"),
        "{text}"
    );
    let before = default_cycles("examples/softmax_stages.nk");
    let after = default_cycles(&path);
    assert!(
        after < before,
        "suggested {after} cycles, as written {before}"
    );
}

#[test]
fn an_unannotated_loop_gets_an_annotation() {
    let (path, out, text) = suggest_written("rmsnorm");
    assert!(out.contains("loop `i` (line 6): no annotation"), "{out}");
    assert!(
        text.contains("stage_id=") || text.contains("num_stages="),
        "{text}"
    );
    assert!(default_cycles(&path) < default_cycles("examples/rmsnorm.nk"));
}

#[test]
fn a_loop_no_candidate_beats_is_left_as_written() {
    let (_, out, text) = suggest_written("transpose_stages");
    assert!(
        out.contains("no candidate measured faster: keep it"),
        "{out}"
    );
    assert!(!out.contains("+++"), "{out}");
    let original = std::fs::read_to_string("examples/transpose_stages.nk").unwrap();
    assert_eq!(text, original);
}

#[test]
fn a_suggestion_is_never_slower_on_the_default_path() {
    // tensor_add_plain: the annotated path's 2.33x over its own un-annotated loop once made
    // `suggest` annotate it, and the default run went from 45,591 to 47,093 cycles.
    let (path, out, text) = suggest_written("tensor_add_plain");
    assert!(out.contains("on `nkc run`'s path (default)"), "{out}");
    let before = default_cycles("examples/tensor_add_plain.nk");
    let after = default_cycles(&path);
    let original = std::fs::read_to_string("examples/tensor_add_plain.nk").unwrap();
    if text == original {
        assert!(
            out.contains("no candidate measured faster: keep it"),
            "{out}"
        );
    } else {
        assert!(
            after < before,
            "suggested {after} cycles, as written {before}: {out}"
        );
    }
}
