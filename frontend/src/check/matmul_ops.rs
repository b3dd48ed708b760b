//! Matrix multiplication: `nl.matmul` (with `transpose_x=` or, without it, a transpose on the
//! Tensor engine first, as NKI lowers it), `nisa.nc_matmul`, and the tiling of a product whose
//! operands exceed one Tensor-engine pass into several accumulating matmuls.
//!
//! Invariant: every Tensor-engine operand is an SBUF tile within the engine's limits
//! (`x[K,M]`, `y[K,N]`, K, M ≤ 128, N ≤ 512 per pass); the result is a PSUM tile (or goes through
//! one, `core_ops`'s `emit`).

use super::error::{matmul_excess, CheckError};
use super::operands::{Dest, Res, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind, Span};
use penguin::{DType, Memory, Op};
use vocab::machine::PMAX;

impl Checker<'_> {
    /// `nl.matmul(x, y, transpose_x=True)`: the Tensor engine's `x.T @ y`. Without
    /// `transpose_x=True` (NKI's default is False) it is `x @ y` with `x[M, K]`, lowered as NKI
    /// lowers it: `x` transposed on the Tensor engine (into PSUM), copied to SBUF in its own
    /// dtype, then the matmul; both are exact, so the result is the matmul's.
    pub(super) fn nl_matmul(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let tx = slots[2];
        let transposed = matches!(tx.map(|t| &t.kind), Some(ExprKind::Bool(true)));
        if let Some(t) = tx {
            if !matches!(t.kind, ExprKind::Bool(_) | ExprKind::Error) {
                self.error(CheckError::TransposeXNotBool { at: t.span.clone() });
                return None;
            }
        }
        if !transposed {
            return self.matmul_untransposed(slots[0]?, slots[1]?, span, cx, dest);
        }
        let (xe, ye) = (slots[0]?, slots[1]?);
        let x = self.matmul_operand(xe, cx);
        let y = self.matmul_operand(ye, cx);
        self.matmul_tiles(x?, y?, xe, ye, span, cx, dest)
    }

    /// An operand of `nl.matmul`: a tile in SBUF, or in PSUM (a transpose's result), which is
    /// copied to SBUF first, as NKI's compiler does for `nl.matmul`. (`nisa.nc_matmul` takes
    /// SBUF operands only.)
    fn matmul_operand(&mut self, e: &Expr, cx: &mut StmtCtx) -> Option<TileVal> {
        let x = self.arg(e, cx)?;
        let (t, s) = self.tile_of_arg(x, &e.span)?;
        if self.tensor(t.tensor).memory != Memory::Psum {
            let tt = self.tensor(t.tensor).clone();
            if tt.memory != Memory::Sbuf {
                self.error(CheckError::TensorEngineOperand {
                    tensor: tt.name.clone(),
                    memory: tt.memory,
                    at: s,
                });
                return None;
            }
            return Some(t);
        }
        let shape = t.size;
        self.emit(cx, Op::Copy, vec![t], Res::sbuf(shape), Dest::Temp, &e.span)
    }

    /// `nl.matmul(x, y)` with `x[M, K]`: `x` transposed to `[K, M]` first (see `nl_matmul`).
    fn matmul_untransposed(
        &mut self,
        xe: &Expr,
        ye: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.matmul_operand(xe, cx);
        let y = self.matmul_operand(ye, cx);
        let (x, y) = (x?, y?);
        let [m, k] = x.size;
        if m > PMAX || k > PMAX {
            self.error(CheckError::MatmulNeedsTransposeX { at: span.clone() });
            return None;
        }
        if k != y.size[0] {
            self.error(CheckError::MatmulShape {
                x: [k, m],
                y: y.size,
                x_at: xe.span.clone(),
                y_at: ye.span.clone(),
                at: span.clone(),
            });
            return None;
        }
        let dtype = self.tensor(x.tensor).dtype;
        let xt = self.transpose_of(x, span, cx, Dest::Temp)?;
        let res = Res {
            shape: [k, m],
            memory: Memory::Sbuf,
            dtype,
        };
        let xt = self.emit(cx, Op::Copy, vec![xt], res, Dest::Temp, span)?;
        self.matmul_tiles(xt, y, xe, ye, span, cx, dest)
    }

    /// A Tensor-engine operand: a tile in SBUF.
    pub(super) fn tensor_engine_operand(&mut self, e: &Expr, cx: &mut StmtCtx) -> Option<TileVal> {
        let x = self.arg(e, cx)?;
        let (t, s) = self.tile_of_arg(x, &e.span)?;
        let tt = self.tensor(t.tensor).clone();
        if tt.memory != Memory::Sbuf {
            self.error(CheckError::TensorEngineOperand {
                tensor: tt.name.clone(),
                memory: tt.memory,
                at: s,
            });
            return None;
        }
        Some(t)
    }

    /// `x.T @ y` with `x[K, M]`, `y[K, N]`.
    /// `nisa.nc_matmul(x, y, tile_position=..., tile_size=...)`: the PE tiling checked
    /// (`pe_tiling`), then the matmul.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn matmul_tiled(
        &mut self,
        xe: &Expr,
        ye: &Expr,
        position: Option<&Expr>,
        size: Option<&Expr>,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.tensor_engine_operand(xe, cx);
        let y = self.tensor_engine_operand(ye, cx);
        let (x, y) = (x?, y?);
        self.check_pe_tiling(position, size, x.size, span)?;
        self.matmul_tiles(x, y, xe, ye, span, cx, dest)
    }

    /// `x.T @ y` of SBUF tiles `x[K, M]`, `y[K, N]` written at `xe`, `ye`.
    #[allow(clippy::too_many_arguments)]
    fn matmul_tiles(
        &mut self,
        x: TileVal,
        y: TileVal,
        xe: &Expr,
        ye: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let [k, m] = x.size;
        let [k2, n] = y.size;
        if k != k2 {
            self.error(CheckError::MatmulShape {
                x: x.size,
                y: y.size,
                x_at: xe.span.clone(),
                y_at: ye.span.clone(),
                at: span.clone(),
            });
            return None;
        }
        if !matmul_excess(x.size, y.size).is_empty() {
            self.error(CheckError::MatmulLimit {
                x: x.size,
                y: y.size,
                at: span.clone(),
            });
            return None;
        }
        let res = Res {
            shape: [m, n],
            memory: Memory::Psum,
            dtype: DType::F32,
        };
        self.emit(
            cx,
            Op::Matmul { accumulate: false },
            vec![x, y],
            res,
            dest,
            span,
        )
    }
}
