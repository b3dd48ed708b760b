//! Synchronisation: a semaphore wait for every cross-engine dependence, including across
//! iterations, computed exactly on the emitted instructions' footprints.
//!
//! Every instruction that some later instruction must wait for signals its own semaphore when it
//! completes (a DMA: when its transfer completes). It signals once per time it is reached, on or
//! predicated off, so after instance `u` (its linear iteration index over its loop nest) the count
//! is `u + 1`. A consumer `Y` at iteration `v` needs the latest instance of a producer `X` that
//! precedes it in program order and touches overlapping bytes with at least one write (RAW, WAR
//! or WAW). [`compute_sync`] finds, by enumerating the instances of `Y` and searching back through
//! `X`'s, the largest distance `D` (in iterations of the loops `X` and `Y` share) such that waiting
//! for
//!
//! `wait S_X >= (lin_common(v) - D + [X before Y]) * P_X`
//!
//! (affine in the iteration registers; `P_X` = instances of `X` per common iteration) covers
//! every conflicting instance of `X` for every `v`. When the only instance of `X` that conflicts
//! with `Y` at all is `X`'s first (a prologue copy that runs once), and it precedes every instance
//! of `Y`, the wait is `wait S_X >= 1` instead, whatever the iteration. When `X` sits in loops
//! `Y` does not share, the wait also backs off by a *slack* (`- slack`, [`slack`]): `Y` waits for
//! the count reached at the end of `X`'s instance it reads, not for the end of that block.
//! `D = 0` waits for every earlier instance, which is always correct; a larger `D` is taken
//! only when the search proved it correct, which is what lets a pipelined loop overlap its
//! iterations: a ring slot is reused only once its last reader is done. The wait never asks for an instance that does not precede `Y`, so it cannot deadlock.
//!
//! Footprints are compared physically: SBUF and PSUM rectangles in partitions × bytes; HBM ones
//! in the tensor's rows × columns, except that two scratch tensors sharing an arena (`alloc`)
//! conflict whenever their element ranges overlap (whole tensors, conservatively: they share
//! elements only when their live ranges are disjoint, so one's last access precedes the other's
//! first anyway).
//!
//! **Linear in the program.** The producers of a consumer `Y` are searched thread by thread
//! (an engine, or a DMA queue), from the latest in program order back: those in `Y`'s outermost
//! loop, then those before it. Each producer paired with `Y` moves the thread's *frontier*: per
//! running instance of `Y`, the latest position of a conflicting instance of a paired producer
//! of the thread. `Y`'s instance is ordered after that instance (by the wait, or by whatever the
//! pruning keeps in its place, since it checks every pair's conflicts), and that instance after
//! every earlier one of its thread (an engine completes in order; a queue's transfers that run
//! complete first in, first out), so a producer whose running instances before each instance
//! of `Y` all precede the frontier needs no pair ([`Frontier::covers`](pairs::Frontier::covers)), and before `Y`'s loop
//! the search stops at the first producer whose last instance precedes the whole frontier. A
//! kernel of `n` sequential loops whose tiles share addresses has `O(n)` pairs, not `O(n²)`:
//! a consumer pairs with the latest loop's producers of each thread.
//! A thread's producers are visited through summaries of runs of them
//! ([`Summary`](summary::Summary): per memory, access kind and rows, the rows a residue modulo the gcd of
//! their coefficients when they move with the iteration), so a thread none of whose accesses can
//! meet the consumer's (the pieces of a split transfer on the other queues) costs one test, and
//! a run of producers that cannot meet it is skipped whole: before its loop, run by run; in its
//! loop, through a tree of the runs' summaries (`O(log n)` tests for a run of `n` producers, so
//! a body of thousands of transfers pairs in time near-linear in its length).
//!
//! Which pairs need a semaphore: instructions on different engines, and any pair whose producer is
//! a DMA (its transfer runs after `sp` moved on) unless both are transfers on the same queue (a
//! queue is first in, first out). A predicated-off DMA signals once its semaphore's earlier
//! signals are counted (the simulator keeps a semaphore's increments in issue order), and each
//! semaphore has one signalling instruction, so its count equals its completed instances with no
//! extra wait.
//!
//! The search is bounded ([`MAX_WORK`] footprint checks per pair; past it the wait covers every
//! earlier instance, `D = 0`) and distances are capped at [`MAX_DISTANCE`] (a smaller distance is
//! still correct, only more conservative). The enumeration is over instances, so `lib.rs` runs it
//! on the trip-clamped copy of the kernel ([`crate::codegen::clamp`]), where the number of instances does
//! not depend on the trip counts, and [`realise`] rewrites the waits found there (same producer,
//! same distance) over the real trip counts: a distance is a number of common iterations, which
//! the clamping preserves.
//!
//! One part per file: `order` (the instances' program order), `summary` (summaries of
//! runs of footprints), `pairs` (which producers each consumer pairs with), `need` (what a
//! consumer needs from one producer), `slack` (how far a wait backs off within a block),
//! `implied` (waits other waits imply); this file turns the pairs into semaphores and waits ([`compute_sync`]) and realises them ([`realise`]).

mod implied;
mod need;
mod order;
mod pairs;
mod slack;
mod summary;
#[cfg(test)]
mod tests;

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{exact_meet, ENode, Emitted, Exact, Foot, Node, NodeData, Space};
use crate::codegen::entities::Sem;
use crate::codegen::footprints::{compute_instances, strided, Instances};
pub(crate) use crate::codegen::footprints::{decode, instances, on, trips};
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};
use implied::drop_implied;
pub use implied::implies;
use need::Need;
pub use need::MAX_PIECES;
use order::compute_order;
use pairs::{compute_pairs, PairsData};
use runtime_sim::isa::{Cmp, CmpOp, Engine, Expr, Reg, Term};

/// The largest dependence distance searched for.
pub const MAX_DISTANCE: i64 = 16;

/// The largest number of instance checks per producer/consumer pair.
pub const MAX_WORK: u64 = 2_000_000;

/// A wait of a consumer on its producer's semaphore: a dependence at a distance.
#[derive(Clone, Debug)]
pub struct Wait {
    pub sem: Sem,
    pub value: Expr,
    /// The guard under which the wait runs: the consumer's, then `range`.
    pub pred: Vec<Cmp>,
    /// For a distance decided per iteration of the innermost shared loop ([`Need::Pieces`]),
    /// the range of its register (empty otherwise). That loop is never trip-clamped, so
    /// [`realise`] keeps it.
    pub range: Vec<Cmp>,
    /// The producer node.
    pub from: Node,
    /// The dependence distance, in iterations of the loops producer and consumer share.
    pub distance: i64,
    /// Only the producer's first instance conflicts (a prologue copy that runs once): the wait is
    /// for one signal, whatever the iteration (`distance` is then unused).
    pub first_only: bool,
    /// The producer's last instances of the common iteration waited up to that the consumer
    /// need not wait for ([`slack`]).
    pub slack: i64,
    /// The trip counts of the producer's loops outside the common ones on the kernel the slack
    /// was decided on (what [`realise`] maps its instance from).
    pub block_trips: Vec<i64>,
}

/// The semaphores of a kernel.
#[derive(Clone, Debug, Default)]
pub struct Sync {
    /// The semaphore each node signals.
    pub signal: SecondaryMap<Node, PackedOption<Sem>>,
    /// The waits before each node.
    pub waits: SecondaryMap<Node, Vec<Wait>>,
    /// The semaphores, by name.
    pub semaphores: PrimaryMap<Sem, String>,
    /// Producer/consumer pairs examined and found to need a wait.
    pub dependences: usize,
    /// Those pairs, `(producer, consumer)` nodes: every pair of nodes on different threads (engines
    /// or DMA queues) such that some running instance of the producer conflicts with a running
    /// instance of the consumer later in program order (what [`crate::codegen::hb`] keeps ordered when it
    /// prunes waits).
    pub pairs: Vec<(Node, Node)>,
    /// Producers not searched because the consumer is already ordered after their every
    /// conflicting instance by a later producer of their thread ([`Frontier`](pairs::Frontier)).
    pub dominated_pairs: usize,
    /// Waits dropped because another wait of the same consumer implies them.
    pub implied_waits: usize,
    /// The instance table of the kernel the waits were computed on, for the pruning to reuse
    /// (`None` on a copy [`realise`]d on other trip counts).
    pub instances: Option<std::sync::Arc<Instances>>,
    /// Per pair of `pairs`, the conflicting instances the search found: `(v, u)` for each
    /// running instance `v` of the consumer with `u` the latest running instance of the producer
    /// before it that conflicts (`None` when the search ran out of budget; empty on a copy
    /// [`realise`]d on other trip counts).
    pub conflicts: Vec<Option<Vec<(i64, i64)>>>,
}

/// How many loops, outermost first, enclose both nodes.
pub(crate) fn common_depth(x: &NodeData, y: &NodeData) -> usize {
    x.loops
        .iter()
        .zip(&y.loops)
        .take_while(|(a, b)| a == b)
        .count()
}

/// The threads whose instructions complete in program order: the five engines, then the DMA
/// queues.
pub(crate) const THREADS: usize = 5 + runtime_sim::machine::DMA_QUEUES;

/// The thread a node's accesses belong to: its transfer's queue, or its engine.
pub(crate) fn thread(n: &NodeData) -> usize {
    match n.queue() {
        Some(q) => 5 + q as usize,
        None => n.engine.index(),
    }
}

/// Whether program order between the two must be enforced by a semaphore.
fn needs_semaphore(x: &NodeData, y: &NodeData) -> bool {
    match (x.queue(), y.queue()) {
        (Some(qx), Some(qy)) => qx != qy,
        (Some(_), None) => true,
        _ => x.engine != y.engine,
    }
}

fn may_conflict(x: &NodeData, y: &NodeData) -> bool {
    x.foot.iter().any(|fx| {
        y.foot.iter().any(|fy| {
            fx.space == fy.space
                && (fx.write || fy.write)
                && fx.region.0 < fy.region.1
                && fy.region.0 < fx.region.1
                && fixed_parts_may_meet(fx, fy)
        })
    })
}

/// Whether two footprints may overlap in the coordinates that do not depend on the iteration:
/// rows whose starts are constant on both sides (the pieces of one split DMA) must share one, and
/// so must constant columns (a loop body that touches the same place every time), byte by byte
/// when either touches strided columns (two interleaved copies into one tile). Decided once,
/// as [`Instances::conflict`] would decide it at every instance; without it, two nodes that never meet
/// would be searched instance by instance, and a search past its budget waits for everything.
/// Two scratch tensors of one arena have coordinates of their own: their element ranges decide.
fn fixed_parts_may_meet(a: &Foot, b: &Foot) -> bool {
    if matches!(a.space, Space::Hbm(_)) && a.tensor != b.tensor {
        return true;
    }
    let meet = |x: &Expr, nx: u64, y: &Expr, ny: u64| {
        !x.terms.is_empty()
            || !y.terms.is_empty()
            || x.constant < y.constant + ny as i64 && y.constant < x.constant + nx as i64
    };
    let fixed = |f: &Foot| match &f.exact {
        Some(Exact::Flat { start, .. }) => start.terms.is_empty(),
        _ => f.c0.terms.is_empty(),
    };
    meet(&a.r0, a.nr, &b.r0, b.nr)
        && meet(&a.c0, a.nc, &b.c0, b.nc)
        && !((strided(a) || strided(b))
            && fixed(a)
            && fixed(b)
            && !exact_meet(
                (a, a.c0.constant as i128),
                (b, b.c0.constant as i128),
                |e, _| e.constant as i128,
            ))
}

/// Computes every semaphore, signal and wait of the emitted kernel. A loop of `peeled` keeps one
/// distance per wait ([`Need::Pieces`] would guard its guard-free steady-state body).
pub fn compute_sync(em: &Emitted, peeled: &SecondaryMap<BirLoop, bool>) -> Sync {
    let mut s = Sync::default();
    s.signal.resize(em.nodes.len());
    s.waits.resize(em.nodes.len());
    let inst = std::sync::Arc::new(compute_instances(em));
    let order = compute_order(em, &inst);
    let PairsData {
        deps,
        mut conflicts,
        dominated,
    } = compute_pairs(em, &inst, &order, peeled);
    s.dominated_pairs = dominated;
    // Every consumer's pairs in producer order (the order the pruning tries its waits in).
    let mut sorted: Vec<usize> = (0..deps.len()).collect();
    sorted.sort_by_key(|&k| (deps[k].1, deps[k].0));
    let conflicts: Vec<_> = (sorted.iter())
        .map(|&k| std::mem::take(&mut conflicts[k]))
        .collect();
    let deps: Vec<_> = sorted.iter().map(|&k| deps[k].clone()).collect();
    s.dependences = deps.len();
    s.conflicts = conflicts;
    s.pairs = deps.iter().map(|&(xi, yi, _)| (xi, yi)).collect();
    add_waits(em, &mut s, deps);
    drop_implied(em, &inst, &mut s);
    s.instances = Some(inst);
    s
}

/// Adds to `s` the waits of the pairs `deps` (`(producer, consumer, need)`, each consumer's in
/// producer order), with a semaphore for each producer that has none yet.
fn add_waits(em: &Emitted, s: &mut Sync, deps: Vec<(Node, Node, Need)>) {
    for (xi, yi, d) in deps {
        let sem = match s.signal[xi].expand() {
            Some(sem) => sem,
            None => {
                let x = &em.nodes[xi];
                let sem = s
                    .semaphores
                    .push(format!("{}{}", x.inst.op.name(), xi.index()));
                s.signal[xi] = sem.into();
                sem
            }
        };
        let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
        let block_trips = trips(em, x)[common_depth(x, y)..].to_vec();
        let wait = |distance: i64, slack: i64, range: Vec<Cmp>| Wait {
            sem,
            value: wait_value(em, x, y, xi < yi, distance, slack),
            pred: [&y.inst.pred[..], &range[..]].concat(),
            range,
            from: xi,
            distance,
            first_only: false,
            slack,
            block_trips: block_trips.clone(),
        };
        match d {
            Need::Distance { distance, slack } => {
                s.waits[yi].push(wait(distance, slack, Vec::new()))
            }
            Need::First => s.waits[yi].push(Wait {
                sem,
                value: Expr::constant(1),
                pred: y.inst.pred.clone(),
                range: Vec::new(),
                from: xi,
                distance: 0,
                first_only: true,
                slack: 0,
                block_trips: block_trips.clone(),
            }),
            Need::Pieces { reg, ranges } => {
                let last = ranges.last().map_or(0, |r| r.1);
                for (lo, hi, d) in ranges {
                    s.waits[yi].push(wait(d, 0, piece_range(reg, lo, hi, last)));
                }
            }
        }
    }
}

/// The guard of the piece `lo ..= hi` of register `reg`'s values `0 ..= last`
/// ([`Need::Pieces`]): no bound at either end where the piece reaches it.
fn piece_range(reg: usize, lo: i64, hi: i64, last: i64) -> Vec<Cmp> {
    let mut range = Vec::new();
    let r = Expr {
        terms: vec![Term::Lin {
            coeff: 1,
            reg: Reg(reg as u8),
        }],
        constant: 0,
    };
    let mut guard = |op, at| {
        range.push(Cmp {
            lhs: r.clone(),
            op,
            rhs: Expr::constant(at),
        })
    };
    match (lo > 0, hi < last) {
        (true, true) if lo == hi => guard(CmpOp::Eq, lo),
        (true, true) => {
            guard(CmpOp::Ge, lo);
            guard(CmpOp::Le, hi);
        }
        (true, false) => guard(CmpOp::Ge, lo),
        (false, true) => guard(CmpOp::Le, hi),
        (false, false) => {}
    }
    range
}

/// `(lin_common(regs) - d + xb) * px - slack` as an expression over the consumer's registers.
fn wait_value(em: &Emitted, x: &NodeData, y: &NodeData, xb: bool, d: i64, slack: i64) -> Expr {
    let c = common_depth(x, y);
    let tx = trips(em, x);
    let px = instances(&tx[c..]);
    let mut e = Expr::constant((i64::from(xb) - d) * px - slack);
    let mut stride = px;
    for k in (0..c).rev() {
        e.terms.push(Term::Lin {
            coeff: stride,
            reg: Reg(k as u8),
        });
        stride *= tx[k];
    }
    e.terms.reverse();
    e
}

/// The waits decided on a trip-clamped copy of `em` ([`crate::codegen::clamp`]), realised on `em`: the
/// same nodes, semaphores and distances, with values and guards over `em`'s trip counts.
pub fn realise(em: &Emitted, s: &Sync) -> Sync {
    let mut out = s.clone();
    out.instances = None;
    out.conflicts.clear();
    for (yi, waits) in out.waits.iter_mut() {
        let y = &em.nodes[yi];
        for w in waits.iter_mut() {
            if !w.first_only {
                let x = &em.nodes[w.from];
                let block_trips = trips(em, x)[common_depth(x, y)..].to_vec();
                w.slack = slack::realised_slack(w.slack, &w.block_trips, &block_trips);
                w.block_trips = block_trips;
                w.value = wait_value(em, x, y, w.from < yi, w.distance, w.slack);
            }
            w.pred = [&y.inst.pred[..], &w.range[..]].concat();
        }
    }
    out
}

/// Whether `value` is at most 0 for every register value of a nest of trips `t` (a wait that is
/// always satisfied).
pub fn never_positive(value: &Expr, loops: &[i64]) -> bool {
    let mut max = value.constant as i128;
    for t in &value.terms {
        match *t {
            Term::Lin { coeff, reg } => {
                let top = loops.get(reg.0 as usize).map_or(0, |&n| (n - 1).max(0));
                max += (coeff.max(0) as i128) * top as i128;
            }
            Term::Mod { coeff, modulus, .. } => {
                max += (coeff.max(0) as i128) * (modulus - 1) as i128;
            }
        }
    }
    max <= 0
}

/// The engines' streams walk the same tree; `engine_has` says whether a subtree holds a node of
/// the engine.
pub fn engine_has(em: &Emitted, tree: &[ENode], e: Engine) -> bool {
    tree.iter().any(|t| match t {
        ENode::Inst(i) => em.nodes[*i].engine == e,
        ENode::Loop(_, body) => engine_has(em, body, e),
    })
}
