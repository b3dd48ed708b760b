//! The instance table of an emitted kernel: which instances of each node run, and where each of
//! their footprints starts, evaluated once ([`compute_instances`]).
//!
//! The synchronisation analysis ([`crate::codegen::sync`]) and the wait pruning ([`crate::codegen::hb`]) both ask,
//! pair after pair, whether an instance of one node touches what an instance of another does.
//! Each question used to decode both instances' registers and evaluate their guards and their
//! footprints' start expressions again. Here every running instance and every footprint start is
//! computed once per kernel, so a question is a few comparisons.
//!
//! Invariants: instances are numbered per node in linear iteration order over the node's loops
//! (as [`decode`] reads them); `running[i]` lists node `i`'s instances whose guard
//! holds, in increasing order; the starts are tabulated only when the kernel has at most
//! [`MAX_TABULATED`] footprint instances and every start fits an `i64`, and are otherwise
//! evaluated at each question (the same answers).

use crate::codegen::emit::{Emitted, Foot, Node, NodeData, Space};
use cranelift_entity::{EntityRef, SecondaryMap};
use runtime_sim::isa::MAX_REGS;

/// The trip counts of the loops enclosing `n`, outermost first.
pub fn trips(em: &Emitted, n: &NodeData) -> Vec<i64> {
    n.loops.iter().map(|&l| em.loops[l].0 as i64).collect()
}

/// The instances of a nest with trip counts `t`.
pub fn instances(t: &[i64]) -> i64 {
    t.iter().product()
}

/// The registers of instance `lin` of a nest with trip counts `t`.
pub fn decode(t: &[i64], mut lin: i64, regs: &mut [i64; MAX_REGS]) {
    for d in (0..t.len()).rev() {
        regs[d] = lin % t[d];
        lin /= t[d];
    }
}

/// Whether `n`'s guard holds at `regs`.
pub fn on(n: &NodeData, regs: &[i64; MAX_REGS]) -> bool {
    n.inst
        .pred
        .iter()
        .all(|c| c.op.holds(c.lhs.eval(regs), c.rhs.eval(regs)))
}

/// The most footprint instances tabulated (each holds two `i64` starts).
pub const MAX_TABULATED: usize = 1 << 21;

/// Every node's running instances and footprint starts.
#[derive(Debug)]
pub struct Instances {
    /// Per node, its trip counts (outermost first).
    pub trips: SecondaryMap<Node, Vec<i64>>,
    /// Per node, its instances that run, in increasing order.
    pub running: SecondaryMap<Node, Vec<i64>>,
    /// Per node (by [`Node::index`]), where its instance 0's first footprint is in `starts`, and
    /// its number of footprints (empty when not tabulated).
    first: Vec<(usize, usize)>,
    /// `(row start, column start)` of each footprint of each instance, node by node, instance by
    /// instance (tabulated only when every start fits an `i64`: half the memory, and the table
    /// is read at random).
    starts: Vec<(i64, i64)>,
}

/// Tabulates the running instances and footprint starts of every node of `em`.
pub fn compute_instances(em: &Emitted) -> Instances {
    let trips: SecondaryMap<Node, Vec<i64>> =
        em.nodes.iter().map(|(i, n)| (i, trips(em, n))).collect();
    let mut regs = [0i64; MAX_REGS];
    let running = (em.nodes.iter())
        .map(|(i, n)| {
            let t = &trips[i];
            let running = (0..instances(t))
                .filter(|&u| {
                    decode(t, u, &mut regs);
                    on(n, &regs)
                })
                .collect();
            (i, running)
        })
        .collect();
    let total: usize = (em.nodes.iter())
        .map(|(i, n)| n.foot.len().saturating_mul(instances(&trips[i]) as usize))
        .fold(0usize, usize::saturating_add);
    let (mut first, mut starts) = (Vec::new(), Vec::new());
    if total <= MAX_TABULATED {
        starts.reserve(total);
        let mut fits = true;
        for (i, n) in em.nodes.iter() {
            let t = &trips[i];
            first.push((starts.len(), n.foot.len()));
            for u in 0..instances(t) {
                decode(t, u, &mut regs);
                starts.extend(n.foot.iter().map(|f| {
                    let (r, c) = (f.r0.eval(&regs), f.c0.eval(&regs));
                    fits &= i64::try_from(r).is_ok() && i64::try_from(c).is_ok();
                    (r as i64, c as i64)
                }));
            }
        }
        if !fits {
            (first, starts) = (Vec::new(), Vec::new());
        }
    }
    Instances {
        trips,
        running,
        first,
        starts,
    }
}

impl Instances {
    /// The starts of footprint `f` of instance `u` of node `i`.
    #[inline]
    fn start(&self, em: &Emitted, i: Node, u: i64, f: usize) -> (i128, i128) {
        match self.first.get(i.index()) {
            Some(&(at, feet)) => {
                let (r, c) = self.starts[at + u as usize * feet + f];
                (r.into(), c.into())
            }
            None => self.evaluate_start(em, i, u, f),
        }
    }

    /// [`Instances::start`] of a kernel whose starts are not tabulated.
    #[cold]
    fn evaluate_start(&self, em: &Emitted, i: Node, u: i64, f: usize) -> (i128, i128) {
        let foot = &em.nodes[i].foot[f];
        let mut regs = [0i64; MAX_REGS];
        decode(&self.trips[i], u, &mut regs);
        (foot.r0.eval(&regs), foot.c0.eval(&regs))
    }

    /// Whether instance `u` of node `xi` and instance `v` of node `yi` touch overlapping bytes,
    /// one of them writing. `feet` is [`meeting_feet`] of the two nodes.
    pub fn conflict(
        &self,
        em: &Emitted,
        feet: &[FootPair],
        (xi, u): (Node, i64),
        (yi, v): (Node, i64),
    ) -> bool {
        feet.iter().any(|p| {
            p.always || {
                let (ar, ac) = self.start(em, xi, u, p.fx);
                let (br, bc) = self.start(em, yi, v, p.fy);
                ar < br + p.y_rows && br < ar + p.x_rows && ac < bc + p.y_cols && bc < ac + p.x_cols
            }
        })
    }
}

/// A pair of footprints of two nodes that can meet at some instances ([`meeting_feet`]), with
/// what the test at each pair of instances reads.
#[derive(Clone, Copy, Debug)]
pub struct FootPair {
    /// The footprints, by index in each node's.
    pub fx: usize,
    pub fy: usize,
    /// Whether they meet at every instance: two HBM tensors (or two scratch tensors of one
    /// arena, whose element ranges overlap) have no common coordinates, so meeting in their
    /// regions is meeting.
    pub always: bool,
    /// The rectangles' extents.
    x_rows: i128,
    x_cols: i128,
    y_rows: i128,
    y_cols: i128,
}

/// The pairs of footprints of `x` and `y` that can meet at some instances: one memory, one of
/// them writing, and for two scratch tensors of one arena, overlapping element ranges. Decided
/// once per pair of nodes.
pub fn meeting_feet(x: &NodeData, y: &NodeData) -> Vec<FootPair> {
    let mut out = Vec::new();
    for (fx, a) in x.foot.iter().enumerate() {
        for (fy, b) in y.foot.iter().enumerate() {
            if may_meet(a, b) {
                out.push(FootPair {
                    fx,
                    fy,
                    always: matches!(a.space, Space::Hbm(_)) && a.tensor != b.tensor,
                    x_rows: a.nr as i128,
                    x_cols: a.nc as i128,
                    y_rows: b.nr as i128,
                    y_cols: b.nc as i128,
                });
            }
        }
    }
    out
}

/// Whether two footprints can meet at all: one memory, one of them writing (and for two scratch
/// tensors of one arena, whose coordinates are their own, whether their element ranges overlap).
fn may_meet(a: &Foot, b: &Foot) -> bool {
    a.space == b.space
        && (a.write || b.write)
        && match a.space {
            Space::Hbm(_) if a.tensor != b.tensor => {
                a.region.0 < b.region.1 && b.region.0 < a.region.1
            }
            _ => true,
        }
}
