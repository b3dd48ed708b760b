//! Unit tests of the modulo scheduler's searches ([`crate::codegen::modulo`]): the early-stopping
//! feasibility test and the sorted reservation table agree with their plain versions.
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::recurrence::{feasible, longest_paths, smallest_ii, smallest_ii_below};
use super::search::{place_scanning, Reservations};
use crate::codegen::bir::BirInst;
use crate::codegen::ldg::{DepData, DepKind, LoopDeps};
use cranelift_entity::EntityRef;
use penguin::Tensor;
use petgraph::graph::DiGraph;
use proptest::prelude::*;

/// A loop dependence graph on `n` instructions with the given edges
/// `(from, to, latency, distance)`.
fn graph(n: usize, edges: &[(usize, usize, u64, u32)]) -> LoopDeps {
    let mut g = DiGraph::new();
    for k in 0..n {
        g.add_node(k);
    }
    for &(a, b, latency, distance) in edges {
        // As in a real body, a same-iteration edge goes forward: every cycle has a distance.
        let (a, b) = (a % n, b % n);
        let (a, b) = if distance == 0 {
            (a.min(b), a.max(b))
        } else {
            (a, b)
        };
        if distance == 0 && a == b {
            continue;
        }
        g.add_edge(
            petgraph::graph::NodeIndex::new(a),
            petgraph::graph::NodeIndex::new(b),
            DepData {
                kind: DepKind::Flow,
                distance,
                latency,
                tensor: Tensor::new(0),
            },
        );
    }
    LoopDeps {
        lp: crate::codegen::bir::BirLoop::new(0),
        insts: (0..n).map(BirInst::new).collect(),
        graph: g,
        busy: vec![1; n],
        latency: vec![1; n],
        exclusive: Vec::new(),
    }
}

proptest! {
    /// The early-stopping feasibility test agrees with the full relaxation at every `II`,
    /// and the binary search finds the smallest feasible `II`.
    #[test]
    fn feasible_agrees_with_longest_paths(
        n in 1usize..8,
        edges in proptest::collection::vec((0usize..8, 0usize..8, 0u64..200, 0u32..4), 0..20),
    ) {
        let deps = graph(n, &edges);
        let full = |ii: u64| longest_paths(&deps, ii, &mut vec![None; n]).is_ok();
        for ii in (0..=800).step_by(7) {
            prop_assert_eq!(feasible(&deps, ii), full(ii), "II {}", ii);
        }
        let hi = smallest_ii(&deps);
        prop_assert!(full(hi));
        prop_assert!(hi == 0 || !full(hi - 1));
        // Below a bound, the search finds the same `II`; at or above it, nothing.
        for bound in 0..hi + 3 {
            let below = smallest_ii_below(&deps, bound);
            prop_assert_eq!(below, (hi < bound).then_some(hi), "bound {}", bound);
        }
    }

    /// The sorted reservation table places every interval where the scan over every
    /// placed interval does, as the II search fills an engine (placing each at the answer).
    #[test]
    fn reservations_place_where_the_scan_does(
        ii in 1i64..60,
        items in proptest::collection::vec((-40i64..80, 0i64..40, 0i64..25), 1..30),
    ) {
        let deps = graph(items.len(), &[]);
        let mut table: Vec<(i64, i64, usize)> = Vec::new();
        let mut reserved = Reservations::default();
        for (k, &(lower, span, b)) in items.iter().enumerate() {
            let upper = lower + span;
            let scanned = place_scanning(&deps, &table, k, lower, upper, b, ii);
            prop_assert_eq!(reserved.place(lower, upper, b, ii), scanned, "item {}", k);
            if let Some(t) = scanned {
                table.push((t, b, k));
                reserved.insert(t, b, ii);
            }
        }
    }
}
