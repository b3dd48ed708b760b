//! What follows a loop waits only for what it needs (issue 32, the freedom at loop exits): a
//! statement after a loop that reads the block one iteration wrote waits for the count its
//! producer reached at the end of that iteration, not for the loop's last one
//! (`backend/src/codegen/sync/slack.rs`). Every run is checked against the interpreter bit for
//! bit, with no race.

mod common;

use common::{nkc, run_checked_json, stderr, stdout};
use runtime_sim::isa::{Engine, Op, Stmt};

/// The top-level waits of `engine` in `file`'s `kernel` compiled on `pipeline`, in program
/// order, each as (semaphore name, constant value); waits whose value is not a constant are
/// skipped (those inside loops are not top-level).
fn top_level_waits(file: &str, kernel: &str, pipeline: &str, engine: Engine) -> Vec<(String, i64)> {
    let o = nkc(&[
        "compile",
        file,
        "--kernel",
        kernel,
        "--emit",
        "isa",
        "--pipeline",
        pipeline,
    ]);
    assert!(o.status.success(), "{file}: {}", stderr(&o));
    let program = runtime_sim::text::parse(&stdout(&o))
        .unwrap_or_else(|e| panic!("{file}: the emitted program does not read back: {e:?}"));
    let mut out = Vec::new();
    for s in program.stream(engine) {
        let Stmt::Inst(i) = s else { continue };
        if let Op::Wait { sem, value } = &i.op {
            if value.terms.is_empty() {
                out.push((program.semaphores[*sem].clone(), value.constant));
            }
        }
    }
    out
}

/// Runs `file`'s `kernel` on `pipeline` and its peeled variant, checked bit for bit with no race.
fn checked(file: &str, kernel: &str, pipeline: &str) {
    run_checked_json(file, &["--kernel", kernel, "--pipeline", pipeline]);
    run_checked_json(
        file,
        &["--kernel", kernel, "--pipeline", pipeline, "--peel"],
    );
}

/// `slice_assign` on `emergent`: the loop's seven iterations (four of them on) run an
/// exponential each, one signal each, the four blocks of `buf` on iterations 3 to 6. The three
/// statements after it overwrite or update blocks 0, 1 and 2: they wait for counts 4, 5 and 6,
/// not 7 (the loop's last, what every wait after a loop asked for before). They run on the
/// compute engines the backend chooses (a copy's engine by its region's work), so the waits of
/// all three engines are collected.
#[test]
fn a_statement_after_a_loop_waits_for_the_iteration_it_reads() {
    let waits: Vec<(String, i64)> = [Engine::Dve, Engine::Act, Engine::Pool]
        .into_iter()
        .flat_map(|e| top_level_waits("tests/good/slice_assign.nk", "slice_assign", "emergent", e))
        .collect();
    let mut on_act: Vec<i64> = (waits.iter())
        .filter(|(s, _)| s.starts_with("activation"))
        .map(|&(_, v)| v)
        .collect();
    on_act.sort_unstable();
    assert_eq!(on_act, [4, 5, 6], "{waits:?}");
    for p in ["none", "emergent", "default", "auto", "annotated"] {
        checked("tests/good/tail_consumers.nk", "tail_blocks", p);
    }
}

/// In a loop nest, the statement after the inner loop reads the second inner block of its own
/// outer iteration: its wait's count is that of the second inner iteration (`5 * i + 2`), not
/// the end of the inner loop (`5 * i + 5`).
#[test]
fn a_statement_after_an_inner_loop_waits_for_the_inner_iteration_it_reads() {
    let file = "tests/good/tail_consumers.nk";
    let o = nkc(&[
        "compile",
        file,
        "--kernel",
        "tail_nested",
        "--emit",
        "isa",
        "--pipeline",
        "none",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("wait activation") && l.contains(">= 5*r0 + 2")),
        "{text}"
    );
    for p in ["none", "emergent", "default", "auto", "annotated"] {
        checked(file, "tail_nested", p);
    }
}

/// After an unrolled loop and its remainder, the statements read early blocks: their waits on
/// the main loop's semaphores are below its final count, and every path runs bit for bit.
#[test]
fn statements_after_an_unrolled_loop_wait_for_early_iterations() {
    let file = "tests/good/tail_unrolled.nk";
    for p in ["emergent", "auto"] {
        let waits = top_level_waits(file, "tail_remainder", p, Engine::Dve);
        let first = (waits.iter())
            .find(|(s, _)| s.starts_with("activation"))
            .unwrap_or_else(|| panic!("{p}: no wait on the loop: {waits:?}"));
        assert!(first.1 < 6, "{p}: {waits:?}");
    }
    for p in ["none", "emergent", "default", "auto", "annotated"] {
        checked(file, "tail_remainder", p);
    }
}
