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

/// `Access::covers_whole`: a pattern from the origin whose values reach every element of the
/// tensor once (a transposing write of a whole tile) covers it like a whole box; one that
/// reaches only some (the even columns), starts off the origin or reaches an element twice
/// does not.
#[test]
fn a_pattern_reaching_every_element_once_covers_the_whole_tile() {
    use penguin::affine::AffineExpr;
    use penguin::ir::Access;
    let access = |start: [i64; 2], p: Pattern| {
        let size = p.bounding_box(2).expect("non-negative steps");
        Access {
            start: start.iter().map(|&s| AffineExpr::constant(s)).collect(),
            size,
            slots: Vec::new(),
            pattern: Some(p),
        }
    };
    // Each row's [4, 8] block written transposed: 128 x (8 x 4) values over 128 x 32.
    let transposed = pat(&[(128, &[1, 0]), (8, &[0, 1]), (4, &[0, 8])]);
    assert!(access([0, 0], transposed).covers_whole(&[128, 32]));
    // The even columns only: a bounding box of 63 columns, half the values.
    let even = pat(&[(128, &[1, 0]), (32, &[0, 2])]);
    assert!(!access([0, 0], even.clone()).covers_whole(&[128, 63]));
    assert!(!access([0, 0], even).covers_whole(&[128, 64]));
    // Every element of the rows 1.. of a taller tile.
    let rows = pat(&[(127, &[1, 0]), (32, &[0, 1])]);
    assert!(!access([1, 0], rows).covers_whole(&[128, 32]));
    // As many values as elements, one of them reached twice.
    let twice = pat(&[(128, &[1, 0]), (2, &[0, 1]), (2, &[0, 1])]);
    assert!(!access([0, 0], twice).covers_whole(&[128, 3]));
    // A box is whole as before.
    assert!(Access::whole(&[128, 32]).covers_whole(&[128, 32]));
}
