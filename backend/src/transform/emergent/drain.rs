//! Compute stages for a loop realised across its nest, with no extra iteration: the last
//! iteration's later stage peeled after the loop, beside the enclosing loop's next work.
//!
//! [`super::nest`] issues the loads of an inner loop `L` across the executions of its nest and
//! leaves the compute unshifted, so that `L` keeps its trip count (no fill, no drain per
//! execution). Inside `L` each engine then runs one iteration's chain in order: a transpose into a
//! PSUM ring, a copy out of it on another engine, the matmul that reads the copy. The Tensor
//! engine waits for the copy of its own iteration although the ring has a second bank in which
//! it could transpose the next one. [`stage_with_peeled_drain`] splits `L`'s compute over two
//! stages by its engine hand-offs (the rule of [`super::stages`], one hand-off split, the load
//! copies at stage 0 with nothing after them), so that a stage-1 child of iteration `l` runs in
//! iteration `l + 1`, after the stage-0 children of `l + 1` in program order; and instead of an
//! extra iteration per execution, the stage-1 children of the last iteration are copied once
//! after `L` in its parent's body (the **peeled drain**, at constant `l = ub - 1`), where they
//! run beside what follows `L` in the enclosing loop.
//!
//! What qualifies: `L` was realised across its nest; its trip is at least 2; with one hand-off
//! split, some child is in stage 1 and every load copy in stage 0, and both stages hold compute
//! (work of an engine other than `sp`: a store alone in stage 1 only waits a trip later in `sp`'s
//! stream), and stage 1 holds no transfer (the order of `sp`'s stream is the list scheduler's);
//! every tile that crosses the
//! two stages is renamed per iteration and either has no slots yet (it becomes a ring of 2 along
//! `L`, which SBUF or PSUM must hold) or is already a ring of at least 2 along `L` with slot
//! `iv(L)` (a PSUM ring of the plan, [`super::plan`]); and the ISL legality check of the
//! annotated pipeliner accepts the plan on the function before emergent pipelining (restricted
//! to the children `L` had then).
//!
//! Why it is correct. The plan is a two-stage pipeline of `L` that the legality check accepts:
//! the extended loop of `T + 1` iterations, whose last iteration runs the stage-1 children of
//! `T - 1` alone, keeps every value. Here that last iteration is written out after the loop
//! (the same statements at the constant `l = ub`, i.e. iteration `ub - 1`, under the guards of
//! `L`'s own statement), which is the same sequence of instructions in the same order. The load
//! copies stay in stage 0, unshifted, with their guards: the nest's flat order is unchanged.
//!
//! Invariants: on `false` the function is unchanged; on `true` `L`'s trip count is unchanged,
//! every stage-1 child works on iteration `iv - 1` under `iv >= lb + 1`, and its peeled copy
//! stands directly after `L` in the parent's body.

use super::remark::{EmergentRemark, Refused};
use super::stages::{
    check_legality, compute_nest_facts, compute_rings, compute_stage_count, compute_stages,
    describe_child, project_plan,
};
use crate::cost::budget::check_rings;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::edit::{self, Subst};
use penguin::ir::{BlockDim, Op, StmtKind};
use penguin::pipeline::PipelinePlan;
use penguin::{Axis, Function, Stmt, Tensor};

/// Splits the compute of loop `l`, realised across its nest, over two stages with the last
/// iteration's stage 1 peeled after the loop (module doc); returns `false` with the function
/// unchanged when `l` does not qualify. `rings`: `l`'s rings of the plan.
pub fn stage_with_peeled_drain(
    func: &mut Function,
    original: &Function,
    l: Axis,
    rings: &[(Tensor, u32)],
    log: &mut Vec<EmergentRemark>,
) -> bool {
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    if ub - lb < 2 {
        return false;
    }
    let Some((parent_body, at)) = parent_slot(func, l) else {
        return false;
    };
    // The rings the nest realisation left along `l` with slot `iv(l)` (not its load rings).
    let kept: Vec<(Tensor, u32)> = rings
        .iter()
        .copied()
        .filter(|&(t, _)| ring_along(func, t, l).is_some())
        .collect();
    let (facts, hoisted) = compute_nest_facts(func, l, &kept);
    let stages = compute_stages(&facts, 1);
    if !stages.contains(&1) || stages.iter().zip(&hoisted).any(|(&s, &h)| h && s != 0) {
        return false;
    }
    // Only a split of the compute frees an engine's order; a store alone in stage 1 would just
    // wait in `sp`'s stream a trip later (measured: sched_nested's nested_mode_b 28,819 cycles
    // against 36,500 with its store peeled so, flatten's flat_bias 12,522 against 13,276).
    if compute_stage_count(func, l, &facts, &stages) < 2 {
        return false;
    }
    // A transfer stays in stage 0: the split frees the compute engines' order, while the order
    // of `sp`'s stream is the list scheduler's (measured with stores in stage 1: sdk mm-nisa-spmd
    // 26,951 → 29,132 cycles, nki_matmul_hoist_load 1,445,456 → 1,534,412, against
    // nki_matmul_block_free_dimension 1,017,732 → 973,700).
    let body = func.axes[l].body.clone();
    if body
        .iter()
        .zip(&stages)
        .any(|(&s, &st)| st == 1 && holds_transfer(func, s))
    {
        return false;
    }
    // Tiles crossing the stages: new rings of two slots, or rings along `l` already deep enough.
    let mut new_rings = Vec::new();
    for (t, count) in compute_rings(&facts, &stages) {
        match ring_along(func, t, l) {
            Some(n) if n >= count => {}
            Some(_) => return false,
            None if func.tensors[t].block.is_empty() => new_rings.push((t, count)),
            None => return false,
        }
    }
    if check_rings(func, &new_rings).is_err() {
        return false;
    }
    let n = stages.len();
    let pplan = PipelinePlan {
        axis: l,
        num_stages: 2,
        stages: stages.clone(),
        order: (0..n).collect(),
        buffers: kept.iter().chain(&new_rings).copied().collect(),
    };
    let iv = func.display_iv(l).to_string();
    let checked = project_plan(func, original, &pplan);
    if check_legality(original, &checked, &iv, Refused::OneStage, log).is_none() {
        return false;
    }
    let children = body
        .iter()
        .zip(&stages)
        .map(|(&s, &st)| (describe_child(func, s, &facts), st))
        .collect();
    apply(func, l, &body, &stages, &new_rings, (parent_body, at));
    log.push(EmergentRemark::DrainPeeled {
        iv,
        children,
        rings: new_rings
            .iter()
            .map(|&(t, c)| (func.display_name(t).to_string(), c))
            .collect(),
    });
    true
}

/// Where loop `l`'s statement stands: its parent loop (or `None` at the top) and its index in
/// that body; `None` when `l` is not in the tree.
fn parent_slot(func: &Function, l: Axis) -> Option<(Option<Axis>, usize)> {
    let mut found = None;
    func.walk_stmts(|s, loops| {
        if func.stmts[s].kind == StmtKind::Loop(l) {
            let parent = loops.last().copied();
            let body = match parent {
                Some(p) => &func.axes[p].body,
                None => &func.body,
            };
            found = body.iter().position(|&b| b == s).map(|i| (parent, i));
        }
    });
    found
}

/// The slot count of tile `t` when it is a ring along `l` alone, every access selecting slot
/// `iv(l)`.
fn ring_along(func: &Function, t: Tensor, l: Axis) -> Option<u32> {
    let td = &func.tensors[t];
    let [BlockDim { axis, count }] = td.block.as_slice() else {
        return None;
    };
    if *axis != l {
        return None;
    }
    let sel = [AffineExpr::iv(l)];
    let mut ok = true;
    func.walk_stmts(|s, _| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                for o in std::iter::once(&d.dst).chain(d.srcs.iter()) {
                    if o.tensor == t && o.access.slots.as_slice() != sel.as_slice() {
                        ok = false;
                    }
                }
            }
        }
    });
    ok.then_some(*count)
}

/// Realises the plan: new rings, stage-1 children shifted and guarded, their peeled copies after
/// the loop in the parent's body.
fn apply(
    func: &mut Function,
    l: Axis,
    body: &[Stmt],
    stages: &[u32],
    new_rings: &[(Tensor, u32)],
    (parent, at): (Option<Axis>, usize),
) {
    let sel = AffineExpr::iv(l);
    for &(t, count) in new_rings {
        func.tensors[t].block = vec![BlockDim { axis: l, count }];
        let mut insts = Vec::new();
        for &s in body {
            collect_insts(func, s, &mut insts);
        }
        for i in insts {
            let d = &mut func.insts[i];
            for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
                if o.tensor == t {
                    o.access.slots = vec![sel.clone()];
                }
            }
        }
    }
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let loop_stmt = match parent {
        Some(p) => func.axes[p].body[at],
        None => func.body[at],
    };
    let outer_preds = func.stmts[loop_stmt].preds.clone();
    let shifted = AffineExpr::from_terms([(l, 1)], -1);
    let last = Subst::new().axis(l, AffineExpr::constant(ub - 1));
    let mut peeled = Vec::new();
    for (&s, &st) in body.iter().zip(stages) {
        if matches!(func.stmts[s].kind, StmtKind::Insts(_)) {
            func.stage_tags[s] = Some(st);
        }
        if st == 0 {
            continue;
        }
        // The copy for iteration `ub - 1`, under the child's own guards and the loop's.
        let c = edit::copy_stmt(func, s, &last, "drain");
        func.stmts[c].preds.extend(outer_preds.iter().cloned());
        func.stage_tags[c] = None;
        peeled.push(c);
        func.map_exprs(s, &|e| e.substitute(l, &shifted));
        func.stmts[s].preds.push(Predicate {
            expr: AffineExpr::iv(l),
            cmp: CmpOp::Ge,
            bound: lb + 1,
        });
    }
    let list = match parent {
        Some(p) => &mut func.axes[p].body,
        None => &mut func.body,
    };
    list.splice(at + 1..at + 1, peeled);
}

/// Whether statement `s` (or anything nested in it) moves data by DMA.
fn holds_transfer(func: &Function, s: Stmt) -> bool {
    let mut insts = Vec::new();
    collect_insts(func, s, &mut insts);
    insts.iter().any(|&i| {
        matches!(
            func.insts[i].op,
            Op::Load | Op::Store | Op::Gather { .. } | Op::Scatter { .. }
        )
    })
}

/// The instructions of `s` and everything nested in it.
fn collect_insts(func: &Function, s: Stmt, out: &mut Vec<penguin::Inst>) {
    match &func.stmts[s].kind {
        StmtKind::Insts(insts) => out.extend(insts.iter().copied()),
        StmtKind::Loop(a) => {
            for &c in &func.axes[*a].body {
                collect_insts(func, c, out);
            }
        }
    }
}
