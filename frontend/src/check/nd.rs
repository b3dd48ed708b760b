//! HBM tensors of other than 2 dimensions: a vector `[N]`, or `[B, S, D]` activations.
//!
//! Such a tensor is stored row-major, as the 2-D array `[B·S, D]` (a vector as the one row
//! `[1, N]`): that is the tensor's shape in Penguin IR, and in the simulator's and the
//! interpreter's memory. The declared dimensions (the *logical* shape) are kept beside it:
//! `x.shape` gives them, and a subscript names every one of them.
//!
//! A subscript `x[b, i0:i1, :]` selects, in each dimension, a single index (which drops the
//! dimension, as in numpy) or a range; it becomes the 2-D tile of the rows it covers in the
//! stored array when they are contiguous (once a leading dimension selects more than one index,
//! every leading dimension after it is selected whole); other subscripts (rows that are not
//! contiguous, strides, exchanged index vectors) are HBM access patterns (`patterns_nd`).
//! Missing trailing indices are whole dimensions. Every index is checked against its own
//! dimension's extent.

use super::arith::{lin, MAX_EXTENT};
use super::error::CheckError;
use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind, Index, Span};
use penguin::AffineExpr;

/// The stored 2-D shape of a tensor of logical shape `dims` (any rank from 1): `None` when a
/// dimension is 0 or the rows exceed the largest extent.
pub(crate) fn flatten(dims: &[u64]) -> Option<[u64; 2]> {
    let (&last, leading) = dims.split_last()?;
    if dims.iter().any(|&d| d == 0 || d > MAX_EXTENT as u64) {
        return None;
    }
    let rows = leading
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&r| r <= MAX_EXTENT as u64)?;
    Some([rows, last])
}

impl Checker<'_> {
    /// The logical shape of a tile, when it is a whole tensor declared with other than 2
    /// dimensions, or a subscript of one that keeps more than 2.
    pub(crate) fn logical_dims<'a>(&'a self, t: &'a TileVal) -> Option<&'a Vec<u64>> {
        if let Some(kept) = &t.dims {
            // A subscript's own dimensions; two or fewer index as a 2-D tile.
            return (kept.len() > 2).then_some(kept);
        }
        let dims = self.logical.get(&t.tensor)?;
        t.is_whole(self.tensor(t.tensor).shape).then_some(dims)
    }

    /// `x[indices]` on a tensor of logical shape `dims`.
    pub(crate) fn subscript_nd(
        &mut self,
        base: &TileVal,
        dims: &[u64],
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<TileVal> {
        // A view of a tensor a reshape stores in rows of another length (`reshape`).
        let stored = self.tensor(base.tensor).shape;
        if base.dims.is_none() && base.is_whole(stored) && flatten(dims) != Some(stored) {
            self.error(
                vocab::Diagnostic::new(
                    crate::codes::RESHAPE_LAYOUT,
                    format!(
                        "nkc cannot index `{name}` with shape {dims:?}: the tensor is stored as [{}, {}] by a reshape",
                        stored[0], stored[1]
                    ),
                    span.clone(),
                )
                .with_label("rows of another length")
                .with_help("index the tensor through the reshaped view, or reshape it back to a shape of the same last dimension first"),
            );
            return None;
        }
        // The last dimension is the free one; the others are rows.
        let last = dims.len() - 1;
        // patterns_nd: strided views and exchanged index vectors (a transposing DMA).
        let lay = super::patterns_nd::NdLayout::hbm(dims);
        if self.nd_wants_pattern(indices, |d| usize::from(d == last && dims.len() > 1)) {
            return self.nd_pattern(base, &lay, name, indices, span);
        }
        let sel = self.select_dims(dims, name, indices, span, |d| {
            usize::from(d == last && dims.len() > 1)
        })?;
        // A vector `[N]` is the row `[1, N]`.
        let (cols, leading) = sel.split_last().expect("a tensor has a dimension");
        let mut row_start = AffineExpr::constant(0);
        let mut rows = 1u64;
        let mut stride = 1i64;
        // Whether a dimension inside this one is not selected whole.
        let mut partial = false;
        for (d, (lo, size)) in leading.iter().enumerate().rev() {
            let Some(s) = lin(&row_start, 1, lo, stride) else {
                return self.nd_overflow(span);
            };
            row_start = s;
            let whole = *size == dims[d] && lo.as_constant() == Some(0);
            if partial && *size > 1 {
                // Rows that are not contiguous: an HBM access pattern (patterns_nd).
                return self.nd_pattern(base, &lay, name, indices, span);
            }
            partial |= !whole;
            rows *= size;
            stride *= dims[d] as i64;
        }
        let Some(row_start) = lin(&base.start[0], 1, &row_start, 1) else {
            return self.nd_overflow(span);
        };
        let Some(col_start) = lin(&base.start[1], 1, &cols.0, 1) else {
            return self.nd_overflow(span);
        };
        // NKI's tile of this slice: the dimensions a slice (or a missing index) keeps, the
        // first of them the partition axis and the rest flattened onto the free axis. It
        // differs from the stored rectangle when more than one leading dimension is kept (and
        // the last one is too: a dropped last dimension keeps the rectangle).
        let kept = |d: usize| match indices.get(d) {
            None | Some(Index::Slice { .. }) => true,
            Some(Index::Expr(_)) => sel[d].1 > 1,
        };
        let kept_leading: Vec<u64> = (0..last).filter(|&d| kept(d)).map(|d| sel[d].1).collect();
        let view = match kept_leading.split_first() {
            Some((&p, more)) if !more.is_empty() && (dims.len() == 1 || kept(last)) => {
                let k: u64 = more.iter().product();
                Some([p, k * cols.1])
            }
            _ => None,
        };
        let kept_dims = (0..=last).filter(|&d| kept(d)).map(|d| sel[d].1).collect();
        if let Some(t) =
            self.vector_on_partitions(base.tensor, dims, indices, [&row_start, &col_start])
        {
            return Some(t);
        }
        Some(TileVal {
            tensor: base.tensor,
            start: [row_start, col_start],
            size: [rows, cols.1],
            view,
            pattern: None,
            dims: Some(kept_dims),
            indirect: None,
        })
    }

    /// The start and size each index of a subscript of a tensor of dimensions `dims` selects
    /// (a missing trailing index is the whole dimension); `axis(d)` is 0 when dimension `d`
    /// is a partition (row) dimension, 1 when it is a free one.
    pub(crate) fn select_dims(
        &mut self,
        dims: &[u64],
        name: &str,
        indices: &[Index],
        span: &Span,
        axis: impl Fn(usize) -> usize,
    ) -> Option<Vec<(AffineExpr, u64)>> {
        if indices.len() > dims.len() {
            self.error(CheckError::NdIndexCount {
                name: name.to_string(),
                dims: dims.to_vec(),
                indices: indices.len(),
                at: span.clone(),
            });
            return None;
        }
        let mut sel = Vec::with_capacity(dims.len());
        let mut ok = true;
        for (d, &extent) in dims.iter().enumerate() {
            let r = match indices.get(d) {
                Some(ix) => self.index_in(extent, name, axis(d), d, ix),
                None => Some((AffineExpr::constant(0), extent)),
            };
            match r {
                Some(x) => sel.push(x),
                None => ok = false,
            }
        }
        ok.then_some(sel)
    }

    /// NKI's tile of a vector `[N]` indexed by a partition-axis index vector (`v[i_p]`,
    /// `i_p = nl.arange(n)[:, None]`): `[n, 1]`, one element per partition, as an access pattern
    /// over the stored row `[1, N]`. `None` for any other subscript.
    fn vector_on_partitions(
        &mut self,
        tensor: penguin::Tensor,
        dims: &[u64],
        indices: &[Index],
        [row, col]: [&AffineExpr; 2],
    ) -> Option<TileVal> {
        let [Index::Expr(e)] = indices else {
            return None;
        };
        if dims.len() != 1 || !self.is_vector_expr(e) {
            return None;
        }
        let v = self.single_vector(e)?;
        if v.axis != Some(0) || v.ndim != 2 || v.step != 1 || v.len < 2 {
            return None;
        }
        let axes = vec![
            penguin::PatAxis {
                count: v.len,
                step: vec![0, 1],
            },
            penguin::PatAxis {
                count: 1,
                step: vec![0, 0],
            },
        ];
        Some(TileVal {
            tensor,
            start: [row.clone(), col.clone()],
            size: [v.len, 1],
            view: None,
            pattern: Some(penguin::Pattern { axes }),
            dims: None,
            indirect: None,
        })
    }

    fn nd_overflow<T>(&mut self, span: &Span) -> Option<T> {
        self.error(CheckError::SliceOverflow { at: span.clone() });
        None
    }

    /// The shape `(d0, d1, ...)` of an `nl.ndarray` in HBM: one or more positive compile-time
    /// integers (or `x.shape`), with the stored 2-D shape.
    pub(crate) fn hbm_dims(&mut self, e: &Expr) -> Option<(Vec<u64>, [u64; 2])> {
        let dims: Vec<u64> = match &e.kind {
            ExprKind::Attribute { value, attr } if attr.name == "shape" => {
                self.shape_value(value)?
            }
            ExprKind::Tuple(items) if !items.is_empty() => {
                let ds: Vec<Option<u64>> = items.iter().map(|i| self.dim(i)).collect();
                ds.into_iter().collect::<Option<_>>()?
            }
            _ => return self.shape_of(e).map(|s| (s.to_vec(), s)),
        };
        match flatten(&dims) {
            Some(flat) => Some((dims, flat)),
            None => {
                self.error(CheckError::BadHbmShape {
                    dims: dims.clone(),
                    at: e.span.clone(),
                });
                None
            }
        }
    }
}
