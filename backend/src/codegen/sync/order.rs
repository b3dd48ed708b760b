//! The program order of a kernel's instances ([`crate::codegen::sync`]): every instance's
//! position, each node's last, and each loop's first and last node.
//!
//! Positions are computed, not tabulated: an instance's position is affine in its registers
//! ([`crate::codegen::layout`]), so building the order costs one pass over the loop tree, not a
//! walk of every instance (a loop spread over a stage per statement has about as many
//! iterations as statements, nearly all of their instances predicated off, and the walk was
//! quadratic in its body).
//!
//! Invariant: positions count instances in program order (the loop tree walked at every
//! iteration), running or not, so `pos` is strictly increasing along program order.

use super::instances;
use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{ENode, Emitted, Node};
use crate::codegen::footprints::Instances;
use crate::codegen::layout::{compute_layout, Layout};
use cranelift_entity::SecondaryMap;

/// Every instance's position in program order, and each loop's nodes.
pub(super) struct Order {
    /// Per node, its first position and strides.
    layout: Layout,
    /// Per node, its trip counts (outermost first).
    trips: SecondaryMap<Node, Vec<i64>>,
    /// Per node, the position of its last instance (running or not; `None`: none, which orders
    /// before every position).
    pub(super) last: SecondaryMap<Node, Option<i64>>,
    /// Per loop that runs, its first and last node.
    pub(super) span: SecondaryMap<BirLoop, Option<(Node, Node)>>,
}

impl Order {
    /// The position of instance `lin` of node `i`.
    pub(super) fn pos(&self, i: Node, lin: i64) -> i64 {
        self.layout.place(i, &self.trips[i], lin)
    }
}

pub(super) fn compute_order(em: &Emitted, inst: &Instances) -> Order {
    /// Sets the span of every loop of `tree` that runs and the last position of every node
    /// in one; returns the first and last node of `tree` (the loops that run counted).
    fn spans(em: &Emitted, tree: &[ENode], o: &mut Order) -> Option<(Node, Node)> {
        let hull = |a: Option<(Node, Node)>, b: Option<(Node, Node)>| match (a, b) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        let mut span = None;
        for t in tree {
            match t {
                ENode::Loop(l, body) => {
                    // A loop of no iteration runs nothing: its loops and nodes keep `None`.
                    if em.loops[*l].0 == 0 {
                        continue;
                    }
                    let inner = spans(em, body, o);
                    o.span[*l] = inner;
                    span = hull(span, inner);
                }
                ENode::Inst(i) => {
                    let n = instances(&o.trips[*i]);
                    o.last[*i] = Some(o.pos(*i, n - 1));
                    span = hull(span, Some((*i, *i)));
                }
            }
        }
        span
    }
    let mut o = Order {
        layout: compute_layout(em),
        trips: inst.trips.clone(),
        last: SecondaryMap::new(),
        span: SecondaryMap::new(),
    };
    spans(em, &em.tree, &mut o);
    o
}
