//! Masked instructions as predicated instructions of constant extent, for BIR lowering.
//!
//! A Penguin instruction may carry a mask ([`penguin::ir::MaskBound`]s): in each iteration it
//! reads and writes only the box of its iteration space that the bounds leave, whose corners are
//! `clamp(bound, 0, size)`, affine in the induction variables. The machine's access patterns
//! have constant extents, so [`compute_mask_versions`] splits such an instruction into
//! **versions**: each bound is, in a given iteration, either inactive (it keeps the whole
//! dimension), or partial with a value `k` in `1..size` (it cuts the dimension at `k`), or
//! empty (it keeps nothing). A version picks one class per bound; its guards say when those
//! classes hold (`bound < 1` / `bound >= size` for inactive, `bound == k` for partial), and its
//! operands are the instruction clipped to the constant box the classes give
//! ([`penguin::ir::InstData::clipped`]). Combinations that keep nothing are dropped, and so is
//! every empty class: in those iterations no version runs, and nothing is read or written.
//!
//! So the simulator runs exactly the active elements (its race detector and its timing see the
//! partial extent, and the cost is charged on the active elements), and everything downstream of
//! lowering (scheduling, rings, synchronisation, emission) sees ordinary guarded instructions.
//!
//! The partial values of a bound are found over the box of its loops' bounds: exactly (as an
//! interval of the loop variable) for a bound in at most one variable, by enumerating the box
//! for a bound in several (up to [`MAX_BOX`] points). A bound with more than
//! [`MAX_PARTIALS`] partial values, or an instruction with more than [`MAX_VERSIONS`] versions,
//! is an `E0504` error, never a silent approximation. Guards in one variable are written with
//! coefficient 1 (`i == 1`, `i < 2`), the form the guard analyses read best.

use crate::error::{BackendError, MaskDecline};
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{Function, InstData, MaskBound};
use penguin::{Axis, SrcSpan};
use std::collections::BTreeSet;

/// Most partial values one bound may take.
pub const MAX_PARTIALS: usize = 16;
/// Most versions of one instruction.
pub const MAX_VERSIONS: usize = 64;
/// Most iteration points enumerated for a bound in several variables.
pub const MAX_BOX: u64 = 1 << 16;

/// One version of a masked instruction: the guards under which it runs (besides the statement's)
/// and the unmasked instruction it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct MaskVersion {
    pub guards: Vec<Predicate>,
    pub inst: InstData,
}

/// The class of one bound in one version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// The bound keeps the whole dimension.
    Inactive,
    /// The bound cuts the dimension at `k` (keeps `[k, size)` for a lower bound, `[0, k)` for an
    /// upper one).
    Partial(u64),
}

/// The versions of instruction `d` (masked or not: an unmasked instruction is its one version,
/// without guards).
pub fn compute_mask_versions(
    func: &Function,
    d: &InstData,
    at: Option<SrcSpan>,
) -> Result<Vec<MaskVersion>, BackendError> {
    if d.mask.is_empty() {
        return Ok(vec![MaskVersion {
            guards: Vec::new(),
            inst: d.clone(),
        }]);
    }
    let unsupported = |why: MaskDecline| BackendError::Mask { why, at };
    if !InstData::maskable(&d.op) {
        return Err(unsupported(MaskDecline::NotMaskable { op: d.op.name() }));
    }
    let shape = d
        .iter_shape()
        .ok_or_else(|| unsupported(MaskDecline::NotTile))?;
    let bounds_of = |a: Axis| {
        let ax = &func.axes[a];
        (ax.lb, (ax.ub - 1).max(ax.lb))
    };
    // Per bound: its reachable classes, each with its guard (`None`: holds in every iteration).
    let mut choices: Vec<Vec<(Class, Option<Predicate>)>> = Vec::new();
    for b in &d.mask {
        let size = shape[b.dim.index()];
        choices.push(classes(b, size, &bounds_of).map_err(unsupported)?);
    }
    let total: usize = choices.iter().map(Vec::len).product();
    if total > MAX_VERSIONS {
        return Err(unsupported(MaskDecline::TooManyVersions {
            total,
            max: MAX_VERSIONS,
        }));
    }
    let mut out = Vec::new();
    let mut pick = vec![0usize; choices.len()];
    'combos: loop {
        let mut active = [(0u64, shape[0]), (0u64, shape[1])];
        let mut guards = Vec::new();
        for ((b, opts), &k) in d.mask.iter().zip(&choices).zip(&pick) {
            let (class, guard) = &opts[k];
            let r = &mut active[b.dim.index()];
            if let Class::Partial(v) = *class {
                if b.lower {
                    r.0 = r.0.max(v);
                } else {
                    r.1 = r.1.min(v);
                }
            }
            guards.extend(guard.iter().cloned());
        }
        if active.iter().all(|&(lo, hi)| lo < hi) {
            let mut seen = BTreeSet::new();
            guards.retain(|g| seen.insert(format!("{g:?}")));
            out.push(MaskVersion {
                guards,
                inst: d.clipped(shape, active),
            });
        }
        // The next combination, the last bound fastest.
        for j in (0..pick.len()).rev() {
            pick[j] += 1;
            if pick[j] < choices[j].len() {
                continue 'combos;
            }
            pick[j] = 0;
        }
        break;
    }
    Ok(out)
}

/// The classes bound `b` (on a dimension of `size`) takes over the box of its loops, with their
/// guards; the empty class is left out (no version runs then).
fn classes(
    b: &MaskBound,
    size: u64,
    bounds_of: &dyn Fn(Axis) -> (i64, i64),
) -> Result<Vec<(Class, Option<Predicate>)>, MaskDecline> {
    let e = &b.bound;
    let size = i64::try_from(size).map_err(|_| MaskDecline::ExtentTooLarge)?;
    let (lo, hi) = range128(e, bounds_of);
    // The inactive class: `e <= 0` for a lower bound, `e >= size` for an upper one.
    let s = i128::from(size);
    let (inactive_reach, inactive_always, inactive) = if b.lower {
        (lo <= 0, hi <= 0, pred(e, CmpOp::Lt, 1))
    } else {
        (hi >= s, lo >= s, pred(e, CmpOp::Ge, size))
    };
    let mut out = Vec::new();
    if inactive_always {
        out.push((Class::Inactive, None));
        return Ok(out);
    }
    if inactive_reach {
        out.push((Class::Inactive, Some(inactive)));
    }
    for k in partial_values(e, size, bounds_of)? {
        out.push((Class::Partial(k as u64), Some(pred(e, CmpOp::Eq, k))));
    }
    Ok(out)
}

/// The values in `1..size` that `e` takes over the box of its loops, in increasing order.
fn partial_values(
    e: &AffineExpr,
    size: i64,
    bounds_of: &dyn Fn(Axis) -> (i64, i64),
) -> Result<Vec<i64>, MaskDecline> {
    let too_many = || MaskDecline::TooManyPartials { max: MAX_PARTIALS };
    let c = e.constant_term();
    let mut found = BTreeSet::new();
    match e.terms() {
        [] => {
            if 0 < c && c < size {
                found.insert(c);
            }
        }
        &[(a, k)] => {
            // `k*i + c` in `[1, size - 1]`: an interval of `i`, intersected with the loop's.
            let (amin, amax) = bounds_of(a);
            let (k, c) = (i128::from(k), i128::from(c));
            let (l, h) = (1 - c, i128::from(size) - 1 - c);
            let (imin, imax) = if k > 0 {
                (div_ceil(l, k), div_floor(h, k))
            } else {
                (div_ceil(h, k), div_floor(l, k))
            };
            let (imin, imax) = (imin.max(i128::from(amin)), imax.min(i128::from(amax)));
            if imax - imin + 1 > MAX_PARTIALS as i128 {
                return Err(too_many());
            }
            for i in imin..=imax {
                found.insert((k * i + c) as i64);
            }
        }
        terms => {
            let axes: Vec<(Axis, i64, i64)> = terms
                .iter()
                .map(|&(a, _)| {
                    let (l, h) = bounds_of(a);
                    (a, l, h)
                })
                .collect();
            let points = axes.iter().try_fold(1u64, |n, &(_, l, h)| {
                n.checked_mul((h - l + 1) as u64).filter(|&n| n <= MAX_BOX)
            });
            if points.is_none() {
                return Err(MaskDecline::BoxTooLarge { max: MAX_BOX });
            }
            let mut at: Vec<i64> = axes.iter().map(|&(_, l, _)| l).collect();
            'points: loop {
                let v = terms
                    .iter()
                    .zip(&at)
                    .fold(i128::from(c), |s, (&(_, k), &x)| {
                        s + i128::from(k) * i128::from(x)
                    });
                if 0 < v && v < i128::from(size) {
                    found.insert(v as i64);
                    if found.len() > MAX_PARTIALS {
                        return Err(too_many());
                    }
                }
                for j in (0..at.len()).rev() {
                    at[j] += 1;
                    if at[j] <= axes[j].2 {
                        continue 'points;
                    }
                    at[j] = axes[j].1;
                }
                break;
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// The guard `e cmp bound`, written `iv cmp' bound'` when `e` has one variable. An equality
/// that no integer satisfies stays as written (it never holds).
fn pred(e: &AffineExpr, cmp: CmpOp, bound: i64) -> Predicate {
    let general = Predicate {
        expr: e.clone(),
        cmp,
        bound,
    };
    let &[(a, k)] = e.terms() else {
        return general;
    };
    let (k, r) = (
        i128::from(k),
        i128::from(bound) - i128::from(e.constant_term()),
    );
    // `k*i cmp r`.
    let single = match (cmp, k > 0) {
        (CmpOp::Eq, _) if r % k == 0 => Some((CmpOp::Eq, r / k)),
        (CmpOp::Eq, _) => None,
        (CmpOp::Ge, true) => Some((CmpOp::Ge, div_ceil(r, k))),
        (CmpOp::Ge, false) => Some((CmpOp::Lt, div_floor(r, k) + 1)),
        (CmpOp::Lt, true) => Some((CmpOp::Lt, div_floor(r - 1, k) + 1)),
        (CmpOp::Lt, false) => Some((CmpOp::Ge, div_ceil(r - 1, k))),
    };
    match single.and_then(|(c, v)| Some((c, i64::try_from(v).ok()?))) {
        Some((cmp, bound)) => Predicate {
            expr: AffineExpr::iv(a),
            cmp,
            bound,
        },
        None => general,
    }
}

/// The least and greatest values of `e` over the box of its loops, in 128-bit arithmetic.
fn range128(e: &AffineExpr, bounds_of: &dyn Fn(Axis) -> (i64, i64)) -> (i128, i128) {
    let c = i128::from(e.constant_term());
    e.terms().iter().fold((c, c), |(lo, hi), &(a, k)| {
        let (amin, amax) = bounds_of(a);
        let (x, y) = (
            i128::from(k) * i128::from(amin),
            i128::from(k) * i128::from(amax),
        );
        (lo + x.min(y), hi + x.max(y))
    })
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;
    use penguin::ir::{Access, AxisAttrs, AxisData, EngineClass, LoopKind, Op, Operand, TileDim};
    use penguin::Tensor;

    fn func_with_loop(ub: i64) -> (Function, Axis) {
        let mut f = Function::new("k");
        let a = f.axes.push(AxisData {
            iv_name: "i".into(),
            kind: LoopKind::Affine,
            lb: 0,
            ub,
            attrs: AxisAttrs::default(),
            body: Vec::new(),
        });
        (f, a)
    }

    fn load(mask: Vec<MaskBound>, i: Axis) -> InstData {
        let t = Tensor::new(0);
        let mut d = InstData::new(
            Op::Load,
            EngineClass::Dma,
            Operand {
                tensor: t,
                access: Access::whole(&[128, 512]),
            },
            vec![Operand {
                tensor: Tensor::new(1),
                access: Access {
                    start: vec![AffineExpr::term(i, 128), AffineExpr::constant(0)],
                    size: vec![128, 512],
                    slots: Vec::new(),
                    pattern: None,
                },
            }],
        );
        d.mask = mask;
        d
    }

    #[test]
    fn a_ragged_last_row_tile_is_two_versions() {
        // 250 rows in tiles of 128: `p < 250 - 128*i`, i in 0..2.
        let (f, i) = func_with_loop(2);
        let mut bound = AffineExpr::term(i, -128);
        bound.add_constant(250);
        let mask = vec![MaskBound {
            dim: TileDim::Partition,
            lower: false,
            bound,
        }];
        let v = compute_mask_versions(&f, &load(mask, i), None).unwrap();
        assert_eq!(v.len(), 2);
        // Full tiles while 250 - 128*i >= 128, i.e. i < 1.
        assert_eq!(v[0].guards.len(), 1);
        assert_eq!(v[0].guards[0].cmp, CmpOp::Lt);
        assert_eq!(v[0].guards[0].bound, 1);
        assert_eq!(v[0].inst.dst.access.size, vec![128, 512]);
        // The partial tile at i == 1: 122 rows, from row 128 of the source.
        assert_eq!(v[1].guards[0].cmp, CmpOp::Eq);
        assert_eq!(v[1].guards[0].bound, 1);
        assert_eq!(v[1].inst.dst.access.size, vec![122, 512]);
        assert_eq!(v[1].inst.srcs[0].access.size, vec![122, 512]);
        assert!(v.iter().all(|x| x.inst.mask.is_empty()));
    }

    #[test]
    fn a_mask_that_always_keeps_everything_is_one_version_without_guards() {
        let (f, i) = func_with_loop(2);
        let mut bound = AffineExpr::term(i, -128);
        bound.add_constant(256);
        let mask = vec![MaskBound {
            dim: TileDim::Partition,
            lower: false,
            bound,
        }];
        let v = compute_mask_versions(&f, &load(mask, i), None).unwrap();
        assert_eq!(v.len(), 1);
        assert!(v[0].guards.is_empty());
        assert_eq!(v[0].inst.dst.access.size, vec![128, 512]);
    }

    #[test]
    fn bounds_on_both_axes_multiply_and_empty_iterations_have_no_version() {
        // p < 200 - 128*i (i in 0..3: full, 72, empty) and f >= 500 - 512*i (i = 0: 500 ..).
        let (f, i) = func_with_loop(3);
        let mut pb = AffineExpr::term(i, -128);
        pb.add_constant(200);
        let mut fb = AffineExpr::term(i, -512);
        fb.add_constant(500);
        let mask = vec![
            MaskBound {
                dim: TileDim::Partition,
                lower: false,
                bound: pb,
            },
            MaskBound {
                dim: TileDim::Free,
                lower: true,
                bound: fb,
            },
        ];
        let v = compute_mask_versions(&f, &load(mask, i), None).unwrap();
        let sizes: Vec<Vec<u64>> = v.iter().map(|x| x.inst.dst.access.size.clone()).collect();
        // (full rows | 72 rows) x (all columns | columns 500..512).
        assert_eq!(
            sizes,
            vec![vec![128, 512], vec![128, 12], vec![72, 512], vec![72, 12]]
        );
        assert_eq!(v[1].inst.dst.access.start[1].as_constant(), Some(500));
    }

    #[test]
    fn too_many_partial_values_is_an_error() {
        let (f, i) = func_with_loop(100);
        let mut bound = AffineExpr::term(i, -1);
        bound.add_constant(100);
        let mask = vec![MaskBound {
            dim: TileDim::Partition,
            lower: false,
            bound,
        }];
        let e = compute_mask_versions(&f, &load(mask, i), None).unwrap_err();
        assert!(
            matches!(
                e,
                BackendError::Mask {
                    why: MaskDecline::TooManyPartials { .. },
                    ..
                }
            ),
            "{e}"
        );
    }
}
