//! Prefetch across the executions of a loop the annotated pipeliner extended.
//!
//! The annotated pipeliner extends a loop `E` of trip `T` and `S` stages to `T + S - 1`
//! iterations: stage 0 runs on the first `T` of them (guard `e < lb + T`), and the last `S - 1`
//! iterations are the drain, where stage 0 is off. When `E` is nested in other loops, every
//! execution of `E` then starts with its first loads exposed (nothing else of that execution can
//! run before them) and ends with a drain in which `sp` has nothing of `E` to issue. Short user
//! loops in a nest (matmul_mode_b's `k`, 4 iterations in 2 stages, run once per `(m, n)`) spend a
//! large part of their time so. [`carry_across_executions`] issues the first loads of the next
//! execution in the drain of this one, so that the next execution's first iteration finds them
//! there (or in flight).
//!
//! What qualifies (predicated; a peeled loop below). `E` is extended, and the nest analysis of
//! the emergent path ([`super::nest::compute_nest`]) finds loops around it: `O1 ⊃ … ⊃ Ok ⊃ E`,
//! each a direct child of the next one out, on its running iterations `lo(Oj) .. hi(Oj)`. A
//! **carried load** is a direct statement of `E` in stage 0 that is one load from a kernel input,
//! guarded by exactly
//! the stage guard `e < lb + T`, into a tensor that
//! - has one block dimension, along `E`, and is written with the stage-0 selector `e` (the
//!   pipeliner's ring). Its `N` slots grow to the smallest divisor of `T` above them when SBUF
//!   holds it (the slot [`crate::codegen::expand`] would add, which it cannot once the ring has several
//!   writers) and every read of the ring finds the same write with them
//!   ([`crate::transform::ring_reads`]: a `.pir` read at an offset meaningful only modulo `N` keeps `N`), or
//!   stay when they divide `T`; otherwise the load is not carried;
//! - is written by no other statement and accessed only inside `E`;
//!
//! and `E` is not issue-bound: `sp` issues its transfers in less time than the compute engines
//! spend on an iteration of the steady state (else `sp` has no idle drain to fill, and the
//! carries' guards turning on and off only add waits: transpose_stages ran 30% slower).
//!
//! The transformation, with `P = min(S - 1, N, T)` (the drain iterations that can carry):
//! - the load itself runs on `lb + P <= e < lb + T` (the **in-loop copy**);
//! - a **prologue copy** runs on `e < lb + P` in the first execution of the nest only
//!   (`oj == lo(Oj)` for every level): the first execution has no drain before it;
//! - one **carry copy** per level `Oj` of at least 2 running iterations runs on
//!   `lb + T <= e < lb + T + P`, when `Oj` is not in its last running iteration and every level
//!   inside it is in its last: it loads for `e - T` of the next execution at that level
//!   (`oj + 1`, the levels inside at `lo`), into slot `e` (mod `N`).
//!
//! Statements keep their place: the copies stand where the load stood, carries first (when the
//! in-loop copy turns off at `e = lb + T`, `sp` first waits for its earlier transfers, see
//! [`crate::codegen::sync`]; the carry is then already issued), and they keep the load's stage tag: a carry
//! is stage-0 work of the next execution. No iteration or stage changes; only the carried rings'
//! slot counts may grow (above).
//!
//! **A peeled loop** (`--peel`) has no drain iterations: its prologue (the extended iterations
//! before the steady state, as straight-line copies in its parent's body) holds the stage-0 loads
//! of its first iterations, at constant slots, and its epilogue holds the last stages. There the
//! carried loads are the steady state's stage-0 loads whose every other writer is one of their
//! prologue copies (the ring accessed only inside the loop and beside it), `P` is also at most
//! `N - s_max` (`s_max`: the latest stage reading the ring), and:
//! - the prologue copies of the first `P` iterations run in the first execution of the nest only;
//! - their carry copies (one per level, as above; constant slot `lb + q`) follow the steady state
//!   directly, before the epilogue. The slot of iteration `q` was last read at extended iteration
//!   `T + q - N + s_max < T` (`q < N - s_max`), in the steady state: the carry finds it free, as
//!   a stage-0 load at iteration `T + q` would, and the epilogue writes no ring slot.
//!
//! Why it is correct. The value a carry writes comes from a kernel input, which nothing writes,
//! so loading it earlier reads the same bits. Since `N | T`, slot `e mod N` of a carry at
//! `e = lb + T + q` is `q mod N`, the slot that the next execution's readers of iteration `q` read
//! (stage `s` reads slot `e - s` at `e = q + s`): the ring's slots simply continue from one
//! execution into the next, as if stage 0 had kept running through the drain. So every write
//! meets the same earlier readers as a stage-0 load of the extended loop would at that iteration,
//! which the annotated pipeliner's legality check covers (a ring slot is reused `N` iterations
//! later), and `P <= N` keeps two carries of one drain off one slot. Between a carry and its
//! readers, the next execution's in-loop copies write slots `j mod N` for `j >= P`; the first
//! such `j` equal to `q` modulo `N` is `q + N`, after the readers of `q`, as within one
//! execution. The synchronisation analysis ([`crate::codegen::sync`]) is exact on the emitted footprints,
//! and the race detector checks every example.
//!
//! Invariants: [`carry_across_executions`] returns `false` with the function unchanged, or has
//! carried every load that qualifies; it adds no iteration or stage, and grows a carried ring
//! only to a divisor of the trip count that SBUF holds; every statement it adds is a copy of a
//! carried load (one instruction, same spans, stage 0).

use super::nest::{carry_copies, compute_nest, copy_load, divisor_slots, guard, NestLevel};
use super::plan::count_writers;
use super::remark::{CarryForm, EmergentRemark, GrownRing};
use crate::cost::budget;
use crate::cost::loop_cost::steady_issue_and_compute;
use crate::transform::decline::Decline;
use crate::transform::ring_reads::compute_reads_kept;
use penguin::affine::{AffineExpr, CmpOp};
use penguin::edit::Cursor;
use penguin::ir::{Op, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};

/// Issues the first loads of each next execution of the extended loop `e` in the drain of the
/// one before (see the module doc); returns whether it did, having logged the decision.
pub fn carry_across_executions(
    func: &mut Function,
    e: Axis,
    log: &mut Vec<EmergentRemark>,
) -> bool {
    let name = func.display_iv(e).to_string();
    let Some(pipe) = func.axes[e].attrs.pipelined else {
        return false;
    };
    let decline = |log: &mut Vec<EmergentRemark>, why: Decline| {
        log.push(EmergentRemark::CarryDeclined {
            iv: name.clone(),
            why,
        });
        false
    };
    if pipe.num_stages < 2 {
        return false;
    }
    let (lb, t, s) = (func.axes[e].lb, pipe.orig_trip, i64::from(pipe.num_stages));
    let outer = match compute_nest(func, e) {
        Ok(o) => o,
        Err(why) => return decline(log, why),
    };
    // Where `sp` is the bottleneck, its drain is not idle (the last stores run there) and
    // loading there only moves its waits. (A peeled body is the steady state, unguarded.)
    let (issue, compute) = steady_issue_and_compute(func, e, &pipe);
    if issue >= compute {
        return decline(log, Decline::DrainNotIdle { issue, compute });
    }
    if pipe.peeled {
        return match carry_peeled(func, e, &outer, t, s) {
            Ok(remark) => {
                log.push(remark);
                true
            }
            Err(why) => decline(log, why),
        };
    }
    let loads = grow_rings(func, t, carried_loads(func, e, t));
    if loads.is_empty() {
        return decline(log, Decline::NoCarriedLoad);
    }
    let p = loads
        .iter()
        .map(|&(_, _, n, _)| i64::from(n))
        .min()
        .unwrap_or(1)
        .min(s - 1)
        .min(t);
    let mut body = func.axes[e].body.clone();
    let mut carries_per_load = 0;
    for &(ld, _, _, _) in &loads {
        let prologue = prologue_copy(func, e, &outer, ld, p);
        let inner = [(e, AffineExpr::from_terms([(e, 1)], -t))];
        let on = [
            guard(AffineExpr::iv(e), CmpOp::Ge, lb + t),
            guard(AffineExpr::iv(e), CmpOp::Lt, lb + t + p),
        ];
        let carries = carry_copies(func, &outer, ld, &inner, &on, &[AffineExpr::iv(e)]);
        carries_per_load = carries.len();
        func.stmts[ld]
            .preds
            .insert(0, guard(AffineExpr::iv(e), CmpOp::Ge, lb + p));
        for &c in carries.iter().chain([&prologue]) {
            func.stage_tags[c] = Some(0);
            func.annots[c] = func.annots[ld];
        }
        let at = body
            .iter()
            .position(|&x| x == ld)
            .expect("a carried load is a direct statement of the loop (carried_loads)");
        body.splice(at..at, std::iter::once(prologue).chain(carries));
    }
    func.axes[e].body = body;
    log.push(EmergentRemark::Carried {
        iv: name,
        form: CarryForm::Extended,
        trip: t,
        stages: s,
        nest: super::nest::nest_names(func, &outer),
        rings: grown_rings(func, loads.iter().map(|&(_, x, d, n)| (x, d, n))),
        ahead: p,
        carries: carries_per_load,
    });
    true
}

/// The carried loads of the extended loop `e` of original trip `t` (see the module doc): the
/// statement, the ring it fills, the ring's slots.
fn carried_loads(func: &Function, e: Axis, t: i64) -> Vec<(Stmt, Tensor, u32)> {
    let lb = func.axes[e].lb;
    let stage_guard = [guard(AffineExpr::iv(e), CmpOp::Lt, lb + t)];
    let mut out = Vec::new();
    for &s in &func.axes[e].body {
        let Some(i) = single_load(func, s) else {
            continue;
        };
        let d = &func.insts[i];
        let rt = d.dst.tensor;
        let ring = match func.tensors[rt].block[..] {
            [b] if b.axis == e => b.count,
            _ => continue,
        };
        if func.stage_tags[s] == Some(0)
            && func.stmts[s].preds == stage_guard
            && d.dst.access.slots == [AffineExpr::iv(e)]
            && count_writers(func, rt) == 1
            && accessed_only(func, rt, |loops| loops.contains(&e))
        {
            out.push((s, rt, ring));
        }
    }
    out
}

/// The carried loads whose rings can have slots dividing `t`, with those slots: the smallest
/// divisor of `t` above the pipeliner's count when SBUF has room (the slot that
/// [`crate::codegen::expand`] would add to break a reuse recurrence, which it cannot add once the ring has
/// several writers), else the pipeliner's count when it divides `t`. The rings grow as they go.
/// Each load comes with its ring's slots after and before.
fn grow_rings(
    func: &mut Function,
    t: i64,
    loads: Vec<(Stmt, Tensor, u32)>,
) -> Vec<(Stmt, Tensor, u32, u32)> {
    let mut out = Vec::new();
    for (ld, rt, n) in loads {
        let Some((d, _)) = divisor_ring(func, rt, t, budget::sbuf_in_use(func)) else {
            continue;
        };
        // More slots must leave every read on the write it reads (`crate::transform::ring_reads`).
        let e = func.tensors[rt].block[0].axis;
        if d > n && !compute_reads_kept(func, rt, e, d) {
            continue;
        }
        func.tensors[rt].block[0].count = d;
        out.push((ld, rt, d, n));
    }
    out
}

/// The slots ring `x` (of `N` slots, along a loop of trip `t`) gets, with the SBUF bytes that adds,
/// given `in_use` bytes of SBUF in use: the smallest divisor of `t` above `N` that SBUF holds, else
/// `N` when it divides `t`, else `None`.
fn divisor_ring(func: &Function, x: Tensor, t: i64, in_use: u64) -> Option<(u32, u64)> {
    let n = func.tensors[x].block[0].count;
    let slot = budget::slot_bytes(&func.tensors[x], u64::from(n));
    let room = |d: u32| d <= n || budget::sbuf_fits(in_use + slot * u64::from(d - n));
    let d = divisor_slots(t, n + 1, room).filter(|&d| d >= n)?;
    Some((d, slot * u64::from(d - n)))
}

/// The rings as the log names them, from (ring, slots, slots before).
fn grown_rings(func: &Function, rings: impl Iterator<Item = (Tensor, u32, u32)>) -> Vec<GrownRing> {
    rings
        .map(|(x, slots, was)| GrownRing {
            ring: func.display_name(x).to_string(),
            slots,
            was,
        })
        .collect()
}

/// The prologue copy of carried load `ld`: the load itself on `e < lb + P`, in the first
/// execution of the nest only.
fn prologue_copy(func: &mut Function, e: Axis, outer: &[NestLevel], ld: Stmt, p: i64) -> Stmt {
    let lb = func.axes[e].lb;
    let mut preds: Vec<_> = outer
        .iter()
        .map(|o| guard(AffineExpr::iv(o.axis), CmpOp::Eq, o.lo))
        .collect();
    preds.push(guard(AffineExpr::iv(e), CmpOp::Lt, lb + p));
    copy_load(func, ld, &[], &[AffineExpr::iv(e)], preds)
}

/// A carried load of a peeled loop: the steady state's statement, its ring, and its prologue
/// copies by iteration (`q`: the copy for the loop's `q`-th iteration, slot `lb + q`).
struct PeeledLoad {
    ld: Stmt,
    ring: Tensor,
    prologue: Vec<Stmt>,
}

/// The peeled realisation (see the module doc): the carries follow the steady state, and the
/// prologue's copies of the first `P` iterations run in the first execution only. Returns the
/// log line, or why not (nothing changed).
fn carry_peeled(
    func: &mut Function,
    e: Axis,
    outer: &[NestLevel],
    t: i64,
    s: i64,
) -> Result<EmergentRemark, Decline> {
    let name = func.display_iv(e).to_string();
    let parent = outer
        .last()
        .expect("a nest has an enclosing loop (compute_nest)")
        .axis;
    let siblings = func.axes[parent].body.clone();
    let at = siblings
        .iter()
        .position(|&x| func.stmts[x].kind == StmtKind::Loop(e))
        .expect("`e` is a direct child of its innermost enclosing loop (compute_nest)");
    // The steady state starts at the extended loop's iteration `lb + s - 1`.
    let lb = func.axes[e].lb - (s - 1);
    let loads = peeled_loads(func, e, parent, lb, &siblings[..at], t.min(s - 1));
    if loads.is_empty() {
        return Err(Decline::NoPeeledCarriedLoad);
    }
    // The ring grows first; then each carry for iteration `q` must find its slot's last reader
    // (stage `s` reads slot `e - s`) already done at the end of the steady state: `q + s < N`.
    let mut p = (s - 1).min(t);
    let mut grown = Vec::new();
    // SBUF in use, with the slots of the rings grown so far (applied once all are chosen).
    let mut have = budget::sbuf_in_use(func);
    for l in &loads {
        let n = func.tensors[l.ring].block[0].count;
        let (d, added) =
            divisor_ring(func, l.ring, t, have).ok_or_else(|| Decline::NoRingDivides {
                ring: func.display_name(l.ring).to_string(),
                trip: t,
            })?;
        if d > n && !compute_reads_kept(func, l.ring, e, d) {
            return Err(Decline::ReadsAnotherWrite {
                ring: func.display_name(l.ring).to_string(),
                slots: d,
            });
        }
        let last_reader =
            last_reader_stage(func, e, l.ring).ok_or_else(|| Decline::ReaderWithoutStage {
                ring: func.display_name(l.ring).to_string(),
            })?;
        p = p.min(i64::from(d) - last_reader);
        have += added;
        grown.push((l.ring, d, n));
    }
    if p < 1 {
        return Err(Decline::NoSlotFree);
    }
    for &(ring, d, _) in &grown {
        func.tensors[ring].block[0].count = d;
    }
    let first: Vec<_> = outer
        .iter()
        .map(|o| guard(AffineExpr::iv(o.axis), CmpOp::Eq, o.lo))
        .collect();
    let mut carries = Vec::new();
    for l in &loads {
        for (q, &c) in l.prologue.iter().enumerate().take(p as usize) {
            let slot = [AffineExpr::constant(lb + q as i64)];
            let copies = carry_copies(func, outer, c, &[], &[], &slot);
            for &x in &copies {
                func.stage_tags[x] = Some(0);
                func.annots[x] = func.annots[l.ld];
            }
            carries.extend(copies);
            func.stmts[c].preds.extend(first.iter().cloned());
        }
    }
    let per_load = carries.len() / loads.len() / p as usize;
    Cursor::at(func, (Some(parent), at)).insert_after(carries.iter().copied());
    Ok(EmergentRemark::Carried {
        iv: name,
        form: CarryForm::Peeled,
        trip: t,
        stages: s,
        nest: super::nest::nest_names(func, outer),
        rings: grown_rings(func, grown.iter().copied()),
        ahead: p,
        carries: per_load,
    })
}

/// The carried loads of the peeled loop `e` (see the module doc), with their prologue copies
/// among `before` (the statements before `e` in its parent's body) for the first `q_end`
/// iterations; `parent` is the loop whose body holds `e`, `lb` the extended loop's lower bound
/// (before the steady state was cut out).
fn peeled_loads(
    func: &Function,
    e: Axis,
    parent: Axis,
    lb: i64,
    before: &[Stmt],
    q_end: i64,
) -> Vec<PeeledLoad> {
    let mut out = Vec::new();
    for &ld in &func.axes[e].body {
        let Some(i) = single_load(func, ld) else {
            continue;
        };
        let d = &func.insts[i];
        let rt = d.dst.tensor;
        let ringed = matches!(func.tensors[rt].block[..], [b] if b.axis == e);
        if !ringed
            || func.stage_tags[ld] != Some(0)
            || !func.stmts[ld].preds.is_empty()
            || d.dst.access.slots != [AffineExpr::iv(e)]
            || func.inst_spans[i].is_none()
        {
            continue;
        }
        // The prologue copies of `ld`: loads into the ring from the same source statement, at
        // constant slots `lb + q`.
        let mut prologue: Vec<Option<Stmt>> = vec![None; q_end.max(0) as usize];
        let mut writers = vec![ld];
        for &c in before {
            let Some(ci) = single_load(func, c) else {
                continue;
            };
            let cd = &func.insts[ci];
            if cd.dst.tensor != rt {
                continue;
            }
            writers.push(c);
            let q = match cd.dst.access.slots[..] {
                [ref sel] => sel.as_constant().map(|k| k - lb),
                _ => None,
            };
            let same = func.inst_spans[ci] == func.inst_spans[i]
                && func.stage_tags[c] == Some(0)
                && func.stmts[c].preds.is_empty();
            if let (true, Some(q)) = (same, q) {
                if let Some(slot) = usize::try_from(q).ok().and_then(|q| prologue.get_mut(q)) {
                    *slot = Some(c);
                }
            }
        }
        let Some(prologue) = prologue.into_iter().collect::<Option<Vec<Stmt>>>() else {
            continue;
        };
        // Inside `e`, or beside it: directly in the body of its parent (its prologue and
        // epilogue copies).
        let beside = |loops: &[Axis]| loops.contains(&e) || loops.last() == Some(&parent);
        if writers.len() == prologue.len() + 1
            && count_writers(func, rt) == writers.len()
            && accessed_only(func, rt, beside)
        {
            out.push(PeeledLoad {
                ld,
                ring: rt,
                prologue,
            });
        }
    }
    out
}

/// The instruction of statement `s` when the statement is one load of a kernel input (guarded
/// or not).
fn single_load(func: &Function, s: Stmt) -> Option<penguin::Inst> {
    let StmtKind::Insts(insts) = &func.stmts[s].kind else {
        return None;
    };
    let [i] = insts[..] else {
        return None;
    };
    let d = &func.insts[i];
    let from_input = d
        .srcs
        .first()
        .is_some_and(|o| func.tensors[o.tensor].kind.is_read_only());
    (d.op == Op::Load && from_input).then_some(i)
}

/// Whether every access to tensor `x` is in a statement whose enclosing loops (outermost first)
/// `at` accepts.
fn accessed_only(func: &Function, x: Tensor, at: impl Fn(&[Axis]) -> bool) -> bool {
    let mut ok = true;
    func.walk_stmts(|s, loops| {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            return;
        };
        let touches = insts.iter().any(|&i| {
            let d = &func.insts[i];
            d.dst.tensor == x || d.srcs.iter().any(|o| o.tensor == x)
        });
        if touches && !at(loops) {
            ok = false;
        }
    });
    ok
}

/// The latest stage that reads ring `x` in the body of loop `e` (a nested loop reads in its own
/// stage), or `None` when a reader has no stage tag.
fn last_reader_stage(func: &Function, e: Axis, x: Tensor) -> Option<i64> {
    let mut last = 0;
    for &s in &func.axes[e].body {
        if reads(func, s, x) {
            last = last.max(i64::from(func.stage_tags[s]?));
        }
    }
    Some(last)
}

/// Whether statement `s` (or anything nested in it) reads tensor `x`.
fn reads(func: &Function, s: Stmt, x: Tensor) -> bool {
    match &func.stmts[s].kind {
        StmtKind::Insts(insts) => insts
            .iter()
            .any(|&i| func.insts[i].srcs.iter().any(|o| o.tensor == x)),
        StmtKind::Loop(a) => func.axes[*a].body.iter().any(|&c| reads(func, c, x)),
    }
}
