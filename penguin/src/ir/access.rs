//! Accesses: the part of a tensor an operand reads or writes, a box or a general access
//! pattern ([`Access`], [`Pattern`]), and how a DMA pairs an HBM rectangle with a tile
//! ([`dma_rows_per_partition`]).
//!
//! Invariants (checked by [`crate::verify`]): one start and one size per tensor dimension, one
//! slot per block dimension; a pattern's steps are non-negative and its `size` is its bounding
//! box, so every analysis of the box `start .. start + size` over-approximates soundly.

use crate::affine::AffineExpr;
use crate::entities::Tensor;

/// The part of a tensor that an operand reads or writes.
///
/// A *box* (`pattern` is `None`, the common case) selects `size[d]` consecutive indices from
/// `start[d]` in every tensor dimension `d`; its value has the shape `size`.
///
/// A general *access pattern* (`pattern` is `Some`) names the value's own axes: axis `k` has
/// `count` indices, and index `i_k` along it moves `i_k * step[d]` along tensor dimension `d`.
/// Value element `(i_0, i_1, ..., i_n)` is tensor element `start + Σ_k i_k * step_k`. Axis 0 is
/// the value's partition axis; axes `1..` are its free axes, flattened row-major into the value's
/// one free dimension, so the value is the `[count_0, Π count_k]` tile ([`Access::value_shape`]).
/// Every step is non-negative, and `size` then holds the pattern's bounding box,
/// `size[d] = 1 + Σ_k (count_k - 1) * step_k[d]` ([`Pattern::bounding_box`]): every analysis that
/// reasons about the box `start .. start + size` (dependences, footprints, races, the ISL
/// relations) sees a sound over-approximation of the elements the pattern touches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// One start per tensor dimension.
    pub start: Vec<AffineExpr>,
    /// One constant size per tensor dimension: the box, or a pattern's bounding box.
    pub size: Vec<u64>,
    /// One slot selector per block dimension of the tensor, taken modulo that dimension's count.
    pub slots: Vec<AffineExpr>,
    /// The value's axes when the access is not a box.
    pub pattern: Option<Pattern>,
}

/// One axis of a value read through an access pattern: `count` indices, `step[d]` elements apart
/// along tensor dimension `d`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PatAxis {
    pub count: u64,
    pub step: Vec<i64>,
}

/// The most values [`Pattern::reaches_twice`] enumerates to decide a pattern that does not nest.
pub const MAX_PATTERN_ENUMERATION: usize = 1 << 22;

/// The value axes of a general access pattern (see [`Access`]): the partition axis first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pattern {
    pub axes: Vec<PatAxis>,
}

impl Pattern {
    /// The extent of the pattern in each of `rank` tensor dimensions,
    /// `1 + Σ_k (count_k - 1) * step_k[d]`, or `None` when a step is negative, a count is 0 or a
    /// step vector has the wrong length, or the extent overflows.
    pub fn bounding_box(&self, rank: usize) -> Option<Vec<u64>> {
        let mut out = vec![1u64; rank];
        for a in &self.axes {
            if a.count == 0 || a.step.len() != rank {
                return None;
            }
            for (o, &s) in out.iter_mut().zip(&a.step) {
                let s = u64::try_from(s).ok()?;
                *o = o.checked_add((a.count - 1).checked_mul(s)?)?;
            }
        }
        Some(out)
    }

    /// The value's shape, `[count_0, Π_{k ≥ 1} count_k]` (saturating).
    pub fn value_shape(&self) -> Vec<u64> {
        let p = self.axes.first().map_or(1, |a| a.count);
        let f = self
            .axes
            .iter()
            .skip(1)
            .fold(1u64, |a, x| a.saturating_mul(x.count));
        vec![p, f]
    }

    /// Whether the pattern reaches some element of a tensor of shape `shape` twice (its steps
    /// non-negative, one per dimension: a pattern whose [`Pattern::bounding_box`] exists).
    /// `None` when that cannot be decided within [`MAX_PATTERN_ENUMERATION`] elements.
    ///
    /// Decided without enumerating where possible, so that a pattern of 2^40 values costs
    /// nothing: more values than the bounding box has elements reach one twice (pigeonhole);
    /// axes that nest (each, by its step in the row-major flattening, steps past everything the
    /// axes of smaller step reach) reach distinct elements, as the digits of a mixed radix.
    /// Otherwise the flat offsets are enumerated and compared.
    pub fn reaches_twice(&self, shape: &[u64]) -> Option<bool> {
        let rank = shape.len();
        let bbox = self.bounding_box(rank)?;
        let values = self
            .axes
            .iter()
            .fold(1u128, |n, a| n.saturating_mul(u128::from(a.count)));
        let volume = bbox
            .iter()
            .fold(1u128, |n, &d| n.saturating_mul(u128::from(d)));
        if values > volume {
            return Some(true);
        }
        // The row-major stride of each dimension, and each axis's flattened step.
        let mut strides = vec![1u128; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1].saturating_mul(u128::from(shape[d + 1]));
        }
        let mut axes: Vec<(u128, u64)> = self
            .axes
            .iter()
            .filter(|a| a.count > 1)
            .map(|a| {
                let step = a.step.iter().zip(&strides).fold(0u128, |acc, (&s, &st)| {
                    acc.saturating_add((s.max(0) as u128).saturating_mul(st))
                });
                (step, a.count)
            })
            .collect();
        axes.sort_unstable();
        let mut span = 0u128;
        let nested = axes.iter().all(|&(step, count)| {
            let ok = step > span;
            span = span.saturating_add(step.saturating_mul(u128::from(count - 1)));
            ok
        });
        if nested {
            return Some(false);
        }
        if values > MAX_PATTERN_ENUMERATION as u128 || span > i64::MAX as u128 {
            return None;
        }
        let mut flat: Vec<i64> = vec![0];
        for &(step, count) in &axes {
            let step = step as i64;
            flat = flat
                .iter()
                .flat_map(|&b| (0..count as i64).map(move |i| b + i * step))
                .collect();
        }
        let n = flat.len();
        flat.sort_unstable();
        flat.dedup();
        Some(flat.len() != n)
    }

    /// Whether the elements `[lo, hi)` of index `dim` of the value (0: its partition axis, 1:
    /// its flattened free axes) are themselves a pattern: always for the partition axis; for
    /// the free index when at most one free axis has more than one element.
    pub fn clips(&self, dim: usize) -> bool {
        dim == 0 || self.axes.iter().skip(1).filter(|a| a.count > 1).count() <= 1
    }

    /// The axis index `dim` of the value runs along when it [`Pattern::clips`]: the partition
    /// axis, or the one free axis of more than one element (the last free axis when none has).
    pub fn clipped_axis(&self, dim: usize) -> Option<&PatAxis> {
        self.axes.get(self.clipped_axis_index(dim))
    }

    fn clipped_axis_mut(&mut self, dim: usize) -> Option<&mut PatAxis> {
        let k = self.clipped_axis_index(dim);
        self.axes.get_mut(k)
    }

    fn clipped_axis_index(&self, dim: usize) -> usize {
        if dim == 0 {
            return 0;
        }
        (1..self.axes.len())
            .find(|&k| self.axes[k].count > 1)
            .unwrap_or(self.axes.len().saturating_sub(1))
    }

    /// Cuts index `dim` of the value to `[lo, hi)` (see [`Pattern::clips`], which must hold):
    /// the axis it runs along keeps `hi - lo` elements from its `lo`-th, whose offset is added
    /// to `start` (one per tensor dimension).
    pub fn clip_index(&mut self, dim: usize, (lo, hi): (u64, u64), start: &mut [AffineExpr]) {
        let Some(a) = self.clipped_axis_mut(dim) else {
            return;
        };
        for (e, &s) in start.iter_mut().zip(&a.step) {
            // Saturating: a start this large is out of range anyway, and reported.
            let c = e
                .constant_term()
                .saturating_add((lo as i64).saturating_mul(s));
            *e = AffineExpr::from_terms(e.terms().iter().copied(), c);
        }
        a.count = hi - lo;
    }

    /// The offsets (per tensor dimension, from the start) of every value element, in the
    /// value's row-major order.
    pub fn offsets(&self) -> Vec<Vec<i64>> {
        let rank = self.axes.first().map_or(0, |a| a.step.len());
        let mut out = vec![vec![0i64; rank]];
        for a in &self.axes {
            let mut next = Vec::with_capacity(out.len().saturating_mul(a.count as usize));
            for base in &out {
                for i in 0..a.count as i64 {
                    next.push(base.iter().zip(&a.step).map(|(b, s)| b + i * s).collect());
                }
            }
            out = next;
        }
        out
    }
}

/// How a load or store pairs an HBM rectangle `hbm` (`[rows, cols]`) with a tile `tile`
/// (`[P, F]`): `Some(k)` when `rows = P·k` and `F = k·cols`, so that partition `p` holds the
/// `k` HBM rows `p·k .. p·k + k` one after another (the partition-major layout of an N-D
/// tensor's slice, NKI's rule: the first dimension of the tile is the partition axis, the rest
/// flatten onto the free axis). `k = 1` is the plain same-shape transfer. Elements pair in
/// row-major order on both sides.
pub fn dma_rows_per_partition(hbm: [u64; 2], tile: [u64; 2]) -> Option<u64> {
    let [rows, cols] = hbm;
    let [p, f] = tile;
    if p == 0 || cols == 0 || !rows.is_multiple_of(p) {
        return None;
    }
    let k = rows / p;
    (k.checked_mul(cols) == Some(f)).then_some(k)
}

impl Access {
    /// Whether the access selects the whole of a tensor of shape `shape`: every start 0, every
    /// size the dimension's, and no pattern.
    pub fn is_whole(&self, shape: &[u64]) -> bool {
        self.pattern.is_none()
            && self.start.iter().all(|e| e.as_constant() == Some(0))
            && self.size == shape
    }

    /// Whether the access reaches every element of a tensor of shape `shape` exactly once: a
    /// whole box ([`Self::is_whole`]), or a pattern from the origin whose bounding box is the
    /// tensor, with as many values as the tensor has elements and none reached twice (so, by
    /// pigeonhole, every element once: a transposing or permuting write of a whole tile). Unlike
    /// `is_whole`, the value's order need not be the tensor's: only the set of elements counts.
    pub fn covers_whole(&self, shape: &[u64]) -> bool {
        if self.is_whole(shape) {
            return true;
        }
        let Some(p) = &self.pattern else {
            return false;
        };
        let values = (p.axes.iter()).fold(1u128, |n, a| n.saturating_mul(u128::from(a.count)));
        let elements = (shape.iter()).fold(1u128, |n, &d| n.saturating_mul(u128::from(d)));
        self.start.iter().all(|e| e.as_constant() == Some(0))
            && self.size == shape
            && p.bounding_box(shape.len()).as_deref() == Some(shape)
            && values == elements
            && p.reaches_twice(shape) == Some(false)
    }

    /// The whole of an unblocked tensor of the given shape.
    pub fn whole(shape: &[u64]) -> Self {
        Access {
            start: shape.iter().map(|_| AffineExpr::constant(0)).collect(),
            size: shape.to_vec(),
            slots: Vec::new(),
            pattern: None,
        }
    }

    /// A box access.
    pub fn boxed(start: Vec<AffineExpr>, size: Vec<u64>, slots: Vec<AffineExpr>) -> Self {
        Access {
            start,
            size,
            slots,
            pattern: None,
        }
    }

    /// The elements per partition of the value read or written (its free dimensions' product,
    /// at least 1: the machine's `N`), counted on [`Self::value_shape`], not on a bounding box.
    pub fn value_free(&self) -> u64 {
        self.value_shape().iter().skip(1).product::<u64>().max(1)
    }

    /// The shape of the value read or written: the box's sizes, or the pattern's
    /// `[partitions, free elements]`.
    pub fn value_shape(&self) -> Vec<u64> {
        match &self.pattern {
            None => self.size.clone(),
            Some(p) => p.value_shape(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    pub tensor: Tensor,
    pub access: Access,
}
