//! Step 0: Mode A on a loop whose whole body is one nested loop.
//!
//! Real kernels often put `num_stages` on an outer loop whose body is a single inner loop, the
//! loop that does the work: `for m in nl.affine_range(M, num_stages=3): for k in ...: <3
//! statements>`. Sliced in program order, the outer body has one statement, fewer than the
//! stages, which context.rs would refuse ([`super::codes::TOO_MANY_STAGES`]). What the author
//! means is the inner loop's pipeline, so the loop keywords move down to it: `num_stages`,
//! `disable_auto_buffer`, `disable_execution_order_check` and `multi_buffer`, as far down a chain
//! of single nested loops as it takes to reach a body with enough statements. The log says so.
//!
//! The move happens only when it is unambiguous: the outer body is exactly one statement, a loop
//! that has no annotation of its own (no loop keyword, no `stage_id` / `execution_order` on its
//! statements or on its range call). Anything else keeps the annotation where it was written, and
//! the context step's diagnostic explains what to write instead.

use super::log::{PipelineLog, PipelineRemark};
use crate::entities::Axis;
use crate::ir::{AxisAttrs, Function, StmtKind};

/// The loop a too-short Mode A annotation on `axis` would move to, if it may: the single nested
/// loop of its body, unannotated.
fn only_inner_loop(func: &Function, axis: Axis) -> Option<Axis> {
    let body = &func.axes[axis].body;
    let [s] = body.as_slice() else {
        return None;
    };
    let StmtKind::Loop(inner) = func.stmts[*s].kind else {
        return None;
    };
    let a = func.annots[*s];
    let data = &func.axes[inner];
    let annotated = a.stage_id.is_some()
        || a.execution_order.is_some()
        || data.attrs.num_stages.is_some()
        || data.attrs.multi_buffer.is_some()
        || data.attrs.disable_auto_buffer
        || data.attrs.disable_execution_order_check
        || super::targets::is_annotated(func, inner);
    (!annotated).then_some(inner)
}

/// The moves to make: every loop whose Mode A annotation asks for more stages than its body has
/// statements, and whose body is one unannotated loop, with the loop it moves down to (through a
/// chain of such loops, until a body is long enough or the chain ends).
pub fn moves(func: &Function) -> Vec<(Axis, Axis)> {
    let mut out = Vec::new();
    for axis in func.axes.keys() {
        let Some(n) = func.axes[axis].attrs.num_stages.filter(|&n| n > 1) else {
            continue;
        };
        let mut at = axis;
        while (n as usize) > func.axes[at].body.len() {
            match only_inner_loop(func, at) {
                Some(inner) => at = inner,
                None => break,
            }
        }
        if at != axis {
            out.push((axis, at));
        }
    }
    out
}

/// Moves the loop keywords of each `(from, to)` of [`moves`], and logs it.
pub fn apply(func: &mut Function, moves: &[(Axis, Axis)], log: &mut PipelineLog) {
    for &(from, to) in moves {
        let attrs = std::mem::take(&mut func.axes[from].attrs);
        func.axes[from].attrs.pipelined = attrs.pipelined;
        func.axes[to].attrs = AxisAttrs {
            pipelined: None,
            ..attrs
        };
        log.push(PipelineRemark::Descended {
            from: func.display_iv(from).to_string(),
            num_stages: attrs.num_stages.unwrap_or(0),
            to: func.display_iv(to).to_string(),
            statements: func.axes[to].body.len(),
        });
    }
}
