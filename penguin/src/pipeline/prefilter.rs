//! The legality check's fast path: proves, without ISL, that the pipelined schedule keeps every
//! pair of possibly conflicting instances of one tensor in its original order.
//!
//! Times, as in [`crate::pipeline::isl_model`]: an instance of child `c` (of the pipelined loop,
//! in program order) in iteration `i` runs at `[outer, i, c, tail]` originally and at
//! `[outer, i + stage(c), rank(c), tail]` pipelined, where `rank` is the position in `plan.order`.
//! Memory is tagged with the outer ivs, so only instances of one outer iteration can conflict.
//!
//! Two instances of one child keep their order (same shift, same rank, same tail order). Two
//! instances of different children `x` (iteration `i`) and `y` (iteration `i + d`), `x` first in
//! the original program:
//! - `d = 0` (`x` before `y` in program order) keeps its order iff `(s_x, r_x) < (s_y, r_y)`;
//! - `d > 0` keeps it iff `(s_x, r_x) < (s_y + d, r_y)`. That is hardest at the smallest `d` at
//!   which the two may touch one element: `B` for a tensor the plan gives `B` buffers (its slot is
//!   the original iteration mod `B`, so other distances touch other slots), 1 otherwise.
//!
//! Every pair of accesses with at least one write is taken as conflicting, whatever elements they
//! touch and whatever the trip count. So [`compute_order_kept`] is sound (true only when no
//! dependence can be reversed) but not complete: false only sends the tensor to ISL, which decides
//! exactly. It subsumes the plain rule "all accesses in one stage, run in program order".
//!
//! Invariant: reads only the model, the plan and the tensor's access lists; `plan.order` is a
//! permutation of the children (checked by [`crate::pipeline::isl_model::LoopModel::build`]).

use super::isl_model::{LoopModel, TensorAccesses};
use super::plan::PipelinePlan;
use crate::entities::Tensor;

/// Whether every pair of the loop's accesses to `tensor` (with at least one write) keeps its
/// original order under `plan`; see the module doc.
pub fn compute_order_kept(
    model: &LoopModel,
    plan: &PipelinePlan,
    tensor: Tensor,
    acc: &TensorAccesses,
) -> bool {
    // Per child touching the tensor: (child, writes it).
    let mut children: Vec<(usize, bool)> = Vec::new();
    for &k in &acc.insts {
        let m = &model.insts[k];
        let writes = acc.writers.contains(&m.inst);
        match children.iter_mut().find(|(c, _)| *c == m.child) {
            Some(entry) => entry.1 |= writes,
            None => children.push((m.child, writes)),
        }
    }
    if children.len() < 2 {
        return true;
    }
    let mut rank = vec![0usize; plan.order.len()];
    for (r, &c) in plan.order.iter().enumerate() {
        rank[c] = r;
    }
    let time = |c: usize, shift: u64| (u64::from(plan.stages[c]) + shift, rank[c]);
    let distance = u64::from(plan.buffer_count(tensor).max(1));
    children.iter().all(|&(x, wx)| {
        children.iter().all(|&(y, wy)| {
            x == y
                || !(wx || wy)
                || ((x > y || time(x, 0) < time(y, 0)) && time(x, 0) < time(y, distance))
        })
    })
}
