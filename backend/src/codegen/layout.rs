//! The place of every instance of an emitted kernel among all its instances in program order
//! (the loop tree walked at every iteration, running or not), by arithmetic: an instance's place
//! is affine in its registers, the place of its node's instance 0 plus, per loop around it, the
//! register times the instances one iteration of that loop holds. One pass over the loop tree
//! ([`compute_layout`]) gives every node's first place and strides, so nothing enumerates the
//! instances: a loop spread over many stages, whose instances are mostly predicated off, costs
//! its nodes, not its iterations times its nodes. Used by the synchronisation's program order
//! ([`crate::codegen::sync`]) and by the wait pruning's ([`crate::codegen::hb`]).
//!
//! Invariant: [`Layout::place`] is strictly increasing along program order, and equals the
//! number of instances before the given one in a walk of the loop tree at every iteration.

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{ENode, Emitted};
use crate::codegen::entities::Node;
use crate::codegen::footprints::decode;
use cranelift_entity::SecondaryMap;
use runtime_sim::isa::MAX_REGS;

/// Per node, the place of its instance 0 and, per loop around it (outermost first), the
/// instances one iteration of that loop holds.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub at: SecondaryMap<Node, (i64, Vec<i64>)>,
}

impl Layout {
    /// The place of instance `lin` of node `i`, whose loops have trip counts `trips`.
    pub fn place(&self, i: Node, trips: &[i64], lin: i64) -> i64 {
        let (first, strides) = &self.at[i];
        let mut regs = [0i64; MAX_REGS];
        decode(trips, lin, &mut regs);
        first + (strides.iter().zip(&regs)).map(|(s, r)| s * r).sum::<i64>()
    }
}

/// The layout of the instances of `em` (module doc).
pub fn compute_layout(em: &Emitted) -> Layout {
    compute_tree_layout(&em.loops, &em.tree)
}

/// [`compute_layout`] of the loop tree `tree` whose loops have `(trip, depth)` `loops`.
fn compute_tree_layout(loops: &SecondaryMap<BirLoop, (u64, usize)>, tree: &[ENode]) -> Layout {
    let mut at = SecondaryMap::new();
    lay_out(loops, tree, 0, &mut Vec::new(), &mut at);
    Layout { at }
}

/// Sets, for every node of `tree` (whose first instance is at place `start`, inside loops that
/// move it by `strides` per iteration), its place and strides in `at`; returns the instances
/// one execution of `tree` holds.
fn lay_out(
    loops: &SecondaryMap<BirLoop, (u64, usize)>,
    tree: &[ENode],
    start: i64,
    strides: &mut Vec<i64>,
    at: &mut SecondaryMap<Node, (i64, Vec<i64>)>,
) -> i64 {
    let mut off = start;
    for t in tree {
        match t {
            ENode::Loop(l, body) => {
                let trip = loops[*l].0 as i64;
                strides.push(0);
                let body_size = lay_out(loops, body, off, strides, at);
                strides.pop();
                // (The body's nodes were laid out before its size was known: set their stride
                // for this loop now.)
                set_stride(body, strides.len(), body_size, at);
                off += trip * body_size;
            }
            ENode::Inst(i) => {
                at[*i] = (off, strides.clone());
                off += 1;
            }
        }
    }
    off - start
}

/// Sets the stride at `depth` of every node of `tree` to `stride`.
fn set_stride(
    tree: &[ENode],
    depth: usize,
    stride: i64,
    at: &mut SecondaryMap<Node, (i64, Vec<i64>)>,
) {
    for t in tree {
        match t {
            ENode::Loop(_, body) => set_stride(body, depth, stride, at),
            ENode::Inst(i) => at[*i].1[depth] = stride,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;

    /// The places of every instance by walking the tree at every iteration (what
    /// `sync::order` did before it used the layout), and the instances it stepped over.
    fn walked(
        loops: &SecondaryMap<BirLoop, (u64, usize)>,
        tree: &[ENode],
        trips: &mut Vec<i64>,
        regs: &mut Vec<i64>,
        next: &mut i64,
        out: &mut Vec<(Node, Vec<i64>, i64)>,
    ) {
        for t in tree {
            match t {
                ENode::Loop(l, body) => {
                    trips.push(loops[*l].0 as i64);
                    for it in 0..loops[*l].0 as i64 {
                        regs.push(it);
                        walked(loops, body, trips, regs, next, out);
                        regs.pop();
                    }
                    trips.pop();
                }
                ENode::Inst(i) => {
                    let lin = (regs.iter().zip(trips.iter())).fold(0, |acc, (r, t)| acc * t + r);
                    out.push((*i, trips.clone(), lin));
                    *next += 1;
                }
            }
        }
    }

    /// A loop nest: `a`; loop(3) { b; loop(4) { c; d }; loop(0) { e }; f }; loop(1033) { 40
    /// nodes }; g (a staged loop's shape: many iterations around a long body).
    fn nest() -> (SecondaryMap<BirLoop, (u64, usize)>, Vec<ENode>) {
        let mut loops = SecondaryMap::new();
        let n = |k: usize| ENode::Inst(Node::new(k));
        let l = |k: usize| BirLoop::new(k);
        loops[l(0)] = (3, 0);
        loops[l(1)] = (4, 1);
        loops[l(2)] = (0, 1);
        loops[l(3)] = (1033, 0);
        let long: Vec<ENode> = (0..40).map(|k| n(7 + k)).collect();
        let tree = vec![
            n(0),
            ENode::Loop(
                l(0),
                vec![
                    n(1),
                    ENode::Loop(l(1), vec![n(2), n(3)]),
                    ENode::Loop(l(2), vec![n(4)]),
                    n(5),
                ],
            ),
            ENode::Loop(l(3), long),
            n(6),
        ];
        (loops, tree)
    }

    #[test]
    fn every_place_is_the_count_of_the_instances_before_it() {
        let (loops, tree) = nest();
        let layout = compute_tree_layout(&loops, &tree);
        let mut out = Vec::new();
        walked(
            &loops,
            &tree,
            &mut Vec::new(),
            &mut Vec::new(),
            &mut 0,
            &mut out,
        );
        // The walk stepped over every instance (41,352); the layout over the 47 nodes.
        assert_eq!(out.len(), 1 + 3 * (1 + 4 * 2 + 1) + 1033 * 40 + 1);
        for (k, (i, trips, lin)) in out.iter().enumerate() {
            assert_eq!(
                layout.place(*i, trips, *lin),
                k as i64,
                "{i:?} instance {lin}"
            );
        }
    }
}
