//! Unit tests of the synchronisation analysis ([`crate::codegen::sync`]): how distances per
//! iteration group into pieces, and how far a wait backs off within a block.
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::need::pieces;
use super::slack::{compute_slack, realised_slack};

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
    // On a trip-clamped copy, kept only where the block has as many instances as the kernel's.
    assert_eq!(realised_slack(3, 7, 7), 3);
    assert_eq!(realised_slack(3, 7, 40), 0);
}
