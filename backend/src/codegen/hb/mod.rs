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
//! redoes their stretch from the first changed node only until no wait kept differently can
//! change what a later node keeps (`kept.rs`), so a long straight-line stretch costs what
//! changes; each wait is compared only with the kept waits whose targets are at or after its
//! own ([`crate::codegen::targets`]), not with every wait kept before it. Debug builds check
//! the result against [`crate::codegen::redundant::drop_redundant_waits`] computed at once.
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
//! **Walks step over the running instances only** (`walk.rs`, `places.rs`): a
//! predicated-off instance accesses nothing and runs no wait, and an engine's clock moves only
//! at its running instances, so its signal is the clock its engine's latest running instance
//! before it left (a transfer's, `sp`'s joined with its node's latest queue epoch), read when a
//! wait asks for it. An epoch counts the running instances of its thread, the same in every
//! walk (the relation is the one above, numbered differently). A loop spread over `S` stages
//! runs `T + S` iterations of which each node runs in `T`: the walks cost the running
//! instances, not the `(T + S) x` body ones.
//!
//! **Walks are memory-bound**: each instance joins published clocks at random. A kernel of
//! fewer than `u16::MAX` running instances walks with `u16` components ([`Lane`]): half the
//! bytes. A walk resumes from the latest snapshot before the first instance that changed, and
//! goes on past the last instance of every node whose waits changed; from there it stops at
//! the first snapshot of the previous walk that it matches (same clocks, and no clock left
//! differently that a later wait may read): the rest would be the previous walk's, whose
//! records stay. In a kernel of sequential loops a walk covers the loop that changed and the
//! next, so the pruning is linear in the kernel; in one long loop it still goes to the end. A
//! walk that finds a race puts the previous walk's records back (the clocks it changed are
//! logged), so its cost is what it walks, not the kernel's size.
//!
//! One part per file: `clock` (vector clocks), `conflicts` (the instances each must
//! happen after), `checker` (the checks' state and the trials), `kept` (the waits the
//! program keeps), `places` (where the instances are in program order), `walk` (the clock
//! propagation); this file drives the greedy pruning.
//!
//! Invariants: `em` is the kernel the waits were computed on (the trip-clamped copy when there
//! is one). The decision for every wait is exact (a wait is removed exactly when the race
//! detector, simulating the program without it, would report no race), except that a kernel
//! past [`MAX_INSTANCES`], or whose conflicts take more than [`SEARCH_BUDGET`] footprint checks
//! to find, keeps all its waits, and one whose walks and kept-wait passes take more than
//! [`prune_budget`] steps (linear in its waits) keeps the waits not yet tried (correct, maybe
//! redundant). No example or `tests/good` kernel comes near it (at most 2.3% of its budget:
//! `matmul_blocked_stages.nk` on `default`), nor do issue 32's scaling kernels (256 sequential
//! loops: 5.3%; a body of 1,024 statements: 6.6%; 300 to 2,000 loads in one body). 5,000 loads
//! in one body whose tiles overflow SBUF still reach it (65,002 waits over 10,004 instances):
//! each transfer waits for the previous iteration's transfers that shared its address, in no
//! order along the body, so a kept wait that goes may change what a wait at the end of the
//! body keeps ([`crate::codegen::targets::Reach`]), and each such trial is a pass over the
//! whole body.

mod checker;
mod clock;
mod conflicts;
mod kept;
mod places;
mod walk;

use crate::codegen::emit::Emitted;
use crate::codegen::entities::{Node, Sem, WaitId};
use crate::codegen::footprints::{compute_instances, Instances};
use crate::codegen::redundant;
use crate::codegen::sync::{self, Sync};
use checker::Checker;
use clock::Lane;
use conflicts::{compute_conflicts, Conflicts};
use cranelift_entity::{EntityRef, SecondaryMap};
use runtime_sim::isa::{Cmp, Engine, Expr};
use runtime_sim::machine::DMA_QUEUES;

/// The most footprint checks spent finding the conflicting instances; past it nothing is pruned.
pub const SEARCH_BUDGET: u64 = 50_000_000;

/// The most instance steps the walks take (the former limit on instances times waits, each
/// wait then costing a walk to the end), plus the waits the kept-wait passes visit
/// (`kept.rs`); past it the waits not yet tried are kept.
pub const PRUNE_BUDGET: u64 = 200_000_000;

/// The steps every kernel may take whatever its size ([`prune_budget`]): 50 times what the
/// largest example takes (`matmul.nk` on `default`: 80,654 steps for 355 waits).
pub const PRUNE_FLOOR: u64 = 4_000_000;

/// The steps each wait adds to [`PRUNE_FLOOR`] ([`prune_budget`]).
pub const PRUNE_PER_WAIT: u64 = 50;

/// The steps the pruning of a kernel of `waits` waits may take: linear in the program, so that
/// a body of thousands of transfers compiles in seconds (issue 32), capped at [`PRUNE_BUDGET`].
pub fn prune_budget(waits: usize) -> u64 {
    (PRUNE_FLOOR + PRUNE_PER_WAIT * waits as u64).min(PRUNE_BUDGET)
}

/// The most instances, and the most (wait, instance) pairs, the pruning tabulates; past it every
/// wait is kept.
pub const MAX_INSTANCES: u64 = 1 << 22;

/// The most waits whose implications are memoised in a dense table (`DENSE_MEMO²` bytes).
const DENSE_MEMO: usize = 2048;

/// Threads: the five engines, then the queues.
const THREADS: usize = 5 + DMA_QUEUES;

/// The thread whose events are a node's accesses: its engine, or its transfer's queue.
fn thread(em: &Emitted, i: Node) -> usize {
    sync::thread(&em.nodes[i])
}

/// Per wait, whether it is still in the program's waits (not pruned).
type Alive = SecondaryMap<WaitId, bool>;

/// Why a check stopped.
enum Stop {
    /// Two conflicting instances are not ordered: the later one is an instance of this node.
    Race(Node),
    /// A wait asks for a signal not yet given in program order.
    Undecided,
}

/// What the pruning of a kernel walked ([`compute_pruned_waits_counted`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walked {
    /// The kernel's instances, running or predicated off.
    pub instances: u64,
    /// Its running instances.
    pub running: u64,
    /// The walks taken.
    pub walks: u64,
    /// The instances those walks stepped over, all together.
    pub steps: u64,
}

/// Drops every wait of `sync` that the others imply (see the module doc): one at a time, in
/// consumer order, a wait is removed when the program without it provably has no race. Returns
/// the number removed.
pub fn compute_pruned_waits(em: &Emitted, sync: &mut Sync) -> usize {
    compute_pruned_waits_counted(em, sync).0
}

/// [`compute_pruned_waits`], with what its walks stepped over (`Walked::walks` is 0 when it
/// kept every wait without walking).
pub fn compute_pruned_waits_counted(em: &Emitted, sync: &mut Sync) -> (usize, Walked) {
    let dynamic: u64 = em
        .nodes
        .values()
        .map(|n| sync::instances(&sync::trips(em, n)) as u64)
        .sum();
    let waits: u64 = sync.waits.values().map(|w| w.len() as u64).sum();
    let tabulated: u64 = (em.nodes.iter())
        .map(|(i, n)| sync.waits[i].len() as u64 * sync::instances(&sync::trips(em, n)) as u64)
        .sum();
    let mut walked = Walked {
        instances: dynamic,
        ..Walked::default()
    };
    if waits == 0 || dynamic.max(tabulated) > MAX_INSTANCES {
        return (0, walked);
    }
    let inst = match sync.instances.clone() {
        Some(inst) => inst,
        None => std::sync::Arc::new(compute_instances(em)),
    };
    let Some(cf) = compute_conflicts(em, &inst, sync) else {
        return (0, walked);
    };
    // Epochs count running instances: below `u16::MAX` of them, every clock fits `u16`s.
    let running: usize = inst.running.values().map(Vec::len).sum();
    walked.running = running as u64;
    let alive = if running < usize::from(u16::MAX) - 1 {
        prune::<u16>(em, &inst, sync, &cf, &mut walked)
    } else {
        prune::<u32>(em, &inst, sync, &cf, &mut walked)
    };
    let Some(alive) = alive else {
        return (0, walked);
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
    (pruned, walked)
}

/// The greedy pruning of [`compute_pruned_waits`]: which waits stay, or `None` when the
/// program with every wait is not provably race free. Counts its walks in `walked`.
fn prune<L: Lane>(
    em: &Emitted,
    inst: &Instances,
    sync: &Sync,
    cf: &Conflicts,
    walked: &mut Walked,
) -> Option<Alive> {
    let mut ck = Checker::<L>::new(em, inst, sync, cf);
    let alive = prune_with(&mut ck);
    walked.walks = ck.walks;
    walked.steps = ck.walked;
    alive
}

/// [`prune`] with the checks `ck`.
fn prune_with<L: Lane>(ck: &mut Checker<'_, L>) -> Option<Alive> {
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
    // The wait a failed run was cut before, to be tried alone next.
    let mut suspect: Option<WaitId> = None;
    // (Past the budget, the waits not yet tried stay: the program is race free as it is.)
    let nw = ck.waits.len();
    let budget = prune_budget(nw);
    while w < nw && ck.steps <= budget {
        let end = (w + run).min(nw);
        let trial: Vec<WaitId> = (w..end)
            .map(WaitId::new)
            .filter(|&x| !ck.certainly_needed(x, &alive))
            .collect();
        if trial.is_empty() {
            w = end;
        } else if ck.try_remove(&trial, &mut alive) {
            w = end;
            run = match suspect.take() {
                Some(x) if x.index() == end => 1,
                _ => run * 2,
            };
        } else if trial.len() == 1 {
            w = end;
        } else {
            // The likely culprit is a wait of the node whose instance the walk found racing,
            // or else the first wait of the run that raised a clock: the run shrinks to end
            // with it when it comes first (it is tried alone, after the certainly needed waits
            // before it), or just before it (it is tried alone next: the waits before it go
            // with one walk, not one per doubling); otherwise it halves. (Any choice of runs
            // gives the wait-by-wait greedy's result; this one saves walks.)
            let raced = ck
                .race
                .and_then(|y| trial.iter().copied().find(|&x| ck.waits[x].node == y));
            let first = raced.or_else(|| {
                trial
                    .iter()
                    .copied()
                    .find(|&x| ck.kept[ck.waits[x].node].contains(&x) && !ck.orders_nothing(x))
            });
            suspect = first.filter(|&f| f != trial[0]);
            run = match first {
                Some(f) if f == trial[0] => f.index() - w + 1,
                Some(f) => f.index() - w,
                None => run / 2,
            };
        }
    }
    if cfg!(debug_assertions) {
        check_kept(ck, &alive);
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
