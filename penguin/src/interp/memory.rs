//! The interpreter's storage: one flat `f32` buffer per tensor, with its initialisation map.
//!
//! A tensor of shape `[rows, cols]` and block dimensions `c0, c1, …` holds `slots × rows × cols`
//! values, slot-major and then row-major: element `(r, c)` of slot `s` is at
//! `s·rows·cols + r·cols + c`. The slot of an access is resolved by the executor; this module
//! sees only [`Region`]s already checked to lie inside the buffer.
//!
//! Invariants:
//! - a `bf16` buffer only ever holds values that are exactly representable in bfloat16: every
//!   write goes through [`round_bf16`];
//! - `defined[i]` is true exactly when element `i` holds a defined value: it has been written,
//!   with a value not computed from undefined ones ([`vocab::poison`]). Only buffers that track
//!   initialisation have the map (everything but kernel inputs and constants, which are fully
//!   defined on entry);
//! - an unwritten element holds `0.0`, so an output that is never written reads back as zeros;
//! - an HBM buffer never holds an element that was written undefined: the executor refuses such
//!   a write before it reaches the buffer.

use crate::entities::Axis;
use crate::ir::{canonical_nan, DType, Memory, TensorData};
use vocab::poison::Undef;

pub use vocab::round_bf16;

/// Cap on one tensor's storage, in elements (16 GiB of f32), so malformed IR gets an error rather
/// than an allocation failure.
const MAX_ELEMS: u64 = 1 << 32;

/// A tile of a buffer: `rows × cols` elements from `(row0, col0)` of slot `slot`, or, for an
/// access pattern, the `rows × cols` elements at `(row0, col0)` plus the offsets in `pattern`
/// (row-major over the tile). Always inside the buffer (the executor checks before building one).
#[derive(Clone, Debug)]
pub(super) struct Region {
    pub slot: usize,
    pub row0: usize,
    pub col0: usize,
    pub rows: usize,
    pub cols: usize,
    /// `(row, col)` offsets from `(row0, col0)`, one per tile element, for a pattern.
    pub pattern: Option<Vec<(usize, usize)>>,
}

impl Region {
    pub fn len(&self) -> usize {
        self.rows * self.cols
    }
}

impl Region {
    /// Slot, row and column in the tensor of tile element `i` (row-major over the tile).
    pub fn element(&self, i: usize) -> (usize, usize, usize) {
        let (dr, dc) = match &self.pattern {
            Some(pat) => pat[i],
            None => (i / self.cols.max(1), i % self.cols.max(1)),
        };
        (self.slot, self.row0 + dr, self.col0 + dc)
    }
}

pub(super) struct Buffer {
    pub rows: usize,
    pub cols: usize,
    /// The block dimension counts, outermost first (all ≥ 1).
    pub block_counts: Vec<u64>,
    pub bf16: bool,
    pub read_only: bool,
    /// Whether the tensor lives in HBM (where an undefined value may never be written).
    pub hbm: bool,
    data: Vec<f32>,
    /// Empty when the buffer is fully defined (inputs and constants).
    defined: Vec<bool>,
}

/// Why a tensor cannot be stored ([`Buffer::new`]); its text follows the tensor's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferError {
    /// The tensor is not 2-D: its rank.
    Rank(usize),
    /// A block dimension along this loop has count 0.
    EmptyBlock(Axis),
    /// More elements than the interpreter holds.
    TooLarge,
}

impl std::fmt::Display for BufferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BufferError::Rank(r) => write!(f, "has rank {r} (the interpreter needs 2-D tensors)"),
            BufferError::EmptyBlock(axis) => {
                write!(f, "has a block dimension of count 0 along {axis}")
            }
            BufferError::TooLarge => f.write_str("is too large to interpret"),
        }
    }
}

impl Buffer {
    /// An all-unwritten buffer for a tensor, or why the tensor cannot be stored.
    pub fn new(t: &TensorData) -> Result<Buffer, BufferError> {
        if t.shape.len() != 2 {
            return Err(BufferError::Rank(t.shape.len()));
        }
        if let Some(b) = t.block.iter().find(|b| b.count == 0) {
            return Err(BufferError::EmptyBlock(b.axis));
        }
        let too_large = || BufferError::TooLarge;
        let elems = t.shape[0].checked_mul(t.shape[1]).ok_or_else(too_large)?;
        let total = t
            .block
            .iter()
            .try_fold(elems, |acc, b| acc.checked_mul(u64::from(b.count)))
            .filter(|&n| n <= MAX_ELEMS)
            .ok_or_else(too_large)?;
        let total = usize::try_from(total).map_err(|_| too_large())?;
        let input = t.kind.is_read_only();
        Ok(Buffer {
            rows: t.shape[0] as usize,
            cols: t.shape[1] as usize,
            block_counts: t.block.iter().map(|b| u64::from(b.count)).collect(),
            bf16: t.dtype == DType::Bf16,
            read_only: input,
            hbm: t.memory == Memory::Hbm,
            data: vec![0.0; total],
            defined: if input {
                Vec::new()
            } else {
                vec![false; total]
            },
        })
    }

    fn elems(&self) -> usize {
        self.rows * self.cols
    }

    /// Fills slot 0 with `values` (already of length `rows × cols`) and marks the whole buffer
    /// initialised, rounding to bfloat16 for a bf16 buffer.
    pub fn fill_input(&mut self, values: &[f32]) {
        let n = self.elems().min(values.len());
        for (d, &v) in self.data[..n].iter_mut().zip(values) {
            let v = canonical_nan(v);
            *d = if self.bf16 { round_bf16(v) } else { v };
        }
        self.defined.clear();
    }

    /// The values of slot 0 (the whole tensor for an unblocked one).
    pub fn slot0(&self) -> &[f32] {
        &self.data[..self.elems()]
    }

    fn offset(&self, r: &Region, row: usize) -> usize {
        r.slot * self.elems() + (r.row0 + row) * self.cols + r.col0
    }

    /// The tile's values in row-major order, and which of them are undefined (`None`: none).
    pub fn read(&self, r: &Region) -> (Vec<f32>, Undef) {
        let mut out = Vec::with_capacity(r.len());
        let track = !self.defined.is_empty();
        let mut undef: Option<Vec<bool>> = None;
        if let Some(pat) = &r.pattern {
            for (i, &(dr, dc)) in pat.iter().enumerate() {
                let o = r.slot * self.elems() + (r.row0 + dr) * self.cols + r.col0 + dc;
                if track && !self.defined[o] {
                    undef.get_or_insert_with(|| vec![false; r.len()])[i] = true;
                }
                out.push(self.data[o]);
            }
            return (out, undef);
        }
        for row in 0..r.rows {
            let o = self.offset(r, row);
            let flags = &self.defined[if track { o..o + r.cols } else { 0..0 }];
            if !flags.iter().all(|&d| d) {
                let u = undef.get_or_insert_with(|| vec![false; r.len()]);
                for (x, &d) in u[row * r.cols..(row + 1) * r.cols].iter_mut().zip(flags) {
                    *x = !d;
                }
            }
            out.extend_from_slice(&self.data[o..o + r.cols]);
        }
        (out, undef)
    }

    /// Stores a row-major tile (rounding to bfloat16 for a bf16 buffer) and marks its elements
    /// defined, or undefined where `undef` says so.
    pub fn write(&mut self, r: &Region, values: &[f32], undef: Option<&[bool]>) {
        debug_assert_eq!(values.len(), r.len());
        let track = !self.defined.is_empty();
        if let Some(pat) = &r.pattern {
            for (i, (&(dr, dc), &v)) in pat.iter().zip(values).enumerate() {
                let o = r.slot * self.elems() + (r.row0 + dr) * self.cols + r.col0 + dc;
                let v = canonical_nan(v);
                self.data[o] = if self.bf16 { round_bf16(v) } else { v };
                if track {
                    self.defined[o] = undef.is_none_or(|u| !u[i]);
                }
            }
            return;
        }
        for (row, src) in values.chunks_exact(r.cols).enumerate() {
            let o = self.offset(r, row);
            let dst = &mut self.data[o..o + r.cols];
            if self.bf16 {
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = round_bf16(canonical_nan(v));
                }
            } else {
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = canonical_nan(v);
                }
            }
            if track {
                let flags = &mut self.defined[o..o + r.cols];
                match undef {
                    None => flags.fill(true),
                    Some(u) => {
                        for (d, &x) in flags.iter_mut().zip(&u[row * r.cols..(row + 1) * r.cols]) {
                            *d = !x;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        // bf16 keeps 7 fraction bits: the spacing just above 1.0 is 2^-7.
        let ulp = 2f32.powi(-7);
        assert_eq!(round_bf16(1.0), 1.0);
        // Below half an ulp: down.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-9)), 1.0);
        // Exactly half an ulp from the even 1.0: ties to even, down.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 1.0);
        // Exactly half an ulp above the odd 1 + 2^-7: ties to even, up to 1 + 2^-6.
        assert_eq!(round_bf16(1.0 + ulp + 2f32.powi(-8)), 1.0 + 2.0 * ulp);
        // Above half an ulp: up.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 1.0 + ulp);
        // Sign is symmetric.
        assert_eq!(round_bf16(-(1.0 + 2f32.powi(-9))), -1.0);
        // Overflow past the largest finite bf16 goes to infinity.
        assert_eq!(round_bf16(f32::MAX), f32::INFINITY);
        assert_eq!(round_bf16(f32::NEG_INFINITY), f32::NEG_INFINITY);
        // A NaN whose payload lies only in the truncated bits stays a NaN.
        let nan = f32::from_bits(0x7F80_0001);
        assert!(nan.is_nan());
        assert!(round_bf16(nan).is_nan());
        assert!(round_bf16(-f32::NAN).is_sign_negative());
    }
}
