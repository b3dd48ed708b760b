//! The queue plan of a body that runs once (the kernel's top level), split for latency.
//!
//! A loop body is planned for its steady state: one iteration's transfers must fit in one
//! iteration's time on the busiest queue and on `sp`, and the fewest pieces that fit keep `sp`
//! free. A body that runs once has no steady state: it takes the time of its longest chain of
//! dependences, and every transfer on that chain waits for its whole latency, the fixed part
//! plus its longest piece's bytes. A chain of transfers through HBM (a store, then the reload of
//! what it stored) with few pieces each takes several times its bound (issue 32: a scratch
//! tensor stored in two 64-partition pieces and reloaded in two more).
//!
//! [`compute_latency_pieces`] estimates the body's chain (the list scheduler's dependence DAG,
//! [`crate::codegen::schedule::compute_body_edges`], each transfer at its best lone split, each
//! other node at its engine's cycles, a nested loop at its serial time) and, for each transfer,
//! the split that ends soonest among the transfers that may start with it: the transfers of one
//! earliest start share `sp`, so `k` of them split `p` ways each take `k · p` issue slots before
//! the last piece starts, and a transfer of `Q` queue cycles picks the power of two `p` (dividing
//! its partitions, at most the queues) that minimises `k · p · issue + Q / p`. The plan is used
//! when the chain is longer than the packing's per-iteration time: the body is bound by its
//! latency, not by its queues. [`place_pieces`] then puts each transfer's pieces, largest
//! transfer first, on the queues least loaded so far (a loop whose iterations chain through
//! their transfers); in a body that runs once, [`place_pieces_by_time`] puts them, by their
//! estimated start, on the queues that finish moving their bytes soonest, a chain's followers on
//! their leader's queues and counted there.
//!
//! Invariant of the result: one split per transfer, a power of two dividing its partitions, at
//! most [`DMA_QUEUES`]; the placed queues are distinct per transfer.

use crate::codegen::bir::{BNode, Bir};
use crate::codegen::schedule::{compute_body_edges, latency};
use crate::cost::queue_pack::{
    largest_split, soonest_split, Queues, SplitData, Together, Transfer,
};
use petgraph::unionfind::UnionFind;
use runtime_sim::machine::{self, DMA_QUEUES};
use std::collections::HashMap;

/// A once-run body's chain and the split of each of its transfers for latency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LatencyPiecesData {
    /// The longest chain of the body's dependences, in cycles.
    pub(crate) chain: u64,
    /// Per transfer (in the order given), its pieces.
    pub(crate) pieces: Vec<u64>,
    /// Per transfer (in the order given), its earliest start on the chain's estimate.
    pub(crate) starts: Vec<u64>,
}

/// The chain of `body` and the latency split of each of `transfers` (the body's loads and
/// stores; module doc). `None` when a transfer is not an instruction of `body`.
pub(crate) fn compute_latency_pieces(
    bir: &Bir,
    body: &[BNode],
    transfers: &[Transfer],
    pairs: &[(usize, usize)],
) -> Option<LatencyPiecesData> {
    let position: HashMap<usize, usize> = (body.iter().enumerate())
        .filter_map(|(k, n)| match *n {
            BNode::Inst(i) => Some((cranelift_entity::EntityRef::index(i), k)),
            BNode::Loop(_) => None,
        })
        .collect();
    let at: Vec<usize> = (transfers.iter())
        .map(|t| position.get(&t.inst).copied())
        .collect::<Option<_>>()?;
    let mut lat: Vec<u64> = body.iter().map(|&n| latency(bir, n)).collect();
    for (t, &k) in transfers.iter().zip(&at) {
        let queue = machine::dma_queue_cycles(t.bytes);
        let p = soonest_split(largest_split(t.partitions), queue, 1);
        lat[k] = p * machine::dma_issue_cycles() + machine::dma_transfer(t.bytes.div_ceil(p));
    }
    let mut edges = compute_body_edges(bir, body);
    edges.sort_unstable_by_key(|&(i, j)| (j, i));
    let mut start = vec![0u64; body.len()];
    for (i, j) in edges {
        // Forward edges, by increasing target: `start[i]` is final.
        start[j] = start[j].max(start[i] + lat[i]);
    }
    let chain = (start.iter().zip(&lat))
        .map(|(s, l)| s + l)
        .max()
        .unwrap_or(0);
    // Chains of transfers (each reading what the one before wrote) take one split, so that
    // each link queues behind the one before ([`super::chain`]).
    let mut group = UnionFind::new(transfers.len());
    for &(w, r) in pairs {
        group.union(w, r);
    }
    let roots: Vec<usize> = (0..transfers.len()).map(|k| group.find_mut(k)).collect();
    // Per chain: its earliest start, its transfers, its queue cycles, its least largest split.
    let mut chains: HashMap<usize, (u64, u64, u64, u64)> = HashMap::new();
    for (k, t) in transfers.iter().enumerate() {
        let e = chains
            .entry(roots[k])
            .or_insert((u64::MAX, 0, 0, DMA_QUEUES as u64));
        e.0 = e.0.min(start[at[k]]);
        e.1 += 1;
        e.2 += machine::dma_queue_cycles(t.bytes);
        e.3 = e.3.min(largest_split(t.partitions));
    }
    let mut sharing: HashMap<u64, u64> = HashMap::new();
    for c in chains.values() {
        *sharing.entry(c.0).or_default() += c.1;
    }
    let pieces = (0..transfers.len())
        .map(|k| {
            let (first, _, queue, most) = chains[&roots[k]];
            soonest_split(most, queue, sharing[&first])
        })
        .collect();
    let starts = at.iter().map(|&k| start[k]).collect();
    Some(LatencyPiecesData {
        chain,
        pieces,
        starts,
    })
}

/// Places `transfers` (largest first), transfer `k` in `pieces[k]` pieces, each on the queues
/// least loaded so far (ties to the lowest index after `rotation`). A transfer chained by
/// `pairs` to one placed before it, with as many pieces, takes that one's queues: the chain's
/// followers queue behind their leaders anyway ([`super::chain::align_chained_queues`]), so
/// its pieces load those queues, and two chains of the body that could run side by side are
/// spread over different queues instead of lining up behind one another's leaders. (A loop
/// body's steady state is balanced by these loads; a body that runs once passes no pairs.)
pub(crate) fn place_pieces(
    transfers: &[Transfer],
    pieces: &[u64],
    rotation: usize,
    pairs: &[(usize, usize)],
) -> Vec<SplitData> {
    let together = Together::Always;
    let mut load = Queues::new(transfers, &together);
    let mut group = UnionFind::new(transfers.len());
    for &(w, r) in pairs {
        group.union(w, r);
    }
    // Per chain, the queues of its first placed transfer.
    let mut placed: HashMap<usize, Vec<usize>> = HashMap::new();
    (transfers.iter().zip(pieces).enumerate())
        .map(|(k, (t, &p))| {
            let p = p.clamp(1, DMA_QUEUES as u64);
            let piece = machine::dma_queue_cycles(t.bytes / p);
            let root = group.find_mut(k);
            let queues = match placed.get(&root) {
                Some(qs) if qs.len() as u64 == p => qs.clone(),
                _ => load.least_loaded(k, p as usize, rotation),
            };
            placed.entry(root).or_insert_with(|| queues.clone());
            for &q in &queues {
                load.pieces[q].push((k, piece));
            }
            SplitData {
                queues: queues.into_iter().map(|q| q as u8).collect(),
            }
        })
        .collect()
}

/// Places the transfers of a body that runs once by time ([`LatencyPiecesData`]): each
/// transfer, by its estimated start (`starts[k]`, then largest first), on the `pieces[k]`
/// queues whose bytes it would finish moving soonest, a queue moving a piece's bytes once the
/// piece's issue and fixed latency have passed and the pieces before it on the queue have moved
/// theirs (ties: the queues least loaded, then the lowest index after `rotation`). A transfer
/// chained by `pairs` to one placed before it, with as many pieces, takes that one's queues
/// ([`super::chain::align_chained_queues`] queues it behind its leader), and its pieces count
/// on them after the leader's. So the queues of a chain's leader count its followers' bytes too,
/// and the next transfer that starts with the leader takes other queues (`dma_hbm_copy`: with
/// every follower placed on its own queues and then moved behind its leader, half the queues
/// carried two transfers and the rest none); a transfer that starts once a chain is done may
/// take its queues (`once_round_trip`'s two last stores, after the chain through `s`).
pub(crate) fn place_pieces_by_time(
    transfers: &[Transfer],
    pieces: &[u64],
    starts: &[u64],
    rotation: usize,
    pairs: &[(usize, usize)],
) -> Vec<SplitData> {
    let mut group = UnionFind::new(transfers.len());
    for &(w, r) in pairs {
        group.union(w, r);
    }
    let mut order: Vec<usize> = (0..transfers.len()).collect();
    order.sort_by_key(|&k| (starts[k], std::cmp::Reverse(transfers[k].bytes), k));
    let mut free = [0u64; DMA_QUEUES];
    let mut load = [0u64; DMA_QUEUES];
    let mut placed: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut out: Vec<Option<SplitData>> = vec![None; transfers.len()];
    for k in order {
        let t = &transfers[k];
        let p = pieces[k].clamp(1, DMA_QUEUES as u64);
        let piece = machine::dma_queue_cycles(t.bytes / p);
        let moves = starts[k] + machine::dma_issue_cycles() + machine::DMA_LATENCY;
        let root = group.find_mut(k);
        let queues = match placed.get(&root) {
            Some(qs) if qs.len() as u64 == p => qs.clone(),
            _ => {
                let mut by: Vec<usize> = (0..DMA_QUEUES)
                    .map(|j| (j + rotation) % DMA_QUEUES)
                    .collect();
                by.sort_by_key(|&q| (free[q].max(moves), load[q]));
                let mut chosen: Vec<usize> = by.into_iter().take(p as usize).collect();
                chosen.sort_by_key(|&q| (q + DMA_QUEUES - rotation) % DMA_QUEUES);
                chosen
            }
        };
        placed.entry(root).or_insert_with(|| queues.clone());
        for &q in &queues {
            free[q] = free[q].max(moves) + piece;
            load[q] += piece;
        }
        out[k] = Some(SplitData {
            queues: queues.into_iter().map(|q| q as u8).collect(),
        });
    }
    out.into_iter()
        .map(|s| s.expect("every transfer is placed once"))
        .collect()
}
