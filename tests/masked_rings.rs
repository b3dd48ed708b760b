//! Masked rings (`backend::transform::ring_reads`, issue 32 items 1 and 6): a tile that one load
//! writes under a mask (a ragged last block) and that every read reads under the same mask, taken
//! at the load's iteration, holds no value of another iteration that a read sees, so it may take
//! more slots like a tile written whole. Then, on `default`, its reuse no longer sets the period
//! (`codegen::expand` adds the slot) and its load goes ahead of the user's stages (`prefetch`):
//! before, every such tile kept the pipeliner's slots and `default` ran 1.11x to 1.90x
//! `emergent` on these kernels. Every run is checked against the interpreter bit for bit, with
//! no race.

mod common;

use backend::transform::remark::Remark;
use nkc::pipeline::PipelineMode;
use nkc::run::RunReport;

const FILE: &str = "tests/good/masked_rings.nk";

/// Runs `kernel` of [`FILE`] on `mode`, checked bit for bit, free of races and at or above its
/// lower bound (`common::checked_bounded`); its report and its cycles.
fn run(kernel: &str, mode: PipelineMode) -> (RunReport, u64) {
    let (r, cycles, _) = common::checked_bounded(FILE, kernel, mode);
    (r, cycles)
}

/// The tiles that got more slots on the way: a slot for a recurrence, or a load issued ahead.
fn deepened(r: &RunReport) -> Vec<&str> {
    r.remarks
        .iter()
        .filter_map(|x| match x {
            Remark::RingSlotAdded { tile, .. } | Remark::Prefetched { tile, .. } => {
                Some(tile.as_str())
            }
            _ => None,
        })
        .collect()
}

/// Each kernel, with a masked load tile that must get more slots on `default` (before, `default`
/// ran 1.36x, 1.90x and 1.11x `emergent` on them).
const CASES: [(&str, &str); 3] = [
    ("masked_rows_pair", "x"),
    ("masked_cols_staged", "t"),
    ("masked_rows_late_read", "t"),
];

#[test]
fn masked_load_tiles_get_slots_and_default_keeps_up_with_emergent() {
    for (kernel, tile) in CASES {
        let (default, d) = run(kernel, PipelineMode::Default);
        let (_, e) = run(kernel, PipelineMode::Emergent);
        let (_, a) = run(kernel, PipelineMode::Annotated);
        assert!(
            deepened(&default).contains(&tile),
            "{kernel}: `{tile}` kept its slots: {:#?}",
            default.backend_log
        );
        assert!(
            d * 100 <= e * 110,
            "{kernel}: default {d} above 1.10x emergent {e}"
        );
        assert!(d <= a, "{kernel}: default {d} slower than annotated {a}");
    }
}
