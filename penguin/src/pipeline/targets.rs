//! Step 1: finding the loops to pipeline.
//!
//! A loop is a *target* when it is annotated — `num_stages > 1`, or `stage_id` /
//! `execution_order` on a statement of its body — and has canonical bounds (it starts at 0; the
//! step is always 1 and trip counts are always static in this language). `num_stages = 1` means no
//! pipelining. Every loop gets a decision that the log reports: a target, or skipped with the
//! reason.
//!
//! A target may be nested in another (nested pipelining): each target records how many targets
//! enclose it, and the pass pipelines the innermost first, so that an outer loop is planned, and
//! checked, on the function in which the loops nested in it are already pipelined; in the outer
//! loop's body an inner loop is one statement with its own stage. Annotations *of* a nested loop
//! statement (its `stage_id` on the `range` call) belong to the enclosing loop.

use super::error::{axis_span, PipelineError};
use crate::entities::Axis;
use crate::ir::{Function, StmtKind};

/// What [`find_targets`] decided about every loop, in program order.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    /// The loops to pipeline, outermost and first first.
    pub targets: Vec<Axis>,
    /// Per target, how many targets enclose it.
    pub depth: Vec<usize>,
    /// Loops left alone, with the reason.
    pub skipped: Vec<(Axis, NotTarget)>,
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

/// Why a loop is no target of the pipeliner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotTarget {
    /// The pipeliner extended it already.
    AlreadyPipelined,
    /// It is annotated but does not start at 0 (an error too).
    NonZeroStart(i64),
    /// `num_stages=1`.
    OneStage,
    /// Buffering keywords without stages.
    BufferingOnly,
    /// No annotation.
    NotAnnotated,
}

impl std::fmt::Display for NotTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotTarget::AlreadyPipelined => f.write_str("already pipelined"),
            NotTarget::NonZeroStart(lb) => write!(f, "does not start at 0 but at {lb}"),
            NotTarget::OneStage => f.write_str("num_stages=1 means no pipelining"),
            NotTarget::BufferingOnly => {
                f.write_str("buffering keywords without stages (no num_stages > 1, no stage_id)")
            }
            NotTarget::NotAnnotated => f.write_str("no pipelining annotation"),
        }
    }
}

/// Finds the target loops of `func`.
pub fn find_targets(func: &Function) -> Targets {
    let mut out = Targets::default();
    walk(func, &func.body, 0, &mut out);
    out
}

fn walk(func: &Function, block: &[crate::entities::Stmt], depth: usize, out: &mut Targets) {
    for &stmt in block {
        let StmtKind::Loop(axis) = func.stmts[stmt].kind else {
            continue;
        };
        let data = &func.axes[axis];
        let mut inner = depth;
        if data.attrs.pipelined.is_some() {
            out.skipped.push((axis, NotTarget::AlreadyPipelined));
        } else if is_annotated(func, axis) {
            if data.lb != 0 {
                out.errors.push(PipelineError::NonCanonicalLoop {
                    iv: func.display_iv(axis).to_string(),
                    lb: data.lb,
                    trip_count: data.trip_count(),
                    header: axis_span(func, axis),
                });
                out.skipped.push((axis, NotTarget::NonZeroStart(data.lb)));
            } else {
                out.targets.push(axis);
                out.depth.push(depth);
                inner = depth + 1;
            }
        } else {
            let reason = if data.attrs.num_stages == Some(1) {
                NotTarget::OneStage
            } else if data.attrs.multi_buffer.is_some() || data.attrs.disable_auto_buffer {
                NotTarget::BufferingOnly
            } else {
                NotTarget::NotAnnotated
            };
            out.skipped.push((axis, reason));
        }
        walk(func, &data.body, inner, out);
    }
}
