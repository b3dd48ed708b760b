//! The loop dependence graph of one flat loop body: which instructions must stay ordered, at
//! which iteration distance, and how long the consumer waits for the producer.
//!
//! [`compute_loop_deps`] builds a petgraph `DiGraph` over the instructions of a BIR loop whose
//! body holds no nested loop. An edge `p → c` carries:
//! - its **kind**: flow (`p` writes what `c` reads), anti (`p` reads what `c` writes) or output
//!   (both write);
//! - its **distance** `d`: the smallest number of iterations such that `p` at iteration `j` and
//!   `c` at iteration `j + d` may touch a common element (`d = 0` only when `p` precedes `c` in the
//!   body; a self edge has `d ≥ 1`);
//! - its **latency**: the cycles from `p`'s start until its effect is complete (a compute
//!   instruction's cost; a DMA's issue, latency and queue time, as the queue plan splits it),
//!   from the shared machine description. A transfer `c` that the queue plan queues right
//!   behind the pieces of a transfer `p` holding its rows ([`crate::codegen::queues::queued_behind`]:
//!   the reload of a stored region, the store of a loaded tile, the next store of a region
//!   reloaded, on the same queues) waits for no semaphore: a queue is first in, first out, and
//!   `c`'s latency overlaps `p`'s, so `c`'s bytes move as soon as `p`'s have. The edge then
//!   weighs `p`'s issue and piece only (its latency less the fixed DMA latency): `c` issued
//!   that long after `p` ends when it would behind `p`, and a chain of such transfers through
//!   HBM costs its queue time per iteration, not a whole latency per link.
//!
//! The test is exact for what pipelined loops contain, and conservative otherwise. Two operands
//! conflict when they name the same logical buffer, their ring slots are equal and their element
//! ranges overlap in every dimension. With the loop's induction variable at `iv` for `p` and
//! `iv + d` for `c`, and the same values of every enclosing loop's variable, a dimension whose
//! starts have the same coefficients on every variable differs by a constant, so its overlap is an
//! interval test; a slot selector with the same coefficients is equal exactly when
//! `(s·d + c_c − c_p) mod N = 0`, which is what makes **different slots of one ring independent**
//! (`k mod 2` and `(k − 1) mod 2`). Anything else (different coefficients) is assumed to
//! conflict. A conflict also needs both instructions to run at the two iterations: their guards
//! are enumerated over the loops they name (the copies of a prefetch that take turns never
//! conflict), within a bound past which they are assumed to; pairs on one engine that never run
//! in one iteration are listed ([`LoopDeps::exclusive`]) for the scheduler. Different logical buffers never conflict inside one body: the allocator gives
//! buffers accessed in one loop disjoint memory (their live ranges both span the loop), but for
//! its last resort when nothing else fits (`alloc::FlatBodies::Exact`), whose sharings only the
//! synchronisation sees (they cost overlap, never correctness).
//!
//! Positions and ids: the graph's nodes are the body's instructions by **position** `k` (a
//! `usize`, program order), not by BIR id; [`LoopDeps::insts`] maps a position to its
//! [`BirInst`], and the per-instruction tables (`busy`, `latency`, `exclusive`) are by position.
//!
//! Invariants: node weights are positions in the body (program order); every `d = 0` edge goes
//! forward in program order, so the `d = 0` subgraph is acyclic; distances are at most
//! [`MAX_DISTANCE`] (a conflict only at larger distances gives no edge: it constrains neither the
//! order of the body, which only same-iteration edges do, nor any realistic schedule).

use crate::codegen::bir::{
    dma_tile, estimate, tile_bytes, transfer_bytes, BNode, Bir, BirInst, BirLoop,
};
use crate::codegen::queues::{queued_behind, QueuePlan};
use crate::cost::guards::{compute_guard_box, GuardBox};
use penguin::affine::AffineExpr;
use penguin::ir::{Op, Operand};
use penguin::{Axis, Function, Tensor};
use petgraph::graph::{DiGraph, NodeIndex};
use runtime_sim::isa::Engine;
use runtime_sim::machine;
use std::fmt;

/// The largest iteration distance an edge records.
pub const MAX_DISTANCE: u32 = 64;

/// The kind of a dependence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepKind {
    Flow,
    Anti,
    Output,
    /// Not a dependence of the loop: one in-order engine's next instruction in an emitted body
    /// order (the edges [`crate::codegen::modulo::compute_order_period`] adds).
    Order,
}

impl DepKind {
    pub fn name(self) -> &'static str {
        match self {
            DepKind::Flow => "flow",
            DepKind::Anti => "anti",
            DepKind::Output => "output",
            DepKind::Order => "order",
        }
    }
}

/// One dependence edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepData {
    pub kind: DepKind,
    pub distance: u32,
    pub latency: u64,
    /// The buffer both touch.
    pub tensor: Tensor,
}

/// The dependence graph of one loop body.
#[derive(Clone, Debug)]
pub struct LoopDeps {
    /// The BIR loop.
    pub lp: BirLoop,
    /// The body's instructions in program order: position `k` (node weight `k`) is `insts[k]`.
    pub insts: Vec<BirInst>,
    pub graph: DiGraph<usize, DepData>,
    /// Per instruction (by position): the cycles it keeps its engine busy (`sp`: its issue slots).
    pub busy: Vec<u64>,
    /// Per instruction (by position): its latency (see the module doc).
    pub latency: Vec<u64>,
    /// Pairs of positions `(a, b)`, `a < b`, whose guards never hold in one iteration (the
    /// copies of a prefetch that take turns): they never share their engine in an iteration.
    /// Sorted.
    pub exclusive: Vec<(usize, usize)>,
}

impl LoopDeps {
    pub fn node(&self, k: usize) -> NodeIndex {
        NodeIndex::new(k)
    }

    /// Whether positions `a` and `b` never run in one iteration.
    pub fn excludes(&self, a: usize, b: usize) -> bool {
        (self.exclusive)
            .binary_search(&(a.min(b), a.max(b)))
            .is_ok()
    }
}

/// The cycles instruction `i` keeps its engine busy and the cycles until its effect is complete.
pub fn compute_costs(func: &Function, bir: &Bir, plan: &QueuePlan, i: BirInst) -> (u64, u64) {
    let bi = &bir.insts[i];
    if bi.engine == Engine::Sp {
        let pieces = plan.split(i).map_or(1, |s| s.pieces()).max(1);
        // The tile's bytes; each piece moves its share.
        let tile = dma_tile(&bi.op, &bi.dst, &bi.srcs).unwrap_or(&bi.dst);
        let bytes = transfer_bytes(func, &bi.op, &bi.dst, &bi.srcs)
            .unwrap_or_else(|| tile_bytes(func, tile));
        let issue = pieces * machine::dma_issue_cycles();
        (issue, issue + machine::dma_transfer(bytes.div_ceil(pieces)))
    } else {
        let c = estimate(bi.engine, &bi.op, &bi.dst, &bi.srcs);
        (c, c)
    }
}

/// The reads and writes of an instruction.
fn operands(bir: &Bir, i: BirInst) -> Vec<(&Operand, bool)> {
    let bi = &bir.insts[i];
    let mut out = vec![(&bi.dst, true)];
    if matches!(bi.op, Op::Matmul { accumulate: true }) {
        out.push((&bi.dst, false));
    }
    out.extend(bi.srcs.iter().map(|s| (s, false)));
    out
}

/// Whether `e` and `f` have the same coefficient on every variable but `iv`.
fn same_other_terms(e: &AffineExpr, f: &AffineExpr, iv: Axis, modulus: Option<i64>) -> bool {
    let norm = |c: i64| modulus.map_or(c, |n| c.rem_euclid(n));
    e.axes()
        .chain(f.axes())
        .filter(|&a| a != iv)
        .all(|a| norm(e.coeff(a)) == norm(f.coeff(a)))
}

/// Whether `p` at iteration `j` and `c` at iteration `j + d` may touch a common element, for the
/// distances `d` in `range`: the smallest such `d`, or `None`.
fn first_conflict(
    func: &Function,
    iv: Axis,
    p: &Operand,
    c: &Operand,
    range: std::ops::RangeInclusive<u32>,
) -> Option<u32> {
    if p.tensor != c.tensor {
        return None;
    }
    let t = &func.tensors[p.tensor];
    // Per dimension: `Some((a, delta0))` when the starts differ by `a·d + delta0`; `None` when
    // the difference depends on more (assumed to overlap at every distance).
    let dims: Vec<Option<(i64, i64, u64, u64)>> = p
        .access
        .start
        .iter()
        .zip(&c.access.start)
        .zip(p.access.size.iter().zip(&c.access.size))
        .map(|((sp, sc), (&np, &nc))| {
            (sp.coeff(iv) == sc.coeff(iv) && same_other_terms(sp, sc, iv, None)).then(|| {
                (
                    sc.coeff(iv),
                    sc.constant_term() - sp.constant_term(),
                    np,
                    nc,
                )
            })
        })
        .collect();
    let slots: Vec<Option<(i64, i64, i64)>> = p
        .access
        .slots
        .iter()
        .zip(&c.access.slots)
        .zip(&t.block)
        .map(|((sp, sc), b)| {
            let n = i64::from(b.count);
            let (ap, ac) = (sp.coeff(iv).rem_euclid(n), sc.coeff(iv).rem_euclid(n));
            (ap == ac && same_other_terms(sp, sc, iv, Some(n)))
                .then(|| (ac, sc.constant_term() - sp.constant_term(), n))
        })
        .collect();
    range.into_iter().find(|&d| {
        let d = i64::from(d);
        let overlap = dims.iter().all(|dim| match *dim {
            None => true,
            Some((a, delta0, np, nc)) => {
                let delta = a * d + delta0;
                delta < np as i64 && -delta < nc as i64
            }
        });
        let same_slot = slots.iter().all(|s| match *s {
            None => true,
            Some((a, delta0, n)) => (a * d + delta0).rem_euclid(n) == 0,
        });
        overlap && same_slot
    })
}

/// Whether the instruction at position `p` at some iteration and the one at `c` at `d`
/// iterations of loop `iv` later (every other loop at the same iteration) can both run
/// ([`crate::cost::guards::may_run_shifted`]). Guards that never hold together (the copies of a
/// prefetch that take turns, a fill and a drain) carry no dependence.
fn may_run_together(body: &Body<'_>, p: usize, c: usize, iv: Axis, d: u32) -> bool {
    let (gp, gc) = (body.guards(p), body.guards(c));
    let (bp, bc) = (body.boxes[p].as_ref(), body.boxes[c].as_ref());
    crate::cost::guards::may_run_shifted_boxed(body.func, (gp, bp), (gc, bc), iv, d)
}

/// A flat loop body as the graph's tests read it: its instructions by position, and the guard
/// box of each ([`crate::cost::guards::compute_guard_box`]), computed once: the graph tests
/// every candidate pair at several distances, and every pair of guard lists of one engine,
/// against the same boxes, and building a box costs more than testing two.
struct Body<'a> {
    func: &'a Function,
    bir: &'a Bir,
    insts: &'a [BirInst],
    /// Per position, its instruction's guard box (`None`: a guard names two loops).
    boxes: Vec<Option<GuardBox>>,
}

impl<'a> Body<'a> {
    fn new(func: &'a Function, bir: &'a Bir, insts: &'a [BirInst]) -> Body<'a> {
        let boxes = (insts.iter())
            .map(|&i| compute_guard_box(func, &bir.insts[i].guards))
            .collect();
        Body {
            func,
            bir,
            insts,
            boxes,
        }
    }

    fn guards(&self, k: usize) -> &'a [penguin::affine::Predicate] {
        &self.bir.insts[self.insts[k]].guards
    }
}

/// The dependence graph of BIR loop `l`, or `None` when its body holds a nested loop.
pub fn compute_loop_deps(
    func: &Function,
    bir: &Bir,
    plan: &QueuePlan,
    l: BirLoop,
) -> Option<LoopDeps> {
    compute_loop_deps_counted(func, bir, plan, l).map(|(deps, _)| deps)
}

/// [`compute_loop_deps`], and how many times the exclusive pairs tested two guard boxes (the
/// turns along the loop answer the rest: [`LoopDeps::exclusive`]).
pub fn compute_loop_deps_counted(
    func: &Function,
    bir: &Bir,
    plan: &QueuePlan,
    l: BirLoop,
) -> Option<(LoopDeps, usize)> {
    let lp = &bir.loops[l];
    let mut insts = Vec::new();
    for n in &lp.body {
        match *n {
            BNode::Inst(i) => insts.push(i),
            BNode::Loop(_) => return None,
        }
    }
    let iv = lp.axis;
    let dmax = (lp.trip.saturating_sub(1)).min(u64::from(MAX_DISTANCE)) as u32;
    let mut graph = DiGraph::new();
    for k in 0..insts.len() {
        graph.add_node(k);
    }
    let costs: Vec<(u64, u64)> = insts
        .iter()
        .map(|&i| compute_costs(func, bir, plan, i))
        .collect();
    let body = Body::new(func, bir, &insts);
    for (kp, kc) in candidate_pairs(bir, &insts) {
        let dmin = u32::from(kc <= kp);
        if dmin > dmax {
            continue;
        }
        let pair = (insts[kp], insts[kc]);
        if let Some(mut dep) = strongest_dep(&body, (kp, kc), iv, dmin..=dmax, costs[kp].1) {
            // A transfer queued right behind its producer's pieces follows it on its queues:
            // it may issue once the producer has, and its bytes move once the producer's have.
            if queued_behind(bir, plan, pair.0, pair.1, iv, dep.distance) {
                dep.latency = costs[kp].1.saturating_sub(machine::DMA_LATENCY);
            }
            graph.add_edge(NodeIndex::new(kp), NodeIndex::new(kc), dep);
        }
    }
    let (exclusive, box_tests) = exclusive_pairs(&body, iv);
    let deps = LoopDeps {
        lp: l,
        insts,
        graph,
        busy: costs.iter().map(|c| c.0).collect(),
        latency: costs.iter().map(|c| c.1).collect(),
        exclusive,
    };
    Some((deps, box_tests))
}

/// The pairs (producer, consumer) of positions in `insts` that may depend on each other: only
/// instructions that touch a common tensor, one of them writing it ([`first_conflict`]), from
/// each tensor's writers and its other instructions, in the order of the all-pairs loop
/// (producer, then consumer) so the graph is the same.
fn candidate_pairs(bir: &Bir, insts: &[BirInst]) -> Vec<(usize, usize)> {
    type Touch = (Vec<usize>, Vec<usize>);
    let mut by_tensor: std::collections::HashMap<penguin::Tensor, Touch> = Default::default();
    for (k, &i) in insts.iter().enumerate() {
        for (o, w) in operands(bir, i) {
            let (all, writers) = by_tensor.entry(o.tensor).or_default();
            if all.last() != Some(&k) {
                all.push(k);
            }
            if w && writers.last() != Some(&k) {
                writers.push(k);
            }
        }
    }
    let mut candidates: Vec<(usize, usize)> = Vec::new();
    for (all, writers) in by_tensor.values() {
        for &w in writers {
            candidates.extend(all.iter().flat_map(|&k| [(w, k), (k, w)]));
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    candidates
}

/// The strongest (smallest-distance) dependence of the producer at position `kp` on the
/// consumer at `kc` at a distance in `distances` of loop `iv`, its latency `latency` (the
/// producer's).
fn strongest_dep(
    body: &Body<'_>,
    (kp, kc): (usize, usize),
    iv: Axis,
    distances: std::ops::RangeInclusive<u32>,
    latency: u64,
) -> Option<DepData> {
    let (func, bir) = (body.func, body.bir);
    let (ip, ic) = (body.insts[kp], body.insts[kc]);
    let (dmin, dmax) = (*distances.start(), *distances.end());
    let mut best: Option<DepData> = None;
    for (po, pw) in operands(bir, ip) {
        for (co, cw) in operands(bir, ic) {
            if !(pw || cw) {
                continue;
            }
            let mut from = dmin;
            let d = loop {
                let Some(d) = first_conflict(func, iv, po, co, from..=dmax) else {
                    break None;
                };
                if may_run_together(body, kp, kc, iv, d) {
                    break Some(d);
                }
                from = d + 1;
            };
            let Some(d) = d else {
                continue;
            };
            let kind = match (pw, cw) {
                (true, false) => DepKind::Flow,
                (false, true) => DepKind::Anti,
                _ => DepKind::Output,
            };
            if best.is_none_or(|b| d < b.distance) {
                best = Some(DepData {
                    kind,
                    distance: d,
                    latency,
                    tensor: po.tensor,
                });
            }
        }
    }
    best
}

/// The pairs of positions in `insts` on one engine that never run in the same iteration (their
/// guards exclude each other), decided once per pair of distinct guards: most instructions
/// share a few. The instructions are grouped by (engine, guards), so the work is the pairs of
/// groups and the pairs listed, not every pair of the body; the list is sorted.
fn exclusive_pairs(body: &Body<'_>, iv: Axis) -> (Vec<(usize, usize)>, usize) {
    let (bir, insts) = (body.bir, body.insts);
    let mut guard_ids: std::collections::HashMap<&[penguin::affine::Predicate], usize> =
        Default::default();
    // The first position with each guard list.
    let mut first_of: Vec<usize> = Vec::new();
    let guard_of: Vec<usize> = (insts.iter().enumerate())
        .map(|(k, &i)| {
            *guard_ids
                .entry(bir.insts[i].guards.as_slice())
                .or_insert_with(|| {
                    first_of.push(k);
                    first_of.len() - 1
                })
        })
        .collect();
    // Per (engine, guards), its positions in order; and per engine, its groups.
    let mut group_ids: std::collections::HashMap<(Engine, usize), usize> = Default::default();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut group_guard: Vec<usize> = Vec::new();
    let mut of_engine: std::collections::HashMap<Engine, Vec<usize>> = Default::default();
    for (a, &ia) in insts.iter().enumerate() {
        let engine = bir.insts[ia].engine;
        let g = *group_ids.entry((engine, guard_of[a])).or_insert_with(|| {
            members.push(Vec::new());
            group_guard.push(guard_of[a]);
            of_engine.entry(engine).or_default().push(members.len() - 1);
            members.len() - 1
        });
        members[g].push(a);
    }
    // Whether the guards `(ga, gb)` (of an earlier and a later instruction) may hold together,
    // per ordered pair of guards (as the all-pairs loop asked it): two boxes are compared at
    // once, cheaper than hashing their pair; guards with no box enumerate, and are memoised.
    let mut together: std::collections::HashMap<(usize, usize), bool> = Default::default();
    // Per guard list, its turn along `iv` when its box names no other loop (`compute_iv_turn`):
    // two such lists hold together exactly when their turns meet, two comparisons instead of
    // a box test, for the pairs of a body spread over a stage per statement (every pair of
    // its instructions on one engine is asked).
    let turns: Vec<Option<std::ops::Range<i64>>> = (first_of.iter())
        .map(|&k| compute_iv_turn(body, k, iv))
        .collect();
    let mut exclusive = Vec::new();
    let mut box_tests = 0;
    // An engine whose every position has a turn compares each position with the later ones
    // of the engine directly, in order: as cheap per pair as the groups' bookkeeping, and
    // nothing to sort.
    let no_guards: Vec<bool> = first_of
        .iter()
        .map(|&k| body.guards(k).is_empty())
        .collect();
    let mut turned: std::collections::HashMap<Engine, Vec<usize>> = Default::default();
    for (a, &ia) in insts.iter().enumerate() {
        turned.entry(bir.insts[ia].engine).or_default().push(a);
    }
    turned.retain(|_, ps| ps.iter().all(|&a| turns[guard_of[a]].is_some()));
    let mut row = Vec::new();
    for (a, &ia) in insts.iter().enumerate() {
        if let Some(ps) = turned.get(&bir.insts[ia].engine) {
            let (ga, ta) = (guard_of[a], &turns[guard_of[a]]);
            let ta = ta
                .as_ref()
                .expect("every position of a turned engine has a turn");
            for &b in &ps[ps.partition_point(|&b| b <= a)..] {
                let gb = guard_of[b];
                let tb = turns[gb]
                    .as_ref()
                    .expect("every position of a turned engine has a turn");
                let may =
                    (no_guards[ga] && no_guards[gb]) || ta.start.max(tb.start) < ta.end.min(tb.end);
                if !may {
                    exclusive.push((a, b));
                }
            }
            continue;
        }
        row.clear();
        for &g in &of_engine[&bir.insts[ia].engine] {
            let later = &members[g][members[g].partition_point(|&b| b <= a)..];
            if later.is_empty() {
                continue;
            }
            let key = (guard_of[a], group_guard[g]);
            let (ga, gb) = (first_of[key.0], first_of[key.1]);
            let may = match (&turns[key.0], &turns[key.1]) {
                _ if body.guards(ga).is_empty() && body.guards(gb).is_empty() => true,
                (Some(ta), Some(tb)) => ta.start.max(tb.start) < ta.end.min(tb.end),
                _ if body.boxes[ga].is_some() && body.boxes[gb].is_some() => {
                    box_tests += 1;
                    may_run_together(body, ga, gb, iv, 0)
                }
                _ => *(together.entry(key)).or_insert_with(|| {
                    box_tests += 1;
                    may_run_together(body, ga, gb, iv, 0)
                }),
            };
            if !may {
                row.extend_from_slice(later);
            }
        }
        row.sort_unstable();
        exclusive.extend(row.iter().map(|&b| (a, b)));
    }
    (exclusive, box_tests)
}

/// The iterations of loop `iv` in which the guards of position `k` hold, when its guard box
/// names no other loop: its range along `iv` (the loop's whole range when no guard names it),
/// empty when the guards never hold. Two such positions may run in one iteration exactly when
/// their turns meet ([`crate::cost::guards::may_run_shifted_boxed`] at distance 0 compares
/// the boxes along `iv` alone, as they name nothing else), unless neither has a guard (then
/// they always may). `None` when the box names another loop or there is no box.
fn compute_iv_turn(body: &Body<'_>, k: usize, iv: Axis) -> Option<std::ops::Range<i64>> {
    let b = body.boxes[k].as_ref()?;
    if b.axes().any(|a| a != iv) {
        return None;
    }
    Some(match b.is_empty() {
        true => 0..0,
        false => b.range(body.func, iv),
    })
}

impl fmt::Display for DepData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} d={} lat={}",
            self.kind.name(),
            self.distance,
            self.latency
        )
    }
}
