//! The element-by-element race detector the rectangle detector replaced, kept only as the test
//! oracle of [`super::Detector`] (compiled for tests).
//!
//! It owns one flat list of records, each with its footprint as the sorted merged byte intervals
//! of the enumerated element offsets (HBM: elements), and checks every access against every
//! record. Its rules are the ones the module doc of [`super`] states; the rectangle detector must
//! report the same conflicts, in the same order, with the same overlaps.

use super::super::memory::{Resolved, Space};
use super::Vc;

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
            _ => r.dtype.size_bytes(),
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
struct Record<W> {
    thread: usize,
    epoch: u32,
    write: bool,
    foot: Footprint,
    who: W,
}

/// The live records, in the order they were made.
pub struct Detector<W> {
    records: Vec<Record<W>>,
    prune_at: usize,
    pruned: u64,
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
        mut report: impl FnMut(&W, bool, Space, ((u32, u32), (u64, u64))),
    ) {
        for r in &self.records {
            if r.thread == thread || !(write || r.write) || r.epoch <= clock[r.thread] {
                continue;
            }
            if let Some(ov) = r.foot.overlap(&foot) {
                report(&r.who, r.write, r.foot.space, ov);
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

    /// Drops records that every unfinished engine's clock has seen.
    pub fn prune(&mut self, live_engines: &[Vc]) {
        if self.records.len() < self.prune_at {
            return;
        }
        self.records
            .retain(|r| live_engines.iter().any(|c| c[r.thread] < r.epoch));
        self.pruned += 1;
        self.prune_at = (self.records.len() * 2).max(256);
    }

    pub fn needs_prune(&self) -> bool {
        self.records.len() >= self.prune_at
    }

    pub fn prunes(&self) -> u64 {
        self.pruned
    }

    /// Prunes from `n` live records on (the tests prune early and often).
    pub fn set_prune_at(&mut self, n: usize) {
        self.prune_at = n;
    }

    /// How many records are live.
    pub fn live(&self) -> usize {
        self.records.len()
    }
}
