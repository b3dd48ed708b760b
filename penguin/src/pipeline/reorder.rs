//! Step 6: reordering the body of the extended loop by `execution_order`.
//!
//! The plan's `order` lists the children in the order they run (program order when no
//! `execution_order` was given). Reordering moves statements only; their stages, predicates and
//! shifted indices are already in place.

use super::plan::PipelinePlan;
use crate::ir::Function;

/// Puts the children of the plan's loop in the plan's order.
pub fn reorder_body(func: &mut Function, plan: &PipelinePlan) {
    let body = &func.axes[plan.axis].body;
    let reordered: Vec<_> = plan.order.iter().map(|&k| body[k]).collect();
    func.axes[plan.axis].body = reordered;
}
