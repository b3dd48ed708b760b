//! Whether a ring keeps every read when it gets more slots: the one rule of every pass that
//! deepens a ring that already exists ([`crate::codegen::expand`]'s one more slot for a recurrence,
//! [`crate::transform::emergent::carry`]'s slots dividing the trip count).
//!
//! A read of ring `t` (`n` slots along loop `l`) with selector `iv + c` reads slot
//! `(iv + c) mod n`: the last value written there, whatever selector wrote it. With `m > n`
//! slots the same selector may name another slot, so a ring is deepened only when every read
//! provably finds, with `m` slots as with `n`, the write of the same selector value
//! ([`compute_reads_kept`]). The selectors themselves are never rewritten: a read whose offset
//! only means its value modulo `n` (such as `iv + 1` on a ring of 2, or `iv - 1` on a ring of 1
//! after a write of `iv` in the same iteration) keeps the ring as it is.
//!
//! The rule, for a loop that is not peeled: the tile is accessed only directly in `l`'s body; its
//! writers all select slot `iv + c_w` and run in the same iterations, and together they write
//! every element of it (only writes of constant boxes, with no mask and no index, count as
//! writing their box: a tile filled by a memset and then partly by a gather, or by two halves,
//! is a renamable value like a tile one instruction writes whole), or one writer alone writes
//! part of it under a mask and every read reads only what that write wrote (its box is the
//! writer's, element for element, and its mask holds every bound of the writer's taken at the
//! writer's iteration: a partial last tile, `mask(p < 522 − 128·t)` written and read a stage later
//! under `p < 650 − 128·t`); and every read of slot
//! `iv + c_r` finds the writers' slot `iv + c_w` filled `0 < c_w − c_r < n` iterations earlier,
//! with the writers on at that iteration whenever the reader is (compared as intervals of
//! iterations, [`crate::cost::guards`]), or reads in the iteration that writes it (`c_w = c_r`)
//! only elements the writes before it in the body hold. Then every read finds the value of the
//! same writes with any `m >= n` slots: a slot holds nothing of an older iteration. For a **peeled** loop (`penguin::pipeline::peel`),
//! whose prologue and epilogue copies access the ring at constant slots beside it, the accesses
//! of the block that holds the loop are walked in program order instead (see
//! [`peeled_reads_kept`]), with `n` and with `m` slots.
//!
//! Invariant: [`compute_reads_kept`] only answers; it changes nothing.

use crate::cost::guards::compute_guard_box;
use penguin::affine::AffineExpr;
use penguin::ir::{MaskBound, Op, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::ops::Range;

/// The largest peeled loop whose ring accesses [`peeled_reads_kept`] walks.
const MAX_ENUMERATION: i64 = 1 << 16;

/// One access of the tile: its statement's position in the body, the instruction's position in
/// the statement, whether it writes, and its slot offset `c` (slot `iv + c`).
struct Access {
    stmt: Stmt,
    pos: (usize, usize),
    writes: bool,
    reads: bool,
    offset: Option<i64>,
    /// The box it writes, every element of it, when it does (a write of constant bounds, with
    /// no mask and no index).
    writes_box: Option<Cells>,
    /// The box of everything it reads of the tile (the bounding box of a pattern), when its
    /// bounds are constant.
    reads_box: Option<Cells>,
    /// Its mask, and the one box of the tile its iteration space runs over element for element
    /// (a 2-D box of constant bounds, of the iteration space's shape, no pattern, no index), when
    /// there is one: then the mask's `p` and `f` name the tile's rows and columns from the box's
    /// start.
    masked: Option<(Vec<MaskBound>, Cells)>,
}

/// The box of tile `t` that instruction `d` runs over element for element, with its mask (see
/// [`Access::masked`]): its accesses of `t` are one box, of the instruction's iteration shape.
fn masked_box(d: &penguin::ir::InstData, t: Tensor) -> Option<(Vec<MaskBound>, Cells)> {
    if d.op.is_indirect() {
        return None;
    }
    let shape = d.iter_shape()?;
    let mut ops = std::iter::once(&d.dst)
        .chain(&d.srcs)
        .filter(|o| o.tensor == t);
    let first = ops.next()?;
    let cells = bounding_box(&first.access)?;
    let exact = |o: &penguin::ir::Operand| {
        o.access.pattern.is_none() && bounding_box(&o.access).as_ref() == Some(&cells)
    };
    let sizes: Vec<u64> = cells.iter().map(|c| c.1).collect();
    (exact(first) && ops.all(exact) && sizes == shape).then(|| (d.mask.clone(), cells))
}

/// Whether a read with mask and box `read`, `back` iterations of loop `l` after the write with
/// mask and box `write`, reads only elements that write wrote: one box, and every bound of the
/// write's mask, taken at the write's iteration (`iv(l) − back`), is a bound of the read's.
fn reads_within_write(
    read: &(Vec<MaskBound>, Cells),
    write: &(Vec<MaskBound>, Cells),
    l: Axis,
    back: i64,
) -> bool {
    let earlier = AffineExpr::from_terms([(l, 1)], -back);
    read.1 == write.1
        && write.0.iter().all(|b| {
            let shifted = MaskBound {
                bound: b.bound.substitute(l, &earlier),
                ..b.clone()
            };
            read.0.contains(&shifted)
        })
}

/// A box of a tile: a constant start and size per dimension.
type Cells = Vec<(i64, u64)>;

/// The box of an access, when its starts are constant: the bounding box of a pattern.
fn bounding_box(a: &penguin::ir::Access) -> Option<Cells> {
    (a.start.iter().zip(&a.size))
        .map(|(e, &n)| Some((e.as_constant()?, n)))
        .collect()
}

/// Whether the union of `boxes` holds every element of `target`
/// ([`crate::cost::boxes::union_covers`] on the half-open intervals of the cells).
fn covers(boxes: &[&Cells], target: &Cells) -> bool {
    let interval = |c: &Cells| -> Vec<(i128, i128)> {
        c.iter()
            .map(|&(s, n)| (i128::from(s), i128::from(s) + i128::from(n)))
            .collect()
    };
    let boxes: Vec<Vec<(i128, i128)>> = boxes.iter().map(|b| interval(b)).collect();
    crate::cost::boxes::union_covers(&boxes, &interval(target))
}

/// The tile's slot offset in an access: `Some(c)` for slot `iv + c`.
fn offset(slots: &[AffineExpr], l: Axis) -> Option<i64> {
    match slots {
        [] => Some(0),
        [sel] if sel.coeff(l) == 1 && sel.terms().len() == 1 => Some(sel.constant_term()),
        _ => None,
    }
}

/// Whether every read of `t` (a ring of `n` slots along `l`, or an unblocked tile: one slot of
/// selector `iv`) reads the same write when the ring has `m >= n` slots (module doc).
pub fn compute_reads_kept(func: &Function, t: Tensor, l: Axis, m: u32) -> bool {
    reads_kept(func, t, l, m).is_some()
}

fn reads_kept(func: &Function, t: Tensor, l: Axis, m: u32) -> Option<()> {
    let td = &func.tensors[t];
    let n = match td.block.as_slice() {
        [] => 1,
        [b] if b.axis == l => b.count,
        _ => return None,
    };
    if m < n {
        return None;
    }
    let mut accesses = Vec::new();
    let mut elsewhere = false;
    func.walk_stmts(|s, loops| {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            return;
        };
        for (k, &i) in insts.iter().enumerate() {
            let d = &func.insts[i];
            let reads_dst = matches!(d.op, Op::Matmul { accumulate: true });
            let src = d.srcs.iter().find(|o| o.tensor == t);
            let dst = (d.dst.tensor == t).then_some(&d.dst);
            if src.is_none() && dst.is_none() {
                continue;
            }
            if loops.last() != Some(&l) {
                elsewhere = true;
                return;
            }
            let pos = func.axes[l].body.iter().position(|&b| b == s).unwrap_or(0);
            let access = src.or(dst).map(|o| offset(&o.access.slots, l));
            // Every access of the instruction must select the same slot.
            let same = src
                .into_iter()
                .chain(dst)
                .all(|o| Some(offset(&o.access.slots, l)) == access);
            // Every element of its box: no mask, no index, no pattern.
            let exact = d.mask.is_empty() && !d.op.is_indirect();
            let writes_box = dst
                .filter(|o| exact && o.access.pattern.is_none())
                .and_then(|o| bounding_box(&o.access));
            // One box that bounds every read of the tile (an accumulation reads its
            // destination).
            let read_ops =
                (d.srcs.iter().filter(|o| o.tensor == t)).chain(dst.filter(|_| reads_dst));
            let reads_box = read_ops
                .map(|o| bounding_box(&o.access))
                .collect::<Option<Vec<Cells>>>()
                .and_then(|b| hull(&b));
            accesses.push(Access {
                stmt: s,
                pos: (pos, k),
                writes: dst.is_some(),
                reads: src.is_some() || (dst.is_some() && reads_dst),
                offset: if same { access.flatten() } else { None },
                writes_box,
                reads_box,
                masked: masked_box(d, t),
            });
        }
    });
    if elsewhere || accesses.iter().any(|a| a.offset.is_none()) {
        // A peeled loop's prologue and epilogue copies access its rings outside it.
        let peeled = func.axes[l].attrs.pipelined.is_some_and(|p| p.peeled);
        return if peeled {
            peeled_reads_kept(func, t, l, n, m)
        } else {
            None
        };
    }
    let writers: Vec<&Access> = accesses.iter().filter(|a| a.writes).collect();
    let w = *writers.first()?;
    let cw = w.offset?;
    // The iterations of `l` in which a statement runs (its guards name no other loop).
    let running = |s: Stmt| -> Option<Range<i64>> {
        let bx = compute_guard_box(func, &func.stmts[s].preds)?;
        if bx.axes().any(|a| a != l) {
            return None;
        }
        Some(match bx.is_empty() {
            true => 0..0,
            false => bx.range(func, l),
        })
    };
    // Every writer writes the slot of the same selector, in the same iterations, and together
    // they write the whole tile: a slot holds only values of the iteration that wrote it last.
    let writes = running(w.stmt);
    for v in &writers[1..] {
        if v.offset != Some(cw) || writes.is_none() || running(v.stmt) != writes {
            return None;
        }
    }
    let whole: Cells = td.shape.iter().map(|&n| (0, n)).collect();
    let written: Vec<&Cells> = writers
        .iter()
        .filter_map(|v| v.writes_box.as_ref())
        .collect();
    // Otherwise one masked writer, whose readers read only what it wrote (below): the elements
    // it leaves keep older values, which no read sees.
    let masked = match covers(&written, &whole) {
        true => None,
        false => match writers[..] {
            [v] if !v.reads => Some(v.masked.as_ref()?),
            _ => return None,
        },
    };
    for r in accesses.iter().filter(|a| a.reads) {
        let cr = r.offset?;
        // The write of the value read: `cw - cr` iterations earlier, or earlier in this one.
        let back = cw - cr;
        if back < 0 || back >= i64::from(n) {
            return None;
        }
        if let Some(write) = masked {
            if (back == 0 && r.pos <= w.pos)
                || !reads_within_write(r.masked.as_ref()?, write, l, back)
            {
                return None;
            }
        } else if back == 0 {
            // Read in the iteration that writes it: the writes before the read hold all it
            // reads, whatever the slot held before.
            let before: Vec<&Cells> = (writers.iter())
                .filter(|v| v.pos < r.pos)
                .filter_map(|v| v.writes_box.as_ref())
                .collect();
            if !covers(&before, r.reads_box.as_ref()?) {
                return None;
            }
        }
        let reads = running(r.stmt)?;
        if reads.is_empty() {
            continue;
        }
        // Every iteration that reads finds the writers on `back` iterations earlier (within
        // the loop: the writers' iterations are clamped to it).
        let writes = writes.clone()?;
        if reads.start - back < writes.start || reads.end - back > writes.end {
            return None;
        }
    }
    Some(())
}

/// The smallest box that holds every box of `boxes` (of one rank).
fn hull(boxes: &[Cells]) -> Option<Cells> {
    let first = boxes.first()?;
    Some(
        (0..first.len())
            .map(|d| {
                let lo = boxes.iter().map(|b| b[d].0).min().unwrap_or(0);
                let hi = (boxes.iter().map(|b| b[d].0 + b[d].1 as i64))
                    .max()
                    .unwrap_or(lo);
                (lo, (hi - lo) as u64)
            })
            .collect(),
    )
}

/// The rule for a ring of a peeled loop `l` (`penguin::pipeline::peel`), whose prologue and
/// epilogue copies, beside the loop in its block, access the ring at constant slots: every access
/// of `t` is directly in `l`'s body or in an unguarded instruction statement of that block, every
/// write writes the whole tile without reading it, and, walking the block's accesses in program
/// order (each slot selector's value before it is taken modulo the ring), every read finds, with
/// `n` slots as with `m`, the last write of its slot to be a write of the same selector
/// value. Then every read reads the same write with `m` slots, and no read reaches back
/// before the block (so nothing is carried across the loops around it). Enumerated, up to
/// [`MAX_ENUMERATION`] iterations of `l`.
fn peeled_reads_kept(func: &Function, t: Tensor, l: Axis, n: u32, m: u32) -> Option<()> {
    if !matches!(func.tensors[t].block.as_slice(), [b] if b.axis == l) {
        return None;
    }
    let mut parent = None;
    func.walk_stmts(|s, loops| {
        if func.stmts[s].kind == StmtKind::Loop(l) {
            parent = Some(loops.last().copied());
        }
    });
    let axis = &func.axes[l];
    // (selector value, writes) in program order, and how many instructions gave them.
    // A read event is `(selector, false, checked)`: a read in a warm-up iteration is not checked.
    let mut events: Vec<(i64, bool, bool)> = Vec::new();
    let mut seen = 0;
    let walk = iterations_to_walk(func, t, l, m)?;
    for &s in func.block(parent?) {
        if func.stmts[s].kind == StmtKind::Loop(l) {
            for &(iv, checked) in &walk {
                for &c in &axis.body {
                    let mut body = Vec::new();
                    let accesses = ring_events(func, c, t, l, iv, &mut body)?;
                    events.extend(body.into_iter().map(|(sel, w)| (sel, w, checked)));
                    if iv == axis.lb {
                        seen += accesses;
                    }
                }
            }
        } else {
            let mut body = Vec::new();
            seen += ring_events(func, s, t, l, 0, &mut body)?;
            events.extend(body.into_iter().map(|(sel, w)| (sel, w, true)));
        }
    }
    let all = func.insts.values().filter(|d| touches(d, t)).count();
    if seen != all {
        return None;
    }
    for m in [i64::from(n), i64::from(m)] {
        let mut last: std::collections::HashMap<i64, i64> = std::collections::HashMap::new();
        for &(sel, writes, checked) in &events {
            let slot = sel.rem_euclid(m);
            if writes {
                last.insert(slot, sel);
            } else if checked && last.get(&slot) != Some(&sel) {
                return None;
            }
        }
    }
    Some(())
}

fn touches(d: &penguin::ir::InstData, t: Tensor) -> bool {
    d.dst.tensor == t || d.srcs.iter().any(|o| o.tensor == t)
}

/// The iterations of peeled loop `l` whose accesses of `t` (of up to `n` slots) [`peeled_reads_kept`]
/// walks, each with whether its reads are checked. Every iteration, up to [`MAX_ENUMERATION`]
/// of them. A longer loop whose every selector of `t` is `iv + c` (the peeled body holds no
/// guard) repeats one pattern, shifted by one slot per iteration: its first `K` iterations and
/// its last `K` are walked, `K = 2·W`, and the reads of the first `W` of the last ones are not
/// checked (the writes they would find were skipped; the same reads, shifted, were checked in
/// the first iterations). `W = 2n + (max c − min c)` iterations rewrite every slot of up
/// to `n` and reach back past every offset, so the walk checks what the whole loop would.
fn iterations_to_walk(func: &Function, t: Tensor, l: Axis, n: u32) -> Option<Vec<(i64, bool)>> {
    let axis = &func.axes[l];
    // The selectors at the first two iterations.
    let selectors = |iv: i64| -> Option<Vec<i64>> {
        let mut events = Vec::new();
        for &c in &axis.body {
            ring_events(func, c, t, l, iv, &mut events)?;
        }
        Some(events.into_iter().map(|(sel, _)| sel).collect())
    };
    let (first, second) = (selectors(axis.lb)?, selectors(axis.lb + 1)?);
    let step_one =
        first.len() == second.len() && first.iter().zip(&second).all(|(a, b)| b - a == 1);
    let spread = first
        .iter()
        .max()
        .zip(first.iter().min())
        .map_or(0, |(hi, lo)| hi - lo);
    let w = 2 * i64::from(n) + spread;
    match axis.trip_count() {
        trip if step_one && trip > 4 * w => Some(
            (axis.lb..axis.lb + 2 * w)
                .map(|iv| (iv, true))
                .chain((axis.ub - 2 * w..axis.ub).map(|iv| (iv, iv >= axis.ub - w)))
                .collect(),
        ),
        trip if trip > MAX_ENUMERATION => None,
        _ => Some((axis.lb..axis.ub).map(|iv| (iv, true)).collect()),
    }
}

/// The accesses of `t` by statement `s` at iteration `iv` of `l`, appended to `events` (reads
/// before the write of each instruction); the number of instructions that access `t`. `None`
/// when the statement breaks [`peeled_reads_kept`]'s rule.
fn ring_events(
    func: &Function,
    s: Stmt,
    t: Tensor,
    l: Axis,
    iv: i64,
    events: &mut Vec<(i64, bool)>,
) -> Option<usize> {
    let insts = match &func.stmts[s].kind {
        StmtKind::Insts(insts) => insts,
        // An access in a nested loop breaks the rule (the count of accesses then falls short).
        StmtKind::Loop(_) => return Some(0),
    };
    let td = &func.tensors[t];
    let at = AffineExpr::constant(iv);
    let selector = |o: &penguin::ir::Operand| match o.access.slots.as_slice() {
        [sel] => sel.substitute(l, &at).as_constant(),
        _ => None,
    };
    let mut count = 0;
    for &i in insts {
        let d = &func.insts[i];
        if !touches(d, t) {
            continue;
        }
        if !func.stmts[s].preds.is_empty() {
            return None;
        }
        count += 1;
        for o in d.srcs.iter().filter(|o| o.tensor == t) {
            events.push((selector(o)?, false));
        }
        if d.dst.tensor == t {
            let whole = d.writes_whole(&td.shape);
            if !whole
                || matches!(d.op, Op::Matmul { accumulate: true })
                || d.srcs.iter().any(|o| o.tensor == t)
            {
                return None;
            }
            events.push((selector(&d.dst)?, true));
        }
    }
    Some(count)
}
