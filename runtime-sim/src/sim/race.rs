//! The race detector: vector clocks carried by semaphores (MACHINE.md), over footprints kept as
//! rectangles and indexed by address.
//!
//! **Clocks.** Threads are the five engines and the 16 DMA queues. Every engine's clock starts
//! with its own component at 1. A signal publishes the signalling thread's clock and then advances
//! the thread's own component; a satisfied wait joins the clocks of the signals it consumed. A DMA
//! transfer runs on its queue's thread with the issuing `sp` clock joined with a fresh epoch of the
//! queue (transfers of one queue complete in order); its completion signal publishes that clock. A
//! predicated-off transfer's signal publishes the issuing `sp` clock and is counted after its
//! semaphore's earlier signals (so a wait consuming it joins theirs too); it takes no epoch of its
//! own, since it accesses nothing. (The clocks live in `exec`; this module owns the records.)
//!
//! **Records.** Every access is recorded as (thread, epoch, footprint). A new access by thread `v`
//! with clock `C` conflicts with a record of another thread `u` when the footprints overlap, one
//! of the two writes, and `epoch > C[u]` (no chain of semaphores orders them). Conflicts are
//! reported in the order their records were made. Records that every unfinished engine has seen
//! are dropped (amortised, when the live records have doubled); so are records that a newer access
//! of the same thread on the same footprint makes redundant (same bytes, and a write replaces
//! reads and writes, a read only reads).
//!
//! **Footprints.** An access touches partitions `[p0, p1)` of one space (SBUF, PSUM, or one HBM
//! tensor, whose only partition is `0..1` and whose unit is the element) and the same bytes in
//! each of them. Those bytes are a list of [`Run`]s, arithmetic progressions of equal intervals,
//! built from the pattern's start and (size, stride) dimensions without enumerating elements:
//! dimensions whose stride does not exceed the contiguous length so far are absorbed into it,
//! nested strided dimensions become progressions (the innermost one a run, the outer ones one run
//! per index), and only dimensions that interleave or touch one another are decomposed interval by
//! interval (exact, never approximated, at the cost of one entry per interval). So a tile is a
//! partition range × one byte range, and a block of rows × columns of a row-major HBM tensor is
//! one run (its rows' column ranges, a row length apart). Invariants: the intervals of a
//! footprint are its *maximal* ones (sorted, pairwise disjoint, never touching), and the run list
//! is the greedy run-length encoding of that interval sequence, so it is canonical: two
//! footprints are equal exactly when they touch the same bytes. The overlap of two footprints is the lowest connected component of
//! the intersection of their byte sets, which is what a walk of merged element intervals finds;
//! it costs O(1) per pair of runs of equal stride or of which one is a single interval, and
//! otherwise one O(1) step per interval of the run with fewer of them inside the other's extent.
//!
//! **Index.** Per space, records are bucketed by the power-of-two class of their byte extent
//! (`hi - lo`), and each class is an ordered map keyed by the extent's start (with the record's
//! extent end, partitions, thread, epoch and kind beside the key, to filter without reading the
//! record). A class also keeps a bound on its longest extent (below `2^(c+1)` for class `c`), so a
//! record that reaches `[lo, hi)` starts in `(lo - longest, hi)`: an access visits only the records
//! of nearby extents, O(classes · log n + candidates), never every record. A new access takes
//! over the slot and index entry of a record it makes redundant.
//!
//! The element-by-element detector this one replaced is kept as a test oracle
//! (`reference`, compiled for tests); the two report the same conflicts in the same order.

use super::memory::{Pattern, Resolved, Space};
use crate::isa::{Engine, MAX_DIMS};
use crate::machine::DMA_QUEUES;
use std::collections::BTreeMap;

#[cfg(test)]
pub(crate) mod reference;
pub mod shape;
#[cfg(test)]
mod tests;

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

/// The engine's thread.
pub fn engine_thread(e: Engine) -> usize {
    e.index()
}

/// `count` intervals of `len` bytes, `stride` apart from `start`: `[start + k*stride, start +
/// k*stride + len)` for `0 <= k < count`. `count >= 1`, `len >= 1`; a single interval has stride 0,
/// several have `stride > len` (they never touch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub len: u64,
    pub stride: u64,
    pub count: u64,
}

impl Run {
    fn one(start: u64, len: u64) -> Run {
        Run {
            start,
            len,
            stride: 0,
            count: 1,
        }
    }

    /// The start of the last interval.
    fn last(&self) -> u64 {
        self.start + (self.count - 1) * self.stride
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.last() + self.len
    }

    /// The first interval that ends after `x`, if any.
    fn first_after(&self, x: u64) -> Option<u64> {
        if x < self.start + self.len {
            return Some(0);
        }
        if self.count == 1 {
            return None;
        }
        let k = (x - self.start - self.len) / self.stride + 1;
        (k < self.count).then_some(k)
    }
}

/// The greedy run-length encoding of a sorted sequence of maximal intervals, fed interval by
/// interval or a progression at a time (the result is the same).
#[derive(Default)]
struct Builder {
    runs: Vec<Run>,
}

impl Builder {
    fn push_one(&mut self, start: u64, len: u64) {
        if let Some(r) = self.runs.last_mut() {
            if r.len == len {
                if r.count == 1 {
                    r.stride = start - r.start;
                    r.count = 2;
                    return;
                }
                if r.count
                    .checked_mul(r.stride)
                    .and_then(|o| o.checked_add(r.start))
                    == Some(start)
                {
                    r.count += 1;
                    return;
                }
            }
        }
        self.runs.push(Run::one(start, len));
    }

    fn push(&mut self, run: Run) {
        self.push_one(run.start, run.len);
        if run.count == 1 {
            return;
        }
        if let Some(r) = self.runs.last_mut() {
            if r.count == 1 {
                // `r` is the progression's first interval alone.
                r.stride = run.stride;
                r.count = run.count;
                return;
            }
            if r.stride == run.stride {
                r.count += run.count - 1;
                return;
            }
        }
        let rest = run.count - 1;
        self.runs.push(Run {
            start: run.start + run.stride,
            len: run.len,
            stride: if rest > 1 { run.stride } else { 0 },
            count: rest,
        });
    }

    fn finish(self) -> Runs {
        match self.runs.as_slice() {
            [r] => Runs::One(*r),
            _ => Runs::Many(self.runs.into_boxed_slice()),
        }
    }
}

/// A footprint's runs: one inline (the common case), or several.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Runs {
    One(Run),
    Many(Box<[Run]>),
}

impl Runs {
    fn as_slice(&self) -> &[Run] {
        match self {
            Runs::One(r) => std::slice::from_ref(r),
            Runs::Many(v) => v,
        }
    }
}

/// The canonical runs of a pattern's bytes (see the module doc).
fn runs_of(p: &Pattern) -> Runs {
    // Normalise: drop dimensions that add nothing, turn negative strides around, sort by stride.
    let mut base = p.start as i128;
    let mut dims = [(0u64, 0u64); MAX_DIMS];
    let mut nd = 0;
    for &(n, s) in p.dims() {
        if n <= 1 || s == 0 {
            continue;
        }
        if s < 0 {
            base += (n as i128 - 1) * s as i128;
        }
        dims[nd] = (n, s.unsigned_abs());
        nd += 1;
    }
    let dims = &mut dims[..nd];
    // Every offset is in range, so the lowest one is too.
    let base = base as u64;
    dims.sort_unstable_by_key(|&(_, s)| s);
    // Absorb the dimensions that keep the bytes contiguous.
    let mut len = p.unit;
    let mut k = 0;
    while k < dims.len() && dims[k].1 <= len {
        len += (dims[k].0 - 1) * dims[k].1;
        k += 1;
    }
    // Nest the others: each must start its blocks past the end of the previous level's block.
    let mut levels = [(0u64, 0u64); MAX_DIMS];
    let mut nl = 0usize;
    let mut extent = len;
    let mut regular = true;
    for &(n, s) in &dims[k..] {
        if nl > 0 && levels[nl - 1].0.checked_mul(levels[nl - 1].1) == Some(s) {
            levels[nl - 1].0 *= n;
        } else if s > extent {
            levels[nl] = (n, s);
            nl += 1;
        } else {
            regular = false;
            break;
        }
        extent += (n - 1) * s;
    }
    let levels = &levels[..nl];
    let mut b = Builder::default();
    if !regular {
        // Interleaving or touching dimensions: every interval, sorted and merged.
        let mut starts = vec![base];
        for &(n, s) in &dims[k..] {
            starts = starts
                .iter()
                .flat_map(|&o| (0..n).map(move |i| o + i * s))
                .collect();
        }
        starts.sort_unstable();
        let mut cur: Option<(u64, u64)> = None;
        for o in starts {
            cur = match cur {
                Some((lo, hi)) if o <= hi => Some((lo, hi.max(o + len))),
                Some((lo, hi)) => {
                    b.push_one(lo, hi - lo);
                    Some((o, o + len))
                }
                None => Some((o, o + len)),
            };
        }
        if let Some((lo, hi)) = cur {
            b.push_one(lo, hi - lo);
        }
        return b.finish();
    }
    let Some(&(n1, s1)) = levels.first() else {
        return Runs::One(Run::one(base, len));
    };
    let inner = |start: u64| Run {
        start,
        len,
        stride: s1,
        count: n1,
    };
    // Outer levels, outermost (largest stride) slowest: increasing addresses.
    let outer = &levels[1..];
    let total: u64 = outer.iter().map(|&(n, _)| n).product();
    let mut idx = [0u64; 4];
    for _ in 0..total {
        let off: u64 = outer.iter().zip(&idx).map(|(&(_, s), &i)| i * s).sum();
        b.push(inner(base + off));
        for (d, i) in idx.iter_mut().enumerate().take(outer.len()) {
            *i += 1;
            if *i < outer[d].0 {
                break;
            }
            *i = 0;
        }
    }
    b.finish()
}

/// The lowest common part of `[x, y)` and a run, if any.
fn meet_one(x: u64, y: u64, r: &Run) -> Option<(u64, u64)> {
    let k = r.first_after(x)?;
    let s = r.start + k * r.stride;
    (s < y).then(|| (x.max(s), y.min(s + r.len)))
}

/// The lowest common part of two runs of several intervals each and the same stride: interval
/// `i` of `a` meets interval `i + k` of `b` for at most two values of `k`.
fn meet_same_stride(a: &Run, b: &Run) -> Option<(u64, u64)> {
    let t = a.stride as i128;
    let d = b.start as i128 - a.start as i128;
    let (la, lb) = (a.len as i128, b.len as i128);
    // d + k*t in (-lb, la).
    let k_lo = (-lb - d).div_euclid(t) + 1;
    let k_hi = (la - d - 1).div_euclid(t);
    let k_lo = k_lo.max(-(a.count as i128 - 1));
    let k_hi = k_hi.min(b.count as i128 - 1);
    let mut best: Option<(u64, u64)> = None;
    for k in k_lo..=k_hi {
        let i = (-k).max(0);
        let j = i + k;
        if i >= a.count as i128 || j >= b.count as i128 {
            continue;
        }
        let sa = a.start + i as u64 * a.stride;
        let sb = b.start + j as u64 * b.stride;
        let (lo, hi) = (sa.max(sb), (sa + a.len).min(sb + b.len));
        if lo < hi && best.is_none_or(|(l, _)| lo < l) {
            best = Some((lo, hi));
        }
    }
    best
}

/// The lowest common part of two runs.
fn meet(a: &Run, b: &Run) -> Option<(u64, u64)> {
    if a.count == 1 {
        return meet_one(a.start, a.start + a.len, b);
    }
    if b.count == 1 {
        return meet_one(b.start, b.start + b.len, a);
    }
    if a.stride == b.stride {
        return meet_same_stride(a, b);
    }
    // Different strides: walk the intervals of the run with fewer of them inside the other's
    // extent, in address order; the first that meets the other gives the lowest part.
    let (x, y) = if a.count <= b.count { (a, b) } else { (b, a) };
    let mut k = x.first_after(y.start)?;
    let end = y.end();
    while k < x.count {
        let s = x.start + k * x.stride;
        if s >= end {
            return None;
        }
        if let Some(m) = meet_one(s, s + x.len, y) {
            return Some(m);
        }
        k += 1;
    }
    None
}

/// What an access touched: partitions `[p0, p1)` and, in each, the bytes of its runs (HBM:
/// elements), within `[lo, hi)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    pub space: Space,
    pub p0: u32,
    pub p1: u32,
    pub lo: u64,
    pub hi: u64,
    runs: Runs,
}

impl Footprint {
    /// The footprint of a resolved pattern (offsets are not needed).
    pub fn of(r: &Resolved) -> Footprint {
        let runs = runs_of(&r.pattern);
        let s = runs.as_slice();
        let lo = s.first().map_or(0, |r| r.start);
        let hi = s.last().map_or(0, |r| r.end());
        Footprint {
            space: r.space,
            p0: r.p0,
            p1: r.p0 + r.np,
            lo,
            hi,
            runs,
        }
    }

    /// The runs, in address order.
    pub fn runs(&self) -> &[Run] {
        self.runs.as_slice()
    }

    /// The first overlap with another footprint: (partitions, the lowest connected byte range
    /// both touch).
    pub fn overlap(&self, o: &Footprint) -> Option<((u32, u32), (u64, u64))> {
        if self.space != o.space
            || self.p1 <= o.p0
            || o.p1 <= self.p0
            || self.hi <= o.lo
            || o.hi <= self.lo
        {
            return None;
        }
        let parts = (self.p0.max(o.p0), self.p1.min(o.p1));
        let (a, b) = (self.runs(), o.runs());
        if let ([x], [y]) = (a, b) {
            return meet(x, y).map(|m| (parts, m));
        }
        // Runs of one footprint occupy disjoint, increasing extents: walk both in address order.
        let mut i = a.partition_point(|r| r.end() <= o.lo);
        let mut j = b.partition_point(|r| r.end() <= self.lo);
        while i < a.len() && j < b.len() {
            let (x, y) = (&a[i], &b[j]);
            if x.start >= o.hi || y.start >= self.hi {
                return None;
            }
            if x.start < y.end() && y.start < x.end() {
                if let Some(m) = meet(x, y) {
                    return Some((parts, m));
                }
            }
            if x.end() <= y.end() {
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
    /// Creation order: conflicts are reported in it.
    seq: u64,
    /// The class of its extent in its space's index.
    class: u32,
}

/// What the index keeps of a record next to its key, to filter candidates without reading the
/// record itself.
#[derive(Clone, Copy, Debug)]
struct Meta {
    hi: u64,
    p0: u32,
    p1: u32,
    epoch: u32,
    thread: usize,
    write: bool,
}

impl<W> Record<W> {
    fn meta(&self) -> Meta {
        Meta {
            hi: self.foot.hi,
            p0: self.foot.p0,
            p1: self.foot.p1,
            epoch: self.epoch,
            thread: self.thread,
            write: self.write,
        }
    }
}

/// The records of one extent class, by (extent start, slot).
#[derive(Default)]
struct Class {
    map: BTreeMap<(u64, usize), Meta>,
    /// At least the longest extent in the class (below `2^(c+1)`; reset when the class empties).
    max_len: u64,
}

/// One space's records, by extent class.
#[derive(Default)]
struct SpaceIndex {
    classes: Vec<Class>,
    /// Bit `c` is set when class `c` holds records.
    nonempty: u64,
}

/// The index of a space in [`Detector::spaces`].
fn space_key(s: Space) -> usize {
    match s {
        Space::Sbuf => 0,
        Space::Psum => 1,
        Space::Hbm(t) => 2 + t,
    }
}

/// The extent class of a footprint: `floor(log2(hi - lo))`.
fn class_of(f: &Footprint) -> u32 {
    63 - (f.hi - f.lo).max(1).leading_zeros()
}

/// An overlap: partitions and bytes.
type Overlap = ((u32, u32), (u64, u64));

/// The live records, indexed by space and address.
pub struct Detector<W> {
    /// Records by slot; a freed slot is `None` and listed in `free`.
    slots: Vec<Option<Record<W>>>,
    free: Vec<usize>,
    live: usize,
    next_seq: u64,
    spaces: Vec<SpaceIndex>,
    prune_at: usize,
    pruned: u64,
    /// Scratch: conflicts of the current access (creation order, slot, overlap).
    hits: Vec<(u64, usize, Overlap)>,
    /// Scratch: records the current access makes redundant.
    stale: Vec<usize>,
}

impl<W: Clone> Default for Detector<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Clone> Detector<W> {
    pub fn new() -> Self {
        Detector {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            next_seq: 0,
            spaces: Vec::new(),
            prune_at: 256,
            pruned: 0,
            hits: Vec::new(),
            stale: Vec::new(),
        }
    }

    /// Checks an access against the live records, calling `report` for each conflict (with the
    /// earlier access, whether it writes, the space and the overlap), in the order the records
    /// were made, then records it.
    pub fn access(
        &mut self,
        thread: usize,
        clock: &Vc,
        write: bool,
        foot: Footprint,
        who: &W,
        mut report: impl FnMut(&W, bool, Space, Overlap),
    ) {
        let epoch = clock[thread];
        let key = space_key(foot.space);
        if self.spaces.len() <= key {
            self.spaces.resize_with(key + 1, SpaceIndex::default);
        }
        let Detector {
            slots,
            spaces,
            hits,
            stale,
            ..
        } = self;
        hits.clear();
        stale.clear();
        let index = &spaces[key];
        let mut classes = index.nonempty;
        while classes != 0 {
            let c = classes.trailing_zeros();
            classes &= classes - 1;
            // No record of the class spans more than `max_len` bytes.
            let class = &index.classes[c as usize];
            let from = (foot.lo + 1).saturating_sub(class.max_len);
            for (&(_, id), m) in class.map.range((from, 0)..(foot.hi, 0)) {
                if m.hi <= foot.lo || m.p1 <= foot.p0 || foot.p1 <= m.p0 {
                    continue;
                }
                if m.thread == thread {
                    if (write || !m.write)
                        && m.epoch <= epoch
                        && slots[id].as_ref().is_some_and(|r| r.foot == foot)
                    {
                        stale.push(id);
                    }
                    continue;
                }
                if !(write || m.write) || m.epoch <= clock[m.thread] {
                    continue;
                }
                if let Some(r) = &slots[id] {
                    if let Some(ov) = r.foot.overlap(&foot) {
                        hits.push((r.seq, id, ov));
                    }
                }
            }
        }
        hits.sort_unstable_by_key(|h| h.0);
        for &(_, id, ov) in hits.iter() {
            if let Some(r) = &slots[id] {
                report(&r.who, r.write, r.foot.space, ov);
            }
        }
        let record = Record {
            thread,
            epoch,
            write,
            class: class_of(&foot),
            foot,
            who: who.clone(),
            seq: self.next_seq,
        };
        self.next_seq += 1;
        // The new record takes the place of a redundant one (same space, extent and class), and
        // the others go.
        match self.stale.split_first() {
            Some((&id, rest)) => {
                for &other in rest {
                    Self::remove_from(&mut self.slots, &mut self.spaces, &mut self.free, other);
                    self.live -= 1;
                }
                let (lo, c, meta) = (record.foot.lo, record.class as usize, record.meta());
                if let Some(m) = self.spaces[key].classes[c].map.get_mut(&(lo, id)) {
                    *m = meta;
                }
                self.slots[id] = Some(record);
            }
            None => self.insert(record),
        }
    }

    fn insert(&mut self, r: Record<W>) {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        let index = &mut self.spaces[space_key(r.foot.space)];
        let c = r.class as usize;
        if index.classes.len() <= c {
            index.classes.resize_with(c + 1, Class::default);
        }
        let class = &mut index.classes[c];
        class.map.insert((r.foot.lo, id), r.meta());
        class.max_len = class.max_len.max(r.foot.hi - r.foot.lo);
        index.nonempty |= 1 << c;
        self.slots[id] = Some(r);
        self.live += 1;
    }

    /// Frees a slot and its index entry (the caller counts it out of `live`).
    fn remove_from(
        slots: &mut [Option<Record<W>>],
        spaces: &mut [SpaceIndex],
        free: &mut Vec<usize>,
        id: usize,
    ) {
        let Some(r) = slots[id].take() else {
            return;
        };
        let index = &mut spaces[space_key(r.foot.space)];
        let c = r.class as usize;
        let class = &mut index.classes[c];
        class.map.remove(&(r.foot.lo, id));
        if class.map.is_empty() {
            class.max_len = 0;
            index.nonempty &= !(1 << c);
        }
        free.push(id);
    }

    /// Drops records that every unfinished engine's clock has seen: no later access can race
    /// with them (a finished engine makes no more accesses, and a later DMA transfer starts from
    /// `sp`'s clock). Amortised: runs when the records have doubled since the last time.
    pub fn prune(&mut self, live_engines: &[Vc]) {
        if self.live < self.prune_at {
            return;
        }
        for id in 0..self.slots.len() {
            let seen = match &self.slots[id] {
                Some(r) => !live_engines.iter().any(|c| c[r.thread] < r.epoch),
                None => false,
            };
            if seen {
                Self::remove_from(&mut self.slots, &mut self.spaces, &mut self.free, id);
                self.live -= 1;
            }
        }
        self.pruned += 1;
        self.prune_at = (self.live * 2).max(256);
    }

    /// Whether enough records piled up since the last prune for another.
    pub fn needs_prune(&self) -> bool {
        self.live >= self.prune_at
    }

    /// How many times old records were dropped.
    pub fn prunes(&self) -> u64 {
        self.pruned
    }

    /// How many records are live.
    pub fn live(&self) -> usize {
        self.live
    }
}
