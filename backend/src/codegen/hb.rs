//! Happens-before: which semaphore waits the others already imply, decided by a static analysis
//! of the program's happens-before relation, never by simulating it ([`compute_pruned_waits`]).
//!
//! It owns the greedy pruning of `lib.rs`: the waits of [`crate::codegen::sync::compute_sync`] are tried
//! one at a time, consumer by consumer in node order and each consumer's waits in order, and a
//! wait is removed when, without it (and without those removed before it), the program that
//! the backend builds ([`crate::build_program`]) is still free of races: when every conflicting pair of
//! instruction instances that the simulator's race detector checks is still ordered. (The former pruning
//! simulated that program under the race detector once per wait; it is now the tests' oracle,
//! `tests/static_pruning.rs`, which finds the same waits on every example and corpus kernel.)
//!
//! **The program** keeps the waits that [`crate::codegen::redundant`]'s rule keeps (it drops a
//! wait whose value is never positive, and one that a wait kept earlier in the same stretch of
//! the same engine implies) and signals only the semaphores a kept wait reads. `Checker::keep`
//! applies that rule through the module's functions (memoising
//! [`crate::codegen::redundant::makes_redundant`]) incrementally: when waits are removed it
//! redoes their stretch from the first changed node only until the waits kept so far are the
//! last pass's again, so a long straight-line stretch costs what changes; debug builds check the
//! result against [`crate::codegen::redundant::drop_redundant_waits`] computed at once.
//!
//! **The relation** is the one the race detector (`runtime_sim::sim::race`, `exec`) computes
//! with vector clocks over the threads `pe act dve pool sp` and the 16 DMA queues:
//! - each engine runs its stream (the program order filtered by engine) in order; a compute
//!   instruction that runs accesses memory as an event of its engine's thread;
//! - a transfer that runs is an event of its queue's thread, ordered after everything `sp` saw
//!   when it issued it and after the earlier transfers of its queue (first in, first out); `sp`
//!   itself does not see it;
//! - an instance of a signalling node, on or off, publishes a clock: an engine's, after its
//!   instruction (then the engine's epoch advances); a transfer's that runs, the transfer's; a
//!   predicated-off transfer's, `sp`'s at its issue (taking no epoch);
//! - a wait `S >= v` that runs with `v > 0` joins the clocks of the first `v` signals of `S`. Each
//!   semaphore has one signalling node whose signals are counted in instance order (an engine's
//!   in stream order; a queue's transfers complete in order; a predicated-off transfer's signal
//!   is counted after its semaphore's earlier ones), so these are that node's instances
//!   `0 .. v - 1`, whatever the timing. A predicated-off wait, or one with `v <= 0`, joins
//!   nothing.
//!
//! None of this depends on timing, so the clocks the detector computes in a simulation are the
//! ones computed here by one pass over the instances in program order (`Walk`), which is a
//! topological order of the relation: streams and queues keep program order, and a wait never
//! asks for an instance that does not precede it ([`crate::codegen::sync`]; a wait that would leaves
//! the check undecided, which keeps the wait).
//!
//! **The conflicts.** Two instances race when they are on different threads, touch overlapping
//! bytes, one writes, and neither happens before the other. Happens-before is contained in
//! program order, and the running instances of one node are totally ordered on their thread
//! (one engine, or one queue), so the program is race free exactly when every running instance
//! `b` of a consumer happens after, for each producer `X` that `compute_sync` paired with it
//! ([`Sync::pairs`]: every pair of nodes on different threads with a conflicting pair of
//! instances), the latest running instance of `X` before `b` in program order whose footprints
//! meet `b`'s. Those instances are found once (`Conflicts`); each check is then one pass of
//! clock propagation with one comparison per conflict, `O(instances × threads)`, on the
//! trip-clamped copy of the kernel (thousands of instances). Footprints are `sync`'s: exact
//! rectangles for tiles and HBM tensors; for two scratch tensors of one arena, their whole
//! element ranges (a superset of the detector's, which could only keep more waits).
//!
//! **Most waits need no walk.** Each walk that finds no race also records, per wait instance,
//! whether its join raised its engine's clock, and per wait whether some instance had it as its
//! only ordering after a conflicting instance (no clock before the node's waits, and no other
//! wait of the instance, reached that instance's epoch). A kept wait that never raised a clock
//! can go at once: without it every clock is what it was. A wait found needed stays at once:
//! removing waits only lowers clocks, so every later program without it has that race (unless a
//! wait it implied comes back in its place, which then takes a walk). Both decisions are the
//! ones a walk would make, so the result is still the wait-by-wait greedy's; on matmul's
//! emergent path they leave 9 walks of 193.
//!
//! **Walks are memory-bound**: each instance joins published clocks at random. A clock
//! component is an epoch, which counts instances, so a kernel of fewer than `u16::MAX`
//! instances walks with `u16` components ([`Lane`]): half the bytes, a quarter less time. A
//! walk resumes from the latest snapshot before the first instance that changed, and goes on
//! past the last instance of every node whose waits or signal changed; from there it stops at
//! the first snapshot of the previous walk that it matches (same clocks, same signals
//! published, same epochs, and no signal published differently that a later wait may read):
//! the rest would be the previous walk's, whose records stay. In a kernel of sequential loops
//! a walk covers the loop that changed and the next, so the pruning is linear in the kernel;
//! in one long loop it still goes to the end. A walk that finds a race puts the previous
//! walk's records back (its epochs and signals are logged). A walk overwrites the previous
//! walk's signals in place and learns which semaphores are signalled differently from the
//! waits whose keeping changed, so its cost is what it walks, not the kernel's size.
//!
//! Invariants: `em` is the kernel the waits were computed on (the trip-clamped copy when there
//! is one). The decision for every wait is exact (a wait is removed exactly when the race
//! detector, simulating the program without it, would report no race), except that a kernel
//! past [`MAX_INSTANCES`], or whose conflicts take more than [`SEARCH_BUDGET`] footprint checks
//! to find, keeps all its waits, and one whose walks take more than [`PRUNE_BUDGET`] steps keeps
//! the waits not yet tried (correct, maybe redundant).

use crate::codegen::emit::{ENode, Emitted};
use crate::codegen::entities::{Node, Sem, Stretch, WaitId};
use crate::codegen::footprints::{compute_instances, meeting_feet, Instances};
use crate::codegen::redundant;
use crate::codegen::sync::{self, Sync};
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};
use runtime_sim::isa::{Cmp, Engine, Expr, MAX_REGS};
use runtime_sim::machine::DMA_QUEUES;

/// The most footprint checks spent finding the conflicting instances; past it nothing is pruned.
pub const SEARCH_BUDGET: u64 = 50_000_000;
/// The most instance steps the walks take (the former limit on instances times waits, each
/// wait then costing a walk to the end); past it the waits not yet tried are kept.
pub const PRUNE_BUDGET: u64 = 200_000_000;
/// The most instances, and the most (wait, instance) pairs, the pruning tabulates; past it every
/// wait is kept.
pub const MAX_INSTANCES: u64 = 1 << 22;

/// The most waits whose implications are memoised in a dense table (`DENSE_MEMO²` bytes).
const DENSE_MEMO: usize = 2048;

/// Threads: the five engines, then the queues.
const THREADS: usize = 5 + DMA_QUEUES;
/// A component of a vector clock: an epoch, which counts instances. The walks stream through
/// clocks, so a kernel whose epochs all fit a `u16` walks with half the memory.
trait Lane: Copy + Ord + Default {
    const ONE: Self;
    fn incr(&mut self);
}

impl Lane for u16 {
    const ONE: u16 = 1;
    fn incr(&mut self) {
        *self += 1;
    }
}

impl Lane for u32 {
    const ONE: u32 = 1;
    fn incr(&mut self) {
        *self += 1;
    }
}

/// A vector clock.
type Vc<L> = [L; THREADS];

fn join<L: Lane>(a: &mut Vc<L>, b: &Vc<L>) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

/// Joins `b` into `a` and says whether that raised any component of `a`.
fn join_raises<L: Lane>(a: &mut Vc<L>, b: &Vc<L>) -> bool {
    let mut raised = false;
    for (x, y) in a.iter_mut().zip(b) {
        raised |= *y > *x;
        *x = (*x).max(*y);
    }
    raised
}

/// The thread whose events are a node's accesses: its engine, or its transfer's queue.
fn thread(em: &Emitted, i: Node) -> usize {
    sync::thread(&em.nodes[i])
}

fn holds(pred: &[Cmp], regs: &[i64; MAX_REGS]) -> bool {
    pred.iter()
        .all(|c| c.op.holds(c.lhs.eval(regs), c.rhs.eval(regs)))
}

/// For every running instance (numbered flat: a node's instances from `base[node]`, in its
/// linear iteration order), the instances it must happen after: per producer paired with its
/// node, the latest running conflicting instance before it in program order, with the
/// producer's thread.
struct Conflicts {
    base: SecondaryMap<Node, usize>,
    /// The number of instances.
    total: usize,
    /// `after[start[b] .. start[b + 1]]` are instance `b`'s.
    start: Vec<u32>,
    /// (thread, flat instance).
    after: Vec<(u8, u32)>,
}

/// Finds the conflicting instances of every pair of `sync.pairs`, or `None` past the budget.
fn compute_conflicts(em: &Emitted, inst: &Instances, sync: &Sync) -> Option<Conflicts> {
    let mut base = SecondaryMap::new();
    let mut total = 0usize;
    for (i, t) in inst.trips.iter() {
        base[i] = total;
        total += sync::instances(t) as usize;
    }
    if total >= u32::MAX as usize {
        return None;
    }
    let mut found: Vec<(u32, u8, u32)> = Vec::new();
    let mut work = 0u64;
    let mut ry = [0i64; MAX_REGS];
    for (p, &(xi, yi)) in sync.pairs.iter().enumerate() {
        // The synchronisation analysis's own search, when it has it.
        if let Some(Some(pairs)) = sync.conflicts.get(p) {
            let tr = thread(em, xi) as u8;
            for &(v, u) in pairs {
                found.push((
                    (base[yi] as i64 + v) as u32,
                    tr,
                    (base[xi] as i64 + u) as u32,
                ));
            }
            continue;
        }
        let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
        let c = sync::common_depth(x, y);
        let (tx, ty) = (&inst.trips[xi], &inst.trips[yi]);
        let px = sync::instances(&tx[c..]);
        let xb = i64::from(xi < yi);
        let tr = thread(em, xi) as u8;
        let running = &inst.running[xi];
        let feet = meeting_feet(x, y);
        for &v in &inst.running[yi] {
            sync::decode(ty, v, &mut ry);
            let linc = (0..c).fold(0i64, |acc, k| acc * ty[k] + ry[k]);
            // Searched backwards among the running instances of `x`, from the last that
            // precedes this one.
            let last = (linc + xb) * px - 1;
            let mut k = running.partition_point(|&u| u <= last);
            while k > 0 {
                k -= 1;
                let u = running[k];
                work += 1;
                if work > SEARCH_BUDGET {
                    return None;
                }
                if inst.conflict(em, &feet, (xi, u), (yi, v)) {
                    found.push((
                        (base[yi] as i64 + v) as u32,
                        tr,
                        (base[xi] as i64 + u) as u32,
                    ));
                    break;
                }
            }
        }
    }
    found.sort_unstable();
    let mut start = vec![0u32; total + 1];
    for &(b, _, _) in &found {
        start[b as usize + 1] += 1;
    }
    for k in 0..total {
        start[k + 1] += start[k];
    }
    Some(Conflicts {
        base,
        total,
        start,
        after: found.into_iter().map(|(_, t, a)| (t, a)).collect(),
    })
}

/// A table with one entry per semaphore of `sync`, each `v`.
fn per_sem<T: Clone>(sync: &Sync, v: T) -> SecondaryMap<Sem, T> {
    let mut m = SecondaryMap::with_default(v);
    m.resize(sync.semaphores.len());
    m
}

/// Per wait, whether it is still in the program's waits (not pruned).
type Alive = SecondaryMap<WaitId, bool>;

/// Why a check stopped.
enum Stop {
    /// Two conflicting instances are not ordered.
    Race,
    /// A wait asks for a signal not yet given in program order.
    Undecided,
}

/// What the checks share: the kernel's waits numbered in pruning order (`(node, index)` in
/// `sync.waits`), what each asks for at each instance, and the implications between waits that
/// [`crate::codegen::redundant`] drops some by (memoised).
struct Checker<'a, L: Lane> {
    em: &'a Emitted,
    inst: &'a Instances,
    sync: &'a Sync,
    cf: &'a Conflicts,
    /// The waits, in pruning order.
    waits: PrimaryMap<WaitId, WaitAt>,
    /// Per node, its waits.
    of_node: SecondaryMap<Node, Vec<WaitId>>,
    /// Per wait, whether the program may keep it ([`redundant::may_keep`]).
    positive: SecondaryMap<WaitId, bool>,
    /// Per wait, `offset[w] + v` indexes `need` for instance `v` of its node.
    offset: SecondaryMap<WaitId, usize>,
    /// The signals a wait needs at an instance (0: it is off, or satisfied at once).
    need: Vec<u32>,
    /// Per wait instance (indexed like `need`), whether its join raised its engine's clock in
    /// the current program: a kept wait that raised nothing anywhere orders nothing, and removing
    /// it leaves every clock as it was ([`Checker::orders_nothing`]). Written by the walks that
    /// succeed, and kept exact by [`compute_pruned_waits`] when it removes waits without a walk.
    raised: Vec<bool>,
    /// The `raised` entries the walk under way computed (committed when it finds no race).
    raised_log: Vec<(u32, bool)>,
    /// Per wait, whether a walk of a program that held it found an instance whose only
    /// ordering after a conflicting instance came through it: no engine clock before the
    /// node's waits, and no other wait of the instance, reached that instance's epoch. Removing
    /// waits only lowers clocks, so every later program without it (and with no wait that it
    /// implied put back in its place) has that race ([`compute_pruned_waits`]).
    needed: SecondaryMap<WaitId, bool>,
    /// The waits the walk under way found needed (committed when it finds no race).
    needed_log: Vec<WaitId>,
    /// Per stretch, whether every live wait in it is kept, as last computed since its kept
    /// waits changed ([`Checker::certainly_needed`]).
    clean: std::collections::HashMap<Stretch, bool>,
    /// Per flat instance, whether it runs.
    on: Vec<bool>,
    /// Every instance in program order: (node, linear iteration index).
    order: Vec<(Node, u32)>,
    /// The node signalling each semaphore.
    signaller: SecondaryMap<Sem, Option<Node>>,
    /// Per wait, the thread of the node it waits for ([`thread`]).
    producer_thread: SecondaryMap<WaitId, usize>,
    /// Whether a kept wait (first) makes a later one (second) redundant ([`redundant`])
    /// (memoised: 0 unknown, 1 no, 2 yes), at `first * waits + second` (up to [`DENSE_MEMO`]
    /// waits; past it in `implied_sparse`).
    implied: Vec<u8>,
    implied_sparse: std::collections::HashMap<(WaitId, WaitId), bool>,
    /// Per node, the waits the program has before it (see [`Checker::keep`]).
    kept: SecondaryMap<Node, Vec<WaitId>>,
    /// The stretches of one engine's stream within which the program remembers the waits it
    /// kept (a body of a loop, cut by the nested loops that hold work of the engine), each with
    /// its engine; and the stretch of each node (`usize::MAX`: none).
    segments: PrimaryMap<Stretch, (Engine, Vec<Node>)>,
    segment_of: SecondaryMap<Node, PackedOption<Stretch>>,
    /// The clocks of the latest walk. Its records (the epochs of the instances before position
    /// `valid_until` of `order`, the signals published there) are those a whole walk of the
    /// current program would compute; see [`Checker::race_free`].
    st: State<L>,
    valid_until: usize,
    /// Snapshots of the walk's state before some positions of `order` (increasing, each at
    /// most `valid_until`; the first at 0), every `every` positions.
    checkpoints: Vec<Checkpoint<L>>,
    every: usize,
    /// Per node with an instance, the positions in `order` of its first and last.
    positions: SecondaryMap<Node, Option<(usize, usize)>>,
    /// Per semaphore and signal, the last position in `order` of an instance of a wait (any,
    /// kept or not) that may read it ([`Diff`]).
    last_read: SecondaryMap<Sem, Vec<u32>>,
    /// The semaphores the program of the last walk that found no race signals (those a kept
    /// wait read).
    read: SecondaryMap<Sem, bool>,
    /// Per semaphore, how many waits of [`Checker::kept`] read it (kept up to date by
    /// [`Checker::set_kept`]): the semaphores the current program signals are those above 0.
    readers: SecondaryMap<Sem, u32>,
    /// `readers[s] > 0`, per semaphore.
    read_now: SecondaryMap<Sem, bool>,
    /// The semaphores whose readers changed since the last walk that found no race (with
    /// repeats): only they can be signalled differently from it.
    dirty: Vec<Sem>,
    /// Per stretch, what [`Checker::keep_segment`] last computed there ([`KeptRun`]; `None`:
    /// to compute from the stretch's start).
    runs: SecondaryMap<Stretch, Option<KeptRun>>,
    /// Per node, its position in its stretch.
    position: SecondaryMap<Node, usize>,
    /// The instance steps walked so far ([`PRUNE_BUDGET`]).
    steps: u64,
}

/// A wait as the checks see it: its node, its index in the node's waits, its semaphore.
#[derive(Clone, Copy)]
struct WaitAt {
    node: Node,
    index: usize,
    sem: Sem,
}

/// What [`Checker::keep_segment`] computed for one stretch: per producer thread, the waits
/// kept in the stretch in node order, and per position `k` of the stretch (up to its length),
/// how many of each thread's were kept before its `k`th node.
#[derive(Clone)]
struct KeptRun {
    lists: Vec<Vec<WaitId>>,
    lens: Vec<[u32; THREADS]>,
}

/// The state of a walk before one position of the program order. The epochs and published
/// signals are append-only in program order, so the lengths of the signal lists suffice.
struct Checkpoint<L> {
    pos: usize,
    clock: [Vc<L>; 5],
    queue_epoch: [L; DMA_QUEUES],
    published: SecondaryMap<Sem, u32>,
}

/// The state of one pass of clock propagation over the instances in program order.
struct State<L: Copy> {
    /// The engines' clocks.
    clock: [Vc<L>; 5],
    queue_epoch: [L; DMA_QUEUES],
    /// Per semaphore, the join of its first `k + 1` signals' clocks at `k`: the first
    /// [`State::len`] of them are the current walk's, the rest the last walk's (a walk
    /// overwrites them in place, logging what it overwrote in `undo`).
    prefix: SecondaryMap<Sem, Vec<Vc<L>>>,
    /// Per semaphore, how many signals the current walk has published (counting those before
    /// its start), valid where `stamp` is the walk's `generation` (elsewhere: the start
    /// snapshot's count).
    len: SecondaryMap<Sem, u32>,
    stamp: SecondaryMap<Sem, u32>,
    generation: u32,
    /// The entries of `prefix` the current walk overwrote (`None`: it pushed one).
    undo: Vec<(Sem, u32, Option<Vc<L>>)>,
    /// Per flat instance that ran, the epoch of its access on its thread.
    epoch: Vec<L>,
}

impl<'a, L: Lane> Checker<'a, L> {
    fn new(
        em: &'a Emitted,
        inst: &'a Instances,
        sync: &'a Sync,
        cf: &'a Conflicts,
    ) -> Checker<'a, L> {
        let total = cf.total;
        let mut on = vec![false; total];
        let mut regs = [0i64; MAX_REGS];
        for (i, running) in inst.running.iter() {
            for &u in running {
                on[cf.base[i] + u as usize] = true;
            }
        }
        let mut order = Vec::with_capacity(total);
        program_order(em, &em.tree, &mut regs, &mut order);
        let mut positions: SecondaryMap<Node, Option<(usize, usize)>> = SecondaryMap::new();
        let mut pos_of = vec![0u32; total];
        for (pos, &(i, lin)) in order.iter().enumerate() {
            let first = positions[i].map_or(pos, |p| p.0);
            positions[i] = Some((first, pos));
            pos_of[cf.base[i] + lin as usize] = pos as u32;
        }
        // About 256 snapshots over the walk, none closer than 64 instances.
        let every = (order.len() / 256).max(64);
        let signaller = redundant::compute_signallers(sync);
        let (mut waits, mut of_node) =
            (PrimaryMap::new(), SecondaryMap::<Node, Vec<WaitId>>::new());
        let (mut positive, mut offset) = (SecondaryMap::new(), SecondaryMap::new());
        let mut need = Vec::new();
        for (yi, ws) in sync.waits.iter() {
            let t = sync::trips(em, &em.nodes[yi]);
            for (k, w) in ws.iter().enumerate() {
                let id = waits.push(WaitAt {
                    node: yi,
                    index: k,
                    sem: w.sem,
                });
                of_node[yi].push(id);
                positive[id] = redundant::may_keep(w, &t);
                offset[id] = need.len();
                need.resize(need.len() + sync::instances(&t) as usize, 0);
                // (A wait runs only where its node does: elsewhere it needs nothing.)
                for &v in &inst.running[yi] {
                    sync::decode(&t, v, &mut regs);
                    if holds(&w.pred, &regs) {
                        let at = offset[id] + v as usize;
                        need[at] = w.value.eval(&regs).clamp(0, u32::MAX as i128) as u32;
                    }
                }
            }
        }
        let mut last_read = per_sem(sync, Vec::new());
        for (s, i) in signaller.iter() {
            if let Some(i) = *i {
                last_read[s] = vec![0; sync::instances(&inst.trips[i]) as usize];
            }
        }
        for (w, &WaitAt { node: yi, sem, .. }) in waits.iter() {
            let at = offset[w];
            for v in 0..sync::instances(&inst.trips[yi]) as usize {
                let k = need[at + v] as usize;
                if let Some(r) = k.checked_sub(1).and_then(|k| last_read[sem].get_mut(k)) {
                    *r = (*r).max(pos_of[cf.base[yi] + v]);
                }
            }
        }
        let mut clock = [[L::default(); THREADS]; 5];
        for (e, c) in clock.iter_mut().enumerate() {
            c[e] = L::ONE;
        }
        let nw = waits.len();
        // (Every waited semaphore has its signalling node: `sync` makes them in pairs.)
        let producer_thread = waits
            .iter()
            .map(|(w, x)| (w, signaller[x.sem].map_or(0, |i| thread(em, i))))
            .collect();
        Checker {
            em,
            inst,
            sync,
            cf,
            waits,
            of_node,
            positive,
            offset,
            raised: vec![false; need.len()],
            raised_log: Vec::new(),
            needed: SecondaryMap::new(),
            needed_log: Vec::new(),
            clean: std::collections::HashMap::new(),
            need,
            on,
            order,
            signaller,
            producer_thread,
            implied: if nw <= DENSE_MEMO {
                vec![0; nw * nw]
            } else {
                Vec::new()
            },
            implied_sparse: std::collections::HashMap::new(),
            kept: SecondaryMap::new(),
            segments: PrimaryMap::new(),
            segment_of: SecondaryMap::new(),
            st: State {
                clock,
                queue_epoch: [L::default(); DMA_QUEUES],
                prefix: per_sem(sync, Vec::new()),
                len: per_sem(sync, 0),
                stamp: per_sem(sync, 0),
                generation: 0,
                undo: Vec::new(),
                epoch: vec![L::default(); total],
            },
            valid_until: 0,
            checkpoints: vec![Checkpoint {
                pos: 0,
                clock,
                queue_epoch: [L::default(); DMA_QUEUES],
                published: per_sem(sync, 0),
            }],
            every,
            positions,
            last_read,
            read: per_sem(sync, false),
            readers: per_sem(sync, 0),
            read_now: per_sem(sync, false),
            dirty: Vec::new(),
            runs: SecondaryMap::new(),
            position: SecondaryMap::new(),
            steps: 0,
        }
    }

    /// Cuts every engine's stream into its stretches ([`redundant::compute_stretches`]).
    fn compute_segments(&mut self) {
        for (e, seg) in redundant::compute_stretches(self.em) {
            let id = self.segments.next_key();
            for (k, &i) in seg.iter().enumerate() {
                self.segment_of[i] = id.into();
                self.position[i] = k;
            }
            self.segments.push((e, seg));
        }
    }

    fn wait(&self, w: WaitId) -> &'a sync::Wait {
        let WaitAt {
            node: yi, index: k, ..
        } = self.waits[w];
        &self.sync.waits[yi][k]
    }

    /// Whether the program drops wait `b` (of node `i`) when wait `a` ran before it in the same
    /// iteration of the same body of the same engine.
    fn implies(&mut self, a: WaitId, b: WaitId, i: Node) -> bool {
        let at = a.index() * self.waits.len() + b.index();
        let dense = !self.implied.is_empty();
        if dense && self.implied[at] != 0 {
            return self.implied[at] == 2;
        }
        if let Some(&x) = self.implied_sparse.get(&(a, b)) {
            return x;
        }
        let (wa, wb) = (self.wait(a), self.wait(b));
        let x = redundant::makes_redundant(self.em, Some(self.inst), i, &self.signaller, wa, wb);
        if dense {
            self.implied[at] = 1 + u8::from(x);
        } else {
            self.implied_sparse.insert((a, b), x);
        }
        x
    }

    /// Makes `ws` the waits node `i` keeps, counting the semaphores they read; returns the
    /// waits it kept before.
    fn set_kept(&mut self, i: Node, ws: Vec<WaitId>) -> Vec<WaitId> {
        let was = std::mem::replace(&mut self.kept[i], ws);
        for &w in &was {
            let s = self.waits[w].sem;
            self.readers[s] -= 1;
            self.read_now[s] = self.readers[s] > 0;
            self.dirty.push(s);
        }
        for &w in &self.kept[i] {
            let s = self.waits[w].sem;
            self.readers[s] += 1;
            self.read_now[s] = true;
            self.dirty.push(s);
        }
        was
    }

    /// Sets [`Checker::kept`] for the nodes of engine `e`: the waits of `alive` that the program
    /// keeps, by [`redundant`]'s rule: a wait whose value is never positive is dropped,
    /// and so is one that a wait kept earlier in the same iteration of the same body of the same
    /// engine implies. (The other engines' waits do not change what it keeps on `e`.)
    fn keep(&mut self, e: Engine, alive: &Alive) {
        if self.segments.is_empty() {
            self.compute_segments();
        }
        let mut moved = Vec::new();
        for s in self.segments.keys() {
            if self.segments[s].0 == e {
                self.runs[s] = None;
                self.keep_segment(s, alive, &mut moved, &[]);
            }
        }
    }

    /// [`Checker::keep`] for stretch `s` only (the one whose kept waits change when a wait of
    /// one of its nodes does). Each node whose kept waits change is pushed on `moved` with the
    /// waits it had.
    ///
    /// `changed` are the nodes of the stretch whose waits changed (were removed or came back)
    /// since the last call for it. What a node keeps depends only on its own waits and on the
    /// waits kept before it in the stretch (by producer thread), so the pass starts at the first
    /// changed node, from the kept waits the last pass had there ([`KeptRun`]), and stops at the
    /// first node after the last changed one where the kept waits so far are again the last
    /// pass's: from there on every node keeps what it kept. A run of waits removed one at a time
    /// down a long stretch so costs what changes, not the stretch per wait.
    fn keep_segment(
        &mut self,
        s: Stretch,
        alive: &Alive,
        moved: &mut Vec<(Node, Vec<WaitId>)>,
        changed: &[Node],
    ) {
        self.clean.remove(&s);
        let nodes = std::mem::take(&mut self.segments[s].1);
        let (old, mut lens) = match self.runs[s].take() {
            Some(run) => (Some(run.lists), run.lens),
            None => (None, vec![[0; THREADS]; nodes.len() + 1]),
        };
        // Where the pass starts, and the last changed node.
        let mine = || {
            (changed.iter())
                .filter(|&&i| self.segment_of[i].expand() == Some(s))
                .map(|&i| self.position[i])
        };
        let (start, last) = match (&old, mine().min()) {
            (Some(_), Some(first)) => (first, mine().max().unwrap_or(first)),
            _ => (0, nodes.len()),
        };
        // The kept waits so far, by the thread of their producer: a wait implies another only
        // when both producers are on one thread (one queue, or one compute engine; `implies`).
        let mut known: Vec<Vec<WaitId>> = vec![Vec::new(); THREADS];
        let base = lens[start];
        if let Some(lists) = &old {
            for (t, k) in known.iter_mut().enumerate() {
                k.extend_from_slice(&lists[t][..base[t] as usize]);
            }
        }
        let mut converged = false;
        let (mut ws, mut candidates) = (Vec::new(), Vec::new());
        for (at, &i) in nodes.iter().enumerate().skip(start) {
            ws.clear();
            candidates.clear();
            candidates.extend(
                (self.of_node[i].iter())
                    .filter(|&&w| alive[w] && self.positive[w])
                    .map(|&w| (w, self.producer_thread[w])),
            );
            redundant::keep_node(
                candidates.iter().copied(),
                &mut known,
                |a, w| self.implies(a, w, i),
                &mut ws,
            );
            if ws != self.kept[i] {
                let was = self.set_kept(i, ws.clone());
                moved.push((i, was));
            }
            let now: [u32; THREADS] = std::array::from_fn(|t| known[t].len() as u32);
            let before = std::mem::replace(&mut lens[at + 1], now);
            if let Some(lists) = &old {
                if at >= last
                    && now == before
                    && (0..THREADS).all(|t| {
                        let r = base[t] as usize..now[t] as usize;
                        known[t][r.clone()] == lists[t][r]
                    })
                {
                    converged = true;
                    break;
                }
            }
        }
        let lists = match (converged, old) {
            (true, Some(lists)) => lists,
            _ => known,
        };
        self.runs[s] = Some(KeptRun { lists, lens });
        self.segments[s].1 = nodes;
    }

    /// Whether the program with the kept waits is free of races, or `None`
    /// when undecided.
    ///
    /// `changed` is the first position of the program order at which this program may differ
    /// from the one the last successful walk checked (a node whose kept waits, or whose
    /// signal, changed runs there first): the walk resumes from the latest snapshot before it,
    /// since up to there both programs compute the same clocks. A walk that finds no race
    /// makes the program the current one; one that stops leaves the records valid only up to
    /// where it started, and the caller restores the previous program.
    ///
    /// `until` is the last position at which the program may differ (the last instance of a node
    /// whose waits or signal changed). Past it, once the walk reaches a snapshot of the last walk
    /// with the same clocks, the same signals published, the same epochs, and no signal it
    /// published differently read by a later wait, the rest of the walk would be the last
    /// walk's: it stops there and keeps that walk's records (a kernel of sequential loops walks
    /// one loop or two per wait, not the rest of the kernel).
    fn race_free(&mut self, changed: usize, until: usize) -> Option<bool> {
        // Like the program, signal only the semaphores some kept wait reads (`read_now`); those
        // signalled differently from the last walk are among `dirty`.
        let (mut changed, mut until) = (changed, until);
        for &s in &self.dirty {
            if self.read_now[s] != self.read[s] {
                if let Some((first, last)) = self.signaller[s].and_then(|i| self.positions[i]) {
                    changed = changed.min(first);
                    until = until.max(last);
                }
            }
        }
        let limit = changed.min(self.valid_until);
        let keep = self.checkpoints.partition_point(|c| c.pos <= limit);
        // The last walk's records past the start, to compare with, and to restore if this walk
        // stops (valid only when that walk went to the end).
        let complete = self.valid_until == self.order.len();
        let mut old_checkpoints = self.checkpoints.split_off(keep);
        let cp = self
            .checkpoints
            .last()
            .expect("the snapshot at position 0 is never dropped");
        let start = cp.pos;
        let start_len = cp.published.clone();
        let st = &mut self.st;
        st.clock = cp.clock;
        st.queue_epoch = cp.queue_epoch;
        // Every semaphore's count is the snapshot's until the walk publishes to it.
        st.generation = st.generation.wrapping_add(1);
        if st.generation == 0 {
            st.stamp.values_mut().for_each(|x| *x = 0);
            st.generation = 1;
        }
        st.undo.clear();
        let mut walk = Walk {
            em: self.em,
            cf: self.cf,
            kept: &self.kept,
            waits: &self.waits,
            offset: &self.offset,
            need: &self.need,
            raised_log: &mut self.raised_log,
            needed_log: &mut self.needed_log,
            joined: Vec::new(),
            on: &self.on,
            signal: &self.sync.signal,
            read: &self.read_now,
            st,
            diff: Diff {
                start_len: &start_len,
                last_read: &self.last_read,
                read_after: 0,
                tail_differs: per_sem(self.sync, false),
                tails_differing: 0,
                epochs_differ: false,
                epoch_log: Vec::new(),
            },
        };
        walk.raised_log.clear();
        walk.needed_log.clear();
        let mut r = Ok(());
        // The next snapshot of the last walk to compare with.
        let mut next_old = 0;
        let mut converged = None;
        for (pos, &(i, lin)) in self.order.iter().enumerate().skip(start) {
            if pos > start && pos % self.every == 0 {
                let now = Checkpoint {
                    pos,
                    clock: walk.st.clock,
                    queue_epoch: walk.st.queue_epoch,
                    published: start_len.keys().map(|s| (s, walk.len(s))).collect(),
                };
                while next_old < old_checkpoints.len() && old_checkpoints[next_old].pos < pos {
                    next_old += 1;
                }
                let d = &walk.diff;
                if complete
                    && pos > until
                    && !d.epochs_differ
                    && d.tails_differing == 0
                    && d.read_after < pos
                    && old_checkpoints.get(next_old).is_some_and(|old| {
                        old.pos == pos
                            && old.clock == now.clock
                            && old.queue_epoch == now.queue_epoch
                            && old.published == now.published
                    })
                {
                    converged = Some(next_old);
                    break;
                }
                self.checkpoints.push(now);
            }
            r = walk.inst(i, lin as usize);
            self.steps += 1;
            if r.is_err() {
                break;
            }
        }
        let epoch_log = std::mem::take(&mut walk.diff.epoch_log);
        if let Some(k) = converged {
            // The rest is the last walk's: its snapshots and the signals it published (still
            // in `prefix` past what this walk overwrote).
            self.checkpoints.extend(old_checkpoints.drain(k..));
        } else if r.is_err() && complete {
            // Back to the last walk's records, which stay valid to the end.
            for &(b, e) in epoch_log.iter().rev() {
                self.st.epoch[b as usize] = e;
            }
            let st = &mut self.st;
            for &(s, at, old) in st.undo.iter().rev() {
                let p = &mut st.prefix[s];
                match old {
                    Some(v) => p[at as usize] = v,
                    None => {
                        p.pop();
                    }
                }
            }
            self.checkpoints.truncate(keep);
            self.checkpoints.append(&mut old_checkpoints);
            return match r {
                Err(Stop::Race) => Some(false),
                _ => None,
            };
        }
        if converged.is_none() {
            // Past the walk's end nothing is the last walk's any more.
            let st = &mut self.st;
            for (s, p) in st.prefix.iter_mut() {
                let len = match st.stamp[s] == st.generation {
                    true => st.len[s],
                    false => start_len[s],
                };
                p.truncate(len as usize);
            }
        }
        match r {
            Ok(()) => {
                for &(at, raised) in &self.raised_log {
                    self.raised[at as usize] = raised;
                }
                for &w in &self.needed_log {
                    self.needed[w] = true;
                }
                self.valid_until = self.order.len();
                for &s in &self.dirty {
                    self.read[s] = self.read_now[s];
                }
                self.dirty.clear();
                Some(true)
            }
            Err(stop) => {
                self.valid_until = start;
                self.checkpoints.truncate(keep);
                match stop {
                    Stop::Race => Some(false),
                    Stop::Undecided => None,
                }
            }
        }
    }

    /// The instances of wait `w` (one per instance of its node), as indices of `need`.
    fn instances_of(&self, w: WaitId) -> std::ops::Range<usize> {
        let i = self.waits[w].node;
        let at = self.offset[w];
        at..at + sync::instances(&self.inst.trips[i]) as usize
    }

    /// Whether wait `w` is in the current program and its join raised no clock at any instance
    /// (the current program computes the same clocks without it).
    fn orders_nothing(&self, w: WaitId) -> bool {
        self.kept[self.waits[w].node].contains(&w)
            && !self.raised[self.instances_of(w)].contains(&true)
    }

    /// Whether wait `w` stays whatever the others do: the program keeps it, a walk found it
    /// needed ([`Checker::needed`]), and no wait it could imply is waiting in its stretch to
    /// come back in its place (every live wait there is kept).
    fn certainly_needed(&mut self, w: WaitId, alive: &Alive) -> bool {
        let i = self.waits[w].node;
        if !alive[w] || !self.needed[w] || !self.kept[i].contains(&w) {
            return false;
        }
        if self.segments.is_empty() {
            self.compute_segments();
        }
        let s = self.segment_of[i].expand();
        if let Some(&clean) = s.and_then(|s| self.clean.get(&s)) {
            return clean;
        }
        let nodes: &[Node] = match s {
            None => std::slice::from_ref(&i),
            Some(s) => &self.segments[s].1,
        };
        let clean = nodes.iter().all(|&j| {
            self.of_node[j]
                .iter()
                .all(|&x| !alive[x] || !self.positive[x] || self.kept[j].contains(&x))
        });
        if let Some(s) = s {
            self.clean.insert(s, clean);
        }
        clean
    }

    /// Removes the waits `trial` when the program stays free of races without them, and says
    /// whether it did (otherwise the program is as it was).
    ///
    /// Most removals need no walk. A wait the program already drops (an earlier wait of its
    /// engine implies it) is not in the program, so removing it changes nothing. Nor does
    /// removing waits whose joins raised no clock ([`Checker::orders_nothing`]): a wait that
    /// the program keeps in their place was dropped because one of them implied it, so it
    /// joins no more than that one did and raises nothing either.
    fn try_remove(&mut self, trial: &[WaitId], alive: &mut Alive) -> bool {
        if self.segments.is_empty() {
            self.compute_segments();
        }
        // Only the kept waits of the trial's stretches can change.
        let mut segs: Vec<Stretch> = trial
            .iter()
            .filter_map(|&x| self.segment_of[self.waits[x].node].expand())
            .collect();
        segs.sort_unstable();
        segs.dedup();
        let silent = trial
            .iter()
            .all(|&x| !self.kept[self.waits[x].node].contains(&x) || self.orders_nothing(x));
        for &x in trial {
            alive[x] = false;
        }
        let mut moved = Vec::new();
        let changed: Vec<Node> = trial.iter().map(|&x| self.waits[x].node).collect();
        for &s in &segs {
            self.keep_segment(s, alive, &mut moved, &changed);
        }
        if moved.is_empty() {
            return true;
        }
        if silent {
            for (i, was) in &moved {
                let back: Vec<WaitId> = (self.kept[*i].iter())
                    .filter(|x| !was.contains(x))
                    .copied()
                    .collect();
                for x in back {
                    let r = self.instances_of(x);
                    self.raised[r].fill(false);
                }
            }
            return true;
        }
        let first = moved
            .iter()
            .filter_map(|&(i, _)| self.positions[i].map(|p| p.0))
            .min()
            .unwrap_or(self.order.len());
        let until = moved
            .iter()
            .filter_map(|&(i, _)| self.positions[i].map(|p| p.1))
            .max()
            .unwrap_or(0);
        if self.race_free(first, until) == Some(true) {
            return true;
        }
        for &x in trial {
            alive[x] = true;
        }
        for (i, was) in moved {
            self.set_kept(i, was);
        }
        // (The stretches keep what they kept before the trial: their next pass starts over.)
        for &s in &segs {
            self.runs[s] = None;
        }
        false
    }
}

/// Appends the instances of `tree` to `out` in program order (the loops enclosing `tree` at the
/// values of `regs`).
fn program_order(
    em: &Emitted,
    tree: &[ENode],
    regs: &mut [i64; MAX_REGS],
    out: &mut Vec<(Node, u32)>,
) {
    for t in tree {
        match t {
            ENode::Loop(l, body) => {
                let (trip, depth) = em.loops[*l];
                for it in 0..trip as i64 {
                    regs[depth] = it;
                    program_order(em, body, regs, out);
                }
            }
            ENode::Inst(i) => {
                let node = &em.nodes[*i];
                let lin = node
                    .loops
                    .iter()
                    .enumerate()
                    .fold(0i64, |acc, (d, &l)| acc * em.loops[l].0 as i64 + regs[d]);
                out.push((*i, lin as u32));
            }
        }
    }
}

/// One pass of clock propagation over the instances in program order.
struct Walk<'a, L: Copy> {
    em: &'a Emitted,
    cf: &'a Conflicts,
    /// Per node, the numbers of the waits the program has before it.
    kept: &'a SecondaryMap<Node, Vec<WaitId>>,
    waits: &'a PrimaryMap<WaitId, WaitAt>,
    offset: &'a SecondaryMap<WaitId, usize>,
    need: &'a [u32],
    /// Where the walk records, per wait instance it runs, whether the join raised the clock.
    raised_log: &'a mut Vec<(u32, bool)>,
    /// Where the walk records the waits it found needed ([`Checker::needed`]).
    needed_log: &'a mut Vec<WaitId>,
    /// The waits the current instance joined, each with the clock it joined.
    joined: Vec<(WaitId, Vc<L>)>,
    on: &'a [bool],
    /// The semaphore each node signals, and which semaphores a kept wait reads (the others are
    /// not signalled).
    signal: &'a SecondaryMap<Node, PackedOption<Sem>>,
    read: &'a SecondaryMap<Sem, bool>,
    st: &'a mut State<L>,
    diff: Diff<'a, L>,
}

/// How a walk differs from the last one so far ([`Checker::race_free`]).
struct Diff<'a, L> {
    /// Per semaphore, how many signals the last walk had published at the start of this one
    /// (the signals it published from there on are still in `prefix` past this walk's).
    start_len: &'a SecondaryMap<Sem, u32>,
    /// Per semaphore and signal, the last position of a wait instance that may read it.
    last_read: &'a SecondaryMap<Sem, Vec<u32>>,
    /// The last position that may read a signal this walk published differently.
    read_after: usize,
    /// Per semaphore, whether its latest signal differs from the last walk's (later ones, joined
    /// with it, would too), and how many do.
    tail_differs: SecondaryMap<Sem, bool>,
    tails_differing: usize,
    /// Whether an instance's epoch differs from the last walk's.
    epochs_differ: bool,
    /// The epochs this walk overwrote, to restore when it stops.
    epoch_log: Vec<(u32, L)>,
}

impl<L: Lane> Walk<'_, L> {
    /// How many signals of `sem` this walk has published, counting those before its start.
    fn len(&self, sem: Sem) -> u32 {
        match self.st.stamp[sem] == self.st.generation {
            true => self.st.len[sem],
            false => self.diff.start_len[sem],
        }
    }

    /// The semaphore node `i` signals in this program, if any.
    fn signal(&self, i: Node) -> Option<Sem> {
        self.signal[i].expand().filter(|&s| self.read[s])
    }

    fn publish(&mut self, sem: Sem, c: Vc<L>) {
        let at = self.len(sem) as usize;
        let st = &mut *self.st;
        st.stamp[sem] = st.generation;
        st.len[sem] = at as u32 + 1;
        let p = &mut st.prefix[sem];
        let mut v = c;
        if let Some(last) = at.checked_sub(1).map(|k| &p[k]) {
            join(&mut v, last);
        }
        // The last walk's signal at this count, which this one replaces.
        let old = p.get(at).copied();
        st.undo.push((sem, at as u32, old));
        match at < p.len() {
            true => p[at] = v,
            false => p.push(v),
        }
        let d = &mut self.diff;
        let differs = old != Some(v);
        if differs {
            let read = d.last_read[sem].get(at).map_or(usize::MAX, |&r| r as usize);
            d.read_after = d.read_after.max(read);
        }
        if differs != d.tail_differs[sem] {
            d.tail_differs[sem] = differs;
            if differs {
                d.tails_differing += 1;
            } else {
                d.tails_differing -= 1;
            }
        }
    }

    /// Sets instance `b`'s epoch, noting whether it differs from the last walk's.
    fn set_epoch(&mut self, b: usize, e: L) {
        let old = std::mem::replace(&mut self.st.epoch[b], e);
        self.diff.epochs_differ |= old != e;
        self.diff.epoch_log.push((b as u32, old));
    }

    /// Whether instance `b`, whose thread's clock is `c`, happens after every instance it must.
    /// Also records the waits that alone order `b` after one of its conflicting instances
    /// (`before`: its engine's clock before its waits; [`Checker::needed`]).
    fn check(&mut self, b: usize, c: &Vc<L>, before: &Vc<L>) -> Result<(), Stop> {
        let (s, e) = (self.cf.start[b] as usize, self.cf.start[b + 1] as usize);
        for &(t, a) in &self.cf.after[s..e] {
            let (t, epoch) = (t as usize, self.st.epoch[a as usize]);
            if epoch > c[t] {
                return Err(Stop::Race);
            }
            if before[t] >= epoch {
                continue;
            }
            // The only wait whose clock reaches the epoch.
            let mut by = (self.joined.iter()).filter(|(_, c)| c[t] >= epoch);
            if let (Some(&(w, _)), None) = (by.next(), by.next()) {
                self.needed_log.push(w);
            }
        }
        Ok(())
    }

    /// Instance `lin` of node `i`: its waits, its access, its signal.
    fn inst(&mut self, i: Node, lin: usize) -> Result<(), Stop> {
        let node = &self.em.nodes[i];
        let ei = node.engine.index();
        let b = self.cf.base[i] + lin;
        let before = self.st.clock[ei];
        self.joined.clear();
        for &w in &self.kept[i] {
            let at = self.offset[w] + lin;
            let need = self.need[at] as usize;
            if need == 0 {
                continue;
            }
            let s = self.waits[w].sem;
            if need > self.len(s) as usize {
                return Err(Stop::Undecided);
            }
            let c = self.st.prefix[s][need - 1];
            let raised = join_raises(&mut self.st.clock[ei], &c);
            self.raised_log.push((at as u32, raised));
            self.joined.push((w, c));
        }
        let on = self.on[b];
        let sp = Engine::Sp.index();
        match node.queue() {
            Some(q) => {
                let q = q as usize;
                if on {
                    self.st.queue_epoch[q].incr();
                    let mut c = self.st.clock[sp];
                    c[5 + q] = self.st.queue_epoch[q];
                    self.set_epoch(b, self.st.queue_epoch[q]);
                    self.check(b, &c, &before)?;
                    if let Some(s) = self.signal(i) {
                        self.publish(s, c);
                    }
                } else if let Some(s) = self.signal(i) {
                    // A predicated-off transfer publishes `sp`'s clock, taking no epoch.
                    self.publish(s, self.st.clock[sp]);
                }
            }
            None => {
                if on {
                    self.set_epoch(b, self.st.clock[ei][ei]);
                    let c = self.st.clock[ei];
                    self.check(b, &c, &before)?;
                }
                if let Some(s) = self.signal(i) {
                    // Publish, then advance the engine's own epoch.
                    self.publish(s, self.st.clock[ei]);
                    self.st.clock[ei][ei].incr();
                }
            }
        }
        Ok(())
    }
}

/// Drops every wait of `sync` that the others imply (see the module doc): one at a time, in
/// consumer order, a wait is removed when the program without it provably has no race. Returns
/// the number removed.
pub fn compute_pruned_waits(em: &Emitted, sync: &mut Sync) -> usize {
    let dynamic: u64 = em
        .nodes
        .values()
        .map(|n| sync::instances(&sync::trips(em, n)) as u64)
        .sum();
    let waits: u64 = sync.waits.values().map(|w| w.len() as u64).sum();
    let tabulated: u64 = (em.nodes.iter())
        .map(|(i, n)| sync.waits[i].len() as u64 * sync::instances(&sync::trips(em, n)) as u64)
        .sum();
    if waits == 0 || dynamic.max(tabulated) > MAX_INSTANCES {
        return 0;
    }
    let inst = match sync.instances.clone() {
        Some(inst) => inst,
        None => std::sync::Arc::new(compute_instances(em)),
    };
    let Some(cf) = compute_conflicts(em, &inst, sync) else {
        return 0;
    };
    // Epochs count instances: below `u16::MAX` instances, every clock fits `u16`s.
    let alive = if cf.total < usize::from(u16::MAX) - 1 {
        prune::<u16>(em, &inst, sync, &cf)
    } else {
        prune::<u32>(em, &inst, sync, &cf)
    };
    let Some(alive) = alive else {
        return 0;
    };
    let mut it = alive.values();
    let mut pruned = 0;
    for ws in sync.waits.values_mut() {
        ws.retain(|_| {
            let keep = *it.next().expect("one flag per wait");
            pruned += usize::from(!keep);
            keep
        });
    }
    pruned
}

/// The greedy pruning of [`compute_pruned_waits`]: which waits stay, or `None` when the
/// program with every wait is not provably race free.
fn prune<L: Lane>(em: &Emitted, inst: &Instances, sync: &Sync, cf: &Conflicts) -> Option<Alive> {
    let mut ck = Checker::<L>::new(em, inst, sync, cf);
    let mut alive = SecondaryMap::with_default(true);
    alive.resize(ck.waits.len());
    for e in Engine::ALL {
        ck.keep(e, &alive);
    }
    if ck.race_free(0, ck.order.len()) != Some(true) {
        return None;
    }
    // The waits are tried in order, a run at a time: the run grows while its removal keeps
    // the program race free and shrinks to one wait when it does not. Waits only add
    // happens-before edges, so a set whose removal is race free is one that removing wait by
    // wait would remove too, and the result is the wait-by-wait greedy's. A wait known to be
    // needed stays, and the run goes on past it.
    let (mut w, mut run) = (0, 1);
    // (Past the budget, the waits not yet tried stay: the program is race free as it is.)
    let nw = ck.waits.len();
    while w < nw && ck.steps <= PRUNE_BUDGET {
        let end = (w + run).min(nw);
        let trial: Vec<WaitId> = (w..end)
            .map(WaitId::new)
            .filter(|&x| !ck.certainly_needed(x, &alive))
            .collect();
        if trial.is_empty() {
            w = end;
        } else if ck.try_remove(&trial, &mut alive) {
            w = end;
            run *= 2;
        } else if trial.len() == 1 {
            w = end;
        } else {
            // The first wait of the run that raised a clock is the likely culprit: the run
            // shrinks to end with it when it comes first (it is tried alone, after the
            // certainly needed waits before it), or just before it (waits that raised nothing
            // go without a walk); otherwise it halves.
            let first = trial
                .iter()
                .copied()
                .find(|&x| ck.kept[ck.waits[x].node].contains(&x) && !ck.orders_nothing(x));
            run = match first {
                Some(f) if f == trial[0] => f.index() - w + 1,
                Some(f) => f.index() - w,
                None => run / 2,
            };
        }
    }
    if cfg!(debug_assertions) {
        check_kept(&mut ck, &alive);
    }
    Some(alive)
}

/// Debug builds: the waits [`Checker::keep`] says the program has, computed stretch by stretch
/// as waits come and go, are those [`redundant::drop_redundant_waits`] keeps, computed at once.
fn check_kept<L: Lane>(ck: &mut Checker<'_, L>, alive: &Alive) {
    let mut pruned = ck.sync.clone();
    let mut it = alive.values();
    for ws in pruned.waits.values_mut() {
        ws.retain(|_| *it.next().expect("one flag per wait"));
    }
    redundant::drop_redundant_waits(ck.em, &mut pruned);
    for e in Engine::ALL {
        ck.keep(e, alive);
    }
    for i in ck.em.nodes.keys() {
        let ws = &ck.kept[i];
        let want: Vec<_> = ws.iter().map(|&w| ck.wait(w)).map(key).collect();
        let got: Vec<_> = pruned.waits[i].iter().map(key).collect();
        assert_eq!(
            got, want,
            "node {i}: hb's kept waits are the redundant-wait rule's"
        );
    }
}

/// What tells two waits of one node apart.
fn key(w: &sync::Wait) -> (Sem, &Expr, &[Cmp]) {
    (w.sem, &w.value, &w.pred[..])
}
