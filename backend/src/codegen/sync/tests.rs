//! Unit tests of the synchronisation analysis ([`crate::codegen::sync`]): how distances per
//! iteration group into pieces.
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::need::pieces;

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
