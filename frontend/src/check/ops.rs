//! Operations: what each `nl.` / `nisa.` call and each operator accepts, and the instruction it
//! becomes.
//!
//! A tile expression is evaluated into the statement's instruction list ([`StmtCtx`]): nested calls
//! first, in source order, each writing a fresh temporary; the outermost call writes its
//! destination ([`Dest`]): a new tensor bound to a name, a temporary, or part of an existing
//! tensor (slice assignment, `+=`). The rules enforced here are those of `LANGUAGE.md`:
//! - memories: on-chip tiles have at most 128 partitions; a PSUM tile fits one 2 KiB bank per
//!   partition; PSUM is written by Tensor-engine results and by the elementwise operations,
//!   activations, reductions, copies and memsets of `act`/`dve` ([`writes_psum`]); a
//!   Tensor-engine result assigned into SBUF goes through a PSUM temporary and an implicit copy;
//!   HBM is read only by `nl.load` and written only by `nl.store`; Tensor-engine operands are SBUF;
//! - shapes: matmul `x[K,M]`, `y[K,N]` → `[M,N]` (K, M ≤ 128, N ≤ 512); transpose `[P,F]` → `[F,P]`
//!   (P, F ≤ 128); elementwise operands equal or `[P,1]` broadcast along the free axis, or a
//!   scalar; reductions along `axis=1` → `[P,1]`; activation scale a float or `[P,1]` tile, bias a
//!   `[P,1]` tile; a store's value and destination of equal shape;
//! - dtypes: `nl.float32`, or `nl.bfloat16` for HBM and SBUF storage only. Compute results are
//!   float32; a load keeps its source's dtype.
//!
//! GpSimd is never chosen here (copies are `EngineClass::Any`), so its restriction (no PSUM reads)
//! is the backend's to respect.

use super::arith::MAX_EXTENT;
use super::calls::{KwSite, Param};
use super::comptime::literal_scalar;
use super::comptime::Class;
use super::elementwise_ops;
use super::error::{matmul_excess, CheckError};
use super::index_vec::{mask_and, MaskPiece, MaskPieces};
use super::mask_guards::common_guards;
use super::mask_sums::mask_hull;
use super::not_in_nkc::not_in_nkc;
use super::operands::{act_func, Arg, Dest, OpKind, Res, StmtCtx};
use super::random_ops;
use super::scan_stats_ops;
use super::top8_ops;
use super::{CInst, CTensor, Checker, TileVal, Value};
use crate::ast::{BinOp, Expr, ExprKind, Keyword, Span, UnaryOp};
use penguin::{ActFunc, AluOp, DType, Memory, Op, ReduceOp, Scale, TensorKind};
use vocab::machine::{PMAX, PSUM_BANK_BYTES};

fn nl_op(name: &str) -> Option<OpKind> {
    Some(match name {
        "load" => OpKind::Load,
        "store" => OpKind::Store,
        "matmul" => OpKind::Matmul,
        "add" => OpKind::Alu(AluOp::Add),
        "subtract" => OpKind::Alu(AluOp::Subtract),
        "multiply" => OpKind::Alu(AluOp::Multiply),
        "divide" => OpKind::Alu(AluOp::Divide),
        "maximum" => OpKind::Alu(AluOp::Maximum),
        "minimum" => OpKind::Alu(AluOp::Minimum),
        "sum" => OpKind::Reduce(ReduceOp::Sum),
        "max" => OpKind::Reduce(ReduceOp::Max),
        "min" => OpKind::Reduce(ReduceOp::Min),
        "mean" => OpKind::Mean,
        "full" => OpKind::Full,
        "broadcast_to" => OpKind::BroadcastTo,
        "load_transpose2d" => OpKind::LoadTranspose,
        "transpose" => OpKind::NcTranspose,
        "copy" => OpKind::Copy,
        "zeros" => OpKind::Zeros,
        "ndarray" => OpKind::Ndarray,
        "shared_constant" => OpKind::SharedConstant,
        "affine_range" | "sequential_range" => OpKind::Range,
        _ => {
            return elementwise_ops::nl_extra(name)
                .or_else(|| scan_stats_ops::nl_ops(name))
                .or_else(|| random_ops::nl_ops(name))
        }
    })
}

fn nisa_op(name: &str) -> Option<OpKind> {
    Some(match name {
        "nc_matmul" => OpKind::NcMatmul,
        "nc_transpose" => OpKind::NcTranspose,
        "activation" => OpKind::Activation,
        "tensor_copy" => OpKind::Copy,
        "reciprocal" => OpKind::Act(ActFunc::Reciprocal),
        "tensor_scalar" => OpKind::TensorScalar,
        "tensor_tensor" => OpKind::TensorTensor,
        "tensor_reduce" => OpKind::TensorReduce,
        // Keyword-only in NKI: `(data op0 operand0) op1 operand1` with a tile `operand1`.
        "scalar_tensor_tensor" => OpKind::TensorScalar,
        // A DMA whose access pattern transposes: `nl.load_transpose2d`'s meaning.
        "dma_transpose" => OpKind::LoadTranspose,
        _ => {
            return elementwise_ops::nisa_extra(name)
                .or_else(|| scan_stats_ops::nisa_ops(name))
                .or_else(|| top8_ops::nisa_ops(name))
                .or_else(|| random_ops::nisa_ops(name))
        }
    })
}

/// Attributes of `nl` that are not operations.
const NL_NON_OPS: [&str; 6] = ["float32", "bfloat16", "sbuf", "psum", "shared_hbm", "hbm"];

fn is_tensor_engine(op: &Op) -> bool {
    matches!(op, Op::Matmul { .. } | Op::Transpose)
}

/// Whether `op` may write a PSUM destination: the Tensor engine's results, and the elementwise
/// operations, activations, reductions and copies of `act` and `dve` (MACHINE.md: only `pool`
/// cannot access PSUM; a load, a store, an iota or the statistics ops cannot write it).
pub(super) fn writes_psum(op: &Op) -> bool {
    is_tensor_engine(op)
        || matches!(
            op,
            Op::TensorTensor { .. }
                | Op::TensorScalar { .. }
                | Op::Activation { .. }
                | Op::Reduce { .. }
                | Op::Copy
                | Op::Memset { .. }
        )
}

/// The axes of `axis=` when they are not the free axis alone: a literal list or tuple of
/// several nonzero integers, or one other than `0`, `1` and `-1` (`patterns`).
fn pattern_axes(e: &Expr) -> Option<Vec<i64>> {
    let int = |e: &Expr| match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => match &operand.kind {
            ExprKind::Int(v) => Some(-*v),
            _ => None,
        },
        _ => None,
    };
    let axes: Vec<i64> = match &e.kind {
        ExprKind::List(items) | ExprKind::Tuple(items) => {
            items.iter().map(int).collect::<Option<Vec<i64>>>()?
        }
        _ => vec![int(e)?],
    };
    // One free axis of a 2-D tile is the plain reduction; several axes (`axis=[1, 3]`) or
    // axes past the first free one name axes of an access-pattern value.
    let plain = axes.len() == 1 && matches!(axes[0], -1..=1);
    (!plain && axes.iter().all(|&a| a != 0)).then_some(axes)
}

/// The methods of tiles that are operations: `x.broadcast_to(shape)` is
/// `nl.broadcast_to(x, shape)`. The call rewritten that way, or `None`.
fn method_call(func: &Expr, args: &[Expr], kwargs: &[Keyword]) -> Option<Expr> {
    let ExprKind::Attribute { value, attr } = &func.kind else {
        return None;
    };
    let is_module = matches!(&value.kind, ExprKind::Name(m) if RESERVED_MODULES.contains(&m.as_str()) || m == "np" || m == "math");
    if is_module || attr.name != "broadcast_to" {
        return None;
    }
    let nl = Expr {
        kind: ExprKind::Name("nl".to_string()),
        span: attr.span.clone(),
    };
    let mut all = vec![(**value).clone()];
    all.extend(args.iter().cloned());
    Some(Expr {
        kind: ExprKind::Call {
            func: Box::new(Expr {
                kind: ExprKind::Attribute {
                    value: Box::new(nl),
                    attr: attr.clone(),
                },
                span: func.span.clone(),
            }),
            args: all,
            kwargs: kwargs.to_vec(),
        },
        span: value.span.start..args.last().map_or(func.span.end, |a| a.span.end),
    })
}

fn params(kind: OpKind) -> &'static [Param] {
    match kind {
        OpKind::Load => &[("src", true)],
        OpKind::Store => &[("dst", true), ("value", true)],
        OpKind::Matmul => &[("x", true), ("y", true), ("transpose_x", false)],
        OpKind::NcMatmul => &[
            ("stationary", true),
            ("moving", true),
            ("tile_position", false),
            ("tile_size", false),
            // Hints to the Tensor engine (a one-zero operand, a transpose through an identity):
            // the result is `stationary.T @ moving` either way.
            ("is_stationary_onezero", false),
            ("is_moving_onezero", false),
            ("is_transpose", false),
        ],
        OpKind::NcTranspose => &[("data", true)],
        OpKind::Activation => &[
            ("op", true),
            ("data", true),
            ("bias", false),
            ("scale", false),
        ],
        OpKind::Alu(_) => &[("x", true), ("y", true)],
        OpKind::Act(_) | OpKind::Copy => &[("x", true)],
        OpKind::Reduce(_) | OpKind::Mean => &[("x", true), ("axis", true), ("keepdims", false)],
        OpKind::Zeros | OpKind::Ndarray => &[("shape", true), ("dtype", true), ("buffer", false)],
        OpKind::SharedConstant => &[("constant", true), ("dtype", false)],
        OpKind::Full => &[
            ("shape", true),
            ("fill_value", true),
            ("dtype", true),
            ("buffer", false),
        ],
        OpKind::TensorScalar => &[
            ("data", true),
            ("op0", true),
            ("operand0", true),
            ("reverse0", false),
            ("op1", false),
            ("operand1", false),
            ("reverse1", false),
        ],
        OpKind::TensorTensor => &[("data1", true), ("data2", true), ("op", true)],
        OpKind::BroadcastTo => &[("x", true), ("shape", true)],
        OpKind::LoadTranspose => &[("src", true)],
        OpKind::TensorReduce => &[
            ("op", true),
            ("data", true),
            ("axis", true),
            ("keepdims", false),
            ("negate", false),
        ],
        OpKind::Range => &[],
        OpKind::Where
        | OpKind::Softmax
        | OpKind::Var
        | OpKind::Like(_)
        | OpKind::Ones
        | OpKind::NisaMemset
        | OpKind::PartitionReduce
        | OpKind::ActivationReduce
        | OpKind::TensorScalarReduce
        | OpKind::Iota
        | OpKind::AffineSelect => elementwise_ops::params(kind),
        OpKind::TensorTensorScan
        | OpKind::BnStats
        | OpKind::BnAggr
        | OpKind::LoopReduce
        | OpKind::VectorTranspose => scan_stats_ops::params(kind),
        OpKind::Max8 | OpKind::FindIndex8 | OpKind::MatchReplace8 => top8_ops::params(kind),
        OpKind::Rand | OpKind::Dropout => random_ops::params(kind),
    }
}

impl Checker<'_> {
    /// Evaluates a tile-valued expression, emitting its instructions into `cx`. `outer` is true for
    /// the outermost expression of a statement.
    pub(super) fn tile_expr(
        &mut self,
        e: &Expr,
        cx: &mut StmtCtx,
        dest: Dest,
        outer: bool,
    ) -> Option<TileVal> {
        match &e.kind {
            // patterns.rs: `t.ap(...)` is a view, no instruction.
            ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Attribute { attr, .. } if attr.name == "ap") =>
            {
                let (t, _) = self.view(e)?;
                self.pass_view(t, &e.span, cx, dest)
            }
            ExprKind::Call { func, args, kwargs } => {
                self.call(e, func, args, kwargs, cx, dest, outer)
            }
            ExprKind::Binary {
                op: BinOp::MatMul, ..
            } => {
                self.refuse_matmul_operator(&e.span);
                None
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let Some(alu) = tile_alu(*op) else {
                    self.error(CheckError::NotOnTiles {
                        op: op.symbol(),
                        at: e.span.clone(),
                    });
                    return None;
                };
                let x = self.arg(lhs, cx);
                let y = self.arg(rhs, cx);
                self.elementwise(alu, x?, y?, &e.span, cx, dest)
            }
            ExprKind::Unary { op, operand } => {
                let x = self.arg(operand, cx)?;
                match (op, x) {
                    (UnaryOp::Pos, Arg::Tile(t, s)) => self.pass_view(t, &s, cx, dest),
                    (UnaryOp::Neg, x @ Arg::Tile(..)) => {
                        self.elementwise(AluOp::Multiply, x, Arg::Scalar(-1.0), &e.span, cx, dest)
                    }
                    // `~t` is `nl.invert(t)`, as NKI's tiles define the operator.
                    (UnaryOp::Invert, Arg::Tile(t, s)) => {
                        if !self.compute_src(&t, &s, "`~`") {
                            return None;
                        }
                        let op = Op::Activation {
                            func: ActFunc::LogicalNot,
                            scale: Scale::Imm(1.0),
                            bias: false,
                        };
                        let shape = t.size;
                        self.emit(cx, op, vec![t], Res::sbuf(shape), dest, &e.span)
                    }
                    (_, Arg::Scalar(_)) => {
                        self.scalar_where_tile(&e.span);
                        None
                    }
                }
            }
            ExprKind::Error => None,
            _ => {
                let (t, _) = self.view(e)?;
                self.pass_view(t, &e.span, cx, dest)
            }
        }
    }

    /// A view used as a whole expression: bound as is, or copied into a destination.
    fn pass_view(
        &mut self,
        t: TileVal,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        match dest {
            Dest::Into { .. } => {
                if !self.compute_src(&t, span, "a copy") {
                    return None;
                }
                let res = Res::sbuf(t.size);
                self.emit(cx, Op::Copy, vec![t], res, dest, span)
            }
            Dest::New { .. } | Dest::Temp => Some(t),
        }
    }

    /// A name or subscript that denotes a tile, without instructions; with its tensor's name.
    pub(super) fn view(&mut self, e: &Expr) -> Option<(TileVal, String)> {
        // reshape.rs: `x.reshape(shape)` and `x.reshape(shape)[...]`.
        if let Some(r) = self.reshape_view(e) {
            return r;
        }
        // patterns.rs: `t.ap([[step, count], ...])`.
        if let Some(r) = self.ap_view(e) {
            return r;
        }
        match &e.kind {
            ExprKind::Name(n) => {
                let t = self.tile_of_name(n, &e.span)?;
                Some((t, n.clone()))
            }
            ExprKind::Subscript { value, indices } => {
                let ExprKind::Name(n) = &value.kind else {
                    let method = match &value.kind {
                        ExprKind::Call { func, .. } => match &func.kind {
                            ExprKind::Attribute { attr, .. } => {
                                not_in_nkc(&attr.name).map(|h| (attr, h))
                            }
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some((attr, _)) = method {
                        self.error(CheckError::SlicedNkiMethod {
                            method: attr.name.clone(),
                            at: attr.span.clone(),
                        });
                    } else if !matches!(value.kind, ExprKind::Error) {
                        self.error(CheckError::SliceOfNonName {
                            at: value.span.clone(),
                        });
                    }
                    return None;
                };
                let base = self.tile_of_name(n, &value.span)?;
                let t = self.subscript(&base, n, indices, &e.span)?;
                Some((t, n.clone()))
            }
            ExprKind::Error => None,
            ExprKind::Float(_) | ExprKind::Int(_) => {
                self.scalar_where_tile(&e.span);
                None
            }
            _ => {
                self.error(CheckError::ExpectedTile { at: e.span.clone() });
                None
            }
        }
    }

    pub(super) fn tile_of_name(&mut self, n: &str, span: &Span) -> Option<TileVal> {
        match self.lookup(n, span) {
            Value::Tile(t) => Some(t),
            Value::Param(t) => Some(TileVal::whole(t, self.tensor(t).shape)),
            Value::Error => None,
            Value::Int(_) | Value::Iv(_) => {
                self.error(CheckError::IntNotTile {
                    name: n.to_string(),
                    at: span.clone(),
                });
                None
            }
            Value::Float(_)
            | Value::Bool(_)
            | Value::Vec(_)
            | Value::Mask(_)
            | Value::None
            | Value::Py(_) => {
                self.error(CheckError::ScalarNameNotTile {
                    name: n.to_string(),
                    at: span.clone(),
                });
                None
            }
        }
    }

    fn scalar_where_tile(&mut self, span: &Span) {
        self.error(CheckError::ScalarNotTile { at: span.clone() });
    }

    /// An elementwise operand: a scalar (a numeric literal or a compile-time integer name) or a
    /// tile.
    pub(super) fn arg(&mut self, e: &Expr, cx: &mut StmtCtx) -> Option<Arg> {
        self.arg_at(e, cx, false)
    }

    /// [`Checker::arg`] for an operand that may be the statement's outermost call (`outer`), as
    /// the value of `t += nl.exp(x, stage_id=1)` is.
    pub(super) fn arg_at(&mut self, e: &Expr, cx: &mut StmtCtx, outer: bool) -> Option<Arg> {
        if let Some(v) = literal_scalar(e) {
            return Some(Arg::Scalar(v as f32));
        }
        match self.classify(e) {
            Class::Int => return self.const_int(e).map(|c| Arg::Scalar(c as f32)),
            Class::Float => return self.const_value(e).map(|c| Arg::Scalar(c.as_f64() as f32)),
            _ => {}
        }
        self.tile_expr(e, cx, Dest::Temp, outer)
            .map(|t| Arg::Tile(t, e.span.clone()))
    }

    /// Reports an HBM (or otherwise unreadable) source of a compute operation.
    pub(super) fn compute_src(&mut self, t: &TileVal, span: &Span, what: &str) -> bool {
        if self.tensor(t.tensor).memory == Memory::Hbm {
            let name = self.tensor(t.tensor).name.clone();
            self.error(CheckError::HbmOperand {
                tensor: name,
                what: what.to_string(),
                at: span.clone(),
            });
            return false;
        }
        true
    }

    /// Writes the result of `op` to `dest` and records the instruction.
    pub(super) fn emit(
        &mut self,
        cx: &mut StmtCtx,
        op: Op,
        srcs: Vec<TileVal>,
        res: Res,
        dest: Dest,
        span: &Span,
    ) -> Option<TileVal> {
        let mut op = op;
        let dst = match dest {
            Dest::New { .. } | Dest::Temp => {
                let (name, bspan) = match dest {
                    Dest::New { name, span } => (name, span),
                    _ => (format!("_{}", op.name()), span.clone()),
                };
                if res.memory != Memory::Hbm && res.shape[0] > PMAX {
                    self.error(CheckError::TooManyPartitions {
                        memory: res.memory,
                        shape: res.shape,
                        result: true,
                        at: span.clone(),
                    });
                    return None;
                }
                let t = self.new_tensor(CTensor {
                    name,
                    memory: res.memory,
                    dtype: res.dtype,
                    shape: res.shape,
                    kind: TensorKind::Local,
                    span: bspan,
                });
                TileVal::whole(t, res.shape)
            }
            Dest::Into { target, accumulate } => {
                let tt = self.tensor(target.tensor).clone();
                if !self.written_pattern_ok(&target, span) {
                    return None;
                }
                if target.size != res.shape {
                    self.error(CheckError::AssignShape {
                        value: res.shape,
                        tensor: tt.name.clone(),
                        dest: target.size,
                        at: span.clone(),
                    });
                    return None;
                }
                match tt.memory {
                    Memory::Hbm => {
                        self.error(CheckError::HbmWrite {
                            tensor: tt.name.clone(),
                            at: span.clone(),
                        });
                        return None;
                    }
                    Memory::Psum if !writes_psum(&op) => {
                        self.error(CheckError::PsumWrite {
                            tensor: tt.name.clone(),
                            op: op.name(),
                            at: span.clone(),
                        });
                        return None;
                    }
                    Memory::Sbuf if is_tensor_engine(&op) && accumulate => {
                        self.error(CheckError::TensorEngineDst {
                            op: op.name(),
                            tensor: tt.name.clone(),
                            at: span.clone(),
                        });
                        return None;
                    }
                    Memory::Sbuf if is_tensor_engine(&op) => {
                        // The Tensor engine writes PSUM only: its result goes to a PSUM
                        // temporary, copied into the SBUF destination (an implicit copy, on
                        // `act` or `dve`, as NKI does).
                        let tmp = self.new_tensor(CTensor {
                            name: format!("_{}_psum", op.name()),
                            memory: Memory::Psum,
                            dtype: DType::F32,
                            shape: res.shape,
                            kind: TensorKind::Local,
                            span: span.clone(),
                        });
                        let tmp = TileVal::whole(tmp, res.shape);
                        cx.insts.push(CInst {
                            op,
                            dst: tmp.operand(),
                            srcs: srcs.iter().map(TileVal::operand).collect(),
                            span: span.clone(),
                            engine: None,
                            mask: Vec::new(),
                            guards: Vec::new(),
                            implicit: false,
                        });
                        cx.insts.push(CInst {
                            op: Op::Copy,
                            dst: target.operand(),
                            srcs: vec![tmp.operand()],
                            span: span.clone(),
                            engine: None,
                            mask: Vec::new(),
                            guards: Vec::new(),
                            implicit: true,
                        });
                        return Some(target);
                    }
                    _ => {}
                }
                if accumulate {
                    if let Op::Matmul { accumulate: a } = &mut op {
                        *a = true;
                    }
                }
                target
            }
        };
        cx.insts.push(CInst {
            op,
            dst: dst.operand(),
            srcs: srcs.iter().map(TileVal::operand).collect(),
            span: span.clone(),
            engine: None,
            mask: Vec::new(),
            guards: Vec::new(),
            implicit: false,
        });
        Some(dst)
    }

    /// `x op y` elementwise.
    pub(super) fn elementwise(
        &mut self,
        alu: AluOp,
        x: Arg,
        y: Arg,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let reverse = matches!(x, Arg::Scalar(_));
        match (x, y) {
            (Arg::Tile(a, sa), Arg::Tile(b, sb)) => {
                let ok_a = self.compute_src(&a, &sa, &format!("`{}`", alu.name()));
                let ok_b = self.compute_src(&b, &sb, &format!("`{}`", alu.name()));
                if !(ok_a && ok_b) {
                    return None;
                }
                let shape = if a.size == b.size {
                    a.size
                } else if a.size[0] == b.size[0] && (a.size[1] == 1 || b.size[1] == 1) {
                    [a.size[0], a.size[1].max(b.size[1])]
                } else if let Some((a, b)) = self.broadcast_partitions(&a, &b, span, cx) {
                    // broadcast.rs: a `[1, F]` operand repeated on every partition (numpy rules).
                    let (a, b) = (Arg::Tile(a, sa), Arg::Tile(b, sb));
                    return self.elementwise(alu, a, b, span, cx, dest);
                } else if let Some((a, b, dims)) = self.broadcast_nd(&a, &b) {
                    // broadcast_nd.rs: N-D shapes broadcast along free axes of one element.
                    let (a, b) = (Arg::Tile(a, sa), Arg::Tile(b, sb));
                    let r = self.elementwise(alu, a, b, span, cx, dest)?;
                    self.keep_shape(&r, Some(dims));
                    return Some(r);
                } else {
                    self.error(CheckError::ElementwiseShape {
                        op: alu.name(),
                        a: a.size,
                        b: b.size,
                        a_at: sa,
                        b_at: sb,
                        at: span.clone(),
                    });
                    return None;
                };
                self.emit(
                    cx,
                    Op::TensorTensor { op: alu },
                    vec![a, b],
                    Res::sbuf(shape),
                    dest,
                    span,
                )
            }
            (Arg::Tile(a, sa), Arg::Scalar(v)) | (Arg::Scalar(v), Arg::Tile(a, sa)) => {
                if !self.compute_src(&a, &sa, &format!("`{}`", alu.name())) {
                    return None;
                }
                let shape = a.size;
                let op = Op::TensorScalar {
                    op: alu,
                    imm: v,
                    reverse,
                };
                self.emit(cx, op, vec![a], Res::sbuf(shape), dest, span)
            }
            (Arg::Scalar(_), Arg::Scalar(_)) => {
                self.error(CheckError::TwoScalars {
                    op: alu.name(),
                    at: span.clone(),
                });
                None
            }
        }
    }

    /// Resolves the operation a call names.
    fn resolve(&mut self, func: &Expr) -> Option<OpKind> {
        match &func.kind {
            ExprKind::Attribute { value, attr } => {
                let ExprKind::Name(m) = &value.kind else {
                    self.not_callable(func);
                    return None;
                };
                let (found, other) = match m.as_str() {
                    "nl" => (nl_op(&attr.name), nisa_op(&attr.name).map(|_| "nisa")),
                    "nisa" => (nisa_op(&attr.name), nl_op(&attr.name).map(|_| "nl")),
                    _ => {
                        if self.find(m).is_none() && !RESERVED_MODULES.contains(&m.as_str()) {
                            self.lookup(m, &value.span);
                        } else if not_in_nkc(&attr.name).is_some() {
                            // A method NKI's tensors have: `t.reshape(...)`.
                            self.error(CheckError::NkiMethodCall {
                                module: m.clone(),
                                method: attr.name.clone(),
                                at: attr.span.clone(),
                            });
                        } else {
                            self.not_callable(func);
                        }
                        return None;
                    }
                };
                if found.is_some() {
                    return found;
                }
                if m == "nl" && NL_NON_OPS.contains(&attr.name.as_str()) {
                    self.not_callable(func);
                    return None;
                }
                self.error(CheckError::UnknownOp {
                    module: m.clone(),
                    name: attr.name.clone(),
                    other,
                    at: attr.span.clone(),
                });
                None
            }
            ExprKind::Name(n)
                if self.find(n).is_none()
                    && !RESERVED_MODULES.contains(&n.as_str())
                    && n != "range" =>
            {
                self.lookup(n, &func.span);
                None
            }
            ExprKind::Error => None,
            _ => {
                self.not_callable(func);
                None
            }
        }
    }

    fn not_callable(&mut self, func: &Expr) {
        self.error(CheckError::NotCallable {
            at: func.span.clone(),
        });
    }

    /// A reduction of `x_e` along `axis_e` (`mean`: then divided by the count).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reduce(
        &mut self,
        rop: ReduceOp,
        mean: bool,
        x_e: &Expr,
        axis_e: &Expr,
        keepdims: Option<&Expr>,
        name: &str,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.arg(x_e, cx);
        // patterns: `axis=[2, 4]` of an access-pattern value.
        let axes = pattern_axes(axis_e);
        if axes.is_none() {
            self.reduce_axis(axis_e)?;
        }
        if let Some(k) = keepdims {
            // The result is `[P, 1]` either way: a reduced row is a column here.
            self.condition(k, "keepdims")?;
        }
        let (x, sx) = self.tile_of_arg(x?, &x_e.span)?;
        if let Some(axes) = axes {
            // A tile of more than 2 axes (patterns_nd) reduces over them as a pattern.
            let x = self.shaped_as_pattern(x);
            // `keepdims=True`: the result keeps the reduced axes, of one element each
            // (`broadcast_nd` broadcasts it against the value reduced).
            let kept = match (keepdims.map(|k| &k.kind), &x.pattern) {
                (Some(crate::ast::ExprKind::Bool(true)), Some(p)) => {
                    let rank = p.axes.len() as i64;
                    let red: Vec<i64> = axes
                        .iter()
                        .map(|&a| if a < 0 { a + rank } else { a })
                        .collect();
                    Some(
                        (0..p.axes.len())
                            .map(|k| {
                                if red.contains(&(k as i64)) {
                                    1
                                } else {
                                    p.axes[k].count
                                }
                            })
                            .collect::<Vec<u64>>(),
                    )
                }
                _ => None,
            };
            let r = self.reduce_pattern_axes(rop, mean, x, &axes, &axis_e.span, span, cx, dest)?;
            self.keep_shape(&r, kept.filter(|d| d.len() > 2));
            return Some(r);
        }
        if !self.compute_src(&x, &sx, &format!("`{name}`")) {
            return None;
        }
        let shape = [x.size[0], 1];
        if !mean {
            return self.emit(
                cx,
                Op::Reduce { op: rop },
                vec![x],
                Res::sbuf(shape),
                dest,
                span,
            );
        }
        let count = x.size[1] as f32;
        let sum = self.emit(
            cx,
            Op::Reduce { op: rop },
            vec![x],
            Res::sbuf(shape),
            Dest::Temp,
            span,
        )?;
        self.elementwise(
            AluOp::Divide,
            Arg::Tile(sum, span.clone()),
            Arg::Scalar(count),
            span,
            cx,
            dest,
        )
    }

    /// `x[P, F]` (SBUF) transposed on the Tensor engine into `[F, P]` in PSUM.
    pub(super) fn transpose_of(
        &mut self,
        x: TileVal,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let [p, f] = x.size;
        if p > PMAX || f > PMAX {
            self.error(CheckError::TransposeLimit {
                shape: x.size,
                at: span.clone(),
            });
            return None;
        }
        let res = Res {
            shape: [f, p],
            memory: Memory::Psum,
            dtype: DType::F32,
        };
        self.emit(cx, Op::Transpose, vec![x], res, dest, span)
    }

    /// The `axis=` of a reduction: the free axis, written `1`, `-1`, `[1]` or `(1,)`.
    pub(super) fn reduce_axis(&mut self, e: &Expr) -> Option<()> {
        let one = match &e.kind {
            ExprKind::Tuple(items) if items.len() == 1 => &items[0],
            _ => e,
        };
        let axis = self.const_int(one)?;
        if axis == 1 || axis == -1 {
            return Some(());
        }
        self.error(CheckError::ReduceAxis {
            axis,
            at: e.span.clone(),
        });
        None
    }

    /// A call in a tile expression. `dtype=` on an operation other than `nl.zeros` /
    /// `nl.ndarray` is the dtype of its result: `nl.float32` changes nothing (arithmetic is
    /// float32), `nl.bfloat16` stores a new SBUF result rounded to bfloat16.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        e: &Expr,
        func: &Expr,
        args: &[Expr],
        kwargs: &[Keyword],
        cx: &mut StmtCtx,
        dest: Dest,
        outer: bool,
    ) -> Option<TileVal> {
        // reshape.rs: `x.reshape(shape)` of an HBM tensor, a view.
        if let Some(r) = self.reshape_call(e, &dest) {
            return r;
        }
        if let Some(call) = method_call(func, args, kwargs) {
            return self.tile_expr(&call, cx, dest, outer);
        }
        let kind = self.resolve(func)?;
        let engine_kw = kwargs.iter().find(|k| k.name.name == "engine");
        // scan_stats_ops.rs: `nisa.nc_transpose(x, engine=nisa.vector_engine)` is its own
        // instruction (a 32 x 32 block on the Vector engine), not the Tensor engine's.
        // `nisa.activation(op, data, ..., reduce_op=, reduce_res=)` (NKI's newer signature) is
        // `nisa.activation_reduce`: the keywords name its parameters, so with at most `op` and
        // `data` positional every argument keeps its meaning.
        let reduces = kwargs
            .iter()
            .any(|k| matches!(k.name.name.as_str(), "reduce_op" | "reduce_res"));
        let kind = match (kind, engine_kw) {
            (OpKind::NcTranspose, Some(k)) if scan_stats_ops::is_vector_engine(&k.value) => {
                OpKind::VectorTranspose
            }
            (OpKind::Activation, _) if reduces && args.len() <= 2 => OpKind::ActivationReduce,
            _ => kind,
        };
        let takes_dtype = params(kind).iter().any(|p| p.0 == "dtype");
        let dtype_kw = kwargs
            .iter()
            .find(|k| k.name.name == "dtype")
            .filter(|_| !takes_dtype);
        // `reduce_cmd=nisa.reduce_cmd.reset_reduce`: a fresh reduction, what activation_reduce
        // does; the accumulating commands (`reduce`, `idle`) stay an unknown argument.
        let reset_reduce = kind == OpKind::ActivationReduce
            && kwargs.iter().any(|k| {
                k.name.name == "reduce_cmd"
                    && matches!(&k.value.kind, ExprKind::Attribute { attr, .. } if attr.name == "reset_reduce")
            });
        let Some(rest) = self.without_mask(kwargs, |k| {
            (dtype_kw.is_some() && k == "dtype")
                || (engine_kw.is_some() && k == "engine")
                || (reset_reduce && k == "reduce_cmd")
        }) else {
            return self.call_op(e, func, kind, args, kwargs, cx, dest, outer);
        };
        let (rest, mask) = rest?;
        let dtype = dtype_kw.map(|k| self.dtype_of(&k.value));
        let fresh = !matches!(dest, Dest::Into { .. });
        let before = cx.insts.len();
        let prev_mask = std::mem::replace(&mut self.active_mask, mask_hull(&mask));
        let guards = [&self.active_guards[..], &common_guards(&mask)[..]].concat();
        let prev_guards = std::mem::replace(&mut self.active_guards, guards);
        let t = self.call_op(e, func, kind, args, &rest, cx, dest, outer);
        self.active_mask = prev_mask;
        self.active_guards = prev_guards;
        let t = t?;
        // The engine first: a mask of several pieces copies the instructions, engine included.
        if let Some(k) = engine_kw.filter(|_| kind != OpKind::VectorTranspose) {
            self.apply_engine(&k.value, &func_name(func), before, cx)?;
        }
        self.apply_mask(mask, before, cx, &e.span)?;
        if dtype.flatten() == Some(DType::Bf16) && fresh {
            let tensor = &mut self.tensors[t.tensor.as_u32() as usize];
            if tensor.memory == Memory::Sbuf {
                tensor.dtype = DType::Bf16;
            }
        }
        Some(t)
    }

    /// The keywords of a call without `mask=` and those `drop` names, with the mask's bounds
    /// ([`Checker::mask`]; empty when it keeps every element): `None` when there is nothing to
    /// take off, `Some(None)` when the mask is refused.
    pub(super) fn without_mask(
        &mut self,
        kwargs: &[Keyword],
        drop: impl Fn(&str) -> bool,
    ) -> Option<Option<(Vec<Keyword>, MaskPieces)>> {
        let taken = |k: &Keyword| k.name.name == "mask" || drop(&k.name.name);
        if !kwargs.iter().any(taken) {
            return None;
        }
        let mut ok = true;
        let mut bounds: MaskPieces = vec![MaskPiece::default()];
        for k in kwargs.iter().filter(|k| k.name.name == "mask") {
            match self.mask(&k.value) {
                Some(b) => bounds = mask_and(&bounds, &b),
                None => ok = false,
            }
        }
        let rest = kwargs.iter().filter(|k| !taken(k)).cloned().collect();
        Some(ok.then_some((rest, bounds)))
    }

    /// Puts `mask` on every instruction a masked call made (those of `cx` from `before`), or
    /// reports an operation that cannot take one. A mask of no piece keeps nothing in any
    /// iteration: the instructions are dropped. Guards (`mask_guards.rs`) go on any operation:
    /// they run the instruction whole or not at all.
    pub(super) fn apply_mask(
        &mut self,
        pieces: MaskPieces,
        before: usize,
        cx: &mut StmtCtx,
        at: &Span,
    ) -> Option<()> {
        if pieces.is_empty() {
            cx.insts.truncate(before);
            return Some(());
        }
        // mask_nd.rs: bounds on a free axis of an N-D tile, on the folded free index.
        let free = cx.insts.get(before).and_then(|i| {
            let d = penguin::InstData::new(
                i.op.clone(),
                i.op.default_engine(),
                i.dst.clone(),
                i.srcs.clone(),
            );
            d.iter_shape().map(|s| s[1])
        });
        let pieces = self.resolve_nd_mask(pieces, free, at)?;
        if pieces.len() > 1 {
            // mask_sums.rs: a union of disjoint boxes; the call's instructions run once per box.
            let insts = cx.insts.split_off(before);
            for piece in pieces {
                let start = cx.insts.len();
                cx.insts.extend(insts.iter().cloned());
                self.apply_mask(vec![piece], start, cx, at)?;
            }
            return Some(());
        }
        let MaskPiece {
            bounds: mask,
            guards,
            ..
        } = pieces.into_iter().next().unwrap_or_default();
        for inst in &mut cx.insts[before..] {
            inst.guards.extend(guards.iter().cloned());
        }
        if mask.is_empty() {
            return Some(());
        }
        let free_bound = mask.iter().any(|b| b.dim == penguin::TileDim::Free);
        for inst in &mut cx.insts[before..] {
            let why = if !penguin::InstData::maskable(&inst.op) {
                "its elements do not map one to one onto the tile's"
            } else if free_bound && !penguin::InstData::free_maskable(&inst.op) {
                "its free elements are a fixed-width result of the whole row: mask only the \
                 partition index"
            } else if free_bound
                && std::iter::once(&inst.dst)
                    .chain(&inst.srcs)
                    .any(|o| o.access.pattern.as_ref().is_some_and(|p| !p.clips(1)))
            {
                "an operand is an access pattern of several free axes, whose flattened free \
                 index a bound cannot cut: mask only the partition index, or index the free \
                 axis with one vector"
            } else {
                inst.mask.extend(mask.iter().cloned());
                continue;
            };
            self.error(CheckError::MaskUnsupported {
                why: format!(
                    "`{}` cannot take a mask that drops elements ({why})",
                    inst.op.name()
                ),
                at: at.clone(),
            });
            return None;
        }
        Some(())
    }

    /// [`Checker::call`] once `dtype=` and `mask=` are taken off: refuses the operations that
    /// give no tile, binds the arguments, then applies the operation.
    #[allow(clippy::too_many_arguments)]
    fn call_op(
        &mut self,
        e: &Expr,
        func: &Expr,
        kind: OpKind,
        args: &[Expr],
        kwargs: &[Keyword],
        cx: &mut StmtCtx,
        dest: Dest,
        outer: bool,
    ) -> Option<TileVal> {
        let name = func_name(func);
        if !self.gives_tile(kind, &name, &e.span) {
            return None;
        }
        let slots = self.bind_call(kind, &name, &e.span, args, kwargs, cx, outer)?;
        let span = &e.span;
        match kind {
            OpKind::Load => self.load(slots[0]?, span, cx, dest),
            OpKind::Matmul => self.nl_matmul(&slots, span, cx, dest),
            OpKind::NcMatmul => {
                for (hint, e) in ["is_stationary_onezero", "is_moving_onezero", "is_transpose"]
                    .iter()
                    .zip(&slots[4..])
                {
                    if let Some(e) = e {
                        self.condition(e, hint)?;
                    }
                }
                let (pos, size) = (slots[2], slots[3]);
                self.matmul_tiled(slots[0]?, slots[1]?, pos, size, span, cx, dest)
            }
            OpKind::NcTranspose => {
                let x = self.tensor_engine_operand(slots[0]?, cx)?;
                self.transpose_of(x, span, cx, dest)
            }
            OpKind::Alu(alu) => {
                let (x, y) = self.args_in_order(slots[0]?, slots[1]?, cx);
                self.elementwise(alu, x?, y?, span, cx, dest)
            }
            OpKind::Act(func) => {
                let op = Op::Activation {
                    func,
                    scale: Scale::Imm(1.0),
                    bias: false,
                };
                let what = format!("`nl.{}`", func.name());
                self.unary(op, slots[0]?, &what, span, cx, dest)
            }
            OpKind::Activation => self.activation(&slots, span, cx, dest),
            OpKind::Reduce(rop) => self.reduce(
                rop, false, slots[0]?, slots[1]?, slots[2], &name, span, cx, dest,
            ),
            OpKind::Mean => {
                let (x, axis) = (slots[0]?, slots[1]?);
                self.reduce(
                    ReduceOp::Sum,
                    true,
                    x,
                    axis,
                    slots[2],
                    &name,
                    span,
                    cx,
                    dest,
                )
            }
            OpKind::TensorScalar => self.tensor_scalar(&slots, span, cx, dest),
            OpKind::BroadcastTo => self.broadcast_to(slots[0]?, slots[1]?, span, cx, dest),
            OpKind::LoadTranspose => {
                // reshape.rs: a source of more than 128 rows, per block of 128.
                if let Some(r) = self.load_transpose_tall(slots[0]?, span, cx, &dest) {
                    return r;
                }
                let loaded =
                    self.call_op(e, func, OpKind::Load, args, kwargs, cx, Dest::Temp, false)?;
                let t = self.transpose_of(loaded, span, cx, Dest::Temp)?;
                let shape = t.size;
                self.emit(cx, Op::Copy, vec![t], Res::sbuf(shape), dest, span)
            }
            OpKind::TensorTensor => self.tensor_tensor(&slots, span, cx, dest),
            OpKind::TensorReduce => {
                let rop = self.reduce_op(slots[0]?)?;
                let negate = match slots[4] {
                    Some(n) => self.condition(n, "negate")?,
                    None => false,
                };
                if !negate {
                    return self.reduce(
                        rop, false, slots[1]?, slots[2]?, slots[3], &name, span, cx, dest,
                    );
                }
                // `negate=True`: the reduction times -1, exact (a sign flip).
                let r = self.reduce(
                    rop,
                    false,
                    slots[1]?,
                    slots[2]?,
                    slots[3],
                    &name,
                    span,
                    cx,
                    Dest::Temp,
                )?;
                self.elementwise(
                    AluOp::Multiply,
                    Arg::Tile(r, span.clone()),
                    Arg::Scalar(-1.0),
                    span,
                    cx,
                    dest,
                )
            }
            OpKind::Copy => self.unary(Op::Copy, slots[0]?, "`nl.copy`", span, cx, dest),
            OpKind::Zeros | OpKind::Ndarray | OpKind::Full | OpKind::Ones | OpKind::NisaMemset => {
                self.alloc(kind, &name, &slots, span, cx, dest)
            }
            OpKind::Where
            | OpKind::Softmax
            | OpKind::Var
            | OpKind::Like(_)
            | OpKind::PartitionReduce
            | OpKind::ActivationReduce
            | OpKind::TensorScalarReduce
            | OpKind::Iota
            | OpKind::AffineSelect => self.extra_op(kind, &name, &slots, span, cx, dest),
            OpKind::TensorTensorScan
            | OpKind::BnStats
            | OpKind::BnAggr
            | OpKind::LoopReduce
            | OpKind::VectorTranspose => self.scan_stats_op(kind, &slots, span, cx, dest),
            OpKind::Max8 | OpKind::FindIndex8 | OpKind::MatchReplace8 => {
                self.top8_op(kind, &slots, span, cx, dest)
            }
            OpKind::Rand | OpKind::Dropout => self.random_op(kind, &slots, span, cx, dest),
            OpKind::SharedConstant => self.shared_constant(&slots, span, dest),
            OpKind::Store | OpKind::Range => None,
        }
    }

    /// Whether operation `kind` gives a tile; reports the ones that do not (`nl.store`, a range
    /// call) used as a value at `span`.
    fn gives_tile(&mut self, kind: OpKind, name: &str, span: &Span) -> bool {
        match kind {
            OpKind::Store => {
                self.error(CheckError::StoreAsValue { at: span.clone() });
                false
            }
            OpKind::Range => {
                self.error(CheckError::RangeAsValue {
                    name: name.to_string(),
                    at: span.clone(),
                });
                false
            }
            _ => true,
        }
    }

    /// The arguments of a call of `kind` in the order of its parameters, with the pipelining
    /// keywords taken into the statement's annotations (allowed on an outer call directly in a
    /// loop body only).
    #[allow(clippy::too_many_arguments)]
    fn bind_call<'e>(
        &mut self,
        kind: OpKind,
        name: &str,
        span: &Span,
        args: &'e [Expr],
        kwargs: &'e [Keyword],
        cx: &mut StmtCtx,
        outer: bool,
    ) -> Option<Vec<Option<&'e Expr>>> {
        let site = if !outer {
            KwSite::Nested
        } else if cx.in_loop_body {
            KwSite::Allowed
        } else {
            KwSite::NotInLoop
        };
        let mut annot = cx.annot;
        let slots = self.bind_args(
            name,
            span,
            args,
            kwargs,
            params(kind),
            site,
            &mut annot,
            None,
        );
        cx.annot = annot;
        slots
    }

    /// `nl.load(src)`: an HBM slice into a new SBUF tile.
    fn load(&mut self, src_e: &Expr, span: &Span, cx: &mut StmtCtx, dest: Dest) -> Option<TileVal> {
        let (src, _) = self.view(src_e)?;
        let src = self.dma_view(src);
        let t = self.tensor(src.tensor).clone();
        if t.memory != Memory::Hbm {
            self.error(CheckError::LoadNotHbm {
                tensor: t.name.clone(),
                memory: t.memory,
                at: src_e.span.clone(),
            });
            return None;
        }
        let res = Res {
            shape: src.tile_shape(),
            memory: Memory::Sbuf,
            dtype: t.dtype,
        };
        if let Some(idx) = src.indirect.clone() {
            // indirect.rs: a gather, the index tile its second source.
            let op = Op::Gather { skip_oob: false };
            return self.emit(cx, op, vec![src, *idx], res, dest, span);
        }
        let shape = self.value_dims(&src);
        let r = self.emit(cx, Op::Load, vec![src], res, dest, span)?;
        self.keep_shape(&r, shape);
        Some(r)
    }

    /// A whole HBM tensor of 3 or more dimensions moved by a load or store: NKI's tile of it,
    /// partition-major `[d0, d1·d2·...]` (`TileVal::view`). Any other tile is unchanged.
    pub(super) fn dma_view(&self, mut t: TileVal) -> TileVal {
        if t.view.is_none() && self.tensor(t.tensor).memory == Memory::Hbm {
            if let Some(dims) = self.logical_dims(&t).filter(|d| d.len() > 2) {
                t.view = Some([dims[0], dims[1..].iter().product()]);
            }
        }
        t
    }

    /// `nl.matmul(x, y, transpose_x=True)`: the Tensor engine's `x.T @ y`. Without
    /// `transpose_x=True` (NKI's default is False) it is `x @ y` with `x[M, K]`, lowered as NKI
    /// lowers it: `x` transposed on the Tensor engine (into PSUM), copied to SBUF in its own
    /// dtype, then the matmul; both are exact, so the result is the matmul's.
    fn nl_matmul(
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

    /// A one-operand operation (`nl.exp`, ..., `nl.copy`) of the tile `x_e` into a new SBUF
    /// tile; `what` names the operation in a diagnostic.
    fn unary(
        &mut self,
        op: Op,
        x_e: &Expr,
        what: &str,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.compute_tile(x_e, cx, what)?;
        let shape = x.size;
        // An elementwise result keeps its operand's NKI shape (patterns_nd).
        let dims = self.value_dims(&x);
        let r = self.emit(cx, op, vec![x], Res::sbuf(shape), dest, span)?;
        self.keep_shape(&r, dims);
        Some(r)
    }

    /// The tile `e` as an operand of a compute engine, `what`: a scalar or an HBM tensor is
    /// refused.
    pub(super) fn compute_tile(
        &mut self,
        e: &Expr,
        cx: &mut StmtCtx,
        what: &str,
    ) -> Option<TileVal> {
        let x = self.arg(e, cx)?;
        let (x, sx) = self.tile_of_arg(x, &e.span)?;
        self.compute_src(&x, &sx, what).then_some(x)
    }

    /// An evaluated operand that must be a tile (written at `span`): a scalar is refused.
    pub(super) fn tile_of_arg(&mut self, x: Arg, span: &Span) -> Option<(TileVal, Span)> {
        match x {
            Arg::Tile(t, s) => Some((t, s)),
            Arg::Scalar(_) => {
                self.scalar_where_tile(span);
                None
            }
        }
    }

    /// Two operands, evaluated in source order.
    fn args_in_order(
        &mut self,
        a: &Expr,
        b: &Expr,
        cx: &mut StmtCtx,
    ) -> (Option<Arg>, Option<Arg>) {
        if b.span.start < a.span.start {
            let y = self.arg(b, cx);
            let x = self.arg(a, cx);
            (x, y)
        } else {
            let x = self.arg(a, cx);
            let y = self.arg(b, cx);
            (x, y)
        }
    }

    /// A Tensor-engine operand: a tile in SBUF.
    fn tensor_engine_operand(&mut self, e: &Expr, cx: &mut StmtCtx) -> Option<TileVal> {
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
    fn matmul_tiled(
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

    /// `nisa.activation(op=F, data=x, bias=b, scale=s)`.
    pub(super) fn activation(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let op_e = slots[0]?;
        let func = op_e.attr_of(&["nl", "np", "numpy"]).and_then(act_func);
        if func.is_none() && !matches!(op_e.kind, ExprKind::Error) {
            self.error(CheckError::ActivationFunc {
                at: op_e.span.clone(),
            });
        }
        // Evaluate the tile operands in source order: data, bias, scale.
        let mut order: Vec<usize> = (1..4).filter(|&i| slots[i].is_some()).collect();
        order.sort_by_key(|&i| slots[i].map_or(0, |e| e.span.start));
        let mut vals: [Option<Arg>; 4] = [None, None, None, None];
        let mut ok = true;
        for i in order {
            let e = slots[i]?;
            vals[i] = self.arg(e, cx);
            ok &= vals[i].is_some();
        }
        let func = func?;
        if !ok {
            return None;
        }
        let (data, sd) = self.tile_of_arg(vals[1].take()?, &slots[1]?.span)?;
        if !self.compute_src(&data, &sd, "`nisa.activation`") {
            return None;
        }
        let p = data.size[0];
        let mut srcs = vec![data.clone()];
        let col = |this: &mut Self, what: &'static str, t: TileVal, s: Span| -> Option<TileVal> {
            if !this.compute_src(&t, &s, "`nisa.activation`") {
                return None;
            }
            if t.size != [p, 1] {
                this.error(CheckError::ActivationColumn {
                    what,
                    p,
                    shape: t.size,
                    at: s,
                });
                return None;
            }
            Some(t)
        };
        let scale = match vals[3].take() {
            None => Scale::Imm(1.0),
            Some(Arg::Scalar(v)) => Scale::Imm(v),
            Some(Arg::Tile(t, s)) => {
                srcs.push(col(self, "scale", t, s)?);
                Scale::Tile
            }
        };
        let bias = match vals[2].take() {
            None => false,
            Some(Arg::Scalar(_)) => {
                self.error(CheckError::ActivationScalarBias {
                    p,
                    at: slots[2]?.span.clone(),
                });
                return None;
            }
            Some(Arg::Tile(t, s)) => {
                srcs.push(col(self, "bias", t, s)?);
                true
            }
        };
        let shape = data.size;
        self.emit(
            cx,
            Op::Activation { func, scale, bias },
            srcs,
            Res::sbuf(shape),
            dest,
            span,
        )
    }

    /// `nl.zeros(shape, dtype=, buffer=)` and `nl.ndarray(...)`.
    fn alloc(
        &mut self,
        kind: OpKind,
        name: &str,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        // `nl.full` has its fill value second.
        let (fill, slots) = match kind {
            OpKind::Full | OpKind::NisaMemset => {
                let v = self.const_value(slots[1]?).map(|c| c.as_f64() as f32);
                (Some(v?), [slots[0], slots[2], slots[3]])
            }
            _ => (None, [slots[0], slots[1], slots[2]]),
        };
        let memory = match slots[2] {
            Some(b) => self.buffer_of(b),
            None => Some(Memory::Sbuf),
        };
        // tile_nd: an on-chip tile of other than 2 dimensions, or with `nl.par_dim` not first.
        if memory != Some(Memory::Hbm) {
            let r = self.alloc_tile_nd(kind, name, fill, &slots, memory, span, cx, &dest);
            if let Some(r) = r {
                return r;
            }
        }
        // An HBM array may have any rank (`nd`); a tile has 2.
        let (shape, dims) = if memory == Some(Memory::Hbm) {
            match self.hbm_dims(slots[0]?) {
                Some((dims, flat)) => (Some(flat), Some(dims)),
                None => (None, None),
            }
        } else {
            (self.shape_of(slots[0]?), None)
        };
        let dtype = self.dtype_of(slots[1]?);
        let (shape, dtype, memory) = (shape?, dtype?, memory?);
        let Dest::New { .. } = dest else {
            self.error(CheckError::UnboundBuffer {
                name: name.to_string(),
                at: span.clone(),
            });
            return None;
        };
        let mut ok = true;
        if memory == Memory::Psum && dtype == DType::Bf16 {
            self.error(CheckError::Bf16InPsum {
                at: slots[1]?.span.clone(),
            });
            ok = false;
        }
        if memory == Memory::Psum && shape[1] * dtype.size_bytes() > PSUM_BANK_BYTES {
            self.error(CheckError::PsumTooLarge {
                shape,
                bytes: shape[1] * dtype.size_bytes(),
                at: slots[0]?.span.clone(),
            });
            ok = false;
        }
        if kind != OpKind::Ndarray && memory == Memory::Hbm {
            self.error(CheckError::MemsetHbm {
                name: name.to_string(),
                at: span.clone(),
            });
            ok = false;
        }
        if !ok {
            return None;
        }
        let res = Res {
            shape,
            memory,
            dtype,
        };
        if kind != OpKind::Ndarray {
            let value = fill.unwrap_or(if kind == OpKind::Ones { 1.0 } else { 0.0 });
            return self.emit(cx, Op::Memset { value }, vec![], res, dest, span);
        }
        // An ndarray: a tensor without an instruction.
        let Dest::New { name, span: bspan } = dest else {
            return None;
        };
        if memory != Memory::Hbm && shape[0] > PMAX {
            self.error(CheckError::TooManyPartitions {
                memory,
                shape,
                result: false,
                at: slots[0]?.span.clone(),
            });
            return None;
        }
        let t = self.new_tensor(CTensor {
            name,
            memory,
            dtype,
            shape,
            kind: TensorKind::Local,
            span: bspan,
        });
        if let Some(dims) = dims.filter(|d| d.len() != 2) {
            self.logical.insert(t, dims);
        }
        Some(TileVal::whole(t, shape))
    }

    /// `(rows, cols)`: two positive compile-time integers.
    pub(super) fn shape_of(&mut self, e: &Expr) -> Option<[u64; 2]> {
        if let ExprKind::Attribute { value, attr } = &e.kind {
            if attr.name == "shape" {
                let shape = self.shape_value(value)?;
                if let [r, c] = shape[..] {
                    return Some([r, c]);
                }
                self.error(CheckError::ShapeDims {
                    shape: shape.clone(),
                    at: e.span.clone(),
                });
                return None;
            }
        }
        let ExprKind::Tuple(items) = &e.kind else {
            if !matches!(e.kind, ExprKind::Error) {
                self.error(CheckError::ShapeNotTuple { at: e.span.clone() });
            }
            return None;
        };
        if items.len() != 2 {
            self.error(CheckError::ShapeArity {
                dims: items.len(),
                at: e.span.clone(),
            });
            return None;
        }
        let a = self.dim(&items[0]);
        let b = self.dim(&items[1]);
        Some([a?, b?])
    }

    /// One dimension of a shape: a compile-time integer ≥ 1.
    pub(super) fn dim(&mut self, e: &Expr) -> Option<u64> {
        // `nl.par_dim(n)` marks the partition dimension, which is always the first here.
        let e = match &e.kind {
            ExprKind::Call { func, args, kwargs }
                if func_name(func) == "nl.par_dim" && args.len() == 1 && kwargs.is_empty() =>
            {
                &args[0]
            }
            _ => e,
        };
        let v = self.const_int(e)?;
        if v > MAX_EXTENT {
            self.error(CheckError::DimTooLarge {
                value: v,
                max: MAX_EXTENT,
                at: e.span.clone(),
            });
            return None;
        }
        if v < 1 {
            self.error(CheckError::DimNotPositive {
                value: v,
                at: e.span.clone(),
            });
            return None;
        }
        Some(v as u64)
    }

    /// `nl.float32` or `nl.bfloat16`.
    pub(super) fn dtype_of(&mut self, e: &Expr) -> Option<DType> {
        if let ExprKind::Attribute { value, attr } = &e.kind {
            if let (ExprKind::Name(n), "dtype") = (&value.kind, attr.name.as_str()) {
                if n != "nl" {
                    return match self.lookup(n, &value.span) {
                        Value::Tile(t) => Some(self.tensor(t.tensor).dtype),
                        Value::Param(t) => Some(self.tensor(t).dtype),
                        Value::Error => None,
                        _ => {
                            self.error(CheckError::ScalarDtype {
                                name: n.to_string(),
                                at: value.span.clone(),
                            });
                            None
                        }
                    };
                }
            }
        }
        match e.attr_of(&["nl", "np", "numpy"]) {
            Some("float32") => return Some(DType::F32),
            Some("bfloat16") => return Some(DType::Bf16),
            // Integer tiles (indices, counts) are held as float32, exact below 2^24.
            Some("uint32" | "int32" | "uint16" | "int16" | "uint8" | "int8") => {
                return Some(DType::F32)
            }
            _ => {}
        }
        if matches!(e.kind, ExprKind::Error) {
            return None;
        }
        self.error(CheckError::UnsupportedDtype { at: e.span.clone() });
        None
    }

    /// `nl.sbuf`, `nl.psum`, `nl.shared_hbm` (or `nl.hbm`).
    pub(super) fn buffer_of(&mut self, e: &Expr) -> Option<Memory> {
        match e.attr_of(&["nl"]) {
            Some("sbuf") => return Some(Memory::Sbuf),
            Some("psum") => return Some(Memory::Psum),
            Some("shared_hbm" | "hbm") => return Some(Memory::Hbm),
            _ => {}
        }
        if matches!(e.kind, ExprKind::Error) {
            return None;
        }
        self.error(CheckError::BadBuffer { at: e.span.clone() });
        None
    }

    /// `nl.store(dst, value=t)` as a statement.
    pub(super) fn store(&mut self, e: &Expr, cx: &mut StmtCtx) -> Option<()> {
        let ExprKind::Call { args, kwargs, .. } = &e.kind else {
            return None;
        };
        let masked = self.without_mask(kwargs, |_| false);
        let (kwargs, mask) = match &masked {
            None => (&kwargs[..], vec![MaskPiece::default()]),
            Some(None) => return None,
            Some(Some((rest, mask))) => (&rest[..], mask.clone()),
        };
        let before = cx.insts.len();
        let prev_mask = std::mem::replace(&mut self.active_mask, mask_hull(&mask));
        let guards = [&self.active_guards[..], &common_guards(&mask)[..]].concat();
        let prev_guards = std::mem::replace(&mut self.active_guards, guards);
        let stored = self.store_op(e, args, kwargs, cx);
        self.active_mask = prev_mask;
        self.active_guards = prev_guards;
        stored?;
        self.apply_mask(mask, before, cx, &e.span)
    }

    /// [`Checker::store`] once `mask=` is taken off: binds the arguments and emits the store.
    fn store_op(
        &mut self,
        e: &Expr,
        args: &[Expr],
        kwargs: &[Keyword],
        cx: &mut StmtCtx,
    ) -> Option<()> {
        let site = if cx.in_loop_body {
            KwSite::Allowed
        } else {
            KwSite::NotInLoop
        };
        let mut annot = cx.annot;
        let slots = self.bind_args(
            "nl.store",
            &e.span,
            args,
            kwargs,
            params(OpKind::Store),
            site,
            &mut annot,
            None,
        );
        cx.annot = annot;
        let slots = slots?;
        let (dst_e, val_e) = (slots[0]?, slots[1]?);
        let (dst, val) = if val_e.span.start < dst_e.span.start {
            let v = self.arg(val_e, cx);
            (self.view(dst_e), v)
        } else {
            let d = self.view(dst_e);
            (d, self.arg(val_e, cx))
        };
        let (dst, _) = dst?;
        let dst = self.dma_view(dst);
        let dt = self.tensor(dst.tensor).clone();
        let mut ok = true;
        if dt.memory != Memory::Hbm {
            self.error(CheckError::StoreNotHbm {
                tensor: dt.name.clone(),
                memory: dt.memory,
                at: dst_e.span.clone(),
            });
            ok = false;
        } else if dt.kind == TensorKind::Const {
            self.error(
                crate::diagnostic::Error::new(
                    crate::codes::STORE_DST,
                    format!(
                        "`{}` is a constant (`nl.shared_constant`), which is read-only",
                        dt.name
                    ),
                    dst_e.span.clone(),
                )
                .with_label("a constant"),
            );
            ok = false;
        } else if dt.kind == TensorKind::Input {
            // out_params.rs: a parameter stored into is an output of the kernel.
            self.write_param(dst.tensor, &dst_e.span);
        }
        let (mut v, sv) = self.tile_of_arg(val?, &val_e.span)?;
        if self.tensor(v.tensor).memory == Memory::Psum {
            // A DMA reaches SBUF only (MACHINE.md): a PSUM value goes through SBUF first, the
            // copy NKI's compiler makes.
            let shape = v.size;
            v = self.emit(cx, Op::Copy, vec![v], Res::sbuf(shape), Dest::Temp, &e.span)?;
        }
        let vt = self.tensor(v.tensor).clone();
        if vt.memory != Memory::Sbuf {
            self.error(CheckError::StoreValueNotSbuf {
                tensor: vt.name.clone(),
                memory: vt.memory,
                at: sv.clone(),
            });
            ok = false;
        }
        if ok && v.size != dst.tile_shape() {
            self.error(CheckError::StoreShape {
                value: v.size,
                dest: dst.tile_shape(),
                value_at: sv,
                dest_at: dst_e.span.clone(),
                at: e.span.clone(),
            });
            ok = false;
        }
        if !ok || !self.written_pattern_ok(&dst, &dst_e.span) {
            return None;
        }
        // indirect.rs: a scatter, the index tile its second source.
        let (op, srcs) = match &dst.indirect {
            Some(idx) => (
                Op::Scatter { skip_oob: false },
                vec![v.operand(), idx.operand()],
            ),
            None => (Op::Store, vec![v.operand()]),
        };
        cx.insts.push(CInst {
            op,
            dst: dst.operand(),
            srcs,
            span: e.span.clone(),
            engine: None,
            mask: Vec::new(),
            guards: Vec::new(),
            implicit: false,
        });
        Some(())
    }
}

const RESERVED_MODULES: [&str; 2] = ["nl", "nisa"];

/// `nl.add` for messages.
fn func_name(func: &Expr) -> String {
    match &func.kind {
        ExprKind::Attribute { value, attr } => match &value.kind {
            ExprKind::Name(m) => format!("{m}.{}", attr.name),
            _ => attr.name.clone(),
        },
        ExprKind::Name(n) => n.clone(),
        _ => "call".into(),
    }
}

/// True when the call `e` is `nl.store(...)`.
pub(super) fn is_store(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, .. } if func_name(func) == "nl.store")
}

/// True when the call `e` is a matmul (`nl.matmul`, `nisa.nc_matmul`).
pub(super) fn is_matmul(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, .. } if matches!(func_name(func).as_str(), "nl.matmul" | "nisa.nc_matmul"))
}

/// The elementwise operation a Python operator means on tiles (`+ - * /`); `//` and `%` have none.
pub(super) fn tile_alu(op: BinOp) -> Option<AluOp> {
    match op {
        BinOp::Add => Some(AluOp::Add),
        BinOp::Sub => Some(AluOp::Subtract),
        BinOp::Mul => Some(AluOp::Multiply),
        BinOp::Div => Some(AluOp::Divide),
        BinOp::FloorDiv
        | BinOp::Mod
        | BinOp::BitAnd
        | BinOp::BitOr
        | BinOp::BitXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::Pow
        | BinOp::MatMul => None,
    }
}
