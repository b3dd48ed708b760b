//! The race detector: vector clocks carried by semaphores (MACHINE.md).
//!
//! Threads are the five engines and the 16 DMA queues. Every engine's clock starts with its own
//! component at 1. A signal publishes the signalling thread's clock and then advances the thread's
//! own component; a satisfied wait joins the clocks of the signals it consumed. A DMA transfer
//! runs on its queue's thread with the issuing `sp` clock joined with a fresh epoch of the queue
//! (transfers of one queue complete in order); its completion signal publishes that clock. A
//! predicated-off transfer's signal publishes the issuing `sp` clock and is counted after its
//! semaphore's earlier signals (so a wait consuming it joins theirs too); it takes no epoch of its
//! own, since it accesses nothing.
//!
//! Every access is recorded as (thread, epoch, footprint). A new access by thread `v` with clock
//! `C` conflicts with a record of another thread `u` when the footprints overlap, one of the two
//! writes, and `epoch > C[u]` (no chain of semaphores orders them). Records that every unfinished
//! engine has seen are dropped; so are records that a newer access of the same thread on the same
//! footprint makes redundant.

use super::memory::{Resolved, Space};
use crate::isa::Engine;
use crate::machine::DMA_QUEUES;

/// Threads: 5 engines, then 16 queues.
pub const THREADS: usize = 5 + DMA_QUEUES;

/// A vector clock.
pub type Vc = [u32; THREADS];

/// The thread of a DMA queue.
pub fn queue_thread(q: u8) -> usize {
    5 + q as usize
}

pub fn join(a: &mut Vc, b: &Vc) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

/// What an access touched: partitions and merged byte intervals of each partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    pub space: Space,
    pub p0: u32,
    pub p1: u32,
    pub intervals: Vec<(u64, u64)>,
}

impl Footprint {
    /// The footprint of a resolved pattern (resolved with offsets).
    pub fn of(r: &Resolved) -> Footprint {
        let esize = match r.space {
            Space::Hbm(_) => 1,
            _ => r.dtype.size(),
        };
        let sorted;
        let offs: &[u64] = if r.offsets.windows(2).all(|w| w[0] <= w[1]) {
            &r.offsets
        } else {
            let mut v = r.offsets.clone();
            v.sort_unstable();
            sorted = v;
            &sorted
        };
        let mut intervals: Vec<(u64, u64)> = Vec::new();
        for &o in offs {
            match intervals.last_mut() {
                Some(last) if o <= last.1 => last.1 = last.1.max(o + esize),
                _ => intervals.push((o, o + esize)),
            }
        }
        Footprint {
            space: r.space,
            p0: r.p0,
            p1: r.p0 + r.np,
            intervals,
        }
    }

    /// The first overlap with another footprint: (partitions, byte range).
    pub fn overlap(&self, o: &Footprint) -> Option<((u32, u32), (u64, u64))> {
        if self.space != o.space || self.p1 <= o.p0 || o.p1 <= self.p0 {
            return None;
        }
        let parts = (self.p0.max(o.p0), self.p1.min(o.p1));
        let (mut i, mut j) = (0, 0);
        while i < self.intervals.len() && j < o.intervals.len() {
            let (a, b) = (self.intervals[i], o.intervals[j]);
            let lo = a.0.max(b.0);
            let hi = a.1.min(b.1);
            if lo < hi {
                return Some((parts, (lo, hi)));
            }
            if a.1 <= b.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        None
    }
}

/// One recorded access; `who` identifies the instruction execution for reports.
pub struct Record<W> {
    pub thread: usize,
    pub epoch: u32,
    pub write: bool,
    pub foot: Footprint,
    pub who: W,
}

/// The live records.
pub struct Detector<W> {
    records: Vec<Record<W>>,
    prune_at: usize,
    pruned: u64,
}

impl<W: Clone> Default for Detector<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Clone> Detector<W> {
    pub fn new() -> Self {
        Detector {
            records: Vec::new(),
            prune_at: 256,
            pruned: 0,
        }
    }

    /// Checks an access against the live records, calling `report` for each conflict, then
    /// records it.
    pub fn access(
        &mut self,
        thread: usize,
        clock: &Vc,
        write: bool,
        foot: Footprint,
        who: &W,
        mut report: impl FnMut(&W, bool, &Footprint, ((u32, u32), (u64, u64))),
    ) {
        for r in &self.records {
            if r.thread == thread || !(write || r.write) || r.epoch <= clock[r.thread] {
                continue;
            }
            if let Some(ov) = r.foot.overlap(&foot) {
                report(&r.who, r.write, &r.foot, ov);
            }
        }
        let epoch = clock[thread];
        self.records.retain(|r| {
            !(r.thread == thread && r.foot == foot && (write || !r.write) && r.epoch <= epoch)
        });
        self.records.push(Record {
            thread,
            epoch,
            write,
            foot,
            who: who.clone(),
        });
    }

    /// Drops records that every unfinished engine's clock has seen: no later access can race
    /// with them (a finished engine makes no more accesses, and a later DMA transfer starts from
    /// `sp`'s clock). Amortised: runs when the records have doubled since the last time.
    pub fn prune(&mut self, live_engines: &[Vc]) {
        if self.records.len() < self.prune_at {
            return;
        }
        self.records
            .retain(|r| live_engines.iter().any(|c| c[r.thread] < r.epoch));
        self.pruned += 1;
        self.prune_at = (self.records.len() * 2).max(256);
    }

    /// Whether enough records piled up since the last prune for another.
    pub fn needs_prune(&self) -> bool {
        self.records.len() >= self.prune_at
    }

    /// How many times old records were dropped.
    pub fn prunes(&self) -> u64 {
        self.pruned
    }
}

/// The engine's thread.
pub fn engine_thread(e: Engine) -> usize {
    e.index()
}
