//! The annotated software pipeliner (`../shared/DESIGN.md`, "The annotated pipeliner";
//! `../shared/seeds/000_80c2be79d9f2bbde.txt`).
//!
//! [`pipeline_function`] realises the software pipeline that the annotations of each target loop
//! describe, one step per file:
//! 0. [`descend`] — a Mode A annotation on a body that is one nested loop, with fewer statements
//!    than stages, moves down to that loop;
//! 1. [`targets`] — which loops to pipeline;
//! 2. [`context`] — their stages and execution order, and the validation of the annotations;
//! 3. [`buffers`] — the buffer count of every tensor local to the loop;
//! 4. [`widen`] — which tensors get several buffers, checked against SBUF and PSUM;
//! 5. the [`PipelinePlan`] (`plan`), checked for legality by [`legality`] on the *original*
//!    function (skipped with `legality_check: false`, the `--no-legality-check` escape hatch);
//! 6. [`extend`] and [`reorder`] — the extended, predicated, reordered loop;
//! 7. the verifier: IR it rejects is an internal error (a bug in nkc).
//!
//! [`peel::peel_extended_loops`] is an opt-in step after them (`--peel`): the extended loops'
//! prologue and epilogue as straight-line code beside a steady-state loop without guards.
//!
//! Every decision goes to the [`log::PipelineLog`]. Problems of the kernel are [`PipelineError`]s
//! with codes `E04xx` ([`codes`]) and source spans; the driver renders them. The pass changes the
//! function only when every target loop passed every check, so on error it is left as it was.

pub mod buffers;
pub mod codes;
pub mod context;
pub mod descend;
pub mod error;
pub mod extend;
pub mod holder_order;
pub mod isl_model;
pub mod legality;
pub mod log;
pub mod peel;
pub mod plan;
pub mod prefilter;
pub mod reorder;
pub mod targets;
pub mod widen;

pub use error::PipelineError;
pub use legality::{
    compute_violations, compute_violations_with, LegalityError, LegalityOptions, LegalityReport,
};
pub use log::{ForeignRemark, PipelineLog, PipelineRemark};
pub use plan::{DepKind, PipelinePlan, Violation};

use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Function, Op, StmtKind};
use buffers::BufferCount;
use widen::BufferSource;

/// Options of the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineOptions {
    /// Run the ISL legality check (on by default; `--no-legality-check` turns it off).
    pub legality_check: bool,
    /// A loop that holds a loop and has no `execution_order` runs its later stages first when
    /// the legality check passes on that order ([`holder_order`]; `default` and `auto`).
    pub order_holders: bool,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            legality_check: true,
            order_holders: false,
        }
    }
}

/// What the pass did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// One plan per pipelined loop, in program order.
    pub plans: Vec<PipelinePlan>,
    pub log: PipelineLog,
}

/// Pipelines every target loop of `func`, or returns every problem found (leaving `func` as it
/// was).
pub fn pipeline_function(
    func: &mut Function,
    opts: &PipelineOptions,
) -> Result<Outcome, Vec<PipelineError>> {
    let mut log = PipelineLog::default();
    let plans = pipeline_function_logged(func, opts, &mut log)?;
    Ok(Outcome { plans, log })
}

/// [`pipeline_function`], writing the decisions to `log` also when it fails.
pub fn pipeline_function_logged(
    func: &mut Function,
    opts: &PipelineOptions,
    log: &mut PipelineLog,
) -> Result<Vec<PipelinePlan>, Vec<PipelineError>> {
    let moves = descend::moves(func);
    if moves.is_empty() {
        return pipeline_targets(func, opts, log);
    }
    let before = func.clone();
    descend::apply(func, &moves, log);
    let result = pipeline_targets(func, opts, log);
    if result.is_err() {
        // On error the function is left as it was, moved annotations included.
        *func = before;
    }
    result
}

/// [`pipeline_function_logged`] once the annotations are where they apply.
fn pipeline_targets(
    func: &mut Function,
    opts: &PipelineOptions,
    log: &mut PipelineLog,
) -> Result<Vec<PipelinePlan>, Vec<PipelineError>> {
    let found = targets::find_targets(func);
    for &(axis, why) in &found.skipped {
        log.push(PipelineRemark::Skipped {
            iv: func.display_iv(axis).to_string(),
            why,
        });
    }
    for &axis in &found.targets {
        log.push(PipelineRemark::Target {
            iv: func.display_iv(axis).to_string(),
            trip: func.axes[axis].trip_count(),
        });
    }
    if !found.errors.is_empty() {
        return Err(found.errors);
    }
    // Nested pipelining: the innermost targets first, each level planned and checked on the
    // function in which the levels below it are already pipelined.
    let before = func.clone();
    let mut plans = Vec::new();
    let deepest = found.depth.iter().copied().max().unwrap_or(0);
    for level in (0..=deepest).rev() {
        let mut errors = Vec::new();
        let mut level_plans = Vec::new();
        for (&axis, _) in (found.targets.iter().zip(&found.depth)).filter(|(_, &d)| d == level) {
            match plan_loop(func, axis, opts, log) {
                Ok(plan) => level_plans.push(plan),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            *func = before;
            return Err(errors);
        }
        for plan in &level_plans {
            apply_plan(func, plan, log);
        }
        plans.extend(level_plans);
    }
    if let Err(errors) = crate::verify::verify_function(func) {
        *func = before;
        return Err(vec![PipelineError::InvalidIr {
            function: func.name.clone(),
            errors,
        }]);
    }
    Ok(plans)
}

/// Step 6 for one checked plan: widened allocations, the extended loop, the execution order.
fn apply_plan(func: &mut Function, plan: &PipelinePlan, log: &mut PipelineLog) {
    let widened: Vec<widen::Widening> = plan
        .buffers
        .iter()
        .map(|&(tensor, count)| widen::Widening {
            tensor,
            count,
            source: BufferSource::Auto,
        })
        .collect();
    widen::widen_allocations(func, plan.axis, &widened);
    extend::extend_loop(func, plan);
    reorder::reorder_body(func, plan);
    let a = &func.axes[plan.axis];
    let iv = func.display_iv(plan.axis);
    log.push(PipelineRemark::Extended {
        iv: iv.to_string(),
        lb: a.lb,
        ub: a.ub,
        was_ub: a.ub - i64::from(plan.num_stages) + 1,
    });
    log.push(PipelineRemark::Applied {
        iv: iv.to_string(),
        num_stages: plan.num_stages,
    });
}

/// Steps 2 to 5 for one target loop: its plan, checked.
fn plan_loop(
    func: &Function,
    axis: Axis,
    opts: &PipelineOptions,
    log: &mut PipelineLog,
) -> Result<PipelinePlan, Vec<PipelineError>> {
    let iv = func.display_iv(axis).to_string();
    let ctx = context::compute_schedule_context(func, axis)?;
    log.push(PipelineRemark::StageCount {
        iv: iv.clone(),
        num_stages: ctx.num_stages,
        mode: ctx.mode,
    });
    let body = &func.axes[axis].body;
    for (s, group) in ctx.groups().iter().enumerate() {
        log.push(PipelineRemark::Stage {
            iv: iv.clone(),
            stage: s,
            statements: group
                .iter()
                .map(|&k| log::describe_stmt(func, body[k]))
                .collect(),
        });
    }
    match &ctx.orders {
        None => log.push(PipelineRemark::ProgramOrder { iv: iv.clone() }),
        Some(_) => log.push(PipelineRemark::Order {
            iv: iv.clone(),
            statements: ctx
                .order
                .iter()
                .map(|&k| (log::describe_stmt(func, body[k]), ctx.stages[k]))
                .collect(),
        }),
    }

    let counts = buffers::compute_buffer_counts(func, axis, &ctx.stages);
    for (t, c) in &counts {
        let name = func.display_name(*t);
        match c {
            BufferCount::Counted {
                def_min,
                use_max,
                count,
            } => log.push(PipelineRemark::BufferCount {
                iv: iv.clone(),
                tensor: name.to_string(),
                def_min: *def_min,
                use_max: *use_max,
                count: *count,
            }),
            BufferCount::Skipped(r) => log.push(PipelineRemark::BufferSkipped {
                iv: iv.clone(),
                tensor: name.to_string(),
                why: *r,
            }),
        }
    }
    let attrs = func.axes[axis].attrs;
    if attrs.disable_auto_buffer {
        log.push(PipelineRemark::AutoBufferOff { iv: iv.clone() });
    }
    let widened = widen::compute_widening(func, axis, &counts)?;
    for w in &widened {
        let t = &func.tensors[w.tensor];
        log.push(PipelineRemark::Allocated {
            iv: iv.clone(),
            tensor: t.name.clone(),
            manual: w.source == BufferSource::Manual,
            psum: t.memory == crate::ir::Memory::Psum,
            count: w.count,
            bytes: t.bytes_per_partition() * u64::from(w.count),
        });
    }

    let plan = PipelinePlan {
        axis,
        num_stages: ctx.num_stages,
        stages: ctx.stages.clone(),
        order: ctx.order.clone(),
        buffers: widened.iter().map(|w| (w.tensor, w.count)).collect(),
    };
    if opts.legality_check {
        if let Some(p) = holder_order_plan(func, &plan, &ctx, opts, log) {
            return Ok(p);
        }
        check_legality(func, &plan, log)?;
    } else {
        log.push(PipelineRemark::LegalityOff { iv });
    }
    Ok(plan)
}

/// The plan with the later stages first ([`holder_order`]), when the options ask for it, the
/// user gave no `execution_order`, the loop holds a loop and the legality check passes on that
/// order (logged either way); else `None`, and the plan in program order is checked as usual.
fn holder_order_plan(
    func: &Function,
    plan: &PipelinePlan,
    ctx: &context::ScheduleContext,
    opts: &PipelineOptions,
    log: &mut PipelineLog,
) -> Option<PipelinePlan> {
    if !opts.order_holders || ctx.orders.is_some() {
        return None;
    }
    let order = holder_order::compute_holder_order(func, plan.axis, &plan.stages)?;
    let reordered = PipelinePlan {
        order,
        ..plan.clone()
    };
    let iv = func.display_iv(plan.axis).to_string();
    let report = compute_violations(func, &reordered)
        .ok()
        .filter(|r| r.is_legal());
    let legal = report.is_some();
    let body = &func.axes[plan.axis].body;
    log.push(PipelineRemark::HolderOrder {
        iv: iv.clone(),
        statements: reordered
            .order
            .iter()
            .map(|&k| (log::describe_stmt(func, body[k]), plan.stages[k]))
            .collect(),
        legal,
    });
    let report = report?;
    log.push(PipelineRemark::Legality {
        iv,
        violations: 0,
        flow: report.flow,
        anti: report.anti,
        output: report.output,
        checked: report.tensors_checked,
        preserved: report.tensors_preserved,
    });
    Some(reordered)
}

/// Runs the ISL legality check on the original function and turns violations into errors.
fn check_legality(
    func: &Function,
    plan: &PipelinePlan,
    log: &mut PipelineLog,
) -> Result<(), Vec<PipelineError>> {
    let iv = func.display_iv(plan.axis).to_string();
    let violations = match compute_violations(func, plan) {
        Ok(report) => {
            log.push(PipelineRemark::Legality {
                iv: iv.clone(),
                violations: report.violations.len(),
                flow: report.flow,
                anti: report.anti,
                output: report.output,
                checked: report.tensors_checked,
                preserved: report.tensors_preserved,
            });
            report.violations
        }
        Err(e) => {
            return Err(vec![PipelineError::LegalityFailed {
                iv,
                error: e,
                at: error::axis_span(func, plan.axis),
            }]);
        }
    };
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations
            .iter()
            .map(|v| violation_error(func, plan, v))
            .collect())
    }
}

/// `i = 3, k = 0`.
fn fmt_iter(func: &Function, iter: &[(Axis, i64)]) -> String {
    if iter.is_empty() {
        return "(outside every loop)".into();
    }
    let parts: Vec<String> = iter
        .iter()
        .map(|&(a, v)| format!("{} = {v}", func.display_iv(a)))
        .collect();
    parts.join(", ")
}

/// The child of the plan's loop that holds `inst`, with its program index.
fn child_of(func: &Function, plan: &PipelinePlan, inst: Inst) -> Option<usize> {
    func.axes[plan.axis].body.iter().position(|&s| {
        let mut v = Vec::new();
        collect_insts(func, &[s], &mut v);
        v.contains(&inst)
    })
}

fn violation_error(func: &Function, plan: &PipelinePlan, v: &Violation) -> PipelineError {
    let access = |i: Inst, iter: &[(Axis, i64)]| {
        let stage = child_of(func, plan, i).map(|k| plan.stages[k]);
        let d = &func.insts[i];
        let what = format!("`{} = {}`", func.display_name(d.dst.tensor), d.op.name());
        error::Access {
            at: func.inst_spans.get(i).copied().flatten(),
            iter: fmt_iter(func, iter),
            what: match stage {
                Some(s) => format!("{what} (stage {s})"),
                None => what,
            },
        }
    };
    // Nested pipelining: an access inside a loop the pass already pipelined is named by that
    // loop's extended iterations.
    let mut inner: Vec<Axis> = v
        .source_iter
        .iter()
        .chain(&v.sink_iter)
        .map(|&(a, _)| a)
        .filter(|&a| a != plan.axis && func.axes[a].attrs.pipelined.is_some())
        .collect();
    inner.sort();
    inner.dedup();
    let inner = inner
        .into_iter()
        .map(|a| {
            let p = func.axes[a]
                .attrs
                .pipelined
                .expect("filtered on pipelined loops");
            (func.display_iv(a).to_string(), p.num_stages)
        })
        .collect();
    let buffered = plan.buffer_count(v.tensor);
    let counts = buffers::compute_buffer_counts(func, plan.axis, &plan.stages);
    let decision = counts.iter().find(|(t, _)| *t == v.tensor).map(|(_, c)| c);
    let help = match (v.kind, decision) {
        (DepKind::Flow, _) => error::ViolationHelp::Flow,
        (_, Some(BufferCount::Counted { count, .. })) if buffered < *count => {
            error::ViolationHelp::TooFewBuffers {
                buffered,
                count: *count,
            }
        }
        (_, Some(BufferCount::Skipped(buffers::SkipReason::Carried))) => {
            error::ViolationHelp::Carried
        }
        _ => error::ViolationHelp::Overlap,
    };
    PipelineError::DependenceViolation(Box::new(error::Violated {
        iv: func.display_iv(plan.axis).to_string(),
        kind: v.kind,
        tensor: func.display_name(v.tensor).to_string(),
        source: access(v.source, &v.source_iter),
        sink: access(v.sink, &v.sink_iter),
        inner,
        help,
    }))
}

/// The instructions of `block` and everything nested in it, in program order.
pub(crate) fn collect_insts(func: &Function, block: &[Stmt], out: &mut Vec<Inst>) {
    for &s in block {
        match &func.stmts[s].kind {
            StmtKind::Insts(list) => out.extend(list.iter().copied()),
            StmtKind::Loop(a) => collect_insts(func, &func.axes[*a].body, out),
        }
    }
}

/// The tensors one child of a loop body writes and reads, however deep.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChildAccesses {
    pub writes: Vec<Tensor>,
    pub reads: Vec<Tensor>,
}

pub(crate) fn child_accesses(func: &Function, stmt: Stmt) -> ChildAccesses {
    let mut insts = Vec::new();
    collect_insts(func, &[stmt], &mut insts);
    let mut acc = ChildAccesses::default();
    for i in insts {
        let d = &func.insts[i];
        acc.writes.push(d.dst.tensor);
        if matches!(d.op, Op::Matmul { accumulate: true }) {
            acc.reads.push(d.dst.tensor);
        }
        acc.reads.extend(d.srcs.iter().map(|o| o.tensor));
    }
    acc.writes.sort();
    acc.writes.dedup();
    acc.reads.sort();
    acc.reads.dedup();
    acc
}
