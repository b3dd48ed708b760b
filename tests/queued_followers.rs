//! Transfers queued right behind the transfer they follow (issue 32, item 1): `sp` issues every
//! transfer from one in-order stream, so a follower that waits on a semaphore for its leader to
//! land (a store of a loaded tile, the reload of stored rows a stage later) holds every transfer
//! behind it, the next iterations' loads included. In a loop whose iterations do not chain, the
//! queue plan lines such a follower up behind its leader's pieces when that costs no throughput
//! the wait would not (`backend::codegen::queues`, `align_when_free`), across the stages of a
//! pipelined loop too (`chain::shifted_pairs`: the leader's instance `δ` bodies earlier): a
//! queue is first in, first out, so the follower needs no semaphore.
//!
//! Every run is checked against the interpreter bit for bit, with no race, and no run beats its
//! lower bound. The figures before (main's nkc-m13) are in the tests' docs; each assertion fails
//! with them.

use nkc::pipeline::PipelineMode;

mod common;

/// A checked run of `kernel` of `file` on `mode` ([`common::checked_bounded`]): its cycles and
/// lower bound.
fn checked(file: &str, kernel: &str, mode: PipelineMode) -> (u64, u64) {
    let (_, cycles, bound) = common::checked_bounded(file, kernel, mode);
    (cycles, bound)
}

const PATHS: [PipelineMode; 5] = [
    PipelineMode::None,
    PipelineMode::Annotated,
    PipelineMode::Default,
    PipelineMode::Emergent,
    PipelineMode::Auto,
];

/// stage_reload_rows: the reload of each block's stored rows runs a user's stage after the
/// store. Before, it waited on `sp` for the store to land: annotated 21,236 cycles (1.98x the
/// bound), emergent 23,040 (2.15x); now 17,762 and 15,292.
#[test]
fn a_reload_a_stage_after_its_store_queues_behind_it() {
    let file = "tests/good/stage_reload_rows.nk";
    for mode in PATHS {
        checked(file, "stage_reload_rows", mode);
    }
    let (cycles, bound) = checked(file, "stage_reload_rows", PipelineMode::Annotated);
    assert!(cycles * 100 <= bound * 175, "{cycles} against {bound}");
    let (cycles, bound) = checked(file, "stage_reload_rows", PipelineMode::Emergent);
    assert!(cycles * 100 <= bound * 160, "{cycles} against {bound}");
}

/// copy_then_scale, copy_beside_sums: a store of each loaded tile beside work on it. Before, the
/// copy of a pipelined loop waited on `sp` for the load of its ring slot to land, stages
/// earlier: copy_beside_sums on `default` 7,068 cycles (1.54x); now 5,116.
#[test]
fn a_store_of_a_loaded_tile_queues_behind_the_load() {
    let file = "tests/good/copy_then_scale.nk";
    for kernel in ["copy_then_scale", "copy_beside_sums"] {
        for mode in PATHS {
            checked(file, kernel, mode);
        }
    }
    let (cycles, bound) = checked(file, "copy_beside_sums", PipelineMode::Default);
    assert!(cycles * 100 <= bound * 125, "{cycles} against {bound}");
}
