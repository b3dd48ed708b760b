//! The program order of a kernel's instances ([`crate::codegen::sync`]): every instance's
//! position, each node's last, and each loop's first and last node.
//!
//! Invariant: positions count instances in program order (the loop tree walked at every
//! iteration), running or not, so `pos` is strictly increasing along program order.

use super::instances;
use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{ENode, Emitted, Node};
use crate::codegen::footprints::Instances;
use cranelift_entity::SecondaryMap;
use runtime_sim::isa::MAX_REGS;

/// Every instance's position in program order, and each loop's nodes.
pub(super) struct Order {
    /// Per node, where its instances' positions start in `pos`.
    pub(super) base: SecondaryMap<Node, usize>,
    pub(super) pos: Vec<i64>,
    /// Per node, the position of its last instance (running or not; `None`: none, which orders
    /// before every position).
    pub(super) last: SecondaryMap<Node, Option<i64>>,
    /// Per loop that runs, its first and last node.
    pub(super) span: SecondaryMap<BirLoop, Option<(Node, Node)>>,
}

impl Order {
    pub(super) fn pos(&self, i: Node, lin: i64) -> i64 {
        self.pos[self.base[i] + lin as usize]
    }
}

pub(super) fn compute_order(em: &Emitted, inst: &Instances) -> Order {
    fn walk(
        em: &Emitted,
        tree: &[ENode],
        regs: &mut [i64; MAX_REGS],
        next: &mut i64,
        o: &mut Order,
    ) -> Option<(Node, Node)> {
        let hull = |a: Option<(Node, Node)>, b: Option<(Node, Node)>| match (a, b) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        let mut span = None;
        for t in tree {
            match t {
                ENode::Loop(l, body) => {
                    let (trip, depth) = em.loops[*l];
                    let mut inner = None;
                    for it in 0..trip as i64 {
                        regs[depth] = it;
                        inner = walk(em, body, regs, next, o);
                    }
                    o.span[*l] = inner;
                    span = hull(span, inner);
                }
                ENode::Inst(i) => {
                    let lin = em.instance_of(*i, regs);
                    o.pos[o.base[*i] + lin as usize] = *next;
                    o.last[*i] = Some(*next);
                    *next += 1;
                    span = hull(span, Some((*i, *i)));
                }
            }
        }
        span
    }
    let mut base = SecondaryMap::new();
    let mut total = 0usize;
    for (i, t) in inst.trips.iter() {
        base[i] = total;
        total += instances(t) as usize;
    }
    let mut o = Order {
        base,
        // (The walk writes every entry.)
        pos: vec![0; total],
        last: SecondaryMap::new(),
        span: SecondaryMap::new(),
    };
    let mut regs = [0i64; MAX_REGS];
    walk(em, &em.tree, &mut regs, &mut 0, &mut o);
    o
}
