//! The pipeline plan: what the annotated pipeliner decided for one loop, in the form that both the
//! transformation and the ISL legality check read.
//!
//! A plan describes the software pipeline of one loop (`axis`) of the *original* (not yet
//! pipelined) function: the stage of each child statement, the order in which the children run in
//! one iteration of the extended loop, and the tensors that get several buffers along the loop.
//!
//! Invariants (established by the pipeliner before a plan is used):
//! - `stages.len()` equals the number of children of `axis` (its `body`), in program order, and
//!   every stage is `< num_stages`;
//! - `order` is a permutation of `0..stages.len()`: `order[k]` is the index (in program order) of
//!   the child that runs `k`-th in the extended loop's body;
//! - every tensor in `buffers` is a local on-chip tensor whose accesses all lie inside the loop,
//!   listed once, with a count `>= 2`. Such a tensor is accessed, in the pipelined program, in slot
//!   `(iv - s) mod count` by a child of stage `s` (which is the original iteration `iv mod count`).

use crate::entities::{Axis, Inst, Tensor};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelinePlan {
    pub axis: Axis,
    pub num_stages: u32,
    /// The stage of each child of the loop body, in program order.
    pub stages: Vec<u32>,
    /// The execution order of the children: `order[k]` runs `k`-th.
    pub order: Vec<usize>,
    /// Tensors given several buffers (slots) along the loop, with their counts. SBUF tensors are
    /// widened; a PSUM tensor's count is the depth of its ring of banks.
    pub buffers: Vec<(Tensor, u32)>,
}

impl PipelinePlan {
    /// The buffer count of `tensor` (1 when it is not multi-buffered).
    pub fn buffer_count(&self, tensor: Tensor) -> u32 {
        self.buffers
            .iter()
            .find(|(t, _)| *t == tensor)
            .map_or(1, |&(_, n)| n)
    }
}

/// The kind of a dependence between two accesses to the same memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DepKind {
    /// Read after write.
    Flow,
    /// Write after read.
    Anti,
    /// Write after write.
    Output,
}

impl DepKind {
    pub fn name(self) -> &'static str {
        match self {
            DepKind::Flow => "flow (read after write)",
            DepKind::Anti => "anti (write after read)",
            DepKind::Output => "output (write after write)",
        }
    }
}

/// A dependence of the original program that the pipelined schedule reverses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: DepKind,
    /// The tensor both accesses touch.
    pub tensor: Tensor,
    /// The instruction that comes first in the original program.
    pub source: Inst,
    /// The instruction that depends on it.
    pub sink: Inst,
    /// The values of the induction variables of the loops around `source` (outermost first) in the
    /// first violating pair (lexicographically smallest source, then sink).
    pub source_iter: Vec<(Axis, i64)>,
    /// The same for `sink`.
    pub sink_iter: Vec<(Axis, i64)>,
}
