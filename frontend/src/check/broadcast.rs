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
//! - tile_nd: `[1, F]` wider than 512 goes through in blocks of 512 columns, `[1, 1]` becomes a
//!   column first, and an elementwise operand of one partition is repeated the same way
//!   ([`Checker::broadcast_partitions`]), so broadcasting follows numpy's rules on both axes.
//!
//! Elementwise operations broadcast a `[P, 1]` operand by themselves; `broadcast_to` is what a
//! row needs, as in an RMSNorm or LayerNorm weight applied to every row.

use super::error::CheckError;
use super::operands::{Arg, Dest, Res, StmtCtx};
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
        // tile_nd: a target of more than 2 dimensions (broadcast_to_nd).
        if let Some(dims) = self.nd_shape_literal(shape_e) {
            return self.broadcast_to_nd(x_e, dims, span, cx, dest);
        }
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
        // tile_nd: numpy rules on both axes, any width: a row wider than a PSUM bank goes
        // through the Tensor engine in blocks of 512 columns, and `[1, 1]` first becomes a column.
        if from[0] == 1 && shape[0] <= PMAX && (from[1] == shape[1] || from[1] == 1) {
            if from[1] == shape[1] {
                return self.rows_of(x, shape[0], span, cx, dest);
            }
            let col = self.rows_of(x, shape[0], span, cx, Dest::Temp)?;
            let ones = self.ones(shape, span, cx)?;
            return self.elementwise(
                AluOp::Multiply,
                Arg::Tile(ones, span.clone()),
                Arg::Tile(col, sx),
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

    /// tile_nd: the operands of an elementwise operation whose partition counts differ, the one
    /// with a single partition repeated on the other's (numpy rules; the free axis broadcasts in
    /// the operation itself). `None`, with no diagnostic, when the shapes do not broadcast.
    pub(super) fn broadcast_partitions(
        &mut self,
        a: &TileVal,
        b: &TileVal,
        span: &Span,
        cx: &mut StmtCtx,
    ) -> Option<(TileVal, TileVal)> {
        let ([pa, fa], [pb, fb]) = (a.size, b.size);
        let cols = fa == fb || fa == 1 || fb == 1;
        if pa == pb || !cols || pa.max(pb) > PMAX {
            return None;
        }
        if pa == 1 {
            let a = self.rows_of(a.clone(), pb, span, cx, Dest::Temp)?;
            Some((a, b.clone()))
        } else if pb == 1 {
            let b = self.rows_of(b.clone(), pa, span, cx, Dest::Temp)?;
            Some((a.clone(), b))
        } else {
            None
        }
    }

    /// The one-partition tile `x[1, F]` repeated on `p` partitions, into `dest`: a matmul of a
    /// `[1, p]` tile of ones with each block of at most 512 columns, copied out of PSUM.
    pub(super) fn rows_of(
        &mut self,
        x: TileVal,
        p: u64,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let f = x.size[1];
        let x = if self.tensor(x.tensor).memory == Memory::Sbuf {
            x
        } else {
            self.emit(
                cx,
                Op::Copy,
                vec![x.clone()],
                Res::sbuf(x.size),
                Dest::Temp,
                span,
            )?
        };
        let ones = self.ones([1, p], span, cx)?;
        let psum = |w: u64| Res {
            shape: [p, w],
            memory: Memory::Psum,
            dtype: DType::F32,
        };
        if f <= PSUM_FMAX {
            let mm = Op::Matmul { accumulate: false };
            let rows = self.emit(cx, mm, vec![ones, x], psum(f), Dest::Temp, span)?;
            return self.emit(cx, Op::Copy, vec![rows], Res::sbuf([p, f]), dest, span);
        }
        let out = match dest {
            Dest::Into { target, .. } => {
                if target.size != [p, f] {
                    self.error(CheckError::AssignShape {
                        value: [p, f],
                        tensor: self.tensor(target.tensor).name.clone(),
                        dest: target.size,
                        at: span.clone(),
                    });
                    return None;
                }
                target
            }
            Dest::New { name, span: bspan } => self.sbuf_tile(name, [p, f], bspan),
            Dest::Temp => self.sbuf_tile("_broadcast_to".to_string(), [p, f], span.clone()),
        };
        let mut c0 = 0;
        while c0 < f {
            let w = PSUM_FMAX.min(f - c0);
            let off = penguin::AffineExpr::constant(c0 as i64);
            let mut xs = x.clone();
            xs.start[1] = super::arith::lin(&x.start[1], 1, &off, 1)?;
            xs.size[1] = w;
            let mm = Op::Matmul { accumulate: false };
            let rows = self.emit(cx, mm, vec![ones.clone(), xs], psum(w), Dest::Temp, span)?;
            let mut cols = out.clone();
            cols.start[1] = super::arith::lin(&out.start[1], 1, &off, 1)?;
            cols.size[1] = w;
            let into = Dest::Into {
                target: cols,
                accumulate: false,
            };
            self.emit(cx, Op::Copy, vec![rows], Res::sbuf([p, w]), into, span)?;
            c0 += w;
        }
        Some(out)
    }

    /// A new float32 SBUF tensor, whole.
    pub(super) fn sbuf_tile(&mut self, name: String, shape: [u64; 2], span: Span) -> TileVal {
        let t = self.new_tensor(super::CTensor {
            name,
            memory: Memory::Sbuf,
            dtype: DType::F32,
            shape,
            kind: penguin::TensorKind::Local,
            span,
        });
        TileVal::whole(t, shape)
    }
}
