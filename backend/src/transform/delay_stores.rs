//! A store after an inner loop is issued after the next iteration's loads: `sp`'s stream order
//! across the boundary of an inner loop is the backend's, not the program's.
//!
//! `sp` issues every transfer of a kernel from one in-order stream. In a loop `L` whose body
//! holds an inner loop `I` followed by a statement computing a tile `X` from `I`'s results and a
//! store of `X` (a blocked matmul: the `k` loop, `res = copy(acc)`, `store(res)`), the store of
//! iteration `f` waits for the end of `I`'s compute, and every transfer behind it on `sp` waits
//! too: the loads of iteration `f + 1`, prefetches included, which the compute of `f + 1` needs
//! first (matmul_blocked: `pe` idled 27,350 cycles for an `rhs` load queued behind `store(res)`).
//! No order of one body avoids that; [`delay_stores`] issues the store of iteration `f` in
//! iteration `f + 1` of the nest, right after its inner loops (after their loads), where its data
//! has long been ready. The statements keep the iteration they belong to (on `default` the
//! user's stages say which); only the store's issue moves. `annotated` does not run it.
//!
//! The iterations of `L` and of the loops around it that form a flat nest with it
//! ([`super::emergent::nest::compute_nest`], outermost first, each on its running iterations)
//! are one flat sequence. A store statement `S` of `L`'s body becomes
//! - the **delayed copy**, placed right after the last loop statement before `S`: in iteration
//!   `(o…, l)` it stores for `(o…, l − 1)` (every index and guard of `S` read at `l − 1`), on
//!   `l ≥ lb(L) + 1`;
//! - one **carry copy** per enclosing level `Oj` of at least two running iterations, beside it: in
//!   the first iteration of `L` and of every level inside `Oj` (`oi == lo(Oi)`, `l == lb(L)`), and
//!   not the first of `Oj`, it stores for the last iteration of the previous execution at that
//!   level (`oj − 1`, the levels inside at `hi − 1`, `l` at `ub(L) − 1`);
//! - `S` itself, on the last flat iteration only (every level and `L` at its last iteration):
//!   nothing follows it to delay it into.
//!
//! So exactly one copy stores each flat iteration's tile, one flat iteration later or, for the
//! last, as before.
//!
//! A peeled `L` (`--peel`) carries nothing: its prologue and epilogue run between two
//! executions. Without carries (no level of two running iterations either), each execution of
//! `L` delays its stores within itself, and `S` runs on `L`'s last iteration.
//!
//! What qualifies: `L`'s body holds a loop; `S` is a direct statement of `L`'s body that is one
//! store of an SBUF tile `X` into an HBM tensor `H`, after a loop statement, with a load
//! somewhere in `L`'s body before that loop's end (the loads `S` would hold); in the **scope** (the
//! whole kernel when `S` is carried, else `L`'s body and everything in it), `H` is accessed by no
//! other instruction, and `X` is accessed only by direct statements of `L`'s body and written
//! only by statements between the last loop before `S` and `S` (the **producers**), at least one
//! of which reads a tile that the loop writes (directly or through an earlier producer): the
//! store's data is ready only after the loop's compute.
//!
//! Why it is correct. The program is the same sequence of statements but for `S`'s instance of
//! flat iteration `f`, which now runs after the statements that follow it up to the delayed
//! copy's place in iteration `f + 1`: the rest of `L`'s body after `S`, the statements of the
//! enclosing bodies between two executions of `L` (only when carried), and `L`'s body up to the
//! end of its last loop before `S`: all in the scope. None of them writes `X` (its writers stand
//! between that loop and `S`) or touches `H` (only `S` does), so the moved store reads the same
//! values and writes the same bytes; every instance runs before anything after the scope (the
//! last in the scope's last iteration), so nothing outside it sees a difference. Ring slots need not change: the slot `S`
//! reads was written before and is not written again before the delayed copy (a second slot
//! changes no value: every read of `X` finds the same write, [`super::ring_reads`]). The backend's
//! synchronisation is exact on the emitted footprints; every run is checked against the
//! interpreter bit for bit, with the race detector on.
//!
//! The stored tile `X` keeps its slots when it has at least two along `L`; a tile of one slot
//! gets a second ([`super::ring_slots`], SBUF permitting, else the store stays): with one, the
//! producer of iteration `f + 1` would wait for the delayed store of `f` to read it
//! (nested_stages ran 11% slower so). A ring along other loops whose every access selects a
//! constant slot (a peeled loop's: its prologue and epilogue copies name fixed slots, so each
//! slot is a tile of its own) gets a block dimension of two slots along `L` when each slot is
//! written whole, once, before every read of it in the body ([`fixed_slots`]): matmul's `res` on
//! `--peel`, whose two stores (one per copy of the peeled `n`) then both go after the next
//! iteration's loads (83,563 -> 80,443 cycles; matmul_blocked_stages 90,857 -> 85,173).
//!
//! Invariants: every statement but `S` runs exactly the instances it ran; the stores run the same
//! instances as `S` did, each in exactly one copy; no loop gets an iteration; only `X` may get
//! slots (its second, or a second along `L` for each of its constant slots).

use super::emergent::nest::{compute_nest, NestLevel};
use super::remark::Remark;
use super::ring_slots;
use crate::cost::budget;
use crate::cost::loop_cost::{wanted_depth, MAX_DEPTH};
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::edit::{self, Subst};
use penguin::ir::{BlockDim, Memory, Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::collections::BTreeSet;

/// Delays every store that qualifies (module doc) one flat iteration of its nest; returns what it
/// did, for the log.
pub fn delay_stores(func: &mut Function) -> Vec<Remark> {
    let mut log = Vec::new();
    let loops: Vec<Axis> = func.axes.keys().collect();
    for l in loops {
        let Some(body) = nesting_body(func, l) else {
            continue;
        };
        // A statement that computes the stored value and stores it is split in two, the store
        // alone in the second ([`split_store`]), when that makes a store qualify.
        let mut trial = func.clone();
        for s in body {
            if matches!(&trial.stmts[s].kind, StmtKind::Insts(is) if is.len() > 1) {
                split_store(&mut trial, l, s);
            }
        }
        if candidates(&trial, l).is_empty() {
            continue;
        }
        *func = trial;
        // One store at a time: a delayed store no longer qualifies (its copies touch its HBM
        // tensor), and the positions of the others move with the copies.
        while let Some(&(s, at)) = candidates(func, l).first() {
            log.push(delay(func, l, s, at));
        }
    }
    log
}

/// The body of loop `l`, if it runs at least two iterations and holds a loop.
fn nesting_body(func: &Function, l: Axis) -> Option<Vec<Stmt>> {
    let ad = &func.axes[l];
    if ad.trip_count() < 2 {
        return None;
    }
    let body = ad.body.clone();
    (body.iter())
        .any(|&s| matches!(func.stmts[s].kind, StmtKind::Loop(_)))
        .then_some(body)
}

/// The store statements of `l`'s body that qualify, each with the position in the body after
/// which its delayed copies go (just after the last loop statement before it).
fn candidates(func: &Function, l: Axis) -> Vec<(Stmt, usize)> {
    let Some(body) = nesting_body(func, l) else {
        return Vec::new();
    };
    // Per tensor, the statements whose instructions read or write it (`true` for a write):
    // anywhere in the kernel when the store is carried across the loops around `l`, else
    // within `l`.
    let within: Option<BTreeSet<Stmt>> = carry_levels(func, l).is_empty().then(|| {
        (body.iter())
            .flat_map(|&b| edit::subtree_stmts(func, b))
            .collect()
    });
    let mut touches: std::collections::HashMap<Tensor, Vec<(Stmt, bool)>> = Default::default();
    func.walk_stmts(|s, _| {
        if within.as_ref().is_some_and(|w| !w.contains(&s)) {
            return;
        }
        if let StmtKind::Insts(is) = &func.stmts[s].kind {
            for &i in is {
                let d = &func.insts[i];
                touches.entry(d.dst.tensor).or_default().push((s, true));
                for o in &d.srcs {
                    touches.entry(o.tensor).or_default().push((s, false));
                }
            }
        }
    });
    let mut out = Vec::new();
    for (k, &s) in body.iter().enumerate() {
        let StmtKind::Insts(is) = &func.stmts[s].kind else {
            continue;
        };
        let [i] = is.as_slice() else {
            continue;
        };
        let d = &func.insts[*i];
        let (Op::Store, [src]) = (&d.op, d.srcs.as_slice()) else {
            continue;
        };
        let (x, h) = (src.tensor, d.dst.tensor);
        if func.tensors[x].memory != Memory::Sbuf || func.tensors[h].memory != Memory::Hbm {
            continue;
        }
        // The last loop statement before `S` (that runs an instruction: a peeled loop's steady
        // state may be empty).
        let Some(at) = (0..k).rev().find(|&j| runs_a_loop(func, body[j])) else {
            continue;
        };
        // A load in `L`'s body up to that loop's end: what `S` would hold.
        let loads = body[..=at].iter().any(|&b| {
            edit::subtree_insts(func, b)
                .iter()
                .any(|&j| matches!(func.insts[j].op, Op::Load))
        });
        // `H` only by `S`; `X` only by direct statements of the body, written only between the
        // loop and `S` (in `l` alone when nothing is carried across the loops around it).
        let only_s = touches.get(&h).is_some_and(|v| {
            v.iter()
                .all(|&(t, write)| t == s || (write && apart(func, t, h, &d.dst.access)))
        });
        let x_ok = touches.get(&x).is_some_and(|v| {
            v.iter().all(|&(t, write)| {
                let pos = body.iter().position(|&b| b == t);
                pos.is_some() && (!write || pos.is_some_and(|p| p > at && p < k))
            })
        });
        if !loads
            || !only_s
            || !x_ok
            || !late(func, &body, at, k, x)
            || !two_slots(func, &body, x, l)
        {
            continue;
        }
        out.push((s, at));
    }
    out
}

/// Whether statement `s` is a loop of at least one iteration holding an instruction.
fn runs_a_loop(func: &Function, s: Stmt) -> bool {
    match func.stmts[s].kind {
        StmtKind::Loop(a) => {
            func.axes[a].trip_count() >= 1 && !edit::subtree_insts(func, s).is_empty()
        }
        StmtKind::Insts(_) => false,
    }
}

/// Whether every access of HBM tensor `h` by statement `t` is a write of a rectangle disjoint
/// from `a` in every iteration: in some dimension both starts are constants and the intervals
/// do not meet (two stores of a row's column halves).
fn apart(func: &Function, t: Stmt, h: Tensor, a: &penguin::ir::Access) -> bool {
    let StmtKind::Insts(is) = &func.stmts[t].kind else {
        return false;
    };
    let fixed = |b: &penguin::ir::Access| {
        (a.start.iter().zip(&a.size))
            .zip(b.start.iter().zip(&b.size))
            .any(|((x, &xs), (y, &ys))| {
                if !x.terms().is_empty() || !y.terms().is_empty() {
                    return false;
                }
                let (cx, cy) = (x.constant_term(), y.constant_term());
                let (xs, ys) = (
                    i64::try_from(xs).unwrap_or(i64::MAX),
                    i64::try_from(ys).unwrap_or(i64::MAX),
                );
                cx.saturating_add(xs) <= cy || cy.saturating_add(ys) <= cx
            })
    };
    is.iter().all(|&i| {
        let d = &func.insts[i];
        d.srcs.iter().all(|o| o.tensor != h) && (d.dst.tensor != h || fixed(&d.dst.access))
    })
}

/// Whether tile `x` has at least two slots along `l`, or may take a second
/// ([`ring_slots::expandable`], or [`fixed_slots`] for a ring every access of which selects a
/// constant slot): with one, the producer of the next iteration would wait for the delayed store
/// to read it.
fn two_slots(func: &Function, body: &[Stmt], x: Tensor, l: Axis) -> bool {
    let block = &func.tensors[x].block;
    if block.iter().any(|b| b.axis == l && b.count >= 2) {
        return true;
    }
    match block.as_slice() {
        [] => ring_slots::expandable(func, x, l).is_some(),
        _ => fixed_slots(func, body, x, l),
    }
}

/// The slots a one-slot tile `x` whose store is delayed along `l` takes: two, or as many as its
/// transfer wants when more (`1 + ceil(dma / compute)`, [`wanted_depth`]: the producer of
/// iteration `f + n` reuses the slot whose store iteration `f + 1` issued, so that store has
/// `n - 1` iterations to land), at most [`MAX_DEPTH`] and the loop's trip, SBUF and the reads permitting
/// ([`ring_slots::expandable`] one slot at a time).
fn delayed_slots(func: &Function, x: Tensor, l: Axis) -> u32 {
    let trip = u32::try_from(func.axes[l].trip_count()).unwrap_or(MAX_DEPTH);
    let wanted = u32::try_from(wanted_depth(func, x, l).wanted)
        .unwrap_or(MAX_DEPTH)
        .min(trip)
        .clamp(2, MAX_DEPTH);
    let mut trial = func.clone();
    let mut n = 2;
    ring_slots::apply(&mut trial, x, l, n);
    while n < wanted && ring_slots::expandable(&trial, x, l) == Some(n) {
        n += 1;
        ring_slots::apply(&mut trial, x, l, n);
    }
    n
}

/// Whether tile `x`, blocked along other loops than `l`, is accessed only at constant slots, by
/// direct statements of `body` (`l`'s), each slot written whole by one instruction before every
/// read of it in the body, under the same guards, and one more block dimension of two slots along
/// `l` fits in SBUF. A ring along a peeled loop is such a tile: its prologue and epilogue copies
/// select fixed slots, and each slot is a tile of its own (matmul's `res` on `--peel`, two slots
/// along the peeled `n` loop). Then every read of a slot within an iteration of `l` reads the
/// write of that iteration, whichever of `l`'s two slots holds it, and the delayed store reads
/// the previous iteration's write in the other ([`add_ring_dim`]).
fn fixed_slots(func: &Function, body: &[Stmt], x: Tensor, l: Axis) -> bool {
    let td = &func.tensors[x];
    if td.memory != Memory::Sbuf
        || td.kind != TensorKind::Local
        || td.block.iter().any(|b| b.axis == l)
        || !budget::sbuf_fits(budget::sbuf_in_use(func) + budget::tensor_bytes(td))
    {
        return false;
    }
    // Per access of `x`: its position (statement in the body, instruction), whether it writes
    // the slot whole, whether it reads it, its constant slot, and its statement's guards.
    let mut accesses = Vec::new();
    let mut direct = true;
    func.walk_stmts(|s, _| {
        let StmtKind::Insts(is) = &func.stmts[s].kind else {
            return;
        };
        for (j, &i) in is.iter().enumerate() {
            let d = &func.insts[i];
            let ops = std::iter::once(&d.dst).chain(&d.srcs);
            if !ops.clone().any(|o| o.tensor == x) {
                continue;
            }
            let Some(p) = body.iter().position(|&b| b == s) else {
                direct = false;
                continue;
            };
            let slots: Option<Vec<i64>> = (ops.filter(|o| o.tensor == x))
                .map(|o| {
                    (o.access.slots.iter())
                        .map(|e| e.terms().is_empty().then(|| e.constant_term()))
                        .collect::<Option<Vec<i64>>>()
                })
                .reduce(|a, b| if a == b { a } else { None })
                .flatten();
            let reads = d.srcs.iter().any(|o| o.tensor == x);
            let writes = d.dst.tensor == x;
            let whole = writes && !reads && d.writes_whole(&td.shape);
            accesses.push(((p, j), writes, whole, reads, slots, s));
        }
    });
    if !direct {
        return false;
    }
    accesses
        .iter()
        .all(|&(pos, writes, whole, reads, ref slot, s)| {
            let Some(slot) = slot else {
                return false;
            };
            let writers: Vec<_> = (accesses.iter())
                .filter(|a| a.1 && a.4.as_ref() == Some(slot))
                .collect();
            let [w] = writers[..] else {
                return false;
            };
            match (writes, reads) {
                (true, false) => whole,
                (false, true) => w.0 < pos && func.stmts[w.5].preds == func.stmts[s].preds,
                _ => false,
            }
        })
}

/// Gives tile `x` ([`fixed_slots`]) a block dimension of two slots along `l`, every access
/// selecting slot `iv(l)` in it.
fn add_ring_dim(func: &mut Function, x: Tensor, l: Axis) {
    func.tensors[x].block.push(BlockDim { axis: l, count: 2 });
    for (_, d) in func.insts.iter_mut() {
        for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
            if o.tensor == x {
                o.access.slots.push(AffineExpr::iv(l));
            }
        }
    }
}

/// Whether tile `x` is computed, between positions `at` (a loop) and `k` of `body`, from what
/// that loop writes: its data is ready only after the loop's compute.
fn late(func: &Function, body: &[Stmt], at: usize, k: usize, x: Tensor) -> bool {
    let mut late: BTreeSet<Tensor> = (edit::subtree_insts(func, body[at]).iter())
        .map(|&i| func.insts[i].dst.tensor)
        .collect();
    for &s in &body[at + 1..k] {
        let StmtKind::Insts(is) = &func.stmts[s].kind else {
            continue;
        };
        for &i in is {
            let d = &func.insts[i];
            if d.srcs.iter().any(|o| late.contains(&o.tensor)) {
                late.insert(d.dst.tensor);
            }
        }
    }
    late.contains(&x)
}

/// The guard `iv(a) cmp bound`.
fn guard(a: Axis, cmp: CmpOp, bound: i64) -> Predicate {
    Predicate {
        expr: AffineExpr::iv(a),
        cmp,
        bound,
    }
}

/// A copy of store statement `s` retargeted by `subst`, with the extra guards `on`, unplaced;
/// its stage one later than `s`'s (it issues in the next iteration).
fn copy_store(
    func: &mut Function,
    s: Stmt,
    subst: &[(Axis, AffineExpr)],
    on: Vec<Predicate>,
) -> Stmt {
    let sub = Subst::new().axes(subst.iter().cloned());
    let c = edit::copy_stmt(func, s, &sub, "delayed");
    func.stmts[c].preds.extend(on);
    if let Some(stage) = func.stage_tags[c].as_mut() {
        *stage += 1;
    }
    c
}

/// The loops around `l` across whose iterations a store of `l` is carried: the flat nest of
/// `l` ([`compute_nest`]) when it has a level of at least two running iterations, and `l` is not
/// peeled (its prologue and epilogue run between two executions); else none.
fn carry_levels(func: &Function, l: Axis) -> Vec<NestLevel> {
    if func.axes[l].attrs.pipelined.is_some_and(|p| p.peeled) {
        return Vec::new();
    }
    let outer = compute_nest(func, l).unwrap_or_default();
    if outer.iter().any(|o| o.trip() >= 2) {
        outer
    } else {
        Vec::new()
    }
}

/// Delays store `s` of loop `l` (module doc); its copies go after position `at` of the body.
fn delay(func: &mut Function, l: Axis, s: Stmt, at: usize) -> Remark {
    let outer = carry_levels(func, l);
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    // The stored tile's second slot, when it had one (`candidates` checked that it may), before
    // the copies read it at earlier iterations.
    let x = stored_tile(func, s);
    if func.tensors[x].block.is_empty() {
        let slots = delayed_slots(func, x, l);
        ring_slots::apply(func, x, l, slots);
    } else if func.tensors[x].block.iter().all(|b| b.axis != l) {
        add_ring_dim(func, x, l);
    }
    let mut copies = Vec::new();
    // The delayed copy: iteration `l` stores for `l − 1`.
    let earlier = AffineExpr::from_terms([(l, 1)], -1);
    copies.push(copy_store(
        func,
        s,
        &[(l, earlier)],
        vec![guard(l, CmpOp::Ge, lb + 1)],
    ));
    // One carry copy per level of at least two running iterations: the first iteration of the
    // levels inside it stores for the last of the previous execution.
    for j in (0..outer.len()).rev() {
        let oj = outer[j];
        if oj.trip() < 2 {
            continue;
        }
        let mut subst = vec![
            (l, AffineExpr::constant(ub - 1)),
            (oj.axis, AffineExpr::from_terms([(oj.axis, 1)], -1)),
        ];
        let mut on = vec![
            guard(l, CmpOp::Eq, lb),
            guard(oj.axis, CmpOp::Ge, oj.lo + 1),
        ];
        for oi in &outer[j + 1..] {
            subst.push((oi.axis, AffineExpr::constant(oi.hi - 1)));
            on.push(guard(oi.axis, CmpOp::Eq, oi.lo));
        }
        copies.push(copy_store(func, s, &subst, on));
    }
    // `S` itself on the last flat iteration only.
    let mut last = vec![guard(l, CmpOp::Eq, ub - 1)];
    last.extend(
        outer
            .iter()
            .filter(|o| o.trip() >= 2)
            .map(|o| guard(o.axis, CmpOp::Eq, o.hi - 1)),
    );
    func.stmts[s].preds.extend(last);
    let body = &mut func.axes[l].body;
    let n = copies.len();
    body.splice(at + 1..at + 1, copies);
    Remark::StoreDelayed {
        iv: func.display_iv(l).to_string(),
        tile: func.display_name(x).to_string(),
        slots: func.tensors[x].slots(),
        carries: n - 1,
    }
}

/// The tile that store statement `s` (a candidate: one store instruction) stores.
fn stored_tile(func: &Function, s: Stmt) -> Tensor {
    match &func.stmts[s].kind {
        StmtKind::Insts(is) => func.insts[is[0]].srcs[0].tensor,
        StmtKind::Loop(_) => unreachable!("a candidate is an instruction statement"),
    }
}

/// The statement of store statement `s`'s last instruction (the store) alone: `s` itself when it
/// holds only the store, otherwise a new statement after `s` in `l`'s body, with `s`'s guards,
/// stage, annotations and span, and `s` keeps the instructions before it (the same program:
/// the instructions run in the same order under the same guards).
pub fn split_store(func: &mut Function, l: Axis, s: Stmt) -> Stmt {
    let StmtKind::Insts(insts) = func.stmts[s].kind.clone() else {
        return s;
    };
    let [rest @ .., store] = insts.as_slice() else {
        return s;
    };
    if rest.is_empty() || !matches!(func.insts[*store].op, Op::Store) {
        return s;
    }
    let c = func.add_inst_stmt(vec![*store]);
    func.stmts[s].kind = StmtKind::Insts(rest.to_vec());
    func.stmts[c].preds = func.stmts[s].preds.clone();
    func.stmt_spans[c] = func.stmt_spans[s];
    func.annots[c] = func.annots[s];
    func.stage_tags[c] = func.stage_tags[s];
    let body = &mut func.axes[l].body;
    if let Some(pos) = body.iter().position(|&x| x == s) {
        body.insert(pos + 1, c);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of `a` summed over two column chunks in an inner loop `k`, scaled, stored per `m`.
    const KERNEL: &str = "kernel f(a) -> (c) {
  tensor a: hbm f32[256, 256] input
  tensor c: hbm f32[256, 128] output
  tensor t: sbuf f32[128, 128] local
  tensor s: sbuf f32[128, 128] local
  tensor x: sbuf f32[128, 128] local
  loop m in 0..2 affine {
    stmt {
      s[0 +: 128, 0 +: 128] = memset.dve(value=0.0)
    }
    loop k in 0..2 affine {
      stmt {
        t[0 +: 128, 0 +: 128] = load.dma a[128*m +: 128, 128*k +: 128]
      }
      stmt {
        s[0 +: 128, 0 +: 128] = tensor_tensor.dve(op=add) s[0 +: 128, 0 +: 128], t[0 +: 128, 0 +: 128]
      }
    }
    stmt {
      x[0 +: 128, 0 +: 128] = tensor_tensor.dve(op=multiply) s[0 +: 128, 0 +: 128], s[0 +: 128, 0 +: 128]
    }
    stmt {
      c[128*m +: 128, 0 +: 128] = store.dma x[0 +: 128, 0 +: 128]
    }
  }
}
";

    #[test]
    fn the_store_after_the_inner_loop_goes_to_the_next_iteration() {
        let mut func = penguin::parse::parse_function(KERNEL).expect("the test kernel parses");
        let log = delay_stores(&mut func);
        assert_eq!(log.len(), 1, "{log:?}");
        penguin::verify::verify_function(&func).expect("the delayed kernel verifies");
        let text = penguin::write_function(&func);
        // The delayed copy right after `k`, before the multiply, storing for `m - 1` from `x`'s
        // other slot; the store itself on the last iteration only; `x` got its second slot.
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle}: {text}"))
        };
        let delayed =
            at("    stmt if m >= 1 {\n      c[128*m - 128 +: 128, 0 +: 128] = store.dma x{m - 1}");
        assert!(at("loop k") < delayed && delayed < at("x{m}[0 +: 128, 0 +: 128] = tensor_tensor"));
        assert!(text.contains("if m == 1 {"), "{text}");
        assert!(
            text.contains("x: sbuf f32[128, 128] local block[m: 2]"),
            "{text}"
        );
    }

    /// The peeled form of a ring along `n` (an empty steady loop; the prologue and epilogue copies
    /// at constant slots): two column halves stored per `m`.
    const PEELED: &str = "kernel f(a) -> (c) {
  tensor a: hbm f32[256, 256] input
  tensor c: hbm f32[256, 256] output
  tensor t: sbuf f32[128, 128] local
  tensor s: sbuf f32[128, 128] local
  tensor x: sbuf f32[128, 128] local block[n: 2]
  loop m in 0..2 affine {
    stmt {
      s[0 +: 128, 0 +: 128] = memset.dve(value=0.0)
    }
    loop k in 0..2 affine {
      stmt {
        t[0 +: 128, 0 +: 128] = load.dma a[128*m +: 128, 128*k +: 128]
      }
      stmt {
        s[0 +: 128, 0 +: 128] = tensor_tensor.dve(op=add) s[0 +: 128, 0 +: 128], t[0 +: 128, 0 +: 128]
      }
    }
    stmt {
      x{0}[0 +: 128, 0 +: 128] = tensor_tensor.dve(op=multiply) s[0 +: 128, 0 +: 128], s[0 +: 128, 0 +: 128]
    }
    loop n in 2..2 affine {
    }
    stmt {
      x{1}[0 +: 128, 0 +: 128] = tensor_tensor.dve(op=add) s[0 +: 128, 0 +: 128], s[0 +: 128, 0 +: 128]
    }
    stmt {
      c[128*m +: 128, 0 +: 128] = store.dma x{0}[0 +: 128, 0 +: 128]
    }
    stmt {
      c[128*m +: 128, 128 +: 128] = store.dma x{1}[0 +: 128, 0 +: 128]
    }
  }
}
";

    #[test]
    fn a_ring_at_constant_slots_takes_a_ring_along_the_loop_for_its_delayed_stores() {
        let mut func = penguin::parse::parse_function(PEELED).expect("the test kernel parses");
        let log = delay_stores(&mut func);
        assert_eq!(log.len(), 2, "{log:?}");
        penguin::verify::verify_function(&func).expect("the delayed kernel verifies");
        let text = penguin::write_function(&func);
        // Each slot of `n` is a tile of its own: `x` gets two slots along `m` in each, and both
        // stores go to the next iteration of `m`, after `k`, reading the other `m` slot.
        assert!(
            text.contains("x: sbuf f32[128, 128] local block[n: 2, m: 2]"),
            "{text}"
        );
        for (col, slot) in [(0, 0), (128, 1)] {
            let delayed = format!(
                "c[128*m - 128 +: 128, {col} +: 128] = store.dma x{{{slot}, m - 1}}[0 +: 128, 0 +: 128]"
            );
            let at = text
                .find(&delayed)
                .unwrap_or_else(|| panic!("{delayed}: {text}"));
            assert!(text.find("loop k").unwrap() < at, "{text}");
            assert!(
                at < text
                    .find("x{0, m}[0 +: 128, 0 +: 128] = tensor_tensor")
                    .unwrap()
            );
        }
    }

    #[test]
    fn a_ring_at_constant_slots_read_before_its_write_keeps_its_stores() {
        // Slot 1 is read (into `t`) before the body writes it: with a ring along `m`, that read
        // would find another iteration's value.
        let kernel = PEELED.replace(
            "    loop n in 2..2 affine {\n",
            "    stmt {\n      t[0 +: 128, 0 +: 128] = copy.any x{1}[0 +: 128, 0 +: 128]\n    }\n    loop n in 2..2 affine {\n",
        );
        assert_ne!(kernel, PEELED);
        let mut func = penguin::parse::parse_function(&kernel).expect("the test kernel parses");
        let before = penguin::write_function(&func);
        assert!(delay_stores(&mut func).is_empty());
        assert_eq!(penguin::write_function(&func), before);
    }

    #[test]
    fn a_store_whose_tensor_is_read_again_stays() {
        // `c` is read back inside `m`, before `k`: the delayed store would land after that read.
        let kernel = KERNEL.replace(
            "    loop k in 0..2 affine {\n",
            "    stmt {\n      t[0 +: 128, 0 +: 128] = load.dma c[0 +: 128, 0 +: 128]\n    }\n    loop k in 0..2 affine {\n",
        );
        let mut func = penguin::parse::parse_function(&kernel).expect("the test kernel parses");
        let before = penguin::write_function(&func);
        assert!(delay_stores(&mut func).is_empty());
        assert_eq!(penguin::write_function(&func), before);
    }
}
