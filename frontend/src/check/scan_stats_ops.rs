//! The NKI operations that are the Vector engine's sequential free-axis instructions, and the
//! loop reduction that is an update of its destination:
//! - `nisa.tensor_tensor_scan(data0, data1, initial, op0, op1)`: the Penguin
//!   `tensor_tensor_scan` instruction; a scalar `initial` is first set into a `[P, 1]` tile
//!   (a `memset`), a tile `initial` must be `[P, 1]`;
//! - `nisa.bn_stats(data)` (at most `nl.tile_size.bn_stats_fmax` elements per partition) and
//!   `nisa.bn_aggr(data)` (a multiple of 3 elements per partition): the Penguin `bn_stats` and
//!   `bn_aggr` instructions, results `[P, 6]` and `[P, 2]`;
//! - `nl.loop_reduce(x, op, loop_indices)`: `dst = dst op x` into the assigned destination, the
//!   `tensor_tensor` NKI documents it as (`loop_indices` only names the loops it runs across).
//!
//! - `nisa.nc_transpose(x, engine=nisa.vector_engine)`: the Penguin `vector_transpose`
//!   instruction, one block of at most 32 × 32 into SBUF (the Tensor engine's transpose writes
//!   PSUM and is what `nc_transpose` is otherwise).
//!
//! Numerics are the shared vocabulary's (`vocab::tensor_tensor_scan`, `vocab::bn_stats`,
//! `vocab::bn_aggr`), so the interpreter and the simulator agree on them by construction.

use super::calls::Param;
use super::operands::{Arg, Dest, OpKind, Res, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, Span};
use crate::codes;
use penguin::{Memory, Op};
use vocab::machine::{BN_STATS_FMAX, DVE_TRANSPOSE_MAX};
use vocab::{Diagnostic, BN_AGGR_WIDTH, BN_STATS_WIDTH};

/// Whether an `engine=` value is `nisa.vector_engine`.
pub(super) fn is_vector_engine(e: &Expr) -> bool {
    e.attr_of(&["nisa", "nl"]) == Some("vector_engine")
}

/// The `nisa` operations of this file, by name.
pub(super) fn nisa_ops(name: &str) -> Option<OpKind> {
    Some(match name {
        "tensor_tensor_scan" => OpKind::TensorTensorScan,
        "bn_stats" => OpKind::BnStats,
        "bn_aggr" => OpKind::BnAggr,
        _ => return None,
    })
}

/// The `nl` operations of this file, by name.
pub(super) fn nl_ops(name: &str) -> Option<OpKind> {
    match name {
        "loop_reduce" => Some(OpKind::LoopReduce),
        _ => None,
    }
}

/// The parameters of the operations of this file, in NKI's order.
pub(super) fn params(kind: OpKind) -> &'static [Param] {
    match kind {
        OpKind::TensorTensorScan => &[
            ("data0", true),
            ("data1", true),
            ("initial", true),
            ("op0", true),
            ("op1", true),
        ],
        OpKind::BnStats | OpKind::BnAggr => &[("data", true)],
        OpKind::LoopReduce => &[("x", true), ("op", true), ("loop_indices", false)],
        OpKind::VectorTranspose => &[("data", true)],
        _ => &[],
    }
}

impl Checker<'_> {
    /// Applies the operations of this file once their arguments are bound.
    pub(super) fn scan_stats_op(
        &mut self,
        kind: OpKind,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        match kind {
            OpKind::TensorTensorScan => self.tensor_tensor_scan(slots, span, cx, dest),
            OpKind::BnStats => self.bn_stats(slots[0]?, span, cx, dest),
            OpKind::BnAggr => self.bn_aggr(slots[0]?, span, cx, dest),
            OpKind::LoopReduce => self.loop_reduce(slots, span, cx, dest),
            OpKind::VectorTranspose => self.vector_transpose(slots[0]?, span, cx, dest),
            _ => None,
        }
    }

    /// A shape error of one of this file's operations at `span`.
    fn scan_shape_error(&mut self, message: String, span: &Span, help: &str) {
        self.error(
            Diagnostic::new(codes::ELEMENTWISE_SHAPE, message, span.clone())
                .with_label("here")
                .with_help(help.to_string()),
        );
    }

    /// `nisa.tensor_tensor_scan(data0, data1, initial, op0, op1)`.
    fn tensor_tensor_scan(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let what = "`nisa.tensor_tensor_scan`";
        let a = self.compute_tile(slots[0]?, cx, what);
        let b = self.compute_tile(slots[1]?, cx, what);
        let init = self.arg(slots[2]?, cx);
        let op0 = self.alu_op(slots[3]?);
        let op1 = self.alu_op(slots[4]?);
        let (a, b, init, op0, op1) = (a?, b?, init?, op0?, op1?);
        if a.size != b.size {
            self.scan_shape_error(
                format!(
                    "{what} of data0 {:?} and data1 {:?}: the two must have the same shape",
                    a.size, b.size
                ),
                span,
                "slice both inputs to the same [P, F]",
            );
            return None;
        }
        let both_psum = [&a, &b]
            .iter()
            .all(|t| self.tensor(t.tensor).memory == Memory::Psum);
        if both_psum {
            self.scan_shape_error(
                format!("{what}: data0 and data1 cannot both be in PSUM"),
                span,
                "copy one of them to SBUF first (`nl.copy`)",
            );
            return None;
        }
        let col = [a.size[0], 1];
        let init = match init {
            Arg::Scalar(value) => {
                let op = Op::Memset { value };
                self.emit(cx, op, vec![], Res::sbuf(col), Dest::Temp, span)?
            }
            Arg::Tile(t, s) => {
                if t.size != col {
                    self.scan_shape_error(
                        format!(
                            "{what}: `initial` is {:?} but must be a scalar or [{}, 1]",
                            t.size, col[0]
                        ),
                        &s,
                        "give one value per partition, e.g. `t[:, k]` or `t[:, k:k+1]`",
                    );
                    return None;
                }
                if !self.compute_src(&t, &s, what) {
                    return None;
                }
                t
            }
        };
        let shape = a.size;
        let op = Op::TensorTensorScan { op0, op1 };
        self.emit(cx, op, vec![a, b, init], Res::sbuf(shape), dest, span)
    }

    /// `nisa.bn_stats(data)`: `[P, 6]` statistics of at most `bn_stats_fmax` elements.
    fn bn_stats(
        &mut self,
        x_e: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.compute_tile(x_e, cx, "`nisa.bn_stats`")?;
        if x.size[1] > BN_STATS_FMAX {
            self.scan_shape_error(
                format!(
                    "`nisa.bn_stats` of {:?}: at most {BN_STATS_FMAX} elements per partition \
                     (nl.tile_size.bn_stats_fmax)",
                    x.size
                ),
                &x_e.span,
                "run one bn_stats per block of bn_stats_fmax columns into slices of one \
                 [P, 6 * blocks] tile, then one nisa.bn_aggr over it",
            );
            return None;
        }
        let shape = [x.size[0], BN_STATS_WIDTH as u64];
        self.emit(cx, Op::BnStats, vec![x], Res::sbuf(shape), dest, span)
    }

    /// `nisa.bn_aggr(data)`: `[P, 2]` mean and variance of `(count, mean, m2)` triples.
    fn bn_aggr(
        &mut self,
        x_e: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.compute_tile(x_e, cx, "`nisa.bn_aggr`")?;
        if !x.size[1].is_multiple_of(3) {
            self.scan_shape_error(
                format!(
                    "`nisa.bn_aggr` of {:?}: the free size must be a multiple of 3 \
                     (count, mean, variance * count per group)",
                    x.size
                ),
                &x_e.span,
                "pass the [P, 6 * k] results of nisa.bn_stats",
            );
            return None;
        }
        let shape = [x.size[0], BN_AGGR_WIDTH as u64];
        self.emit(cx, Op::BnAggr, vec![x], Res::sbuf(shape), dest, span)
    }

    /// `nisa.nc_transpose(data, engine=nisa.vector_engine)`: `[P, F]` to `[F, P]` in SBUF, both
    /// sides at most 32.
    fn vector_transpose(
        &mut self,
        x_e: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.compute_tile(x_e, cx, "`nisa.nc_transpose`")?;
        if x.size.iter().any(|&s| s > DVE_TRANSPOSE_MAX) {
            self.error(
                Diagnostic::new(
                    codes::TRANSPOSE_LIMIT,
                    format!(
                        "`nisa.nc_transpose` on the Vector engine of {:?}: it transposes one \
                         {DVE_TRANSPOSE_MAX} x {DVE_TRANSPOSE_MAX} block at most",
                        x.size
                    ),
                    x_e.span.clone(),
                )
                .with_label("too large for the Vector engine")
                .with_help(
                    "leave `engine=` out: the Tensor engine transposes up to [128, 128] (into PSUM)",
                ),
            );
            return None;
        }
        let shape = [x.size[1], x.size[0]];
        self.emit(
            cx,
            Op::VectorTranspose,
            vec![x],
            Res::sbuf(shape),
            dest,
            span,
        )
    }

    /// `dst[...] = nl.loop_reduce(x, op, loop_indices)`: `dst = dst op x` (a `tensor_tensor`).
    fn loop_reduce(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.arg(slots[0]?, cx);
        let op = self.alu_op(slots[1]?);
        let (x, op) = (x?, op?);
        let Dest::Into { target, .. } = dest else {
            self.error(
                Diagnostic::new(
                    codes::UNSUPPORTED,
                    "`nl.loop_reduce` must be assigned into the tile it accumulates",
                    span.clone(),
                )
                .with_label("its destination is also its left operand")
                .with_help(
                    "write `acc[...] = nl.loop_reduce(x, op=np.add, loop_indices=[k])` for a tile \
                     `acc` created before the loop, or `acc[...] += x`",
                ),
            );
            return None;
        };
        let acc = Arg::Tile(target.clone(), span.clone());
        let into = Dest::Into {
            target,
            accumulate: false,
        };
        self.elementwise(op, acc, x, span, cx, into)
    }
}
