//! Modulo variable expansion: one more ring slot for a tile whose reuse sets a pipelined loop's
//! recurrence bound.
//!
//! A pipelined loop writes a tile in every iteration and the pipeliner gives it
//! `max use stage − min def stage + 1` slots. When the cycle that sets the loop's RecMII
//! ([`crate::modulo`]), above the loop's resources averaged over its fill and drain
//! ([`ModuloSchedule::res_average`]: a short loop is mostly fill and drain), runs through the
//! **reuse** of such a tile (an anti or output dependence:
//! the next iteration's write of the slot must wait for this iteration's last reader, such as a
//! store's whole DMA latency), one more slot breaks that cycle without touching any stage: the
//! writer of iteration `k + N + 1` reuses the slot instead of the one of `k + N`.
//! [`expand_recurrence`] adds that slot (the backend's share of the seed's hand-off: Penguin
//! decides the stages and the minimum buffer count, the backend realises the ring).
//!
//! Only pipelined loops are expanded (an instruction with a stage, or touching a ring along the
//! loop): `--pipeline none` keeps one buffer per tile.
//!
//! The tile must hold no value from one iteration to another except through its slots, which
//! the rule checks: an SBUF tile local to the kernel, every access directly in the loop's body,
//! one instruction writing it, the whole tile, without reading it, and every other access a read
//! of slot `iv + c_r` (an unblocked tile is slot `iv`) that the writer filled `c_w − c_r < N`
//! iterations earlier (or earlier in the same iteration), with the writer's guard on at that
//! iteration whenever the reader's is on (compared as intervals of iterations,
//! [`crate::guards`]). Then every read finds the value of the same write with `N + 1` slots as
//! with `N`. The ring stays within
//! [`crate::emergent::cost::MAX_DEPTH`] slots and the SBUF capacity (every tensor counted with all
//! its slots: [`crate::emergent::budget`], the count of every pass that adds slots).
//!
//! A **peeled** loop (`penguin::pipeline::peel`) has its prologue and epilogue beside it, as
//! copies that access its rings at constant slots. For its tiles the rule walks every access of
//! the block that holds the loop in program order instead (`expandable_peeled`), and a peeled
//! loop's recurrence is broken also when it holds the schedule's II above ResMII: its ResMII
//! counts every stage in every iteration, with no fill or drain to average over, so RecMII rarely
//! exceeds it although the recurrence still sets the period.

use crate::bir::Bir;
use crate::emergent::budget;
use crate::emergent::cost::MAX_DEPTH;
use crate::guards::compute_guard_box;
use crate::ldg::DepKind;
use crate::modulo::ModuloSchedule;
use penguin::affine::AffineExpr;
use penguin::ir::{BlockDim, Memory, Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::ops::Range;

/// The largest peeled loop whose ring accesses [`expandable_peeled`] walks.
const MAX_ENUMERATION: i64 = 1 << 16;

/// One access of the tile: its statement's position in the body, the instruction's position in
/// the statement, whether it writes, and its slot offset `c` (slot `iv + c`).
struct Access {
    stmt: Stmt,
    pos: (usize, usize),
    writes_whole: bool,
    writes: bool,
    reads: bool,
    offset: Option<i64>,
}

/// Expands the first tile, on the critical cycle of a recurrence-bound pipelined loop, that the
/// rule allows; returns what it did, for the log.
pub fn expand_recurrence(
    func: &mut Function,
    bir: &Bir,
    schedules: &[ModuloSchedule],
) -> Option<String> {
    for s in schedules {
        let l = bir.loops[s.lp].axis;
        // A peeled loop's ResMII counts every stage in every iteration (no fill or drain to
        // average over): its recurrence is worth breaking when the schedule's II is above it.
        let peeled = func.axes[l].attrs.pipelined.is_some_and(|p| p.peeled);
        let bound = if peeled {
            s.rec_mii.max(s.search_ii)
        } else {
            s.rec_mii
        };
        if bound <= s.res_average || !pipelined(func, bir, s.lp) {
            continue;
        }
        for &(kind, t, cross_engine) in &s.rec_edges {
            // A flow edge is the computation itself, and a reuse within one in-order engine is
            // that engine's order: more slots help neither.
            if kind == DepKind::Flow || !cross_engine {
                continue;
            }
            if let Some(n) = expandable(func, t, l) {
                apply(func, t, l, n + 1);
                let above = if s.rec_mii > s.res_average {
                    format!("sets RecMII {}", s.rec_mii)
                } else {
                    format!("holds the schedule at II {}", s.search_ii)
                };
                return Some(format!(
                    "`{}` in loop `{}` gets {} slots (was {}): its reuse is on the recurrence that \
                     {above} above its resources' {} cycles per iteration (averaged over the \
                     fill and the drain): {}",
                    func.tensors[t].name,
                    func.axis_name(l),
                    n + 1,
                    n,
                    s.res_average,
                    s.rec_cycle
                ));
            }
        }
    }
    None
}

/// Whether BIR loop `l` is pipelined (by either path): an instruction of its body carries a stage,
/// or touches a ring along the loop. A loop of `--pipeline none` is not (its only guards are
/// folded zeroings, `k == lb`), and keeps its buffers.
fn pipelined(func: &Function, bir: &Bir, l: crate::bir::BirLoop) -> bool {
    let axis = bir.loops[l].axis;
    bir.loops[l].body.iter().any(|n| match *n {
        crate::bir::BNode::Inst(i) => {
            let bi = &bir.insts[i];
            bi.stage.is_some()
                || std::iter::once(&bi.dst)
                    .chain(&bi.srcs)
                    .any(|o| func.tensors[o.tensor].block.iter().any(|b| b.axis == axis))
        }
        crate::bir::BNode::Loop(_) => false,
    })
}

/// The tile's slot offset in an access: `Some(c)` for slot `iv + c`.
fn offset(slots: &[AffineExpr], l: Axis) -> Option<i64> {
    match slots {
        [] => Some(0),
        [sel] if sel.coeff(l) == 1 && sel.terms().len() == 1 => Some(sel.constant_term()),
        _ => None,
    }
}

/// The current slot count of `t` when one more slot along `l` keeps every value (module doc).
fn expandable(func: &Function, t: Tensor, l: Axis) -> Option<u32> {
    let td = &func.tensors[t];
    if td.memory != Memory::Sbuf || td.kind != TensorKind::Local {
        return None;
    }
    let n = match td.block.as_slice() {
        [] => 1,
        [b] if b.axis == l => b.count,
        _ => return None,
    };
    if n >= MAX_DEPTH {
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
            let whole = dst.is_some_and(|o| o.access.is_whole(&td.shape));
            let access = src.or(dst).map(|o| offset(&o.access.slots, l));
            // Every access of the instruction must select the same slot.
            let same = src
                .into_iter()
                .chain(dst)
                .all(|o| Some(offset(&o.access.slots, l)) == access);
            accesses.push(Access {
                stmt: s,
                pos: (pos, k),
                writes_whole: whole && !reads_dst && src.is_none(),
                writes: dst.is_some(),
                reads: src.is_some() || (dst.is_some() && reads_dst),
                offset: if same { access.flatten() } else { None },
            });
        }
    });
    if elsewhere || accesses.iter().any(|a| a.offset.is_none()) {
        // A peeled loop's prologue and epilogue copies access its rings outside it.
        let peeled = func.axes[l].attrs.pipelined.is_some_and(|p| p.peeled);
        return if peeled {
            expandable_peeled(func, t, l)
        } else {
            None
        };
    }
    let writers: Vec<&Access> = accesses.iter().filter(|a| a.writes).collect();
    let [w] = writers[..] else { return None };
    if !w.writes_whole {
        return None;
    }
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
    for r in accesses.iter().filter(|a| a.reads) {
        let cr = r.offset?;
        // The write of the value read: `cw - cr` iterations earlier, or earlier in this one.
        let back = cw - cr;
        if back < 0 || back >= i64::from(n) || (back == 0 && r.pos <= w.pos) {
            return None;
        }
        let reads = running(r.stmt)?;
        if reads.is_empty() {
            continue;
        }
        // Every iteration that reads finds the writer on `back` iterations earlier (within the
        // loop: the writer's iterations are clamped to it).
        let writes = running(w.stmt)?;
        if reads.start - back < writes.start || reads.end - back > writes.end {
            return None;
        }
    }
    fits_one_more_slot(func, t, n)
}

/// `Some(n)` when one more slot of `t` (of `n` slots) fits in SBUF, every tensor counted with
/// all its slots.
fn fits_one_more_slot(func: &Function, t: Tensor, n: u32) -> Option<u32> {
    let used = budget::sbuf_in_use(func);
    let slot = budget::slot_bytes(&func.tensors[t], u64::from(n));
    budget::sbuf_fits(used + slot).then_some(n)
}

/// The rule for a ring of a peeled loop `l` (`penguin::pipeline::peel`), whose prologue and
/// epilogue copies, beside the loop in its block, access the ring at constant slots: every access
/// of `t` is directly in `l`'s body or in an unguarded instruction statement of that block, every
/// write writes the whole tile without reading it, and, walking the block's accesses in program
/// order (each slot selector's value before it is taken modulo the ring), every read finds, with
/// `n` slots as with `n + 1`, the last write of its slot to be a write of the same selector
/// value. Then every read reads the same write with one more slot, and no read reaches back
/// before the block (so nothing is carried across the loops around it). Enumerated, up to
/// [`MAX_ENUMERATION`] iterations of `l`.
fn expandable_peeled(func: &Function, t: Tensor, l: Axis) -> Option<u32> {
    let n = match func.tensors[t].block.as_slice() {
        [b] if b.axis == l && b.count < MAX_DEPTH => b.count,
        _ => return None,
    };
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
    let walk = iterations_to_walk(func, t, l, n)?;
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
    for m in [i64::from(n), i64::from(n) + 1] {
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
    fits_one_more_slot(func, t, n)
}

fn touches(d: &penguin::ir::InstData, t: Tensor) -> bool {
    d.dst.tensor == t || d.srcs.iter().any(|o| o.tensor == t)
}

/// The iterations of peeled loop `l` whose accesses of `t` (of `n` slots) [`expandable_peeled`]
/// walks, each with whether its reads are checked. Every iteration, up to [`MAX_ENUMERATION`]
/// of them. A longer loop whose every selector of `t` is `iv + c` (the peeled body holds no
/// guard) repeats one pattern, shifted by one slot per iteration: its first `K` iterations and
/// its last `K` are walked, `K = 2·W`, and the reads of the first `W` of the last ones are not
/// checked (the writes they would find were skipped; the same reads, shifted, were checked in
/// the first iterations). `W = 2(n + 1) + (max c − min c)` iterations rewrite every slot of up
/// to `n + 1` and reach back past every offset, so the walk checks what the whole loop would.
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
    let w = 2 * (i64::from(n) + 1) + spread;
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
/// when the statement breaks [`expandable_peeled`]'s rule.
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
            let whole = d.dst.access.is_whole(&td.shape);
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

/// Gives `t` `count` slots along `l`; an unblocked tile's accesses select slot `iv`.
fn apply(func: &mut Function, t: Tensor, l: Axis, count: u32) {
    let was_blocked = !func.tensors[t].block.is_empty();
    func.tensors[t].block = vec![BlockDim { axis: l, count }];
    if was_blocked {
        return;
    }
    let sel = vec![AffineExpr::iv(l)];
    for (_, d) in func.insts.iter_mut() {
        if d.dst.tensor == t {
            d.dst.access.slots = sel.clone();
        }
        for o in &mut d.srcs {
            if o.tensor == t {
                o.access.slots = sel.clone();
            }
        }
    }
}
