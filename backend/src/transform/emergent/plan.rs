//! Which tiles become rings, of how many slots, along which loop, and which loads may then be
//! issued ahead: the first step of emergent pipelining ([`super`]), before any loop is realised.
//!
//! [`ring_tiles`] looks, for every SBUF tile a DMA writes or reads and every PSUM tile, at the
//! innermost loop `L` that encloses all its accesses. When each iteration of `L` starts by writing
//! the whole tile (a load, or any operation that does not read it) unconditionally, before any
//! other access — or by filling it slice by slice with a loop of loads directly in its body
//! ([`filled_by_child_loop`]; that loop is then issued ahead as a whole, like a single load), or
//! by writing all of it in the box a mask keeps when every other access of the tile carries that
//! mask or computes, element by element, values only such accesses observe
//! ([`writes_rows_read_after`]: a ragged last iteration's load, compute and store), or by
//! writing it in parts, each read only once written in the same iteration
//! ([`filled_in_parts`]: column blocks of a tile computed one by one, then stored) — no value
//! of the tile that an effect depends on flows from one iteration of `L` to the next: the tile can be renamed per
//! iteration. It then becomes a ring of `N` slots along `L` (a block dimension, slot selector
//! `iv(L)`), which address rotation realises as `base + (r mod N) * stride`.
//!
//! The depth of a DMA tile's ring is the heuristic's ([`crate::cost::loop_cost::wanted_depth`]) between 2 and
//! [`MAX_RING_DEPTH`] (a loop whose tile wants more than [`MAX_DEPTH`] is bound by DMA latency),
//! at most the loop's trip count, lowered until SBUF holds every buffer ([`crate::cost::budget`]); a PSUM tile (an
//! accumulator, a transpose's result) becomes a ring of two banks when one is free, so that the
//! Tensor engine fills the next iteration's bank while another engine still reads this one's. A
//! loop annotated (`num_stages`) or extended by the annotated pipeliner, or of fewer than two
//! iterations, rings nothing. Each decision and its reason is logged.
//!
//! [`hoistable_loads`] is the one definition of the loads a realisation issues ahead (the single
//! shift, [`super::shift`]; the stages, [`super::stages`]; the nest, [`super::nest`]), and
//! [`innermost_first`] the order in which the loops are realised.
//!
//! Invariants after [`ring_tiles`]: a ringed tile is local and has exactly one block dimension,
//! along the loop it is listed under, and every access of it selects slot `iv(L)`; the rings fit
//! the budget counted with every ring chosen before them; nothing else in the function changed.

use super::remark::{EmergentRemark, SingleBuffered};
use crate::cost::budget;
use crate::cost::loop_cost::{wanted_depth, DmaFit, MAX_DEPTH, MAX_RING_DEPTH};
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{BlockDim, Memory, Op, StmtKind, TensorKind, TileDim};
use penguin::{Axis, Function, Inst, Stmt, Tensor};
use std::collections::{BTreeMap, HashMap};

/// One access of a tile.
#[derive(Clone, Debug)]
pub(crate) struct Use {
    pub stmt: Stmt,
    pub inst: Inst,
    /// The loops enclosing the access, outermost first.
    pub loops: Vec<Axis>,
    pub writes: bool,
    pub reads: bool,
}

/// The rings [`ring_tiles`] chose.
#[derive(Clone, Debug, Default)]
pub struct RingPlan {
    /// Per loop, its rings (tile, slots), in tile order.
    pub rings: BTreeMap<Axis, Vec<(Tensor, u32)>>,
    /// Loops where even the deepest ring cannot hide a tile's DMA behind the body's compute.
    pub dma_bound: BTreeMap<Axis, bool>,
}

/// Turns the load/store tiles and the PSUM tiles of un-annotated loops into rings (see the
/// module doc), logging each decision; returns the rings per loop.
pub fn ring_tiles(func: &mut Function, log: &mut Vec<EmergentRemark>) -> RingPlan {
    let mut plan = RingPlan::default();
    let mut sbuf_used = budget::sbuf_in_use(func);
    let mut psum_used = budget::psum_banks_in_use(func);
    let uses = collect_uses(func);
    for (&t, us) in &uses {
        let Some((l, depth)) = candidate_loop(func, t, us) else {
            continue;
        };
        if !starts_by_writing_all(func, &uses, t, l, depth) {
            log.push(EmergentRemark::StaysSingle {
                tile: func.display_name(t).to_string(),
                iv: func.display_iv(l).to_string(),
                why: SingleBuffered::NotWrittenFirst,
            });
            continue;
        }
        let slots = if func.tensors[t].memory == Memory::Psum {
            psum_ring(func, t, l, &mut psum_used, log)
        } else {
            let fit = wanted_depth(func, t, l);
            *plan.dma_bound.entry(l).or_default() |= fit.wanted > u64::from(MAX_DEPTH);
            let stored = loaded_and_stored(func, us);
            transfer_ring(func, t, l, &fit, stored, &mut sbuf_used, log)
        };
        let Some(count) = slots else { continue };
        func.tensors[t].block = vec![BlockDim { axis: l, count }];
        plan.rings.entry(l).or_default().push((t, count));
        rename(func, us, t, l);
    }
    plan
}

/// Every access of every tensor, in program order (within an instruction, the sources first).
pub(crate) fn collect_uses(func: &Function) -> BTreeMap<Tensor, Vec<Use>> {
    let mut uses: BTreeMap<Tensor, Vec<Use>> = BTreeMap::new();
    func.walk_stmts(|s, loops| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                let acc_reads_dst = matches!(d.op, Op::Matmul { accumulate: true });
                let mut add = |t: Tensor, w: bool, r: bool| {
                    uses.entry(t).or_default().push(Use {
                        stmt: s,
                        inst: i,
                        loops: loops.to_vec(),
                        writes: w,
                        reads: r,
                    })
                };
                for o in &d.srcs {
                    add(o.tensor, false, true);
                }
                add(d.dst.tensor, true, acc_reads_dst);
            }
        }
    });
    uses
}

/// The loop a ring of tile `t` would run along, with its depth in the loop tree (the number of
/// loops from the top down to it): the innermost loop enclosing every access, for a local,
/// unblocked SBUF tile that a DMA moves or a PSUM tile, when that loop is un-annotated and runs at
/// least twice.
fn candidate_loop(func: &Function, t: Tensor, us: &[Use]) -> Option<(Axis, usize)> {
    let td = &func.tensors[t];
    if td.kind != TensorKind::Local || !td.block.is_empty() {
        return None;
    }
    let psum = td.memory == Memory::Psum;
    let dma = us
        .iter()
        .any(|u| matches!(func.insts[u.inst].op, Op::Load | Op::Store));
    if !(dma && td.memory == Memory::Sbuf || psum) {
        return None;
    }
    let common = common_loops(us);
    let &l = common.last()?;
    let ad = &func.axes[l];
    if ad.attrs.pipelined.is_some() || ad.attrs.num_stages.is_some() || ad.trip_count() < 2 {
        return None;
    }
    Some((l, common.len()))
}

/// The loops that enclose every access of `us`, outermost first.
pub(super) fn common_loops(us: &[Use]) -> Vec<Axis> {
    let Some((first, rest)) = us.split_first() else {
        return Vec::new();
    };
    let mut common = first.loops.clone();
    for u in rest {
        let n = common
            .iter()
            .zip(&u.loops)
            .take_while(|(a, b)| a == b)
            .count();
        common.truncate(n);
    }
    common
}

/// Whether every iteration of loop `l` (at `depth` in the loop tree) starts by writing all of
/// tile `t` before any other access of it (`us` in program order; within an instruction the
/// sources come first, so a read-modify-write shows its read first).
fn starts_by_writing_all(
    func: &Function,
    uses: &BTreeMap<Tensor, Vec<Use>>,
    t: Tensor,
    l: Axis,
    depth: usize,
) -> bool {
    let us = &uses[&t];
    let first = &us[0];
    let fd = &func.insts[first.inst];
    let shape = &func.tensors[t].shape;
    let whole = fd.dst.tensor == t
        && (fd.writes_whole(shape)
            || writes_rows_read_after(func, uses, t, l, depth) && !fd.op.is_indirect());
    let direct = first.loops.len() == depth && func.stmts[first.stmt].preds.is_empty();
    // Or the first iteration of a loop directly in `l`'s body, unguarded (a folded
    // accumulation's overwriting matmul): every iteration of `l` still writes it all first.
    let first_of_child = first.loops.len() == depth + 1
        && first.loops.last().is_some_and(|&c| {
            let cd = &func.axes[c];
            cd.ub > cd.lb
                && func.stmts[first.stmt].preds
                    == [Predicate {
                        expr: AffineExpr::iv(c),
                        cmp: CmpOp::Eq,
                        bound: cd.lb,
                    }]
                && func.axes[l].body.iter().any(|&b| {
                    func.stmts[b].kind == StmtKind::Loop(c) && func.stmts[b].preds.is_empty()
                })
        });
    let filled = filled_by_child_loop(func, us, t, l);
    first.writes && !first.reads && (whole && (direct || first_of_child) || filled)
        || filled_in_parts(func, us, t, depth)
}

/// The most written boxes [`filled_in_parts`] keeps (a bound on its coverage test).
const MAX_PARTS: usize = 16;

/// Whether every iteration of the loop at `depth` reads of tile `t` only elements it wrote
/// before in the same iteration, by writes of parts of it (`both[:, 0:8] = max8(x)`, a read of
/// `both[:, 0:8]`, then `both[:, 8:16] = ...` and a store of all of `both`): every access is an
/// unguarded, unmasked box or access pattern at fixed elements directly in the loop's body, and
/// each read's elements lie in the union of the elements written before it. Then no value flows
/// from one iteration to the next, as when one write of all of it comes first. Boxes are
/// compared as boxes ([`crate::cost::boxes::union_covers`]); when some access is a pattern (the
/// strided columns of a tile filled by one copy per column phase, a reversed block written
/// element by element), as sets of elements ([`Cells`]), for a tile of at most [`MAX_CELLS`].
fn filled_in_parts(func: &Function, us: &[Use], t: Tensor, depth: usize) -> bool {
    let fixed = |a: &penguin::ir::Access| {
        a.slots.is_empty() && a.start.iter().all(|e| e.terms().is_empty())
    };
    let boxed = |a: &penguin::ir::Access| -> Vec<(i128, i128)> {
        (a.start.iter().zip(&a.size))
            .map(|(e, &n)| {
                let c = i128::from(e.constant_term());
                (c, c + i128::from(n))
            })
            .collect()
    };
    let shape = &func.tensors[t].shape;
    let patterned = (us.iter()).any(|u| {
        let d = &func.insts[u.inst];
        (d.srcs.iter().chain([&d.dst])).any(|o| o.tensor == t && o.access.pattern.is_some())
    });
    let mut cells = if patterned {
        match Cells::new(shape) {
            Some(c) => Some(c),
            None => return false,
        }
    } else {
        None
    };
    let mut written: Vec<Vec<(i128, i128)>> = Vec::new();
    let mut last = None;
    for u in us {
        if last == Some(u.inst) {
            continue;
        }
        last = Some(u.inst);
        let d = &func.insts[u.inst];
        if u.loops.len() != depth
            || !func.stmts[u.stmt].preds.is_empty()
            || !d.mask.is_empty()
            || d.op.is_indirect()
        {
            return false;
        }
        let reads = (d.srcs.iter().filter(|o| o.tensor == t)).chain(
            (d.dst.tensor == t && matches!(d.op, Op::Matmul { accumulate: true }))
                .then_some(&d.dst),
        );
        for o in reads {
            let covered = match &cells {
                Some(c) => fixed(&o.access) && c.holds(&o.access) == Some(true),
                None => {
                    fixed(&o.access)
                        && crate::cost::boxes::union_covers(&written, &boxed(&o.access))
                }
            };
            if !covered {
                return false;
            }
        }
        if d.dst.tensor == t {
            if !fixed(&d.dst.access) || written.len() >= MAX_PARTS {
                return false;
            }
            if let Some(c) = &mut cells {
                if c.mark(&d.dst.access).is_none() {
                    return false;
                }
            }
            written.push(boxed(&d.dst.access));
        }
    }
    !written.is_empty()
}

/// The most elements of a tile whose parts [`filled_in_parts`] follows element by element.
const MAX_CELLS: u64 = 1 << 16;

/// Which elements of a tile the writes so far reached, one flag per element (row-major), for
/// [`filled_in_parts`] when some access of the tile is an access pattern.
struct Cells {
    shape: Vec<u64>,
    set: Vec<bool>,
}

impl Cells {
    /// No element written, or `None` for a tile of more than [`MAX_CELLS`] elements.
    fn new(shape: &[u64]) -> Option<Cells> {
        let n = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))?;
        (n <= MAX_CELLS).then(|| Cells {
            shape: shape.to_vec(),
            set: vec![false; n as usize],
        })
    }

    /// The flat index of every element a fixed access (constant starts) reaches, or `None`
    /// when one lies outside the tile or the access has more than [`MAX_CELLS`] values.
    fn elements(&self, a: &penguin::ir::Access) -> Option<Vec<usize>> {
        let start: Vec<i64> = a.start.iter().map(AffineExpr::constant_term).collect();
        let offsets: Vec<Vec<i64>> = match &a.pattern {
            Some(p) => {
                let values = (p.axes.iter()).try_fold(1u64, |n, x| n.checked_mul(x.count))?;
                if values > MAX_CELLS {
                    return None;
                }
                p.offsets()
            }
            None => {
                let values = a.size.iter().try_fold(1u64, |n, &d| n.checked_mul(d))?;
                if values > MAX_CELLS || a.size.len() != self.shape.len() {
                    return None;
                }
                let mut out = vec![vec![]];
                for &n in &a.size {
                    out = (out.iter())
                        .flat_map(|b| {
                            (0..n as i64).map(move |i| {
                                let mut v: Vec<i64> = b.clone();
                                v.push(i);
                                v
                            })
                        })
                        .collect();
                }
                out
            }
        };
        (offsets.iter())
            .map(|off| {
                if off.len() != self.shape.len() || start.len() != self.shape.len() {
                    return None;
                }
                let mut flat = 0usize;
                for ((&s, &o), &d) in start.iter().zip(off).zip(&self.shape) {
                    let x = u64::try_from(s.checked_add(o)?).ok()?;
                    if x >= d {
                        return None;
                    }
                    flat = flat.checked_mul(d as usize)?.checked_add(x as usize)?;
                }
                Some(flat)
            })
            .collect()
    }

    /// Marks the elements `a` writes; `None` when they cannot be listed ([`Self::elements`]).
    fn mark(&mut self, a: &penguin::ir::Access) -> Option<()> {
        for k in self.elements(a)? {
            self.set[k] = true;
        }
        Some(())
    }

    /// Whether every element `a` reads was written; `None` when they cannot be listed.
    fn holds(&self, a: &penguin::ir::Access) -> Option<bool> {
        Some(self.elements(a)?.into_iter().all(|k| self.set[k]))
    }
}

/// Whether the first access of tile `t` (its uses in program order) writes all of it in the rows
/// its partition mask `M` keeps, and no other access observes a row that `M` drops: a load masked
/// by `p < bound(iv)` (the rest rows of a ragged last iteration), and the compute and store that
/// carry the same mask or compute, row by row, values that only such accesses observe. No value
/// of the tile that some effect of the kernel depends on then flows from one iteration to the
/// next: the rows an iteration's results depend on are those it wrote first.
///
/// The rule: `M` is not empty and the first access writes all of `t` under it; every other
/// access of `t` is **row-wise** (a maskable, direct operation, every operand of `t` or of a tile
/// derived from it mapping the instruction's partition index one to one onto that tile's
/// partitions: no access pattern, starting at partition 0, as many partitions as the
/// instruction's iteration space and as `t`; and its free index onto the tile's free elements
/// when `M` bounds the free index too) and either carries every bound of `M` (it may hold
/// more), or reads `t` into a tile **derived within the iteration**
/// ([`RowFlow::rows_dead_outside`], written one to one and, under a bound on the free index, by
/// an operation that keeps every element in its place): whatever it computes in the elements
/// that `M` drops (from values of an earlier iteration, or of none once `t` is a ring) reaches
/// no effect. A tile written before the loop and updated from `t` (an accumulator) is no such
/// tile: its dropped rows would carry the garbage on.
fn writes_rows_read_after(
    func: &Function,
    uses: &BTreeMap<Tensor, Vec<Use>>,
    t: Tensor,
    l: Axis,
    depth: usize,
) -> bool {
    let us = &uses[&t];
    let shape = &func.tensors[t].shape;
    let first = &func.insts[us[0].inst];
    let m = &first.mask;
    if m.is_empty() || !first.dst.access.is_whole(shape) {
        return false;
    }
    let mut derived = vec![t];
    let rows = RowFlow {
        func,
        uses,
        m,
        l,
        depth,
        partitions: shape.first().copied(),
        free: (m.iter().any(|b| b.dim == TileDim::Free)).then(|| shape.get(1).copied()),
    };
    us[1..].iter().all(|u| rows.dead_outside(u, &mut derived))
}

/// The walk of [`writes_rows_read_after`]: the uses of every tile, the mask `M`, the loop `l` (at
/// `depth`) and the partitions of the masked tile.
struct RowFlow<'a> {
    func: &'a Function,
    uses: &'a BTreeMap<Tensor, Vec<Use>>,
    m: &'a [penguin::ir::MaskBound],
    l: Axis,
    depth: usize,
    partitions: Option<u64>,
    /// When `M` bounds the free index too: the free elements of the masked tile.
    free: Option<Option<u64>>,
}

impl RowFlow<'_> {
    /// Whether operand `o` of instruction `d` maps `d`'s partition index one to one onto the
    /// partitions of its tile, when that tile is one of `derived`.
    fn identity(
        &self,
        d: &penguin::ir::InstData,
        o: &penguin::ir::Operand,
        derived: &[Tensor],
    ) -> bool {
        !derived.contains(&o.tensor) || self.maps_one_to_one(d, o)
    }

    /// Whether operand `o` of instruction `d` maps `d`'s partition index (and, under a bound of
    /// `M` on the free index, its free index) one to one onto its tile, of the masked tile's
    /// shape.
    fn maps_one_to_one(&self, d: &penguin::ir::InstData, o: &penguin::ir::Operand) -> bool {
        o.access.pattern.is_none()
            && o.access.start.first().and_then(|e| e.as_constant()) == Some(0)
            && o.access.size.first().copied() == self.partitions
            && self.func.tensors[o.tensor].shape.first().copied() == self.partitions
            && d.iter_shape().map(|s| s[0]) == self.partitions
            && self.free.is_none_or(|f| {
                o.access.start.get(1).and_then(|e| e.as_constant()) == Some(0)
                    && o.access.size.get(1).copied() == f
                    && self.func.tensors[o.tensor].shape.get(1).copied() == f
                    && d.iter_shape().map(|s| s[1]) == f
            })
    }

    /// Whether access `u` of a tile of `derived` observes no row that `M` drops except into
    /// values no effect depends on ([`Self::rows_dead_outside`]): it is row-wise, and carries `M` or
    /// writes a tile whose rows that `M` drops are dead. `derived` grows with the tiles found.
    fn dead_outside(&self, u: &Use, derived: &mut Vec<Tensor>) -> bool {
        let d = &self.func.insts[u.inst];
        let row_wise = penguin::ir::InstData::maskable(&d.op)
            && !d.op.is_indirect()
            && self.identity(d, &d.dst, derived)
            && d.srcs.iter().all(|o| self.identity(d, o, derived));
        if !row_wise {
            return false;
        }
        if self.m.iter().all(|b| d.mask.contains(b)) {
            return true;
        }
        // It reads or writes elements `M` drops: what it writes there must be dead. Under a
        // bound on the free index, only where it maps each element to itself: an operation that
        // combines the free elements of a row (a reduction, a scan, the eight largest) would
        // carry dropped columns into kept ones.
        let combines_row = matches!(
            d.op,
            Op::Reduce { .. }
                | Op::TensorTensorScan { .. }
                | Op::BnStats
                | Op::BnAggr
                | Op::Max8
                | Op::FindIndex8
                | Op::MatchReplace8 { .. }
                | Op::LocalGather { .. }
                | Op::SequenceBounds
        );
        // Rows of one partition reach another: never the identity on rows.
        if matches!(d.op, Op::Shuffle { .. } | Op::LocalGather { .. }) {
            return false;
        }
        !(self.free.is_some() && combines_row)
            && self.maps_one_to_one(d, &d.dst)
            && self.rows_dead_outside(d.dst.tensor, derived)
    }

    /// Whether the rows that `M` drops of tile `x` are dead: `x` is already derived, or it is a
    /// local on-chip tile whose every access is in loop `l`, the first written whole directly in
    /// `l`'s body, unguarded, so nothing of it flows from one iteration to the next, and every
    /// other access is [`Self::dead_outside`].
    fn rows_dead_outside(&self, x: Tensor, derived: &mut Vec<Tensor>) -> bool {
        if derived.contains(&x) {
            return true;
        }
        let xd = &self.func.tensors[x];
        if xd.kind != TensorKind::Local || xd.memory == Memory::Hbm {
            return false;
        }
        let Some((first, rest)) = self.uses.get(&x).and_then(|us| us.split_first()) else {
            return false;
        };
        let fd = &self.func.insts[first.inst];
        let writes_first = first.writes
            && !first.reads
            && fd.dst.tensor == x
            && fd.writes_whole(&xd.shape)
            && first.loops.len() == self.depth
            && self.func.stmts[first.stmt].preds.is_empty();
        let within = |u: &Use| u.loops.get(self.depth - 1) == Some(&self.l);
        if !(writes_first && within(first) && rest.iter().all(within)) {
            return false;
        }
        derived.push(x);
        rest.iter().all(|u| self.dead_outside(u, derived))
    }
}

/// The slots of PSUM tile `t`'s ring along `l`: two banks when one is free (counted into
/// `psum_used`), else `None`; logged either way.
fn psum_ring(
    func: &Function,
    t: Tensor,
    l: Axis,
    psum_used: &mut u64,
    log: &mut Vec<EmergentRemark>,
) -> Option<u32> {
    let (td, ad) = (&func.tensors[t], &func.axes[l]);
    let need = budget::psum_slot_banks(td);
    if !budget::psum_fits(*psum_used + need) {
        log.push(EmergentRemark::PsumStaysOne {
            tile: func.display_name(t).to_string(),
            iv: func.display_iv(l).to_string(),
        });
        return None;
    }
    *psum_used += need;
    log.push(EmergentRemark::PsumRing {
        iv: func.display_iv(l).to_string(),
        trip: ad.trip_count(),
        tile: func.display_name(t).to_string(),
    });
    Some(2)
}

/// Whether tile `t` (its uses `us`) is written by a load and read by a store: the store's
/// transfer holds the slot for a DMA latency after `sp` issues it, behind its iteration's
/// compute, so its ring gets one slot more than the prefetch depth needs (issue 32).
pub(crate) fn loaded_and_stored(func: &Function, us: &[Use]) -> bool {
    let op = |u: &Use| &func.insts[u.inst].op;
    us.iter().any(|u| u.writes && matches!(op(u), Op::Load))
        && us.iter().any(|u| u.reads && matches!(op(u), Op::Store))
}

/// The slots of DMA tile `t`'s ring along `l`: the heuristic's depth `fit` between 2 and
/// [`MAX_RING_DEPTH`] (one more for a tile a store reads, [`loaded_and_stored`]), at most the
/// times the loop's body runs (`runs`), lowered until SBUF holds it (counted into `sbuf_used`); `None` when not even
/// two slots fit. Logged either way.
fn transfer_ring(
    func: &Function,
    t: Tensor,
    l: Axis,
    fit: &DmaFit,
    stored: bool,
    sbuf_used: &mut u64,
    log: &mut Vec<EmergentRemark>,
) -> Option<u32> {
    let (td, ad) = (&func.tensors[t], &func.axes[l]);
    let &DmaFit {
        dma,
        compute,
        pieces,
        bytes,
        ..
    } = fit;
    let mut depth = transfer_depth(func, l, fit, stored);
    let copy = budget::slot_bytes(td, 1);
    while depth >= 2 && !budget::sbuf_fits(*sbuf_used + copy * u64::from(depth - 1)) {
        depth -= 1;
    }
    if depth < 2 {
        log.push(EmergentRemark::StaysSingle {
            tile: func.display_name(t).to_string(),
            iv: func.display_iv(l).to_string(),
            why: SingleBuffered::NoRoom,
        });
        return None;
    }
    *sbuf_used += copy * u64::from(depth - 1);
    log.push(EmergentRemark::TransferRing {
        iv: func.display_iv(l).to_string(),
        trip: ad.trip_count(),
        tile: func.display_name(t).to_string(),
        slots: depth,
        ahead: depth - 1 - u32::from(stored && depth >= 3),
        dma,
        pieces,
        piece_bytes: bytes / pieces,
        compute,
    });
    Some(depth)
}

/// The slots a ring of a transferred tile wants along `l`, SBUF not counted: the heuristic's
/// depth `fit` between 2 and [`MAX_RING_DEPTH`], one more for a tile a store reads (`stored`,
/// [`loaded_and_stored`]), at most the times the loop's body runs. The one rule of the rings
/// [`ring_tiles`] builds and of the slots `crate::transform::ring_slots` adds to a transferred
/// tile's ring on any path.
pub(crate) fn transfer_depth(func: &Function, l: Axis, fit: &DmaFit, stored: bool) -> u32 {
    transfer_depth_of_runs(body_runs(func, l), fit, stored)
}

/// [`transfer_depth`] of a loop whose body runs `runs` times ([`body_runs`]).
pub(crate) fn transfer_depth_of_runs(runs: u64, fit: &DmaFit, stored: bool) -> u32 {
    // No deeper than the loop's body runs (`runs`, its trip times the trips around it): every
    // run then has a slot of its own (measured: capped at the trip plus the store's slot
    // instead, sched_stream's stream_store_loaded ran 3.4% slower and sched_phases'
    // phases_stores_first 1.7% faster; capped at the trip alone, a ring realised across its nest
    // lost slots: the public mm-nl-spmd ran 13% slower).
    let cap = u32::try_from(runs).unwrap_or(u32::MAX).max(2);
    (fit.wanted.clamp(2, u64::from(MAX_RING_DEPTH)) as u32 + u32::from(stored)).min(cap)
}

/// The times the body of loop `l` runs: its trip times the trips of the loops around it (a ring
/// realised across its nest rotates over all of them).
fn body_runs(func: &Function, l: Axis) -> u64 {
    let mut around: Vec<Axis> = Vec::new();
    func.walk_stmts(|s, loops| {
        if func.stmts[s].kind == StmtKind::Loop(l) {
            around = loops.to_vec();
        }
    });
    body_runs_within(func, &around, l)
}

/// The loops around every loop statement of `func` (of a loop with several statements, the
/// last one's in program order): [`body_runs`]'s `around` of every loop, from one walk.
pub(crate) fn loops_around(func: &Function) -> HashMap<Axis, Vec<Axis>> {
    let mut around = HashMap::new();
    func.walk_stmts(|s, loops| {
        if let StmtKind::Loop(l) = func.stmts[s].kind {
            around.insert(l, loops.to_vec());
        }
    });
    around
}

/// The times the body of loop `l` runs within the loops `around` it ([`body_runs`]).
pub(crate) fn body_runs_within(func: &Function, around: &[Axis], l: Axis) -> u64 {
    (around.iter().chain([&l]))
        .map(|&a| u64::try_from(func.axes[a].trip_count()).unwrap_or(0))
        .fold(1, u64::saturating_mul)
}

/// Points every access of tile `t` at the ring slot of the current iteration of loop `l`.
fn rename(func: &mut Function, us: &[Use], t: Tensor, l: Axis) {
    let sel = AffineExpr::iv(l);
    for u in us {
        let d = &mut func.insts[u.inst];
        if d.dst.tensor == t {
            d.dst.access.slots = vec![sel.clone()];
        }
        for o in &mut d.srcs {
            if o.tensor == t {
                o.access.slots = vec![sel.clone()];
            }
        }
    }
}

/// The ringed loops, innermost first (deepest in the loop tree first, then in entity order): a
/// loop nested in un-annotated loops is realised across its nest before an enclosing loop is
/// staged (staging guards the inner loop statement, which the nest realisation requires
/// unguarded; staging after it shifts the whole nest uniformly).
pub fn innermost_first(
    func: &Function,
    rings: BTreeMap<Axis, Vec<(Tensor, u32)>>,
) -> Vec<(Axis, Vec<(Tensor, u32)>)> {
    let mut depth: BTreeMap<Axis, usize> = BTreeMap::new();
    func.walk_stmts(|s, loops| {
        if let StmtKind::Loop(a) = func.stmts[s].kind {
            depth.insert(a, loops.len());
        }
    });
    let mut ringed: Vec<(Axis, Vec<(Tensor, u32)>)> = rings.into_iter().collect();
    ringed.sort_by_key(|(l, _)| (std::cmp::Reverse(depth.get(l).copied().unwrap_or(0)), *l));
    ringed
}

/// The loads of loop `l` that may be issued ahead of the rest of its body, in body order, with
/// the ring each fills and the ring's depth: direct, unguarded, single-instruction statements that
/// load a whole ring tile from a kernel input (which nothing writes) or from an HBM tensor that
/// nothing in `l`'s outermost enclosing loop writes ([`unwritten_in_nest`]: scratch stored by
/// an earlier loop and read back in this one), so moving them earlier changes no value; with `loops`, also a direct, unguarded loop whose body is one such load
/// filling a ring tile slice by slice ([`filled_by_child_loop`]). Every realisation of an
/// emergent ring ([`super::shift`], [`super::stages`], [`super::nest`]) hoists exactly these
/// (only the single shift hoists loops).
pub fn hoistable_loads(
    func: &Function,
    l: Axis,
    rings: &[(Tensor, u32)],
    loops: bool,
) -> Vec<(Stmt, Tensor, u32)> {
    let mut out = Vec::new();
    for &s in &func.axes[l].body {
        let sd = &func.stmts[s];
        if !sd.preds.is_empty() {
            continue;
        }
        let inst = match &sd.kind {
            StmtKind::Insts(insts) if insts.len() == 1 => insts[0],
            StmtKind::Loop(c) if loops => match single_load(func, *c) {
                Some(i) => i,
                None => continue,
            },
            _ => continue,
        };
        let d = &func.insts[inst];
        let from_input = d.srcs.first().is_some_and(|o| {
            func.tensors[o.tensor].kind.is_read_only() || unwritten_in_nest(func, l, o.tensor)
        });
        let ring = rings.iter().find(|(t, _)| *t == d.dst.tensor);
        if let (Op::Load, true, Some(&(rt, depth))) = (&d.op, from_input, ring) {
            // A load that does not write the ring alone cannot move: another write of the slot
            // (a second load of the same tile later in the body) would then come between it
            // and its readers, or, hoisted too, overwrite it before they read it.
            if count_writers(func, rt) != 1 {
                continue;
            }
            out.push((s, rt, depth));
        }
    }
    out
}

/// Whether `t` is an HBM tensor that no statement of the outermost loop enclosing loop `l` (`l`
/// itself at the top level) writes: every realisation issues `l`'s loads earlier only within
/// that loop's execution (ahead in `l`, or across the nest above it), so a load of `t` reads
/// the same values wherever it moves there.
fn unwritten_in_nest(func: &Function, l: Axis, t: Tensor) -> bool {
    if func.tensors[t].memory != Memory::Hbm {
        return false;
    }
    let mut outer = l;
    func.walk_stmts(|s, loops| {
        if func.stmts[s].kind == StmtKind::Loop(l) {
            outer = loops.first().copied().unwrap_or(l);
        }
    });
    let mut stack: Vec<Stmt> = func.axes[outer].body.clone();
    while let Some(s) = stack.pop() {
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => {
                if insts.iter().any(|&i| func.insts[i].dst.tensor == t) {
                    return false;
                }
            }
            StmtKind::Loop(a) => stack.extend(func.axes[*a].body.iter().copied()),
        }
    }
    true
}

/// The instruction of loop `c`'s body when that body is one unguarded statement of one load.
fn single_load(func: &Function, c: Axis) -> Option<Inst> {
    let [s] = func.axes[c].body[..] else {
        return None;
    };
    let sd = &func.stmts[s];
    match &sd.kind {
        StmtKind::Insts(insts) if insts.len() == 1 && sd.preds.is_empty() => {
            let i = insts[0];
            (func.insts[i].op == Op::Load).then_some(i)
        }
        _ => None,
    }
}

/// Whether every iteration of loop `l` starts by filling all of tile `t` with a loop directly in
/// its body: an unguarded loop `c` whose body is one unguarded load of a kernel input into `t`,
/// the first access of `t` (`us` in program order), writing one slice of `t` per iteration
/// (in one dimension, the start is `size · (iv(c) − lb)`, and the slices of the `trip` iterations
/// tile the dimension; every other dimension whole), with no other access of `t` in `c`.
fn filled_by_child_loop(func: &Function, us: &[Use], t: Tensor, l: Axis) -> bool {
    let Some(first) = us.first() else {
        return false;
    };
    let Some(&c) = first.loops.last() else {
        return false;
    };
    let depth = first.loops.len();
    if depth < 2 || first.loops[depth - 2] != l {
        return false;
    }
    let direct = func.axes[l]
        .body
        .iter()
        .any(|&b| func.stmts[b].kind == StmtKind::Loop(c) && func.stmts[b].preds.is_empty());
    let Some(i) = single_load(func, c) else {
        return false;
    };
    if !direct || i != first.inst || us.iter().any(|u| u.inst != i && u.loops.contains(&c)) {
        return false;
    }
    let d = &func.insts[i];
    if d.dst.tensor != t
        || d.dst.access.pattern.is_some()
        || !d
            .srcs
            .first()
            .is_some_and(|o| func.tensors[o.tensor].kind.is_read_only())
    {
        return false;
    }
    let (cd, td) = (&func.axes[c], &func.tensors[t]);
    let mut sliced = 0;
    for ((start, &size), &dim) in d
        .dst
        .access
        .start
        .iter()
        .zip(&d.dst.access.size)
        .zip(&td.shape)
    {
        let whole = start.as_constant() == Some(0) && size == dim;
        let size_i = size as i64;
        let slice = start.terms() == [(c, size_i)]
            && start.constant_term() == -size_i * cd.lb
            && size.checked_mul(cd.trip_count().max(0) as u64) == Some(dim);
        match (whole, slice) {
            (true, _) => {}
            (false, true) => sliced += 1,
            (false, false) => return false,
        }
    }
    sliced == 1
}

/// How many instructions of the function write tensor `x`.
pub(super) fn count_writers(func: &Function, x: Tensor) -> usize {
    let mut n = 0;
    func.walk_stmts(|s, _| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            n += insts
                .iter()
                .filter(|&&i| func.insts[i].dst.tensor == x)
                .count();
        }
    });
    n
}
