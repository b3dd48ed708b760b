//! The loop dependence graph's exclusive pairs in time linear in the guard boxes tested
//! (`backend/src/codegen/ldg.rs`): a loop spread over a stage per statement gives every
//! instruction a guard of its own, and the pairs of one engine whose guards never hold in one
//! iteration are nearly all of them; they were found by a guard-box test per pair. An
//! instruction whose guards name only the loop has a turn along it (an interval of
//! iterations), and two turns are compared in two comparisons. Each test compares the pairs
//! with those of a box test per pair, and counts the box tests made
//! ([`backend::codegen::ldg::compute_loop_deps_counted`]).

use backend::codegen::ldg::compute_loop_deps_counted;
use backend::cost::guards::may_run_shifted;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use penguin::pipeline::PipelineLog;
use std::path::PathBuf;

#[path = "common/body_kernel.rs"]
mod body;

/// The exclusive pairs of every flat loop of `text` on `mode` and the box tests made, after
/// checking that they are the pairs a box test per pair of one engine finds.
fn exclusive(text: &str, mode: PipelineMode) -> (usize, usize) {
    let src = Source {
        path: PathBuf::from("deps.nk"),
        text: text.to_string(),
    };
    let mut func = nkc::driver::compile(&src, None).expect("the kernel compiles");
    nkc::pipeline::pipeline_path(&mut func, mode, &mut PipelineLog::default())
        .expect("the kernel pipelines");
    nkc::pipeline::prepare_backend(&mut func, mode).expect("the backend's transformations");
    let planned = backend::planned::compute_planned(&func).expect("the kernel lowers");
    let (func, bir) = (&planned.func, &planned.bir);
    let (mut pairs, mut tests) = (0, 0);
    for l in bir.loops.keys() {
        let Some((deps, t)) = compute_loop_deps_counted(func, bir, &planned.queue_plan, l) else {
            continue;
        };
        let iv = bir.loops[l].axis;
        let mut naive = Vec::new();
        for (a, &ia) in deps.insts.iter().enumerate() {
            for (b, &ib) in deps.insts.iter().enumerate().skip(a + 1) {
                let (da, db) = (&bir.insts[ia], &bir.insts[ib]);
                if da.engine == db.engine && !may_run_shifted(func, &da.guards, &db.guards, iv, 0) {
                    naive.push((a, b));
                }
            }
        }
        assert_eq!(deps.exclusive, naive, "the pairs a box test per pair finds");
        pairs += naive.len();
        tests += t;
    }
    (pairs, tests)
}

#[test]
fn turns_along_the_loop_answer_every_pair_of_a_stage_per_statement() {
    let (pairs, tests) = exclusive(&body::body_kernel(96, None), PipelineMode::Emergent);
    // About half of the 98 x 97 / 2 pairs share an engine, and most of those never run in
    // one iteration (their stages are 8 iterations or more apart).
    assert!(pairs > 1_000, "{pairs} exclusive pairs");
    // Every guard names the loop alone: no pair needs a box test (one per pair before).
    assert_eq!(tests, 0, "{pairs} pairs, {tests} box tests");
}

#[test]
fn the_users_stages_keep_the_same_pairs() {
    // The user's 3 stages (the bench's body): few guards, the same pairs either way.
    let (_, tests) = exclusive(&body::body_kernel(32, Some(3)), PipelineMode::Default);
    assert_eq!(tests, 0);
    exclusive(&body::body_kernel(32, Some(3)), PipelineMode::Annotated);
}

#[test]
fn a_good_kernel_on_two_engines_is_answered_by_turns() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/good/turns_two_engines.nk"
    ))
    .expect("the kernel is readable");
    let (pairs, tests) = exclusive(&text, PipelineMode::Emergent);
    // Its stages five iterations or more apart never run together.
    assert!(pairs > 0, "{pairs} exclusive pairs");
    assert_eq!(tests, 0, "{pairs} pairs, {tests} box tests");
}
