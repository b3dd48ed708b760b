//! Step 2: the schedule context of a target loop — its stage count, the stage of every child of
//! its body, and the order the children run in — and the validation of the annotations.
//!
//! - **Mode A** (`num_stages = N` on the loop) slices the body's children in program order into
//!   `N` groups with the sizes `numpy.array_split` gives (sizes differ by at most one, the earlier
//!   groups take the extra). A loop with fewer children than stages is an error
//!   ([`super::codes::TOO_MANY_STAGES`]): empty stages would only lengthen the loop, and the author most
//!   likely miscounted or meant a nested loop (the help names one that is long enough; a body
//!   that is a single unannotated loop never gets here, [`super::descend`] moved the annotation).
//!   `execution_order` needs `stage_id` ([`super::codes::ORDER_WITHOUT_STAGE`]).
//! - **Mode B** (`stage_id` on the children) groups the children by stage id; a child may be a
//!   nested loop, annotated through its `range` call. Every rule has its own diagnostic: every
//!   child has a stage id; the ids used are `0..N-1` with no gap; they never decrease in program
//!   order; `execution_order` is on all children or none; given, the orders are a permutation of
//!   `0..n-1` and increase in program order within each stage. The loop keyword
//!   `disable_execution_order_check=True` waives both order rules: the children then run sorted by
//!   order value (ties in program order), and only the legality check stands between a bad order
//!   and the kernel.
//! - Both modes on one loop is an error ([`super::codes::BOTH_MODES`]), and so is `num_stages="auto"`
//!   left beside the user's stage ids.
//!
//! [`compute_schedule_context`] picks the mode; each mode resolves its stages in a function of
//! its own, and each rule of Mode B is one check that adds its diagnostics, so that every
//! violation is reported, not only the first.
//!
//! Invariants of a returned context: `stages.len()` is the number of children, every stage is
//! `< num_stages`, every stage has at least one child, stages never decrease in program order, and
//! `order` is a permutation of the child indices that keeps program order within each stage
//! (unless the order check is disabled).

use super::error::{axis_span, stmt_span, PipelineError, StagesWritten};
use crate::entities::{Axis, Stmt};
use crate::ir::{Function, StmtAnnot};
use crate::listing::capped_list_of;
use std::collections::HashMap;

/// The nested loop of a body that `num_stages=n` could pipeline instead (its range call takes
/// the keyword), with its statement count: the first child loop of at least `n` statements.
fn compute_long_inner(
    func: &Function,
    children: &[crate::entities::Stmt],
    n: u32,
) -> Option<(String, usize)> {
    children.iter().find_map(|&c| match func.stmts[c].kind {
        crate::ir::StmtKind::Loop(a) if func.axes[a].body.len() >= n as usize => {
            Some((func.display_iv(a).to_string(), func.axes[a].body.len()))
        }
        _ => None,
    })
}

/// How the stages were given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Mode A: `num_stages` on the loop.
    NumStages,
    /// Mode B: `stage_id` on every child.
    StageIds,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleContext {
    pub axis: Axis,
    pub mode: Mode,
    pub num_stages: u32,
    /// The stage of each child, in program order.
    pub stages: Vec<u32>,
    /// The source `execution_order` of each child, when given.
    pub orders: Option<Vec<u32>>,
    /// The children in the order they run: `order[k]` is the program index of the `k`-th.
    pub order: Vec<usize>,
}

impl ScheduleContext {
    /// The children of each stage, in program order.
    pub fn groups(&self) -> Vec<Vec<usize>> {
        let mut groups = vec![Vec::new(); self.num_stages as usize];
        for (k, &s) in self.stages.iter().enumerate() {
            groups[s as usize].push(k);
        }
        groups
    }
}

/// The group sizes of `numpy.array_split(range(n), k)`.
pub fn array_split_sizes(n: usize, k: usize) -> Vec<usize> {
    let (base, extra) = (n / k, n % k);
    (0..k).map(|g| base + usize::from(g < extra)).collect()
}

/// [`super::codes::BOTH_MODES`]: loop `axis` has `num_stages={value}` and statement `stmt` a stage id.
fn both_modes(func: &Function, axis: Axis, stmt: Stmt, value: StagesWritten) -> PipelineError {
    PipelineError::BothModes {
        iv: func.display_iv(axis).to_string(),
        num_stages: value,
        stmt: stmt_span(func, stmt),
        header: axis_span(func, axis),
    }
}

/// Resolves and validates the stages of target loop `axis`.
pub fn compute_schedule_context(
    func: &Function,
    axis: Axis,
) -> Result<ScheduleContext, Vec<PipelineError>> {
    let data = &func.axes[axis];
    let children = &data.body;
    let annots: Vec<StmtAnnot> = children.iter().map(|&s| func.annots[s]).collect();
    let with_stage: Vec<usize> = (0..children.len())
        .filter(|&k| annots[k].stage_id.is_some())
        .collect();

    // `num_stages="auto"` left beside the user's own stage ids (the stage chooser only replaces
    // it on a body without them).
    if data.attrs.auto_stages {
        if let Some(&first) = with_stage.first() {
            return Err(vec![both_modes(
                func,
                axis,
                children[first],
                StagesWritten::Auto,
            )]);
        }
    }
    // Mode A; `num_stages=1` with stage ids is both modes too (the seed asserts on the attribute
    // being present at all).
    if let Some(n) = data
        .attrs
        .num_stages
        .filter(|&n| n > 1 || !with_stage.is_empty())
    {
        return mode_a_context(func, axis, n, &annots, &with_stage);
    }
    mode_b_context(func, axis, &annots, &with_stage)
}

/// Mode A: `num_stages = n` on loop `axis` slices its children in program order; `with_stage`
/// are the children that carry a stage id all the same (an error).
fn mode_a_context(
    func: &Function,
    axis: Axis,
    n: u32,
    annots: &[StmtAnnot],
    with_stage: &[usize],
) -> Result<ScheduleContext, Vec<PipelineError>> {
    let data = &func.axes[axis];
    let children = &data.body;
    let header = axis_span(func, axis);
    let mut errors = Vec::new();
    if let Some(&first) = with_stage.first() {
        errors.push(both_modes(
            func,
            axis,
            children[first],
            StagesWritten::Count(n),
        ));
    }
    for (k, a) in annots.iter().enumerate() {
        if a.execution_order.is_some() && a.stage_id.is_none() {
            errors.push(PipelineError::OrderWithoutStage {
                num_stages: n,
                stmt: stmt_span(func, children[k]),
                header,
            });
        }
    }
    if (n as usize) > children.len() {
        errors.push(PipelineError::TooManyStages {
            iv: func.display_iv(axis).to_string(),
            num_stages: n,
            statements: children.len(),
            inner: compute_long_inner(func, children, n),
            header,
        });
    }
    if !errors.is_empty() || n <= 1 {
        return Err(errors);
    }
    let mut stages = Vec::with_capacity(children.len());
    for (g, size) in array_split_sizes(children.len(), n as usize)
        .into_iter()
        .enumerate()
    {
        stages.extend(std::iter::repeat_n(g as u32, size));
    }
    Ok(ScheduleContext {
        axis,
        mode: Mode::NumStages,
        num_stages: n,
        order: (0..children.len()).collect(),
        stages,
        orders: None,
    })
}

/// Mode B: a `stage_id` on every child of loop `axis` (`with_stage`: those that have one), and
/// maybe an `execution_order`; each rule of the module doc checked in turn.
fn mode_b_context(
    func: &Function,
    axis: Axis,
    annots: &[StmtAnnot],
    with_stage: &[usize],
) -> Result<ScheduleContext, Vec<PipelineError>> {
    let children = &func.axes[axis].body;
    let mut errors = check_stage_ids_given(func, axis, annots, with_stage);
    if !errors.is_empty() {
        return Err(errors);
    }
    let stages: Vec<u32> = annots.iter().map(|a| a.stage_id.unwrap_or(0)).collect();
    let span_stages = check_no_gap(func, axis, &stages, &mut errors);
    check_never_decreasing(func, axis, &stages, &mut errors);
    let orders = check_execution_orders(func, axis, annots, &stages, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut order: Vec<usize> = (0..children.len()).collect();
    if let Some(ord) = &orders {
        order.sort_by_key(|&k| (ord[k], k));
    }
    // No gap: the ids are exactly 0..=max_stage, one per child at least.
    let num_stages = u32::try_from(span_stages)
        .expect("without a gap there are no more stages than children of the loop");
    Ok(ScheduleContext {
        axis,
        mode: Mode::StageIds,
        num_stages,
        stages,
        orders,
        order,
    })
}

/// A missing stage id error for every child of loop `axis` without a stage id.
fn check_stage_ids_given(
    func: &Function,
    axis: Axis,
    annots: &[StmtAnnot],
    with_stage: &[usize],
) -> Vec<PipelineError> {
    let data = &func.axes[axis];
    let children = &data.body;
    let mut errors = Vec::new();
    for (k, a) in annots.iter().enumerate() {
        if a.stage_id.is_none() {
            errors.push(PipelineError::MissingStageId {
                iv: func.display_iv(axis).to_string(),
                stmt: stmt_span(func, children[k]),
                with_stage: with_stage
                    .first()
                    .and_then(|&f| stmt_span(func, children[f])),
            });
        }
    }
    errors
}

/// A stage gap error unless the stage ids used are `0..N-1` with no gap; returns `N` (the
/// largest id plus one, in u64: the largest id may be anything up to `u32::MAX`).
fn check_no_gap(
    func: &Function,
    axis: Axis,
    stages: &[u32],
    errors: &mut Vec<PipelineError>,
) -> u64 {
    let data = &func.axes[axis];
    let children = &data.body;
    // Keep only the ids used (sorted), never a table indexed by stage id, so that memory follows
    // the body, not the ids.
    let max_stage = stages.iter().copied().max().unwrap_or(0);
    let span_stages = u64::from(max_stage) + 1;
    let mut used = stages.to_vec();
    used.sort_unstable();
    used.dedup();
    let missing_count = span_stages - used.len() as u64;
    if missing_count > 0 {
        // Lazily: at most `used.len() + LIST_CAP` ids are looked at.
        let missing = || (0..=max_stage).filter(|s| used.binary_search(s).is_err());
        let list = capped_list_of(missing(), missing_count, ", ");
        let last = stages
            .iter()
            .position(|&s| s == max_stage)
            .map(|k| children[k]);
        errors.push(PipelineError::StageGap {
            iv: func.display_iv(axis).to_string(),
            max_stage,
            missing: list,
            header: axis_span(func, axis),
            last: last.and_then(|s| stmt_span(func, s)),
        });
    }
    span_stages
}

/// A stage-decreases error for every child whose stage id is below the one before it.
fn check_never_decreasing(
    func: &Function,
    axis: Axis,
    stages: &[u32],
    errors: &mut Vec<PipelineError>,
) {
    let children = &func.axes[axis].body;
    for k in 1..stages.len() {
        if stages[k] < stages[k - 1] {
            errors.push(PipelineError::StageDecreases {
                stage: stages[k],
                before: stages[k - 1],
                stmt: stmt_span(func, children[k]),
                prev: stmt_span(func, children[k - 1]),
            });
        }
    }
}

/// The `execution_order` of every child, when given: on all children or none (else an
/// order-mixed error per child without one), a permutation ([`check_permutation`]) increasing in
/// program order within each stage ([`check_order_within_stages`]), both waived by
/// `disable_execution_order_check`.
fn check_execution_orders(
    func: &Function,
    axis: Axis,
    annots: &[StmtAnnot],
    stages: &[u32],
    errors: &mut Vec<PipelineError>,
) -> Option<Vec<u32>> {
    let data = &func.axes[axis];
    let children = &data.body;
    let with_order: Vec<usize> = (0..children.len())
        .filter(|&k| annots[k].execution_order.is_some())
        .collect();
    if with_order.is_empty() {
        return None;
    }
    if with_order.len() < children.len() {
        for (k, a) in annots.iter().enumerate() {
            if a.execution_order.is_none() {
                errors.push(PipelineError::OrderMixed {
                    iv: func.display_iv(axis).to_string(),
                    stmt: stmt_span(func, children[k]),
                    with_order: stmt_span(func, children[with_order[0]]),
                });
            }
        }
        return None;
    }
    let ord: Vec<u32> = annots
        .iter()
        .map(|a| a.execution_order.unwrap_or(0))
        .collect();
    if !data.attrs.disable_execution_order_check {
        check_permutation(func, axis, &ord, errors);
        check_order_within_stages(func, axis, &ord, stages, errors);
    }
    Some(ord)
}

/// An order-decreases-in-stage error for every child whose execution order is not above the one
/// of the child before it in its stage.
fn check_order_within_stages(
    func: &Function,
    axis: Axis,
    ord: &[u32],
    stages: &[u32],
    errors: &mut Vec<PipelineError>,
) {
    let children = &func.axes[axis].body;
    let mut last_in_stage: HashMap<u32, usize> = HashMap::new();
    for k in 0..children.len() {
        let s = stages[k];
        if let Some(&p) = last_in_stage.get(&s) {
            if ord[k] <= ord[p] {
                errors.push(PipelineError::OrderDecreasesInStage {
                    stage: s,
                    order: ord[k],
                    before: ord[p],
                    stmt: stmt_span(func, children[k]),
                    prev: stmt_span(func, children[p]),
                });
            }
        }
        last_in_stage.insert(s, k);
    }
}

/// The execution orders must be `0..n-1`, each once.
fn check_permutation(func: &Function, axis: Axis, ord: &[u32], errors: &mut Vec<PipelineError>) {
    let children = &func.axes[axis].body;
    let n = ord.len();
    let mut first_with: Vec<Option<usize>> = vec![None; n];
    for (k, &o) in ord.iter().enumerate() {
        let o = o as usize;
        if o >= n {
            errors.push(PipelineError::OrderOutOfRange {
                order: o,
                statements: n,
                stmt: stmt_span(func, children[k]),
            });
        } else if let Some(p) = first_with[o] {
            errors.push(PipelineError::OrderTwice {
                order: o,
                statements: n,
                stmt: stmt_span(func, children[k]),
                first: stmt_span(func, children[p]),
            });
        } else {
            first_with[o] = Some(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::array_split_sizes;

    #[test]
    fn sizes_follow_numpy_array_split() {
        assert_eq!(array_split_sizes(4, 3), vec![2, 1, 1]);
        assert_eq!(array_split_sizes(7, 3), vec![3, 2, 2]);
        assert_eq!(array_split_sizes(6, 2), vec![3, 3]);
        assert_eq!(array_split_sizes(5, 4), vec![2, 1, 1, 1]);
    }
}
