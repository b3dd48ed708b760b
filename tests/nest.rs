//! The emergent prefetch across loop nests (`backend/src/emergent/nest.rs`): it beats the
//! single-loop realisation on matmul, matmul_blocked and transpose (P flat iterations ahead, or
//! a whole execution ahead when `sp` is the bottleneck), it is bit-exact and
//! race-free on odd nests and on nests whose inner loop follows other statements, it adds no
//! iterations, and the trip-clamped synchronisation analysis still decides what the full one
//! decides when the outer loop is long.

use backend::transform::decline::Decline;
use backend::transform::emergent::remark::SingleBuffered;
use backend::transform::emergent::EmergentRemark;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use std::path::{Path, PathBuf};

#[path = "common/emergent.rs"]
mod emergent;

use emergent::{good, lowered, trip};

/// Emergent pipelining with or without prefetch across nests: (cycles, log). The program must
/// simulate with no race.
fn cycles(src: &Source, across_nests: bool) -> (u64, Vec<EmergentRemark>) {
    let opts = backend::transform::emergent::EmergentOptions {
        across_nests,
        ..Default::default()
    };
    let (cycles, _, log) = emergent::emergent_cycles(src, &opts);
    (cycles, log)
}

/// The emergent remarks of a checked run on `mode`.
fn checked(src: &Source, mode: PipelineMode) -> Vec<EmergentRemark> {
    emergent::checked_remarks(src, mode, 11)
}

/// A prefetch across a nest: the loop, its trip count, the nest as the log names it, the carry
/// copies per load, and whether it runs one execution ahead (else flat iterations ahead).
fn across(r: &EmergentRemark) -> Option<(&str, i64, &str, usize, bool)> {
    match r {
        EmergentRemark::PrefetchedFlat {
            iv,
            trip,
            nest,
            carries,
            ..
        } => Some((iv, *trip, nest, *carries, false)),
        EmergentRemark::PrefetchedExecution {
            iv,
            trip,
            nest,
            carries,
            ..
        } => Some((iv, *trip, nest, *carries, true)),
        _ => None,
    }
}

#[test]
fn prefetch_across_the_nest_beats_the_single_loop_realisation() {
    for ex in ["examples/matmul.nk", "examples/matmul_blocked.nk"] {
        let src = Source::read(Path::new(ex)).unwrap();
        let (nested, log) = cycles(&src, true);
        let (single, _) = cycles(&src, false);
        assert!(
            log.iter().any(|r| match r {
                EmergentRemark::Carried { nest, .. } => nest.starts_with("`m` ⊃ `n`"),
                r => across(r).is_some_and(|a| a.2.starts_with("`m` ⊃ `n`")),
            }),
            "{ex}: {log:#?}"
        );
        assert!(
            nested < single,
            "{ex}: across the nest {nested} cycles, single loop {single}"
        );
    }
}

#[test]
fn an_issue_bound_nest_prefetches_a_whole_execution_ahead() {
    // transpose's `sp` spends longer issuing each iteration's 32 transfers than the compute
    // engines spend on it: the loads run one execution of `c` ahead, which beats the single loop.
    let src = Source::read(Path::new("examples/transpose.nk")).unwrap();
    let (nested, log) = cycles(&src, true);
    let (single, _) = cycles(&src, false);
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::PrefetchedExecution {
                iv,
                trip: 4,
                nest,
                why: Decline::IssueBound { .. },
                ..
            } if iv == "c" && nest.starts_with("`r`")
        )),
        "{log:#?}"
    );
    assert!(
        nested < single,
        "across the nest {nested} cycles, single loop {single}"
    );
    // Two executions ahead (a transfer outlasts one execution of `c`), in blocks of `b` (2) x
    // `r` (2, the whole level) x `c`: one carry into the next `b`. The emergent pass alone, on
    // the loop as written: the whole path unrolls `c` (trip 3) fully into `r` first, which
    // spreads its transfers better (`backend/src/transform/unroll.rs`); bit-exact both ways.
    let src = good("nest_whole.nk");
    checked(&src, PipelineMode::Emergent);
    let (_, log) = cycles(&src, true);
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::PrefetchedExecution { nest, ahead: 2, blocks, carries: 1, .. }
                if nest.starts_with("`b` ⊃ `r`") && blocks == &[2, 2]
        )),
        "{log:#?}"
    );
    let (nested, _) = cycles(&src, true);
    let (single, _) = cycles(&src, false);
    assert!(nested < single, "across {nested}, single loop {single}");
}

#[test]
fn an_odd_level_takes_blocks_of_a_divisor_of_its_trip() {
    // `w` (trip 3) in `p` (2) ⊃ `h` (3): no parity of the flat execution index follows `h`, so
    // this nest used to keep the single loop; its ring's blocks are now 3 along `h` (a divisor of
    // its trip) x 3 along `w`, two executions ahead, carries into the next `h` and the next `p`.
    // The emergent pass alone, on the loop as written (the whole path unrolls `w` fully into
    // `h`, as nest_whole's `c`); bit-exact both ways.
    let src = good("nest_ahead_blocks.nk");
    checked(&src, PipelineMode::Emergent);
    let (_, log) = cycles(&src, true);
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::PrefetchedExecution { iv, trip: 3, ahead: 2, blocks, carries: 2, .. }
                if iv == "w" && blocks == &[3]
        )),
        "{log:#?}"
    );
    let (nested, _) = cycles(&src, true);
    let (single, _) = cycles(&src, false);
    assert!(nested < single, "across {nested}, single loop {single}");
}

#[test]
fn a_shallow_divisor_ring_prefetches_a_whole_execution_with_no_extra_iteration() {
    // nest_odd's `j` (trip 3) gets a ring of 3 slots at most along the flat index (2 iterations
    // ahead, where 3 are wanted); nest_shallow_ring's `q` (trip 2) one of 2 (1 ahead). Both issue
    // their loads one whole execution ahead instead, with no extra iteration, and beat the
    // single-loop realisation.
    for (file, iv, t, blocks) in [
        ("nest_odd.nk", "j", 3, 2),
        ("nest_shallow_ring.nk", "q", 2, 2),
    ] {
        let src = good(file);
        for mode in [PipelineMode::Emergent, PipelineMode::Default] {
            let log = checked(&src, mode);
            assert!(
                log.iter().any(|r| matches!(
                    r,
                    EmergentRemark::PrefetchedExecution {
                        iv: i,
                        trip,
                        ahead: 1,
                        blocks: b,
                        why: Decline::ShallowDivisorRing { .. },
                        ..
                    } if i == iv && *trip == t && b == &[blocks]
                )),
                "{file}: {log:#?}"
            );
        }
        let mut func = lowered(&src);
        backend::transform::emergent::pipeline_emergent(&mut func);
        assert_eq!(trip(&func, iv), t, "{file}: the inner loop runs no drain");
        let (nested, _) = cycles(&src, true);
        let (single, _) = cycles(&src, false);
        assert!(
            nested < single,
            "{file}: across {nested}, single loop {single}"
        );
    }
}

#[test]
fn a_ring_that_divides_the_trip_deep_enough_stays_flat() {
    // nest_preceded's `k` (trip 4) gets a ring of 4 slots, as deep as wanted: the flat ring.
    let src = good("nest_preceded.nk");
    let log = checked(&src, PipelineMode::Emergent);
    assert!(
        log.iter()
            .any(|r| matches!(r, EmergentRemark::PrefetchedFlat { iv, trip: 4, .. } if iv == "k")),
        "{log:#?}"
    );
}

#[test]
fn an_inner_loop_after_other_statements_prefetches_across_two_levels() {
    let src = good("nest_preceded.nk");
    for mode in [PipelineMode::Emergent, PipelineMode::Default] {
        let log = checked(&src, mode);
        assert!(
            log.iter()
                .filter_map(across)
                .any(|(iv, trip, nest, carries, _)| iv == "k"
                    && trip == 4
                    && nest.starts_with("`m` ⊃ `n`")
                    && carries == 2),
            "{log:#?}"
        );
    }
    let (nested, _) = cycles(&src, true);
    let (single, _) = cycles(&src, false);
    assert!(nested < single, "across {nested}, single loop {single}");
}

/// A long outer loop around a short ring loop, on both realisations (P flat iterations ahead; a
/// whole execution ahead, for an issue-bound loop): the clamped analysis still clamps it and
/// emits the program the full analysis emits, and the run is bit-exact.
#[test]
fn a_long_outer_loop_is_still_clamped() {
    let flat = "def long_nest(a: nl.hbm[nl.float32, 20480, 512]):\n    \
                c = nl.ndarray((5120, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
                for i in nl.affine_range(40):\n        \
                acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n        \
                for j in nl.affine_range(4):\n            \
                t = nl.load(a[i * 512 + j * 128:i * 512 + (j + 1) * 128, :])\n            \
                e = nl.exp(t)\n            \
                acc += e\n        \
                nl.store(c[i * 128:(i + 1) * 128, :], value=acc)\n    return c\n";
    let whole = "def long_transpose(x: nl.hbm[nl.float32, 5120, 512]):\n    \
                 y = nl.ndarray((512, 5120), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
                 for r in nl.affine_range(40):\n        \
                 for c in nl.affine_range(4):\n            \
                 t = nl.load(x[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128])\n            \
                 tp = nisa.nc_transpose(t)\n            \
                 o = nl.copy(tp)\n            \
                 nl.store(y[c * 128:(c + 1) * 128, r * 128:(r + 1) * 128], value=o)\n    \
                 return y\n";
    for (name, text, how) in [("long_nest", flat, false), ("long_transpose", whole, true)] {
        let src = Source {
            path: PathBuf::from(format!("{name}.nk")),
            text: text.to_string(),
        };
        let mut func = lowered(&src);
        let log = backend::transform::emergent::pipeline_emergent(&mut func);
        assert!(
            log.iter().filter_map(across).any(|a| a.4 == how),
            "{name}: {log:#?}"
        );
        let clamped = nkc::pipeline::codegen(&func, None, true).unwrap();
        let full = nkc::pipeline::codegen(&func, None, false).unwrap();
        assert!(
            clamped.clamped_loops > 0,
            "{name}: the outer loop was not clamped"
        );
        assert_eq!(
            format!("{:?}", clamped.program),
            format!("{:?}", full.program),
            "{name}"
        );
        checked(&src, PipelineMode::Emergent);
    }
}

/// The prologue copy of a prefetch across the nest runs once, at the first flat iteration; its
/// consumers wait for that one signal (`>= 1`), not for the count of the current iteration, which
/// would tie the Tensor engine to `sp` issuing the copy's later, predicated-off instances.
#[test]
fn a_prologue_copys_consumers_wait_for_its_one_transfer() {
    let src = Source::read(Path::new("examples/matmul.nk")).unwrap();
    let mut func = lowered(&src);
    nkc::pipeline::prepare_backend(&mut func, PipelineMode::Emergent).unwrap();
    let compiled = nkc::pipeline::codegen(&func, Some(&src.text), true).unwrap();
    let text = runtime_sim::text::print(&compiled.program);
    let pe = text
        .split("engine ")
        .find(|s| s.starts_with("pe "))
        .expect("pe has a stream");
    // The prologue copies are guarded to the first iteration of the whole nest.
    let prologue_sems: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("@(r0 == 0 && r1 == 0 && r2 == 0) dma"))
        .filter_map(|l| l.split("-> ").nth(1)?.split_whitespace().next())
        .collect();
    assert!(!prologue_sems.is_empty(), "{text}");
    for sem in prologue_sems {
        let waits: Vec<&str> = pe
            .lines()
            .filter(|l| l.contains(&format!("wait {sem} ")))
            .collect();
        assert!(!waits.is_empty(), "pe waits for {sem}: {pe}");
        assert!(
            waits.iter().all(|w| w.trim_end().ends_with(">= 1")),
            "{waits:?}"
        );
    }
}

#[test]
fn a_tile_filled_by_a_loop_of_loads_becomes_a_ring_issued_ahead() {
    // matmul_blocked: `lhs` is filled slice by slice by loop `k` at the start of every `m`; it
    // becomes a ring along `m` and the loop of its loads runs one iteration of `m` ahead, while
    // the Tensor engine still works on the previous block.
    let src = Source::read(Path::new("examples/matmul_blocked.nk")).unwrap();
    let log = checked(&src, PipelineMode::Emergent);
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::TransferRing { iv, trip: 4, tile, slots: 2, .. } if iv == "m" && tile == "lhs"
        )),
        "{log:#?}"
    );
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::Shifted { iv, tiles, ahead: 1, .. } if iv == "m" && tiles.first().is_some_and(|t| t == "lhs")
        )),
        "{log:#?}"
    );
    // A loop that fills only half of the tile does not start every iteration by writing all of
    // it: the tile stays single-buffered, and the kernel is still exact.
    let text = std::fs::read_to_string("examples/matmul_blocked.nk")
        .unwrap()
        .replace(
            "        for k in nl.affine_range(4):\n            lhs[:, k * 128:(k + 1) * 128] = nl.load(at[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])",
            "        for k in nl.affine_range(2):\n            lhs[:, k * 128:(k + 1) * 128] = nl.load(at[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])\n        lhs[:, 256:384] = nl.load(at[256:384, m * 128:(m + 1) * 128])\n        lhs[:, 384:512] = nl.load(at[384:512, m * 128:(m + 1) * 128])",
        );
    assert!(text.contains("lhs[:, 384:512]"));
    let src = Source {
        path: PathBuf::from("half.nk"),
        text,
    };
    let log = checked(&src, PipelineMode::Emergent);
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::StaysSingle { tile, iv, why: SingleBuffered::NotWrittenFirst | SingleBuffered::NoRoom } if tile == "lhs" && iv == "m"
        )),
        "{log:#?}"
    );
}
