//! The state of the happens-before pruning ([`crate::codegen::hb`]): [`Checker`], what the
//! checks share (the waits numbered in pruning order, what each asks for at each instance, the
//! program order of the instances, the latest walk's records and snapshots), its construction,
//! and the trials that remove waits ([`Checker::try_remove`]) with the decisions that need no
//! walk ([`Checker::orders_nothing`], [`Checker::certainly_needed`]).
//!
//! Invariants: `order` lists every running instance of the kernel in program order, a
//! topological order of the happens-before relation (a predicated-off instance accesses nothing
//! and joins nothing: the walks skip it, and its signal is the clock of its engine there,
//! [`Checker::src`]); the records (`raised`, `needed`, the snapshots, the clocks in `st`) are
//! those of the last walk that found no race, valid up to `valid_until`. A trial that fails
//! leaves the program (the live and kept waits) as it was.

use super::clock::{Lane, Vc};
use super::conflicts::Conflicts;
use super::places::{Places, NONE};
use super::{thread, Alive, DENSE_MEMO, THREADS};
use crate::codegen::emit::Emitted;
use crate::codegen::entities::{Node, Sem, Stretch, WaitId};
use crate::codegen::footprints::Instances;
use crate::codegen::redundant;
use crate::codegen::sync::{self, Sync};
use crate::codegen::targets::{Known, Order, Reach, Reference};
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{PrimaryMap, SecondaryMap};
use runtime_sim::isa::{Cmp, Engine, MAX_REGS};
use std::rc::Rc;

/// What the checks share: the kernel's waits numbered in pruning order (`(node, index)` in
/// `sync.waits`), what each asks for at each instance, and the implications between waits that
/// [`crate::codegen::redundant`] drops some by (memoised).
pub(super) struct Checker<'a, L: Lane> {
    pub(super) em: &'a Emitted,
    pub(super) inst: &'a Instances,
    pub(super) sync: &'a Sync,
    pub(super) cf: &'a Conflicts,
    /// The waits, in pruning order.
    pub(super) waits: PrimaryMap<WaitId, WaitAt>,
    /// Per node, its waits.
    pub(super) of_node: SecondaryMap<Node, Vec<WaitId>>,
    /// Per wait, the class of its guard ([`redundant::GuardClasses`]), once asked for
    /// (`u32::MAX`: not yet; only waits compared through an index ask).
    pub(super) guard_class: SecondaryMap<WaitId, u32>,
    pub(super) classes: redundant::GuardClasses<'a>,
    /// Per wait, whether the program may keep it ([`redundant::may_keep`]).
    pub(super) positive: SecondaryMap<WaitId, bool>,
    /// Per wait, `offset[w] + v` indexes `need` for instance `v` of its node.
    pub(super) offset: SecondaryMap<WaitId, usize>,
    /// The signals a wait needs at an instance (0: it is off, or satisfied at once;
    /// [`UNDECIDED`]: it asks for a signal not given before it in program order).
    pub(super) need: Vec<u32>,
    /// Per wait instance (indexed like `need`), whether its join raised its engine's clock in
    /// the current program: a kept wait that raised nothing anywhere orders nothing, and removing
    /// it leaves every clock as it was ([`Checker::orders_nothing`]). Written by the walks that
    /// succeed, and kept exact by [`compute_pruned_waits`](super::compute_pruned_waits) when it removes waits without a walk.
    pub(super) raised: Vec<bool>,
    /// The `raised` entries the walk under way computed (committed when it finds no race).
    pub(super) raised_log: Vec<(u32, bool)>,
    /// Per wait, whether a walk of a program that held it found an instance whose only
    /// ordering after a conflicting instance came through it: no engine clock before the
    /// node's waits, and no other wait of the instance, reached that instance's epoch. Removing
    /// waits only lowers clocks, so every later program without it (and with no wait that it
    /// implied put back in its place) has that race ([`compute_pruned_waits`](super::compute_pruned_waits)).
    pub(super) needed: SecondaryMap<WaitId, bool>,
    /// The waits the walk under way found needed (committed when it finds no race).
    pub(super) needed_log: Vec<WaitId>,
    /// Per stretch, whether every live wait in it is kept, as last computed since its kept
    /// waits changed ([`Checker::certainly_needed`]).
    pub(super) clean: std::collections::HashMap<Stretch, bool>,
    /// Every running instance in program order: (node, linear iteration index). Its index
    /// there is its position.
    pub(super) order: Vec<(Node, u32)>,
    /// Where each instance is in program order ([`Places`]): among other things, per instance
    /// (running or not), the position of the latest running instance of its node's engine at or
    /// before it ([`Places::src`]): an instance's signal is that engine's clock there
    /// ([`State::hclock`]), since an engine's clock moves only at its running instances.
    pub(super) places: Places,
    /// Per running flat instance, the epoch of its access on its thread: it is the how-manieth
    /// running instance of that thread (whatever the waits, so no walk changes it).
    pub(super) epoch: Vec<L>,
    /// Per position, the last position of a wait instance (any, kept or not) that may read a
    /// signal whose clock is the one the instance there leaves ([`Checker::src`]): when that
    /// clock changes, no walk may stop before it ([`Diff`](super::walk::Diff)).
    pub(super) reads_after: Vec<u32>,
    /// The node signalling each semaphore.
    pub(super) signaller: SecondaryMap<Sem, Option<Node>>,
    /// Per wait, the thread of the node it waits for ([`thread`]).
    pub(super) producer_thread: SecondaryMap<WaitId, usize>,
    /// Whether a kept wait (first) makes a later one (second) redundant ([`redundant`])
    /// (memoised: 0 unknown, 1 no, 2 yes), at `first * waits + second` (up to [`DENSE_MEMO`]
    /// waits; past it in `implied_sparse`).
    pub(super) implied: Vec<u8>,
    pub(super) implied_sparse: std::collections::HashMap<(WaitId, WaitId), bool>,
    /// Per node, the waits the program has before it (see [`Checker::keep`]).
    pub(super) kept: SecondaryMap<Node, Vec<WaitId>>,
    /// The stretches of one engine's stream within which the program remembers the waits it
    /// kept (a body of a loop, cut by the nested loops that hold work of the engine), each with
    /// its engine; and the stretch of each node (`usize::MAX`: none).
    pub(super) segments: PrimaryMap<Stretch, (Engine, Vec<Node>)>,
    pub(super) segment_of: SecondaryMap<Node, PackedOption<Stretch>>,
    /// The clocks of the latest walk. Its records (the clocks the instances before position
    /// `valid_until` of `order` leave) are those a whole walk of the current program would
    /// compute; see [`Checker::race_free`].
    pub(super) st: State<L>,
    pub(super) valid_until: usize,
    /// Snapshots of the walk's state before some positions of `order` (increasing, each at
    /// most `valid_until`; the first at 0), every `every` positions.
    pub(super) checkpoints: Vec<Checkpoint<L>>,
    pub(super) every: usize,
    /// Per node with an instance, the positions in `order` of its first and last.
    pub(super) positions: SecondaryMap<Node, Option<(usize, usize)>>,
    /// Per stretch, what [`Checker::keep_segment`] last computed there ([`KeptRun`]; `None`:
    /// to compute from the stretch's start).
    pub(super) runs: SecondaryMap<Stretch, Option<KeptRun>>,
    /// Per node, its position in its stretch.
    pub(super) position: SecondaryMap<Node, usize>,
    /// The kernel's loops' first nodes, for the targets of waits ([`Order`]).
    pub(super) target_order: Order,
    /// Per wait, its reference instance and target there
    /// ([`crate::codegen::targets::reference`]), once
    /// computed (`None`: not yet).
    pub(super) reference: SecondaryMap<WaitId, Option<Option<Rc<Reference>>>>,
    /// Per stretch, how far a change of its kept waits reaches ([`Reach`]; once computed).
    pub(super) reach: SecondaryMap<Stretch, Option<Reach>>,
    /// The instance steps walked and kept-wait comparisons made so far
    /// ([`prune_budget`](super::prune_budget)).
    pub(super) steps: u64,
    /// The node of the racing instance the last walk that found a race stopped at.
    pub(super) race: Option<Node>,
    /// The walks taken so far, and the instances they stepped over (tests count them).
    pub(super) walks: u64,
    pub(super) walked: u64,
}

/// [`Checker::need`] of a wait instance that asks for a signal not given before it.
pub(super) const UNDECIDED: u32 = u32::MAX;

/// A wait as the checks see it: its node, its index in the node's waits, its semaphore.
#[derive(Clone, Copy)]
pub(super) struct WaitAt {
    pub(super) node: Node,
    pub(super) index: usize,
    pub(super) sem: Sem,
}

/// What [`Checker::keep_segment`] computed for one stretch: per producer thread, the waits
/// kept in the stretch in node order (with their index by target, [`Known`]), and per
/// position `k` of the stretch (up to its length), how many of each thread's were kept before
/// its `k`th node.
#[derive(Clone)]
pub(super) struct KeptRun {
    pub(super) known: Known<WaitId>,
    pub(super) lens: Vec<[u32; THREADS]>,
}

/// The state of a walk before one position of the program order: the engines' clocks (the
/// epochs are the same in every walk, and the clocks the instances before it leave are in
/// [`State::hclock`]).
pub(super) struct Checkpoint<L> {
    pub(super) pos: usize,
    pub(super) clock: [Vc<L>; 5],
}

/// The state of one pass of clock propagation over the running instances in program order.
pub(super) struct State<L: Copy> {
    /// The engines' clocks.
    pub(super) clock: [Vc<L>; 5],
    /// Per position, the clock of its instance's engine after it (a transfer's: `sp`'s after
    /// its waits): the current walk's before where it is, the last walk's past it (a walk
    /// overwrites them in place, logging in `undo` those it changed).
    pub(super) hclock: Vec<Vc<L>>,
    /// The entries of `hclock` the current walk changed, with their last value.
    pub(super) undo: Vec<(u32, Vc<L>)>,
}

impl<'a, L: Lane> Checker<'a, L> {
    /// The checks of `em`'s waits in `sync`, with the conflicts `cf`, before any walk: no wait
    /// kept yet ([`Checker::keep`] sets them), and the walk's records empty.
    pub(super) fn new(
        em: &'a Emitted,
        inst: &'a Instances,
        sync: &'a Sync,
        cf: &'a Conflicts,
    ) -> Checker<'a, L> {
        let mut regs = [0i64; MAX_REGS];
        let mut places = Places::new(em, inst, cf);
        let order = std::mem::take(&mut places.order);
        let epoch = compute_epochs(em, cf, &order);
        let positions = order_positions(&order);
        let live = order.len();
        // About 256 snapshots over the walk, none closer than 64 instances.
        let every = (order.len() / 256).max(64);
        let signaller = redundant::compute_signallers(sync);
        let table = tabulate_waits(em, inst, sync, &signaller, &places, &mut regs);
        let reads_after = compute_reads_after(em, inst, cf, &signaller, &table, &places);
        let clock = [[L::default(); THREADS]; 5];
        let WaitTable {
            waits,
            of_node,
            positive,
            offset,
            need,
        } = table;
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
            guard_class: SecondaryMap::with_default(u32::MAX),
            classes: redundant::GuardClasses::default(),
            positive,
            offset,
            raised: vec![false; need.len()],
            raised_log: Vec::new(),
            needed: SecondaryMap::new(),
            needed_log: Vec::new(),
            clean: std::collections::HashMap::new(),
            need,
            order,
            places,
            epoch,
            reads_after,
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
                hclock: vec![clock[0]; live],
                undo: Vec::new(),
            },
            valid_until: 0,
            checkpoints: vec![Checkpoint { pos: 0, clock }],
            every,
            positions,
            runs: SecondaryMap::new(),
            position: SecondaryMap::new(),
            target_order: Order::new(em),
            reference: SecondaryMap::new(),
            reach: SecondaryMap::new(),
            steps: 0,
            race: None,
            walks: 0,
            walked: 0,
        }
    }

    pub(super) fn wait(&self, w: WaitId) -> &'a sync::Wait {
        let WaitAt {
            node: yi, index: k, ..
        } = self.waits[w];
        &self.sync.waits[yi][k]
    }

    /// The instances of wait `w` (one per instance of its node), as indices of `need`.
    pub(super) fn instances_of(&self, w: WaitId) -> std::ops::Range<usize> {
        let i = self.waits[w].node;
        let at = self.offset[w];
        at..at + sync::instances(&self.inst.trips[i]) as usize
    }

    /// Whether wait `w` is in the current program and its join raised no clock at any instance
    /// (the current program computes the same clocks without it).
    pub(super) fn orders_nothing(&self, w: WaitId) -> bool {
        self.kept[self.waits[w].node].contains(&w)
            && !self.raised[self.instances_of(w)].contains(&true)
    }

    /// Whether wait `w` stays whatever the others do: the program keeps it, a walk found it
    /// needed ([`Checker::needed`]), and no wait it could imply is waiting in its stretch to
    /// come back in its place (every live wait there is kept).
    pub(super) fn certainly_needed(&mut self, w: WaitId, alive: &Alive) -> bool {
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
    pub(super) fn try_remove(&mut self, trial: &[WaitId], alive: &mut Alive) -> bool {
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

/// Per flat instance, the epoch of its access on its thread when it runs: it is the
/// how-manieth running instance of the thread in program order (`order`).
fn compute_epochs<L: Lane>(em: &Emitted, cf: &Conflicts, order: &[(Node, u32)]) -> Vec<L> {
    let mut epoch = vec![L::default(); cf.total];
    let mut count = [0u32; THREADS];
    for &(i, lin) in order {
        let t = thread(em, i);
        count[t] += 1;
        // (The lane fits every count: `compute_pruned_waits` chose it so.)
        epoch[cf.base[i] + lin as usize] = L::of(count[t]);
    }
    epoch
}

/// Per node with a running instance, the positions in `order` of its first and last.
type Positions = SecondaryMap<Node, Option<(usize, usize)>>;

/// [`Positions`] of `order`.
fn order_positions(order: &[(Node, u32)]) -> Positions {
    let mut positions: Positions = SecondaryMap::new();
    for (pos, &(i, _)) in order.iter().enumerate() {
        let first = positions[i].map_or(pos, |p| p.0);
        positions[i] = Some((first, pos));
    }
    positions
}

/// The kernel's waits numbered in pruning order, and what each asks for at each instance
/// ([`tabulate_waits`]; the fields of [`Checker`] of the same names).
struct WaitTable {
    waits: PrimaryMap<WaitId, WaitAt>,
    of_node: SecondaryMap<Node, Vec<WaitId>>,
    positive: SecondaryMap<WaitId, bool>,
    offset: SecondaryMap<WaitId, usize>,
    need: Vec<u32>,
}

/// Numbers the waits of `sync` (node by node, each node's in order) and tabulates the signals
/// each needs at each instance of its node ([`UNDECIDED`] when the signal it asks for is not
/// given before it in program order, [`Places::full`]; `regs`: scratch registers).
fn tabulate_waits(
    em: &Emitted,
    inst: &Instances,
    sync: &Sync,
    signaller: &SecondaryMap<Sem, Option<Node>>,
    places: &Places,
    regs: &mut [i64; MAX_REGS],
) -> WaitTable {
    let (mut waits, mut of_node) = (PrimaryMap::new(), SecondaryMap::<Node, Vec<WaitId>>::new());
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
            let x = signaller[w.sem];
            // (A wait runs only where its node does: elsewhere it needs nothing.)
            for &v in &inst.running[yi] {
                sync::decode(&t, v, regs);
                if holds(&w.pred, regs) {
                    let at = offset[id] + v as usize;
                    let n = w.value.eval(regs).clamp(0, u32::MAX as i128) as u32;
                    // The signal it reads is its signaller's instance `n - 1`.
                    let given = |x: Node| {
                        let k = n as usize - 1;
                        k < sync::instances(&inst.trips[x]) as usize
                            && places.full(inst, x, k) < places.full(inst, yi, v as usize)
                    };
                    need[at] = match n {
                        0 => 0,
                        _ if x.is_some_and(given) => n,
                        _ => UNDECIDED,
                    };
                }
            }
        }
    }
    WaitTable {
        waits,
        of_node,
        positive,
        offset,
        need,
    }
}

/// [`Checker::reads_after`]: per position, the last position of a wait instance of `table`
/// that may read a signal whose clock is the one the instance there leaves.
fn compute_reads_after(
    em: &Emitted,
    inst: &Instances,
    cf: &Conflicts,
    signaller: &SecondaryMap<Sem, Option<Node>>,
    table: &WaitTable,
    places: &Places,
) -> Vec<u32> {
    let live = inst.running.values().map(Vec::len).sum::<usize>();
    let mut reads_after = vec![0u32; live];
    for (w, &WaitAt { node: yi, sem, .. }) in table.waits.iter() {
        let Some(x) = signaller[sem] else {
            continue;
        };
        let at = table.offset[w];
        for &v in &inst.running[yi] {
            let k = table.need[at + v as usize];
            if k == 0 || k == UNDECIDED {
                continue;
            }
            let p = places.src(em, inst, x, k as usize - 1);
            if p != NONE {
                let r = places.pos[cf.base[yi] + v as usize];
                reads_after[p as usize] = reads_after[p as usize].max(r);
            }
        }
    }
    reads_after
}

fn holds(pred: &[Cmp], regs: &[i64; MAX_REGS]) -> bool {
    pred.iter()
        .all(|c| c.op.holds(c.lhs.eval(regs), c.rhs.eval(regs)))
}
