//! Unit tests of the synchronisation analysis ([`crate::codegen::sync`]): how distances per
//! iteration group into pieces, and how far a wait backs off within a block.
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::need::pieces;
use super::slack::{compute_slack, realised_slack};
use crate::codegen::clamp::EDGE;

#[test]
fn pieces_group_equal_distances_and_absorb_iterations_without_conflicts() {
    // A ring of 3 slots over an inner loop of 5: the first iteration reuses the slot the
    // previous execution's last iteration read (distance 0), the middle ones can run ahead.
    assert_eq!(
        pieces(&[Some(0), Some(3), Some(3), Some(1), None]),
        Some(vec![(0, 0, 0), (1, 2, 3), (3, 4, 1)])
    );
    // Leading iterations without a conflict join the first range.
    assert_eq!(
        pieces(&[None, Some(1), Some(2)]),
        Some(vec![(0, 1, 1), (2, 2, 2)])
    );
    // One distance everywhere: no pieces.
    assert_eq!(pieces(&[None, Some(2), Some(2)]), None);
    assert_eq!(pieces(&[Some(1), None, Some(1)]), None);
    assert_eq!(pieces(&[None, None]), None);
}

#[test]
fn the_slack_is_the_least_back_off_within_its_block_and_dropped_past_the_cap() {
    // Seven instances per common iteration, the latest needed 3 before the end: distance 0,
    // slack 3 (the wait is for count 4 of 7).
    assert_eq!(compute_slack(3, 7), 3);
    // A back-off of two blocks and 2: the distance takes the blocks, the slack the rest.
    assert_eq!(compute_slack(2 * 7 + 2, 7), 2);
    // One instance per common iteration: nothing to back off within.
    assert_eq!(compute_slack(5, 1), 0);
    // Past the distance cap the wait is the cap's, without slack.
    assert_eq!(compute_slack((super::MAX_DISTANCE + 1) * 4 + 1, 4), 0);
    // On a trip-clamped copy: unchanged where the loops kept their trip counts.
    assert_eq!(realised_slack(3, &[7], &[7]), 3);
    // A loop clamped from 40 to 22 iterations: an instance in the copy's upper half is the
    // kernel's by a shift of 18, the same count from the end.
    assert_eq!(realised_slack(3, &[22], &[40]), 3);
    assert_eq!(realised_slack(10, &[22], &[40]), 10);
    // Between its first `EDGE` iterations and its upper half it may stand for a later
    // steady-state iteration: dropped.
    assert_eq!(realised_slack(11, &[22], &[40]), 0);
    assert_eq!(realised_slack(22 - 1 - EDGE, &[22], &[40]), 0);
    // In its first `EDGE` iterations it is the kernel's own: 18 more instances after it.
    assert_eq!(realised_slack(21, &[22], &[40]), 39);
    assert_eq!(realised_slack(22 - EDGE, &[22], &[40]), 40 - EDGE);
    // Two loops, the inner clamped: iteration (2, 15) of (3, 22) is (2, 33) of (3, 40), which
    // is 40 - 1 - 33 = 6 from the end of the block, as (2, 15) is 6 from the end in the copy.
    assert_eq!(realised_slack(6, &[3, 22], &[3, 40]), 6);
    // The outer clamped: iteration (15, 1) of (22, 3) is (33, 1) of (40, 3): 6*3 + 1 from the end.
    assert_eq!(realised_slack(6 * 3 + 1, &[22, 3], &[40, 3]), 6 * 3 + 1);
    // An outer iteration in the copy's middle, whatever the inner one: dropped.
    assert_eq!(realised_slack(11 * 3 + 1, &[22, 3], &[40, 3]), 0);
}
