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
//! of `Y`, the wait is `wait S_X >= 1` instead, whatever the iteration. `D = 0` waits for every earlier instance, which
//! is always correct; a larger `D` is taken only when the search proved it correct, which is what
//! lets a pipelined loop overlap its iterations: a ring slot is reused only once its last reader is
//! done. The wait never asks for an instance that does not precede `Y`, so it cannot deadlock.
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
//! of `Y` all precede the frontier needs no pair ([`Frontier::covers`]), and before `Y`'s loop
//! the search stops at the first producer whose last instance precedes the whole frontier. A
//! kernel of `n` sequential loops whose tiles share addresses has `O(n)` pairs, not `O(n²)`:
//! a consumer pairs with the latest loop's producers of each thread.
//! A thread's producers before the consumer's loop are visited through summaries of runs of
//! them ([`Summary`]: per memory, access kind and rows, the rows a residue modulo the gcd of
//! their coefficients when they move with the iteration), so a thread none of whose accesses can
//! meet the consumer's (the pieces of a split transfer on the other queues) costs one test.
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

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{ENode, Emitted, Foot, Node, NodeData, Space};
use crate::codegen::entities::Sem;
use crate::codegen::footprints::{compute_instances, meeting_feet, Instances};
pub(crate) use crate::codegen::footprints::{decode, instances, on, trips};
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};
use runtime_sim::isa::{Cmp, CmpOp, Engine, Expr, Reg, Term, MAX_REGS};

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
}

/// What a consumer waits for on one producer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Need {
    /// Every instance up to `distance` common iterations back.
    Distance(i64),
    /// A distance per range of values of the innermost shared loop's register `reg`:
    /// `(first, last, distance)`, covering its iterations in order ([`pieces`]).
    Pieces {
        reg: usize,
        ranges: Vec<(i64, i64, i64)>,
    },
    /// The producer's first instance only.
    First,
}

/// The most iterations of the innermost shared loop for which distances are decided per
/// iteration ([`Need::Pieces`]); such a loop is never trip-clamped ([`crate::codegen::clamp`]), so its
/// iterations are the same in the clamped copy and the real kernel.
pub const MAX_PIECES: i64 = 8;

/// The ranges of [`Need::Pieces`] from the smallest distance found at each value of the
/// register (`None`: no conflict there, so any distance will do): consecutive values with one
/// distance share a range, and a value without a conflict joins the range before it (the first
/// range when it leads). `None` when a single distance covers every value.
fn pieces(by: &[Option<i64>]) -> Option<Vec<(i64, i64, i64)>> {
    let mut ranges: Vec<(i64, i64, i64)> = Vec::new();
    for (j, d) in by.iter().enumerate() {
        let j = j as i64;
        match (d, ranges.last_mut()) {
            (Some(d), Some(last)) if last.2 == *d => last.1 = j,
            (None, Some(last)) => last.1 = j,
            (Some(d), _) => ranges.push((j, j, *d)),
            (None, None) => {}
        }
    }
    // Values without a conflict before the first one join the first range.
    if let Some(first) = ranges.first_mut() {
        first.0 = 0;
    }
    (ranges.len() > 1).then_some(ranges)
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
    /// conflicting instance by a later producer of their thread ([`Frontier`]).
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

/// Every instance's position in program order, and each loop's nodes.
struct Order {
    /// Per node, where its instances' positions start in `pos`.
    base: SecondaryMap<Node, usize>,
    pos: Vec<i64>,
    /// Per node, the position of its last instance (running or not; `None`: none, which orders
    /// before every position).
    last: SecondaryMap<Node, Option<i64>>,
    /// Per loop that runs, its first and last node.
    span: SecondaryMap<BirLoop, Option<(Node, Node)>>,
}

impl Order {
    fn pos(&self, i: Node, lin: i64) -> i64 {
        self.pos[self.base[i] + lin as usize]
    }
}

fn compute_order(em: &Emitted, inst: &Instances) -> Order {
    fn walk(
        em: &Emitted,
        tree: &[ENode],
        regs: &mut [i64; MAX_REGS],
        next: &mut i64,
        o: &mut Order,
    ) -> Option<(Node, Node)> {
        let hull = |a: Option<(Node, Node)>, b: Option<(Node, Node)>| match (a, b) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        let mut span = None;
        for t in tree {
            match t {
                ENode::Loop(l, body) => {
                    let (trip, depth) = em.loops[*l];
                    let mut inner = None;
                    for it in 0..trip as i64 {
                        regs[depth] = it;
                        inner = walk(em, body, regs, next, o);
                    }
                    o.span[*l] = inner;
                    span = hull(span, inner);
                }
                ENode::Inst(i) => {
                    let node = &em.nodes[*i];
                    let lin = node
                        .loops
                        .iter()
                        .enumerate()
                        .fold(0i64, |acc, (d, &l)| acc * em.loops[l].0 as i64 + regs[d]);
                    o.pos[o.base[*i] + lin as usize] = *next;
                    o.last[*i] = Some(*next);
                    *next += 1;
                    span = hull(span, Some((*i, *i)));
                }
            }
        }
        span
    }
    let mut base = SecondaryMap::new();
    let mut total = 0usize;
    for (i, t) in inst.trips.iter() {
        base[i] = total;
        total += instances(t) as usize;
    }
    let mut o = Order {
        base,
        // (The walk writes every entry.)
        pos: vec![0; total],
        last: SecondaryMap::new(),
        span: SecondaryMap::new(),
    };
    let mut regs = [0i64; MAX_REGS];
    walk(em, &em.tree, &mut regs, &mut 0, &mut o);
    o
}

impl Frontier {
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

/// How many consecutive nodes of a thread share a [`Summary`].
const CHUNK: usize = 16;

/// What some footprints of one access kind (reads, or writes) touch in one memory (one HBM
/// tensor) at rows `rows`: the hull of their regions ([`add`]).
#[derive(Clone, Debug)]
struct Summary {
    space: Space,
    tensor: penguin::Tensor,
    write: bool,
    region: (u64, u64),
    /// `None`: any rows.
    rows: Option<Rows>,
}

/// The rows of footprints: `n` rows from a start `lo` (when `g` is 0), or from any start
/// congruent to `lo` modulo `g` (a start affine in the iteration registers whose coefficients
/// have `g` as greatest common divisor: the pieces of a transfer split by rows keep their
/// offset within each iteration's block of rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rows {
    g: i64,
    lo: i64,
    n: i64,
}

impl Rows {
    /// The rows of a footprint starting at `r0`, `n` of them (`None`: not affine).
    fn of(r0: &Expr, n: u64) -> Option<Rows> {
        let mut g = 0i64;
        for t in &r0.terms {
            match *t {
                Term::Lin { coeff, .. } => g = gcd(g, coeff.unsigned_abs() as i64),
                Term::Mod { .. } => return None,
            }
        }
        let lo = match g {
            0 => r0.constant,
            g => r0.constant.rem_euclid(g),
        };
        Some(Rows {
            g,
            lo,
            n: i64::try_from(n).ok()?,
        })
    }

    /// Whether some rows of `self` may be rows of `other`.
    fn meet(self, other: Rows) -> bool {
        let (p, q) = (self, other);
        let g = gcd(p.g, q.g);
        if g == 0 {
            return p.lo < q.lo + q.n && q.lo < p.lo + p.n;
        }
        // Rows meet when `t1 - t2 ≡ q.lo - p.lo (mod g)` for some offsets `t1 < p.n`,
        // `t2 < q.n`.
        if p.n + q.n > g {
            return true;
        }
        let d = (q.lo - p.lo).rem_euclid(g);
        d < p.n || d > g - q.n
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    match b {
        0 => a,
        b => gcd(b, a % b),
    }
}

fn summarise<'a>(feet: impl Iterator<Item = &'a Foot>) -> Vec<Summary> {
    let mut out: Vec<Summary> = Vec::new();
    for f in feet {
        let rows = Rows::of(&f.r0, f.nr);
        add(
            &mut out,
            Summary {
                space: f.space,
                tensor: f.tensor,
                write: f.write,
                region: f.region,
                rows,
            },
        );
    }
    out
}

/// The most summaries of one memory (and HBM tensor) and access kind with distinct constant rows
/// kept apart; past it they merge into their hull.
const MAX_ROW_SUMMARIES: usize = 32;

/// Adds `x` to the summaries `out`: into the one of its memory, HBM tensor, access kind (read or
/// write) and constant rows, if any; a memory and kind with more than [`MAX_ROW_SUMMARIES`] row
/// ranges (or rows that depend on the iteration) keeps their hull in the first. Keeping reads
/// apart from writes and distinct rows apart is what lets a thread whose transfers touch other
/// partitions of the same tiles (the pieces of a split DMA rotate over the queues) be skipped
/// whole ([`meet`]).
fn add(out: &mut Vec<Summary>, x: Summary) {
    let (space, write, tensor) = (x.space, x.write, x.tensor);
    let kind = move |s: &Summary| {
        s.space == space
            && s.write == write
            && (s.tensor == tensor || !matches!(space, Space::Hbm(_)))
    };
    if let Some(s) = out.iter_mut().find(|s| kind(s) && s.rows == x.rows) {
        s.region = (s.region.0.min(x.region.0), s.region.1.max(x.region.1));
        return;
    }
    let same = out.iter().filter(|s| kind(s)).count();
    if same < MAX_ROW_SUMMARIES && (x.rows.is_some() || same == 0) {
        out.push(x);
        return;
    }
    // Too many row ranges, or rows that vary: one hull for the memory and kind.
    let mut hull = x;
    out.retain(|s| {
        if !kind(s) {
            return true;
        }
        hull.region = (hull.region.0.min(s.region.0), hull.region.1.max(s.region.1));
        hull.rows = match (hull.rows, s.rows) {
            (Some(a), Some(b)) if a.g == 0 && b.g == 0 => {
                let lo = a.lo.min(b.lo);
                Some(Rows {
                    g: 0,
                    lo,
                    n: (a.lo + a.n).max(b.lo + b.n) - lo,
                })
            }
            _ => None,
        };
        false
    });
    out.push(hull);
}

/// The summaries of the footprints of `a` and `b` together.
fn merge(a: &[Summary], b: &[Summary]) -> Vec<Summary> {
    let mut out = a.to_vec();
    for x in b {
        add(&mut out, x.clone());
    }
    out
}

/// Whether some footprint summed up in `a` may meet one summed up in `b` ([`may_conflict`]'s
/// test on the hulls: two footprints that may meet have hulls that do).
fn meet(a: &[Summary], b: &[Summary]) -> bool {
    a.iter().any(|x| {
        b.iter().any(|y| {
            x.space == y.space
                && (x.write || y.write)
                && x.region.0 < y.region.1
                && y.region.0 < x.region.1
                && match (x.rows, y.rows) {
                    // Rows are compared only within one tensor (scratch tensors of one arena
                    // meet by their elements alone).
                    (Some(p), Some(q))
                        if x.tensor == y.tensor || !matches!(x.space, Space::Hbm(_)) =>
                    {
                        p.meet(q)
                    }
                    _ => true,
                }
        })
    })
}

/// Per running instance of a consumer, the latest position of a conflicting instance of a
/// producer on one thread paired with it; `least`, the smallest of them.
struct Frontier {
    at: Vec<Option<i64>>,
    least: Option<i64>,
}

impl Frontier {
    /// Whether every running instance of `xi` before each running instance of `yi` precedes
    /// the frontier: the consumer is ordered after the frontier's instance (by its wait, or by
    /// what the pruning keeps in its place: it is one of [`Sync::pairs`]' conflicts), and that
    /// instance after `xi`'s by their thread's order (an engine completes in order; a queue's
    /// transfers that run complete first in, first out). So `xi` needs no pair.
    fn covers(&self, em: &Emitted, o: &Order, inst: &Instances, xi: Node, yi: Node) -> bool {
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
}

/// Whether two footprints may overlap in the coordinates that do not depend on the iteration:
/// rows whose starts are constant on both sides (the pieces of one split DMA) must share one, and
/// so must constant columns (a loop body that touches the same place every time). Decided once,
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
    meet(&a.r0, a.nr, &b.r0, b.nr) && meet(&a.c0, a.nc, &b.c0, b.nc)
}

/// What consumer `y` must wait for on producer `x`: `None` when it never needs to wait.
///
/// The usual answer is a distance (below). But when the only instance of `x` that ever conflicts
/// with `y` is `x`'s first, which precedes every instance of `y` that runs, waiting for one signal
/// is enough, and weaker than any distance: waiting for a count that grows with the iteration
/// would tie `y` to the progress of the engine issuing `x`'s later (predicated-off) instances.
///
/// Every running instance of `y` is searched (the pruning needs them all): `found` gets, per
/// instance `v` of `y` that conflicts with an earlier one of `x`, `(v, u)` with `u` the latest
/// such instance of `x`; it is cleared and the function returns [`Search::Incomplete`] when the
/// search ran out of budget (the list is then incomplete).
fn need(
    em: &Emitted,
    inst: &Instances,
    peeled: &SecondaryMap<BirLoop, bool>,
    xi: Node,
    yi: Node,
    found: &mut Vec<(i64, i64)>,
) -> (Option<Need>, Search) {
    let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
    let c = common_depth(x, y);
    let (tx, ty) = (&inst.trips[xi], &inst.trips[yi]);
    let px = instances(&tx[c..]);
    let xb = i64::from(xi < yi);
    let mut best: Option<i64> = None;
    // Whether every conflict found is with `x`'s first instance, which precedes every `y`.
    let mut first_only = true;
    let mut work = 0u64;
    let running = &inst.running[xi];
    let feet = meeting_feet(x, y);
    let mut complete = true;
    // An instance's iteration of the shared loops is the leading digits of its index.
    let py = instances(&ty[c..]).max(1);
    // `last` below grows with `v`, so the search's starting point only moves forward.
    let mut from = 0;
    // The smallest distance per value of the innermost shared loop's register, when it is short.
    let inner = c
        .checked_sub(1)
        .filter(|&k| (2..=MAX_PIECES).contains(&ty[k]) && !peeled[y.loops[k]]);
    let mut by: Vec<Option<i64>> = vec![None; inner.map_or(0, |k| ty[k] as usize)];
    for &v in &inst.running[yi] {
        let linc = v / py;
        // The latest conflicting instance of `x` before this one, searched backwards among the
        // running ones from the last that precedes it in program order.
        let last = (linc + xb) * px - 1;
        if last < 0 {
            first_only = false;
        }
        let mut latest = None;
        while from < running.len() && running[from] <= last {
            from += 1;
        }
        let mut k = from;
        while k > 0 {
            k -= 1;
            let u = running[k];
            work += 1;
            if work > MAX_WORK {
                // Out of budget: wait for everything before (always correct).
                latest = Some(last);
                first_only = false;
                complete = false;
                break;
            }
            if inst.conflict(em, &feet, (xi, u), (yi, v)) {
                latest = Some(u);
                found.push((v, u));
                break;
            }
        }
        if let Some(u) = latest {
            first_only &= u == 0;
            // The largest D with (linc - D + xb) * px >= u + 1.
            let d = (linc + xb - (u + 1 + px - 1) / px).clamp(0, MAX_DISTANCE);
            best = Some(best.map_or(d, |b: i64| b.min(d)));
            if let Some(k) = inner {
                let at = &mut by[(linc % ty[k]) as usize];
                *at = Some(at.map_or(d, |b: i64| b.min(d)));
            }
        }
        if !complete {
            break;
        }
    }
    if !complete {
        found.clear();
    }
    let need = match best {
        None => None,
        Some(_) if first_only => Some(Need::First),
        Some(d) => match (inner, complete.then(|| pieces(&by)).flatten()) {
            (Some(reg), Some(ranges)) => Some(Need::Pieces { reg, ranges }),
            _ => Some(Need::Distance(d)),
        },
    };
    let search = match complete {
        false => Search::Incomplete,
        true => Search::Complete,
    };
    (need, search)
}

/// How [`need`]'s search of the conflicting instances ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Search {
    /// Out of budget: the conflicts found are incomplete.
    Incomplete,
    /// Every conflicting instance was found.
    Complete,
}

/// `(lin_common(regs) - d + xb) * px` as an expression over the consumer's registers.
fn wait_value(em: &Emitted, x: &NodeData, y: &NodeData, xb: bool, d: i64) -> Expr {
    let c = common_depth(x, y);
    let tx = trips(em, x);
    let px = instances(&tx[c..]);
    let mut e = Expr::constant((i64::from(xb) - d) * px);
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

/// Computes every semaphore, signal and wait of the emitted kernel. A loop of `peeled` keeps one
/// distance per wait ([`Need::Pieces`] would guard its guard-free steady-state body).
pub fn compute_sync(em: &Emitted, peeled: &SecondaryMap<BirLoop, bool>) -> Sync {
    let mut s = Sync::default();
    s.signal.resize(em.nodes.len());
    s.waits.resize(em.nodes.len());
    let mut deps: Vec<(Node, Node, Need)> = Vec::new();
    let mut conflicts = Vec::new();
    let inst = std::sync::Arc::new(compute_instances(em));
    let order = compute_order(em, &inst);
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
    let mut found = Vec::new();
    for yi in em.nodes.keys() {
        let y = &em.nodes[yi];
        let running_y = &inst.running[yi];
        if running_y.is_empty() {
            continue;
        }
        // The nodes of the consumer's outermost loop share a loop with it; those before it
        // share none, and those after it none and never precede it.
        let (lo, last) = match y.loops.first() {
            None => (yi, yi),
            Some(&l) => order.span[l].expect("the loops of a node that runs run"),
        };
        let mine = summarise(y.foot.iter());
        for (nodes, chunks) in on_thread.iter().zip(&chunks) {
            let Some(&first) = nodes.first() else {
                continue;
            };
            // (A thread's order needs no semaphore with the consumer's.)
            if !needs_semaphore(&em.nodes[first], y) {
                continue;
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
            let inside = nodes[at(lo)..at(yi)].iter().rev();
            let after = nodes[past(yi)..past(last)].iter().rev();
            // (Before the loop, runs of nodes none of which may meet the consumer are skipped.)
            let (mut k, mut checked) = (at(lo), None);
            let outside = std::iter::from_fn(|| loop {
                let c = k.checked_sub(1)? / CHUNK;
                if checked != Some(c) {
                    checked = Some(c);
                    if !meet(&chunks[c].1, &mine) {
                        // Nothing before meets the consumer either.
                        return None;
                    }
                    if !meet(&chunks[c].0, &mine) {
                        k = c * CHUNK;
                        continue;
                    }
                }
                k -= 1;
                return Some(&nodes[k]);
            });
            for (k, &xi) in (after.map(|x| (2, x)))
                .chain(inside.map(|x| (0, x)))
                .chain(outside.map(|x| (1, x)))
            {
                let x = &em.nodes[xi];
                if k == 1 && order.last[xi] < frontier.least {
                    s.dominated_pairs += 1;
                    break;
                }
                if !may_conflict(x, y) {
                    continue;
                }
                if frontier.covers(em, &order, &inst, xi, yi) {
                    s.dominated_pairs += 1;
                    if k == 0 && frontier.precedes(em, &order, &inst, xi, yi) {
                        break;
                    }
                    continue;
                }
                found.clear();
                let (need, search) = need(em, &inst, peeled, xi, yi, &mut found);
                let Some(d) = need else {
                    continue;
                };
                deps.push((xi, yi, d));
                if search == Search::Incomplete {
                    conflicts.push(None);
                    continue;
                }
                for &(v, u) in &found {
                    let j = running_y.partition_point(|&w| w < v);
                    let p = order.pos(xi, u);
                    frontier.at[j] = frontier.at[j].max(Some(p));
                }
                frontier.least = frontier.at.iter().copied().min().flatten();
                conflicts.push(Some(found.clone()));
            }
        }
    }
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
        let wait = |distance: i64, range: Vec<Cmp>| Wait {
            sem,
            value: wait_value(em, x, y, xi < yi, distance),
            pred: [&y.inst.pred[..], &range[..]].concat(),
            range,
            from: xi,
            distance,
            first_only: false,
        };
        match d {
            Need::Distance(d) => s.waits[yi].push(wait(d, Vec::new())),
            Need::First => s.waits[yi].push(Wait {
                sem,
                value: Expr::constant(1),
                pred: y.inst.pred.clone(),
                range: Vec::new(),
                from: xi,
                distance: 0,
                first_only: true,
            }),
            Need::Pieces { reg, ranges } => {
                let last = ranges.last().map_or(0, |r| r.1);
                for (lo, hi, d) in ranges {
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
                    s.waits[yi].push(wait(d, range));
                }
            }
        }
    }
    drop_implied(em, &inst, &mut s);
    s.instances = Some(inst);
    s
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
                w.value = wait_value(em, &em.nodes[w.from], y, w.from < yi, w.distance);
            }
            w.pred = [&y.inst.pred[..], &w.range[..]].concat();
        }
    }
    out
}

/// Whether instance `ix` of node `xi` precedes instance `iz` of node `zi` in program order.
fn precedes(em: &Emitted, xi: Node, ix: i64, zi: Node, iz: i64) -> bool {
    let (x, z) = (&em.nodes[xi], &em.nodes[zi]);
    let c = common_depth(x, z);
    // The instance's iteration of the shared loops: its linear index over them (the loops
    // below them are the last digits of `ix`).
    let shared = |n: &NodeData, i: i64| {
        i / n.loops[c..]
            .iter()
            .map(|&l| em.loops[l].0 as i64)
            .product::<i64>()
            .max(1)
    };
    let (sx, sz) = (shared(x, ix), shared(z, iz));
    if sx != sz {
        return sx < sz;
    }
    xi < zi
}

/// Drops a consumer's wait on `X` when another of its waits, on `Z`, implies it for every
/// instance: the instance of `Z` it waits for is on the same DMA queue (first in, first out; and
/// on) or the same compute engine
/// (in order) as the instance of `X` the first wait needs, and comes after it in program order.
/// Counted in `implied_waits`.
fn drop_implied(em: &Emitted, inst: &Instances, s: &mut Sync) {
    for yi in em.nodes.keys() {
        let mut keep = vec![true; s.waits[yi].len()];
        for a in 0..keep.len() {
            let xa = s.waits[yi][a].from;
            for b in 0..keep.len() {
                if a == b || !keep[b] {
                    continue;
                }
                let (wa, wb) = (&s.waits[yi][a], &s.waits[yi][b]);
                // `b` must run wherever `a` does.
                let covers = wb.pred.iter().all(|c| wa.pred.contains(c));
                let implied =
                    covers && implies(em, Some(inst), yi, wb.from, &wb.value, xa, &wa.value);
                if implied {
                    keep[a] = false;
                    s.implied_waits += 1;
                    break;
                }
            }
        }
        let mut k = keep.into_iter();
        s.waits[yi].retain(|_| k.next().unwrap_or(true));
    }
}

/// Whether a wait on producer `zi` for `z_value` (run whenever the consumer `yi` runs) implies a
/// wait on producer `xi` for `x_value`, for every instance of `yi`: the instance of `z` it waits
/// for is on the same DMA queue (and on: an off transfer's signal follows only its own
/// semaphore's earlier signals) or the same compute engine as the instance of `x`, and comes after
/// it in program order, so its completion implies `x`'s (first in, first out; in order), and its
/// signal carries `x`'s clock.
///
/// `inst`, when given, is `em`'s instance table: the running instances are read from it instead
/// of evaluating the guards again (the same answer).
pub fn implies(
    em: &Emitted,
    inst: Option<&Instances>,
    yi: Node,
    zi: Node,
    z_value: &Expr,
    xi: Node,
    x_value: &Expr,
) -> bool {
    let (x, y, z) = (&em.nodes[xi], &em.nodes[yi], &em.nodes[zi]);
    let same_queue = x.queue().is_some() && x.queue() == z.queue();
    let same_engine = x.queue().is_none() && z.queue().is_none() && x.engine == z.engine;
    if !(same_queue || same_engine) {
        return false;
    }
    let ty = trips(em, y);
    let tz = trips(em, z);
    let mut regs = [0i64; MAX_REGS];
    let mut zr = [0i64; MAX_REGS];
    // Whether the running instance of `y` at registers `regs` is covered.
    let mut covered = |regs: &[i64; MAX_REGS]| {
        let need_x = x_value.eval(regs) as i64 - 1;
        if need_x < 0 {
            return true;
        }
        let got_z = z_value.eval(regs) as i64 - 1;
        if got_z < 0 || got_z >= instances(&tz) || !precedes(em, xi, need_x, zi, got_z) {
            return false;
        }
        // An off transfer's signal follows its own semaphore's earlier signals, not its queue's
        // earlier transfers: only an instance that runs vouches for the queue.
        !same_queue
            || match inst {
                Some(inst) => inst.running[zi].binary_search(&got_z).is_ok(),
                None => {
                    decode(&tz, got_z, &mut zr);
                    on(z, &zr)
                }
            }
    };
    match inst {
        Some(inst) => inst.running[yi].iter().all(|&v| {
            decode(&ty, v, &mut regs);
            covered(&regs)
        }),
        None => (0..instances(&ty)).all(|v| {
            decode(&ty, v, &mut regs);
            !on(y, &regs) || covered(&regs)
        }),
    }
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

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_group_equal_distances_and_absorb_iterations_without_conflicts() {
        // A ring of 3 slots over an inner loop of 5: the first iteration reuses the slot the
        // previous execution's last iteration read (distance 0), the middle ones can run ahead.
        assert_eq!(
            pieces(&[Some(0), Some(3), Some(3), Some(1), None]),
            Some(vec![(0, 0, 0), (1, 2, 3), (3, 4, 1)])
        );
        // Leading iterations without a conflict join the first range.
        assert_eq!(
            pieces(&[None, Some(1), Some(2)]),
            Some(vec![(0, 1, 1), (2, 2, 2)])
        );
        // One distance everywhere: no pieces.
        assert_eq!(pieces(&[None, Some(2), Some(2)]), None);
        assert_eq!(pieces(&[Some(1), None, Some(1)]), None);
        assert_eq!(pieces(&[None, None]), None);
    }
}
