//! Body orders ([`crate::codegen::modulo`]): the predicted steady-state period of a body run in
//! a given order by the in-order engines ([`compute_order_period`], its cycle), the search for a
//! faster order (single moves, [`improve_order`]; or every combination of the engines'
//! sequences when there are few, [`exhaust_engine_orders`]), and the start offsets of an order
//! ([`order_offsets`]).
//!
//! Invariant: every order this module returns keeps every same-iteration edge of the loop's
//! dependence graph forward (it is a topological order of them), so the body's sequential
//! meaning is unchanged; only the engines' interleaving changes.

use super::recurrence::{critical_cycle, smallest_ii, smallest_ii_below};
use crate::codegen::bir::Bir;
use crate::codegen::ldg::{DepData, DepKind, LoopDeps};
use crate::codegen::schedule_summary::CycleData;
use penguin::Function;
use petgraph::visit::EdgeRef;
use runtime_sim::isa::Engine;

/// The steady-state period of the body run in `order` (positions in program order) by in-order
/// engines: the largest `Σ latency / Σ distance` over the cycles of the dependence graph plus, per
/// engine, its instructions in `order` chained by their busy times and its last instruction
/// followed by its first of the next iteration (`d = 1`). Found like RecMII.
pub fn compute_order_period(bir: &Bir, deps: &LoopDeps, busy: &[u64], order: &[usize]) -> u64 {
    smallest_ii(&order_graph(bir, deps, busy, order))
}

/// [`compute_order_period`] of `order` when it is below `bound`, else `None`.
fn order_period_below(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &[usize],
    bound: u64,
) -> Option<u64> {
    smallest_ii_below(&order_graph(bir, deps, busy, order), bound)
}

/// The cycle that sets [`compute_order_period`] of `order`, named like RecMII's (empty when no
/// cycle does).
pub fn compute_order_cycle(
    func: &Function,
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &[usize],
) -> CycleData {
    let g = order_graph(bir, deps, busy, order);
    let hi = smallest_ii(&g);
    if hi == 0 {
        return CycleData::default();
    }
    critical_cycle(func, bir, &g, hi).0
}

/// `deps` with each in-order engine's sequence in `order` as [`DepKind::Order`] edges: each
/// instruction to its engine's next one, after its busy time, and its engine's last to its
/// first of the next iteration (`d = 1`).
fn order_graph(bir: &Bir, deps: &LoopDeps, busy: &[u64], order: &[usize]) -> LoopDeps {
    let mut g = deps.clone();
    for e in Engine::ALL {
        let seq: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&k| bir.insts[deps.insts[k]].engine == e)
            .collect();
        for (a, b) in seq.iter().zip(seq.iter().skip(1).chain(seq.first())) {
            let wrap = seq.last() == Some(a);
            g.graph.add_edge(
                deps.node(*a),
                deps.node(*b),
                DepData {
                    kind: DepKind::Order,
                    distance: u32::from(wrap),
                    latency: busy[*a],
                    tensor: bir.insts[deps.insts[*a]].dst.tensor,
                },
            );
        }
    }
    g
}

/// The most instructions of a body whose offset order [`improve_order`] searches around.
pub const MAX_IMPROVE: usize = 16;

/// Local search on a body order (positions in program order), by the in-order engines' predicted
/// period ([`compute_order_period`]): moving one instruction to another place, as long as every
/// same-iteration edge still goes forward, is kept when it shortens the period; repeated until no
/// move does (a few passes). The offsets of a modulo schedule come from a greedy placement that
/// can leave an engine idle while it waits for another (softmax: `dve` idles during `act`'s
/// `exp` when the independent work of a later stage was placed first), which a move repairs.
/// Bodies of more than [`MAX_IMPROVE`] instructions keep their offset order. Returns the period.
pub(super) fn improve_order(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &mut Vec<usize>,
) -> u64 {
    let mut best = compute_order_period(bir, deps, busy, order);
    let n = order.len();
    if n > MAX_IMPROVE {
        return best;
    }
    let forward = |o: &[usize]| {
        let mut pos = vec![0; n];
        for (i, &k) in o.iter().enumerate() {
            pos[k] = i;
        }
        deps.graph
            .edge_references()
            .all(|e| e.weight().distance > 0 || pos[e.source().index()] < pos[e.target().index()])
    };
    for _ in 0..4 {
        let mut improved = false;
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let mut cand = order.clone();
                let x = cand.remove(a);
                cand.insert(b, x);
                if !forward(&cand) {
                    continue;
                }
                if let Some(p) = order_period_below(bir, deps, busy, &cand, best) {
                    best = p;
                    *order = cand;
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
    best
}

/// The most combinations of per-engine sequences [`exhaust_engine_orders`] tries.
pub const MAX_ENGINE_ORDERS: u64 = 2_000;

/// Every combination of the engines' sequences of the body (each engine's instructions in every
/// order), merged into one body order that keeps every same-iteration edge forward, when there
/// are at most [`MAX_ENGINE_ORDERS`] of them: the one with the shortest predicted period
/// ([`compute_order_period`]; the first found among equals, the engines' sequences in `order`
/// first), that period, and how many combinations merge; `None` when there are too many. The
/// period of an order depends only on each engine's sequence (the same-iteration edges hold in
/// any merge), so this is the best period of any order of the body: exact where the single moves
/// of [`improve_order`] could stop at a local optimum, and the proof, when the emitted order
/// reaches it, that the user's stages and buffers, not the order, hold the loop above its MII.
pub(super) fn exhaust_engine_orders(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    order: &[usize],
) -> Option<(Vec<usize>, u64, usize)> {
    let seqs: Vec<Vec<usize>> = Engine::ALL
        .iter()
        .map(|&e| {
            (order.iter().copied())
                .filter(|&k| bir.insts[deps.insts[k]].engine == e)
                .collect()
        })
        .filter(|s: &Vec<usize>| !s.is_empty())
        .collect();
    let mut count = 1u64;
    for s in &seqs {
        for f in 2..=s.len() as u64 {
            count = count.saturating_mul(f);
        }
    }
    if count > MAX_ENGINE_ORDERS {
        return None;
    }
    let perms: Vec<Vec<Vec<usize>>> = seqs.iter().map(|s| permutations(s)).collect();
    let mut pick = vec![0usize; perms.len()];
    let mut best: Option<(Vec<usize>, u64, usize)> = None;
    let mut merged = 0;
    loop {
        let chosen: Vec<&Vec<usize>> = pick.iter().zip(&perms).map(|(&i, p)| &p[i]).collect();
        if let Some(o) = merge_sequences(deps, order, &chosen) {
            merged += 1;
            let p = match &best {
                None => Some(compute_order_period(bir, deps, busy, &o)),
                Some(b) => order_period_below(bir, deps, busy, &o, b.1),
            };
            if let Some(p) = p {
                best = Some((o, p, 0));
            }
        }
        // The next combination, the last engine's sequence fastest.
        let mut e = pick.len();
        loop {
            if e == 0 {
                return best.map(|(o, p, _)| (o, p, merged));
            }
            e -= 1;
            pick[e] += 1;
            if pick[e] < perms[e].len() {
                break;
            }
            pick[e] = 0;
        }
    }
}

/// Every order of `items`, `items` itself first.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// One body order in which each engine runs its sequence of `seqs` and every same-iteration edge
/// goes forward (at each step, of the engines' next instructions whose same-iteration
/// predecessors are all placed, the one earliest in `order`), or `None` when there is none.
fn merge_sequences(deps: &LoopDeps, order: &[usize], seqs: &[&Vec<usize>]) -> Option<Vec<usize>> {
    let n = deps.insts.len();
    let mut rank = vec![0usize; n];
    for (i, &k) in order.iter().enumerate() {
        rank[k] = i;
    }
    let mut pending = vec![0usize; n];
    for e in deps.graph.edge_references() {
        if e.weight().distance == 0 {
            pending[e.target().index()] += 1;
        }
    }
    let mut next = vec![0usize; seqs.len()];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let (s, k) = (0..seqs.len())
            .filter_map(|s| seqs[s].get(next[s]).map(|&k| (s, k)))
            .filter(|&(_, k)| pending[k] == 0)
            .min_by_key(|&(_, k)| rank[k])?;
        next[s] += 1;
        out.push(k);
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Outgoing)
        {
            if e.weight().distance == 0 {
                pending[e.target().index()] -= 1;
            }
        }
    }
    Some(out)
}

/// The start offsets of a body run in `order`: each instruction after the one before it on its
/// engine, and after every dependence on an instruction placed before it (at `ii` cycles per
/// iteration of distance).
pub(super) fn order_offsets(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    ii: u64,
    order: &[usize],
) -> Vec<i64> {
    let mut sigma: Vec<Option<i64>> = vec![None; deps.insts.len()];
    let mut free = [0i64; 5];
    for &k in order {
        let r = bir.insts[deps.insts[k]].engine.index();
        let mut t = free[r];
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Incoming)
        {
            if let Some(sp) = sigma[e.source().index()] {
                let w = e.weight().latency as i64 - i64::from(e.weight().distance) * ii as i64;
                t = t.max(sp + w);
            }
        }
        sigma[k] = Some(t);
        free[r] = t + busy[k] as i64;
    }
    sigma.into_iter().map(|s| s.unwrap_or(0)).collect()
}
