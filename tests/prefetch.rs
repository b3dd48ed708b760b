//! The prefetch of loads in user-pipelined loops (`backend::prefetch`, issue 32 item 1): on the
//! paths where the backend chooses when a transfer is issued, a load that the user's stages put
//! in the stage of its first reader is issued the iterations ahead its latency wants, into a
//! deeper ring; `annotated` keeps the user's stages. Every run is checked against the
//! interpreter bit for bit, with no race.

use backend::transform::remark::Remark;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use nkc::run::{self, Engine, RunOptions, RunReport};
use penguin::pipeline::PipelineLog;
use std::path::Path;

/// Runs `file`'s `kernel` on `mode`, checked bit for bit and free of races; its report and its
/// cycles.
fn run(file: &str, kernel: &str, mode: PipelineMode) -> (RunReport, u64) {
    let opts = RunOptions {
        kernel: Some(kernel.to_string()),
        engine: Engine::Sim,
        pipeline: mode,
        seed: 11,
        check: true,
        ..RunOptions::default()
    };
    let src = Source::read(Path::new(file)).unwrap();
    let r = run::run(&src, &opts, &mut PipelineLog::default())
        .unwrap_or_else(|f| panic!("{file}:{kernel} --pipeline {}: {f:?}", mode.name()));
    assert!(
        r.checked,
        "{file}:{kernel} --pipeline {}: not bit-exact",
        mode.name()
    );
    let sim = r.sim.as_ref().expect("engine sim");
    assert!(
        sim.races.is_empty(),
        "{file}:{kernel}: races {:?}",
        sim.races
    );
    let cycles = sim.stats.cycles;
    (r, cycles)
}

/// The loads the prefetch moved: tile, iterations, slots.
fn prefetched(r: &RunReport) -> Vec<(&str, u32, u32)> {
    r.remarks
        .iter()
        .filter_map(|x| match x {
            Remark::Prefetched {
                tile, by, slots, ..
            } => Some((tile.as_str(), *by, *slots)),
            _ => None,
        })
        .collect()
}

/// pf_sum_mode_b: both loads share stage 0 with their sum, so each iteration waited for its own
/// loads. On `default` each goes ahead as far as its transfer wants against the predicted period,
/// with a ring one slot deeper per iteration ahead; `annotated` keeps them. `default` is then
/// within 1.10x of `emergent` and faster than the stages as written.
#[test]
fn loads_in_their_readers_stage_are_issued_ahead_on_default_only() {
    let file = "tests/good/prefetch_staged.nk";
    let (default, d) = run(file, "pf_sum_mode_b", PipelineMode::Default);
    let (annotated, a) = run(file, "pf_sum_mode_b", PipelineMode::Annotated);
    let (_, e) = run(file, "pf_sum_mode_b", PipelineMode::Emergent);
    let moved = prefetched(&default);
    let tiles: Vec<&str> = moved.iter().map(|m| m.0).collect();
    assert_eq!(tiles, ["ta", "tb"], "{:#?}", default.backend_log);
    for &(tile, by, slots) in &moved {
        // An unringed tile: one slot, plus one per iteration ahead.
        assert!(
            by >= 1 && slots == by + 1,
            "{tile}: {by} ahead, {slots} slots"
        );
    }
    assert!(
        prefetched(&annotated).is_empty(),
        "{:#?}",
        annotated.backend_log
    );
    assert!(d < a, "default {d} against annotated {a}");
    assert!(d * 100 <= e * 110, "default {d} against emergent {e}");
}

/// Kernels whose loads the user's stages leave in their reader's stage (Mode A and Mode B, flat
/// loops): prefetched on `default`, each runs faster than the stages as written, and the first
/// three within 1.10x of `emergent` (transpose_scale went from 1.40x to 1.12x, mix_ragged_staged
/// from 1.25x to 1.21x: the rest is the queue plan's split, `sp`-bound on `default`).
#[test]
fn prefetched_kernels_run_faster_than_as_written() {
    let kernels = [
        ("tests/good/prefetch_staged.nk", "pf_exp_mode_a", true),
        ("tests/good/sched_store_late.nk", "late_mode_b", true),
        ("tests/good/sched_two_stores.nk", "two_stores_staged", true),
        ("tests/good/sched_transpose.nk", "transpose_scale", false),
        ("tests/good/dma_queue_mix.nk", "mix_ragged_staged", false),
    ];
    for (file, kernel, within) in kernels {
        let (default, d) = run(file, kernel, PipelineMode::Default);
        let (_, a) = run(file, kernel, PipelineMode::Annotated);
        let (_, e) = run(file, kernel, PipelineMode::Emergent);
        assert!(
            !prefetched(&default).is_empty(),
            "{kernel}: {:#?}",
            default.backend_log
        );
        assert!(d < a, "{kernel}: default {d} against annotated {a}");
        if within {
            assert!(
                d * 100 <= e * 110,
                "{kernel}: default {d} against emergent {e}"
            );
        }
    }
}

/// A compute-bound loop keeps its loads where the user's stages put them (its compute overlaps
/// them): layernorm_stages' loop is bound by the Vector engine.
#[test]
fn a_compute_bound_loop_keeps_its_loads() {
    let (default, _) = run(
        "examples/layernorm_stages.nk",
        "layernorm_stages",
        PipelineMode::Default,
    );
    assert!(
        prefetched(&default).is_empty(),
        "{:#?}",
        default.backend_log
    );
}

/// A load whose reader is already far enough behind it in the user's stages stays where they
/// put it: late_mode_b's load runs alone in stage 0 and its reader in stage 1, so it moves only
/// the iterations its latency wants beyond that one.
#[test]
fn a_load_moves_only_beyond_the_distance_the_stages_give() {
    let (default, _) = run(
        "tests/good/sched_store_late.nk",
        "late_mode_b",
        PipelineMode::Default,
    );
    let moved = prefetched(&default);
    let [(tile, by, slots)] = moved.as_slice() else {
        panic!("{:#?}", default.backend_log);
    };
    assert_eq!(*tile, "t");
    // `t` was a ring of 2 (written in stage 0, read in stage 1).
    assert_eq!(*slots, 2 + by, "{:#?}", default.backend_log);
    let wanted = default.remarks.iter().find_map(|r| match r {
        Remark::Prefetched { dma, period, .. } => Some(dma.div_ceil(*period)),
        _ => None,
    });
    assert_eq!(wanted, Some(u64::from(*by) + 1));
}

/// A user-pipelined loop that holds a loop (no modulo schedule: its body runs in the order
/// written) issues a load that shares its first reader's stage ahead, into a deeper ring, on
/// `default` only: each iteration otherwise waits for its own load, and the fill has no later
/// stage's work to cover it (attention_stages' query tile: `pe` idled ~3,000 cycles before its
/// second product). Checked without the holder case: no load moves, and prefetch_holder.nk's
/// kernels run 1.64x (holder_mode_b), 1.41x and 1.29x as long as on `emergent`.
#[test]
fn a_loop_that_holds_a_loop_issues_its_loads_ahead_on_default_only() {
    let kernels = [
        ("tests/good/prefetch_holder.nk", "holder_mode_b", "q"),
        ("tests/good/prefetch_holder.nk", "holder_mode_a", "t"),
        ("tests/good/prefetch_holder.nk", "holder_chunks", "t"),
        ("examples/attention_stages.nk", "attention_stages", "q"),
        ("examples/attention_nested.nk", "attention_nested", "q"),
    ];
    for (file, kernel, tile) in kernels {
        let (default, d) = run(file, kernel, PipelineMode::Default);
        let (annotated, a) = run(file, kernel, PipelineMode::Annotated);
        let (_, e) = run(file, kernel, PipelineMode::Emergent);
        let moved = prefetched(&default);
        assert!(
            moved
                .iter()
                .any(|m| m.0 == tile && m.1 >= 1 && m.2 == m.1 + 1),
            "{kernel}: {:#?}",
            default.backend_log
        );
        assert!(
            prefetched(&annotated).is_empty(),
            "{kernel}: {:#?}",
            annotated.backend_log
        );
        assert!(d < a, "{kernel}: default {d} against annotated {a}");
        if file.ends_with("prefetch_holder.nk") {
            assert!(
                d * 100 <= e * 110,
                "{kernel}: default {d} against emergent {e}"
            );
        }
    }
}

/// short_staged_chain: four iterations in four stages leave the loop no steady state; its loads
/// share stage 0 and their product reads them a stage later, so each body's loads waited behind
/// the previous body's stores. With no steady state to lose, `default` issues them ahead
/// (nkc-m14 moved none: a loop without a steady state kept its loads), bit for bit and faster
/// than the stages as written.
#[test]
fn a_loop_without_a_steady_state_issues_its_loads_ahead() {
    let file = "tests/good/short_staged_chain.nk";
    let kernel = "short_staged_chain";
    let (default, d) = run(file, kernel, PipelineMode::Default);
    let (annotated, a) = run(file, kernel, PipelineMode::Annotated);
    let moved = prefetched(&default);
    assert!(
        moved.iter().any(|m| m.0 == "p") && moved.iter().any(|m| m.0 == "q"),
        "{moved:?}"
    );
    assert!(prefetched(&annotated).is_empty());
    assert!(d < a, "default {d} against annotated {a}");
}
