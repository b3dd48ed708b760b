//! Emergent stages for a loop that holds a loop (issue 32, item 3;
//! `backend/src/transform/emergent/mod.rs`): a loop that runs once around a nest realised across
//! it, and a loop with no ring of its own, are staged like flat loops, the inner loop one child;
//! the stages overlap the next iteration's compute with this one's inner loop, measured in
//! cycles against the behaviour before (the single shift, or nothing); a plan that would only
//! move transfers, and a loop that runs several times around such a nest, keep the single shift.
//! Every run is bit-exact against the interpreter and race-free.

use backend::transform::emergent::{EmergentOptions, EmergentRemark};
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use penguin::ir::StmtKind;
use penguin::pipeline::PipelineLog;
use penguin::Function;
use std::path::PathBuf;

#[path = "common/emergent.rs"]
mod emergent;

use emergent::{good, trip};

/// Emergent pipelining with or without the stages of loops that hold loops: (cycles, the
/// function after emergent pipelining, its log). The program must simulate with no race.
fn cycles(src: &Source, stage_nests: bool) -> (u64, Function, Vec<EmergentRemark>) {
    let opts = EmergentOptions {
        stage_nests,
        ..Default::default()
    };
    emergent::emergent_cycles(src, &opts)
}

/// A checked run (`--check`: bit-exact against the interpreter) on `mode`, with no race; its
/// emergent remarks.
fn checked(src: &Source, mode: PipelineMode) -> Vec<EmergentRemark> {
    emergent::checked_remarks(src, mode, 5)
}

/// The stage plan logged for loop `iv`: (stage count, each child with its stage).
fn staged<'a>(log: &'a [EmergentRemark], iv: &str) -> Option<(u32, &'a [(String, u32)])> {
    log.iter().find_map(|r| match r {
        EmergentRemark::Staged {
            iv: i,
            stages,
            children,
            ..
        } if i == iv => Some((*stages, children.as_slice())),
        _ => None,
    })
}

/// The stage of the child of a staged loop that is loop `inner`.
fn loop_stage(children: &[(String, u32)], inner: &str) -> Option<u32> {
    let name = format!("`loop {inner}`");
    children.iter().find(|(c, _)| *c == name).map(|&(_, s)| s)
}

#[test]
fn a_loop_run_once_around_a_nest_gets_stages_like_a_flat_loop() {
    // The row block's max (`dve`) and exponential (`act`) feed the inner loop `c`, whose loads
    // run across the nest: staged, the next block's chain runs beside this block's inner loop.
    let src = good("nest_outer_stages.nk");
    let (with, func, log) = cycles(&src, true);
    let (stages, children) = staged(&log, "r").unwrap_or_else(|| panic!("{log:#?}"));
    assert!(stages >= 3, "{children:?}");
    let c = loop_stage(children, "c").expect("the inner loop is one child");
    let mx = children
        .iter()
        .find(|(d, _)| d.starts_with("`mx."))
        .map(|&(_, s)| s)
        .unwrap();
    assert!(
        mx < c,
        "the chain before the inner loop is a stage ahead: {children:?}"
    );
    assert_eq!(trip(&func, "r"), 6 + i64::from(stages) - 1);
    assert_eq!(trip(&func, "c"), 4, "the inner loop still runs no drain");
    let (without, _, before) = cycles(&src, false);
    assert!(
        before
            .iter()
            .any(|r| matches!(r, EmergentRemark::EnclosesNest { iv, .. } if iv == "r")),
        "{before:#?}"
    );
    assert!(
        with * 100 <= without * 97,
        "staged {with} cycles, single shift {without}"
    );
    for mode in [PipelineMode::Emergent, PipelineMode::Default] {
        assert!(staged(&checked(&src, mode), "r").is_some());
    }
}

#[test]
fn a_loop_with_no_ring_of_its_own_is_staged() {
    // `r` moves no tile by DMA (its loops do): before, emergent pipelining did not look at it.
    // Its sum of squares' square root (`act`) becomes a ring of two slots and the second inner
    // loop a stage later, beside the next block's first inner loop.
    let src = good("nest_two_inner.nk");
    let (with, func, log) = cycles(&src, true);
    let (stages, children) = staged(&log, "r").unwrap_or_else(|| panic!("{log:#?}"));
    assert_eq!(stages, 2, "{children:?}");
    assert_eq!(loop_stage(children, "c"), Some(0), "{children:?}");
    assert_eq!(loop_stage(children, "d"), Some(1), "{children:?}");
    assert!(log.iter().any(|r| matches!(
        r,
        EmergentRemark::StageRing { iv, tile, slots: 2, .. } if iv == "r" && tile == "g"
    )));
    assert_eq!(trip(&func, "r"), 5);
    let (without, func_before, _) = cycles(&src, false);
    assert_eq!(trip(&func_before, "r"), 4);
    assert!(
        with * 100 <= without * 98,
        "staged {with} cycles, unstaged {without}"
    );
    for mode in [PipelineMode::Emergent, PipelineMode::Default] {
        assert!(staged(&checked(&src, mode), "r").is_some());
    }
}

#[test]
fn a_nest_inside_a_staged_loop_keeps_its_middle_loop_whole() {
    // `m` runs four times around `k`, which loads across the whole nest: stages on `m` would
    // add a fill and a drain to each of its executions, so it keeps the single shift; `r`, run
    // once, is staged with `m` (and `k` in it) as one child.
    let src = good("nest_staged_holder.nk");
    let (with, _, log) = cycles(&src, true);
    assert!(
        log.iter()
            .any(|r| matches!(r, EmergentRemark::EnclosesNest { iv, .. } if iv == "m")),
        "{log:#?}"
    );
    let (_, children) = staged(&log, "r").unwrap_or_else(|| panic!("{log:#?}"));
    assert_eq!(loop_stage(children, "m"), Some(1), "{children:?}");
    // Since `k`, whose divisor ring of 3 slots was shallower than wanted, prefetches a whole
    // execution ahead (nest.rs), staging `r` no longer gains on this kernel: it must not lose.
    let (without, _, _) = cycles(&src, false);
    assert!(
        with <= without,
        "staged {with} cycles, single shift {without}"
    );
    checked(&src, PipelineMode::Default);
}

#[test]
fn stages_that_would_only_move_transfers_keep_the_single_shift() {
    // nest_odd's `i` would only put its store a stage later, and matmul_blocked's `m` only its
    // loop of loads a stage earlier: the single shift does that without reordering the body.
    for (file, iv, runs) in [
        ("tests/good/nest_odd.nk", "i", 5),
        ("examples/matmul_blocked.nk", "m", 5),
    ] {
        let src = Source::read(&PathBuf::from(file)).unwrap();
        let (with, func, log) = cycles(&src, true);
        assert!(
            log.iter()
                .any(|r| matches!(r, EmergentRemark::OnlyTransfersSplit { iv: i } if i == iv)),
            "{file}: {log:#?}"
        );
        assert!(staged(&log, iv).is_none());
        assert!(trip(&func, iv) <= runs, "{file}");
        let (without, _, _) = cycles(&src, false);
        assert_eq!(with, without, "{file}: the same program");
    }
    // A staged plan that splits compute but only beside the inner loop's end costs a little
    // (nest_deep_top: `act`'s exponential of the bias, read by the store's add): still bit-exact.
    checked(&good("nest_deep_top.nk"), PipelineMode::Default);
}

#[test]
fn an_inner_loop_realised_across_its_nest_splits_its_compute_with_a_peeled_drain() {
    // `c`'s transpose fills a PSUM ring of two banks that another engine copies out before the
    // matmul: in two stages the Tensor engine transposes the next chunk while this one is
    // copied, and the last chunk's copy and matmul run once after the loop, not in an extra
    // iteration.
    let src = good("nest_psum_chain.nk");
    let (with, func, log) = cycles(&src, true);
    let children = log
        .iter()
        .find_map(|r| match r {
            EmergentRemark::DrainPeeled { iv, children, .. } if iv == "c" => Some(children),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{log:#?}"));
    let stage_of = |prefix: &str| {
        children
            .iter()
            .find(|(d, _)| d.contains(prefix))
            .map(|&(_, s)| s)
    };
    assert_eq!(stage_of("tp.pe"), Some(0), "{children:?}");
    assert_eq!(stage_of("u."), Some(1), "{children:?}");
    assert_eq!(trip(&func, "c"), 6, "no extra iteration");
    // The peeled copies stand in `r`'s body, right after the loop.
    let r = func.axes.values().find(|a| a.iv_name == "r").unwrap();
    let at = r
        .body
        .iter()
        .position(
            |&s| matches!(func.stmts[s].kind, StmtKind::Loop(a) if func.axes[a].iv_name == "c"),
        )
        .unwrap();
    assert!(matches!(
        func.stmts[r.body[at + 1]].kind,
        StmtKind::Insts(_)
    ));
    let (without, _, _) = cycles(&src, false);
    assert!(
        with * 100 <= without * 99,
        "split {with} cycles, unsplit {without}"
    );
    for mode in [PipelineMode::Emergent, PipelineMode::Default] {
        assert!(checked(&src, mode)
            .iter()
            .any(|r| matches!(r, EmergentRemark::DrainPeeled { .. })));
    }
    // A split that would leave only a store in stage 1 is not made (nested_mode_b, issue-bound).
    let src = good("sched_nested.nk");
    let mut func = nkc::driver::compile(&src, Some("nested_mode_b")).unwrap();
    nkc::pipeline::pipeline_path(
        &mut func,
        PipelineMode::Emergent,
        &mut PipelineLog::default(),
    )
    .unwrap();
    let log = backend::transform::emergent::pipeline_emergent(&mut func);
    assert!(!log
        .iter()
        .any(|r| matches!(r, EmergentRemark::DrainPeeled { .. })));
}
