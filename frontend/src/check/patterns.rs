//! Access patterns from subscripts of 2-D tiles: strided slices (`t[:, 0:n:2]`), index
//! expressions that sum several index vectors with constant coefficients (`t[i_p, i_f2*3 + i_f1]`,
//! a transposed view; `t[i_p, 2*i_w + i_kw]`, a window), and NKI's `t.ap([[step, count], ...])`.
//!
//! An index is read as an affine start plus a list of *terms*, each `count` indices `step`
//! elements apart along the dimension it indexes, keyed by the value axis it spans: a vector's
//! axis in its grid (`nl.arange(n)[None, :, None]` is axis 1 of 3, `nl.mgrid` gives axis `k` to
//! its `k`-th vector), a stepped slice's position in the subscript. The value's axes are the
//! keys in increasing order: the partition axis (key 0) first, then the free axes, which flatten
//! row-major into the value's free dimension, so `in_tile[i_p, i_f1*4 + i_f2]` with `i_f1` of
//! axis 1 and `i_f2` of axis 2 is the `[P, F1·F2]` value whose element `(p, f1·F2 + f2)` is
//! element `(p, 4·f1 + f2)` of the tile.
//!
//! Invariants of what this module returns: a subscript that needs no pattern (every index a box)
//! is left to `slices` (so box accesses are exactly as before); a pattern's partition axis is a
//! unit-step range of the first dimension and its free axes step along the second dimension
//! only, with positive steps, at most 4 of them after merging axes that are contiguous
//! (`outer.step == inner.step * inner.count`); a pattern that merges into one unit-step axis is
//! a box; its bounding box lies inside the tile for every iteration of the enclosing loops.
//! A written pattern that reaches an element twice is left to the verifier.

use super::arith::lin;
use super::error::CheckError;
use super::index_sums::{Sum, Term, HELP};
use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind, Index, Span};
use penguin::{AffineExpr, PatAxis, Pattern};

impl Checker<'_> {
    /// `base[indices]` as an access pattern: `None` when no index needs one (a box, for
    /// `slices`), `Some(None)` after a diagnostic.
    pub(super) fn subscript_pattern(
        &mut self,
        base: &TileVal,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<Option<TileVal>> {
        if indices.len() != 2 || !indices.iter().any(|ix| self.needs_pattern(ix)) {
            return None;
        }
        if base.pattern.is_some() {
            self.error(CheckError::AccessPattern {
                why: format!("`{name}` is already an access pattern: a view of it is not one"),
                help: "subscript the tile the pattern views",
                at: span.clone(),
            });
            return Some(None);
        }
        let mut sums = Vec::new();
        for (dim, ix) in indices.iter().enumerate() {
            let s = self.index_sum(ix, dim, base.size[dim]);
            sums.push(s);
        }
        let (Some(ps), Some(fs)) = (sums[0].take(), sums[1].take()) else {
            return Some(None);
        };
        // A DMA reads HBM along any axes: a partition index the on-chip reading refuses
        // (`x[i_h + i_kh, i_w]`, overlapping windows of rows) is an HBM access pattern.
        if self.tensor(base.tensor).memory == penguin::Memory::Hbm && !unit_partition(&ps) {
            let lay = super::patterns_nd::NdLayout::hbm(&base.size);
            return Some(self.nd_pattern(base, &lay, name, indices, span));
        }
        Some(self.pattern_tile(base, name, ps, fs, span))
    }

    /// The tile of partition sum `ps` and free sum `fs` of `base`.
    fn pattern_tile(
        &mut self,
        base: &TileVal,
        name: &str,
        ps: Sum,
        fs: Sum,
        span: &Span,
    ) -> Option<TileVal> {
        let refuse = |cx: &mut Self, why: String| cx.refuse_pattern(why, HELP, span);
        // The partition index: one unit-step range (or a single index), spanning value axis 0.
        let pcount = match ps.terms.as_slice() {
            [] => 1,
            [t] if unit_partition(&ps) => t.count,
            _ => {
                return refuse(
                    self,
                    "its partition index is strided or spans several axes: the partition axis is never strided; for a window over rows (`x[i_h + i_kh, i_w]`) write one access per window offset (`for kh in nl.static_range(k):` ... `x[i_h + kh, i_w]`)".to_string(),
                )
            }
        };
        // An index vector of one element is an axis of the value all the same (NKI's shape of
        // `t[i_0, i_1 * 2 + i_3]` has `i_3`'s axis even when it has 1 element, and a reduction
        // numbers the axes so); axes of one element go only when there are more than 4.
        let all = fs.terms;
        // An axis fixed by unrolling (`unroll_axes`) is lost by every operand of the copy.
        let fixed = &self.unroll.fixed;
        let unit_axis = |t: &Term| {
            t.count == 1
                && t.key > 0
                && t.grid.is_some_and(|g| g > 2)
                && all.iter().filter(|u| u.key == t.key).count() == 1
                && !fixed
                    .iter()
                    .any(|&(nd, ax, _)| t.grid == Some(nd) && ax == t.key)
        };
        let mut free: Vec<Term> = all.iter().filter(|t| t.count > 1).copied().collect();
        if free.len() + all.iter().filter(|t| unit_axis(t)).count() <= 4 {
            free.extend(all.iter().filter(|t| unit_axis(t)).copied());
        }
        free.sort_by_key(|t| t.key);
        if free.iter().any(|t| t.key == 0) {
            return refuse(
                self,
                "its free index varies along the partition axis of its index grid".to_string(),
            );
        }
        if free.windows(2).any(|w| w[0].key == w[1].key) {
            return refuse(
                self,
                "its free index has two index vectors along the same axis".to_string(),
            );
        }
        if let Some(t) = free.iter().find(|t| t.step <= 0) {
            self.hint_unroll(t.grid, t.key, t.count);
            return refuse(
                self,
                format!(
                    "its free index steps by {}: an access pattern takes positive steps{}",
                    t.step,
                    super::patterns_nd::UNROLL_NOTE
                ),
            );
        }
        // Merge contiguous neighbours, outermost first: a run that merges into one unit-step
        // axis is a box; otherwise the value keeps its axes (a reduction may name them), merged
        // only when there are more than the machine's 4.
        let mut merged: Vec<(u64, i64)> = Vec::new();
        for t in &free {
            match merged.last_mut() {
                Some((c, s)) if *s == t.step.saturating_mul(t.count as i64) => {
                    *c = c.saturating_mul(t.count);
                    *s = t.step;
                }
                _ => merged.push((t.count, t.step)),
            }
        }
        let free_terms = free;
        let free: Vec<(u64, i64)> = if free_terms.len() <= 4 {
            free_terms.iter().map(|t| (t.count, t.step)).collect()
        } else {
            merged
        };
        if free.len() > 4 {
            if let Some(t) = free_terms.iter().find(|t| t.grid.is_some()) {
                self.hint_unroll(t.grid, t.key, t.count);
            }
            return refuse(
                self,
                format!(
                    "it has {} free axes; the machine's access patterns have at most 4{}",
                    free.len(),
                    super::patterns_nd::UNROLL_NOTE
                ),
            );
        }
        let fext = free.iter().fold(1u64, |a, &(c, s)| {
            a.saturating_add((c - 1).saturating_mul(s as u64))
        });
        self.check_bounds(&ps.start, pcount, base.size[0], name, 0, span.clone())?;
        let reach = super::patterns_nd::mask_reach(&free_terms, 1, fext);
        self.check_bounds_masked(&fs.start, fext, base.size[1], name, 1, reach, span.clone())?;
        let (Some(p0), Some(f0)) = (
            lin(&base.start[0], 1, &ps.start, 1),
            lin(&base.start[1], 1, &fs.start, 1),
        ) else {
            self.overflow(span.clone());
            return None;
        };
        let mut axes = vec![PatAxis {
            count: pcount,
            step: vec![1, 0],
        }];
        axes.extend(free.iter().map(|&(count, s)| PatAxis {
            count,
            step: vec![0, s],
        }));
        // A single free axis of unit step is a box (as `slices` would make it); several axes
        // stay a pattern even when contiguous, so that a reduction can name them.
        if let [_, a] = axes.as_slice() {
            if a.step[1] == 1 {
                return Some(tile_of_axes(base.tensor, p0, f0, axes));
            }
        }
        Some(TileVal {
            tensor: base.tensor,
            start: [p0, f0],
            size: [pcount, free.iter().fold(1u64, |a, x| a.saturating_mul(x.0))],
            pattern: Some(Pattern { axes }),
            view: None,
            dims: None,
            indirect: None,
        })
    }
}

impl Checker<'_> {
    /// `t.ap([[step, count], ...], offset=k)`: NKI's explicit access pattern over the tile `t`
    /// (steps and offset in elements of its flattened `[P, F]` storage; the first pair is the
    /// partition axis, whose step must be `F`). `None` when `e` is not such a call.
    pub(super) fn ap_view(&mut self, e: &Expr) -> Option<Option<(TileVal, String)>> {
        let ExprKind::Call { func, args, kwargs } = &e.kind else {
            return None;
        };
        let ExprKind::Attribute { value, attr } = &func.kind else {
            return None;
        };
        let ExprKind::Name(n) = &value.kind else {
            return None;
        };
        if attr.name != "ap" {
            return None;
        }
        let base = match self.lookup(n, &value.span) {
            super::Value::Tile(t) => t,
            super::Value::Param(t) => TileVal::whole(t, self.tensor(t).shape),
            _ => return None,
        };
        Some(
            self.ap_of(base, n, args, kwargs, &e.span)
                .map(|t| (t, n.clone())),
        )
    }

    fn ap_of(
        &mut self,
        base: TileVal,
        name: &str,
        args: &[Expr],
        kwargs: &[crate::ast::Keyword],
        span: &Span,
    ) -> Option<TileVal> {
        const AP_HELP: &str = "write `t.ap([[F, P], [step, count], ...], offset=k)`: the partition pair first (its step is the tile's free size F), then up to 4 free pairs with positive steps";
        let refuse = |cx: &mut Self, why: String, at: &Span| cx.refuse_pattern(why, AP_HELP, at);
        if base.pattern.is_some() {
            return refuse(self, format!("`{name}` is already an access pattern"), span);
        }
        // The pairs: one positional list, or `pattern=[...]` (NKI's keyword).
        let keyed = kwargs.iter().find(|k| k.name.name == "pattern");
        let list = match (args, keyed) {
            ([list], None) => list,
            ([], Some(k)) => &k.value,
            _ => {
                return refuse(
                    self,
                    "`.ap` takes one list of [step, count] pairs".to_string(),
                    span,
                )
            }
        };
        let (ExprKind::List(pairs) | ExprKind::Tuple(pairs)) = &list.kind else {
            return refuse(
                self,
                "`.ap` takes a literal list of [step, count] pairs".to_string(),
                &list.span,
            );
        };
        let mut offset_expr = AffineExpr::constant(0);
        for kw in kwargs {
            match kw.name.name.as_str() {
                "pattern" => {}
                "offset" => offset_expr = self.affine(&kw.value)?,
                _ => {
                    return refuse(
                        self,
                        format!("`.ap` has no keyword `{}`", kw.name.name),
                        &kw.name.span,
                    )
                }
            }
        }
        let mut axes: Vec<(i64, u64)> = Vec::new();
        for p in pairs {
            let (ExprKind::List(sc) | ExprKind::Tuple(sc)) = &p.kind else {
                return refuse(
                    self,
                    "each entry of `.ap` is a [step, count] pair".to_string(),
                    &p.span,
                );
            };
            let [s, c] = sc.as_slice() else {
                return refuse(
                    self,
                    "each entry of `.ap` is a [step, count] pair".to_string(),
                    &p.span,
                );
            };
            let (s, c) = (self.const_int(s)?, self.const_int(c)?);
            if c < 1 {
                return refuse(self, format!("an axis of {c} elements"), &p.span);
            }
            axes.push((s, c as u64));
        }
        let row = self.tensor(base.tensor).shape[1] as i64;
        let Some(&(pstep, pcount)) = axes.first() else {
            return refuse(
                self,
                "an access pattern needs a partition pair".to_string(),
                span,
            );
        };
        if self.tensor(base.tensor).memory == penguin::Memory::Hbm {
            return self.hbm_ap(base, name, &axes, &offset_expr, span);
        }
        // On chip: a loop-dependent offset splits into partitions and columns
        // (`hbm_ap::split_offset`); both parts are bounds-checked below.
        let Some((dp, df)) = super::hbm_ap::split_offset(&offset_expr, row) else {
            return refuse(
                self,
                format!("an offset of `{}`", self.show(&offset_expr)),
                span,
            );
        };
        if pstep != row && pcount > 1 {
            return refuse(
                self,
                format!("its partition step is {pstep}, but a partition of `{name}` holds {row} elements: the partition axis is never strided"),
                span,
            );
        }
        if axes.len() > 5 {
            return refuse(
                self,
                format!("it has {} free axes; at most 4", axes.len() - 1),
                span,
            );
        }
        if let Some(&(s, _)) = axes[1..].iter().find(|a| a.0 <= 0) {
            return refuse(
                self,
                format!("a free step of {s}: nkc takes positive steps"),
                span,
            );
        }
        if offset_expr.as_constant().is_some_and(|o| o < 0) {
            return refuse(
                self,
                format!("a negative offset {}", offset_expr.constant_term()),
                span,
            );
        }
        let fext = axes[1..].iter().fold(1u64, |a, &(s, c)| {
            a.saturating_add((c - 1).saturating_mul(s as u64))
        });
        self.check_bounds(&dp, pcount, base.size[0], name, 0, span.clone())?;
        self.check_bounds(&df, fext, base.size[1], name, 1, span.clone())?;
        let (Some(p0), Some(f0)) = (
            lin(&base.start[0], 1, &dp, 1),
            lin(&base.start[1], 1, &df, 1),
        ) else {
            self.overflow(span.clone());
            return None;
        };
        let mut pat = vec![PatAxis {
            count: pcount,
            step: vec![1, 0],
        }];
        pat.extend(axes[1..].iter().map(|&(s, count)| PatAxis {
            count,
            step: vec![0, s],
        }));
        Some(tile_of_axes(base.tensor, p0, f0, pat))
    }

    /// A reduction of an access-pattern value over the axes `axes` of its value (`axis=[2, 4]`
    /// of a `[p, h, kh, w, kw]` window): one elementwise `op` per further index of the reduced
    /// axes, over the sub-patterns of the kept axes, in increasing row-major order of the
    /// reduced indices (then divided by their count for a mean).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reduce_pattern_axes(
        &mut self,
        rop: penguin::ReduceOp,
        mean: bool,
        x: TileVal,
        axes: &[i64],
        at: &Span,
        span: &Span,
        cx: &mut super::operands::StmtCtx,
        dest: super::operands::Dest,
    ) -> Option<TileVal> {
        use super::operands::{Arg, Dest};
        const REDUCE_HELP: &str = "reduce over axes of an access-pattern value (a window `x[i_p, 2*i_w + i_kw]` or `t.ap(...)`), never its partition axis; nl.sum, nl.max, nl.min and nl.mean take them";
        let refuse = |cx: &mut Self, why: String| cx.refuse_pattern(why, REDUCE_HELP, at);
        let Some(pat) = x.pattern.clone() else {
            return refuse(
                self,
                "reducing several axes needs a value with those axes: an access pattern"
                    .to_string(),
            );
        };
        let rank = pat.axes.len() as i64;
        let mut red: Vec<usize> = Vec::new();
        for &a in axes {
            let a = if a < 0 { a + rank } else { a };
            if a <= 0 || a >= rank {
                return refuse(
                    self,
                    format!("axis {a} is not a free axis of this {rank}-axis value"),
                );
            }
            if !red.contains(&(a as usize)) {
                red.push(a as usize);
            }
        }
        let alu = match rop {
            penguin::ReduceOp::Sum => penguin::AluOp::Add,
            penguin::ReduceOp::Max => penguin::AluOp::Maximum,
            penguin::ReduceOp::Min => penguin::AluOp::Minimum,
            _ => {
                return refuse(
                    self,
                    format!("`{}` over pattern axes is not lowered", rop.name()),
                )
            }
        };
        let kept: Vec<PatAxis> = (0..pat.axes.len())
            .filter(|k| !red.contains(k))
            .map(|k| pat.axes[k].clone())
            .collect();
        let mut combos: Vec<i64> = vec![0];
        for &k in &red {
            let a = &pat.axes[k];
            combos = combos
                .iter()
                .flat_map(|&o| (0..a.count as i64).map(move |i| o + i * a.step[1]))
                .collect();
        }
        let subs: Vec<TileVal> = combos
            .iter()
            .filter_map(|&o| {
                let f0 = lin(&x.start[1], 1, &AffineExpr::constant(o), 1)?;
                Some(tile_of_axes(x.tensor, x.start[0].clone(), f0, kept.clone()))
            })
            .collect();
        let n = subs.len();
        let mut acc: Option<TileVal> = None;
        let mut dest = Some(dest);
        for (i, t) in subs.into_iter().enumerate() {
            let d = if i + 1 == n && !mean {
                dest.take().unwrap_or(Dest::Temp)
            } else {
                Dest::Temp
            };
            acc = Some(match acc {
                None if n == 1 => self.elementwise(
                    penguin::AluOp::Multiply,
                    Arg::Tile(t, span.clone()),
                    Arg::Scalar(1.0),
                    span,
                    cx,
                    d,
                )?,
                None => t,
                Some(a) => self.elementwise(
                    alu,
                    Arg::Tile(a, span.clone()),
                    Arg::Tile(t, span.clone()),
                    span,
                    cx,
                    d,
                )?,
            });
        }
        let acc = acc?;
        if !mean {
            return Some(acc);
        }
        self.elementwise(
            penguin::AluOp::Divide,
            Arg::Tile(acc, span.clone()),
            Arg::Scalar(n as f32),
            span,
            cx,
            dest.unwrap_or(Dest::Temp),
        )
    }
}

/// Whether a partition index is one unit-step range along value axis 0 (or a single index): the
/// only partition index an on-chip access takes.
fn unit_partition(ps: &Sum) -> bool {
    match ps.terms.as_slice() {
        [] => true,
        [t] => (t.step == 1 && t.key == 0) || t.count == 1,
        _ => false,
    }
}

/// The tile of the value axes `axes` (partition first) from `(p0, f0)` of `tensor`: a box when
/// the free axes merge into one unit-step run, else a pattern.
fn tile_of_axes(
    tensor: penguin::Tensor,
    p0: AffineExpr,
    f0: AffineExpr,
    axes: Vec<PatAxis>,
) -> TileVal {
    let pcount = axes.first().map_or(1, |a| a.count);
    let free: Vec<&PatAxis> = axes.iter().skip(1).filter(|a| a.count > 1).collect();
    let fcount = free.iter().fold(1u64, |a, x| a.saturating_mul(x.count));
    let mut merged: Vec<(u64, i64)> = Vec::new();
    for a in &free {
        match merged.last_mut() {
            Some((c, s)) if *s == a.step[1].saturating_mul(a.count as i64) => {
                *c = c.saturating_mul(a.count);
                *s = a.step[1];
            }
            _ => merged.push((a.count, a.step[1])),
        }
    }
    let pattern = match merged.as_slice() {
        [] | [(_, 1)] => None,
        _ => {
            let mut out = vec![PatAxis {
                count: pcount,
                step: vec![1, 0],
            }];
            out.extend(free.iter().map(|a| (*a).clone()));
            Some(Pattern { axes: out })
        }
    };
    TileVal {
        tensor,
        start: [p0, f0],
        size: [pcount, fcount],
        pattern,
        view: None,
        dims: None,
        indirect: None,
    }
}
