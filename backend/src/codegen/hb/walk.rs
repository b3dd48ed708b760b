//! The walks of the happens-before check ([`crate::codegen::hb`]): one pass of clock
//! propagation over the instances in program order ([`Walk`]), resumed from the latest snapshot
//! before the first change and stopped where it matches the last walk again
//! ([`Checker::race_free`]).
//!
//! Invariants: a walk that finds no race leaves records (epochs, signals, snapshots, `raised`,
//! `needed`) equal to those a whole walk of the current program computes; one that stops
//! restores the last walk's records (or, when that walk was not complete, leaves them valid up
//! to where it started).

use super::checker::{Checker, Checkpoint, State, WaitAt};
use super::clock::{join, join_raises, same, Lane, Vc};
use super::conflicts::Conflicts;
use super::{per_sem, Stop};
use crate::codegen::emit::Emitted;
use crate::codegen::entities::{Node, Sem, WaitId};
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{PrimaryMap, SecondaryMap};
use runtime_sim::isa::Engine;

impl<'a, L: Lane> Checker<'a, L> {
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
    pub(super) fn race_free(&mut self, changed: usize, until: usize) -> Option<bool> {
        // Like the program, signal only the semaphores some kept wait reads (`read_now`); those
        // signalled differently from the last walk are among `dirty`.
        self.race = None;
        let (changed, until) = self.widen_to_signals(changed, until);
        let limit = changed.min(self.valid_until);
        let keep = self.checkpoints.partition_point(|c| c.pos <= limit);
        // The last walk's records past the start, to compare with, and to restore if this walk
        // stops (valid only when that walk went to the end).
        let complete = self.valid_until == self.order.len();
        let mut old_checkpoints = self.checkpoints.split_off(keep);
        let start = self.resume();
        let WalkEnd {
            result: r,
            converged,
            epoch_log,
        } = self.walk_from(start, until, complete, &old_checkpoints);
        let restore = converged.is_none() && r.is_err() && complete;
        if restore {
            self.restore_last_walk(&epoch_log);
        }
        // (The log's buffer serves the next walk.)
        self.epoch_buf = epoch_log;
        if let Some(k) = converged {
            // The rest is the last walk's: its snapshots and the signals it published (still
            // in `prefix` past what this walk overwrote).
            self.checkpoints.extend(old_checkpoints.drain(k..));
        } else if restore {
            // Back to the last walk's records, which stay valid to the end.
            self.checkpoints.truncate(keep);
            self.checkpoints.append(&mut old_checkpoints);
            return match r {
                Err(Stop::Race(y)) => {
                    self.race = Some(y);
                    Some(false)
                }
                _ => None,
            };
        }
        if converged.is_none() {
            // Past the walk's end nothing is the last walk's any more.
            self.truncate_signals();
        }
        match r {
            Ok(()) => {
                self.commit_walk();
                Some(true)
            }
            Err(stop) => {
                self.valid_until = start;
                self.checkpoints.truncate(keep);
                match stop {
                    Stop::Race(y) => {
                        self.race = Some(y);
                        Some(false)
                    }
                    Stop::Undecided => None,
                }
            }
        }
    }

    /// `changed` and `until` ([`Checker::race_free`]) widened to the instances of the nodes
    /// signalling a semaphore that this program signals and the last walk's did not, or the
    /// other way round.
    fn widen_to_signals(&self, changed: usize, until: usize) -> (usize, usize) {
        let (mut changed, mut until) = (changed, until);
        for &s in &self.dirty {
            if self.read_now[s] != self.read[s] {
                if let Some((first, last)) = self.signaller[s].and_then(|i| self.positions[i]) {
                    changed = changed.min(first);
                    until = until.max(last);
                }
            }
        }
        (changed, until)
    }

    /// Sets the walk's clocks and signal counts to the latest snapshot, which it resumes from;
    /// returns the snapshot's position.
    fn resume(&mut self) -> usize {
        let cp = self
            .checkpoints
            .last()
            .expect("the snapshot at position 0 is never dropped");
        let st = &mut self.st;
        st.clock = cp.clock;
        st.queue_epoch = cp.queue_epoch;
        st.len.clone_from(&cp.published);
        st.undo.clear();
        cp.pos
    }

    /// Walks the instances from position `start` (its snapshot's signal counts in `st.len`), taking
    /// snapshots, until a race, an undecided wait, the end, or (past `until`, when the last
    /// walk was `complete`) a snapshot of `old_checkpoints` that this walk matches.
    fn walk_from(
        &mut self,
        start: usize,
        until: usize,
        complete: bool,
        old_checkpoints: &[Checkpoint<L>],
    ) -> WalkEnd<L> {
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
            st: &mut self.st,
            diff: Diff {
                last_read: &self.last_read,
                read_after: 0,
                tail_differs: per_sem(self.sync, false),
                tails_differing: 0,
                epochs_differ: false,
                epoch_log: std::mem::take(&mut self.epoch_buf),
            },
        };
        walk.raised_log.clear();
        walk.needed_log.clear();
        walk.diff.epoch_log.clear();
        let mut r = Ok(());
        // The next snapshot of the last walk to compare with.
        let mut next_old = 0;
        let mut converged = None;
        for (pos, &(i, lin)) in self.order.iter().enumerate().skip(start) {
            if pos > start && pos % self.every == 0 {
                let published = walk.st.len.clone();
                let now = Checkpoint {
                    pos,
                    clock: walk.st.clock,
                    queue_epoch: walk.st.queue_epoch,
                    published,
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
        WalkEnd {
            result: r,
            converged,
            epoch_log: std::mem::take(&mut walk.diff.epoch_log),
        }
    }

    /// Puts back the last walk's epochs (this walk overwrote `epoch_log`) and signals.
    fn restore_last_walk(&mut self, epoch_log: &[(u32, L)]) {
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
    }

    /// Drops the signals past those this walk published.
    fn truncate_signals(&mut self) {
        let st = &mut self.st;
        for (s, p) in st.prefix.iter_mut() {
            p.truncate(st.len[s] as usize);
        }
    }

    /// Makes the walk that found no race the current one: its records, and the semaphores it
    /// signals.
    fn commit_walk(&mut self) {
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
    }
}

/// How [`Checker::walk_from`] ended.
struct WalkEnd<L> {
    /// `Ok` at the end or where it converged; otherwise why it stopped.
    result: Result<(), Stop>,
    /// The index in the last walk's snapshots where this walk matched it, if it did.
    converged: Option<usize>,
    /// The epochs this walk overwrote ([`Diff::epoch_log`]).
    epoch_log: Vec<(u32, L)>,
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
pub(super) struct Diff<'a, L> {
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
        self.st.len[sem]
    }

    /// The semaphore node `i` signals in this program, if any.
    fn signal(&self, i: Node) -> Option<Sem> {
        self.signal[i].expand().filter(|&s| self.read[s])
    }

    fn publish(&mut self, sem: Sem, c: Vc<L>) {
        let at = self.len(sem) as usize;
        let st = &mut *self.st;
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
        let differs = old.is_none_or(|o| !same(&o, &v));
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

    /// Whether instance `b` (of node `i`), whose thread's clock is `c`, happens after every
    /// instance it must.
    /// Also records the waits that alone order `b` after one of its conflicting instances
    /// (`before`: its engine's clock before its waits; [`Checker::needed`]).
    fn check(&mut self, i: Node, b: usize, c: &Vc<L>, before: &Vc<L>) -> Result<(), Stop> {
        let (s, e) = (self.cf.start[b] as usize, self.cf.start[b + 1] as usize);
        for &(t, a) in &self.cf.after[s..e] {
            let (t, epoch) = (t as usize, self.st.epoch[a as usize]);
            if epoch > c[t] {
                return Err(Stop::Race(i));
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
                    self.check(i, b, &c, &before)?;
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
                    self.check(i, b, &c, &before)?;
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
