//! The bounds of a kernel as written, in cycles of the machine model: the dependence bound (the
//! longest chain of flow dependences, with unlimited resources) and the fill bound (one
//! resource's work between the fill before it and the drain after it).
//!
//! [`compute_kernel_bounds`] runs the kernel's instructions (Penguin IR, before any pipelining)
//! in program order, instance by instance, without data: each instance starts when the values it
//! reads are ready and takes its **minimal latency** ([`min_latency`]); the values it writes are
//! ready when it ends. No engine, queue or buffer is shared, so the result is the critical path of
//! the flow dependences, and no schedule of the kernel (on any pipelining path) can end sooner:
//! every path keeps each value's producer before its readers.
//!
//! The **fill bound**: the same walk in reverse (statements, instructions and iterations from
//! last to first) gives every instance its *tail*, the longest chain of flow dependences after it
//! ends (a write's tail is the largest latency-plus-tail of the later reads it feeds; the reads
//! its write covers are fed by it, not by earlier writers). The forward walk's start is its
//! *head*. A resource — the 16 DMA queues as one pool (a transfer's bytes move only after one
//! issue and the fixed latency), `sp`'s issue slots, and each compute engine for the
//! instructions whose engine the kernel fixes (a `memset` that `fold_zeros` may remove claims
//! none), and the engines an `Any` instruction may run on taken together (`act`, `dve` and
//! `pool` as three units; `act` and `dve` as two for one touching PSUM), which claim it at its
//! cheapest engine's latency beside their own instructions) — does the work of any set `S` of its instances after
//! the earliest head of `S` and before the end minus the least tail of `S`, so no schedule ends
//! before `min head(S) + work(S) / units + min tail(S)`. For `sp` it is a little more: the last
//! piece `sp` issues for `S` belongs to a transfer `T` of `S` split in `p` pieces, which take `p`
//! issues (every other transfer of `S` at least one, all after `min head(S)`), and that piece
//! still moves its `bytes / p` after the fixed latency; so no schedule ends before
//! `min head(S) + issue · (|S| − 1) + min_latency(T) + tail(T)`: `sp`'s claim of a transfer is
//! one issue, and its tail is its least latency less that issue plus its own tail.
//! [`fill_bound`] takes the largest over the sets of the instances whose head (or tail) is at
//! least a threshold. The lower bound of a run is `max(resource, dependence, fill)`.
//!
//! Readiness is tracked per tensor as rectangles (one per dimension, in elements, and the slot a
//! write filled) with the time their last write ends; a read waits for every rectangle it
//! overlaps. **Transfers synchronise piece by piece**: a transfer is split in pieces of its
//! partitions, and a reader waits only for the pieces whose rows it reads. So a rectangle a
//! transfer wrote also has the time its first piece may land (its start plus its least piece
//! latency, [`piece_latency`]); a read that covers the rectangle waits for all of it, one that
//! meets it in part only for that first piece. The pieces split the partitions of the on-chip
//! tile, each with all of the tile's free elements, so a read of a tile that spans the
//! rectangle's partitions (a column block of a loaded tile) meets every piece and waits for all
//! of it too ([`needs_all`]; on the HBM side a piece's rows need not be the first dimension, and
//! only covering counts). A transfer reading another's rows ends no sooner
//! than one piece latency after all it reads has landed, and a whole latency after the first
//! pieces of the rectangles that cover its read have; the reverse walk counts tails the same
//! way. Counting transfers whole would put the bound above runs that overlap a store's last
//! pieces with the reload's first (`tests/good/hbm_chain.nk`). **A queue is first in, first
//! out**, and a transfer's latency overlaps the transfers before it on its queue (MACHINE.md):
//! a transfer that reads what a transfer wrote (a store of a loaded tile, the reload of a
//! stored one) may be issued right after it on the same queue, with no wait, and its piece then
//! moves its bytes as soon as the writer's piece has moved its own. So such a reader ends no
//! sooner than its least piece's queue time ([`piece_queue_cycles`]) after what it reads has
//! landed, and its whole latency after the writer's start (not after its landing); the reverse
//! walk counts the writer's tail the same way. Counting the latency again would put the bound
//! above runs whose chained transfers share their queues (`tests/good/hbm_scratch.nk`). A write replaces the rectangles it covers; one it only partly covers stays (a later
//! write of the same element is ordered after it on every path, so waiting for it is still a
//! lower bound). Tensors that no instruction reads are not tracked.
//!
//! **HBM keeps its order.** No path renames an HBM address (a kernel argument's or a scratch
//! tensor's bytes are the same in every iteration; only on-chip tiles get ring slots), and the
//! race detector orders two transfers that touch the same bytes when one of them writes. So a
//! write of HBM follows the earlier reads (anti-dependence) and writes (output dependence) of its
//! bytes, piece by piece, as a transfer reading a transfer's write follows it: through a
//! semaphore after they end, or queued right behind them on their queue. The walks keep, per
//! HBM tensor some instruction writes, its earlier accesses (forward walk) or its later writes
//! (reverse walk) as rectangles, and apply the rules above with the earlier access in the
//! writer's place: a write that covers an earlier access ends no sooner than its least piece's
//! queue time after that access's last piece (its whole least latency after the start of an
//! access that covers all of it), and one that covers an earlier access adds that much plus its
//! own tail to the earlier access's tail (`tests/good/hbm_reuse.nk`). An access that a newer one
//! covers is dropped from the lists, and a list keeps only the latest [`ORDER_KEPT`] accesses of
//! its tensor: dropping a constraint only lowers the bound, and a kernel storing a million row
//! blocks of one output does not scan all the earlier ones at every store.
//!
//! An access pattern counts its values (not its bounding box); the reads of one never wait for a
//! whole transfer because of their rectangle alone (it is a bounding box of what they read). A
//! **masked instruction counts, in each instance, the box its mask keeps there** ([`active`]):
//! it is the unmasked instruction clipped to that box, which is what the backend's version for
//! that iteration runs (`codegen::masks`), so its latency, bytes, pieces and rectangles are that
//! box's; an instance whose box is empty runs nothing and is skipped by both walks. (A mask the
//! backend refuses stays whole and costs the least of its kind.) A bound that counted the
//! unmasked tile would be above runs (`tests/nki/pattern_many_axes.nk`; the public `nki_mask`,
//! 7,986 against 6,275); one that counted every masked instance as one element was far below
//! runs whose masks keep nearly every row (`tests/good/queues_rest.nk`).
//!
//! Minimal latencies (MACHINE.md's cost table): a compute instruction costs its engine's cycles
//! (an operation several engines can run, the cheapest; a `tensor_tensor` with an input in PSUM
//! the PSUM rate); a DMA its issue on `sp` for each piece, the fixed latency and its bytes (in the HBM
//! side's type, as the simulator counts them) on one queue per piece, with the split (1, 2, 4, 8 or 16 pieces dividing its partitions) that ends
//! first. Past [`MAX_INSTANCES`] instances the bound is not computed (`None`).
//!
//! **Indirect transfers.** A gather or scatter moves one descriptor per row, each row's bytes
//! rounded up to whole queue cycles on its own (MACHINE.md; the simulator's `Dma` with an
//! index), so its queue cycles are `rows · ⌈row bytes / 19⌉` however it is split
//! ([`queue_cycles`]), in its pieces, its latency and the queues' claim of the fill bound. A
//! **scatter's pieces move one after the other**: its rows are its index tile's values, so its
//! HBM side is the box of every row an index may name, which every piece writes (the race
//! detector sees that box); any two of them must be ordered, on one queue (first in, first out:
//! the second's bytes move after the first's) or by a semaphore (the second issued after the
//! first has landed). Either way no byte of one piece moves while another's do, and the first
//! to move waits its issue and the fixed latency: the scatter ends no sooner than `issue +
//! latency + rows · ⌈row bytes / 19⌉` after it starts, whatever the split ([`min_latency`]).
//! Its claim on `sp`'s issue slots keeps the latency of overlapping pieces ([`Cost`]): after
//! the last piece `sp` issues, only that piece's bytes are sure to be left.

use penguin::affine::AffineExpr;
use penguin::ir::{mask_box, ActiveBox, EngineClass, InstData, Memory, Op, Operand, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};
use runtime_sim::isa::DType;
use runtime_sim::machine::{self, DMA_QUEUES};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// The most instruction instances and loop iterations the bound walks.
pub const MAX_INSTANCES: u64 = 2_000_000;

/// The most accesses of one HBM tensor the walks keep for the order of its writes (the latest
/// ones; dropping older ones only loosens the bound, and keeps each step's work bounded).
const ORDER_KEPT: usize = 64;

/// Keeps the latest [`ORDER_KEPT`] of `rects` once they pass twice that (amortised O(1)).
fn keep_latest(rects: &mut Vec<Rect>) {
    if rects.len() > 2 * ORDER_KEPT {
        rects.drain(..rects.len() - ORDER_KEPT);
    }
}

/// A rectangle of a tensor: per dimension `[start, start + size)`, and its ring slot.
#[derive(Clone, Debug)]
struct Rect {
    lo: Vec<i64>,
    hi: Vec<i64>,
    slot: i64,
    /// Forward: when the whole rectangle is written. Reverse: the reader's latency plus tail.
    ready: u64,
    /// Forward: when some piece of it may be written (a transfer's first piece; `ready` for a
    /// compute write). Reverse: the reader's least piece latency plus tail (`ready` for a
    /// compute reader).
    first: u64,
    /// Forward: whether a transfer wrote it. Reverse: whether the reader is a transfer.
    dma: bool,
    /// Forward: when the transfer that wrote it started (`ready` for a compute write). Reverse:
    /// a transfer reader's least piece queue time plus tail (`first` for a compute reader).
    queued: u64,
    /// Whether the access is a box (every element of the rectangle), not an access pattern's
    /// values inside their bounding box.
    dense: bool,
}

/// The bounds of a kernel as written, in cycles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelBoundsData {
    /// The longest chain of flow dependences.
    pub dependence: u64,
    /// The fill bound: the largest, over the resources, of a resource's work plus the fill
    /// before it and the drain after it (module doc), and the resource that sets it.
    pub fill: u64,
    pub fill_resource: &'static str,
}

/// The dependence bound of `func` (as written) in cycles, or `None` past [`MAX_INSTANCES`].
pub fn compute_dependence_bound(func: &Function) -> Option<u64> {
    compute_kernel_bounds(func).map(|b| b.dependence)
}

/// The dependence and fill bounds of `func` (as written), or `None` past [`MAX_INSTANCES`].
pub fn compute_kernel_bounds(func: &Function) -> Option<KernelBoundsData> {
    let mut instances = 0u64;
    count(func, &func.body, 1, &mut instances);
    if instances > MAX_INSTANCES {
        return None;
    }
    // Only what some instruction reads needs its readiness tracked.
    let mut read = std::collections::BTreeSet::new();
    let mut hbm = std::collections::BTreeSet::new();
    for (_, d) in func.insts.iter() {
        read.extend(d.srcs.iter().map(|o| o.tensor));
        if matches!(d.op, Op::Matmul { accumulate: true }) {
            read.insert(d.dst.tensor);
        }
        if func.tensors[d.dst.tensor].memory == Memory::Hbm {
            hbm.insert(d.dst.tensor);
        }
    }
    let mut cx = Walk {
        func,
        ivs: cranelift_entity::SecondaryMap::new(),
        ready: BTreeMap::new(),
        read,
        hbm,
        order: BTreeMap::new(),
        end: 0,
        reverse: false,
        times: Vec::new(),
        costs: Vec::new(),
        clipped: HashMap::new(),
    };
    cx.block(&func.body);
    let dependence = cx.end;
    let heads = std::mem::take(&mut cx.times);
    cx.reverse = true;
    cx.ready.clear();
    cx.order.clear();
    cx.ivs = cranelift_entity::SecondaryMap::new();
    cx.block(&func.body);
    let mut tails = std::mem::take(&mut cx.times);
    tails.reverse();
    let costs = std::mem::take(&mut cx.costs);
    let (fill, fill_resource) = fill_bound(func, &heads, &tails, &costs);
    Some(KernelBoundsData {
        dependence,
        fill,
        fill_resource,
    })
}

/// The resources of the fill bound: the DMA queues (as one pool of [`DMA_QUEUES`]), `sp`'s issue
/// slots, the compute engines an instruction's class fixes, and the engines an `.any`
/// instruction may run on as one pool: `act`, `dve` and `pool` (three units) for every
/// instruction of theirs and every `.any` one, `act` and `dve` (two units) for theirs and the
/// `.any` ones that touch PSUM (which `pool` cannot access). However the backend places the
/// `.any` work ([`crate::cost::engine_choice`]), those engines together do all of it.
const RESOURCES: [&str; 8] = [
    "dma",
    "sp",
    "pe",
    "act",
    "dve",
    "pool",
    "act+dve+pool",
    "act+dve",
];

/// One instance's claim on a resource: earliest start of the work, the work, and the least time
/// that must follow its end.
#[derive(Clone, Copy)]
struct Claim {
    head: u64,
    work: u64,
    tail: u64,
}

/// The fill bound from every instance's head (its earliest start) and tail (the longest chain
/// after its end), both in walk order: the largest over the resources and over the sets `S` of
/// claims that start no sooner than `a` (or leave at least `b` after them) of
/// `a + work(S) / units + b`.
fn fill_bound(
    func: &Function,
    heads: &[Instance],
    tails: &[Instance],
    costs: &[Cost],
) -> (u64, &'static str) {
    let mut claims: Vec<Vec<Claim>> = vec![Vec::new(); RESOURCES.len()];
    for ((h, t), c) in heads.iter().zip(tails).zip(costs) {
        debug_assert_eq!(h.inst, t.inst, "both walks visit the same instances");
        let d = &func.insts[h.inst];
        let Cost { lat, queue } = *c;
        if crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs).is_some() {
            let issue = machine::dma_issue_cycles();
            // The bytes move after one issue and the fixed latency; the last piece's bytes
            // are at least a sixteenth of the tile's.
            claims[0].push(Claim {
                head: h.time + issue + machine::DMA_LATENCY,
                work: queue,
                tail: t.time,
            });
            // `sp` issues at least one piece of each; after the last piece it issues, that
            // transfer still takes its least latency less that one issue (module doc).
            claims[1].push(Claim {
                head: h.time,
                work: issue,
                tail: t.time + lat.saturating_sub(issue),
            });
            continue;
        }
        let claim = Claim {
            head: h.time,
            work: lat,
            tail: t.time,
        };
        let r = match d.engine {
            EngineClass::Tensor => 2,
            EngineClass::Scalar => 3,
            // A memset may be folded away (`fold_zeros`); the rest runs on the Vector engine.
            EngineClass::Vector if !matches!(d.op, Op::Memset { .. }) => 4,
            EngineClass::GpSimd => 5,
            // An instruction the backend may place on any engine claims only the engines
            // together, at its cheapest engine's latency (`lat`).
            EngineClass::Any => {
                let psum = std::iter::once(&d.dst)
                    .chain(d.srcs.iter())
                    .any(|o| func.tensors[o.tensor].memory == Memory::Psum);
                claims[6].push(claim);
                if psum {
                    claims[7].push(claim);
                }
                continue;
            }
            _ => continue,
        };
        claims[r].push(claim);
        // Every instruction of `act`, `dve` and `pool` is work of the three together, and
        // those of `act` and `dve` of the two that can read PSUM.
        if r >= 3 {
            claims[6].push(claim);
        }
        if r == 3 || r == 4 {
            claims[7].push(claim);
        }
    }
    let mut best = (0, RESOURCES[0]);
    for (r, cs) in claims.iter_mut().enumerate() {
        let units = match r {
            0 => DMA_QUEUES as u64,
            6 => 3,
            7 => 2,
            _ => 1,
        };
        let b = suffix_bound(cs, units, |c| c.head, |c| c.tail).max(suffix_bound(
            cs,
            units,
            |c| c.tail,
            |c| c.head,
        ));
        if b > best.0 {
            best = (b, RESOURCES[r]);
        }
    }
    best
}

/// `max over k` of `key_k + work(S_k) / units + min over S_k of other`, where `S_k` holds the
/// claims whose `key` is at least `key_k` (sorted by `key`, suffix sums).
fn suffix_bound(
    cs: &mut [Claim],
    units: u64,
    key: impl Fn(&Claim) -> u64,
    other: impl Fn(&Claim) -> u64,
) -> u64 {
    cs.sort_by_key(|c| std::cmp::Reverse(key(c)));
    let (mut work, mut least, mut best) = (0u64, u64::MAX, 0u64);
    for c in cs.iter() {
        work = work.saturating_add(c.work);
        least = least.min(other(c));
        best = best.max(key(c).saturating_add(work / units).saturating_add(least));
    }
    best
}

fn count(func: &Function, block: &[Stmt], reps: u64, out: &mut u64) {
    for &s in block {
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => *out = out.saturating_add(reps * insts.len() as u64),
            StmtKind::Loop(a) => {
                // Every iteration is a step of the walk, even of a loop with nothing to run.
                let reps = reps.saturating_mul(func.axes[*a].trip_count().max(0) as u64);
                *out = out.saturating_add(reps);
                count(func, &func.axes[*a].body, reps, out);
            }
        }
    }
}

/// One instance visited by a walk: its instruction and its head (forward) or tail (reverse).
#[derive(Clone, Copy)]
struct Instance {
    inst: penguin::Inst,
    time: u64,
}

/// What one instance costs, as the forward walk found it ([`active`]): its least latency (a
/// transfer's as if its pieces could overlap, [`split_latency`]: after its last piece's issue it
/// takes no less than that less one issue) and, for a transfer, its queue cycles, however split
/// ([`queue_cycles`]).
#[derive(Clone, Copy)]
struct Cost {
    lat: u64,
    queue: u64,
}

/// What instance `i` runs in the iteration `ivs` gives: the instruction itself when unmasked; a
/// masked one clipped to the box its mask keeps in that iteration
/// ([`penguin::ir::mask_box`], [`InstData::clipped`]: the unmasked instruction the backend's
/// version for that iteration runs, `codegen::masks`), or `None` when the box is empty (no
/// version runs: the instance reads, writes and takes nothing). A mask the backend cannot lower
/// stays on the instruction, which then costs the least of its kind ([`masked_latency`]).
/// `clipped` keeps each instruction's clip per box (an instruction has a few boxes, its
/// versions, over many iterations).
fn active<'f>(
    func: &'f Function,
    ivs: &cranelift_entity::SecondaryMap<Axis, i64>,
    clipped: &mut HashMap<(penguin::Inst, ActiveBox), Rc<InstData>>,
    i: penguin::Inst,
) -> Option<Active<'f>> {
    let d = &func.insts[i];
    if d.mask.is_empty() || d.mask_refusal().is_some() {
        return Some(Active::Whole(d));
    }
    let Some(shape) = d.iter_shape() else {
        return Some(Active::Whole(d));
    };
    let b = mask_box(&d.mask, shape, &mut |e| e.eval(ivs))?;
    let c = clipped.entry((i, b)).or_insert_with(|| {
        Rc::new(match b == [(0, shape[0]), (0, shape[1])] {
            // The mask keeps everything here: the instruction runs whole (its one version).
            true => InstData {
                mask: Vec::new(),
                ..d.clone()
            },
            false => d.clipped(shape, b),
        })
    });
    Some(Active::Clipped(Rc::clone(c)))
}

/// What [`active`] finds an instance runs: the instruction as written or clipped to a box.
enum Active<'f> {
    Whole(&'f InstData),
    Clipped(Rc<InstData>),
}

impl std::ops::Deref for Active<'_> {
    type Target = InstData;
    fn deref(&self) -> &InstData {
        match self {
            Active::Whole(d) => d,
            Active::Clipped(d) => d,
        }
    }
}

/// A walk over every instance, forward (each instance's earliest start; `ready` holds when
/// written values are ready) or in reverse (each instance's tail, the longest chain after its
/// end; `ready` holds, per region a later instruction reads, that reader's latency plus tail).
struct Walk<'f> {
    func: &'f Function,
    ivs: cranelift_entity::SecondaryMap<Axis, i64>,
    ready: BTreeMap<Tensor, Vec<Rect>>,
    /// The tensors some instruction reads.
    read: std::collections::BTreeSet<Tensor>,
    /// The HBM tensors some instruction writes, whose accesses keep their order (module doc).
    hbm: std::collections::BTreeSet<Tensor>,
    /// Forward: the earlier reads and writes of those tensors (`ready`, `first` and `queued` as a
    /// writer's in `ready`). Reverse: their later writes (as a reader's in `ready`).
    order: BTreeMap<Tensor, Vec<Rect>>,
    end: u64,
    reverse: bool,
    times: Vec<Instance>,
    /// The forward walk's [`Cost`] of each instance, in walk order.
    costs: Vec<Cost>,
    /// The clips of masked instructions ([`active`]).
    clipped: HashMap<(penguin::Inst, ActiveBox), Rc<InstData>>,
}

impl Walk<'_> {
    fn block(&mut self, block: &[Stmt]) {
        let order: Box<dyn Iterator<Item = &Stmt>> = if self.reverse {
            Box::new(block.iter().rev())
        } else {
            Box::new(block.iter())
        };
        for &s in order {
            let sd = &self.func.stmts[s];
            if !sd.preds.iter().all(|p| p.holds(&self.ivs)) {
                continue;
            }
            match &sd.kind {
                StmtKind::Insts(insts) => {
                    if self.reverse {
                        for &i in insts.iter().rev() {
                            self.inst_reverse(i);
                        }
                    } else {
                        for &i in insts {
                            self.inst(i);
                        }
                    }
                }
                StmtKind::Loop(a) => {
                    let ad = &self.func.axes[*a];
                    let vs: Box<dyn Iterator<Item = i64>> = if self.reverse {
                        Box::new((ad.lb..ad.ub).rev())
                    } else {
                        Box::new(ad.lb..ad.ub)
                    };
                    for v in vs {
                        self.ivs[*a] = v;
                        self.block(&ad.body);
                    }
                }
            }
        }
    }
    fn rect(&self, o: &Operand) -> Rect {
        let eval = |e: &AffineExpr| e.eval(&self.ivs);
        let lo: Vec<i64> = o.access.start.iter().map(eval).collect();
        let hi = lo
            .iter()
            .zip(&o.access.size)
            .map(|(&l, &n)| l + n as i64)
            .collect();
        let t = &self.func.tensors[o.tensor];
        // The slots, flattened (last block dimension fastest).
        let mut slot = 0i64;
        for (sel, b) in o.access.slots.iter().zip(&t.block) {
            slot = slot * i64::from(b.count) + eval(sel).rem_euclid(i64::from(b.count));
        }
        Rect {
            lo,
            hi,
            slot,
            ready: 0,
            first: 0,
            dma: false,
            queued: 0,
            dense: o.access.pattern.is_none(),
        }
    }

    /// The forward step. A read of a rectangle it covers waits for all of it (`ready`); one
    /// that meets it only in part may need only its first piece (`first`). A transfer's first
    /// piece starts once what it reads in rectangles that cover its whole read may be there
    /// (`first`; its other pieces may read other rows), and it ends once it has taken its
    /// latency from there and its least piece latency after its last input.
    fn inst(&mut self, i: penguin::Inst) {
        let Some(d) = active(self.func, &self.ivs, &mut self.clipped, i) else {
            return;
        };
        let d = &*d;
        let mut reads: Vec<&Operand> = d.srcs.iter().collect();
        if matches!(d.op, Op::Matmul { accumulate: true }) {
            reads.push(&d.dst);
        }
        let piece = piece_latency(self.func, d);
        // What a transfer reads from a transfer's writes it may follow on the same queue
        // (`_q`: only its piece's bytes after them, from the writer's start on).
        let mut waits = Waits::default();
        for o in &reads {
            let mut r = self.rect(o);
            r.dense &= d.mask.is_empty();
            let tile = self.func.tensors[o.tensor].memory != Memory::Hbm;
            if let Some(rects) = self.ready.get(&o.tensor) {
                for w in rects.iter().filter(|w| overlaps(w, &r)) {
                    waits.follow(w, &r, piece.is_some(), needs_all(&r, w, tile));
                }
            }
        }
        // A write of HBM follows the earlier reads and writes of its bytes (module doc).
        let hbm_dst = self.hbm.contains(&d.dst.tensor);
        if hbm_dst {
            let x = self.rect(&d.dst);
            if let Some(rects) = self.order.get(&d.dst.tensor) {
                for a in rects.iter().filter(|a| overlaps(a, &x)) {
                    waits.follow(a, &x, piece.is_some(), covers(&x, a));
                }
            }
        }
        let Waits {
            first,
            all,
            first_q,
            all_q,
        } = waits;
        let lat = min_latency(self.func, d);
        let (start, end, end_first) = match piece {
            Some(piece) => {
                let bytes = piece_queue_cycles(self.func, d).unwrap_or(0);
                let end = (first + lat).max(all + piece).max(all_q + bytes);
                (first, end, (first + piece).max(first_q + bytes))
            }
            None => (all, all + lat, all + lat),
        };
        self.times.push(Instance {
            inst: i,
            time: start,
        });
        let (lat, queue) = match crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs) {
            Some(tile) if d.mask.is_empty() => (
                split_latency(self.func, d).unwrap_or(lat),
                queue_cycles(self.func, d, tile, 1),
            ),
            // A transfer whose mask stays moves what it keeps: at least nothing.
            _ => (lat, 0),
        };
        self.costs.push(Cost { lat, queue });
        self.end = self.end.max(end);
        // This instance's accesses of HBM that later writes must follow. One that a newer
        // access covers is dropped: that only loosens the bound, and keeps the lists short.
        let hbm_srcs = reads.iter().filter(|o| self.hbm.contains(&o.tensor));
        let accessed: Vec<(Tensor, Rect)> = (hbm_srcs.map(|o| (o.tensor, self.rect(o))))
            .chain(hbm_dst.then(|| (d.dst.tensor, self.rect(&d.dst))))
            .collect();
        for (t, mut a) in accessed {
            a.ready = end;
            a.first = end_first.min(end);
            a.dma = piece.is_some();
            a.queued = if a.dma { start } else { end };
            let rects = self.order.entry(t).or_default();
            rects.retain(|old| !covers(&a, old));
            rects.push(a);
            keep_latest(rects);
        }
        if self.read.contains(&d.dst.tensor) {
            let mut w = self.rect(&d.dst);
            w.ready = end;
            w.first = end_first.min(end);
            w.dma = piece.is_some();
            w.queued = if w.dma { start } else { end };
            let rects = self.ready.entry(d.dst.tensor).or_default();
            rects.retain(|old| !covers(&w, old));
            rects.push(w);
        }
    }

    /// The reverse step: the instance's tail is the largest latency-plus-tail of the later
    /// readers of what it writes (the readers its write covers are fed by it, not by earlier
    /// writers); then its own reads become needs of earlier writers.
    ///
    /// Tails count from the end of the whole instruction. After a compute instruction, a
    /// reader starts when it ends; a transfer reading more than it wrote has a piece reading
    /// elsewhere, which only its least piece latency is sure to follow. After a transfer, a
    /// reader of all it wrote waits for its last piece (a transfer, for one piece after it);
    /// one reading part of it may need only pieces that ended sooner, and adds nothing.
    fn inst_reverse(&mut self, i: penguin::Inst) {
        let Some(d) = active(self.func, &self.ivs, &mut self.clipped, i) else {
            return;
        };
        let d = &*d;
        let w = self.rect(&d.dst);
        let dma = piece_latency(self.func, d).is_some();
        let tile = self.func.tensors[d.dst.tensor].memory != Memory::Hbm;
        let mut tail = 0u64;
        if let Some(rects) = self.ready.get_mut(&d.dst.tensor) {
            for r in rects.iter().filter(|r| overlaps(r, &w)) {
                let after = match (dma, r.dma) {
                    (false, false) => r.ready,
                    (false, true) if covers(&w, r) => r.ready,
                    (false, true) => r.first,
                    (true, _) if !needs_all(r, &w, tile) => 0,
                    (true, false) => r.ready,
                    // The reader may follow on the writer's queue: its piece's bytes.
                    (true, true) => r.queued,
                };
                tail = tail.max(after);
            }
            rects.retain(|r| !covers(&w, r));
        }
        // Later writes of the HBM bytes it reads or writes follow it (module doc): one that
        // covers them ends no sooner than its least piece's queue time after it (a transfer's
        // piece may be queued right behind this one's), or its least piece latency after a
        // compute instruction.
        let mut accessed: Vec<&Operand> = d.srcs.iter().collect();
        accessed.push(&d.dst);
        for o in accessed
            .into_iter()
            .filter(|o| self.hbm.contains(&o.tensor))
        {
            let x = self.rect(o);
            if let Some(rects) = self.order.get(&o.tensor) {
                for later in rects.iter().filter(|l| covers(l, &x)) {
                    tail = tail.max(if dma { later.queued } else { later.first });
                }
            }
        }
        self.times.push(Instance {
            inst: i,
            time: tail,
        });
        let need = tail + min_latency(self.func, d);
        let piece = piece_latency(self.func, d).map_or(need, |p| tail + p);
        let queued = piece_queue_cycles(self.func, d).map_or(piece, |q| tail + q);
        let mut reads: Vec<&Operand> = d.srcs.iter().collect();
        if matches!(d.op, Op::Matmul { accumulate: true }) {
            reads.push(&d.dst);
        }
        if self.hbm.contains(&d.dst.tensor) {
            let mut x = w.clone();
            x.ready = need;
            x.first = piece;
            x.dma = dma;
            x.queued = queued;
            let rects = self.order.entry(d.dst.tensor).or_default();
            rects.retain(|later| !covers(&x, later));
            rects.push(x);
            keep_latest(rects);
        }
        for o in reads {
            let mut r = self.rect(o);
            r.dense &= d.mask.is_empty();
            r.ready = need;
            r.first = piece;
            r.dma = dma;
            r.queued = queued;
            self.ready.entry(o.tensor).or_default().push(r);
        }
    }
}

/// What an instance waits for in the forward walk: its first piece's start (`first`) and, for
/// the end of the whole instruction, the last landing of what it follows through a semaphore
/// (`all`) or possibly on the same queue (`all_q`), and the first pieces it follows on the same
/// queue (`first_q`).
#[derive(Default)]
struct Waits {
    first: u64,
    all: u64,
    first_q: u64,
    all_q: u64,
}

impl Waits {
    /// The instance accessing `r` follows the earlier access `w` of overlapping bytes (a write it
    /// reads; or, for a write of HBM, a read or write it must not overtake). If it needs every
    /// piece of `w` (`all`, [`needs_all`]), some piece of the instance follows `w`'s last piece;
    /// otherwise perhaps only its first. If `w` covers `r`, every piece of the instance follows a
    /// piece of `w`. A transfer following a transfer may be queued right behind it (`_q`).
    fn follow(&mut self, w: &Rect, r: &Rect, transfer: bool, all: bool) {
        let landed = if all { w.ready } else { w.first };
        let queued = transfer && w.dma;
        match queued {
            true => self.all_q = self.all_q.max(landed),
            false => self.all = self.all.max(landed),
        }
        if covers(w, r) {
            match queued {
                true => {
                    self.first = self.first.max(w.queued);
                    self.first_q = self.first_q.max(w.first);
                }
                false => self.first = self.first.max(w.first),
            }
        }
    }
}

/// Whether an access of `r` that overlaps the earlier access `w` meets every piece of it: when it
/// covers `w`, or, for an on-chip tile (`tile`), when it is a box spanning all of `w`'s
/// partitions — a transfer's pieces split the partitions of its tile and each holds all of its
/// free elements there, so a box overlapping `w` in the free dimensions and spanning its
/// partitions overlaps every piece (an access pattern's rectangle is its bounding box, which may
/// meet `w` where no value of the pattern does).
fn needs_all(r: &Rect, w: &Rect, tile: bool) -> bool {
    r.dense && (covers(r, w) || (tile && spans_partitions(r, w)))
}

/// Whether `a` spans the partitions (first dimension) of `b`, in the same slot.
fn spans_partitions(a: &Rect, b: &Rect) -> bool {
    a.slot == b.slot
        && match (
            a.lo.first().zip(a.hi.first()),
            b.lo.first().zip(b.hi.first()),
        ) {
            (Some((&al, &ah)), Some((&bl, &bh))) => al <= bl && bh <= ah,
            _ => true,
        }
}

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.slot == b.slot
        && a.lo
            .iter()
            .zip(&a.hi)
            .zip(b.lo.iter().zip(&b.hi))
            .all(|((&al, &ah), (&bl, &bh))| al < bh && bl < ah)
}

fn covers(a: &Rect, b: &Rect) -> bool {
    a.slot == b.slot
        && a.lo
            .iter()
            .zip(&a.hi)
            .zip(b.lo.iter().zip(&b.hi))
            .all(|((&al, &ah), (&bl, &bh))| al <= bl && bh <= ah)
}

/// The elements per partition an operand accesses (an access pattern's values, not its bounding
/// box: the simulator's `N`).
fn free(o: &Operand) -> u64 {
    o.access.value_free()
}

/// The partitions an operand accesses.
fn partitions(o: &Operand) -> u64 {
    o.access.value_shape().first().copied().unwrap_or(1).max(1)
}

fn dtype(func: &Function, o: &Operand) -> DType {
    func.tensors[o.tensor].dtype
}

/// The bytes a transfer moves, as the simulator counts them: the tile's elements in the HBM
/// side's type (a store that narrows f32 to bf16 moves bf16).
fn transfer_bytes(func: &Function, d: &InstData, tile: &Operand) -> u64 {
    let hbm = match d.op {
        Op::Load => d.srcs.first(),
        _ => Some(&d.dst),
    };
    let dtype = hbm.map_or(func.tensors[tile.tensor].dtype, |o| {
        func.tensors[o.tensor].dtype
    });
    tile.access.value_shape().iter().product::<u64>() * dtype.size_bytes()
}

/// For a transfer, the least time one of its pieces takes from its issue to its effect: a
/// reader that waits piece by piece follows it by no more (`None` for a compute instruction).
pub fn piece_latency(func: &Function, d: &InstData) -> Option<u64> {
    let tile = crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs)?;
    if !d.mask.is_empty() {
        return Some(masked_latency(d));
    }
    (crate::cost::dma::split_choices(partitions(tile)).into_iter())
        .map(|p| {
            machine::dma_issue_cycles() + machine::DMA_LATENCY + queue_cycles(func, d, tile, p)
        })
        .min()
}

/// For a transfer, the least time one of its pieces keeps its queue: a piece queued behind the
/// transfer that wrote what it reads moves its bytes as soon as that one's last bytes have (a
/// queue is first in, first out, and the latency of a transfer overlaps the ones before it:
/// MACHINE.md), with no latency of its own after them (`None` for a compute instruction).
pub fn piece_queue_cycles(func: &Function, d: &InstData) -> Option<u64> {
    let tile = crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs)?;
    if !d.mask.is_empty() {
        return Some(machine::dma_queue_cycles(1));
    }
    (crate::cost::dma::split_choices(partitions(tile)).into_iter())
        .map(|p| queue_cycles(func, d, tile, p))
        .min()
}

/// The queue cycles of one of `p` pieces of transfer `d` of `tile` (all of it for `p = 1`), as the
/// simulator counts them: its bytes in 19-byte cycles, and for an indirect transfer one
/// descriptor per row, each row's bytes rounded up on its own (MACHINE.md, `isa::Inst::Dma`), so
/// that its pieces together take the same whatever the split.
fn queue_cycles(func: &Function, d: &InstData, tile: &Operand, p: u64) -> u64 {
    let bytes = transfer_bytes(func, d, tile);
    if d.op.is_indirect() {
        let rows = partitions(tile);
        return (rows / p).max(1) * machine::dma_queue_cycles(bytes / rows);
    }
    machine::dma_queue_cycles(bytes.div_ceil(p))
}

/// A transfer's least latency were its pieces free to overlap: `p` issues on `sp`, the fixed
/// latency and one piece's queue cycles, for the split that ends first (`None` for a compute
/// instruction or a masked transfer).
fn split_latency(func: &Function, d: &InstData) -> Option<u64> {
    let tile = crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs)?;
    if !d.mask.is_empty() {
        return None;
    }
    (crate::cost::dma::split_choices(partitions(tile)).into_iter())
        .map(|p| {
            p * machine::dma_issue_cycles() + machine::DMA_LATENCY + queue_cycles(func, d, tile, p)
        })
        .min()
}

/// A masked instruction moves or computes only the elements its mask keeps, which the walk does
/// not count: it takes the least any instruction of its kind takes (one element; a transfer
/// one issue, the latency and one element's bytes).
fn masked_latency(d: &InstData) -> u64 {
    if crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs).is_some() {
        return machine::dma_issue_cycles() + machine::dma_transfer(1);
    }
    let one = match d.engine {
        EngineClass::Tensor => match d.op {
            Op::Transpose => machine::transpose_cycles(1, 1),
            _ => machine::matmul_cycles(machine::matmul_dtype(DType::Bf16, DType::Bf16), 1, 1),
        },
        EngineClass::Scalar => machine::activation_cycles(1),
        EngineClass::GpSimd => machine::pool_cycles(1),
        _ => machine::vector_cycles(1)
            .min(machine::activation_cycles(1))
            .min(machine::pool_cycles(1)),
    };
    one.min(machine::vector_cycles(1))
}

/// The least time instruction `d` (an instance's, [`active`]) can take from its start to its
/// effect (module doc).
pub fn min_latency(func: &Function, d: &InstData) -> u64 {
    if !d.mask.is_empty() {
        return masked_latency(d);
    }
    if let Some(tile) = crate::cost::dma::dma_tile(&d.op, &d.dst, &d.srcs) {
        // A scatter's pieces move one after the other (module doc): one issue, the latency and
        // every piece's queue cycles.
        if matches!(d.op, Op::Scatter { .. }) {
            return machine::dma_issue_cycles()
                + machine::DMA_LATENCY
                + queue_cycles(func, d, tile, 1);
        }
        let bytes = transfer_bytes(func, d, tile);
        return split_latency(func, d)
            .unwrap_or(machine::dma_issue_cycles() + machine::dma_transfer(bytes));
    }
    let psum_input = d
        .srcs
        .iter()
        .any(|o| func.tensors[o.tensor].memory == Memory::Psum);
    let n = match d.op {
        Op::Reduce { .. } | Op::BnStats | Op::BnAggr => d.srcs.first().map_or(1, free),
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => d.srcs.first().map_or(1, free),
        _ => free(&d.dst),
    };
    let vector = match d.op {
        Op::TensorTensor { .. } => machine::tensor_tensor_cycles(n, psum_input),
        Op::TensorTensorScan { .. } => machine::scan_cycles(n, psum_input),
        Op::Reduce { .. } => machine::reduce_cycles(n),
        Op::BnStats | Op::BnAggr => machine::bn_cycles(n),
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => machine::top8_cycles(n),
        Op::Rand { .. } | Op::Dropout { .. } => machine::random_cycles(n),
        _ => machine::vector_cycles(n),
    };
    match d.engine {
        EngineClass::Tensor => match d.op {
            Op::Transpose => {
                let src = d.srcs.first().unwrap_or(&d.dst);
                machine::transpose_cycles(partitions(src), free(src))
            }
            _ => {
                let m = d.srcs.first().map_or(128, free);
                // The simulator's rate: bf16 only when both operands are bf16 (a bf16 operand
                // beside an f32 one is widened).
                let operand = |k: usize| d.srcs.get(k).map_or(DType::Bf16, |o| dtype(func, o));
                machine::matmul_cycles(machine::matmul_dtype(operand(0), operand(1)), m, n)
            }
        },
        EngineClass::Scalar => machine::activation_cycles(n),
        EngineClass::Vector => vector,
        EngineClass::GpSimd => machine::pool_cycles(n),
        EngineClass::Any | EngineClass::Dma => vector
            .min(machine::activation_cycles(n))
            .min(machine::pool_cycles(n)),
    }
}
