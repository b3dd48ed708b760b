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
//! What qualifies. `E` is extended and not peeled, and the nest analysis of the emergent path
//! ([`super::nest::compute_nest`]) finds loops around it: `O1 ⊃ … ⊃ Ok ⊃ E`, each a direct
//! child of the next one out, on its running iterations `lo(Oj) .. hi(Oj)`. A **carried load** is
//! a direct statement of `E` in stage 0 that is one load from a kernel input, guarded by exactly
//! the stage guard `e < lb + T`, into a tensor that
//! - has one block dimension, along `E`, of `N` slots with `N` dividing `T`, and is written with
//!   the stage-0 selector `e` (the pipeliner's ring);
//! - is written by no other statement and accessed only inside `E`.
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
//! [`crate::sync`]; the carry is then already issued), and they keep the load's stage tag: a carry
//! is stage-0 work of the next execution. No iteration, stage or slot count changes.
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
//! execution. The synchronisation analysis ([`crate::sync`]) is exact on the emitted footprints,
//! and the race detector checks every example.
//!
//! Invariants: [`carry_across_executions`] returns `false` with the function unchanged, or has
//! carried every load that qualifies; it adds no iteration, stage or slot; every statement it adds
//! is a copy of a carried load (one instruction, same spans, stage 0).

use super::budget;
use super::cost::{body_compute, issue_cycles};
use super::nest::{carry_copies, compute_nest, copy_load, divisor_slots, guard, NestLevel};
use penguin::affine::{AffineExpr, CmpOp};
use penguin::ir::{Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};

/// Issues the first loads of each next execution of the extended loop `e` in the drain of the
/// one before (see the module doc); returns whether it did, having logged the decision.
pub fn carry_across_executions(func: &mut Function, e: Axis, log: &mut Vec<String>) -> bool {
    let name = func.axes[e].iv_name.clone();
    let Some(pipe) = func.axes[e].attrs.pipelined else {
        return false;
    };
    let decline = |log: &mut Vec<String>, why: String| {
        log.push(format!(
            "emergent: annotated loop `{name}`: each execution loads its own first iterations: {why}"
        ));
        false
    };
    if pipe.peeled || pipe.num_stages < 2 {
        return false;
    }
    let (lb, t, s) = (func.axes[e].lb, pipe.orig_trip, i64::from(pipe.num_stages));
    let outer = match compute_nest(func, e) {
        Ok(o) => o,
        Err(why) => return decline(log, why),
    };
    // Where `sp` is the bottleneck, its drain is not idle (the last stores run there) and
    // loading there only moves its waits.
    let body = func.axes[e].body.clone();
    let issue = issue_cycles(func, &body);
    let ext = func.axes[e].trip_count().max(1) as u64;
    let compute = (body_compute(func, &body) * ext).div_ceil(t.max(1) as u64);
    if issue >= compute {
        return decline(log, format!("its transfers are issue-bound (~{issue} `sp` cycles against ~{compute} compute cycles per iteration of the steady state), so `sp` has no idle drain"));
    }
    let loads = grow_rings(func, t, carried_loads(func, e, t));
    if loads.is_empty() {
        return decline(
            log,
            "no stage-0 load of a kernel input into a ring whose slots divide the trip count"
                .into(),
        );
    }
    let p = loads
        .iter()
        .map(|&(_, _, n, _)| i64::from(n))
        .min()
        .unwrap_or(1)
        .min(s - 1)
        .min(t);
    let mut body = body;
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
    let names: Vec<String> = loads
        .iter()
        .map(|&(_, x, d, n)| match d == n {
            true => format!("`{}` ({d} slots)", func.tensors[x].name),
            false => format!("`{}` ({d} slots, was {n})", func.tensors[x].name),
        })
        .collect();
    log.push(format!(
        "emergent: annotated loop `{name}` (trip {t}, {s} stages) is nested in {}: the stage-0 loads of {} for the first {p} iteration(s) of each next execution are issued in the last {p} iteration(s) of this one ({carries_per_load} carry copy(ies) per load; the ring's slots continue across executions; the first execution loads its own)",
        super::nest::nest_names(func, &outer),
        names.join(", "),
    ));
    true
}

/// The carried loads of the extended loop `e` of original trip `t` (see the module doc): the
/// statement, the ring it fills, the ring's slots.
fn carried_loads(func: &Function, e: Axis, t: i64) -> Vec<(Stmt, Tensor, u32)> {
    let lb = func.axes[e].lb;
    let stage_guard = [guard(AffineExpr::iv(e), CmpOp::Lt, lb + t)];
    let mut out = Vec::new();
    for &s in &func.axes[e].body {
        let sd = &func.stmts[s];
        let StmtKind::Insts(insts) = &sd.kind else {
            continue;
        };
        let [i] = insts[..] else {
            continue;
        };
        let d = &func.insts[i];
        let from_input = d
            .srcs
            .first()
            .is_some_and(|o| func.tensors[o.tensor].kind == TensorKind::Input);
        let rt = d.dst.tensor;
        let ring = match func.tensors[rt].block[..] {
            [b] if b.axis == e => b.count,
            _ => continue,
        };
        if d.op == Op::Load
            && from_input
            && func.stage_tags[s] == Some(0)
            && sd.preds == stage_guard
            && d.dst.access.slots == [AffineExpr::iv(e)]
            && only_writer_inside(func, e, rt, s)
        {
            out.push((s, rt, ring));
        }
    }
    out
}

/// The carried loads whose rings can have slots dividing `t`, with those slots: the smallest
/// divisor of `t` above the pipeliner's count when SBUF has room (the slot that
/// [`crate::expand`] would add to break a reuse recurrence, which it cannot add once the ring has
/// several writers), else the pipeliner's count when it divides `t`. The rings grow as they go.
/// Each load comes with its ring's slots after and before.
fn grow_rings(
    func: &mut Function,
    t: i64,
    loads: Vec<(Stmt, Tensor, u32)>,
) -> Vec<(Stmt, Tensor, u32, u32)> {
    let mut out = Vec::new();
    for (ld, rt, n) in loads {
        let have = budget::sbuf_in_use(func);
        let slot = budget::slot_bytes(&func.tensors[rt], u64::from(n));
        let room = |d: u32| d <= n || budget::sbuf_fits(have + slot * u64::from(d - n));
        let Some(d) = divisor_slots(t, n + 1, room).filter(|&d| d >= n) else {
            continue;
        };
        func.tensors[rt].block[0].count = d;
        out.push((ld, rt, d, n));
    }
    out
}

/// Whether statement `w` is the only writer of tensor `x` and every access to `x` is inside loop
/// `e`.
fn only_writer_inside(func: &Function, e: Axis, x: Tensor, w: Stmt) -> bool {
    let mut ok = true;
    func.walk_stmts(|s, loops| {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            return;
        };
        for &i in insts {
            let d = &func.insts[i];
            let writes = d.dst.tensor == x;
            let touches = writes || d.srcs.iter().any(|o| o.tensor == x);
            if (writes && s != w) || (touches && !loops.contains(&e)) {
                ok = false;
            }
        }
    });
    ok
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
