//! RecMII ([`crate::codegen::modulo`]): the smallest `II` at which no dependence cycle has
//! `Σ latency > II · Σ distance`, found by binary search over a longest-path (Bellman-Ford)
//! feasibility check, and the cycle that sets it, named for the log.
//!
//! Invariants: every cycle of a loop dependence graph has a positive distance (a
//! same-iteration edge goes forward in the body), so `II = 0` is infeasible exactly when the
//! graph has a cycle, and feasibility is monotone in `II` (each edge's weight
//! `latency − II · distance` only falls as `II` grows).

use super::inst_label;
use crate::codegen::bir::{Bir, BirInst};
use crate::codegen::ldg::{DepData, DepKind, LoopDeps};
use crate::codegen::schedule_summary::{CycleData, CycleEdge, CycleStep};
use penguin::{Function, Tensor};
use petgraph::visit::EdgeRef;
use runtime_sim::isa::Engine;

/// The edges of `deps` in graph order, each `(source, target, latency − ii · distance)`.
fn weighted_edges(deps: &LoopDeps, ii: u64) -> Vec<(usize, usize, i64)> {
    (deps.graph.edge_references())
        .map(|e| {
            let w = e.weight().latency as i64 - i64::from(e.weight().distance) * ii as i64;
            (e.source().index(), e.target().index(), w)
        })
        .collect()
}

/// The longest path to every instruction at `ii` (Bellman-Ford from 0 everywhere), with each
/// one's predecessor on it in `pred`; or `Err` with an instruction on a positive cycle. The
/// relaxation stops at the first round that changes nothing, or as soon as its predecessor
/// graph has a cycle ([`feasible`]'s argument: that cycle is positive), so an infeasible `ii`
/// costs the rounds until a cycle closes, not `n` rounds of every edge.
pub(super) fn longest_paths(
    deps: &LoopDeps,
    ii: u64,
    pred: &mut [Option<usize>],
) -> Result<Vec<i64>, usize> {
    longest_paths_counted(deps, ii, pred).0
}

/// [`longest_paths`], and the rounds of relaxation it ran.
pub(super) fn longest_paths_counted(
    deps: &LoopDeps,
    ii: u64,
    pred: &mut [Option<usize>],
) -> (Result<Vec<i64>, usize>, usize) {
    let n = deps.insts.len();
    let edges = weighted_edges(deps, ii);
    let mut dist = vec![0i64; n];
    for round in 1..=n + 1 {
        let mut changed = false;
        for &(p, c, w) in &edges {
            if dist[p] + w > dist[c] {
                dist[c] = dist[p] + w;
                pred[c] = Some(p);
                changed = true;
            }
        }
        if !changed {
            return (Ok(dist), round);
        }
        if let Some(v) = node_on_cycle(n, |v| pred[v]) {
            return (Err(v), round);
        }
    }
    // `n + 1` rounds that all changed something: some predecessor walk is longer than the
    // graph, so it went round a cycle (not reached: the check above sees it first).
    let v = node_on_cycle(n, |v| pred[v]).expect("n + 1 changing rounds close a predecessor cycle");
    (Err(v), n + 1)
}

/// [`longest_paths`] relaxing for `n + 1` rounds on a positive cycle: the instruction it
/// answers is the last one raised in the last round, from which [`critical_cycle`] walks to the
/// cycle it names. The cycle read as soon as the predecessors close one ([`longest_paths`]) may
/// be another cycle of the same ratio, or the same one from another instruction: the log's
/// cycles and the rings `expand` grows for them would change (11 of 2,160 corpus programs,
/// none slower, and the filetests' cycle lines), so the critical cycle keeps every round.
fn longest_paths_every_round(
    deps: &LoopDeps,
    ii: u64,
    pred: &mut [Option<usize>],
) -> Result<Vec<i64>, usize> {
    let n = deps.insts.len();
    let edges = weighted_edges(deps, ii);
    let mut dist = vec![0i64; n];
    for round in 0..=n {
        let mut changed = None;
        for &(p, c, w) in &edges {
            if dist[p] + w > dist[c] {
                dist[c] = dist[p] + w;
                pred[c] = Some(p);
                changed = Some(c);
            }
        }
        match changed {
            None => return Ok(dist),
            Some(c) if round == n => return Err(c),
            Some(_) => {}
        }
    }
    Ok(dist)
}

/// Whether no cycle of `deps` is positive at `ii` ([`longest_paths`] succeeds). The relaxation
/// stops as soon as its predecessor graph has a cycle: the last node of such a cycle to be
/// raised was raised from its predecessor's final distance, while its successor was raised
/// from a smaller one, so the cycle's weights sum to more than zero.
pub(super) fn feasible(deps: &LoopDeps, ii: u64) -> bool {
    let n = deps.insts.len();
    let edges = weighted_edges(deps, ii);
    let mut dist = vec![0i64; n];
    let mut pred = vec![usize::MAX; n];
    for _ in 0..=n {
        let mut changed = false;
        for &(p, c, w) in &edges {
            if dist[p] + w > dist[c] {
                dist[c] = dist[p] + w;
                pred[c] = p;
                changed = true;
            }
        }
        if !changed {
            return true;
        }
        if has_cycle(&pred) {
            return false;
        }
    }
    false
}

/// Whether following `pred` (`usize::MAX`: none) from some node comes back to it.
fn has_cycle(pred: &[usize]) -> bool {
    node_on_cycle(pred.len(), |v| Some(pred[v]).filter(|&p| p != usize::MAX)).is_some()
}

/// A node of a cycle of the predecessor graph `pred` over `0..n`, or `None` when following
/// `pred` from any node ends. Each node is walked over at most twice.
fn node_on_cycle(n: usize, pred: impl Fn(usize) -> Option<usize>) -> Option<usize> {
    // 0: unseen, 1: on the walk under way, 2: known to lead to no cycle.
    let mut state = vec![0u8; n];
    for start in 0..n {
        let mut v = Some(start);
        while let Some(u) = v.filter(|&u| state[u] == 0) {
            state[u] = 1;
            v = pred(u);
        }
        if let Some(u) = v.filter(|&u| state[u] == 1) {
            return Some(u);
        }
        let mut u = Some(start);
        while let Some(w) = u.filter(|&w| state[w] == 1) {
            state[w] = 2;
            u = pred(w);
        }
    }
    None
}

/// The smallest `II` at which no cycle of `deps` has `Σ latency > II · Σ distance` (binary search
/// over [`feasible`]); 0 when the graph has no cycle (every cycle has a positive distance, so
/// `II = 0` fails exactly when one exists).
pub(super) fn smallest_ii(deps: &LoopDeps) -> u64 {
    if feasible(deps, 0) {
        return 0;
    }
    let total: u64 = deps
        .graph
        .edge_references()
        .map(|e| e.weight().latency)
        .sum();
    search_ii(deps, total.max(1))
}

/// [`smallest_ii`] when it is below `bound`, else `None`: one check at `bound − 1` answers
/// most candidates of a search that keeps only shorter periods. (Feasibility is monotone in
/// `II`: each edge's weight `latency − II · distance` only falls as `II` grows.)
pub(super) fn smallest_ii_below(deps: &LoopDeps, bound: u64) -> Option<u64> {
    if bound == 0 || !feasible(deps, bound - 1) {
        return None;
    }
    if feasible(deps, 0) {
        return Some(0);
    }
    Some(search_ii(deps, bound - 1))
}

/// The smallest feasible `II` in `(0, hi]`, given that `0` is not feasible and `hi` is
/// (binary search over [`feasible`]).
fn search_ii(deps: &LoopDeps, hi: u64) -> u64 {
    let (mut lo, mut hi) = (0u64, hi);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if feasible(deps, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// RecMII, the cycle that sets it, and that cycle's edges.
pub(super) fn compute_rec_mii(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
) -> (u64, CycleData, Vec<(DepKind, Tensor, bool)>) {
    let hi = smallest_ii(deps);
    if hi == 0 {
        return (0, CycleData::default(), Vec::new());
    }
    let (cycle, edges) = critical_cycle(func, bir, deps, hi);
    (hi, cycle, edges)
}

/// The cycle of `deps` that needs `hi` (its smallest feasible `II`): a positive cycle at
/// `hi − 1`, named by its instructions and edges, and its edges' kinds and buffers.
pub(super) fn critical_cycle(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
    hi: u64,
) -> (CycleData, Vec<(DepKind, Tensor, bool)>) {
    let n = deps.insts.len();
    let mut pred = vec![None; n];
    let Err(mut v) = longest_paths_every_round(deps, hi.saturating_sub(1), &mut pred) else {
        return (CycleData::default(), Vec::new());
    };
    for _ in 0..n {
        v = pred[v].unwrap_or(v);
    }
    let mut cycle = vec![v];
    let mut u = pred[v].unwrap_or(v);
    while u != v && cycle.len() <= n {
        cycle.push(u);
        u = pred[u].unwrap_or(v);
    }
    cycle.reverse();
    let mut text = CycleData::default();
    let mut edges = Vec::new();
    for (k, &a) in cycle.iter().enumerate() {
        let b = cycle[(k + 1) % cycle.len()];
        // The heaviest edge from `a` to `b` at `hi − 1` is the one the relaxation followed.
        let w = |e: &DepData| e.latency as i64 - i64::from(e.distance) * (hi as i64 - 1);
        let e = deps
            .graph
            .edges_connecting(deps.node(a), deps.node(b))
            .map(|e| *e.weight())
            .max_by_key(w);
        let (ia, ib) = (deps.insts[a], deps.insts[b]);
        if let Some(e) = e {
            edges.push((
                e.kind,
                e.tensor,
                bir.insts[ia].engine != bir.insts[ib].engine || bir.insts[ia].engine == Engine::Sp,
            ));
        }
        if k == 0 {
            text.start = inst_label(func, bir, ia);
        }
        text.edges.push(edge_label(func, bir, ia, ib, e));
    }
    (text, edges)
}

/// The edge of a cycle from instruction `a` to `b`: the iteration distance and buffer of a
/// loop-carried dependence, the user's stages of a flow into a later stage, an in-order engine's
/// next instruction.
fn edge_label(func: &Function, bir: &Bir, a: BirInst, b: BirInst, e: Option<DepData>) -> CycleEdge {
    let to = inst_label(func, bir, b);
    let Some(e) = e else {
        return CycleEdge {
            step: CycleStep::Direct,
            to,
        };
    };
    let tensor = func.display_name(e.tensor).to_string();
    let distance = e.distance;
    let step = match e.kind {
        DepKind::Order => CycleStep::InOrder {
            engine: bir.insts[a].engine,
            next_body: distance > 0,
        },
        _ if distance == 0 => CycleStep::Direct,
        DepKind::Flow => CycleStep::Flow {
            distance,
            tensor,
            stages: match (bir.insts[a].stage, bir.insts[b].stage) {
                (Some(sa), Some(sb)) if sb > sa => Some((sa, sb)),
                _ => None,
            },
        },
        DepKind::Anti => CycleStep::SlotReused { distance, tensor },
        _ => CycleStep::Carried { distance, tensor },
    };
    CycleEdge { step, to }
}
