//! The instance table of an emitted kernel: which instances of each node run, and where each of
//! their footprints starts, evaluated once ([`compute_instances`]).
//!
//! The synchronisation analysis ([`crate::codegen::sync`]) and the wait pruning ([`crate::codegen::hb`]) both ask,
//! pair after pair, whether an instance of one node touches what an instance of another does.
//! Each question used to decode both instances' registers and evaluate their guards and their
//! footprints' start expressions again. Here every running instance and every footprint start is
//! computed once per kernel, so a question is a few comparisons.
//!
//! Both are computed in the time of the instances that run, not of every instance: a loop spread
//! over many stages runs each statement in few of its iterations. The guard of a node is solved
//! for its innermost register, per iteration of the loops around it ([`running_instances`]: the
//! comparisons are affine, so the iterations where it holds are an interval), and the starts
//! are tabulated from the node's first running instance to its last.
//!
//! Invariants: instances are numbered per node in linear iteration order over the node's loops
//! (as [`decode`] reads them); `running[i]` lists node `i`'s instances whose guard
//! holds, in increasing order; the starts are tabulated only when the kernel has at most
//! [`MAX_TABULATED`] footprint instances between its nodes' first and last running ones and
//! every start fits an `i64`, and are otherwise evaluated at each question (the same answers).

use crate::codegen::emit::{exact_meet, Emitted, Exact, Foot, Node, NodeData, Space};
use cranelift_entity::{EntityRef, SecondaryMap};
use runtime_sim::isa::{Cmp, CmpOp, Term, MAX_REGS};

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

/// The instances of node `n` (trip counts `t`) whose guard holds, in increasing order. The
/// guard is solved for the innermost register, once per iteration of the loops around it
/// ([`solve_inner`]); a guard that does not solve (a `!=`, or a ring slot of the innermost
/// register) is evaluated at every instance.
pub fn running_instances(n: &NodeData, t: &[i64]) -> Vec<i64> {
    running_where(&n.inst.pred, t)
}

/// Whether every comparison of `pred` holds at `regs`.
fn holds(pred: &[Cmp], regs: &[i64; MAX_REGS]) -> bool {
    pred.iter()
        .all(|c| c.op.holds(c.lhs.eval(regs), c.rhs.eval(regs)))
}

/// The instances of a nest with trip counts `t` where `pred` holds, evaluated at each.
fn running_by_evaluation(pred: &[Cmp], t: &[i64]) -> Vec<i64> {
    let mut regs = [0i64; MAX_REGS];
    (0..instances(t))
        .filter(|&u| {
            decode(t, u, &mut regs);
            holds(pred, &regs)
        })
        .collect()
}

/// [`running_instances`] of a guard `pred`.
fn running_where(pred: &[Cmp], t: &[i64]) -> Vec<i64> {
    let mut regs = [0i64; MAX_REGS];
    let Some(d) = t.len().checked_sub(1) else {
        return running_by_evaluation(pred, t);
    };
    let inner = t[d];
    let Some(slopes) = pred.iter().map(|c| slope(c, d)).collect::<Option<Vec<_>>>() else {
        return running_by_evaluation(pred, t);
    };
    let mut out = Vec::new();
    for outer in 0..instances(&t[..d]) {
        decode(&t[..d], outer, &mut regs);
        regs[d] = 0;
        let (mut lo, mut hi) = (0i128, inner as i128);
        for (c, &a) in pred.iter().zip(&slopes) {
            let b = c.lhs.eval(&regs) - c.rhs.eval(&regs);
            let (l, h) = solve_inner(c.op, a, b, inner);
            (lo, hi) = (lo.max(l), hi.min(h));
        }
        let base = outer * inner;
        out.extend((lo as i64..hi.max(lo) as i64).map(|r| base + r));
    }
    out
}

/// The coefficient of register `d` in `c.lhs - c.rhs`, when the difference is affine in it (no
/// ring slot of it) and `c` is not a `!=`.
fn slope(c: &Cmp, d: usize) -> Option<i128> {
    if c.op == CmpOp::Ne {
        return None;
    }
    let mut a = 0i128;
    for (e, sign) in [(&c.lhs, 1i128), (&c.rhs, -1)] {
        for term in &e.terms {
            match *term {
                Term::Lin { coeff, reg } if reg.0 as usize == d => a += sign * coeff as i128,
                Term::Mod { reg, .. } if reg.0 as usize == d => return None,
                _ => {}
            }
        }
    }
    Some(a)
}

/// The registers `r` in `[0, trip)` where `a * r + b op 0` holds, as `lo..hi` (empty when
/// `hi <= lo`).
fn solve_inner(op: CmpOp, a: i128, b: i128, trip: i64) -> (i128, i128) {
    let all = (0, trip as i128);
    let none = (0, 0);
    // As `A * r + B < 0`.
    let (a, b) = match op {
        CmpOp::Lt => (a, b),
        CmpOp::Le => (a, b - 1),
        CmpOp::Gt => (-a, -b),
        CmpOp::Ge => (-a, -b - 1),
        CmpOp::Eq => {
            return match a {
                0 if b == 0 => all,
                0 => none,
                _ if b % a == 0 => (-b / a, -b / a + 1),
                _ => none,
            }
        }
        CmpOp::Ne => unreachable!("invariant: `slope` refuses a `!=`"),
    };
    match a {
        0 if b < 0 => all,
        0 => none,
        // r < -B / A: r < ceil(-B / A).
        a if a > 0 => (0, (-b).div_euclid(a) + i128::from((-b).rem_euclid(a) != 0)),
        // r > B / |A|: r >= floor(B / |A|) + 1.
        a => (b.div_euclid(-a) + 1, trip as i128),
    }
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
    /// Per node (by [`Node::index`]), where the first footprint of its first running instance
    /// is in `starts`, its number of footprints, and the instances tabulated (its first running
    /// one to its last; empty when not tabulated).
    first: Vec<(usize, usize, std::ops::Range<i64>)>,
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
    let running: SecondaryMap<Node, Vec<i64>> = (em.nodes.iter())
        .map(|(i, n)| (i, running_instances(n, &trips[i])))
        .collect();
    let span = |i: Node| match (running[i].first(), running[i].last()) {
        (Some(&a), Some(&b)) => a..b + 1,
        _ => 0..0,
    };
    let total: usize = (em.nodes.iter())
        .map(|(i, n)| n.foot.len().saturating_mul(span(i).count()))
        .fold(0usize, usize::saturating_add);
    let (mut first, mut starts) = (Vec::new(), Vec::new());
    if total <= MAX_TABULATED {
        starts.reserve(total);
        let mut fits = true;
        for (i, n) in em.nodes.iter() {
            let t = &trips[i];
            first.push((starts.len(), n.foot.len(), span(i)));
            for u in span(i) {
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
            Some((at, feet, span)) if span.contains(&u) => {
                let (r, c) = self.starts[at + (u - span.start) as usize * feet + f];
                (r.into(), c.into())
            }
            _ => self.evaluate_start(em, i, u, f),
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
                ar < br + p.y_rows
                    && br < ar + p.x_rows
                    && ac < bc + p.y_cols
                    && bc < ac + p.x_cols
                    && (!p.shaped || {
                        let (a, b) = (&em.nodes[xi].foot[p.fx], &em.nodes[yi].foot[p.fy]);
                        exact_meet((a, ac), (b, bc), |e, on_x| {
                            let (n, w) = if on_x { (xi, u) } else { (yi, v) };
                            let mut regs = [0i64; MAX_REGS];
                            decode(&self.trips[n], w, &mut regs);
                            e.eval(&regs)
                        })
                    })
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
    /// Whether either footprint touches less than its rectangle ([`Foot::exact`] strided):
    /// overlapping rectangles are then tested byte by byte ([`exact_meet`]).
    shaped: bool,
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
                    shaped: strided(a) || strided(b),
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

/// Whether a footprint touches less than its rectangle: strided columns of a tile, or an HBM
/// pattern with fewer elements than its rectangle.
pub fn strided(f: &Foot) -> bool {
    matches!(
        f.exact,
        Some(Exact::Cols(_)) | Some(Exact::Flat { sparse: true, .. })
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use runtime_sim::isa::{Expr, Reg};

    fn lin(terms: &[(i64, u8)], constant: i64) -> Expr {
        Expr {
            terms: (terms.iter())
                .map(|&(coeff, r)| Term::Lin { coeff, reg: Reg(r) })
                .collect(),
            constant,
        }
    }

    /// The guards solved per innermost register run exactly where evaluating them at every
    /// instance does: every operator, slopes of both signs and none, thresholds inside and
    /// outside the loop, on nests of one to three loops (a pseudo-random sweep).
    #[test]
    fn solved_guards_run_where_evaluated_ones_do() {
        let ops = [
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
            CmpOp::Eq,
            CmpOp::Ne,
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as i64
        };
        for _ in 0..2000 {
            let depth = 1 + next(3) as usize;
            let t: Vec<i64> = (0..depth).map(|_| 1 + next(9)).collect();
            let pred: Vec<Cmp> = (0..1 + next(3))
                .map(|_| {
                    let mut terms: Vec<(i64, u8)> = Vec::new();
                    for r in 0..depth as u8 {
                        if next(2) == 0 {
                            terms.push((next(7) - 3, r));
                        }
                    }
                    let mut lhs = lin(&terms, next(5) - 2);
                    if next(4) == 0 {
                        lhs.terms.push(Term::Mod {
                            coeff: 1,
                            reg: Reg(next(depth as u64) as u8),
                            offset: next(3),
                            modulus: 1 + next(3),
                        });
                    }
                    Cmp {
                        lhs,
                        op: ops[next(6) as usize],
                        rhs: lin(&[], next(13) - 3),
                    }
                })
                .collect();
            assert_eq!(
                running_where(&pred, &t),
                running_by_evaluation(&pred, &t),
                "trips {t:?}, guard {pred:?}"
            );
        }
    }

    /// A stage of a loop spread over many: the interval of its iterations, solved once.
    #[test]
    fn a_stage_runs_its_interval() {
        let pred = vec![
            Cmp {
                lhs: lin(&[(1, 0)], 0),
                op: CmpOp::Ge,
                rhs: lin(&[], 500),
            },
            Cmp {
                lhs: lin(&[(1, 0)], 0),
                op: CmpOp::Lt,
                rhs: lin(&[], 508),
            },
        ];
        assert_eq!(
            running_where(&pred, &[1033]),
            (500..508).collect::<Vec<_>>()
        );
    }
}
