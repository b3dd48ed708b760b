//! The list scheduler: the order of every loop body, by critical path.
//!
//! [`schedule_bodies`] builds, for the body of every loop (and the kernel's top level), a
//! dependence DAG (petgraph) over its statements, a nested loop counting as one node: an edge
//! `a → b` for every pair, `a` before `b` in program order, that touch a common buffer with at
//! least one write (read after write, write after read, write after write within one iteration;
//! a conservative test, by logical buffer, except that two instructions whose accesses of it
//! are rectangles provably disjoint within an iteration do not conflict: a load of a tensor's
//! rows is not held behind a store of other rows, issue 32). The edges are built in time linear
//! in the body's accesses ([`compute_edges`]: per buffer, the accesses that no later write
//! stands for), as a relation whose transitive closure is that all-pairs one, for a body of any
//! size: the size of a body never changes which orders it may take. Each node's latency comes
//! from the shared machine description: a compute instruction its engine's cost, a DMA its
//! latency plus queue time, a loop the sum of its body times its trip count. The list scheduler then repeatedly emits the
//! ready node with the longest latency-weighted path to the end of the body (the critical path),
//! ties in program order. Any topological order of the DAG is the same sequential program within
//! an iteration, and iterations stay in order, so dependences carried across iterations are kept
//! too; the synchronisation analysis then runs on the new order.
//!
//! The body of a pipelined loop that holds a nested loop (which the modulo scheduler does not
//! reorder), annotated or staged by emergent pipelining, is a **staged** body: one body runs
//! stage `s` of iteration `k − s` for every `s`, so work of later stages finds its inputs ready
//! while stage 0 waits for this iteration's loads. When some node of such a body waits (through
//! the body's edges) for one of its own loads, the ready nodes go by class, then critical path:
//! the nodes holding a load first (a nested loop that also stores after the other ones: `sp`
//! would hold a load behind it until the inner loop's last store has its data; and a node that
//! one of them waits for with it), then the work whose inputs come from earlier bodies, then the
//! work that waits, then the stores (which wait for this body's compute, and would hold `sp`'s
//! next loads behind them). Measured (`--pipeline emergent`, cycles): `tests/good`'s
//! nest_staged_holder 54,621 → 46,917 (the next row block's load no longer waits behind the
//! inner loop's stores); sp_shared_nest's sp_two_levels 32,184 → 33,208 and sp_three_levels
//! 22,088 → 22,674 (a bias load read only by the inner loop's stores goes before the inner
//! loop's first loads). Its
//! conflict test also tells ring slots apart: two accesses of one ring whose slot selectors
//! differ by a constant that the ring's depth does not divide touch different slots in every
//! iteration. Otherwise the body keeps the critical-path order on the edges by buffer.
//!
//! The engine streams stay in-order: the schedule decides the order each engine sees. `sp`'s
//! too: a transfer waits for its operands, so a store placed before a load holds that load until
//! the store's data is computed (issue 32, item 1). [`list_order`] therefore lets a ready load go
//! before a chosen store whose data (by each node's estimated start, the latest finish of its
//! predecessors) is ready later than the load could start.
//! A nested loop that stores holds `sp` until its last store has its data, so a ready load (or a
//! nested loop that loads and does not store) goes before it as well, when it could start no
//! later than the loop.
//!
//! **Backing off to a plan that fits PSUM** ([`schedule_bodies_fitting`]): the critical path may
//! start many Tensor-engine results before copying any of them out (sixteen transposes, then
//! sixteen copies), more PSUM banks at once than the machine has. When the allocator finds
//! that, the backend schedules again with a PSUM budget per body: a PSUM buffer *local* to a
//! body (the innermost body whose nodes hold every access of it: its instructions, or nested
//! loops that hold them, as a PSUM tile accumulated by a loop of matmuls) holds its banks from
//! the first to the last node that touches it there; the budget is the PSUM's banks less every other PSUM buffer's. The
//! ready node that would open a local buffer past the budget waits while another ready node
//! fits (a copy that frees a bank goes first); when none fits, the best goes anyway. Kernels
//! that fit are never rescheduled, so their code does not change.

use crate::codegen::bir::{estimate, BNode, Bir, BirLoop};
use penguin::affine::AffineExpr;
use penguin::ir::{Access, Op};
use penguin::{Function, Tensor};
use petgraph::graph::{DiGraph, NodeIndex};
use runtime_sim::isa::Engine;
use runtime_sim::machine;
use runtime_sim::machine::{PSUM_BANKS, PSUM_BANK_BYTES};
use std::collections::{BTreeMap, BTreeSet};

/// Reorders every body of `bir`; returns how many bodies changed order.
pub fn schedule_bodies(func: &Function, bir: &mut Bir) -> usize {
    schedule_bodies_fitting(func, bir, false)
}

/// [`schedule_bodies`]; with `fit_psum`, every body keeps its local PSUM buffers within the
/// PSUM's banks where the dependences allow (the module's "backing off").
pub fn schedule_bodies_fitting(func: &Function, bir: &mut Bir, fit_psum: bool) -> usize {
    let budgets = fit_psum.then(|| compute_psum_budgets(func, bir));
    let budget = |owner: Option<BirLoop>| budgets.as_ref().map(|b| b.for_body(owner));
    let mut changed = 0;
    for l in bir.loops.keys() {
        let body = bir.loops[l].body.clone();
        let staged = staged_body(func, bir, l);
        let new = schedule(bir, &body, staged.as_ref(), budget(Some(l)).as_ref());
        if new != body {
            changed += 1;
        }
        bir.loops[l].body = new;
    }
    let body = bir.body.clone();
    let new = schedule(bir, &body, None, budget(None).as_ref());
    if new != body {
        changed += 1;
    }
    bir.body = new;
    changed
}

/// The PSUM buffers of a kernel by the body that owns them.
struct PsumBudgets {
    /// Per PSUM buffer: the body that owns it (`None`: the top level), the innermost body
    /// whose nodes hold every access of it (directly, or inside a nested loop), and the
    /// buffer's banks (all slots).
    local: BTreeMap<Tensor, (Option<BirLoop>, u64)>,
    /// The banks of every PSUM buffer of the kernel.
    total: u64,
}

/// One body's PSUM budget: its local buffers' banks and the banks they may hold at once.
struct PsumBudget {
    banks: BTreeMap<Tensor, u64>,
    limit: u64,
}

impl PsumBudgets {
    fn for_body(&self, owner: Option<BirLoop>) -> PsumBudget {
        let banks: BTreeMap<Tensor, u64> = (self.local.iter())
            .filter(|(_, &(o, _))| o == owner)
            .map(|(&t, &(_, b))| (t, b))
            .collect();
        let mine: u64 = banks.values().sum();
        PsumBudget {
            banks,
            limit: PSUM_BANKS.saturating_sub(self.total.saturating_sub(mine)),
        }
    }
}

/// The body that owns each PSUM buffer, and every PSUM buffer's banks.
///
/// A buffer's owner is the innermost loop that contains all its accesses (the longest common
/// prefix of its instructions' loop nests), so every access is in one node of the owner's body:
/// an instruction, or a nested loop that holds it (a PSUM tile accumulated by a loop of
/// matmuls and read after it, as in a blocked matmul whose tiles an unrolled loop renamed).
/// The body's schedule holds the buffer's banks from the first to the last node touching it.
fn compute_psum_budgets(func: &Function, bir: &Bir) -> PsumBudgets {
    let banks = |t: Tensor| {
        let d = &func.tensors[t];
        let row = d.shape.get(1).copied().unwrap_or(1);
        let per_slot = row
            .saturating_mul(d.dtype.size_bytes())
            .div_ceil(PSUM_BANK_BYTES)
            .max(1);
        per_slot.saturating_mul(d.slots())
    };
    // Per PSUM buffer: the loops common to every instruction that accesses it, outermost first.
    let mut common: BTreeMap<Tensor, Vec<BirLoop>> = BTreeMap::new();
    for bi in bir.insts.values() {
        let psum = std::iter::once(&bi.dst)
            .chain(bi.srcs.iter())
            .map(|o| o.tensor)
            .filter(|&t| func.tensors[t].memory == penguin::ir::Memory::Psum);
        for t in psum {
            let loops = common.entry(t).or_insert_with(|| bi.loops.clone());
            let same = (loops.iter().zip(&bi.loops))
                .take_while(|(a, b)| a == b)
                .count();
            loops.truncate(same);
        }
    }
    let total = common.keys().map(|&t| banks(t)).sum();
    let local = (common.iter())
        .map(|(&t, loops)| (t, (loops.last().copied(), banks(t))))
        .collect();
    PsumBudgets { local, total }
}

/// What scheduling a staged body needs: the Function (for ring depths) and each node's kind.
struct Staged<'f> {
    func: &'f Function,
    /// Per node: whether it holds a load (it goes first: its latency is the longest).
    loads: Vec<bool>,
    /// Per node: whether it is a nested loop that holds a store. Of the nodes holding a load it
    /// goes last: `sp` issues the loop's transfers in order, so a load queued behind it starts
    /// only once the loop's last store has its data, after the inner loop's compute (the next
    /// trip's load held behind this trip's inner loop, as behind a store, issue 32).
    loop_stores: Vec<bool>,
    /// Per node: whether it is a store (it goes last: it waits for this body's compute, and
    /// `sp` would hold the next body's loads behind it).
    stores: Vec<bool>,
}

/// What scheduling `l`'s body by class needs, when it is a pipelined loop holding a nested loop
/// (a body the modulo scheduler leaves as it is): annotated (extended by the pipeliner), or
/// staged by emergent pipelining (a direct instruction of the body carries a stage,
/// [`crate::transform::emergent::stages`]); `None` otherwise.
fn staged_body<'f>(func: &'f Function, bir: &Bir, l: BirLoop) -> Option<Staged<'f>> {
    let lp = &bir.loops[l];
    let pipelined =
        func.axes[lp.axis].attrs.pipelined.is_some() || staged_by_emergent(bir, &lp.body);
    if !pipelined || !lp.body.iter().any(|n| matches!(n, BNode::Loop(_))) {
        return None;
    }
    let holds = |n: BNode, op: fn(&Op) -> bool| {
        let mut found = false;
        for_each_inst(bir, n, &mut |i| found |= op(&bir.insts[i].op));
        found
    };
    let loads = (lp.body.iter())
        .map(|&n| holds(n, |op| matches!(op, Op::Load)))
        .collect();
    let stores = (lp.body.iter())
        .map(|&n| matches!(n, BNode::Inst(i) if matches!(bir.insts[i].op, Op::Store)))
        .collect();
    let loop_stores = (lp.body.iter())
        .map(|&n| matches!(n, BNode::Loop(_)) && holds(n, |op| matches!(op, Op::Store)))
        .collect();
    Some(Staged {
        func,
        loads,
        loop_stores,
        stores,
    })
}

/// Whether a body was staged by emergent pipelining: every direct instruction carries a stage
/// ([`crate::transform::emergent::stages`] tags each instruction statement of the loop it
/// stages; a body that only holds a peeled prologue's tagged copies has untagged ones too).
fn staged_by_emergent(bir: &Bir, body: &[BNode]) -> bool {
    let mut insts = body.iter().filter_map(|n| match *n {
        BNode::Inst(i) => Some(i),
        BNode::Loop(_) => None,
    });
    let mut any = false;
    insts.all(|i| {
        any = true;
        bir.insts[i].stage.is_some()
    }) && any
}

/// Calls `f` with every instruction of node `n`.
fn for_each_inst(bir: &Bir, n: BNode, f: &mut impl FnMut(crate::codegen::bir::BirInst)) {
    match n {
        BNode::Inst(i) => f(i),
        BNode::Loop(l) => {
            for &c in &bir.loops[l].body {
                for_each_inst(bir, c, f);
            }
        }
    }
}

/// Every operand a node touches: its buffer, its access and whether it is written.
fn operands(bir: &Bir, n: BNode) -> Vec<(Tensor, &Access, bool)> {
    let mut out = Vec::new();
    for_each_inst(bir, n, &mut |i| {
        let bi = &bir.insts[i];
        out.push((bi.dst.tensor, &bi.dst.access, true));
        if matches!(bi.op, Op::Matmul { accumulate: true }) {
            out.push((bi.dst.tensor, &bi.dst.access, false));
        }
        for o in &bi.srcs {
            out.push((o.tensor, &o.access, false));
        }
    });
    out
}

/// Whether two accesses of one buffer by instructions of the same body touch disjoint
/// rectangles in every iteration: in some dimension their starts differ by a constant (the same
/// terms of the enclosing loops' variables, fixed within one iteration of the body) at least
/// the size of the one that starts first.
fn disjoint_rects(a: &Access, b: &Access) -> bool {
    (a.start.iter().zip(&a.size))
        .zip(b.start.iter().zip(&b.size))
        .any(|((x, &xs), (y, &ys))| {
            if x.terms() != y.terms() {
                return false;
            }
            let (cx, cy) = (x.constant_term(), y.constant_term());
            let (xs, ys) = (
                i64::try_from(xs).unwrap_or(i64::MAX),
                i64::try_from(ys).unwrap_or(i64::MAX),
            );
            cx.saturating_add(xs) <= cy || cy.saturating_add(ys) <= cx
        })
}

/// Whether two accesses of ring `t` select different slots in every iteration: some block
/// dimension's selectors differ by a constant that its depth does not divide.
fn distinct_slots(func: &Function, t: Tensor, a: &[AffineExpr], b: &[AffineExpr]) -> bool {
    let blocks = &func.tensors[t].block;
    (a.iter().zip(b).zip(blocks)).any(|((x, y), dim)| {
        let depth = i64::from(dim.count.max(1));
        x.terms() == y.terms() && (x.constant_term() - y.constant_term()).rem_euclid(depth) != 0
    })
}

/// The edges by buffer of `body` (unstaged: [`compute_edges`]), forward in program order: the
/// dependence DAG the list scheduler orders, for the queue plan's chain of a body that runs
/// once (`codegen::queues::latency`).
pub(crate) fn compute_body_edges(bir: &Bir, body: &[BNode]) -> Vec<(usize, usize)> {
    let ops: Vec<Vec<(Tensor, &Access, bool)>> = body.iter().map(|&b| operands(bir, b)).collect();
    let insts: Vec<bool> = body.iter().map(|b| matches!(b, BNode::Inst(_))).collect();
    compute_edges(&ops, &insts, None)
}

/// The cycles a node keeps its engine (or queue) busy, from the machine description.
pub(crate) fn latency(bir: &Bir, n: BNode) -> u64 {
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

fn schedule(
    bir: &Bir,
    body: &[BNode],
    staged: Option<&Staged>,
    psum: Option<&PsumBudget>,
) -> Vec<BNode> {
    let n = body.len();
    if n < 2 {
        return body.to_vec();
    }
    let ops: Vec<Vec<(Tensor, &Access, bool)>> = body.iter().map(|&b| operands(bir, b)).collect();
    let insts: Vec<bool> = body.iter().map(|b| matches!(b, BNode::Inst(_))).collect();
    let edges = body_edges(&ops, &insts, staged);
    let class = body_classes(staged, &edges, n);
    let mut g: DiGraph<usize, ()> = DiGraph::new();
    let idx: Vec<NodeIndex> = (0..n).map(|i| g.add_node(i)).collect();
    // Without classes, the order by buffer; with them, the one that tells ring slots apart.
    let ring_aware = staged.is_some() && class.is_some();
    for &(i, j, slots) in &edges {
        if slots == ring_aware || staged.is_none() {
            g.add_edge(idx[i], idx[j], ());
        }
    }
    let class = class.unwrap_or_else(|| vec![(0, false, false); n]);
    // Critical path: the longest latency-weighted path from a node to the end of the body.
    let lat: Vec<u64> = body.iter().map(|&b| latency(bir, b)).collect();
    let mut prio = vec![0u64; n];
    for i in (0..n).rev() {
        let tail = g.neighbors(idx[i]).map(|s| prio[g[s]]).max().unwrap_or(0);
        prio[i] = lat[i] + tail;
    }
    let pressure = psum.map(|b| PsumPressure::new(b, &ops));
    let stream = SpStream {
        store: body.iter().map(|&b| is_store(bir, b)).collect(),
        load: body.iter().map(|&b| holds_load(bir, b)).collect(),
        loop_store: body.iter().map(|&b| loop_holds_store(bir, b)).collect(),
        lat,
    };
    list_order(
        body,
        &g,
        &idx,
        |i: usize| (class[i], prio[i], std::cmp::Reverse(i)),
        pressure,
        &stream,
    )
}

/// Whether node `n` is a store instruction.
fn is_store(bir: &Bir, n: BNode) -> bool {
    matches!(n, BNode::Inst(i) if matches!(bir.insts[i].op, Op::Store))
}

/// Whether node `n` is, or holds, a load.
fn holds_load(bir: &Bir, n: BNode) -> bool {
    let mut found = false;
    for_each_inst(bir, n, &mut |i| {
        found |= matches!(bir.insts[i].op, Op::Load);
    });
    found
}

/// Whether node `n` is a nested loop that holds a store.
fn loop_holds_store(bir: &Bir, n: BNode) -> bool {
    let mut found = false;
    if let BNode::Loop(_) = n {
        for_each_inst(bir, n, &mut |i| {
            found |= matches!(bir.insts[i].op, Op::Store);
        });
    }
    found
}

/// What [`list_order`] needs to keep `sp`'s in-order stream from holding a load behind a store
/// whose data is not ready: per node, whether it is a store, whether it holds a load, whether
/// it is a nested loop that holds a store, and its latency.
struct SpStream {
    store: Vec<bool>,
    load: Vec<bool>,
    loop_store: Vec<bool>,
    lat: Vec<u64>,
}

/// The order by buffer of a body with operands `ops` ([`compute_edges`]); in a staged body also
/// the one that tells ring slots apart, whose edges carry `true` (every edge does in an
/// unstaged body), sorted by `(target, source, slots)`.
fn body_edges(
    ops: &[Vec<(Tensor, &Access, bool)>],
    insts: &[bool],
    staged: Option<&Staged>,
) -> Vec<(usize, usize, bool)> {
    match staged {
        None => (compute_edges(ops, insts, None).into_iter())
            .map(|(i, j)| (i, j, true))
            .collect(),
        Some(st) => {
            let mut all: Vec<(usize, usize, bool)> = (compute_edges(ops, insts, None))
                .into_iter()
                .map(|(i, j)| (i, j, false))
                .collect();
            all.extend(
                (compute_edges(
                    ops,
                    insts,
                    Some(&|t, a, b| distinct_slots(st.func, t, a, b)),
                )
                .into_iter())
                .map(|(i, j)| (i, j, true)),
            );
            all.sort_unstable_by_key(|&(i, j, slots)| (j, i, slots));
            all
        }
    }
}

/// The classes of the `n` nodes of a staged body with `edges` ([`body_edges`]), or `None`.
///
/// In a staged body, the classes go first to last: a node holding a load, but a nested loop
/// that also holds a store after the others ([`Staged::loop_stores`]); then one that does
/// not wait for a load of this body (through the slot-aware edges), its inputs coming from
/// earlier bodies; then one that waits; then a store. The critical path orders each class.
/// When nothing waits for the body's own loads, the critical-path order on the edges by
/// buffer stands (`None`).
fn body_classes(
    staged: Option<&Staged>,
    edges: &[(usize, usize, bool)],
    n: usize,
) -> Option<Vec<(u8, bool, bool)>> {
    staged.and_then(|st| {
        let mut waits = vec![false; n];
        for &(i, j, slots) in edges {
            // The edges come by increasing `j`: `waits[i]` is final for every `i < j`.
            waits[j] |= slots && (st.loads[i] || waits[i]);
        }
        (waits.contains(&true)).then(|| {
            let mut load: Vec<u8> = (0..n)
                .map(|k| match (st.loads[k], st.loop_stores[k]) {
                    (false, _) => 0,
                    (true, true) => 1,
                    (true, false) => 2,
                })
                .collect();
            // A node that a load node waits for (through the slot-aware edges) goes with it:
            // the zeroing
            // of an accumulator before the inner loop that loads (else the loop waits behind
            // every node of a higher class than the zeroing's). The edges go forward, so by
            // decreasing target every successor's rank is final before its sources'.
            for &(i, j, slots) in edges.iter().rev() {
                if slots {
                    load[i] = load[i].max(load[j]);
                }
            }
            (0..n)
                .map(|k| (load[k], !st.stores[k], !waits[k]))
                .collect()
        })
    })
}

/// A node's rank in [`list_order`]: its class ([`body_classes`]), its critical path, and its
/// position reversed (ties in program order).
type ListKey = ((u8, bool, bool), u64, std::cmp::Reverse<usize>);

/// The list scheduling of `body` on graph `g` (node `i` at `idx[i]`, its edges forward in
/// program order): each time, of the ready nodes, the one of the largest `key` (unique: it ends
/// with the position), or with `pressure` the largest that fits the PSUM budget, else the
/// largest. The body as it is if no node is ready (which the forward edges rule out).
///
/// `sp` issues its transfers in the order chosen here, and a transfer waits for its operands:
/// a store chosen while a load is ready would hold that load until the store's data is computed
/// (issue 32, item 1). So when the chosen node is a store and a ready node holding a load could
/// start earlier (each node's start estimated as the latest finish of its predecessors, a
/// finish as start plus latency, engines not counted), the best such load goes first and the
/// store waits for the next choice. A nested loop that stores holds `sp` the same way, until its
/// last store has its data: when one is chosen, the best ready load instruction, or loop that
/// loads without storing, that could start with it goes first, its latency overlapping the
/// loop's instead of following it (measured: `tests/nki/nd_subview_blocks.nk` 10,771 → 7,719
/// cycles, `py_partial_scope.nk` 8,708 → 6,432, `tests/good/loads_after_loops.nk`'s
/// `stores_then_loading_loop` 11,043 → 8,347; the loop starts its loads one issue per piece
/// later). Only loads overtake a store: two stores, or a compute node
/// moved ahead of one to feed another store, share the DMA queues as the queue plan placed them
/// (tried: a store moved before a late one put the late one's pieces behind its own on one
/// queue, 16% slower).
fn list_order(
    body: &[BNode],
    g: &DiGraph<usize, ()>,
    idx: &[NodeIndex],
    key: impl Fn(usize) -> ListKey,
    mut pressure: Option<PsumPressure>,
    sp: &SpStream,
) -> Vec<BNode> {
    let n = body.len();
    let mut preds: Vec<usize> = (0..n)
        .map(|i| {
            g.neighbors_directed(idx[i], petgraph::Direction::Incoming)
                .count()
        })
        .collect();
    // The ready nodes, the one with the longest critical path on top, ties in program order.
    let mut ready: std::collections::BinaryHeap<_> =
        (0..n).filter(|&i| preds[i] == 0).map(&key).collect();
    let mut out = Vec::with_capacity(n);
    // Per node, the estimated cycle its predecessors so far finish at.
    let mut start = vec![0u64; n];
    while out.len() < n {
        // Some node is always ready: the graph's edges go forward in program order, so it has
        // no cycle.
        let Some(mut top) = ready.pop() else {
            return body.to_vec();
        };
        let t = top.2 .0;
        if sp.store[t] || sp.loop_store[t] {
            // The best ready load that could start before the store's data is ready; before a
            // nested loop that stores, the best ready load, or loop that loads without storing,
            // that could start with the loop (`sp` would hold it until the loop's last store
            // has its data).
            let load = (ready.iter())
                .filter(|x| {
                    let k = x.2 .0;
                    match sp.loop_store[t] {
                        false => sp.load[k] && start[k] < start[t],
                        true => sp.load[k] && !sp.loop_store[k] && start[k] <= start[t],
                    }
                })
                .max();
            if let Some(&load) = load {
                ready.retain(|x| x.2 != load.2);
                ready.push(top);
                top = load;
            }
        }
        if let Some(p) = &pressure {
            // The best ready node that fits the PSUM budget, else the best.
            let mut passed = Vec::new();
            while !p.fits(top.2 .0) {
                passed.push(top);
                match ready.pop() {
                    Some(next) => top = next,
                    None => {
                        top = passed.remove(0);
                        break;
                    }
                }
            }
            ready.extend(passed.into_iter().filter(|x| x.2 != top.2));
        }
        let pick = top.2 .0;
        if let Some(p) = &mut pressure {
            p.take(pick);
        }
        out.push(body[pick]);
        let finish = start[pick].saturating_add(sp.lat[pick]);
        for s in g.neighbors(idx[pick]) {
            start[g[s]] = start[g[s]].max(finish);
            preds[g[s]] -= 1;
            if preds[g[s]] == 0 {
                ready.push(key(g[s]));
            }
        }
    }
    out
}

/// The PSUM banks a body's local buffers hold as its schedule grows.
struct PsumPressure {
    /// Per node: the local PSUM buffers it accesses (once each).
    uses: Vec<Vec<Tensor>>,
    banks: BTreeMap<Tensor, u64>,
    limit: u64,
    /// Per local buffer: how many of the body's unscheduled nodes still access it.
    left: BTreeMap<Tensor, usize>,
    /// The local buffers accessed so far and not finished, and their banks.
    open: BTreeSet<Tensor>,
    held: u64,
}

impl PsumPressure {
    fn new(budget: &PsumBudget, ops: &[Vec<(Tensor, &Access, bool)>]) -> Self {
        let uses: Vec<Vec<Tensor>> = (ops.iter())
            .map(|o| {
                let set: BTreeSet<Tensor> = (o.iter())
                    .map(|x| x.0)
                    .filter(|t| budget.banks.contains_key(t))
                    .collect();
                set.into_iter().collect()
            })
            .collect();
        let mut left = BTreeMap::new();
        for &t in uses.iter().flatten() {
            *left.entry(t).or_insert(0) += 1;
        }
        PsumPressure {
            uses,
            banks: budget.banks.clone(),
            limit: budget.limit,
            left,
            open: BTreeSet::new(),
            held: 0,
        }
    }

    /// Whether node `i` opens no local buffer past the budget.
    fn fits(&self, i: usize) -> bool {
        let new: u64 = (self.uses[i].iter())
            .filter(|t| !self.open.contains(t))
            .map(|t| self.banks[t])
            .sum();
        new == 0 || self.held.saturating_add(new) <= self.limit
    }

    /// Schedules node `i`: opens the buffers it starts, frees those it finishes.
    fn take(&mut self, i: usize) {
        for &t in &self.uses[i] {
            if self.open.insert(t) {
                self.held += self.banks[&t];
            }
            let left = self
                .left
                .get_mut(&t)
                .expect("every use was counted in `new`");
            *left -= 1;
            if *left == 0 {
                self.open.remove(&t);
                self.held -= self.banks[&t];
            }
        }
    }
}

/// Whether two accesses of a ring select different slots in every iteration, from their slot
/// selectors ([`distinct_slots`] in a staged body).
type Ring<'a> = dyn Fn(Tensor, &[AffineExpr], &[AffineExpr]) -> bool + 'a;

/// One access of a buffer the edge builder has seen: its node, the access, whether it writes.
#[derive(Clone, Copy)]
struct Seen<'a> {
    node: usize,
    access: &'a Access,
    write: bool,
}

/// Whether two accesses of buffer `t` by nodes of one body conflict: one writes, they may
/// select the same slot of a ring (only when `ring` is given: a staged body), and unless both
/// nodes are instructions ([`BNode::Inst`], `inst`) with the same slot selectors and rectangles
/// disjoint within an iteration ([`disjoint_rects`]).
fn conflict(ring: Option<&Ring>, t: Tensor, a: Seen, b: Seen, inst: &[bool]) -> bool {
    (a.write || b.write)
        && !ring.is_some_and(|r| r(t, &a.access.slots, &b.access.slots))
        && !(inst[a.node]
            && inst[b.node]
            && a.access.slots == b.access.slots
            && disjoint_rects(a.access, b.access))
}

/// Whether the write `w` of a later node stands for the earlier access `a` (which conflicts
/// with it) toward every later access: anything that conflicts with `a` conflicts with `w`.
/// It does when they select the same slots and either `w`'s node is a loop (every access of
/// its buffer conflicts with it but for ring slots) or both are instructions and `w`'s
/// rectangle holds `a`'s (same terms in every dimension, `a`'s constant interval inside `w`'s:
/// a rectangle disjoint from `w`'s is disjoint from `a`'s).
fn stands_for(w: Seen, a: Seen, inst: &[bool]) -> bool {
    if a.access.slots != w.access.slots {
        return false;
    }
    if !inst[w.node] {
        return true;
    }
    inst[a.node]
        && a.access.start.len() == w.access.start.len()
        && (a.access.start.iter().zip(&a.access.size))
            .zip(w.access.start.iter().zip(&w.access.size))
            .all(|((x, &xs), (y, &ys))| {
                let (xs, ys) = (
                    i64::try_from(xs).unwrap_or(i64::MAX),
                    i64::try_from(ys).unwrap_or(i64::MAX),
                );
                x.terms() == y.terms()
                    && y.constant_term() <= x.constant_term()
                    && x.constant_term().saturating_add(xs) <= y.constant_term().saturating_add(ys)
            })
}

/// The dependence edges `i → j` (`i < j`) of a body whose nodes touch `ops` (per node, every
/// buffer, access and whether it writes) and are instructions where `inst`: a relation whose
/// transitive closure is the all-pairs one (`i` before `j`, some pair of their accesses of one
/// buffer conflicting, [`conflict`]), so the topological orders and the longest paths (latencies
/// are not negative) are the same, for a body of any size.
///
/// Per buffer, the builder keeps the accesses not yet stood for: a new access gets an edge from
/// each of them it conflicts with (a read only from the writes), and a write drops the ones it
/// conflicts with and [`stands_for`]: a later access that conflicts with one of those conflicts
/// with the write, which is ordered after it. A body that rewrites a buffer where it read it
/// (a chain of statements on one tile, a reloaded tile) keeps one or two accesses per buffer, so
/// the time is linear in the accesses; only accesses that no later write covers (disjoint pieces
/// of one buffer) stay, each conflicting later access paying for them.
fn compute_edges(
    ops: &[Vec<(Tensor, &Access, bool)>],
    inst: &[bool],
    ring: Option<&Ring>,
) -> Vec<(usize, usize)> {
    /// A buffer's accesses not yet stood for: its writes, and its reads.
    #[derive(Default)]
    struct Live<'a> {
        writes: Vec<Seen<'a>>,
        reads: Vec<Seen<'a>>,
    }
    let mut live: std::collections::HashMap<Tensor, Live> = Default::default();
    let mut edges = Vec::new();
    let mut from: Vec<usize> = Vec::new();
    for (j, node_ops) in ops.iter().enumerate() {
        from.clear();
        for &(t, access, write) in node_ops {
            let Some(l) = live.get(&t) else {
                continue;
            };
            let b = Seen {
                node: j,
                access,
                write,
            };
            let earlier = if write { &l.reads[..] } else { &[][..] };
            for &a in l.writes.iter().chain(earlier) {
                if a.node != j && conflict(ring, t, a, b, inst) {
                    from.push(a.node);
                }
            }
        }
        from.sort_unstable();
        from.dedup();
        edges.extend(from.iter().map(|&i| (i, j)));
        // This node's writes stand for the earlier accesses they hold; then its accesses join.
        for &(t, access, write) in node_ops.iter().filter(|o| o.2) {
            let w = Seen {
                node: j,
                access,
                write,
            };
            if let Some(l) = live.get_mut(&t) {
                let dropped = |a: &Seen| {
                    a.node != j && conflict(ring, t, *a, w, inst) && stands_for(w, *a, inst)
                };
                l.writes.retain(|a| !dropped(a));
                l.reads.retain(|a| !dropped(a));
            }
        }
        for &(t, access, write) in node_ops {
            let seen = Seen {
                node: j,
                access,
                write,
            };
            let l = live.entry(t).or_default();
            match write {
                true => l.writes.push(seen),
                false => l.reads.push(seen),
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests;
