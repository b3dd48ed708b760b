//! Unit tests of the list scheduler ([`crate::codegen::schedule`]).
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::*;
use cranelift_entity::EntityRef;
use penguin::Axis;

/// `c[:, lo + 512·i .. + cols]` of a 2-D tensor, in iteration `i` of axis 0.
fn cols(lo: i64, cols: u64, coeff: i64) -> Access {
    Access {
        start: vec![
            AffineExpr::constant(0),
            AffineExpr::from_terms([(Axis::new(0), coeff)], lo),
        ],
        size: vec![128, cols],
        slots: Vec::new(),
        pattern: None,
    }
}

#[test]
fn halves_of_a_tensor_are_disjoint_and_overlaps_are_not() {
    // The two halves of the columns, in the same iteration.
    assert!(disjoint_rects(&cols(0, 512, 512), &cols(512, 512, 512)));
    assert!(disjoint_rects(&cols(512, 512, 512), &cols(0, 512, 512)));
    // Overlapping by one column.
    assert!(!disjoint_rects(&cols(0, 513, 512), &cols(512, 512, 512)));
    // Starts that move differently with the iteration may meet in some iteration.
    assert!(!disjoint_rects(&cols(0, 512, 512), &cols(512, 512, 256)));
    // Equal rectangles.
    assert!(!disjoint_rects(&cols(0, 512, 512), &cols(0, 512, 512)));
}

/// An access of a 2-D buffer: rows `[0, 8)`, columns from `lo` (plus `i` when `moves`),
/// `cols` of them, ring slot selector `slot`.
fn acc(lo: i64, cols: u64, moves: bool, slot: i64) -> Access {
    let terms = if moves {
        vec![(Axis::new(0), 1)]
    } else {
        Vec::new()
    };
    Access {
        start: vec![AffineExpr::constant(0), AffineExpr::from_terms(terms, lo)],
        size: vec![8, cols],
        slots: vec![AffineExpr::constant(slot)],
        pattern: None,
    }
}

/// The transitive closure of `edges` over `n` nodes, as a reachability matrix.
fn closure(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<bool>> {
    let mut r = vec![vec![false; n]; n];
    // Edges go forward, so from the last node back each row is final when read.
    for i in (0..n).rev() {
        for &(a, b) in edges.iter().filter(|e| e.0 == i) {
            assert!(a < b, "an edge goes forward");
            r[i][b] = true;
            let row = r[b].clone();
            for (x, y) in r[i].iter_mut().zip(row) {
                *x |= y;
            }
        }
    }
    r
}

proptest::proptest! {
    /// The linear builder's edges have the transitive closure of every conflicting pair, with
    /// and without ring slots told apart, whatever the mix of instructions and loops.
    #[test]
    fn edges_close_to_the_all_pairs_relation(
        nodes in proptest::collection::vec(
            (
                proptest::bool::weighted(0.85),
                proptest::collection::vec(
                    (0usize..3, 0i64..6, 1u64..5, proptest::bool::weighted(0.2), 0i64..3, proptest::bool::ANY),
                    1..4,
                ),
            ),
            2..14,
        ),
        ring in proptest::bool::ANY,
    ) {
        let accesses: Vec<Vec<(Tensor, Access, bool)>> = (nodes.iter())
            .map(|(_, ops)| {
                (ops.iter())
                    .map(|&(t, lo, cols, moves, slot, w)| (Tensor::new(t), acc(lo, cols, moves, slot), w))
                    .collect()
            })
            .collect();
        let ops: Vec<Vec<(Tensor, &Access, bool)>> = (accesses.iter())
            .map(|v| v.iter().map(|(t, a, w)| (*t, a, *w)).collect())
            .collect();
        let inst: Vec<bool> = nodes.iter().map(|n| n.0).collect();
        // A ring of 2 slots: selectors an odd constant apart never meet.
        let two = |_: Tensor, a: &[AffineExpr], b: &[AffineExpr]| {
            (a[0].constant_term() - b[0].constant_term()).rem_euclid(2) != 0
        };
        let ring: Option<&Ring> = if ring { Some(&two) } else { None };
        let n = ops.len();
        let mut pairs = Vec::new();
        for j in 0..n {
            for i in 0..j {
                let meets = ops[i].iter().any(|&(t, a, wa)| {
                    ops[j].iter().any(|&(u, b, wb)| {
                        let (sa, sb) = (
                            Seen { node: i, access: a, write: wa },
                            Seen { node: j, access: b, write: wb },
                        );
                        t == u && conflict(ring, t, sa, sb, &inst)
                    })
                });
                if meets {
                    pairs.push((i, j));
                }
            }
        }
        let edges = compute_edges(&ops, &inst, ring);
        for &(i, j) in &edges {
            proptest::prop_assert!(pairs.contains(&(i, j)), "edge {i} -> {j} is no conflict");
        }
        proptest::prop_assert_eq!(closure(n, &edges), closure(n, &pairs));
    }
}
