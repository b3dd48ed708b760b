//! Which producers each consumer pairs with ([`crate::codegen::sync`]): the producers are
//! searched thread by thread from the latest in program order back, each producer paired moving
//! the thread's [`Frontier`], and producers the frontier already orders are skipped (before the
//! consumer's loop the search stops), so a kernel of `n` sequential loops has `O(n)` pairs.
//!
//! Invariant: every pair of nodes on different threads (that needs a semaphore) with a
//! conflicting pair of running instances is either paired or ordered through a paired producer
//! of its thread: the waits of the pairs, or whatever the pruning keeps in their place, order
//! every conflict.

use super::need::{need, Need, Search};
use super::order::Order;
use super::summary::{meet, merge, summarise, Summary, CHUNK};
use super::{common_depth, instances, may_conflict, needs_semaphore, thread, THREADS};
use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{Emitted, Node};
use crate::codegen::footprints::Instances;
use cranelift_entity::SecondaryMap;

/// The pairs [`compute_pairs`] finds, in the order found.
pub(super) struct PairsData {
    /// `(producer, consumer, what the consumer needs)`.
    pub(super) deps: Vec<(Node, Node, Need)>,
    /// Per pair, its conflicting instances ([`Sync::conflicts`](super::Sync::conflicts)).
    pub(super) conflicts: Vec<Option<Vec<(i64, i64)>>>,
    /// Producers not searched because the frontier orders them
    /// ([`Sync::dominated_pairs`](super::Sync::dominated_pairs)).
    pub(super) dominated: usize,
}

/// What the search of a consumer's producers reads: the kernel, its instances and their program
/// order, the peeled loops, and per thread its nodes in program order with a summary of each run
/// of [`CHUNK`] of them (and of every node up to its end).
struct Producers<'a> {
    em: &'a Emitted,
    inst: &'a Instances,
    order: &'a Order,
    peeled: &'a SecondaryMap<BirLoop, bool>,
    on_thread: Vec<Vec<Node>>,
    chunks: Vec<Vec<(Vec<Summary>, Vec<Summary>)>>,
    /// Per thread, per level `l`, the summary of each aligned run of `CHUNK << l` of its nodes
    /// ([`back_meeting`]).
    blocks: Vec<Vec<Vec<Vec<Summary>>>>,
}

/// Pairs every consumer of `em` with the producers it must wait for (see the module doc), with
/// what it needs from each. A loop of `peeled` keeps one distance per wait.
pub(super) fn compute_pairs(
    em: &Emitted,
    inst: &Instances,
    order: &Order,
    peeled: &SecondaryMap<BirLoop, bool>,
) -> PairsData {
    // Per thread, its nodes in program order, and a summary of each run of [`CHUNK`] of them.
    let mut on_thread: Vec<Vec<Node>> = vec![Vec::new(); THREADS];
    for (i, node) in em.nodes.iter() {
        on_thread[thread(node)].push(i);
    }
    // (Each with the summary of every node up to its end.)
    let chunks: Vec<Vec<(Vec<Summary>, Vec<Summary>)>> = (on_thread.iter())
        .map(|nodes| {
            let mut upto: Vec<Summary> = Vec::new();
            (nodes.chunks(CHUNK))
                .map(|c| {
                    let sum = summarise(c.iter().flat_map(|&i| &em.nodes[i].foot));
                    upto = merge(&upto, &sum);
                    (sum, upto.clone())
                })
                .collect()
        })
        .collect();
    let blocks = chunks
        .iter()
        .map(|c| {
            let mut levels = vec![c.iter().map(|(sum, _)| sum.clone()).collect::<Vec<_>>()];
            while let Some(last) = levels.last().filter(|l| l.len() > 1) {
                let up = (last.chunks_exact(2))
                    .map(|pair| merge(&pair[0], &pair[1]))
                    .collect();
                levels.push(up);
            }
            levels
        })
        .collect();
    let producers = Producers {
        em,
        inst,
        order,
        peeled,
        on_thread,
        chunks,
        blocks,
    };
    let mut out = PairsData {
        deps: Vec::new(),
        conflicts: Vec::new(),
        dominated: 0,
    };
    for yi in em.nodes.keys() {
        producers.pair_consumer(yi, &mut out);
    }
    out
}

impl Producers<'_> {
    /// Pairs consumer `yi` with its producers of every thread.
    fn pair_consumer(&self, yi: Node, out: &mut PairsData) {
        let y = &self.em.nodes[yi];
        if self.inst.running[yi].is_empty() {
            return;
        }
        // The nodes of the consumer's outermost loop share a loop with it; those before it
        // share none, and those after it none and never precede it.
        let span = match y.loops.first() {
            None => (yi, yi),
            Some(&l) => self.order.span[l].expect("the loops of a node that runs run"),
        };
        let mine = summarise(y.foot.iter());
        for t in 0..self.on_thread.len() {
            self.pair_thread(yi, span, &mine, t, out);
        }
    }

    /// Pairs consumer `yi` (its outermost loop's first and last node `lo` and `last`, its
    /// footprints summed up in `mine`) with its producers on thread `t`.
    fn pair_thread(
        &self,
        yi: Node,
        (lo, last): (Node, Node),
        mine: &[Summary],
        t: usize,
        out: &mut PairsData,
    ) {
        let (em, inst, order) = (self.em, self.inst, self.order);
        let (nodes, chunks, blocks) = (&self.on_thread[t], &self.chunks[t], &self.blocks[t]);
        let y = &em.nodes[yi];
        let running_y = &inst.running[yi];
        let Some(&first) = nodes.first() else {
            return;
        };
        // (A thread's order needs no semaphore with the consumer's; a thread none of whose
        // nodes may meet the consumer has no pair: the pieces of a split transfer on the other
        // queues.)
        if !needs_semaphore(&em.nodes[first], y) || chunks.last().is_some_and(|c| !meet(&c.1, mine))
        {
            return;
        }
        // Per running instance of the consumer, the latest position in program order of a
        // conflicting instance of a producer of this thread already paired with it (-1:
        // none yet): every instance of the thread before it is ordered before the
        // consumer's ([`Frontier`]).
        let mut frontier = Frontier {
            at: vec![None; running_y.len()],
            least: None,
        };
        // Where the nodes from `k` on, and those after `k`, start.
        let at = |k: Node| nodes.partition_point(|&x| x < k);
        let past = |k: Node| nodes.partition_point(|&x| x <= k);
        // After the consumer in its loop (earlier iterations), then the latest first before
        // it in its loop and before the loop, where the search stops at the first producer
        // whose latest instance before each of the consumer's precedes the frontier: an
        // instance of an earlier node before the consumer's precedes that one too (the
        // producer lies between them in the loop tree, so it runs between them).
        // (In the loop, runs of nodes none of which may meet the consumer are skipped.)
        let inside = back_meeting(nodes, blocks, at(lo)..at(yi), mine);
        let after = back_meeting(nodes, blocks, past(yi)..past(last), mine);
        // (Before the loop, runs of nodes none of which may meet the consumer are skipped.)
        let (mut k, mut checked) = (at(lo), None);
        let outside = std::iter::from_fn(|| loop {
            let c = k.checked_sub(1)? / CHUNK;
            if checked != Some(c) {
                checked = Some(c);
                if !meet(&chunks[c].1, mine) {
                    // Nothing before meets the consumer either.
                    return None;
                }
                if !meet(&chunks[c].0, mine) {
                    k = c * CHUNK;
                    continue;
                }
            }
            k -= 1;
            return Some(&nodes[k]);
        });
        let mut found = Vec::new();
        for (k, &xi) in (after.map(|x| (2, x)))
            .chain(inside.map(|x| (0, x)))
            .chain(outside.map(|x| (1, x)))
        {
            let x = &em.nodes[xi];
            if k == 1 && order.last[xi] < frontier.least {
                out.dominated += 1;
                break;
            }
            if !may_conflict(x, y) {
                continue;
            }
            if frontier.covers(em, order, inst, xi, yi) {
                out.dominated += 1;
                if k == 0 && frontier.precedes(em, order, inst, xi, yi) {
                    break;
                }
                continue;
            }
            found.clear();
            let (need, search) = need(em, inst, self.peeled, xi, yi, &mut found);
            let Some(d) = need else {
                continue;
            };
            out.deps.push((xi, yi, d));
            if search == Search::Incomplete {
                out.conflicts.push(None);
                continue;
            }
            for &(v, u) in &found {
                let j = running_y.partition_point(|&w| w < v);
                let p = order.pos(xi, u);
                frontier.at[j] = frontier.at[j].max(Some(p));
            }
            frontier.least = frontier.at.iter().copied().min().flatten();
            out.conflicts.push(Some(found.clone()));
        }
    }
}

/// The nodes `nodes[range]`, latest first, but for aligned runs of them whose summary in
/// `blocks` (level `l`: each run of `CHUNK << l` nodes) cannot meet `mine`, skipped whole:
/// [`may_conflict`] is false for each of their nodes (a summary covers its footprints), so the
/// search sees the same producers, and a run of `n` nodes none of which meets the consumer
/// costs `O(log n)` tests.
fn back_meeting<'a>(
    nodes: &'a [Node],
    blocks: &'a [Vec<Vec<Summary>>],
    range: std::ops::Range<usize>,
    mine: &'a [Summary],
) -> impl Iterator<Item = &'a Node> + 'a {
    let a = range.start;
    // The next node is `nodes[k - 1]`; down to `floor`, nodes are given one by one.
    let (mut k, mut floor) = (range.end, range.end);
    std::iter::from_fn(move || loop {
        if k <= a {
            return None;
        }
        if k > floor {
            k -= 1;
            return Some(&nodes[k]);
        }
        if k % CHUNK != 0 || k < a + CHUNK {
            // Up to the start of the run `k - 1` is in (not before `a`).
            floor = a.max(k - 1 - (k - 1) % CHUNK);
            continue;
        }
        // The largest aligned run ending at `k` within the range, then smaller ones.
        let mut l = 0;
        while l + 1 < blocks.len() && k % (CHUNK << (l + 1)) == 0 && k >= a + (CHUNK << (l + 1)) {
            l += 1;
        }
        let skip = (0..=l)
            .rev()
            .map(|l| (l, CHUNK << l))
            .find(|&(l, n)| !meet(&blocks[l][k / n - 1], mine));
        match skip {
            Some((_, n)) => k -= n,
            None => floor = k - CHUNK,
        }
    })
}

/// Per running instance of a consumer, the latest position of a conflicting instance of a
/// producer on one thread paired with it; `least`, the smallest of them.
pub(super) struct Frontier {
    at: Vec<Option<i64>>,
    least: Option<i64>,
}

impl Frontier {
    /// Whether every running instance of `xi` before each running instance of `yi` precedes
    /// the frontier: the consumer is ordered after the frontier's instance (by its wait, or by
    /// what the pruning keeps in its place: it is one of [`Sync::pairs`](super::Sync::pairs)' conflicts), and that
    /// instance after `xi`'s by their thread's order (an engine completes in order; a queue's
    /// transfers that run complete first in, first out). So `xi` needs no pair.
    pub(super) fn covers(
        &self,
        em: &Emitted,
        o: &Order,
        inst: &Instances,
        xi: Node,
        yi: Node,
    ) -> bool {
        let running = &inst.running[xi];
        let Some(&last) = running.last() else {
            return true;
        };
        if self.least.is_some_and(|least| o.pos(xi, last) < least) {
            return true;
        }
        let (tx, ty) = (&inst.trips[xi], &inst.trips[yi]);
        let c = common_depth(&em.nodes[xi], &em.nodes[yi]);
        let px = instances(&tx[c..]);
        let py = instances(&ty[c..]).max(1);
        let xb = i64::from(xi < yi);
        inst.running[yi].iter().zip(&self.at).all(|(&v, &f)| {
            // The latest running instance of `x` before `v`.
            let before = (v / py + xb) * px - 1;
            let k = running.partition_point(|&u| u <= before);
            k == 0 || Some(o.pos(xi, running[k - 1])) < f
        })
    }

    /// Whether, for `xi` before `yi` in program order, the latest instance of `xi` (running or
    /// not) before each running instance of `yi` precedes the frontier (or there is none).
    fn precedes(&self, em: &Emitted, o: &Order, inst: &Instances, xi: Node, yi: Node) -> bool {
        let c = common_depth(&em.nodes[xi], &em.nodes[yi]);
        let (tx, ty) = (&inst.trips[xi], &inst.trips[yi]);
        let px = instances(&tx[c..]);
        let py = instances(&ty[c..]).max(1);
        // (A producer with no instance in some shared iteration proves nothing.)
        px > 0
            && inst.running[yi].iter().zip(&self.at).all(|(&v, &f)| {
                let before = (v / py + 1) * px - 1;
                before < 0 || Some(o.pos(xi, before)) < f
            })
    }
}
