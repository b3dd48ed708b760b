//! The wait pruning's walks step over running instances only (`backend/src/codegen/hb/walk.rs`):
//! a loop spread over a stage per statement runs `T + S` iterations of which each statement
//! runs in `T`, so nearly every instance of the kernel is predicated off, and a walk over every
//! instance made the pruning quadratic in the body (issue 32). Each test counts what the walks
//! stepped over ([`backend::codegen::hb::compute_pruned_waits_counted`]) and compares it with
//! what walks over every instance would have stepped over, and checks that the program is the
//! one the normal pruning builds.

use backend::codegen::hb::{compute_pruned_waits_counted, Walked};
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use penguin::pipeline::PipelineLog;
use std::cell::Cell;
use std::path::PathBuf;

#[path = "common/body_kernel.rs"]
mod body;

/// The loop of 8 iterations whose body is a chain of `n` elementwise statements, without the
/// user's stages ([`body::body_kernel`]): on `emergent`, a stage per statement.
fn body_kernel(n: usize) -> String {
    body::body_kernel(n, None)
}

/// Compiles `text` on `mode` twice, with the normal pruning and with the counting one; returns
/// what the counting one walked, after checking that both build the same program.
fn walked(text: &str, mode: PipelineMode) -> Walked {
    let src = Source {
        path: PathBuf::from("walks.nk"),
        text: text.to_string(),
    };
    let mut func = nkc::driver::compile(&src, None).expect("the kernel compiles");
    nkc::pipeline::pipeline_path(&mut func, mode, &mut PipelineLog::default())
        .expect("the kernel pipelines");
    nkc::pipeline::prepare_backend(&mut func, mode).expect("the backend's transformations");
    let seen = Cell::new(Walked::default());
    let counting = |em: &_, sync: &mut _, _: &[_]| {
        let (pruned, w) = compute_pruned_waits_counted(em, sync);
        seen.set(w);
        pruned
    };
    let counted = backend::compile_with_pruner(&func, Some(text), true, &counting)
        .expect("the backend compiles it");
    let normal = backend::compile(&func, Some(text)).expect("the backend compiles it");
    assert!(
        counted.program == normal.program,
        "the counting pruning builds the normal program"
    );
    seen.get()
}

#[test]
fn a_walk_steps_over_the_running_instances_only() {
    let w = walked(&body_kernel(96), PipelineMode::Emergent);
    // The shape: most instances are predicated off (8 of the 100-odd iterations of each).
    assert!(
        w.running * 8 < w.instances,
        "most instances are off in a stage per statement: {w:?}"
    );
    assert!(w.walks > 0, "the pruning walked: {w:?}");
    // Every walk steps over running instances only, at most once each.
    assert!(
        w.steps <= w.walks * w.running,
        "the walks step over running instances only: {w:?}"
    );
    // Walks over every instance would have stepped over at least `instances` each.
    assert!(
        w.steps * 8 < w.walks * w.instances,
        "far fewer steps than walks over every instance: {w:?}"
    );
}

#[test]
fn the_steps_grow_linearly_with_the_body() {
    let (small, large) = (
        walked(&body_kernel(64), PipelineMode::Emergent),
        walked(&body_kernel(256), PipelineMode::Emergent),
    );
    // 4x the statements: about 3x the running instances (the load and the store stay one
    // each), and over 8x the instances (the stages grow with the body).
    assert!(
        large.instances >= 8 * small.instances,
        "{small:?} {large:?}"
    );
    assert!(
        large.steps <= 4 * small.steps,
        "the walks' steps grow with the running instances, not with all: {small:?} {large:?}"
    );
}
