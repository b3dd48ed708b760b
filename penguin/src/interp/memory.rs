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
//! - `written[i]` is true exactly when element `i` has been written, for buffers that track
//!   initialisation (everything but kernel inputs, which are fully initialised on entry);
//! - an unwritten element holds `0.0`, so an output that is never written reads back as zeros.

use crate::entities::Axis;
use crate::ir::{canonical_nan, DType, TensorData};

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

/// The first unwritten element of a read: slot, row and column in the tensor.
#[derive(Clone, Copy, Debug)]
pub(super) struct Unwritten {
    pub slot: usize,
    pub row: usize,
    pub col: usize,
}

pub(super) struct Buffer {
    pub rows: usize,
    pub cols: usize,
    /// The block dimension counts, outermost first (all ≥ 1).
    pub block_counts: Vec<u64>,
    pub bf16: bool,
    pub read_only: bool,
    data: Vec<f32>,
    /// Empty when the buffer is fully initialised (inputs).
    written: Vec<bool>,
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
            data: vec![0.0; total],
            written: if input {
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
        self.written.clear();
    }

    /// The values of slot 0 (the whole tensor for an unblocked one).
    pub fn slot0(&self) -> &[f32] {
        &self.data[..self.elems()]
    }

    fn offset(&self, r: &Region, row: usize) -> usize {
        r.slot * self.elems() + (r.row0 + row) * self.cols + r.col0
    }

    /// The tile's values in row-major order, or the first element of it never written.
    pub fn read(&self, r: &Region) -> Result<Vec<f32>, Unwritten> {
        let mut out = Vec::with_capacity(r.len());
        if let Some(pat) = &r.pattern {
            for &(dr, dc) in pat {
                let (row, col) = (r.row0 + dr, r.col0 + dc);
                let o = r.slot * self.elems() + row * self.cols + col;
                if !self.written.is_empty() && !self.written[o] {
                    return Err(Unwritten {
                        slot: r.slot,
                        row,
                        col,
                    });
                }
                out.push(self.data[o]);
            }
            return Ok(out);
        }
        for row in 0..r.rows {
            let o = self.offset(r, row);
            if !self.written.is_empty() {
                if let Some(c) = self.written[o..o + r.cols].iter().position(|&w| !w) {
                    return Err(Unwritten {
                        slot: r.slot,
                        row: r.row0 + row,
                        col: r.col0 + c,
                    });
                }
            }
            out.extend_from_slice(&self.data[o..o + r.cols]);
        }
        Ok(out)
    }

    /// Stores a row-major tile (rounding to bfloat16 for a bf16 buffer) and marks it written.
    pub fn write(&mut self, r: &Region, values: &[f32]) {
        debug_assert_eq!(values.len(), r.len());
        if let Some(pat) = &r.pattern {
            for (&(dr, dc), &v) in pat.iter().zip(values) {
                let o = r.slot * self.elems() + (r.row0 + dr) * self.cols + r.col0 + dc;
                let v = canonical_nan(v);
                self.data[o] = if self.bf16 { round_bf16(v) } else { v };
                if !self.written.is_empty() {
                    self.written[o] = true;
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
            if !self.written.is_empty() {
                self.written[o..o + r.cols].fill(true);
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
