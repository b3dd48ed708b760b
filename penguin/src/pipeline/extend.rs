//! Step 5: the extended loop — one loop, no prologue or epilogue, stages guarded by predicates.
//!
//! For a plan of `N` stages on a loop `0..ub`, [`extend_loop`]:
//! - sets the bounds to `0..ub + N − 1` and records `AxisAttrs::pipelined`;
//! - guards each stage-`s` child with `iv >= s` (dropped for `s = 0`) and `iv < ub + s` (dropped
//!   for `s = N − 1`, where it always holds), so stage `s` runs exactly the extended iterations
//!   `s .. ub + s`, that is the original iterations `0 .. ub` — also when `ub < N`;
//! - rewrites every affine expression of the child's subtree (access starts, slot selectors,
//!   predicates of nested statements) with `iv → iv − s`: stage `s` works on iteration `iv − s`;
//! - gives every access in the subtree to a tensor widened along the loop (its last block
//!   dimension is this axis) the slot `iv − s`, taken modulo the count;
//! - tags the child with its stage (`Function::stage_tags`).
//!
//! The substitution is [`crate::edit`]'s. It runs on a function whose widened tensors already have their block dimension
//! ([`super::widen::widen_allocations`]) and whose accesses do not yet have the matching slot.

use super::plan::PipelinePlan;
use crate::affine::{AffineExpr, CmpOp, Predicate};
use crate::edit::{subtree_insts, Subst};
use crate::entities::{Axis, Stmt};
use crate::ir::{Function, Pipelined};

/// Rewrites the loop of `plan` into its extended form.
pub fn extend_loop(func: &mut Function, plan: &PipelinePlan) {
    let axis = plan.axis;
    let n = i64::from(plan.num_stages);
    let ub = func.axes[axis].ub;
    let orig_trip = func.axes[axis].trip_count();
    func.axes[axis].ub = ub + n - 1;
    func.axes[axis].attrs.pipelined = Some(Pipelined {
        num_stages: plan.num_stages,
        orig_trip,
        peeled: false,
    });
    let children = func.axes[axis].body.clone();
    for (&child, &s) in children.iter().zip(&plan.stages) {
        let s64 = i64::from(s);
        let shift = AffineExpr::from_terms([(axis, 1)], -s64);
        rewrite_subtree(func, child, axis, &shift, plan);
        let preds = &mut func.stmts[child].preds;
        if s > 0 {
            preds.push(Predicate {
                expr: AffineExpr::iv(axis),
                cmp: CmpOp::Ge,
                bound: s64,
            });
        }
        if s64 < n - 1 {
            preds.push(Predicate {
                expr: AffineExpr::iv(axis),
                cmp: CmpOp::Lt,
                bound: ub + s64,
            });
        }
        func.stage_tags[child] = Some(s);
    }
}

/// Rewrites the subtree of `stmt` for its stage: `iv -> shift` everywhere ([`Subst`]), then the
/// slot `shift` on every access to a tensor the plan widened along the loop.
fn rewrite_subtree(
    func: &mut Function,
    stmt: Stmt,
    axis: Axis,
    shift: &AffineExpr,
    plan: &PipelinePlan,
) {
    Subst::new().axis(axis, shift.clone()).apply(func, stmt);
    for i in subtree_insts(func, stmt) {
        let data = &mut func.insts[i];
        for op in std::iter::once(&mut data.dst).chain(data.srcs.iter_mut()) {
            if plan.buffers.iter().any(|&(t, _)| t == op.tensor) {
                op.access.slots.push(shift.clone());
            }
        }
    }
}
