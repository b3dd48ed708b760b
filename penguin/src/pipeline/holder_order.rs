//! The order of the body of a loop that holds a loop, when the user gave none.
//!
//! A pipelined loop whose body holds another loop has no modulo schedule in the backend: each
//! engine runs that body's instructions in the order of its children. In program order an
//! extended iteration then runs stage 0's work (the youngest original iteration) before the
//! later stages' (older ones), so the older iterations' work that is long ready waits on each
//! engine behind the younger one's chain (attention's `pe` transposes the probabilities of
//! iteration `i - 2` only after the product of `i` and the exponentials of `i - 1`, which wait
//! for each other). [`compute_holder_order`] puts the later stages first, program order kept
//! within a stage: each engine then serves the oldest iteration first, as a modulo schedule
//! would. The user's stages are kept: only the place of each child in the extended body moves.
//! A child that only moves data (loads, stores) keeps its place: where a transfer stands in
//! `sp`'s in-order stream is for the passes that move transfers and measure it (`prefetch`,
//! `retime`, `delay_stores`, the carries); a store of an older iteration moved to the front
//! would hold the loads behind it until its data is ready (measured: 55% slower on a nest whose
//! store followed its inner loop).
//!
//! Invariants: the order is a permutation of the children that keeps program order within each
//! stage (what an `execution_order` may state); it is proposed only for a loop that holds a loop
//! and whose stages are not all one, and only when the user gave no `execution_order`. The
//! pipeliner adopts it only when its legality check passes on it (else program order stays), and
//! only on the paths that ask for it (`PipelineOptions::order_holders`: `default` and `auto`,
//! not `annotated`, which keeps the user's order as written).

use std::collections::HashSet;

use crate::ir::{Function, Op, StmtKind};
use crate::Axis;

/// The instructions of statement `s` (none for a loop: its own body is its business).
fn stmt_insts(func: &Function, s: crate::Stmt) -> &[crate::Inst] {
    match &func.stmts[s].kind {
        StmtKind::Insts(is) => is,
        StmtKind::Loop(_) => &[],
    }
}

/// The children of loop `axis` in the order they should run (program indices): each inner loop
/// ahead of the compute statements of earlier stages just before it, when that differs from
/// program order; else `None`.
pub fn compute_holder_order(func: &Function, axis: Axis, stages: &[u32]) -> Option<Vec<usize>> {
    let body = &func.axes[axis].body;
    if !body.iter().any(|&s| match func.stmts[s].kind {
        StmtKind::Loop(a) => func.axes[a].attrs.pipelined.is_some(),
        StmtKind::Insts(_) => false,
    }) {
        return None;
    }
    // Transfers and the producers of the tiles they store keep their places; the other
    // children fill the remaining places, later stages first.
    let stored: HashSet<crate::Tensor> = (body.iter())
        .flat_map(|&c| stmt_insts(func, c))
        .filter(|&&i| matches!(func.insts[i].op, Op::Store))
        .flat_map(|&i| func.insts[i].srcs.iter().map(|o| o.tensor))
        .collect();
    let fixed: Vec<bool> = (body.iter())
        .map(|&c| {
            let insts = stmt_insts(func, c);
            matches!(func.stmts[c].kind, StmtKind::Insts(_))
                && (insts
                    .iter()
                    .all(|&i| matches!(func.insts[i].op, Op::Load | Op::Store))
                    || insts
                        .iter()
                        .any(|&i| stored.contains(&func.insts[i].dst.tensor)))
        })
        .collect();
    let mut free: Vec<usize> = (0..body.len()).filter(|&k| !fixed[k]).collect();
    free.sort_by_key(|&k| (std::cmp::Reverse(stages[k]), k));
    let mut free = free.into_iter();
    let order: Vec<usize> = (0..body.len())
        .map(|k| {
            if fixed[k] {
                k
            } else {
                free.next()
                    .expect("as many free places as children that may move")
            }
        })
        .collect();
    (order.iter().enumerate().any(|(k, &c)| k != c)).then_some(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function;

    const HOLDER: &str = "kernel k(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor x: sbuf f32[128, 64] local
  tensor z: sbuf f32[128, 64] local
  tensor y: sbuf f32[128, 64] local
  loop i in 0..2 affine {
    stmt {
      x[0 +: 128, 0 +: 64] = load.dma a[128*i +: 128, 0 +: 64]
    }
    stmt {
      z[0 +: 128, 0 +: 64] = tensor_scalar.dve(op=multiply, imm=3.0, reverse=false) x[0 +: 128, 0 +: 64]
    }
    loop j in 0..3 affine num_stages=2 pipelined(stages=2, trip=2) {
      stmt {
        y[0 +: 128, 0 +: 64] = tensor_scalar.dve(op=multiply, imm=2.0, reverse=false) z[0 +: 128, 0 +: 64]
      }
    }
    stmt {
      c[128*i +: 128, 0 +: 64] = store.dma y[0 +: 128, 0 +: 64]
    }
  }
}
";

    fn axis(func: &Function, iv: &str) -> Axis {
        func.axes
            .keys()
            .find(|&a| func.display_iv(a) == iv)
            .expect("the test kernel has the loop")
    }

    #[test]
    fn later_stages_go_first_and_transfers_keep_their_places() {
        let func = parse_function(HOLDER).expect("the test kernel parses");
        let i = axis(&func, "i");
        assert_eq!(
            compute_holder_order(&func, i, &[0, 0, 1, 1]),
            Some(vec![0, 2, 1, 3])
        );
        assert_eq!(
            compute_holder_order(&func, i, &[0, 0, 1, 2]),
            Some(vec![0, 2, 1, 3])
        );
    }

    #[test]
    fn one_stage_for_the_compute_or_no_inner_loop_keeps_program_order() {
        let func = parse_function(HOLDER).expect("the test kernel parses");
        let i = axis(&func, "i");
        assert_eq!(compute_holder_order(&func, i, &[0, 1, 1, 1]), None);
        assert_eq!(compute_holder_order(&func, i, &[0, 0, 0, 1]), None);
        assert_eq!(compute_holder_order(&func, axis(&func, "j"), &[1]), None);
    }

    #[test]
    fn a_loop_around_an_inner_loop_the_pipeliner_did_not_extend_keeps_program_order() {
        let text = HOLDER.replace(" num_stages=2 pipelined(stages=2, trip=2)", "");
        let func = parse_function(&text).expect("the test kernel parses");
        assert_eq!(
            compute_holder_order(&func, axis(&func, "i"), &[0, 0, 1, 1]),
            None
        );
    }
}
