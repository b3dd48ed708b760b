//! Step 1: finding the loops to pipeline.
//!
//! A loop is a *target* when it is annotated — `num_stages > 1`, or `stage_id` /
//! `execution_order` on a statement of its body — and has canonical bounds (it starts at 0; the
//! step is always 1 and trip counts are always static in this language). `num_stages = 1` means no
//! pipelining. Every loop gets a decision that the log reports: a target, or skipped with the
//! reason.
//!
//! A pipelining annotation on a loop nested inside a target is an error ([`codes::NESTED_PIPELINE`]):
//! nested pipelining is not supported yet. Annotations *of* a nested loop statement (its `stage_id`
//! on the `range` call) belong to the enclosing loop and are fine.

use super::codes;
use super::error::{axis_span, PipelineError};
use crate::entities::Axis;
use crate::ir::{Function, StmtKind};

/// What [`find_targets`] decided about every loop, in program order.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    /// The loops to pipeline, outermost and first first.
    pub targets: Vec<Axis>,
    /// Loops left alone, with the reason.
    pub skipped: Vec<(Axis, String)>,
    pub errors: Vec<PipelineError>,
}

/// Whether a loop asks for pipelining: `num_stages > 1` or statement annotations on its body.
pub fn is_annotated(func: &Function, axis: Axis) -> bool {
    let data = &func.axes[axis];
    data.attrs.num_stages.is_some_and(|n| n > 1)
        || data.body.iter().any(|&s| {
            let a = func.annots[s];
            a.stage_id.is_some() || a.execution_order.is_some()
        })
}

/// Finds the target loops of `func`.
pub fn find_targets(func: &Function) -> Targets {
    let mut out = Targets::default();
    walk(func, &func.body, None, &mut out);
    out
}

fn walk(func: &Function, block: &[crate::entities::Stmt], outer: Option<Axis>, out: &mut Targets) {
    for &stmt in block {
        let StmtKind::Loop(axis) = func.stmts[stmt].kind else {
            continue;
        };
        let data = &func.axes[axis];
        let mut inner_outer = outer;
        if data.attrs.pipelined.is_some() {
            out.skipped.push((axis, "already pipelined".into()));
        } else if is_annotated(func, axis) {
            if let Some(o) = outer {
                out.errors.push(
                    PipelineError::new(
                        codes::NESTED_PIPELINE,
                        format!(
                            "cannot pipeline loop `{}`: it is nested inside the pipelined loop `{}`",
                            data.iv_name,
                            func.axis_name(o)
                        ),
                        axis_span(func, axis),
                    )
                    .with_label("a pipelining annotation on a nested loop")
                    .with_secondary(axis_span(func, o), "the enclosing pipelined loop")
                    .with_note("nested pipelining is not supported yet")
                    .with_help(
                        "remove the annotations of one of the two loops (a nested loop may still \
                         be one stage of the outer pipeline, with `stage_id` on its range call)",
                    ),
                );
                out.skipped
                    .push((axis, "nested inside a pipelined loop (an error)".into()));
            } else if data.lb != 0 {
                out.errors.push(
                    PipelineError::new(
                        codes::NON_CANONICAL_LOOP,
                        format!(
                            "cannot pipeline loop `{}`: it starts at {}, not at 0",
                            data.iv_name, data.lb
                        ),
                        axis_span(func, axis),
                    )
                    .with_label("annotated for pipelining")
                    .with_help(format!(
                        "write the loop as `range({})` and add {} to the index",
                        data.trip_count(),
                        data.lb
                    )),
                );
                out.skipped
                    .push((axis, format!("does not start at 0 but at {}", data.lb)));
            } else {
                out.targets.push(axis);
                inner_outer = Some(axis);
            }
        } else {
            let reason = if data.attrs.num_stages == Some(1) {
                "num_stages=1 means no pipelining"
            } else if data.attrs.multi_buffer.is_some() || data.attrs.disable_auto_buffer {
                "buffering keywords without stages (no num_stages > 1, no stage_id)"
            } else {
                "no pipelining annotation"
            };
            out.skipped.push((axis, reason.into()));
        }
        walk(func, &data.body, inner_outer, out);
    }
}
