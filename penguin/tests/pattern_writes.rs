//! `Pattern::reaches_twice`, the verifier's rule that a written access pattern reaches each
//! element once: decided by counting and by nesting axes for patterns of any size, and by
//! enumeration within a bound otherwise.

use penguin::ir::{PatAxis, Pattern};

fn pat(axes: &[(u64, &[i64])]) -> Pattern {
    Pattern {
        axes: axes
            .iter()
            .map(|&(count, step)| PatAxis {
                count,
                step: step.to_vec(),
            })
            .collect(),
    }
}

#[test]
fn nested_axes_reach_distinct_elements_without_enumeration() {
    // A transposed view of a 128 x 64 tile, and 2^20 x 2^20 values of a huge tensor.
    assert_eq!(
        pat(&[(64, &[0, 1]), (128, &[1, 0])]).reaches_twice(&[128, 64]),
        Some(false)
    );
    let huge = pat(&[(1 << 20, &[1, 0]), (1 << 20, &[0, 1])]);
    assert_eq!(huge.reaches_twice(&[1 << 20, 1 << 20]), Some(false));
}

#[test]
fn more_values_than_the_bounding_box_reach_some_element_twice() {
    // 2^40 values on one element: decided by counting, never enumerated.
    let p = pat(&[(1, &[1, 0]), (1 << 40, &[0, 0])]);
    assert_eq!(p.reaches_twice(&[4, 4]), Some(true));
}

#[test]
fn axes_that_do_not_nest_are_enumerated() {
    // Overlapping windows (step 1, width 3, 4 windows) reach elements twice; steps 2 and 3
    // with 3 values each do not nest and still reach 9 distinct elements.
    assert_eq!(
        pat(&[(1, &[1, 0]), (4, &[0, 1]), (3, &[0, 1])]).reaches_twice(&[1, 8]),
        Some(true)
    );
    assert_eq!(
        pat(&[(1, &[1, 0]), (3, &[0, 2]), (3, &[0, 3])]).reaches_twice(&[1, 16]),
        Some(false)
    );
}

#[test]
fn a_large_pattern_that_does_not_nest_is_undecided() {
    // Steps 2 and 3 interleave (3 values each), repeated 2^20 times 11 apart: 9 * 2^20
    // values, fewer than the bounding box's elements, more than the enumeration bound.
    let p = pat(&[
        (1, &[1, 0]),
        (3, &[0, 2]),
        (3, &[0, 3]),
        (1 << 20, &[0, 11]),
    ]);
    assert_eq!(p.reaches_twice(&[1, 1 << 24]), None);
}
