//! Access patterns from subscripts of tensors of any number of dimensions: windows and strided
//! views of multi-dimensional on-chip tiles (`in_tile[i_0, 2*i_1 + i_2, 2*i_3 + i_4]` of a
//! `[P, H, W]` tile, `t[:, 1:H+1, 1:W+1]` of a padded one), HBM subscripts whose rows are not
//! contiguous (`x[0:128, h0:h1, 0:w]` of a `[N, H, W]` tensor), and HBM subscripts whose index
//! vectors are exchanged (`out[b, i_f, i_p]`: a transposing DMA).
//!
//! The same reading as `patterns` (an index is an affine start plus terms, each keyed by the
//! value axis it spans), over the tensor's logical dimensions: each dimension `d` moves
//! `stride[d]` elements in the stored `[rows, cols]` tensor (an on-chip tile's partition
//! dimension `(1, 0)`, its other dimensions row-major along the free dimension; an HBM tensor's
//! last dimension `(0, 1)`, the others row-major over the rows). The value's axes are the keys in
//! increasing order, the first the partition axis; terms of one key in several indices add
//! their steps (`x[i_p, i_p]` is a diagonal). A slice keys the value axis of its position and
//! shares it with nothing.
//!
//! Invariants of what this module returns: every index lies inside its own dimension for every
//! iteration of the enclosing loops (so the bounding box lies inside the stored tensor); steps
//! are positive; on chip the partition axis steps `(1, 0)` and the free axes along the free
//! dimension only, at most 4 of them; in HBM at most 4 axes in all (the DMA's dimensions); a
//! pattern that is one unit-step run per partition is a box. Callers take this path only for
//! subscripts their box reading refuses, so box accesses are exactly as before.

use super::arith::lin;
use super::error::CheckError;
use super::index_sums::{Sum, Term};
use super::{Checker, TileVal};
use crate::ast::{Index, Span};
use penguin::{AffineExpr, PatAxis, Pattern};

/// Help for a multi-dimensional pattern nkc refuses.
const HELP: &str = "index the partition dimension with a unit-step range and the others with sums of index vectors or slices whose steps are positive constants (at most 4 free axes on chip, 4 axes in all for an HBM tensor), each index vector along its own axis of the index grid";

/// What unrolling (`unroll_axes`) takes, for refusals it would otherwise cure.
pub(super) const UNROLL_NOTE: &str = "; a statement that writes a subscript indexed by the same grid (`out[i_p, 2 * i_y + i_x] = t[i_p, i_y + (1 - i_x)]`) is traced once per index of such an axis of the grid, up to 64 copies";

/// How a subscript's dimensions lie in the stored tensor.
pub(super) struct NdLayout<'a> {
    /// The logical dimensions.
    pub dims: &'a [u64],
    /// Per dimension, the elements one index moves in the stored `[rows, cols]` tensor.
    pub strides: Vec<[i64; 2]>,
    /// Whether the tensor is on chip (the partition axis is never strided there).
    pub on_chip: bool,
}

impl NdLayout<'_> {
    /// An on-chip tile of dimensions `dims` whose partition dimension is `par`.
    pub(super) fn on_chip(dims: &[u64], par: usize) -> NdLayout<'_> {
        let mut strides = vec![[1, 0]; dims.len()];
        let mut s = 1i64;
        for d in (0..dims.len()).rev().filter(|&d| d != par) {
            strides[d] = [0, s];
            s = s.saturating_mul(dims[d] as i64);
        }
        NdLayout {
            dims,
            strides,
            on_chip: true,
        }
    }

    /// An HBM tensor of dimensions `dims`, stored as `[Π leading, last]`.
    pub(super) fn hbm(dims: &[u64]) -> NdLayout<'_> {
        let last = dims.len().saturating_sub(1);
        let mut strides = vec![[0, 1]; dims.len()];
        let mut s = 1i64;
        for d in (0..last).rev() {
            strides[d] = [s, 0];
            s = s.saturating_mul(dims[d] as i64);
        }
        NdLayout {
            dims,
            strides,
            on_chip: false,
        }
    }
}

/// How a mask bound on index `ax` of the value (0: partition, 1: free) cuts an index of
/// `terms` reaching `ext` elements ([`Checker::check_bounds_masked`]): one term (or none) as a
/// box does; on the partition index, the term of the partition axis (key 0) with its step,
/// the others reaching past it; otherwise no bound cuts it.
pub(super) fn mask_reach(terms: &[Term], ax: usize, ext: u64) -> Option<(i64, i64)> {
    let moving: Vec<&Term> = terms.iter().filter(|t| t.count > 1).collect();
    let axis = match (moving.as_slice(), ax) {
        ([], _) => return Some((1, 0)),
        ([t], _) if t.step == 1 => return Some((1, 0)),
        ([t], 1) => t,
        (_, 0) => moving.iter().find(|t| t.key == 0)?,
        _ => return None,
    };
    let reach = i64::try_from(axis.count - 1).ok()?.checked_mul(axis.step)?;
    let rest = i64::try_from(ext).ok()?.checked_sub(reach)?;
    Some((axis.step, rest.checked_sub(axis.step)?))
}

/// One value axis being built: its key, count, stored steps, and whether a slice made it.
struct Ax {
    key: usize,
    count: u64,
    step: [i64; 2],
    slice: bool,
    /// The number of axes of the index grid of its vector (`None`: a slice).
    grid: Option<usize>,
}

impl Checker<'_> {
    /// Whether a subscript of a tensor of `dims` needs a pattern where a box reading would take
    /// it as a box or refuse it: an index needs one ([`Checker::needs_pattern`]), or an index
    /// vector lies along another axis than its position gives (`axis(d)`: 0 for the partition
    /// dimension, 1 for the others, for vectors of 2 axes; the position itself for more).
    pub(super) fn nd_wants_pattern(
        &mut self,
        indices: &[Index],
        axis: impl Fn(usize) -> usize,
    ) -> bool {
        indices.iter().enumerate().any(|(d, ix)| {
            if self.needs_pattern(ix) {
                return true;
            }
            let Index::Expr(e) = ix else { return false };
            if !self.is_vector_expr(e) {
                return false;
            }
            match self.peek_vector(e) {
                Some(v) if v.len > 1 => match v.axis {
                    Some(a) if v.ndim > 2 => a != d,
                    Some(a) => a != axis(d),
                    None => false,
                },
                _ => false,
            }
        })
    }

    /// `base[indices]` as an access pattern over the dimensions `lay` of `base` (the whole of
    /// its tensor, or a 2-D view of one).
    pub(super) fn nd_pattern(
        &mut self,
        base: &TileVal,
        lay: &NdLayout,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<TileVal> {
        let refuse = |cx: &mut Self, why: String| cx.refuse_pattern(why, HELP, span);
        if base.pattern.is_some() {
            return refuse(
                self,
                format!("`{name}` is already an access pattern: a view of it is not one"),
            );
        }
        let dims = lay.dims;
        if indices.len() > dims.len() {
            self.error(CheckError::NdIndexCount {
                name: name.to_string(),
                dims: dims.to_vec(),
                indices: indices.len(),
                at: span.clone(),
            });
            return None;
        }
        let mut start = base.start.clone();
        let mut axes: Vec<Ax> = Vec::new();
        let mut ok = true;
        for (d, &extent) in dims.iter().enumerate() {
            let (sum, slice) = match indices.get(d) {
                Some(ix) => match self.index_sum(ix, d, extent) {
                    Some(s) => (
                        s,
                        match ix {
                            Index::Slice { .. } => true,
                            Index::Expr(e) => super::index_sums::is_ds(e),
                        },
                    ),
                    None => {
                        ok = false;
                        continue;
                    }
                },
                None => (
                    Sum {
                        start: AffineExpr::constant(0),
                        terms: vec![Term {
                            key: d,
                            count: extent,
                            step: 1,
                            grid: None,
                        }],
                    },
                    true,
                ),
            };
            if let Some(t) = sum.terms.iter().find(|t| t.step <= 0 && t.count > 1) {
                self.hint_unroll(t.grid, t.key, t.count);
                refuse(
                    self,
                    format!(
                        "its index of dimension {d} steps by {}: an access pattern takes positive steps{}",
                        t.step, UNROLL_NOTE
                    ),
                );
                ok = false;
                continue;
            }
            let ext = sum.terms.iter().fold(1u64, |a, t| {
                a.saturating_add((t.count - 1).saturating_mul(t.step as u64))
            });
            let at = indices.get(d).map_or(span.clone(), |ix| ix.span());
            let ax = usize::from(lay.strides[d][1] != 0);
            let reach = mask_reach(&sum.terms, ax, ext);
            if self
                .check_bounds_masked(&sum.start, ext, extent, name, ax, reach, at)
                .is_none()
            {
                ok = false;
                continue;
            }
            let st = lay.strides[d];
            for (k, s) in start.iter_mut().enumerate() {
                match lin(s, 1, &sum.start, st[k]) {
                    Some(x) => *s = x,
                    None => {
                        self.overflow(span.clone());
                        return None;
                    }
                }
            }
            for t in sum.terms {
                let (Some(a), Some(b)) = (t.step.checked_mul(st[0]), t.step.checked_mul(st[1]))
                else {
                    self.overflow(span.clone());
                    return None;
                };
                // An axis of one element moves nowhere (its step may be anything, even
                // negative, in the source).
                let step = if t.count > 1 { [a, b] } else { [0, 0] };
                axes.push(Ax {
                    key: t.key,
                    count: t.count,
                    step,
                    slice,
                    grid: t.grid,
                });
            }
        }
        if !ok {
            return None;
        }
        // With an index vector, the value's axes are those of the index grid, axis 0 the
        // partition axis; with slices only, the first dimension kept is.
        let gridded = axes.iter().any(|a| !a.slice);
        // One value axis per key: terms of one key add their steps.
        axes.sort_by_key(|a| a.key);
        let mut merged: Vec<Ax> = Vec::new();
        for a in axes {
            match merged.last_mut() {
                Some(m) if m.key == a.key => {
                    if m.slice || a.slice || m.count != a.count {
                        return refuse(
                            self,
                            format!("two of its indices vary along axis {} of the index grid with different extents, or one of them is a slice", a.key),
                        );
                    }
                    m.step = [m.step[0] + a.step[0], m.step[1] + a.step[1]];
                }
                _ => merged.push(a),
            }
        }
        let part = if merged.is_empty() || (gridded && merged[0].key != 0) {
            Ax {
                key: 0,
                count: 1,
                step: [1, 0],
                slice: false,
                grid: None,
            }
        } else {
            merged.remove(0)
        };
        let pstep = if part.count == 1 { [1, 0] } else { part.step };
        if lay.on_chip && pstep != [1, 0] {
            return refuse(
                self,
                "its partition index is strided or moves along the free dimension: on chip the partition axis is never strided; for a window over rows (`x[i_h + i_kh, i_w]`) write one access per window offset (`for kh in nl.static_range(k):` ... `x[i_h + kh, i_w]`)".to_string(),
            );
        }
        if lay.on_chip && merged.iter().any(|a| a.count > 1 && a.step[0] != 0) {
            return refuse(
                self,
                "a free index moves across partitions: on chip a free axis steps along the free dimension only".to_string(),
            );
        }
        // The value keeps an axis per key (a reduction names them) while the machine takes
        // them: then axes of one element go, then contiguous neighbours merge.
        let room = if lay.on_chip { 4 } else { 3 };
        let mut free: Vec<(u64, [i64; 2])> = merged.iter().map(|a| (a.count, a.step)).collect();
        if free.len() > room {
            free.retain(|a| a.0 > 1);
        }
        if free.len() > room {
            let mut m: Vec<(u64, [i64; 2])> = Vec::new();
            for &(c, s) in &free {
                match m.last_mut() {
                    Some((mc, ms))
                        if ms[0] == s[0].saturating_mul(c as i64)
                            && ms[1] == s[1].saturating_mul(c as i64) =>
                    {
                        *mc = mc.saturating_mul(c);
                        *ms = s;
                    }
                    _ => m.push((c, s)),
                }
            }
            free = m;
        }
        if free.len() > room {
            // unroll_axes: the outermost free axis of the grid, traced once per index.
            if let Some(a) = merged.iter().find(|a| a.grid.is_some() && a.count > 1) {
                self.hint_unroll(a.grid, a.key, a.count);
            }
            return refuse(
                self,
                format!(
                    "it has {} free axes; the machine's access patterns have at most {room} here{}",
                    free.len(),
                    UNROLL_NOTE
                ),
            );
        }
        let part = PatAxis {
            count: part.count,
            step: pstep.to_vec(),
        };
        let free = (free.iter())
            .map(|&(count, s)| PatAxis {
                count,
                step: s.to_vec(),
            })
            .collect();
        Some(TileVal::of_pattern(base.tensor, start, part, free))
    }
}

impl Checker<'_> {
    /// The NKI shape of the value `src` reads when it has more than 2 axes: an access
    /// pattern's axes, an N-D HBM slice's kept dimensions, a whole N-D tensor's dimensions, or
    /// a tile's recorded shape; partition first, and flattening to `src`'s `[P, F]`.
    pub(super) fn value_dims(&self, src: &TileVal) -> Option<Vec<u64>> {
        let dims = if let Some(p) = &src.pattern {
            p.axes.iter().map(|a| a.count).collect()
        } else if let Some(d) = self.logical_dims(src) {
            // An on-chip array's partition dimension first, the others in order (their
            // row-major flattening is the free dimension).
            match self.tile_nd.par.get(&src.tensor) {
                Some(&par) if par < d.len() => std::iter::once(d[par])
                    .chain(
                        d.iter()
                            .enumerate()
                            .filter(|&(k, _)| k != par)
                            .map(|(_, &x)| x),
                    )
                    .collect(),
                _ => d.clone(),
            }
        } else if let Some(d) = &src.dims {
            d.clone()
        } else {
            let d = self.tile_nd.shaped.get(&src.tensor)?;
            if !src.is_whole(self.tensor(src.tensor).shape) {
                return None;
            }
            d.clone()
        };
        let shape = src.tile_shape();
        let free = dims.iter().skip(1).try_fold(1u64, |a, &d| a.checked_mul(d));
        (dims.len() > 2 && dims.first() == Some(&shape[0]) && free == Some(shape[1]))
            .then_some(dims)
    }

    /// Records `dims` (from [`Checker::value_dims`]) as the NKI shape of a new whole tile `t`.
    pub(super) fn keep_shape(&mut self, t: &TileVal, dims: Option<Vec<u64>>) {
        let Some(dims) = dims else { return };
        let tensor = self.tensor(t.tensor);
        if t.pattern.is_none()
            && tensor.memory != penguin::Memory::Hbm
            && t.is_whole(tensor.shape)
            && !self.tile_nd.par.contains_key(&t.tensor)
        {
            self.tile_nd.shaped.insert(t.tensor, dims);
        }
    }

    /// A whole tile with a recorded NKI shape of more than 2 axes as the access pattern of
    /// those axes over itself (row-major along its free dimension); any other tile unchanged.
    pub(super) fn shaped_as_pattern(&self, x: TileVal) -> TileVal {
        if x.pattern.is_some() || !x.is_whole(self.tensor(x.tensor).shape) {
            return x;
        }
        // A reshaped view of the tile (tile_reshape.rs) carries its own dimensions.
        let own = x.dims.as_ref().filter(|d| {
            d.len() > 2
                && self.tensor(x.tensor).memory != penguin::Memory::Hbm
                && self.tile_nd.par.get(&x.tensor).is_none_or(|&p| p == 0)
        });
        // An on-chip array allocated with more than 2 dimensions, its partitions first
        // (`nl.ndarray((nl.par_dim(128), w, 4))`): the same row-major layout.
        let allocated = self.logical.get(&x.tensor).filter(|d| {
            d.len() > 2
                && self.tensor(x.tensor).memory != penguin::Memory::Hbm
                && self.tile_nd.par.get(&x.tensor).is_none_or(|&p| p == 0)
        });
        let Some(dims) = own
            .or_else(|| self.tile_nd.shaped.get(&x.tensor))
            .or(allocated)
        else {
            return x;
        };
        let lay = NdLayout::on_chip(dims, 0);
        let axes = dims
            .iter()
            .zip(&lay.strides)
            .map(|(&count, s)| PatAxis {
                count,
                step: s.to_vec(),
            })
            .collect();
        TileVal {
            pattern: Some(Pattern { axes }),
            ..x
        }
    }
}

impl Checker<'_> {
    /// Whether a tile written at `at` reaches each element once: a pattern that reaches some
    /// element twice (overlapping windows) or cannot be shown not to is a diagnostic.
    pub(super) fn written_pattern_ok(&mut self, t: &TileVal, at: &Span) -> bool {
        let Some(p) = &t.pattern else { return true };
        let shape = self.tensor(t.tensor).shape;
        let why = match p.reaches_twice(&shape) {
            Some(false) => return true,
            Some(true) => "it is written, and it reaches some element twice (overlapping windows)",
            None => "it is written, and nkc cannot show that its elements are distinct",
        };
        self.error(CheckError::AccessPattern {
            why: why.to_string(),
            help: "write through a pattern whose axes reach distinct elements (a window is read, not written: write each window offset with its own statement)",
            at: at.clone(),
        });
        false
    }
}
