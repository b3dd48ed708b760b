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
//! This file is the dispatcher, the top of the operation layer: it resolves a call to its
//! [`OpKind`] (its own tables, then each family's: `elementwise_ops`, `scan_stats_ops`,
//! `top8_ops`, `random_ops`), binds its arguments and hands it to the code that builds its
//! instructions: `core_ops` (emission, elementwise, reductions, activations, masks),
//! `matmul_ops`, `memory_ops` (loads, allocations), a family file, or the store here. The
//! operation families import [`super::operands`], never this file.
//!
//! GpSimd is never chosen here (copies are `EngineClass::Any`), so its restriction (no PSUM reads)
//! is the backend's to respect.

use super::calls::{KwSite, Param};
use super::comptime::{func_name, literal_scalar, Class};
use super::elementwise_ops;
use super::error::CheckError;
use super::gather_ops;
use super::index_vec::MaskPiece;
use super::mask_guards::common_guards;
use super::mask_sums::mask_hull;
use super::not_in_nkc::not_in_nkc;
use super::operands::{Arg, Dest, OpKind, Res, StmtCtx};
use super::random_ops;
use super::range_select;
use super::scan_stats_ops;
use super::top8_ops;
use super::{CInst, Checker, TileVal, Value};
use crate::ast::{BinOp, Expr, ExprKind, Keyword, Span, UnaryOp};
use penguin::{ActFunc, AluOp, DType, Memory, Op, ReduceOp, Scale, TensorKind};
use vocab::machine::PMAX;

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
                .or_else(|| gather_ops::nl_ops(name))
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
                .or_else(|| range_select::nisa_ops(name))
                .or_else(|| random_ops::nisa_ops(name))
                .or_else(|| gather_ops::nisa_ops(name))
        }
    })
}

/// Attributes of `nl` that are not operations.
const NL_NON_OPS: [&str; 6] = ["float32", "bfloat16", "sbuf", "psum", "shared_hbm", "hbm"];

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
        OpKind::RangeSelect => range_select::params(kind),
        OpKind::Rand | OpKind::Dropout => random_ops::params(kind),
        OpKind::StreamShuffle
        | OpKind::LocalGather
        | OpKind::GatherFlattened
        | OpKind::SequenceBounds
        | OpKind::SharedIdentity => gather_ops::params(kind),
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

    pub(super) fn scalar_where_tile(&mut self, span: &Span) {
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
        if let Some(r) = self.reshape_computed(e, cx, &dest) {
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
                // An on-chip source (`nisa.dma_transpose(dst, src)` from SBUF to SBUF): the
                // same transpose, without the load.
                if self.names_tile(slots[0]?) && !self.names_hbm(slots[0]?) {
                    let (src, _) = self.view(slots[0]?)?;
                    let t = self.transpose_of(src, span, cx, Dest::Temp)?;
                    let shape = t.size;
                    return self.emit(cx, Op::Copy, vec![t], Res::sbuf(shape), dest, span);
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
            OpKind::RangeSelect => self.range_select(&slots, span, cx, dest),
            OpKind::Max8 | OpKind::FindIndex8 | OpKind::MatchReplace8 => {
                self.top8_op(kind, &slots, span, cx, dest)
            }
            OpKind::Rand | OpKind::Dropout => self.random_op(kind, &slots, span, cx, dest),
            OpKind::SharedConstant => self.shared_constant(&slots, span, dest),
            OpKind::StreamShuffle
            | OpKind::LocalGather
            | OpKind::GatherFlattened
            | OpKind::SequenceBounds
            | OpKind::SharedIdentity => self.gather_op(kind, &slots, span, cx, dest),
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
        let val = match val? {
            // `nl.store(dst, 100)`: NKI fills the destination with the scalar (a memset); the
            // value is a tile of the destination's shape filled on a compute engine first, as a
            // DMA moves tiles only.
            Arg::Scalar(value) if ok && dst.tile_shape()[0] <= PMAX => {
                let res = Res {
                    shape: dst.tile_shape(),
                    memory: Memory::Sbuf,
                    dtype: dt.dtype,
                };
                let t = self.emit(
                    cx,
                    Op::Memset { value },
                    vec![],
                    res,
                    Dest::Temp,
                    &val_e.span,
                )?;
                Arg::Tile(t, val_e.span.clone())
            }
            a => a,
        };
        let (mut v, sv) = self.tile_of_arg(val, &val_e.span)?;
        // vector_column.rs: a column `[n, 1]` stored into a vector `[n]`, NKI's layout of it.
        let dst = match self.vector_column(&dst, dst_e) {
            Some(col) if v.size == col.size => col,
            _ => dst,
        };
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
                Op::Scatter {
                    skip_oob: false,
                    accumulate: false,
                },
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
