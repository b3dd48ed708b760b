//! The list scheduler: the order of every loop body, by critical path.
//!
//! [`schedule_bodies`] builds, for the body of every loop (and the kernel's top level), a
//! dependence DAG (petgraph) over its statements, a nested loop counting as one node: an edge
//! `a → b` for every pair, `a` before `b` in program order, that touch a common buffer with at
//! least one write (read after write, write after read, write after write within one iteration;
//! a conservative test, by logical buffer). Each node's latency comes from the shared machine
//! description: a compute instruction its engine's cost, a DMA its latency plus queue time, a
//! loop the sum of its body times its trip count. The list scheduler then repeatedly emits the
//! ready node with the longest latency-weighted path to the end of the body (the critical path),
//! ties in program order. Any topological order of the DAG is the same sequential program within
//! an iteration, and iterations stay in order, so dependences carried across iterations are kept
//! too; the synchronisation analysis then runs on the new order.
//!
//! The engine streams stay in-order: the schedule decides the order each engine sees.

use crate::bir::{estimate, BNode, Bir};
use penguin::ir::Op;
use penguin::Tensor;
use petgraph::graph::{DiGraph, NodeIndex};
use runtime_sim::isa::Engine;
use runtime_sim::machine;
use std::collections::BTreeSet;

/// Reorders every body of `bir`; returns how many bodies changed order.
pub fn schedule_bodies(bir: &mut Bir) -> usize {
    let mut changed = 0;
    for l in bir.loops.keys() {
        let body = bir.loops[l].body.clone();
        let new = schedule(bir, &body);
        if new != body {
            changed += 1;
        }
        bir.loops[l].body = new;
    }
    let body = bir.body.clone();
    let new = schedule(bir, &body);
    if new != body {
        changed += 1;
    }
    bir.body = new;
    changed
}

/// The buffers a node reads and writes.
fn accesses(bir: &Bir, n: BNode, reads: &mut BTreeSet<Tensor>, writes: &mut BTreeSet<Tensor>) {
    match n {
        BNode::Inst(i) => {
            let bi = &bir.insts[i];
            writes.insert(bi.dst.tensor);
            if matches!(bi.op, Op::Matmul { accumulate: true }) {
                reads.insert(bi.dst.tensor);
            }
            for s in &bi.srcs {
                reads.insert(s.tensor);
            }
        }
        BNode::Loop(l) => {
            for &c in &bir.loops[l].body {
                accesses(bir, c, reads, writes);
            }
        }
    }
}

/// The cycles a node keeps its engine (or queue) busy, from the machine description.
fn latency(bir: &Bir, n: BNode) -> u64 {
    match n {
        BNode::Inst(i) => {
            let bi = &bir.insts[i];
            if bi.engine == Engine::Sp {
                let elems: u64 = bi.dst.access.size.iter().product();
                machine::dma_transfer(elems * 4 / 16) + machine::dma_issue_cycles()
            } else {
                estimate(bi.engine, &bi.op, &bi.dst, &bi.srcs)
            }
        }
        BNode::Loop(l) => {
            let lp = &bir.loops[l];
            lp.trip * lp.body.iter().map(|&c| latency(bir, c)).sum::<u64>()
        }
    }
}

fn schedule(bir: &Bir, body: &[BNode]) -> Vec<BNode> {
    let n = body.len();
    if n < 2 {
        return body.to_vec();
    }
    let mut g: DiGraph<usize, ()> = DiGraph::new();
    let idx: Vec<NodeIndex> = (0..n).map(|i| g.add_node(i)).collect();
    let acc: Vec<(BTreeSet<Tensor>, BTreeSet<Tensor>)> = body
        .iter()
        .map(|&b| {
            let (mut r, mut w) = (BTreeSet::new(), BTreeSet::new());
            accesses(bir, b, &mut r, &mut w);
            (r, w)
        })
        .collect();
    for j in 0..n {
        for i in 0..j {
            let (ri, wi) = &acc[i];
            let (rj, wj) = &acc[j];
            if wi.intersection(rj).next().is_some()
                || ri.intersection(wj).next().is_some()
                || wi.intersection(wj).next().is_some()
            {
                g.add_edge(idx[i], idx[j], ());
            }
        }
    }
    // Critical path: the longest latency-weighted path from a node to the end of the body.
    let lat: Vec<u64> = body.iter().map(|&b| latency(bir, b)).collect();
    let mut prio = vec![0u64; n];
    for i in (0..n).rev() {
        let tail = g.neighbors(idx[i]).map(|s| prio[g[s]]).max().unwrap_or(0);
        prio[i] = lat[i] + tail;
    }
    let mut preds: Vec<usize> = (0..n)
        .map(|i| {
            g.neighbors_directed(idx[i], petgraph::Direction::Incoming)
                .count()
        })
        .collect();
    let mut done = vec![false; n];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        // The ready node with the longest critical path, ties in program order. Some node is
        // always ready: the graph's edges go forward in program order, so it has no cycle.
        let Some(pick) = (0..n)
            .filter(|&i| !done[i] && preds[i] == 0)
            .max_by_key(|&i| (prio[i], std::cmp::Reverse(i)))
        else {
            return body.to_vec();
        };
        done[pick] = true;
        out.push(body[pick]);
        for s in g.neighbors(idx[pick]) {
            preds[g[s]] -= 1;
        }
    }
    out
}
