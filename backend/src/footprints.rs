//! The instance table of an emitted kernel: which instances of each node run, and where each of
//! their footprints starts, evaluated once ([`compute_instances`]).
//!
//! The synchronisation analysis ([`crate::sync`]) and the wait pruning ([`crate::hb`]) both ask,
//! pair after pair, whether an instance of one node touches what an instance of another does.
//! Each question used to decode both instances' registers and evaluate their guards and their
//! footprints' start expressions again. Here every running instance and every footprint start is
//! computed once per kernel, so a question is a few comparisons.
//!
//! Invariants: instances are numbered per node in linear iteration order over the node's loops
//! (as [`decode`] reads them); `running[i]` lists node `i`'s instances whose guard
//! holds, in increasing order; the starts are tabulated only when the kernel has at most
//! [`MAX_TABULATED`] footprint instances, and are otherwise evaluated at each question (the
//! same answers).

use crate::emit::{Emitted, Foot, Node, Space};
use runtime_sim::isa::MAX_REGS;

/// The trip counts of the loops enclosing `n`, outermost first.
pub fn trips(em: &Emitted, n: &Node) -> Vec<i64> {
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
pub fn on(n: &Node, regs: &[i64; MAX_REGS]) -> bool {
    n.inst
        .pred
        .iter()
        .all(|c| c.op.holds(c.lhs.eval(regs), c.rhs.eval(regs)))
}

/// The most footprint instances tabulated (each holds two `i128` starts).
pub const MAX_TABULATED: usize = 1 << 21;

/// Every node's running instances and footprint starts.
#[derive(Debug)]
pub struct Instances {
    /// Per node, its trip counts (outermost first).
    pub trips: Vec<Vec<i64>>,
    /// Per node, its instances that run, in increasing order.
    pub running: Vec<Vec<i64>>,
    /// Per node, where its instance 0's first footprint is in `starts` (empty when not tabulated).
    first: Vec<usize>,
    /// `(row start, column start)` of each footprint of each instance, node by node, instance by
    /// instance.
    starts: Vec<(i128, i128)>,
}

/// Tabulates the running instances and footprint starts of every node of `em`.
pub fn compute_instances(em: &Emitted) -> Instances {
    let trips: Vec<Vec<i64>> = em.nodes.iter().map(|n| trips(em, n)).collect();
    let mut regs = [0i64; MAX_REGS];
    let running = (em.nodes.iter().zip(&trips))
        .map(|(n, t)| {
            (0..instances(t))
                .filter(|&u| {
                    decode(t, u, &mut regs);
                    on(n, &regs)
                })
                .collect()
        })
        .collect();
    let total: usize = (em.nodes.iter().zip(&trips))
        .map(|(n, t)| n.foot.len().saturating_mul(instances(t) as usize))
        .fold(0usize, usize::saturating_add);
    let (mut first, mut starts) = (Vec::new(), Vec::new());
    if total <= MAX_TABULATED {
        starts.reserve(total);
        for (n, t) in em.nodes.iter().zip(&trips) {
            first.push(starts.len());
            for u in 0..instances(t) {
                decode(t, u, &mut regs);
                starts.extend(n.foot.iter().map(|f| (f.r0.eval(&regs), f.c0.eval(&regs))));
            }
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
    fn start(&self, em: &Emitted, i: usize, u: i64, f: usize) -> (i128, i128) {
        let n = &em.nodes[i];
        match self.first.get(i) {
            Some(&at) => self.starts[at + u as usize * n.foot.len() + f],
            None => {
                let mut regs = [0i64; MAX_REGS];
                decode(&self.trips[i], u, &mut regs);
                (n.foot[f].r0.eval(&regs), n.foot[f].c0.eval(&regs))
            }
        }
    }

    /// Whether instance `u` of node `xi` and instance `v` of node `yi` touch overlapping bytes,
    /// one of them writing. `feet` is [`meeting_feet`] of the two nodes.
    pub fn conflict(
        &self,
        em: &Emitted,
        feet: &[(usize, usize)],
        (xi, u): (usize, i64),
        (yi, v): (usize, i64),
    ) -> bool {
        let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
        feet.iter().any(|&(fx, fy)| {
            let (ar, ac) = self.start(em, xi, u, fx);
            let (br, bc) = self.start(em, yi, v, fy);
            rects_meet(&x.foot[fx], (ar, ac), &y.foot[fy], (br, bc))
        })
    }
}

/// The pairs of footprints of `x` and `y` (by index) that can meet at some instances: one
/// memory, one of them writing, and for two scratch tensors of one arena, overlapping element
/// ranges. Decided once per pair of nodes.
pub fn meeting_feet(x: &Node, y: &Node) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (fx, a) in x.foot.iter().enumerate() {
        for (fy, b) in y.foot.iter().enumerate() {
            if may_meet(a, b) {
                out.push((fx, fy));
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

/// Whether the rectangles of `a` and `b`, starting where given, overlap (two scratch tensors
/// of one arena always do: [`may_meet`] decided them).
fn rects_meet(a: &Foot, (ar, ac): (i128, i128), b: &Foot, (br, bc): (i128, i128)) -> bool {
    if matches!(a.space, Space::Hbm(_)) && a.tensor != b.tensor {
        return true;
    }
    ar < br + b.nr as i128
        && br < ar + a.nr as i128
        && ac < bc + b.nc as i128
        && bc < ac + a.nc as i128
}
