//! Loops whose iterations chain through HBM (issue 32): a store into a scratch region, the
//! reload of part of it, and the next iteration's store of the same bytes. Three mechanisms:
//! - the loop dependence graph weighs a transfer queued right behind its producer's pieces by
//!   the producer's issue and piece, not its whole latency (`backend::codegen::ldg`,
//!   `codegen::queues::queued_behind`): the recurrence through the scratch costs queue time;
//! - a store whose HBM tensor another statement of the body touches only in other bytes (the
//!   other column block of one output) may be retimed (`backend::retime::never_meet`);
//! - a loop body planned for its chains' latency places each chain of transfers on its own
//!   queues (`codegen::queues::latency::place_pieces`), so two chains of one body run side by
//!   side instead of lining up behind one leader's queues.
//!
//! Every run is checked against the interpreter bit for bit, with no race, and no run beats its
//! lower bound. The figures before each mechanism are in the tests' docs.

use nkc::pipeline::PipelineMode;
use nkc::run::RunReport;

mod common;

/// A checked run of `kernel` of `file` on `mode` (seed 3): bit-exact, free of races, at or above
/// its lower bound. Its report, cycles and lower bound.
fn checked(file: &str, kernel: &str, mode: PipelineMode) -> (RunReport, u64, u64) {
    common::checked_bounded_seeded(file, kernel, mode, 3)
}

/// Every kernel written for these mechanisms runs on every path, bit for bit.
#[test]
fn rounds_through_hbm_run_bit_exact_on_every_path() {
    for k in ["rounds_left_third", "rounds_right_half"] {
        for mode in PipelineMode::ALL {
            checked("tests/good/hbm_rounds_queued.nk", k, mode);
        }
    }
}

/// hbm_scratch's scratch_in_loop: the store of the scratch, its reload and the next round's store
/// queue behind one another on the same queues. The loop's recurrence is that queue time plus
/// the issues (3,612 cycles), not a DMA latency per link: it was 7,252 with the reload and the
/// store each weighed by its whole latency, and the run 31,840 cycles (2.15x its bound) against
/// 22,839 (1.54x) now.
#[test]
fn a_recurrence_through_queued_transfers_costs_no_latency_per_link() {
    let (r, cycles, bound) = checked(
        "tests/good/hbm_scratch.nk",
        "scratch_in_loop",
        PipelineMode::Default,
    );
    let sim = r.sim.as_ref().expect("engine sim");
    let lp = sim.loops.first().expect("the loop is modulo-scheduled");
    assert!(
        lp.rec_mii < 2 * runtime_sim::machine::DMA_LATENCY,
        "recurrence {} (II {})",
        lp.rec_mii,
        lp.ii
    );
    assert!(cycles * 100 <= bound * 160, "{cycles} against {bound}");
}

/// hbm_rounds_queued's rounds_left_third: the exponential's store writes the left column block
/// of `c`, which the other store of the body (the right block) never meets. It is retimed
/// (before, a store whose tensor another statement touched never moved), and with the queued
/// recurrence the kernel runs 16,482 cycles (1.64x its bound) against 27,172 (2.70x). Since the
/// loop is staged for its reload of the scratch (a transfer that reads what the body wrote,
/// `transform::emergent`), the stages already put the store a stage after `w` (15,944 cycles),
/// which is what the retiming did.
#[test]
fn a_store_beside_another_block_of_its_output_is_retimed() {
    let (r, cycles, bound) = checked(
        "tests/good/hbm_rounds_queued.nk",
        "rounds_left_third",
        PipelineMode::Default,
    );
    // The stage of the group named `key` (`` `w.act`@7 ``) in the emergent stage line.
    let stage = |line: &str, key: &str| -> Option<u32> {
        let at = line.find(key)? + key.len() + 1;
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let staged_later = r.backend_log.iter().any(|l| {
        l.contains("compute spread over")
            && stage(l, "`w.act`")
                .zip(stage(l, "`c.sp`"))
                .is_some_and(|(w, c)| c > w)
    });
    assert!(
        common::retimed(&r).contains(&"w") || staged_later,
        "{:#?}",
        r.backend_log
    );
    assert!(cycles * 100 <= bound * 175, "{cycles} against {bound}");
    let (annotated, a, _) = checked(
        "tests/good/hbm_rounds_queued.nk",
        "rounds_left_third",
        PipelineMode::Annotated,
    );
    assert!(
        common::retimed(&annotated).is_empty(),
        "annotated keeps the stages"
    );
    assert!(cycles <= a, "default {cycles} against annotated {a}");
}

/// sched_phases' phases_chain_halves: each round reloads and stores two independent halves of
/// one output, two chains of transfers. Placed chain by chain, they take different queues and
/// run side by side: 34,166 cycles (1.29x the bound) against 40,494 (1.53x) when both chains
/// queued behind the first one's leader.
#[test]
fn two_chains_of_one_body_take_different_queues() {
    let (_, cycles, bound) = checked(
        "tests/good/sched_phases.nk",
        "phases_chain_halves",
        PipelineMode::Default,
    );
    assert!(cycles * 100 <= bound * 135, "{cycles} against {bound}");
}
