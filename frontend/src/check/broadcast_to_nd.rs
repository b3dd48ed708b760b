//! `nl.broadcast_to(x, shape)` to a shape of more than 2 dimensions, `[P, A, B, ...]`: NumPy's
//! rule over the NKI shape of `x` (its recorded N-D shape, [`Checker::value_dims`], or
//! `[P, F]`), as NKI's `broadcast_to` follows it. The result is the flattened tile
//! `[P, A·B·...]` with the target shape recorded beside it (`keep_shape`), so that later
//! subscripts, reductions and elementwise operations see its axes.
//!
//! - a value of one element per partition (`[P, 1, 1]`, or `[P, 1]`) is the column path of
//!   `broadcast`: exactly `1 · x` along the free dimension;
//! - a value of the target's rank whose axes are equal to the target's or 1 is multiplied into a
//!   tile of ones of the target shape, through `broadcast_nd` (a step of 0 along each axis of
//!   one element), again exactly `x`;
//! - a value of one partition is repeated on `P` partitions first (`broadcast`'s row path).
//!
//! Invariant: the value returned holds the target's element count and is recorded with the
//! target's dimensions; any other source shape gets `BadBroadcast` at the call.

use super::error::CheckError;
use super::operands::{Arg, Dest, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind, Span};
use penguin::{AluOp, Memory, Op};
use vocab::machine::PMAX;

impl Checker<'_> {
    /// The dimensions of a literal shape tuple of more than 2 items (`(P, A, B)`), `None` for
    /// any other expression (the 2-D reading then applies).
    pub(super) fn nd_shape_literal(&mut self, e: &Expr) -> Option<Vec<u64>> {
        let ExprKind::Tuple(items) = &e.kind else {
            return None;
        };
        if items.len() <= 2 {
            return None;
        }
        items.iter().map(|d| self.dim(d)).collect()
    }

    /// `nl.broadcast_to(x, dims)` for `dims` of more than 2 dimensions.
    pub(super) fn broadcast_to_nd(
        &mut self,
        x_e: &Expr,
        dims: Vec<u64>,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let Arg::Tile(x, sx) = self.arg(x_e, cx)? else {
            self.error(CheckError::BroadcastScalar {
                at: x_e.span.clone(),
            });
            return None;
        };
        if self.tensor(x.tensor).memory == Memory::Hbm {
            self.error(CheckError::BroadcastHbm { at: sx });
            return None;
        }
        let free = dims[1..].iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let flat = [dims[0], free.unwrap_or(u64::MAX)];
        let from = self.value_dims(&x).unwrap_or_else(|| x.size.to_vec());
        let size = x.size;
        let refuse = |cx: &mut Self| {
            cx.error(CheckError::BadBroadcast {
                from: size,
                to: flat,
                at: span.clone(),
            });
            None
        };
        if free.is_none() || dims[0] > PMAX {
            return refuse(self);
        }
        // One partition: repeated on every partition first (broadcast.rs), its free axes kept.
        let x = if x.size[0] == 1 && dims[0] > 1 {
            let rows = self.rows_of(x.clone(), dims[0], span, cx, Dest::Temp)?;
            let kept = (from.len() > 2).then(|| {
                let mut d = from.clone();
                d[0] = dims[0];
                d
            });
            self.keep_shape(&rows, kept);
            rows
        } else {
            x
        };
        if x.size[0] != dims[0] {
            return refuse(self);
        }
        let r = if x.size[1] == 1 {
            // A column: along the whole free dimension.
            let ones = self.nd_ones(flat, None, span, cx)?;
            let (a, b) = (Arg::Tile(ones, span.clone()), Arg::Tile(x, sx));
            self.elementwise(AluOp::Multiply, a, b, span, cx, dest)?
        } else if from.len() == dims.len()
            && from.iter().zip(&dims).all(|(&f, &d)| f == d || f == 1)
        {
            if x.size[1] == flat[1] {
                self.emit(
                    cx,
                    Op::Copy,
                    vec![x],
                    super::operands::Res::sbuf(flat),
                    dest,
                    span,
                )?
            } else {
                let ones = self.nd_ones(flat, Some(dims.clone()), span, cx)?;
                let (a, b) = (Arg::Tile(ones, span.clone()), Arg::Tile(x, sx));
                self.elementwise(AluOp::Multiply, a, b, span, cx, dest)?
            }
        } else {
            return refuse(self);
        };
        self.keep_shape(&r, Some(dims));
        Some(r)
    }

    /// A fresh SBUF tile of ones, `[P, F]`, recorded with the NKI shape `dims` when given.
    fn nd_ones(
        &mut self,
        flat: [u64; 2],
        dims: Option<Vec<u64>>,
        span: &Span,
        cx: &mut StmtCtx,
    ) -> Option<TileVal> {
        let ones = self.emit(
            cx,
            Op::Memset { value: 1.0 },
            vec![],
            super::operands::Res::sbuf(flat),
            Dest::Temp,
            span,
        )?;
        self.keep_shape(&ones, dims);
        Some(ones)
    }
}
