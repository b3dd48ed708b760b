//! Step 3: buffer counts — how many iterations' worth of each tensor the pipeline keeps alive.
//!
//! For every tensor *local to the loop*, the count is `max(use stage) − min(def stage) + 1`: the
//! distance from the earliest stage that writes it to the latest stage that reads it, plus one.
//! A tensor is local to the loop when it is an on-chip (SBUF or PSUM) `local` tensor, every
//! access to it lies inside the loop body, and (when the IR has spans) it is made inside the
//! loop. Every other tensor the body touches is skipped with the reason: inputs and outputs, HBM
//! scratch, carried buffers (made or accessed outside the loop: one copy holds their state from
//! one iteration to the next, so they must not be multi-buffered), tensors with no def or no use in
//! the loop, and tensors read in an earlier stage than any write (no slot could hold them).
//!
//! A def is a write (an instruction's destination); a use is a read (a source, or the destination
//! of an accumulating matmul). The stage of an access is the stage of the child of the loop body
//! that holds it, however deep.

use super::{child_accesses, ChildAccesses};
use crate::entities::{Axis, Tensor};
use crate::ir::{Function, Memory, StmtKind, TensorKind};
use std::collections::BTreeMap;

/// What [`compute_buffer_counts`] decided for one tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferCount {
    /// Local to the loop: `count = use_max − def_min + 1`.
    Counted {
        def_min: u32,
        use_max: u32,
        count: u32,
    },
    /// Not multi-buffered, for the reason given.
    Skipped(SkipReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    Input,
    Output,
    InHbm,
    /// Made or accessed outside the loop.
    Carried,
    NoDef,
    NoUse,
    /// Read in an earlier stage than any write.
    UsedBeforeDef,
}

impl SkipReason {
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::Input => "is a kernel input",
            SkipReason::Output => "is a kernel output",
            SkipReason::InHbm => "lives in HBM",
            SkipReason::Carried => {
                "is carried across iterations (made or accessed outside the loop): one copy holds its state"
            }
            SkipReason::NoDef => "has no def in the loop",
            SkipReason::NoUse => "has no use in the loop",
            SkipReason::UsedBeforeDef => "is read in an earlier stage than it is written",
        }
    }
}

/// The decision for every tensor the loop body accesses, in tensor order.
pub fn compute_buffer_counts(
    func: &Function,
    axis: Axis,
    stages: &[u32],
) -> Vec<(Tensor, BufferCount)> {
    let children = &func.axes[axis].body;
    let per_child: Vec<ChildAccesses> = children.iter().map(|&s| child_accesses(func, s)).collect();
    let mut defs: BTreeMap<Tensor, Vec<u32>> = BTreeMap::new();
    let mut uses: BTreeMap<Tensor, Vec<u32>> = BTreeMap::new();
    for (acc, &s) in per_child.iter().zip(stages) {
        for &t in &acc.writes {
            defs.entry(t).or_default().push(s);
            uses.entry(t).or_default();
        }
        for &t in &acc.reads {
            uses.entry(t).or_default().push(s);
            defs.entry(t).or_default();
        }
    }
    let outside = accessed_outside(func, axis);
    let loop_span = loop_stmt_span(func, axis);
    let mut out = Vec::new();
    for (&t, def) in &defs {
        let data = &func.tensors[t];
        let use_ = &uses[&t];
        let made_outside = match (loop_span, func.tensor_spans[t]) {
            (Some(l), Some(ts)) => ts.start < l.start || ts.end > l.end,
            _ => false,
        };
        let decision = if data.kind.is_read_only() {
            BufferCount::Skipped(SkipReason::Input)
        } else if data.kind == TensorKind::Output {
            BufferCount::Skipped(SkipReason::Output)
        } else if data.memory == Memory::Hbm {
            BufferCount::Skipped(SkipReason::InHbm)
        } else if outside.contains(&t) || made_outside {
            BufferCount::Skipped(SkipReason::Carried)
        } else if def.is_empty() {
            BufferCount::Skipped(SkipReason::NoDef)
        } else if use_.is_empty() {
            BufferCount::Skipped(SkipReason::NoUse)
        } else {
            let def_min = *def.iter().min().expect("checked non-empty");
            let use_max = *use_.iter().max().expect("checked non-empty");
            if use_max < def_min {
                BufferCount::Skipped(SkipReason::UsedBeforeDef)
            } else {
                BufferCount::Counted {
                    def_min,
                    use_max,
                    count: use_max - def_min + 1,
                }
            }
        };
        out.push((t, decision));
    }
    out
}

/// The tensors accessed by instructions outside the body of `axis`.
fn accessed_outside(func: &Function, axis: Axis) -> Vec<Tensor> {
    let mut list = Vec::new();
    super::collect_insts(func, &func.axes[axis].body, &mut list);
    let inside: std::collections::HashSet<_> = list.into_iter().collect();
    let mut out = Vec::new();
    for (i, data) in func.insts.iter() {
        if inside.contains(&i) {
            continue;
        }
        out.push(data.dst.tensor);
        out.extend(data.srcs.iter().map(|o| o.tensor));
    }
    out.sort();
    out.dedup();
    out
}

/// The span of the whole loop statement of `axis`.
fn loop_stmt_span(func: &Function, axis: Axis) -> Option<crate::ir::SrcSpan> {
    func.stmts
        .iter()
        .find(|(_, d)| d.kind == StmtKind::Loop(axis))
        .and_then(|(s, _)| func.stmt_spans[s])
}
