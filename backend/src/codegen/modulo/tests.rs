//! Unit tests of the modulo scheduler's searches ([`crate::codegen::modulo`]): the early-stopping
//! feasibility test and the sorted reservation table agree with their plain versions.
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::recurrence::{
    feasible, longest_paths, longest_paths_counted, smallest_ii, smallest_ii_below,
};
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

/// Whether following `pred` from `v` comes back to `v` along edges whose weights at `ii`
/// (the heaviest between each two) sum to more than zero.
fn on_positive_cycle(deps: &LoopDeps, ii: u64, pred: &[Option<usize>], v: usize) -> bool {
    let (mut u, mut sum) = (v, 0i64);
    for _ in 0..pred.len() {
        let Some(p) = pred[u] else { return false };
        let w = (deps.graph.raw_edges().iter())
            .filter(|e| e.source().index() == p && e.target().index() == u)
            .map(|e| e.weight.latency as i64 - i64::from(e.weight.distance) * ii as i64)
            .max();
        sum += w.expect("a predecessor is joined by an edge");
        u = p;
        if u == v {
            return sum > 0;
        }
    }
    false
}

/// A chain of `n` instructions, each feeding the next in the same iteration (latency 10), the
/// last feeding the first one iteration later: one cycle of latency `10 n` and distance 1.
#[test]
fn an_infeasible_ii_stops_when_a_cycle_closes() {
    let n = 300;
    let mut edges: Vec<(usize, usize, u64, u32)> = (0..n - 1).map(|k| (k, k + 1, 10, 0)).collect();
    edges.push((n - 1, 0, 10, 1));
    let deps = graph(n, &edges);
    assert_eq!(smallest_ii(&deps), 10 * n as u64);
    let mut pred = vec![None; n];
    let (res, rounds) = longest_paths_counted(&deps, 10 * n as u64 - 1, &mut pred);
    let v = res.expect_err("one below the recurrence is infeasible");
    assert!(on_positive_cycle(&deps, 10 * n as u64 - 1, &pred, v));
    // The chain settles in one round and the back edge closes the cycle in the next: a
    // relaxation of every round (`n + 1`, as before) is not needed.
    assert!(rounds <= 3, "{rounds} rounds");
    // At a feasible `II`, the first round without change ends it.
    let (res, rounds) = longest_paths_counted(&deps, 10 * n as u64, &mut vec![None; n]);
    assert!(res.is_ok() && rounds <= 3, "{rounds} rounds");
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
        // An infeasible `II`'s answer is an instruction on a positive cycle of the
        // predecessors (what `critical_cycle` walks from).
        for ii in (0..=800).step_by(7) {
            let mut pred = vec![None; n];
            if let Err(v) = longest_paths(&deps, ii, &mut pred) {
                prop_assert!(on_positive_cycle(&deps, ii, &pred, v), "II {}", ii);
            }
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
