//! The walks of the happens-before check ([`crate::codegen::hb`]): one pass of clock
//! propagation over the running instances in program order ([`Walk`]), resumed from the
//! latest snapshot before the first change and stopped where it matches the last walk again
//! ([`Checker::race_free`]).
//!
//! A predicated-off instance is not visited: it accesses nothing, runs no wait, and its signal
//! is its engine's clock at its place in program order (a transfer's: `sp`'s, joined with the
//! epoch of its node's latest transfer that ran), which the engine's latest running instance
//! before it left ([`Checker::src`], [`State::hclock`]). So a loop spread over many stages, whose
//! instances are mostly off, walks in the time of those that run.
//!
//! Invariants: a walk that finds no race leaves records (the clocks each instance leaves,
//! snapshots, `raised`, `needed`) equal to those a whole walk of the current program computes;
//! one that stops restores the last walk's records (or, when that walk was not complete, leaves
//! them valid up to where it started).

use super::checker::{Checker, Checkpoint, State, WaitAt, UNDECIDED};
use super::clock::{join_raises, same, Lane, Vc};
use super::conflicts::Conflicts;
use super::places::{Places, NONE};
use super::{Stop, THREADS};
use crate::codegen::emit::Emitted;
use crate::codegen::entities::{Node, Sem, WaitId};
use crate::codegen::footprints::Instances;
use cranelift_entity::{PrimaryMap, SecondaryMap};
use runtime_sim::isa::Engine;

impl<'a, L: Lane> Checker<'a, L> {
    /// Whether the program with the kept waits is free of races, or `None`
    /// when undecided.
    ///
    /// `changed` is the first position of the program order at which this program may differ
    /// from the one the last successful walk checked (a node whose kept waits changed runs
    /// there first): the walk resumes from the latest snapshot before it, since up to there
    /// both programs compute the same clocks. A walk that finds no race makes the program the
    /// current one; one that stops leaves the records valid only up to where it started, and
    /// the caller restores the previous program.
    ///
    /// `until` is the last position at which the program may differ (the last instance of a
    /// node whose waits changed). Past it, once the walk reaches a snapshot of the last walk
    /// with the same clocks, and no clock it left differently is read by a later wait, the rest
    /// of the walk would be the last walk's: it stops there and keeps that walk's records (a
    /// kernel of sequential loops walks one loop or two per wait, not the rest of the kernel).
    /// (The epochs are the same in every walk: an instance's counts the running instances of
    /// its thread before it.)
    pub(super) fn race_free(&mut self, changed: usize, until: usize) -> Option<bool> {
        self.race = None;
        self.walks += 1;
        let limit = changed.min(self.valid_until);
        let keep = self.checkpoints.partition_point(|c| c.pos <= limit);
        // The last walk's records past the start, to compare with, and to restore if this walk
        // stops (valid only when that walk went to the end).
        let complete = self.valid_until == self.order.len();
        let mut old_checkpoints = self.checkpoints.split_off(keep);
        let start = self.resume();
        let (r, converged) = self.walk_from(start, until, complete, &old_checkpoints);
        let restore = converged.is_none() && r.is_err() && complete;
        if restore {
            self.restore_last_walk();
        }
        if let Some(k) = converged {
            // The rest is the last walk's: its snapshots and the clocks its instances left.
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

    /// Sets the walk's clocks to the latest snapshot, which it resumes from; returns the
    /// snapshot's position.
    fn resume(&mut self) -> usize {
        let cp = self
            .checkpoints
            .last()
            .expect("the snapshot at position 0 is never dropped");
        self.st.clock = cp.clock;
        self.st.undo.clear();
        cp.pos
    }

    /// Walks the running instances from position `start`, taking snapshots, until a race, an
    /// undecided wait, the end, or (past `until`, when the last walk was `complete`) a snapshot
    /// of `old_checkpoints` that this walk matches; returns how it ended, and where it matched
    /// the last walk (the index in `old_checkpoints`), if it did.
    fn walk_from(
        &mut self,
        start: usize,
        until: usize,
        complete: bool,
        old_checkpoints: &[Checkpoint<L>],
    ) -> (Result<(), Stop>, Option<usize>) {
        let mut walk = Walk {
            em: self.em,
            cf: self.cf,
            inst: self.inst,
            kept: &self.kept,
            waits: &self.waits,
            offset: &self.offset,
            need: &self.need,
            places: &self.places,
            epoch: &self.epoch,
            reads_after: &self.reads_after,
            signaller: &self.signaller,
            raised_log: &mut self.raised_log,
            needed_log: &mut self.needed_log,
            joined: Vec::new(),
            st: &mut self.st,
            read_after: 0,
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
                };
                while next_old < old_checkpoints.len() && old_checkpoints[next_old].pos < pos {
                    next_old += 1;
                }
                if complete
                    && pos > until
                    && walk.read_after < pos
                    && old_checkpoints.get(next_old).is_some_and(|old| {
                        old.pos == pos && (0..5).all(|e| same(&old.clock[e], &now.clock[e]))
                    })
                {
                    converged = Some(next_old);
                    break;
                }
                self.checkpoints.push(now);
            }
            r = walk.inst(pos, i, lin as usize);
            self.steps += 1;
            self.walked += 1;
            if r.is_err() {
                break;
            }
        }
        (r, converged)
    }

    /// Puts back the clocks of the last walk that this walk overwrote.
    fn restore_last_walk(&mut self) {
        let st = &mut self.st;
        for &(p, old) in st.undo.iter().rev() {
            st.hclock[p as usize] = old;
        }
    }

    /// Makes the walk that found no race the current one: its records.
    fn commit_walk(&mut self) {
        for &(at, raised) in &self.raised_log {
            self.raised[at as usize] = raised;
        }
        for &w in &self.needed_log {
            self.needed[w] = true;
        }
        self.valid_until = self.order.len();
    }
}

/// One pass of clock propagation over the running instances in program order.
struct Walk<'a, L: Copy> {
    em: &'a Emitted,
    cf: &'a Conflicts,
    inst: &'a Instances,
    /// Per node, the numbers of the waits the program has before it.
    kept: &'a SecondaryMap<Node, Vec<WaitId>>,
    waits: &'a PrimaryMap<WaitId, WaitAt>,
    offset: &'a SecondaryMap<WaitId, usize>,
    need: &'a [u32],
    places: &'a Places,
    epoch: &'a [L],
    reads_after: &'a [u32],
    signaller: &'a SecondaryMap<Sem, Option<Node>>,
    /// Where the walk records, per wait instance it runs, whether the join raised the clock.
    raised_log: &'a mut Vec<(u32, bool)>,
    /// Where the walk records the waits it found needed ([`Checker::needed`]).
    needed_log: &'a mut Vec<WaitId>,
    /// The waits the current instance joined, each with the clock it joined.
    joined: Vec<(WaitId, Vc<L>)>,
    st: &'a mut State<L>,
    /// The last position that may read a clock this walk left differently from the last walk
    /// ([`Checker::reads_after`]).
    read_after: usize,
}

impl<L: Lane> Walk<'_, L> {
    /// The clock of signal `k` of node `x`: the join of the clocks of its instances up to
    /// `k`, which is its engine's clock at instance `k` (an engine's clock only grows) and, for
    /// a transfer, the epoch of the latest of those that ran on its queue.
    fn signal(&self, x: Node, k: usize) -> Vc<L> {
        let mut c = match self.places.src(self.em, self.inst, x, k) {
            NONE => [L::default(); THREADS],
            p => self.st.hclock[p as usize],
        };
        if let Some(q) = self.em.nodes[x].queue() {
            let running = &self.inst.running[x];
            let n = running.partition_point(|&u| u <= k as i64);
            if let Some(&j) = n.checked_sub(1).map(|n| &running[n]) {
                let t = 5 + q as usize;
                c[t] = c[t].max(self.epoch[self.cf.base[x] + j as usize]);
            }
        }
        c
    }

    /// Records the clock the instance at `pos` leaves, noting whether it differs from the
    /// last walk's (then every wait that reads it, up to [`Checker::reads_after`], may differ).
    fn leave(&mut self, pos: usize, c: Vc<L>) {
        let old = &mut self.st.hclock[pos];
        if !same(old, &c) {
            self.st.undo.push((pos as u32, *old));
            *old = c;
            self.read_after = self.read_after.max(self.reads_after[pos] as usize);
        }
    }

    /// Whether instance `b` (of node `i`), whose thread's clock is `c`, happens after every
    /// instance it must.
    /// Also records the waits that alone order `b` after one of its conflicting instances
    /// (`before`: its engine's clock before its waits; [`Checker::needed`]).
    fn check(&mut self, i: Node, b: usize, c: &Vc<L>, before: &Vc<L>) -> Result<(), Stop> {
        let (s, e) = (self.cf.start[b] as usize, self.cf.start[b + 1] as usize);
        for &(t, a) in &self.cf.after[s..e] {
            let (t, epoch) = (t as usize, self.epoch[a as usize]);
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

    /// The running instance `lin` of node `i`, at position `pos`: its waits, its access, the
    /// clock it leaves.
    fn inst(&mut self, pos: usize, i: Node, lin: usize) -> Result<(), Stop> {
        let node = &self.em.nodes[i];
        let ei = node.engine.index();
        let b = self.cf.base[i] + lin;
        let before = self.st.clock[ei];
        self.joined.clear();
        for &w in &self.kept[i] {
            let at = self.offset[w] + lin;
            let need = self.need[at];
            if need == 0 {
                continue;
            }
            if need == UNDECIDED {
                return Err(Stop::Undecided);
            }
            let x = self.signaller[self.waits[w].sem]
                .expect("invariant: a wait that asks for a signal has its signaller");
            let c = self.signal(x, need as usize - 1);
            let raised = join_raises(&mut self.st.clock[ei], &c);
            self.raised_log.push((at as u32, raised));
            self.joined.push((w, c));
        }
        let epoch = self.epoch[b];
        match node.queue() {
            Some(q) => {
                let sp = Engine::Sp.index();
                let mut c = self.st.clock[sp];
                c[5 + q as usize] = epoch;
                self.check(i, b, &c, &before)?;
                self.leave(pos, self.st.clock[sp]);
            }
            None => {
                self.st.clock[ei][ei] = epoch;
                let c = self.st.clock[ei];
                self.check(i, b, &c, &before)?;
                self.leave(pos, c);
            }
        }
        Ok(())
    }
}
