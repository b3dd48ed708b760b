//! Happens-before: which semaphore waits the others already imply, decided statically on the
//! program's happens-before relation, never by simulating it ([`compute_pruned_waits`]).
//!
//! It owns the greedy pruning of `lib.rs`: the waits of [`crate::sync::compute_sync`] are tried
//! one at a time, consumer by consumer in node order and each consumer's waits in order, and a
//! wait is removed when, without it (and without those removed before it), the program that
//! [`crate::assemble`] builds is still free of races, i.e. when every conflicting pair of
//! instruction instances that the simulator's race detector checks is still ordered.
//!
//! **The relation.** It is the one the race detector (`runtime_sim::sim::race`, `exec`)
//! computes with vector clocks, over the threads `pe act dve pool sp` and the 16 DMA queues:
//! - each engine runs its stream (the program order filtered by engine, [`crate::assemble`])
//!   in order; its accesses are events of its thread;
//! - a transfer that runs is an event of its queue's thread, ordered after everything `sp` saw
//!   when it issued it and after the earlier transfers of its queue (first in, first out); `sp`
//!   does not see it;
//! - an instance of a signalling node (on or off) publishes a clock when it signals: an
//!   engine's, after its own instruction; a transfer's that runs, the transfer's; a
//!   predicated-off transfer's, `sp`'s at its issue;
//! - a wait `S >= v` that runs with `v > 0` joins the clocks of the first `v` signals of `S`. Each
//!   semaphore has one signalling node whose signals are counted in instance order (an engine's
//!   in stream order; a queue's transfers complete in order; a predicated-off transfer's signal
//!   is counted after its semaphore's earlier ones), so these are its instances `0 .. v - 1`,
//!   whatever the timing. A predicated-off wait, or one with `v <= 0`, joins nothing.
//!
//! None of this depends on timing, so the clocks the detector computes during a simulation are
//! the ones computed here by one pass over the instances in program order, which is a
//! topological order of the relation: streams and queues keep program order, and a wait never
//! asks for an instance that does not precede it ([`crate::sync`]). (A wait that would is not
//! decided, and keeps the waits.)
//!
//! **The conflicts.** Two instances race when they are on different threads, touch overlapping
//! bytes, one writes, and neither happens before the other. Happens-before is contained in
//! program order, and the instances of one node are ordered on their thread (its runs are
//! events of one engine or of one queue), so the program is race free exactly when every running
//! instance `b` of a consumer happens after, for every producer `X` on another thread that
//! [`crate::sync::compute_sync`] paired with it ([`Sync::pairs`]: every pair of nodes with a
//! conflicting instance pair), the latest running instance of `X` before `b` in program order
//! whose footprints meet `b`'s. Those instances are found once ([`Conflicts`]); each check is
//! then one pass of clock propagation with one comparison per conflict, `O(instances × threads)`.
//! Footprints are `sync`'s: exact rectangles for tiles and HBM tensors, whole scratch tensors for
//! two tensors of one arena (a superset of the detector's, which may only keep more waits).
//!
//! Invariants: `em` is the kernel the waits were computed on (the trip-clamped copy when there
//! is one); the decision for every wait is exact (it removes a wait exactly when the race
//! detector, simulating the program without it, would report no race), except that a search
//! past [`SEARCH_BUDGET`] or a pruning past [`PRUNE_BUDGET`] keeps the waits not yet decided
//! (correct, maybe redundant).

use crate::emit::{ENode, Emitted};
use crate::sync::{self, Sync};
use runtime_sim::isa::{Cmp, Engine, Expr, Op, Stmt, MAX_REGS};
use runtime_sim::machine::DMA_QUEUES;

/// The most footprint checks spent finding the conflicting instances; past it nothing is pruned.
pub const SEARCH_BUDGET: u64 = 50_000_000;
/// The most instance steps (instances, waits and conflicts visited) spent on the checks; past it
/// the waits not yet tried are kept.
pub const PRUNE_BUDGET: u64 = 500_000_000;

/// Threads: the five engines, then the queues.
const THREADS: usize = 5 + DMA_QUEUES;
/// A vector clock.
type Vc = [u32; THREADS];

fn join(a: &mut Vc, b: &Vc) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

/// The thread whose events are a node's accesses: its engine, or its transfer's queue.
fn thread(em: &Emitted, i: usize) -> usize {
    let n = &em.nodes[i];
    match n.queue() {
        Some(q) => 5 + q as usize,
        None => n.engine.index(),
    }
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
    base: Vec<usize>,
    /// `after[start[b] .. start[b + 1]]` are instance `b`'s.
    start: Vec<u32>,
    /// (thread, flat instance).
    after: Vec<(u8, u32)>,
}

/// Finds the conflicting instances of every pair of `sync.pairs`, or `None` past the budget.
fn compute_conflicts(em: &Emitted, sync: &Sync) -> Option<Conflicts> {
    let mut base = Vec::with_capacity(em.nodes.len() + 1);
    let mut total = 0usize;
    for n in &em.nodes {
        base.push(total);
        total += sync::instances(&sync::trips(em, n)) as usize;
    }
    base.push(total);
    if total >= u32::MAX as usize {
        return None;
    }
    let mut found: Vec<(u32, u8, u32)> = Vec::new();
    let mut work = 0u64;
    let (mut rx, mut ry) = ([0i64; MAX_REGS], [0i64; MAX_REGS]);
    for &(xi, yi) in &sync.pairs {
        let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
        let c = x
            .loops
            .iter()
            .zip(&y.loops)
            .take_while(|(a, b)| a == b)
            .count();
        let (tx, ty) = (sync::trips(em, x), sync::trips(em, y));
        let px = sync::instances(&tx[c..]);
        let xb = i64::from(xi < yi);
        let tr = thread(em, xi) as u8;
        for v in 0..sync::instances(&ty) {
            sync::decode(&ty, v, &mut ry);
            if !sync::on(y, &ry) {
                continue;
            }
            let linc = (0..c).fold(0i64, |acc, k| acc * ty[k] + ry[k]);
            // Searched backwards from the last instance of `x` that precedes this one.
            let mut u = (linc + xb) * px - 1;
            while u >= 0 {
                work += 1;
                if work > SEARCH_BUDGET {
                    return None;
                }
                sync::decode(&tx, u, &mut rx);
                if sync::on(x, &rx) && sync::conflict(x, &rx, y, &ry) {
                    found.push((
                        (base[yi] as i64 + v) as u32,
                        tr,
                        (base[xi] as i64 + u) as u32,
                    ));
                    break;
                }
                u -= 1;
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
        start,
        after: found.into_iter().map(|(_, t, a)| (t, a)).collect(),
    })
}

/// A wait as the assembled program has it: semaphore, value, guard.
type EWait<'p> = (usize, &'p Expr, &'p [Cmp]);

/// Per node, its waits and its signal in the assembled program.
struct Assembled<'p> {
    waits: Vec<Vec<EWait<'p>>>,
    signal: Vec<Option<usize>>,
}

/// The waits and signals each node has in the program `assemble` built (which drops waits that
/// earlier ones imply, and signals nobody waits for), by walking each engine's stream alongside
/// the kernel's tree; `None` when they do not line up (never: `assemble` walks the same tree).
fn emitted<'p>(em: &Emitted, prog: &'p runtime_sim::isa::Program) -> Option<Assembled<'p>> {
    fn walk<'p>(
        em: &Emitted,
        tree: &[ENode],
        e: Engine,
        stmts: &'p [Stmt],
        k: &mut usize,
        out: &mut Assembled<'p>,
    ) -> Option<()> {
        for t in tree {
            match t {
                ENode::Loop(_, body) => {
                    if !sync::engine_has(em, body, e) {
                        continue;
                    }
                    let Stmt::Loop(l) = stmts.get(*k)? else {
                        return None;
                    };
                    *k += 1;
                    let mut j = 0;
                    walk(em, body, e, &l.body, &mut j, out)?;
                    if j != l.body.len() {
                        return None;
                    }
                }
                ENode::Inst(i) => {
                    if em.nodes[*i].engine != e {
                        continue;
                    }
                    loop {
                        let Stmt::Inst(inst) = stmts.get(*k)? else {
                            return None;
                        };
                        *k += 1;
                        match &inst.op {
                            Op::Wait { sem, value } => {
                                out.waits[*i].push((*sem, value, &inst.pred))
                            }
                            _ => {
                                out.signal[*i] = inst.signal;
                                break;
                            }
                        }
                    }
                }
            }
        }
        Some(())
    }
    let mut out = Assembled {
        waits: vec![Vec::new(); em.nodes.len()],
        signal: vec![None; em.nodes.len()],
    };
    for e in Engine::ALL {
        let stmts = prog.stream(e);
        let mut k = 0;
        walk(em, &em.tree, e, stmts, &mut k, &mut out)?;
        if k != stmts.len() {
            return None;
        }
    }
    Some(out)
}

/// Why a check stopped.
enum Stop {
    /// Two conflicting instances are not ordered.
    Race,
    /// A wait asks for a signal not yet given in program order, or the budget ran out.
    Undecided,
}

/// One pass of clock propagation over the instances in program order.
struct Walk<'a, 'p> {
    em: &'a Emitted,
    cf: &'a Conflicts,
    waits: &'a [Vec<EWait<'p>>],
    signal: &'a [Option<usize>],
    regs: [i64; MAX_REGS],
    /// The engines' clocks.
    clock: [Vc; 5],
    queue_epoch: [u32; DMA_QUEUES],
    /// Per semaphore, the join of its first `k + 1` signals' clocks at `k`.
    prefix: Vec<Vec<Vc>>,
    /// Per flat instance that ran, the epoch of its access on its thread.
    epoch: Vec<u32>,
    /// Steps left.
    budget: u64,
}

impl Walk<'_, '_> {
    fn block(&mut self, tree: &[ENode]) -> Result<(), Stop> {
        for t in tree {
            match t {
                ENode::Loop(l, body) => {
                    let (trip, depth) = self.em.loops[*l];
                    for it in 0..trip as i64 {
                        self.regs[depth] = it;
                        self.block(body)?;
                    }
                }
                ENode::Inst(i) => self.inst(*i)?,
            }
        }
        Ok(())
    }

    fn publish(&mut self, sem: usize, c: Vc) {
        let p = &mut self.prefix[sem];
        let mut v = c;
        if let Some(last) = p.last() {
            join(&mut v, last);
        }
        p.push(v);
    }

    /// Whether instance `b`, whose thread's clock is `c`, happens after every instance it must.
    fn check(&mut self, b: usize, c: &Vc) -> Result<(), Stop> {
        let (s, e) = (self.cf.start[b] as usize, self.cf.start[b + 1] as usize);
        self.budget = self
            .budget
            .checked_sub((e - s) as u64)
            .ok_or(Stop::Undecided)?;
        for &(t, a) in &self.cf.after[s..e] {
            if self.epoch[a as usize] > c[t as usize] {
                return Err(Stop::Race);
            }
        }
        Ok(())
    }

    fn inst(&mut self, i: usize) -> Result<(), Stop> {
        let node = &self.em.nodes[i];
        let ei = node.engine.index();
        let steps = 1 + self.waits[i].len() as u64;
        self.budget = self.budget.checked_sub(steps).ok_or(Stop::Undecided)?;
        for &(sem, value, pred) in &self.waits[i] {
            if !holds(pred, &self.regs) {
                continue;
            }
            let need = value.eval(&self.regs);
            if need <= 0 {
                continue;
            }
            let p = &self.prefix[sem];
            if need > p.len() as i128 {
                return Err(Stop::Undecided);
            }
            let c = p[need as usize - 1];
            join(&mut self.clock[ei], &c);
        }
        let on = holds(&node.inst.pred, &self.regs);
        let lin = node.loops.iter().enumerate().fold(0i64, |acc, (d, &l)| {
            acc * self.em.loops[l].0 as i64 + self.regs[d]
        });
        let b = self.cf.base[i] + lin as usize;
        let sp = Engine::Sp.index();
        match node.queue() {
            Some(q) => {
                let q = q as usize;
                if on {
                    self.queue_epoch[q] += 1;
                    let mut c = self.clock[sp];
                    c[5 + q] = self.queue_epoch[q];
                    self.epoch[b] = self.queue_epoch[q];
                    self.check(b, &c)?;
                    if let Some(s) = self.signal[i] {
                        self.publish(s, c);
                    }
                } else if let Some(s) = self.signal[i] {
                    // A predicated-off transfer publishes `sp`'s clock, taking no epoch.
                    self.publish(s, self.clock[sp]);
                }
            }
            None => {
                if on {
                    self.epoch[b] = self.clock[ei][ei];
                    let c = self.clock[ei];
                    self.check(b, &c)?;
                }
                if let Some(s) = self.signal[i] {
                    // Publish, then advance the engine's own epoch.
                    self.publish(s, self.clock[ei]);
                    self.clock[ei][ei] += 1;
                }
            }
        }
        Ok(())
    }
}

/// Whether the program `assemble` builds from `sync` is free of races, or `None` when undecided;
/// `budget` is charged with the steps taken.
fn race_free(em: &Emitted, cf: &Conflicts, sync: &Sync, budget: &mut u64) -> Option<bool> {
    let (prog, _) = crate::assemble(em, sync, Vec::new());
    let Some(asm) = emitted(em, &prog) else {
        debug_assert!(false, "the assembled streams follow the kernel's tree");
        return None;
    };
    let mut clock = [[0u32; THREADS]; 5];
    for (e, c) in clock.iter_mut().enumerate() {
        c[e] = 1;
    }
    let mut w = Walk {
        em,
        cf,
        waits: &asm.waits,
        signal: &asm.signal,
        regs: [0; MAX_REGS],
        clock,
        queue_epoch: [0; DMA_QUEUES],
        prefix: vec![Vec::new(); sync.semaphores.len()],
        epoch: vec![0; cf.base[em.nodes.len()]],
        budget: *budget,
    };
    let r = w.block(&em.tree);
    *budget = w.budget;
    match r {
        Ok(()) => Some(true),
        Err(Stop::Race) => Some(false),
        Err(Stop::Undecided) => None,
    }
}

/// Drops every wait of `sync` that the others imply (see the module doc): one at a time, in
/// consumer order, a wait is removed when the program without it provably has no race. Returns
/// the number removed.
pub fn compute_pruned_waits(em: &Emitted, sync: &mut Sync) -> usize {
    let Some(cf) = compute_conflicts(em, sync) else {
        return 0;
    };
    let mut budget = PRUNE_BUDGET;
    if race_free(em, &cf, sync, &mut budget) != Some(true) {
        return 0;
    }
    let mut pruned = 0;
    for yi in 0..sync.waits.len() {
        let mut k = 0;
        while k < sync.waits[yi].len() {
            if budget == 0 {
                return pruned;
            }
            let w = sync.waits[yi].remove(k);
            if race_free(em, &cf, sync, &mut budget) == Some(true) {
                pruned += 1;
            } else {
                sync.waits[yi].insert(k, w);
                k += 1;
            }
        }
    }
    pruned
}
