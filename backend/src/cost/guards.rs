//! Which iterations a conjunction of guards lets run, counted without walking the iterations.
//!
//! Every guard the pipeliners make names one loop: a fill's `i >= 2`, a drain's `i < 8`, a
//! take-turns copy's `k.1 - 2 == 0`. Such a guard holds on an interval of its loop's iterations,
//! and a conjunction of them on a box ([`GuardBox`]: one interval per loop it names). Counting,
//! intersecting and shifting boxes is closed form, so the analyses built here cost the same at 16
//! iterations as at 65,536:
//! - [`guard_fraction`]: the fraction of its instances a guarded instruction runs;
//! - [`running_iterations`]: the iterations of one loop in which it runs;
//! - [`count_together`]: how many iterations each pair of guard lists holds in together;
//! - [`run_classes`]: the classes of iterations by which guard lists hold in them;
//! - [`may_run_shifted`]: whether two instructions can run `d` iterations of a loop apart.
//!
//! A guard that names two loops at once has no box. Then the iteration space of the loops the
//! guards name is enumerated, up to [`MAX_GUARD_ENUMERATION`] points; past it, each function
//! gives its documented safe answer. The two ways agree exactly wherever both apply (the unit
//! tests below compare them).
//!
//! Invariants: a box holds one interval per loop, sorted by loop, each clamped to the loop's own
//! range `lb..ub`; an interval with `lo >= hi` is empty, and then the whole box is.

use cranelift_entity::SecondaryMap;
use penguin::affine::{CmpOp, Predicate};
use penguin::{Axis, Function};
use std::ops::Range;

/// The largest iteration space the enumerating fallback walks.
pub const MAX_GUARD_ENUMERATION: u64 = 1 << 16;

/// The iterations in which a conjunction of one-loop guards holds: the values of each named
/// loop's induction variable, as an interval per loop (module invariants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardBox {
    ranges: Vec<(Axis, Range<i64>)>,
    /// A guard that names no loop fails.
    never: bool,
}

impl GuardBox {
    /// The loops the guards name, in order.
    pub fn axes(&self) -> impl Iterator<Item = Axis> + '_ {
        self.ranges.iter().map(|(a, _)| *a)
    }

    /// The values of `axis` the guards allow: its interval, or the loop's whole range when no
    /// guard names it.
    pub fn range(&self, func: &Function, axis: Axis) -> Range<i64> {
        match self.ranges.iter().find(|(a, _)| *a == axis) {
            Some((_, r)) => r.clone(),
            None => func.axes[axis].lb..func.axes[axis].ub,
        }
    }

    /// Whether the guards never hold together.
    pub fn is_empty(&self) -> bool {
        self.never || self.ranges.iter().any(|(_, r)| r.is_empty())
    }
}

/// `⌊a / b⌋` for `b > 0`.
fn floor_div(a: i128, b: i128) -> i128 {
    a.div_euclid(b)
}

/// `⌈a / b⌉` for `b > 0`.
fn ceil_div(a: i128, b: i128) -> i128 {
    -(-a).div_euclid(b)
}

/// The box of `guards`, or `None` when one of them names more than one loop.
pub fn compute_guard_box(func: &Function, guards: &[Predicate]) -> Option<GuardBox> {
    let mut ranges: Vec<(Axis, Range<i64>)> = Vec::new();
    let mut never = false;
    for p in guards {
        let terms = p.expr.terms();
        let [(axis, c)] = terms[..] else {
            if terms.is_empty() {
                never |= !p.holds(&SecondaryMap::new());
                continue;
            }
            return None;
        };
        // `c·v + k CMP b`, as `lo <= v < hi` over the integers.
        let (c, r) = (
            i128::from(c),
            i128::from(p.bound) - i128::from(p.expr.constant_term()),
        );
        let (mut lo, mut hi) = (i128::MIN, i128::MAX);
        match p.cmp {
            // c·v >= r
            CmpOp::Ge if c > 0 => lo = ceil_div(r, c),
            CmpOp::Ge => hi = floor_div(-r, -c) + 1,
            // c·v <= r - 1
            CmpOp::Lt if c > 0 => hi = floor_div(r - 1, c) + 1,
            CmpOp::Lt => lo = ceil_div(1 - r, -c),
            CmpOp::Eq if r % c == 0 => (lo, hi) = (r / c, r / c + 1),
            CmpOp::Eq => (lo, hi) = (0, 0),
        }
        let ad = &func.axes[axis];
        let pos = match ranges.binary_search_by_key(&axis, |(a, _)| *a) {
            Ok(pos) => pos,
            Err(pos) => {
                ranges.insert(pos, (axis, ad.lb..ad.ub.max(ad.lb)));
                pos
            }
        };
        let cur = &mut ranges[pos].1;
        // Clamping to the loop's own range keeps both ends in `i64`.
        cur.start = lo.max(i128::from(cur.start)).min(i128::from(cur.end)) as i64;
        cur.end = hi.min(i128::from(cur.end)).max(i128::from(cur.start)) as i64;
    }
    Some(GuardBox { ranges, never })
}

/// The number of values in `r`.
fn len(r: &Range<i64>) -> u64 {
    r.end.saturating_sub(r.start).max(0) as u64
}

/// The number of iterations of loop `a`.
fn trip(func: &Function, a: Axis) -> u64 {
    func.axes[a].trip_count().max(0) as u64
}

/// The intersection of two intervals.
fn meet(a: &Range<i64>, b: &Range<i64>) -> Range<i64> {
    a.start.max(b.start)..a.end.min(b.end)
}

/// The loops that `guards` name, sorted, once each.
fn named_axes(guards: &[&[Predicate]]) -> Vec<Axis> {
    let mut axes: Vec<Axis> = guards
        .iter()
        .flat_map(|g| g.iter().flat_map(|p| p.expr.axes()))
        .collect();
    axes.sort();
    axes.dedup();
    axes
}

/// How many iterations of the loops that `guards` mention let them all hold, out of how many:
/// the fraction of its instances a guarded statement or instruction runs (a pipeline stage's
/// fill and drain, a prologue copy). With no guard, or when the guards name no loop or name
/// loops together past [`MAX_GUARD_ENUMERATION`] points, `(1, 1)` (always on, which only
/// overestimates the work).
pub fn guard_fraction(func: &Function, guards: &[Predicate]) -> (u64, u64) {
    if guards.is_empty() {
        return (1, 1);
    }
    let Some(bx) = compute_guard_box(func, guards) else {
        let mut on = 0;
        let total = for_each_guard_point(func, &[guards], |ivs| {
            on += u64::from(guards.iter().all(|p| p.holds(ivs)));
        });
        return match total {
            Some(total) if total > 0 => (on, total),
            _ => (1, 1),
        };
    };
    let (mut on, mut total) = (u64::from(!bx.is_empty()), 1u64);
    for a in bx.axes() {
        on = on.saturating_mul(len(&bx.range(func, a)));
        match total.checked_mul(trip(func, a)) {
            Some(t) => total = t,
            None => return (1, 1),
        }
    }
    match total {
        0 => (1, 1),
        _ if bx.axes().next().is_none() => (1, 1),
        _ => (on, total),
    }
}

/// The iterations of loop `axis` (indices `0 .. trip` from its lower bound) in which an
/// instruction guarded by `guards` runs, in some execution of the loop that the guards not
/// mentioning `axis` let run (an inner loop whose enclosing stage is off runs empty): sorted,
/// disjoint, non-empty intervals. Every iteration when no guard mentions `axis`. `None` when the
/// guards name loops together past [`MAX_GUARD_ENUMERATION`] points.
pub fn running_iterations(
    func: &Function,
    guards: &[Predicate],
    axis: Axis,
) -> Option<Vec<Range<u64>>> {
    let n = trip(func, axis);
    let whole = || std::iter::once(0..n).filter(|r| !r.is_empty()).collect();
    if !guards.iter().any(|p| p.expr.axes().any(|a| a == axis)) {
        return Some(whole());
    }
    let lb = func.axes[axis].lb;
    if let Some(bx) = compute_guard_box(func, guards) {
        if bx.is_empty() {
            return Some(Vec::new());
        }
        let r = bx.range(func, axis);
        let run = (r.start - lb) as u64..(r.end - lb) as u64;
        return Some(std::iter::once(run).collect());
    }
    let mut runs = vec![false; usize::try_from(n).ok()?];
    for_each_guard_point(func, &[guards], |ivs| {
        if guards.iter().all(|p| p.holds(ivs)) {
            if let Some(r) = runs.get_mut((ivs[axis] - lb) as usize) {
                *r = true;
            }
        }
    })?;
    let mut out: Vec<Range<u64>> = Vec::new();
    for (v, on) in (0u64..).zip(runs) {
        match out.last_mut() {
            Some(r) if on && r.end == v => r.end = v + 1,
            _ if on => out.push(v..v + 1),
            _ => {}
        }
    }
    Some(out)
}

/// For every pair of the guard lists, how many points of the iteration space of the loops they
/// name let both hold (`both[a][a]`: `a` alone), and how many points that space has. `None`
/// when they name no loop, or name loops together past [`MAX_GUARD_ENUMERATION`] points.
pub fn count_together(func: &Function, guards: &[&[Predicate]]) -> Option<(Vec<Vec<u64>>, u64)> {
    let n = guards.len();
    let axes = named_axes(guards);
    if axes.is_empty() {
        return None;
    }
    let boxes: Option<Vec<GuardBox>> = guards.iter().map(|g| compute_guard_box(func, g)).collect();
    if let Some(boxes) = boxes {
        let total = axes
            .iter()
            .try_fold(1u64, |acc, &a| acc.checked_mul(trip(func, a)))?;
        let mut both = vec![vec![0u64; n]; n];
        for a in 0..n {
            for b in 0..n {
                let never = boxes[a].is_empty() || boxes[b].is_empty();
                both[a][b] = axes.iter().fold(u64::from(!never), |acc, &x| {
                    let r = meet(&boxes[a].range(func, x), &boxes[b].range(func, x));
                    acc.saturating_mul(len(&r))
                });
            }
        }
        return Some((both, total));
    }
    let mut both = vec![vec![0u64; n]; n];
    let total = for_each_guard_point(func, guards, |ivs| {
        let on: Vec<usize> = (0..n)
            .filter(|&k| guards[k].iter().all(|p| p.holds(ivs)))
            .collect();
        for &a in &on {
            for &b in &on {
                both[a][b] += 1;
            }
        }
    })?;
    Some((both, total))
}

/// The classes of iterations of the loops that `guards` name, by which of the guard lists hold
/// in them: each class as `(holds, count)`, `holds[k]` whether list `k` holds there and `count`
/// how many points of the iteration space the class holds (classes in which no list holds
/// included; the counts sum to the space's size). Sorted by `holds`, each once. `None` when the
/// lists name no loop, or name loops together past [`MAX_GUARD_ENUMERATION`] points (or cells
/// of the boxes' cuts).
pub fn run_classes(func: &Function, guards: &[&[Predicate]]) -> Option<Vec<(Vec<bool>, u64)>> {
    let axes = named_axes(guards);
    if axes.is_empty() {
        return None;
    }
    let mut classes: std::collections::BTreeMap<Vec<bool>, u64> = Default::default();
    let boxes: Option<Vec<GuardBox>> = guards.iter().map(|g| compute_guard_box(func, g)).collect();
    let Some(boxes) = boxes else {
        for_each_guard_point(func, guards, |ivs| {
            let holds = guards
                .iter()
                .map(|g| g.iter().all(|p| p.holds(ivs)))
                .collect();
            *classes.entry(holds).or_insert(0) += 1;
        })?;
        return Some(classes.into_iter().collect());
    };
    // Each loop cut at every box's ends: in every cell of the cuts, each box holds throughout or
    // nowhere.
    let cuts: Vec<Vec<i64>> = axes
        .iter()
        .map(|&a| {
            let (lb, ub) = (func.axes[a].lb, func.axes[a].ub.max(func.axes[a].lb));
            let mut c: Vec<i64> = boxes
                .iter()
                .flat_map(|b| {
                    let r = b.range(func, a);
                    [r.start, r.end]
                })
                .map(|v| v.clamp(lb, ub))
                .chain([lb, ub])
                .collect();
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect();
    let cells = cuts.iter().try_fold(1u64, |acc, c| {
        acc.checked_mul(c.len().saturating_sub(1) as u64)
    })?;
    if cells > MAX_GUARD_ENUMERATION {
        return None;
    }
    for v in 0..cells {
        let mut rest = v;
        let mut count = 1u64;
        let mut at: Vec<(Axis, i64)> = Vec::with_capacity(axes.len());
        for (&a, c) in axes.iter().zip(&cuts) {
            let n = c.len() as u64 - 1;
            let s = (rest % n) as usize;
            rest /= n;
            count *= (c[s + 1] - c[s]) as u64;
            at.push((a, c[s]));
        }
        let holds = boxes
            .iter()
            .map(|b| !b.is_empty() && at.iter().all(|&(a, x)| b.range(func, a).contains(&x)))
            .collect();
        *classes.entry(holds).or_insert(0) += count;
    }
    Some(classes.into_iter().filter(|&(_, n)| n > 0).collect())
}

/// The largest joint iteration space [`may_run_shifted`] enumerates.
const MAX_SHIFTED_ENUMERATION: u64 = 1 << 12;

/// Whether an instruction guarded by `gp` at some iteration, and one guarded by `gc` at `d`
/// iterations of loop `iv` later (every other loop at the same iteration), can both run. Guards
/// that never hold together (the copies of a prefetch that take turns, a fill and a drain) say
/// no. `true` when the guards name loops together past [`MAX_SHIFTED_ENUMERATION`] points.
pub fn may_run_shifted(
    func: &Function,
    gp: &[Predicate],
    gc: &[Predicate],
    iv: Axis,
    d: u32,
) -> bool {
    let (bp, bc) = (compute_guard_box(func, gp), compute_guard_box(func, gc));
    may_run_shifted_boxed(func, (gp, bp.as_ref()), (gc, bc.as_ref()), iv, d)
}

/// [`may_run_shifted`] for guard lists whose boxes ([`compute_guard_box`] of each) the caller
/// computed once: the same answer, without building the boxes again at every pair and distance
/// (a body's dependence graph tests each guard list against many).
pub fn may_run_shifted_boxed(
    func: &Function,
    (gp, bp): (&[Predicate], Option<&GuardBox>),
    (gc, bc): (&[Predicate], Option<&GuardBox>),
    iv: Axis,
    d: u32,
) -> bool {
    if gp.is_empty() && gc.is_empty() {
        return true;
    }
    let d = i64::from(d);
    if let (Some(bp), Some(bc)) = (bp, bc) {
        if bp.is_empty() || bc.is_empty() {
            return false;
        }
        // Every loop either box names, and `iv`: their intervals meet (a loop named twice is
        // tested twice, with the same answer).
        let meets = |a: Axis| {
            let (p, c) = (bp.range(func, a), bc.range(func, a));
            match a == iv {
                // `v` in `p` with `v + d` in `c`.
                true => !meet(&p, &(c.start - d..c.end - d)).is_empty(),
                false => !meet(&p, &c).is_empty(),
            }
        };
        return meets(iv) && bp.axes().chain(bc.axes()).all(meets);
    }
    let mut axes = named_axes(&[gp, gc]);
    axes.push(iv);
    axes.sort();
    axes.dedup();
    let trips: Vec<i64> = axes.iter().map(|&a| func.axes[a].trip_count()).collect();
    let total = trips
        .iter()
        .try_fold(1u64, |acc, &t| acc.checked_mul(t.max(0) as u64));
    let Some(total) = total.filter(|&t| t <= MAX_SHIFTED_ENUMERATION) else {
        return true;
    };
    let mut ivs = SecondaryMap::new();
    (0..total).any(|v| {
        let mut rest = v;
        for (&a, &t) in axes.iter().zip(&trips) {
            ivs[a] = func.axes[a].lb + (rest % t as u64) as i64;
            rest /= t as u64;
        }
        if !gp.iter().all(|g| g.holds(&ivs)) {
            return false;
        }
        ivs[iv] += d;
        let ok = ivs[iv] < func.axes[iv].ub && gc.iter().all(|g| g.holds(&ivs));
        ivs[iv] -= d;
        ok
    })
}

/// Calls `f` with every point of the box of the loops that `guards` mention (their induction
/// variables set, in linear order), and returns how many there are; `None`, without calling
/// `f`, when no guard mentions a loop or past [`MAX_GUARD_ENUMERATION`] points.
fn for_each_guard_point(
    func: &Function,
    guards: &[&[Predicate]],
    mut f: impl FnMut(&SecondaryMap<Axis, i64>),
) -> Option<u64> {
    let axes = named_axes(guards);
    if axes.is_empty() {
        return None;
    }
    let total = axes
        .iter()
        .try_fold(1u64, |acc, &a| acc.checked_mul(trip(func, a)))?;
    if total > MAX_GUARD_ENUMERATION {
        return None;
    }
    let mut ivs = SecondaryMap::new();
    for v in 0..total {
        let mut rest = v;
        for &a in &axes {
            let t = trip(func, a);
            ivs[a] = func.axes[a].lb + (rest % t) as i64;
            rest /= t;
        }
        f(&ivs);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use penguin::affine::AffineExpr;
    use penguin::ir::{AxisData, LoopKind};
    use proptest::prelude::*;

    /// A function with two loops, `lb0..ub0` and `lb1..ub1` (no statements: guards only read
    /// the loops' ranges).
    fn two_loops(r0: (i64, i64), r1: (i64, i64)) -> (Function, [Axis; 2]) {
        let mut func = Function::new("f");
        let mut axis = |name: &str, (lb, ub): (i64, i64)| {
            func.axes.push(AxisData {
                iv_name: name.into(),
                kind: LoopKind::Affine,
                lb,
                ub,
                attrs: Default::default(),
                body: Vec::new(),
            })
        };
        let axes = [axis("i", r0), axis("j", r1)];
        (func, axes)
    }

    fn cmp_op() -> impl Strategy<Value = CmpOp> {
        prop_oneof![Just(CmpOp::Ge), Just(CmpOp::Lt), Just(CmpOp::Eq)]
    }

    /// A one-loop guard `c·iv + k CMP b` on loop 0 or 1.
    fn guard() -> impl Strategy<Value = (usize, i64, i64, CmpOp, i64)> {
        (0..2usize, -3i64..=3, -6i64..=6, cmp_op(), -8i64..=8)
    }

    fn build(axes: &[Axis; 2], gs: &[(usize, i64, i64, CmpOp, i64)]) -> Vec<Predicate> {
        gs.iter()
            .map(|&(a, c, k, cmp, bound)| Predicate {
                expr: AffineExpr::from_terms([(axes[a], c)], k),
                cmp,
                bound,
            })
            .collect()
    }

    /// The answers by enumeration, for guards that have a box.
    fn enumerated_fraction(func: &Function, guards: &[Predicate]) -> (u64, u64) {
        let mut on = 0;
        match for_each_guard_point(func, &[guards], |ivs| {
            on += u64::from(guards.iter().all(|p| p.holds(ivs)));
        }) {
            Some(total) if total > 0 => (on, total),
            _ => (1, 1),
        }
    }

    proptest! {
        #[test]
        fn boxes_count_what_enumeration_counts(
            r0 in (-3i64..3, 0i64..7), r1 in (-3i64..3, 0i64..7),
            g1 in prop::collection::vec(guard(), 1..4),
            g2 in prop::collection::vec(guard(), 0..4),
            d in 0u32..4,
        ) {
            let (func, axes) = two_loops((r0.0, r0.0 + r0.1), (r1.0, r1.0 + r1.1));
            let (p1, p2) = (build(&axes, &g1), build(&axes, &g2));
            prop_assert!(compute_guard_box(&func, &p1).is_some());
            prop_assert!(compute_guard_box(&func, &p2).is_some());
            prop_assert_eq!(guard_fraction(&func, &p1), enumerated_fraction(&func, &p1));
            // Running iterations: the box against the enumerated flags.
            for &a in &axes {
                let runs = running_iterations(&func, &p1, a).expect("a box");
                let mut flags = vec![false; func.axes[a].trip_count() as usize];
                let mentions = p1.iter().any(|p| p.expr.axes().any(|x| x == a));
                match mentions {
                    false => flags.iter_mut().for_each(|f| *f = true),
                    true => {
                        for_each_guard_point(&func, &[&p1], |ivs| {
                            if p1.iter().all(|p| p.holds(ivs)) {
                                flags[(ivs[a] - func.axes[a].lb) as usize] = true;
                            }
                        });
                    }
                }
                let from_runs: Vec<bool> = (0..flags.len() as u64)
                    .map(|v| runs.iter().any(|r| r.contains(&v)))
                    .collect();
                prop_assert_eq!(from_runs, flags);
            }
            // Counting together.
            let lists: [&[Predicate]; 2] = [&p1, &p2];
            let counted = count_together(&func, &lists);
            let mut both = vec![vec![0u64; 2]; 2];
            let total = for_each_guard_point(&func, &lists, |ivs| {
                let on: Vec<usize> = (0..2).filter(|&k| lists[k].iter().all(|p| p.holds(ivs))).collect();
                for &a in &on { for &b in &on { both[a][b] += 1; } }
            });
            prop_assert_eq!(counted, total.map(|t| (both, t)));
            // Classes of iterations, by cells of the boxes' cuts against the points.
            let mut classes: std::collections::BTreeMap<Vec<bool>, u64> = Default::default();
            for_each_guard_point(&func, &lists, |ivs| {
                let holds = lists.iter().map(|g| g.iter().all(|p| p.holds(ivs))).collect();
                *classes.entry(holds).or_insert(0) += 1;
            });
            let expected = (!named_axes(&lists).is_empty()).then(|| classes.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(run_classes(&func, &lists), expected);
            // Shifted runs, along either loop.
            for &iv in &axes {
                let mut named = named_axes(&[&p1, &p2]);
                named.push(iv);
                named.sort();
                named.dedup();
                let mut any = false;
                let trips: Vec<u64> = named.iter().map(|&a| trip(&func, a)).collect();
                let points: u64 = trips.iter().product();
                let mut ivs = SecondaryMap::new();
                for v in 0..points {
                    let mut rest = v;
                    for (&a, &t) in named.iter().zip(&trips) {
                        ivs[a] = func.axes[a].lb + (rest % t) as i64;
                        rest /= t;
                    }
                    if p1.iter().all(|g| g.holds(&ivs)) {
                        ivs[iv] += i64::from(d);
                        any |= ivs[iv] < func.axes[iv].ub && p2.iter().all(|g| g.holds(&ivs));
                        ivs[iv] -= i64::from(d);
                    }
                }
                let expected = any || (p1.is_empty() && p2.is_empty());
                prop_assert_eq!(may_run_shifted(&func, &p1, &p2, iv, d), expected);
                // The same from boxes built once (what a body's dependence graph does).
                let (b1, b2) = (compute_guard_box(&func, &p1), compute_guard_box(&func, &p2));
                let boxed = may_run_shifted_boxed(&func, (&p1, b1.as_ref()), (&p2, b2.as_ref()), iv, d);
                prop_assert_eq!(boxed, expected);
            }
        }
    }

    #[test]
    fn a_guard_on_two_loops_has_no_box() {
        let (func, [i, j]) = two_loops((0, 4), (0, 4));
        let p = Predicate {
            expr: AffineExpr::from_terms([(i, 1), (j, -1)], 0),
            cmp: CmpOp::Ge,
            bound: 0,
        };
        assert!(compute_guard_box(&func, std::slice::from_ref(&p)).is_none());
        // i >= j on a 4 × 4 space: 10 of 16 points, by enumeration.
        assert_eq!(guard_fraction(&func, std::slice::from_ref(&p)), (10, 16));
        assert_eq!(
            running_iterations(&func, std::slice::from_ref(&p), j),
            Some(std::iter::once(0..4).collect())
        );
    }

    #[test]
    fn a_box_is_flat_in_the_trip_count() {
        // A stage-2 guard of a 3-stage loop of 2^40 + 2 iterations: only the first two are off.
        let (func, [i, _]) = two_loops((0, (1 << 40) + 2), (0, 1));
        let p = Predicate {
            expr: AffineExpr::iv(i),
            cmp: CmpOp::Ge,
            bound: 2,
        };
        let g = std::slice::from_ref(&p);
        assert_eq!(guard_fraction(&func, g), (1 << 40, (1 << 40) + 2));
        assert_eq!(
            running_iterations(&func, g, i),
            Some(std::iter::once(2..(1 << 40) + 2).collect())
        );
    }
}
