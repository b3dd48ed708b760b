//! `nl.broadcast_to(x, shape)` (also written `x.broadcast_to(shape)`): a tile repeated along an
//! axis of size 1, built from the core operations so that its numerics are exact everywhere.
//!
//! - `[1, F]` to `[P, F]` (a row to every partition) is a matmul of a `[1, P]` tile of ones with
//!   the row, on the Tensor engine, copied out of PSUM: each element is `1 · x`, exactly `x`
//!   (F ≤ 512, P ≤ 128);
//! - `[P, 1]` to `[P, F]` (a column along the free axis) multiplies a `[P, F]` tile of ones by the
//!   column, which broadcasts on the Vector engine: again exactly `x`, signed zeros included;
//! - the same shape is a copy.
//!
//! Elementwise operations broadcast a `[P, 1]` operand by themselves; `broadcast_to` is what a
//! row needs, as in an RMSNorm or LayerNorm weight applied to every row.

use super::error::CheckError;
use super::ops::{Arg, Dest, Res, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, Span};
use penguin::{AluOp, DType, Memory, Op};
use vocab::machine::{PMAX, PSUM_FMAX};

impl Checker<'_> {
    /// A fresh SBUF tile of `shape` filled with ones.
    fn ones(&mut self, shape: [u64; 2], span: &Span, cx: &mut StmtCtx) -> Option<TileVal> {
        self.emit(
            cx,
            Op::Memset { value: 1.0 },
            vec![],
            Res::sbuf(shape),
            Dest::Temp,
            span,
        )
    }

    /// `nl.broadcast_to(x, shape)`.
    pub(super) fn broadcast_to(
        &mut self,
        x_e: &Expr,
        shape_e: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.arg(x_e, cx);
        let shape = self.shape_of(shape_e);
        let (x, shape) = (x?, shape?);
        let Arg::Tile(x, sx) = x else {
            self.error(CheckError::BroadcastScalar {
                at: x_e.span.clone(),
            });
            return None;
        };
        let from = x.size;
        let memory = self.tensor(x.tensor).memory;
        if memory == Memory::Hbm {
            self.error(CheckError::BroadcastHbm { at: sx });
            return None;
        }
        if from == shape {
            return self.emit(cx, Op::Copy, vec![x], Res::sbuf(shape), dest, span);
        }
        if from[0] == 1 && from[1] == shape[1] && shape[0] <= PMAX && shape[1] <= PSUM_FMAX {
            let x = if memory == Memory::Sbuf {
                x
            } else {
                self.emit(cx, Op::Copy, vec![x], Res::sbuf(from), Dest::Temp, span)?
            };
            let ones = self.ones([1, shape[0]], span, cx)?;
            let res = Res {
                shape,
                memory: Memory::Psum,
                dtype: DType::F32,
            };
            let rows = self.emit(
                cx,
                Op::Matmul { accumulate: false },
                vec![ones, x],
                res,
                Dest::Temp,
                span,
            )?;
            return self.emit(cx, Op::Copy, vec![rows], Res::sbuf(shape), dest, span);
        }
        if from[1] == 1 && from[0] == shape[0] {
            let ones = self.ones(shape, span, cx)?;
            return self.elementwise(
                AluOp::Multiply,
                Arg::Tile(ones, span.clone()),
                Arg::Tile(x, sx),
                span,
                cx,
                dest,
            );
        }
        self.error(CheckError::BadBroadcast {
            from,
            to: shape,
            at: span.clone(),
        });
        None
    }
}
