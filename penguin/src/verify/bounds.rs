//! The iteration box of a statement (its enclosing loops' bounds tightened by single-variable
//! guards), the boxes of the iterations its guards in several variables keep, and the
//! in-bounds check of an access over them.

use super::{AnyEntity, Ctx, Verifier};
use crate::affine::{AffineExpr, CmpOp};
use crate::entities::Axis;
use crate::ir::{Access, Function, MaskBound, Memory, Pattern, TensorData};
use crate::write::iv_name;

/// The box of iterations of the enclosing loops, `(axis, min, max)` inclusive, tightened by the
/// single-variable guards; `None` when it is empty (the statement never runs).
pub(super) fn iteration_box(f: &Function, ctx: &Ctx) -> Option<Vec<(Axis, i128, i128)>> {
    let mut bx: Vec<(Axis, i128, i128)> = ctx
        .loops
        .iter()
        .map(|&a| {
            let d = &f.axes[a];
            (a, i128::from(d.lb), i128::from(d.ub) - 1)
        })
        .collect();
    for p in &ctx.guards {
        let [(a, c)] = p.expr.terms() else {
            continue;
        };
        let Some(entry) = bx.iter_mut().find(|(x, _, _)| x == a) else {
            continue;
        };
        let c = i128::from(*c);
        let rhs = i128::from(p.bound) - i128::from(p.expr.constant_term());
        // Bounds on c·iv, then on iv (dividing by a negative c swaps them).
        let (at_least, at_most) = match p.cmp {
            CmpOp::Ge => (Some(rhs), None),
            CmpOp::Lt => (None, Some(rhs - 1)),
            CmpOp::Eq => (Some(rhs), Some(rhs)),
        };
        if let Some(r) = at_least {
            if c > 0 {
                entry.1 = entry.1.max(div_ceil(r, c));
            } else {
                entry.2 = entry.2.min(div_floor(r, c));
            }
        }
        if let Some(r) = at_most {
            if c > 0 {
                entry.2 = entry.2.min(div_floor(r, c));
            } else {
                entry.1 = entry.1.max(div_ceil(r, c));
            }
        }
    }
    bx.iter().all(|&(_, lo, hi)| lo <= hi).then_some(bx)
}

/// Most points of the loops of guards in several variables enumerated by [`iteration_boxes`].
const MAX_GUARD_POINTS: i128 = 1 << 16;

/// The iterations a statement runs as boxes: [`iteration_box`], then, for guards in several
/// variables (`2*i + g < 3`, from a mask on loop indices), one box per point of those guards'
/// loops where all of them hold, those loops fixed to the point. Empty when the statement never
/// runs. Past [`MAX_GUARD_POINTS`] points the single box (a superset: the check may then report
/// an access in an iteration the guards skip, never miss one).
pub(super) fn iteration_boxes(f: &Function, ctx: &Ctx) -> Vec<Vec<(Axis, i128, i128)>> {
    let Some(bx) = iteration_box(f, ctx) else {
        return Vec::new();
    };
    let multi: Vec<_> = ctx
        .guards
        .iter()
        .filter(|p| p.expr.terms().len() > 1)
        .collect();
    let mut axes: Vec<Axis> = multi.iter().flat_map(|p| p.expr.axes()).collect();
    axes.sort();
    axes.dedup();
    let ranges: Option<Vec<(i128, i128)>> = axes
        .iter()
        .map(|a| bx.iter().find(|e| e.0 == *a).map(|e| (e.1, e.2)))
        .collect();
    let Some(ranges) = ranges else {
        return vec![bx];
    };
    let count = ranges
        .iter()
        .try_fold(1i128, |n, (lo, hi)| n.checked_mul(hi - lo + 1));
    if multi.is_empty() || count.is_none_or(|n| n > MAX_GUARD_POINTS) {
        return vec![bx];
    }
    let mut out = Vec::new();
    let mut point: Vec<i128> = ranges.iter().map(|r| r.0).collect();
    for _ in 0..count.unwrap_or(0) {
        let fixed: Vec<(Axis, i128, i128)> = bx
            .iter()
            .map(|&(a, lo, hi)| match axes.iter().position(|&x| x == a) {
                Some(k) => (a, point[k], point[k]),
                None => (a, lo, hi),
            })
            .collect();
        let holds = multi.iter().all(|p| {
            let (v, _, _, _) = range(&p.expr, &fixed);
            let b = i128::from(p.bound);
            match p.cmp {
                CmpOp::Ge => v >= b,
                CmpOp::Lt => v < b,
                CmpOp::Eq => v == b,
            }
        });
        if holds {
            out.push(fixed);
        }
        for k in (0..axes.len()).rev() {
            if point[k] < ranges[k].1 {
                point[k] += 1;
                break;
            }
            point[k] = ranges[k].0;
        }
    }
    out
}

/// The mask's bounds on one dimension of an access, when the mask clips it.
///
/// A bound `b` on an index whose elements are `scale` apart in this dimension holds the access
/// in when `start + scale·b` (lower) or `start + scale·b + shift` (upper) does: a box has
/// `scale` 1 and `shift` 0; a pattern's axis of step `s` reaching `rest` elements past its own
/// ones has `scale` `s` and `shift` `rest - s`.
struct Clips<'m> {
    bounds: Vec<&'m MaskBound>,
    scale: i64,
    shift: i64,
}

impl Verifier<'_> {
    /// The selected range lies inside the tensor in every dimension, for every iteration of the
    /// box `bx`; a dimension that `masked` clips is in bounds when its start plus one of the
    /// mask's bounds on that index is.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bounds(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        t: &TensorData,
        acc: &Access,
        what: &str,
        write: bool,
        bx: &[(Axis, i128, i128)],
        masked: Option<(&[MaskBound], [u64; 2])>,
    ) {
        let verb = if write { "writes" } else { "reads" };
        for (d, (start, &size)) in acc.start.iter().zip(&acc.size).enumerate() {
            let extent = i128::from(t.shape.get(d).copied().unwrap_or(0));
            let clips = match &acc.pattern {
                Some(p) => Clips::of_pattern(masked, d, size, p),
                None => Clips::of(masked, d, size),
            };
            let Some((lo, end, at)) = out_of_bounds(start, size, extent, bx, &clips) else {
                continue;
            };
            let unit = dim_unit(t.memory, d);
            let when = self.iterations_text(&at);
            self.error_in(
                e,
                loops,
                format!(
                    "{what} {verb} `{}` {unit} {lo}..{end} but `{}` has {extent} {unit}{when}",
                    t.name, t.name
                ),
            );
        }
    }

    /// ` (at i = 3, j = 0)`, or nothing for no variables.
    fn iterations_text(&self, at: &Assignment) -> String {
        if at.is_empty() {
            return String::new();
        }
        let parts: Vec<String> = at
            .iter()
            .map(|&(a, v)| format!("{} = {v}", iv_name(self.func, a)))
            .collect();
        format!(" (at {})", parts.join(", "))
    }
}

impl<'m> Clips<'m> {
    /// The bounds of `masked` on dimension `d` of an access of `size`, when the mask clips it.
    fn of(masked: Option<(&'m [MaskBound], [u64; 2])>, d: usize, size: u64) -> Self {
        let bounds = match masked {
            Some((m, shape)) if d < 2 && shape[d] == size => {
                m.iter().filter(|b| b.dim.index() == d).collect()
            }
            _ => Vec::new(),
        };
        Clips {
            bounds,
            scale: 1,
            shift: 0,
        }
    }

    /// The bounds of `masked` that clip dimension `d` (of extent `size`, its bounding box) of
    /// a pattern: those on the one index of the value ([`Pattern::clip_index`]) whose axis
    /// moves along `d`.
    fn of_pattern(
        masked: Option<(&'m [MaskBound], [u64; 2])>,
        d: usize,
        size: u64,
        p: &Pattern,
    ) -> Self {
        let none = Clips {
            bounds: Vec::new(),
            scale: 1,
            shift: 0,
        };
        let Some((m, shape)) = masked else {
            return none;
        };
        let value = p.value_shape();
        let mut found = None;
        for i in 0..2 {
            if value[i] != shape[i] || !p.clips(i) || !m.iter().any(|b| b.dim.index() == i) {
                continue;
            }
            let Some(a) = p.clipped_axis(i) else { continue };
            let s = a.step.get(d).copied().unwrap_or(0);
            if s > 0 {
                if found.is_some() {
                    // Two clipped indices move along `d`: checked unclipped.
                    return none;
                }
                let reach = i64::try_from((a.count - 1).saturating_mul(s as u64)).ok();
                let rest = reach.and_then(|r| i64::try_from(size).ok()?.checked_sub(r));
                let Some(rest) = rest else { return none };
                found = Some((i, s, rest - s));
            }
        }
        let Some((i, scale, shift)) = found else {
            return none;
        };
        Clips {
            bounds: m.iter().filter(|b| b.dim.index() == i).collect(),
            scale,
            shift,
        }
    }

    /// Whether some lower (upper) bound keeps `start` plus the bound at least 0 (at most
    /// `extent`) over the box.
    fn hold(
        &self,
        lower: bool,
        start: &AffineExpr,
        extent: i128,
        bx: &[(Axis, i128, i128)],
    ) -> bool {
        self.bounds.iter().filter(|b| b.lower == lower).any(|b| {
            let shift = if lower { 0 } else { self.shift };
            let Some(sum) =
                checked_scaled(&b.bound, self.scale, shift).and_then(|x| checked_sum(start, &x))
            else {
                return false;
            };
            let (blo, bhi, _, _) = range(&sum, bx);
            if lower {
                blo >= 0
            } else {
                bhi <= extent
            }
        })
    }
}

/// The range `lo..end` of one dimension of an access and the iterations that reach the violated
/// end, when the range leaves `0..extent` and no clipping bound holds it in.
fn out_of_bounds(
    start: &AffineExpr,
    size: u64,
    extent: i128,
    bx: &[(Axis, i128, i128)],
    clips: &Clips,
) -> Option<(i128, i128, Assignment)> {
    let (lo, hi, lo_at, hi_at) = range(start, bx);
    let end = hi + i128::from(size);
    if lo < 0 && !clips.hold(true, start, extent, bx) {
        Some((lo, end, lo_at))
    } else if end > extent && !clips.hold(false, start, extent, bx) {
        Some((lo, end, hi_at))
    } else {
        None
    }
}

pub(super) fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

pub(super) fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

type Assignment = Vec<(Axis, i128)>;

/// `a + b`, or `None` when a coefficient overflows.
fn checked_sum(a: &AffineExpr, b: &AffineExpr) -> Option<AffineExpr> {
    let mut terms: Vec<(Axis, i64)> = a.terms().to_vec();
    for &(x, c) in b.terms() {
        match terms.iter_mut().find(|(y, _)| *y == x) {
            Some((_, d)) => *d = d.checked_add(c)?,
            None => terms.push((x, c)),
        }
    }
    let constant = a.constant_term().checked_add(b.constant_term())?;
    Some(AffineExpr::from_terms(terms, constant))
}

/// `k·e + c`, or `None` when a coefficient overflows.
fn checked_scaled(e: &AffineExpr, k: i64, c: i64) -> Option<AffineExpr> {
    let terms: Option<Vec<(Axis, i64)>> = e
        .terms()
        .iter()
        .map(|&(x, a)| Some((x, a.checked_mul(k)?)))
        .collect();
    let constant = e.constant_term().checked_mul(k)?.checked_add(c)?;
    Some(AffineExpr::from_terms(terms?, constant))
}

/// The smallest and largest value of `e` over the box, with the iterations that reach them.
fn range(e: &AffineExpr, bx: &[(Axis, i128, i128)]) -> (i128, i128, Assignment, Assignment) {
    let c0 = i128::from(e.constant_term());
    let (mut lo, mut hi) = (c0, c0);
    let (mut lo_at, mut hi_at) = (Vec::new(), Vec::new());
    for &(a, c) in e.terms() {
        let c = i128::from(c);
        // Scoping was checked before: every variable is in the box.
        let Some(&(_, amin, amax)) = bx.iter().find(|(x, _, _)| *x == a) else {
            continue;
        };
        let (at_min, at_max) = if c >= 0 { (amin, amax) } else { (amax, amin) };
        lo = lo.saturating_add(c * at_min);
        hi = hi.saturating_add(c * at_max);
        lo_at.push((a, at_min));
        hi_at.push((a, at_max));
    }
    (lo, hi, lo_at, hi_at)
}

fn dim_unit(m: Memory, d: usize) -> String {
    match (m, d) {
        (Memory::Hbm, 0) => "rows".to_string(),
        (_, 0) => "partitions".to_string(),
        (_, 1) => "columns".to_string(),
        (_, d) => format!("elements of dim {d}"),
    }
}
