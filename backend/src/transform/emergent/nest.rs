//! Emergent prefetch across a loop nest: the second realisation of an emergent ring.
//!
//! [`super::plan::ring_tiles`] rings the load tiles of an innermost loop `L` of trip `T`. Its
//! single-loop realisation ([`super::shift::shift_loads`]) runs `L` for `T + P` iterations and
//! issues the loads `P` iterations ahead, so each execution of `L` starts with `P` exposed loads
//! (the fill) and ends with `P` load-free iterations (the drain). When `L` is short and nested,
//! that happens once per iteration of the enclosing loops. [`prefetch_across_nest`] removes both
//! for a loop `L` nested in loops `O1 ⊃ O2 ⊃ … ⊃ Ok ⊃ L` where
//! - every loop of the chain is a direct child of the next one out, either unguarded or guarded
//!   only by comparisons of that next loop's induction variable with constants. Those guards
//!   leave an interval `lo(Oj) .. hi(Oj)` of the iterations of `Oj` (its **running
//!   iterations**; all of them for an unguarded child), of which there is at least one;
//! - no loop of the chain is annotated (`num_stages`) without having been extended by the
//!   annotated pipeliner. A loop it extended is a level like any other: the stage that holds the
//!   next loop in runs on the iterations its stage guards allow, `s .. s + T` for stage `s`, and
//!   the indices there already read `oj - s`. So an un-annotated loop inside a user's stage
//!   prefetches across the executions of the user's loop (matmul's `k` loop, stage 0 of `n`);
//! - the chain stops below the first loop that does not qualify, or at the top of the kernel;
//!
//! so that the executions of `L`'s body form one flat sequence
//! `f = ((o1' · T2 + o2') · …) · T + l'` over the whole nest, where `oj' = oj - lo(Oj)` and
//! `Tj = hi(Oj) - lo(Oj)` count running iterations only. Below, "first" and "last" iteration of a
//! level mean its first and last running iteration. The ring tiles are used only inside `L` (`L`
//! is the innermost loop enclosing all their accesses).
//!
//! The transformation, for the hoistable loads ([`super::plan::hoistable_loads`]: a direct,
//! unguarded, single-instruction statement of `L` that loads a whole ring tile from a kernel
//! input):
//! - every ring of a hoisted load gets `N` slots with `N` dividing `T` (the heuristic's depth
//!   rounded up to such a divisor when SBUF has room, else down; no divisor in `2..=`
//!   [`MAX_SLOTS`] declines), and its slot selector becomes the flat index `f` (affine; taken
//!   modulo `N`). Since `N | T`, every outer coefficient of `f` is a multiple of `N` and
//!   `f mod N = l' mod N`: address rotation ([`crate::codegen::emit`]) reduces the selector to one
//!   register's modulo term;
//! - `P` = the heuristic's prefetch depth (its ring depth minus one), lowered to `N - 1` when the
//!   ring got fewer slots, minimum over the hoisted loads (so `P < N <= T`, and one carry per
//!   level suffices); slots beyond `P + 1` are slack;
//! - the load statement itself becomes the **in-loop copy**: in iteration `(o…, l)` it loads for
//!   `(o…, l + P)`, guarded `l + P < ub(L)`, into slot `f + P`;
//! - one **carry copy** per enclosing level `Oj` (of trip at least 2): it loads for the first
//!   iteration of the next execution of `L` at that level,
//!   `(o1, …, oj + 1, lo, …, lo, l + P - T)`, guarded `l + P >= ub(L)`, `oj + 1 < hi(Oj)` and
//!   `oi == hi(Oi) - 1` for every level `i` inside `j`, into slot `f + P` (on that guard the
//!   target's flat index is exactly `f + P`);
//! - the **prologue**: the loads for flat `0 .. P - 1` (`o… = lb`, `l = lb(L) + q`), with constant
//!   indices, at the head of `L`'s body guarded by "first iteration of the nest" (`oj == lo(Oj)`
//!   for every level and `l == lb(L)`). They stay inside `L` so that every access to the ring is
//!   inside every loop of the nest: the trip clamping of the synchronisation analysis
//!   ([`crate::codegen::clamp`]) may then still clamp those loops (nothing outside a loop touches its
//!   ring), and each guard compares one induction variable with a threshold at the start or the
//!   end of its loop, which is what the clamping asks of guards;
//! - `L`'s body becomes: prologue, carries, in-loop copies, then the rest. (When a guarded
//!   transfer turns off, `sp` first waits for its earlier transfers, see [`crate::codegen::sync`]; the
//!   in-loop copy turns off at `l + P = ub(L)`, after the carry for that iteration is issued.)
//! - the compute statements stay where they were, unshifted: no extra iterations, no drain, no
//!   peeling; the loop bodies stay one hardware loop each, and the number of statements added
//!   (`1 + levels + P` per load) does not depend on the trip counts.
//!
//! Why it is correct. Every hoisted copy reads a kernel input, which nothing writes, so issuing it
//! earlier reads the same values. Exactly one copy is on for each flat target `g` (`g < P`: the
//! prologue; otherwise the copy of flat iteration `g - P`, where the guards select the in-loop
//! copy or the one carry level that applies), and it writes slot `g mod N`: the slot the readers
//! of iteration `g` read. Its previous readers are those of flat iteration `g - N`, which ran
//! `N - P >= 1` flat iterations before the copy's own iteration `g - P`, so in program order the
//! copy follows them and precedes iteration `g`'s readers: the order of writes and reads of each
//! slot is the order of the original program. The backend's synchronisation analysis
//! ([`crate::codegen::sync`]) is exact on the physical footprints of the emitted instructions, so the
//! semaphores enforce exactly these orders (the race detector checks it on every example).
//!
//! **Whole executions ahead.** When `sp` spends at least as long issuing one iteration's
//! transfers (pieces as [`crate::cost::dma::dma_pieces`] splits them) as the compute engines
//! spend on it, `sp` is the bottleneck and each of its waits costs time. The copies above turn
//! off once per execution of `L` (the in-loop copy at `l + P = ub(L)`, a carry at the start of
//! the next execution), and when a guarded transfer turns off `sp` first waits for its earlier
//! transfers ([`crate::codegen::sync`]), a transfer issued one iteration before. So such a loop
//! (trip at most [`MAX_SLOTS`]) prefetches `d` whole executions ahead instead. So does a loop
//! whose ring of a divisor of `T` slots issues its loads fewer iterations ahead than the
//! heuristic wants (a trip of 3 gets 3 slots, 2 ahead, where 3 are wanted): whole executions
//! issue each load at least `T` iterations ahead (else the flat ring stays).
//! - `d` covers the longest hoisted transfer ([`crate::cost::loop_cost::wanted_depth`]'s DMA
//!   time) with the compute of one iteration of `Ok` (one execution of `L` and what runs beside
//!   it), at most `Tk`, lowered until SBUF holds the rings;
//! - the rings hold `d + 1` consecutive executions in blocks of their own
//!   ([`compute_execution_blocks`]): from `Ok` outwards, a level takes the fewest blocks that
//!   reach `d + 1` executions, a divisor of its trip unless no running level encloses it (then
//!   a power of two, for the period of the rings), else
//!   all its running iterations and the next level out continues. Each block dimension is
//!   selected by its own level's running index `oj'` (address rotation keeps one register per
//!   modulo term: with `Mj | Tj`, `oj' mod Mj` is the flat execution index's residue), the last
//!   one by `l'`; two executions share a block only `d + 1` or more executions apart;
//! - in iteration `(h, l)` one copy per level loads the tile of `(h + d, l)` (`d <= Tk`): the
//!   in-level copy at `ok + d` while `ok < hi(Ok) - d`, else the carry of the level the index
//!   wraps into (`ok + d - Tk`, that level plus one, the levels between at their first running
//!   iteration; guards as the flat realisation's with `ok >= hi(Ok) - d` in place of the
//!   comparison on `l`); their selectors are the substituted ones;
//! - the loads of the first `d` executions run in loops of their own placed just before `L`,
//!   guarded by the first outer iteration (inside every `Oj`, so those stay clampable; `L`
//!   itself, of trip at most [`MAX_SLOTS`], is too short to be clamped anyway).
//!
//! The carries then turn off once per execution of `Ok` only. Correctness: the blocks of
//! execution `g` are written during execution `g - d` (or before `L` for `g < d`) and last read
//! by execution `g - C` for some `C >= d + 1`, which precedes it; exactly one copy is on for each
//! target; the rest of the argument is the one above. When the loop does not qualify (trip
//! above [`MAX_SLOTS`], `Tk` below 2, no SBUF room), an issue-bound loop keeps the single-loop
//! realisation, a shallow one its flat ring. (transpose's `c` loop is issue-bound: 2048 `sp`
//! cycles against 440 compute cycles per iteration; nest_whole's `c` runs 2 executions ahead in
//! blocks of 2 x 2 x 3, nest_odd's `j` one execution ahead in 2 x 3.)
//!
//! A loop not nested this way, or whose ring cannot get a divisor of `T` slots, also keeps the
//! single-loop realisation; the choice and its reason are logged (`--log backend`).
//!
//! Invariants: [`prefetch_across_nest`] either returns `false` with the function unchanged, or
//! realises every ring of the hoisted loads; it adds no iteration to any loop; every statement it
//! adds is a copy of a hoisted load (one instruction, same spans); SBUF holds the grown rings by
//! [`crate::cost::budget`]'s count.

use super::plan::hoistable_loads;
use super::remark::EmergentRemark;
use crate::cost::budget;
use crate::cost::loop_cost::{body_compute, issue_cycles, wanted_depth};
use crate::transform::decline::{Decline, NestEnd};
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::edit::{self, Subst};
use penguin::ir::{BlockDim, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::collections::HashMap;

/// The largest ring the nested realisation builds (a divisor of the inner trip count).
pub const MAX_SLOTS: u32 = 8;

/// A hoisted load of the nest's innermost loop: its statement, the ring it fills, the ring's
/// depth ([`hoistable_loads`]).
type Hoisted = (Stmt, Tensor, u32);

/// A loop of a nest, with the iterations `lo .. hi` in which the next loop in runs: all of them,
/// or those its stage guards allow when the next loop in sits in a stage of a loop the annotated
/// pipeliner extended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NestLevel {
    pub axis: Axis,
    pub lo: i64,
    pub hi: i64,
}

impl NestLevel {
    /// How many iterations of the level run the next loop in.
    pub fn trip(&self) -> i64 {
        self.hi - self.lo
    }
}

/// The iterations `lo .. hi` of loop `p` on which every guard of `preds` holds, when each guard
/// compares `p`'s induction variable (plus a constant) with a bound; `None` when a guard names
/// anything else.
fn guard_interval(func: &Function, p: Axis, preds: &[Predicate]) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (func.axes[p].lb, func.axes[p].ub);
    for g in preds {
        if g.expr.terms() != [(p, 1)] {
            return None;
        }
        let b = g.bound - g.expr.constant_term();
        match g.cmp {
            CmpOp::Ge => lo = lo.max(b),
            CmpOp::Lt => hi = hi.min(b),
            CmpOp::Eq => (lo, hi) = (lo.max(b), hi.min(b + 1)),
        }
    }
    Some((lo, hi))
}

/// The enclosing loops of `l` that form a flat nest with it, outermost first (see the module
/// doc), or why there are none.
pub fn compute_nest(func: &Function, l: Axis) -> Result<Vec<NestLevel>, Decline> {
    // Parent loop and statement of every loop.
    let mut parent: HashMap<Axis, (Option<Axis>, Stmt)> = HashMap::new();
    func.walk_stmts(|s, loops| {
        if let StmtKind::Loop(a) = func.stmts[s].kind {
            parent.insert(a, (loops.last().copied(), s));
        }
    });
    let mut chain = Vec::new();
    let mut cur = l;
    let why = loop {
        let Some(&(p, s)) = parent.get(&cur) else {
            break NestEnd::NotInTree;
        };
        let Some(p) = p else {
            if func.stmts[s].preds.is_empty() {
                break NestEnd::ReachesTop;
            }
            break NestEnd::Guarded {
                iv: func.display_iv(cur).to_string(),
            };
        };
        let Some((lo, hi)) = guard_interval(func, p, &func.stmts[s].preds) else {
            break NestEnd::GuardedByMore {
                iv: func.display_iv(cur).to_string(),
                parent: func.display_iv(p).to_string(),
            };
        };
        let pd = &func.axes[p];
        if pd.attrs.pipelined.is_none() && pd.attrs.num_stages.is_some() {
            break NestEnd::Annotated {
                iv: func.display_iv(p).to_string(),
            };
        }
        if hi - lo < 1 {
            break NestEnd::NeverRuns {
                iv: func.display_iv(p).to_string(),
            };
        }
        chain.push(NestLevel { axis: p, lo, hi });
        cur = p;
    };
    if chain.is_empty() {
        return Err(Decline::NotNested(why));
    }
    chain.reverse();
    Ok(chain)
}

/// The ring slots for a ring of `depth` slots along a loop of trip `t`: the smallest divisor of
/// `t` in `depth..=MAX_SLOTS` when `room` allows it, else the largest divisor in `2..depth`.
pub(super) fn divisor_slots(t: i64, depth: u32, room: impl Fn(u32) -> bool) -> Option<u32> {
    let divides = |n: u32| t % i64::from(n) == 0;
    (depth..=MAX_SLOTS)
        .find(|&n| divides(n) && room(n))
        .or_else(|| (2..depth.min(MAX_SLOTS + 1)).rev().find(|&n| divides(n)))
}

/// Realises the rings of loop `l` (tensor, slots chosen by the heuristic) by prefetching across
/// the enclosing loops; returns `false`, having changed nothing and logged why, when `l` does not
/// qualify (the caller then uses the single-loop realisation).
pub fn prefetch_across_nest(
    func: &mut Function,
    l: Axis,
    rings: &[(Tensor, u32)],
    log: &mut Vec<EmergentRemark>,
) -> bool {
    let name = func.display_iv(l).to_string();
    let decline = |log: &mut Vec<EmergentRemark>, why: Decline| {
        log.push(EmergentRemark::NestDeclined {
            iv: name.clone(),
            why,
        });
        false
    };
    let outer = match compute_nest(func, l) {
        Ok(o) => o,
        Err(why) => return decline(log, why),
    };
    // The hoistable loads, as every realisation picks them.
    let body = func.axes[l].body.clone();
    let hoisted = hoistable_loads(func, l, rings, false);
    if hoisted.is_empty() || hoisted.len() == body.len() {
        return decline(log, Decline::NoLoadAhead);
    }
    // Issue-bound transfers: when `sp` spends longer issuing the loop's transfers than the
    // compute engines spend per iteration, `sp` is the bottleneck and every wait of `sp` costs
    // time: prefetch a whole execution ahead (its copies turn off once per execution of the
    // innermost enclosing loop, not once per execution of `l`), or keep the single loop.
    let issue = issue_cycles(func, &body);
    let compute = body_compute(func, &body);
    if issue >= compute {
        let why = Decline::IssueBound { issue, compute };
        return match prefetch_next_execution(func, l, &outer, &hoisted, &body, &why) {
            Ok(remark) => {
                log.push(remark);
                true
            }
            Err(not) => decline(log, Decline::Both(Box::new(why), Box::new(not))),
        };
    }
    let t = func.axes[l].ub - func.axes[l].lb;
    let slots = match divisor_rings(func, t, &hoisted) {
        Ok(slots) => slots,
        Err(why) => return decline(log, why),
    };
    // A ring whose slots divide the trip may be shallower than the heuristic wants (a trip of 3
    // takes 3 slots, 2 iterations ahead, where 3 are wanted): whole executions ahead then issue
    // each load at least `T` iterations ahead; when they do not qualify, the flat ring stays.
    let (ahead, wanted) = flat_ahead(&hoisted, &slots);
    if ahead < wanted {
        let why = Decline::ShallowDivisorRing {
            trip: t,
            ahead,
            wanted,
        };
        if let Ok(remark) = prefetch_next_execution(func, l, &outer, &hoisted, &body, &why) {
            log.push(remark);
            return true;
        }
    }
    let remark = prefetch_flat(func, l, &outer, &hoisted, &body, &slots);
    log.push(remark);
    true
}

/// The slots of every ring the hoisted loads fill, each a divisor of the trip count `t`, SBUF
/// permitting ([`divisor_slots`]), or why a ring has none.
fn divisor_rings(
    func: &Function,
    t: i64,
    hoisted: &[Hoisted],
) -> Result<Vec<(Tensor, u32)>, Decline> {
    let mut sbuf_used = budget::sbuf_in_use(func);
    let mut slots: Vec<(Tensor, u32)> = Vec::new();
    for &(_, rt, depth) in hoisted {
        if slots.iter().any(|&(x, _)| x == rt) {
            continue;
        }
        let copy = budget::slot_bytes(&func.tensors[rt], u64::from(depth));
        let have = sbuf_used;
        let room = |n: u32| n <= depth || budget::sbuf_fits(have + copy * u64::from(n - depth));
        let Some(n) = divisor_slots(t, depth, room) else {
            return Err(Decline::NoDivisorRing {
                ring: func.display_name(rt).to_string(),
                max: MAX_SLOTS,
                trip: t,
            });
        };
        if n > depth {
            sbuf_used += copy * u64::from(n - depth);
        }
        slots.push((rt, n));
    }
    Ok(slots)
}

/// The index `Σ oj' · stride_j` of the iteration of the loops `outer` (outermost first; primes:
/// offsets from the first iteration that runs the nest), the innermost with stride `unit`, each next one out with the
/// stride of the one inside it times that one's trip count.
fn outer_index(outer: &[NestLevel], unit: i64) -> AffineExpr {
    let mut index = AffineExpr::constant(0);
    let mut stride = unit;
    for o in outer.iter().rev() {
        index = index.add(&AffineExpr::from_terms([(o.axis, stride)], -stride * o.lo));
        stride *= o.trip();
    }
    index
}

/// How many flat iterations ahead the flat realisation issues the hoisted loads with rings of
/// `slots`, and how many the heuristic wants: its prefetch depth (ring depth minus one), or less
/// when a ring got fewer slots (extra slots are slack: a load's slot was last read at least 2
/// iterations before); minimum over the hoisted loads.
fn flat_ahead(hoisted: &[Hoisted], slots: &[(Tensor, u32)]) -> (i64, i64) {
    let ahead = hoisted
        .iter()
        .map(|&(_, rt, depth)| {
            let n = slots.iter().find(|&&(x, _)| x == rt).map_or(2, |&(_, n)| n);
            i64::from(depth.min(n)) - 1
        })
        .min()
        .unwrap_or(1);
    let wanted = hoisted
        .iter()
        .map(|&(_, _, depth)| i64::from(depth) - 1)
        .min()
        .unwrap_or(1);
    (ahead, wanted)
}

/// The flat realisation (see the module doc): rings of `slots` selected by the flat iteration,
/// each hoisted load turned into its prologue, carry and in-loop copies, `P` flat iterations
/// ahead. Returns the log line.
fn prefetch_flat(
    func: &mut Function,
    l: Axis,
    outer: &[NestLevel],
    hoisted: &[Hoisted],
    body: &[Stmt],
    slots: &[(Tensor, u32)],
) -> EmergentRemark {
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let t = ub - lb;
    let (p, _) = flat_ahead(hoisted, slots);
    for &(rt, n) in slots {
        func.tensors[rt].block = vec![BlockDim { axis: l, count: n }];
    }
    // The flat index of `L`'s iteration over the nest.
    let flat = AffineExpr::from_terms([(l, 1)], -lb).add(&outer_index(outer, t));
    let ahead = flat.add(&AffineExpr::constant(p));
    let ringed: Vec<Tensor> = slots.iter().map(|&(x, _)| x).collect();
    set_slots(func, body, &ringed, &[flat]);
    let mut prologue = Vec::new();
    let mut carries = Vec::new();
    let mut in_loop = Vec::new();
    for &(s, _, _) in hoisted {
        prologue.extend(prologue_copies(func, l, outer, s, p));
        // One carry per enclosing level, for the first iterations of the next execution of `L`.
        let inner = [(l, AffineExpr::from_terms([(l, 1)], p - t))];
        let on = [guard(AffineExpr::iv(l), CmpOp::Ge, ub - p)];
        let slot = std::slice::from_ref(&ahead);
        carries.extend(carry_copies(func, outer, s, &inner, &on, slot));
        // The load itself becomes the in-loop copy.
        let by = AffineExpr::from_terms([(l, 1)], p);
        retarget(func, s, &[(l, by)], std::slice::from_ref(&ahead));
        func.stmts[s]
            .preds
            .push(guard(AffineExpr::iv(l), CmpOp::Lt, ub - p));
        in_loop.push(s);
    }
    let rest: Vec<Stmt> = body
        .iter()
        .copied()
        .filter(|s| !in_loop.contains(s))
        .collect();
    // The carries before the in-loop copies: when the in-loop copy turns off (at
    // `l + P = ub(L)`), `sp` first waits for its last transfer (see `sync`); the carry for the
    // next execution of `L` is then already issued.
    func.axes[l].body = prologue
        .iter()
        .chain(&carries)
        .chain(&in_loop)
        .chain(&rest)
        .copied()
        .collect();
    EmergentRemark::PrefetchedFlat {
        iv: func.display_iv(l).to_string(),
        trip: t,
        nest: nest_names(func, outer),
        rings: ringed
            .iter()
            .zip(slots)
            .map(|(&x, &(_, n))| (func.display_name(x).to_string(), n))
            .collect(),
        ahead: p,
        carries: carries.len() / hoisted.len(),
    }
}

/// The prologue of the flat realisation for hoisted load `s`: the loads of flat iterations
/// `0 .. P - 1` (every loop at its lower bound but `l` at `lb + q`), with constant indices, guarded
/// by the first iteration of the nest.
fn prologue_copies(
    func: &mut Function,
    l: Axis,
    outer: &[NestLevel],
    s: Stmt,
    p: i64,
) -> Vec<Stmt> {
    let lb = func.axes[l].lb;
    let mut copies = Vec::new();
    for q in 0..p {
        let mut subst: Vec<(Axis, AffineExpr)> = outer
            .iter()
            .map(|o| (o.axis, AffineExpr::constant(o.lo)))
            .collect();
        subst.push((l, AffineExpr::constant(lb + q)));
        let mut preds: Vec<Predicate> = outer
            .iter()
            .map(|o| guard(AffineExpr::iv(o.axis), CmpOp::Eq, o.lo))
            .collect();
        preds.push(guard(AffineExpr::iv(l), CmpOp::Eq, lb));
        copies.push(copy_load(
            func,
            s,
            &subst,
            &[AffineExpr::constant(q)],
            preds,
        ));
    }
    copies
}

/// One carry copy of hoisted load `s` per enclosing level `Oj` of trip at least 2, innermost
/// level first: it loads for the next iteration of `Oj` (every level inside it at its lower
/// bound), guarded by `Oj` not being in its last iteration and every level inside it being in its
/// last one. `inner` and `on` are the substitution and guards of the innermost loop itself (they
/// come first); `slots` the ring selectors the copies write (none: the statement's own,
/// substituted).
pub(super) fn carry_copies(
    func: &mut Function,
    outer: &[NestLevel],
    s: Stmt,
    inner: &[(Axis, AffineExpr)],
    on: &[Predicate],
    slots: &[AffineExpr],
) -> Vec<Stmt> {
    let mut copies = Vec::new();
    for j in (0..outer.len()).rev() {
        let oj = outer[j];
        if oj.trip() < 2 {
            continue;
        }
        let mut subst = inner.to_vec();
        subst.push((oj.axis, AffineExpr::from_terms([(oj.axis, 1)], 1)));
        let mut preds = on.to_vec();
        preds.push(guard(AffineExpr::iv(oj.axis), CmpOp::Lt, oj.hi - 1));
        for oi in &outer[j + 1..] {
            subst.push((oi.axis, AffineExpr::constant(oi.lo)));
            preds.push(guard(AffineExpr::iv(oi.axis), CmpOp::Eq, oi.hi - 1));
        }
        copies.push(copy_load(func, s, &subst, slots, preds));
    }
    copies
}

/// The guard `expr cmp bound`.
pub(super) fn guard(expr: AffineExpr, cmp: CmpOp, bound: i64) -> Predicate {
    Predicate { expr, cmp, bound }
}

/// The loops of a nest as the log names them, `` `o1` ⊃ `o2` ``.
pub(super) fn nest_names(func: &Function, outer: &[NestLevel]) -> String {
    let nest: Vec<String> = outer
        .iter()
        .map(|o| {
            let a = &func.axes[o.axis];
            if (o.lo, o.hi) == (a.lb, a.ub) {
                format!("`{}`", func.display_iv(o.axis))
            } else {
                format!(
                    "`{}` (iterations {}..{})",
                    func.display_iv(o.axis),
                    o.lo,
                    o.hi
                )
            }
        })
        .collect();
    nest.join(" ⊃ ")
}

/// A block dimension of a ring filled `d` executions ahead: loop `axis`, whose running
/// iterations start at `lo`, selects one of `count` blocks by `(o - lo) mod count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutionBlock {
    pub axis: Axis,
    pub lo: i64,
    pub count: u32,
}

/// The block dimensions (outermost first) of a ring that holds `d + 1` consecutive executions
/// of the nest's innermost loop, each in blocks of its own, with one register per modulo term:
/// from the innermost enclosing level outwards, a level takes the fewest blocks that reach
/// `d + 1` executions, a divisor of its trip count unless no running level encloses it (so that
/// `(o - lo) mod count` is the flat execution index's residue; the outermost takes a power of
/// two, so that the lcm of the kernel's ring periods stays small for the trip clamping of
/// [`crate::codegen::clamp`]), else all its running iterations (and the next level out
/// continues). Two executions share a block only `d + 1` or more
/// executions apart. Levels of one running iteration are skipped. `None` when no level runs
/// twice.
pub fn compute_execution_blocks(outer: &[NestLevel], d: i64) -> Option<Vec<ExecutionBlock>> {
    let need = d + 1;
    let mut span = 1;
    let mut blocks = Vec::new();
    for (i, o) in outer.iter().enumerate().rev() {
        let tj = o.trip();
        if tj < 2 {
            continue;
        }
        let outermost = outer[..i].iter().all(|x| x.trip() < 2);
        let fits = if outermost {
            // A power of two: the period of the kernel's rings (the lcm of their slot counts,
            // which the trip clamping of the synchronisation analysis keeps small) grows less.
            let m = (1..).map(|e| 1i64 << e).find(|&m| span * m >= need);
            m.filter(|&m| m < tj)
        } else {
            (2..tj).find(|&m| span * m >= need && tj % m == 0)
        };
        let count = fits.unwrap_or(tj);
        blocks.push(ExecutionBlock {
            axis: o.axis,
            lo: o.lo,
            count: u32::try_from(count).ok()?,
        });
        span *= count;
        if span >= need {
            break;
        }
    }
    blocks.reverse();
    (!blocks.is_empty()).then_some(blocks)
}

/// How many executions of the nest's innermost loop ahead its hoisted loads want to be issued:
/// the longest of their transfers ([`wanted_depth`]'s DMA time: latency, queue time, issue) over
/// the compute of one iteration of the innermost enclosing loop `ok` (one whole execution of `l`
/// and whatever runs beside it), rounded up, at least one.
fn executions_wanted(func: &Function, l: Axis, ok: Axis, hoisted: &[Hoisted]) -> i64 {
    let dma = hoisted
        .iter()
        .map(|&(_, rt, _)| wanted_depth(func, rt, l).dma)
        .max()
        .unwrap_or(0);
    // One execution of `l` whole (its statement may be guarded by the level's stages, which
    // `body_compute` would weight) plus what runs beside it in an iteration of `ok`.
    let beside: Vec<Stmt> = func.axes[ok]
        .body
        .iter()
        .copied()
        .filter(|&s| func.stmts[s].kind != StmtKind::Loop(l))
        .collect();
    let t = u64::try_from(func.axes[l].ub - func.axes[l].lb).unwrap_or(1);
    let per_execution =
        (t * body_compute(func, &func.axes[l].body) + body_compute(func, &beside)).max(1);
    i64::try_from(dma.div_ceil(per_execution))
        .unwrap_or(i64::MAX)
        .max(1)
}

/// Prefetch `d` whole executions of `l` ahead (`d` from [`executions_wanted`]: enough
/// executions to cover a transfer, at most the trip of the innermost enclosing level, lowered
/// until SBUF holds the rings): each ring gets the
/// blocks of [`compute_execution_blocks`] times `T` slots (block dimensions: the chosen levels,
/// then `l`, each selected by its own running index), and in iteration `(h, l)` one copy per
/// level loads the tile of `(h + d, l)`: the in-level copy when the innermost enclosing level
/// does not wrap, else the carry of the level it wraps into (guards as the flat realisation's,
/// on that level's index). The first `d` executions' loads run in loops of their own placed just
/// before `l`, at the first outer iteration. Returns the remark (with `why`, the reason to try
/// it), or why not (nothing changed).
fn prefetch_next_execution(
    func: &mut Function,
    l: Axis,
    outer: &[NestLevel],
    hoisted: &[Hoisted],
    body: &[Stmt],
    why: &Decline,
) -> Result<EmergentRemark, Decline> {
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let t = ub - lb;
    if t > i64::from(MAX_SLOTS) {
        return Err(Decline::TripAboveSlots {
            trip: t,
            max: MAX_SLOTS,
        });
    }
    let ok = *outer
        .last()
        .expect("a nest has an enclosing loop (checked by compute_nest)");
    let tk = ok.trip();
    if tk < 2 {
        return Err(Decline::LevelRunsOnce {
            iv: func.display_iv(ok.axis).to_string(),
            trip: tk,
        });
    }
    let wanted = executions_wanted(func, l, ok.axis, hoisted).min(tk);
    let Some((d, blocks, ringed)) = (1..=wanted).rev().find_map(|d| {
        let blocks = compute_execution_blocks(outer, d)?;
        let slots: u32 = blocks.iter().map(|b| b.count).product::<u32>() * (t as u32);
        let ringed = rings_fit(func, slots, hoisted)?;
        Some((d, blocks, ringed))
    }) else {
        return Err(Decline::NoRoomForTwoExecutions);
    };
    let count = u32::try_from(t).expect("the trip count is at most MAX_SLOTS (checked above)");
    for &rt in &ringed {
        func.tensors[rt].block = blocks
            .iter()
            .map(|b| BlockDim {
                axis: b.axis,
                count: b.count,
            })
            .chain([BlockDim { axis: l, count }])
            .collect();
    }
    let sel: Vec<AffineExpr> = blocks
        .iter()
        .map(|b| AffineExpr::from_terms([(b.axis, 1)], -b.lo))
        .chain([AffineExpr::from_terms([(l, 1)], -lb)])
        .collect();
    set_slots(func, body, &ringed, &sel);
    let hoisted_stmts: Vec<Stmt> = hoisted.iter().map(|&(s, _, _)| s).collect();
    // The copies `d` executions ahead; their selectors are the substituted ones (no override).
    let mut carries = Vec::new();
    for &s in &hoisted_stmts {
        if d < tk {
            let by = [(ok.axis, AffineExpr::from_terms([(ok.axis, 1)], d))];
            let on = vec![guard(AffineExpr::iv(ok.axis), CmpOp::Lt, ok.hi - d)];
            carries.push(copy_load(func, s, &by, &[], on));
        }
        let inner = [(ok.axis, AffineExpr::from_terms([(ok.axis, 1)], d - tk))];
        let on: Vec<Predicate> = (d < tk)
            .then(|| guard(AffineExpr::iv(ok.axis), CmpOp::Ge, ok.hi - d))
            .into_iter()
            .collect();
        let levels = &outer[..outer.len() - 1];
        carries.extend(carry_copies(func, levels, s, &inner, &on, &[]));
    }
    let mut firsts = Vec::new();
    for q in (0..d).rev() {
        firsts.push(first_execution_loop(func, l, outer, &hoisted_stmts, q));
    }
    firsts.reverse();
    let at = func.axes[ok.axis]
        .body
        .iter()
        .position(|&s| matches!(func.stmts[s].kind, StmtKind::Loop(a) if a == l))
        .expect("`l` is a direct child of its innermost enclosing loop (checked by compute_nest)");
    edit::Cursor::at(func, (Some(ok.axis), at)).insert_before(firsts);
    let rest: Vec<Stmt> = body
        .iter()
        .copied()
        .filter(|s| !hoisted_stmts.contains(s))
        .collect();
    func.axes[l].body = carries.iter().chain(&rest).copied().collect();
    Ok(EmergentRemark::PrefetchedExecution {
        iv: func.display_iv(l).to_string(),
        trip: t,
        nest: nest_names(func, outer),
        rings: ringed
            .iter()
            .map(|&x| func.display_name(x).to_string())
            .collect(),
        ahead: d,
        blocks: blocks.iter().map(|b| b.count).collect(),
        carries: carries.len() / hoisted_stmts.len(),
        why: why.clone(),
    })
}

/// The rings the hoisted loads fill, when SBUF holds each with `slots` slots.
fn rings_fit(func: &Function, slots: u32, hoisted: &[Hoisted]) -> Option<Vec<Tensor>> {
    let mut sbuf_used = budget::sbuf_in_use(func);
    let mut ringed: Vec<Tensor> = Vec::new();
    for &(_, rt, depth) in hoisted {
        if ringed.contains(&rt) {
            continue;
        }
        let copy = budget::slot_bytes(&func.tensors[rt], u64::from(depth));
        sbuf_used += copy * u64::from(slots).saturating_sub(u64::from(depth));
        if !budget::sbuf_fits(sbuf_used) {
            return None;
        }
        ringed.push(rt);
    }
    Some(ringed)
}

/// The loop of execution `q`'s loads (`q` below the innermost enclosing level's trip),
/// `l.first`, placed by the caller just before `l`: copies of the hoisted statements (for `q`
/// = 0 the statements themselves move into it) with every outer index at its first running
/// iteration but the innermost's at `lo + q`, and `l` replaced by the loop's own index; its
/// statement is guarded by the first outer iteration. The selectors follow by substitution.
fn first_execution_loop(
    func: &mut Function,
    l: Axis,
    outer: &[NestLevel],
    hoisted: &[Stmt],
    q: i64,
) -> Stmt {
    let name = edit::fresh_iv_name(func, &edit::derived(&func.axes[l].iv_name, "first"));
    let first = edit::copy_loop_header(func, l, name);
    func.axes[first].attrs = Default::default();
    let k = outer.len() - 1;
    let subst: Vec<(Axis, AffineExpr)> = outer
        .iter()
        .enumerate()
        .map(|(i, o)| {
            (
                o.axis,
                AffineExpr::constant(o.lo + if i == k { q } else { 0 }),
            )
        })
        .chain([(l, AffineExpr::iv(first))])
        .collect();
    let stmts: Vec<Stmt> = if q == 0 {
        for &s in hoisted {
            Subst::new().axes(subst.iter().cloned()).apply(func, s);
        }
        hoisted.to_vec()
    } else {
        hoisted
            .iter()
            .map(|&s| copy_load(func, s, &subst, &[], Vec::new()))
            .collect()
    };
    func.axes[first].body = stmts;
    let first_stmt = func.add_loop_stmt(first);
    func.stmts[first_stmt].preds = outer
        .iter()
        .map(|o| guard(AffineExpr::iv(o.axis), CmpOp::Eq, o.lo))
        .collect();
    first_stmt
}

/// Sets the slot selectors (one per block dimension) of every access to a tensor of `ringed` in
/// `body` (and below) to `sel`.
fn set_slots(func: &mut Function, body: &[Stmt], ringed: &[Tensor], sel: &[AffineExpr]) {
    for &s in body {
        match func.stmts[s].kind.clone() {
            StmtKind::Insts(insts) => {
                for i in insts {
                    let d = &mut func.insts[i];
                    for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
                        if ringed.contains(&o.tensor) {
                            o.access.slots = sel.to_vec();
                        }
                    }
                }
            }
            StmtKind::Loop(a) => {
                let inner = func.axes[a].body.clone();
                set_slots(func, &inner, ringed, sel);
            }
        }
    }
}

/// Substitutes `subst` (in order, [`Subst`]) in statement `s` and sets the slot selectors of
/// every blocked operand to `slots` (one per block dimension).
fn retarget(func: &mut Function, s: Stmt, subst: &[(Axis, AffineExpr)], slots: &[AffineExpr]) {
    Subst::new().axes(subst.iter().cloned()).apply(func, s);
    set_blocked_slots(func, s, slots);
}

/// Sets the slot selectors of every blocked operand in statement `s` (and below) to `slots`.
fn set_blocked_slots(func: &mut Function, s: Stmt, slots: &[AffineExpr]) {
    for i in edit::subtree_insts(func, s) {
        let d = &mut func.insts[i];
        for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
            if !o.access.slots.is_empty() {
                o.access.slots = slots.to_vec();
            }
        }
    }
}

/// A copy of load statement `s` (one instruction, unplaced) retargeted by `subst` and `slots`
/// (none: its own selectors, substituted), under `preds`. It issues ahead of the iteration it loads for: it keeps the statement's spans,
/// but no annotation and no stage tag (a caller that places it in a stage says so).
pub(super) fn copy_load(
    func: &mut Function,
    s: Stmt,
    subst: &[(Axis, AffineExpr)],
    slots: &[AffineExpr],
    preds: Vec<Predicate>,
) -> Stmt {
    let sub = Subst::new().axes(subst.iter().cloned());
    let c = edit::copy_stmt(func, s, &sub, "load");
    func.annots[c] = Default::default();
    func.stage_tags[c] = None;
    func.stmts[c].preds = preds;
    if !slots.is_empty() {
        set_blocked_slots(func, c, slots);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `k` in stage 1 of the extended `n` (iterations 1..3 of 0..3), `n` in `m`; `j` guarded by
    /// `m` from inside `n`; `z` guarded by an equality.
    const NEST: &str = "kernel f(a) -> (c) {
  tensor a: hbm f32[512, 512] input
  tensor c: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 128] local
  loop m in 0..4 affine {
    loop n in 0..3 affine num_stages=2 pipelined(stages=2, trip=2) {
      loop k in 0..4 affine stage=1 if n >= 1 {
        stmt {
          t[0 +: 128, 0 +: 128] = load.dma a[128*k +: 128, 128*n +: 128]
        }
      }
      loop j in 0..2 affine stage=1 if m >= 1 {
        stmt {
          t[0 +: 128, 0 +: 128] = load.dma a[128*j +: 128, 0 +: 128]
        }
      }
      loop z in 0..2 affine stage=0 if n == 2 {
        stmt {
          t[0 +: 128, 0 +: 128] = load.dma a[128*z +: 128, 0 +: 128]
        }
      }
    }
  }
}
";

    fn axis(func: &Function, name: &str) -> Axis {
        func.axes
            .keys()
            .find(|&a| func.axes[a].iv_name == name)
            .expect("the test kernel names the loop")
    }

    #[test]
    fn a_nest_runs_through_an_extended_loop_on_its_running_iterations() {
        let func = penguin::parse::parse_function(NEST).expect("the test kernel parses");
        let (m, n) = (axis(&func, "m"), axis(&func, "n"));
        let level = |axis, lo, hi| NestLevel { axis, lo, hi };
        assert_eq!(
            compute_nest(&func, axis(&func, "k")),
            Ok(vec![level(m, 0, 4), level(n, 1, 3)])
        );
        assert_eq!(
            compute_nest(&func, axis(&func, "z")),
            Ok(vec![level(m, 0, 4), level(n, 2, 3)])
        );
        // A guard on a loop other than the parent ends the chain before it.
        let j = compute_nest(&func, axis(&func, "j"));
        let end = NestEnd::GuardedByMore {
            iv: "j".to_string(),
            parent: "n".to_string(),
        };
        assert_eq!(j, Err(Decline::NotNested(end)));
        assert_eq!(
            j.unwrap_err().to_string(),
            "not nested in another loop (loop `j` is guarded by more than loop `n`)"
        );
        assert_eq!(
            compute_nest(&func, m),
            Err(Decline::NotNested(NestEnd::ReachesTop))
        );
        // The flat index counts the running iterations from their first.
        let flat = outer_index(&[level(m, 0, 4), level(n, 1, 3)], 4);
        assert_eq!(flat.coeff(m), 8);
        assert_eq!(flat.coeff(n), 4);
        assert_eq!(flat.constant_term(), -4);
    }

    #[test]
    fn execution_blocks_hold_d_plus_one_executions_with_one_register_per_level() {
        let func = penguin::parse::parse_function(NEST).expect("the test kernel parses");
        let (m, n) = (axis(&func, "m"), axis(&func, "n"));
        let level = |axis, lo, hi| NestLevel { axis, lo, hi };
        let block = |axis, lo, count| ExecutionBlock { axis, lo, count };
        // Even innermost level: its parity for one execution ahead, all of it and then the next
        // level out for two (its trip 2 reaches only 2 executions).
        let even = [level(m, 0, 2), level(n, 1, 3)];
        assert_eq!(
            compute_execution_blocks(&even, 1),
            Some(vec![block(n, 1, 2)])
        );
        assert_eq!(
            compute_execution_blocks(&even, 2),
            Some(vec![block(m, 0, 2), block(n, 1, 2)])
        );
        // An odd level under another takes a divisor of its trip (3), never 2.
        let odd = [level(m, 0, 2), level(n, 0, 3)];
        assert_eq!(
            compute_execution_blocks(&odd, 1),
            Some(vec![block(n, 0, 3)])
        );
        assert_eq!(
            compute_execution_blocks(&odd, 2),
            Some(vec![block(n, 0, 3)])
        );
        // The outermost running level takes any count; a level of one running iteration counts
        // for nothing.
        let top = [level(m, 0, 5), level(n, 2, 3)];
        assert_eq!(
            compute_execution_blocks(&top, 1),
            Some(vec![block(m, 0, 2)])
        );
        assert_eq!(
            compute_execution_blocks(&top, 3),
            Some(vec![block(m, 0, 4)])
        );
        assert_eq!(compute_execution_blocks(&[level(n, 2, 3)], 1), None);
    }

    #[test]
    fn ring_slots_divide_the_trip_count() {
        let any = |_: u32| true;
        assert_eq!(divisor_slots(4, 3, any), Some(4));
        assert_eq!(divisor_slots(4, 3, |n| n <= 3), Some(2));
        assert_eq!(divisor_slots(3, 2, any), Some(3));
        assert_eq!(divisor_slots(6, 4, any), Some(6));
        assert_eq!(divisor_slots(12, 4, any), Some(4));
        assert_eq!(divisor_slots(7, 2, any), Some(7));
        assert_eq!(divisor_slots(7, 2, |n| n <= 4), None);
        assert_eq!(divisor_slots(11, 4, any), None);
    }
}
