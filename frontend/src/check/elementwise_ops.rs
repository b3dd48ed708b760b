//! The NKI operations beyond the core set, as table entries over the core instructions: the
//! unary functions of the Scalar engine (`nl.sin`, `nl.abs`, `nl.erf`, ..., every [`ActFunc`]),
//! the binary ones of the Vector engine (`nl.power`, the comparisons, the logical and bitwise
//! operations: every [`AluOp`] that is an `nl` function), the reductions `nl.prod` / `nl.all`,
//! and the composites that are several core instructions:
//! - `nl.where(c, x, y)`: `pass_if(x, c) + pass_unless(y, c)` on the Vector engine, exact (the
//!   branch not taken gives `-0.0`, and `v + -0.0` is `v` for every `v`);
//! - `nl.softmax(x, axis)`: `e = exp(x - max(x))`, then `e / sum(e)`;
//! - `nl.var(x, axis)`: `mean((x - mean(x))^2)` (numpy's population variance);
//! - `nl.zeros_like` / `nl.ones_like` / `nl.empty_like(a, dtype=, buffer=)` and `nl.ones`;
//!   `nisa.memset(shape, value, dtype)`;
//! - `nisa.tensor_partition_reduce(op, data)`: a reduction along the partition axis, as a
//!   transpose on the Tensor engine, a reduction along the free axis and a transpose back;
//! - `nisa.activation_reduce(op, data, reduce_op=, reduce_res=, bias=, scale=)`: an activation,
//!   then its reduction along the free axis written into `reduce_res`;
//! - `nisa.tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, reverse0)`:
//!   `nisa.tensor_scalar` with one operator, then its reduction along the free axis written
//!   into `reduce_res` (two Vector-engine instructions, each at its cost);
//! - `nisa.iota(expr, dtype)`: the Penguin `iota` instruction (GpSimd) of an index expression
//!   (`nl.arange` / `nl.mgrid` vectors, integers, `+ - *` by an integer) whose vectors start at
//!   constants; `nisa.affine_select(pred, on_true_tile, on_false_value)`: the iota of
//!   `lhs - rhs`, compared with 0, then `nl.where`'s exact selection. A loop-dependent start is
//!   a diagnostic (the iota's base is an immediate);
//! - `nl.store` of a PSUM tile goes through an SBUF copy (`ops.rs`), as NKI's compiler does;
//! - the `engine=` keyword of `nisa` operations: honoured where the machine's engine runs the
//!   instruction (`vector_engine` → `dve`, `scalar_engine` → `act`, `gpsimd_engine` → `pool`),
//!   a diagnostic where it does not.
//!
//! Every numeric definition is the shared vocabulary's (`vocab`), so the interpreter and the
//! simulator agree on it by construction.

use super::calls::Param;
use super::operands::{Arg, Dest, Fill, OpKind, Res, StmtCtx};
use super::{CInst, CTensor, Checker, TileVal};
use crate::ast::{Expr, Span};
use crate::codes;
use penguin::{ActFunc, AffineExpr, AluOp, DType, EngineClass, Memory, Op, ReduceOp, TensorKind};
use vocab::machine::PMAX;
use vocab::Diagnostic;

/// The `nl` operations of this file, by name.
pub(super) fn nl_extra(name: &str) -> Option<OpKind> {
    Some(match name {
        "invert" => OpKind::Act(ActFunc::LogicalNot),
        "prod" => OpKind::Reduce(ReduceOp::Prod),
        "all" => OpKind::Reduce(ReduceOp::All),
        "where" => OpKind::Where,
        "softmax" => OpKind::Softmax,
        "var" => OpKind::Var,
        "ones" => OpKind::Ones,
        "zeros_like" => OpKind::Like(Fill::Zeros),
        "ones_like" => OpKind::Like(Fill::Ones),
        "empty_like" => OpKind::Like(Fill::Empty),
        _ => match AluOp::ALL
            .into_iter()
            .find(|a| a.is_nl() && a.name() == name)
        {
            Some(a) => OpKind::Alu(a),
            None => {
                OpKind::Act(super::operands::act_func(name).filter(|f| *f != ActFunc::Identity)?)
            }
        },
    })
}

/// The `nisa` operations of this file, by name.
pub(super) fn nisa_extra(name: &str) -> Option<OpKind> {
    Some(match name {
        "memset" => OpKind::NisaMemset,
        "tensor_partition_reduce" => OpKind::PartitionReduce,
        "activation_reduce" => OpKind::ActivationReduce,
        "tensor_scalar_reduce" => OpKind::TensorScalarReduce,
        "iota" => OpKind::Iota,
        "affine_select" => OpKind::AffineSelect,
        _ => return None,
    })
}

/// The parameters of the operations of this file, in NKI's order.
pub(super) fn params(kind: OpKind) -> &'static [Param] {
    match kind {
        OpKind::Where => &[("condition", true), ("x", true), ("y", true)],
        OpKind::Softmax | OpKind::Var => &[("x", true), ("axis", true)],
        OpKind::Like(_) => &[("a", true), ("dtype", false), ("buffer", false)],
        OpKind::Ones => &[("shape", true), ("dtype", true), ("buffer", false)],
        OpKind::NisaMemset => &[
            ("shape", true),
            ("value", true),
            ("dtype", true),
            ("buffer", false),
        ],
        OpKind::PartitionReduce => &[("op", true), ("data", true)],
        OpKind::ActivationReduce => &[
            ("op", true),
            ("data", true),
            ("reduce_op", true),
            ("reduce_res", true),
            ("bias", false),
            ("scale", false),
        ],
        OpKind::TensorScalarReduce => &[
            ("data", true),
            ("op0", true),
            ("operand0", true),
            ("reduce_op", true),
            ("reduce_res", true),
            ("reverse0", false),
        ],
        OpKind::Iota => &[("expr", true), ("dtype", false)],
        OpKind::AffineSelect => &[
            ("pred", true),
            ("on_true_tile", true),
            ("on_false_value", true),
        ],
        _ => &[],
    }
}

/// An iota's values `base + p * pstep + f * fstep` over a `[P, F]` tile.
#[derive(Clone, Copy, Debug, PartialEq)]
struct IotaForm {
    base: i64,
    pstep: i64,
    fstep: i64,
    /// The lengths of the partition and free vectors (1 where there is none).
    shape: [u64; 2],
}

/// The engine an `engine=` keyword names: `None` for `nisa.unknown_engine` (the compiler
/// chooses), `Err` with the name when it is not an engine.
fn engine_named(e: &Expr) -> Result<Option<EngineClass>, String> {
    match e.attr_of(&["nisa", "nl"]) {
        Some("vector_engine") => Ok(Some(EngineClass::Vector)),
        Some("scalar_engine") | Some("activation_engine") => Ok(Some(EngineClass::Scalar)),
        Some("gpsimd_engine") | Some("pool_engine") => Ok(Some(EngineClass::GpSimd)),
        Some("tensor_engine") | Some("pe_engine") => Ok(Some(EngineClass::Tensor)),
        Some("unknown_engine") => Ok(None),
        Some(other) => Err(other.to_string()),
        None => Err(String::new()),
    }
}

/// The engines of the machine that run `op` (MACHINE.md "Engines"), for `engine=`.
fn engines_running(op: &Op) -> &'static [EngineClass] {
    use EngineClass::*;
    match op {
        Op::Load | Op::Store | Op::Gather { .. } | Op::Scatter { .. } => &[Dma],
        Op::Matmul { .. } | Op::Transpose => &[Tensor],
        Op::Activation { .. } => &[Scalar],
        Op::Copy => &[Vector, Scalar, GpSimd],
        Op::TensorTensor { .. }
        | Op::TensorScalar { .. }
        | Op::Reduce { .. }
        | Op::Memset { .. }
        | Op::Iota { .. } => &[Vector, GpSimd],
        Op::TensorTensorScan { .. } | Op::BnStats | Op::BnAggr | Op::VectorTranspose => &[Vector],
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => &[Vector],
        Op::Rand { .. } | Op::Dropout { .. } | Op::Shuffle { .. } => &[Vector],
        Op::LocalGather { .. } | Op::SequenceBounds => &[GpSimd],
    }
}

/// An engine as NKI's API names it.
fn nki_engine(e: EngineClass) -> &'static str {
    match e {
        EngineClass::Vector => "nisa.vector_engine",
        EngineClass::Scalar => "nisa.scalar_engine",
        EngineClass::GpSimd => "nisa.gpsimd_engine",
        EngineClass::Tensor => "nisa.tensor_engine",
        EngineClass::Dma => "a DMA queue",
        EngineClass::Any => "nisa.unknown_engine",
    }
}

impl Checker<'_> {
    /// Applies the operations of this file once their arguments are bound.
    pub(super) fn extra_op(
        &mut self,
        kind: OpKind,
        name: &str,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        match kind {
            OpKind::Where => self.select(slots, span, cx, dest),
            OpKind::Softmax => self.softmax(slots[0]?, slots[1]?, name, span, cx, dest),
            OpKind::Var => self.variance(slots[0]?, slots[1]?, name, span, cx, dest),
            OpKind::Like(fill) => self.like(fill, name, slots, span, cx, dest),
            OpKind::PartitionReduce => self.partition_reduce(slots, span, cx, dest),
            OpKind::ActivationReduce => self.activation_reduce(slots, span, cx, dest),
            OpKind::TensorScalarReduce => self.tensor_scalar_reduce(slots, span, cx, dest),
            OpKind::Iota => self.iota(slots, span, cx, dest),
            OpKind::AffineSelect => self.affine_select(slots, span, cx, dest),
            _ => None,
        }
    }

    /// `nl.where(condition, x, y)`: `x` where the condition is true (not zero), `y` elsewhere;
    /// `x` and `y` tiles or scalars.
    fn select(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let c = self.compute_tile(slots[0]?, cx, "`nl.where`");
        let x = self.arg(slots[1]?, cx);
        let y = self.arg(slots[2]?, cx);
        let (c, x, y) = (c?, x?, y?);
        let cond = || Arg::Tile(c.clone(), slots[0].map_or(span.clone(), |e| e.span.clone()));
        let a = self.elementwise(AluOp::PassIf, x, cond(), span, cx, Dest::Temp)?;
        let b = self.elementwise(AluOp::PassUnless, y, cond(), span, cx, Dest::Temp)?;
        self.elementwise(
            AluOp::Add,
            Arg::Tile(a, span.clone()),
            Arg::Tile(b, span.clone()),
            span,
            cx,
            dest,
        )
    }

    /// A reduction of the tile `x` along its free axis into a `[P, 1]` temporary.
    fn row_reduce(
        &mut self,
        op: ReduceOp,
        x: &TileVal,
        span: &Span,
        cx: &mut StmtCtx,
    ) -> Option<TileVal> {
        let shape = [x.size[0], 1];
        let op = Op::Reduce { op };
        self.emit(cx, op, vec![x.clone()], Res::sbuf(shape), Dest::Temp, span)
    }

    /// `a op b` of two tiles into `dest`.
    fn tiles(
        &mut self,
        op: AluOp,
        a: TileVal,
        b: TileVal,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let (a, b) = (Arg::Tile(a, span.clone()), Arg::Tile(b, span.clone()));
        self.elementwise(op, a, b, span, cx, dest)
    }

    /// `nl.softmax(x, axis)` along the free axis: `e = exp(x - max(x))`, then `e / sum(e)`.
    fn softmax(
        &mut self,
        x_e: &Expr,
        axis_e: &Expr,
        name: &str,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.compute_tile(x_e, cx, &format!("`{name}`"));
        self.reduce_axis(axis_e)?;
        let x = x?;
        let m = self.row_reduce(ReduceOp::Max, &x, span, cx)?;
        let d = self.tiles(AluOp::Subtract, x, m, span, cx, Dest::Temp)?;
        let op = Op::Activation {
            func: ActFunc::Exp,
            scale: penguin::Scale::Imm(1.0),
            bias: false,
        };
        let shape = d.size;
        let e = self.emit(cx, op, vec![d], Res::sbuf(shape), Dest::Temp, span)?;
        let s = self.row_reduce(ReduceOp::Sum, &e, span, cx)?;
        self.tiles(AluOp::Divide, e, s, span, cx, dest)
    }

    /// `nl.var(x, axis)` along the free axis: `d = x - sum(x) / n`, then `sum(d * d) / n`.
    fn variance(
        &mut self,
        x_e: &Expr,
        axis_e: &Expr,
        name: &str,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let x = self.compute_tile(x_e, cx, &format!("`{name}`"));
        self.reduce_axis(axis_e)?;
        let x = x?;
        let n = x.size[1] as f32;
        let s = self.row_reduce(ReduceOp::Sum, &x, span, cx)?;
        let mean = self.elementwise(
            AluOp::Divide,
            Arg::Tile(s, span.clone()),
            Arg::Scalar(n),
            span,
            cx,
            Dest::Temp,
        )?;
        let d = self.tiles(AluOp::Subtract, x, mean, span, cx, Dest::Temp)?;
        let sq = self.tiles(AluOp::Multiply, d.clone(), d, span, cx, Dest::Temp)?;
        let ss = self.row_reduce(ReduceOp::Sum, &sq, span, cx)?;
        self.elementwise(
            AluOp::Divide,
            Arg::Tile(ss, span.clone()),
            Arg::Scalar(n),
            span,
            cx,
            dest,
        )
    }

    /// `nl.zeros_like(a, dtype=, buffer=)`, `nl.ones_like`, `nl.empty_like`: a new tile (or HBM
    /// array) of `a`'s shape and, by default, its dtype, in SBUF unless `buffer=` says otherwise.
    fn like(
        &mut self,
        fill: Fill,
        name: &str,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let (a, _) = self.view(slots[0]?)?;
        let dtype = match slots[1] {
            Some(d) => self.dtype_of(d)?,
            None => self.tensor(a.tensor).dtype,
        };
        let memory = match slots[2] {
            Some(b) => self.buffer_of(b)?,
            None => Memory::Sbuf,
        };
        let shape = a.size;
        let Dest::New {
            name: bound,
            span: bspan,
        } = dest
        else {
            self.error(
                Diagnostic::new(
                    codes::UNSUPPORTED,
                    format!("the result of `{name}` must be bound to a name"),
                    span.clone(),
                )
                .with_label("a buffer without a name")
                .with_help(format!("write `t = {name}(...)` as a statement of its own")),
            );
            return None;
        };
        let dtype = if memory == Memory::Psum {
            DType::F32
        } else {
            dtype
        };
        if memory != Memory::Hbm && shape[0] > PMAX {
            self.error(
                Diagnostic::new(
                    codes::UNSUPPORTED,
                    format!(
                        "`{name}` of a tile of {} partitions; an on-chip tile has at most {PMAX}",
                        shape[0]
                    ),
                    span.clone(),
                )
                .with_help("give `buffer=nl.shared_hbm` for an HBM array of that shape"),
            );
            return None;
        }
        if fill == Fill::Empty || memory == Memory::Hbm {
            if fill != Fill::Empty {
                self.error(
                    Diagnostic::new(
                        codes::UNSUPPORTED,
                        format!("`{name}` in HBM: only `nl.empty_like` makes an HBM array"),
                        span.clone(),
                    )
                    .with_help("fill a tile on chip and `nl.store` it"),
                );
                return None;
            }
            let t = self.new_tensor(CTensor {
                name: bound,
                memory,
                dtype,
                shape,
                kind: TensorKind::Local,
                span: bspan,
            });
            return Some(TileVal::whole(t, shape));
        }
        let value = if fill == Fill::Ones { 1.0 } else { 0.0 };
        let res = Res {
            shape,
            memory,
            dtype,
        };
        let dest = Dest::New {
            name: bound,
            span: bspan,
        };
        self.emit(cx, Op::Memset { value }, vec![], res, dest, span)
    }

    /// `nisa.tensor_partition_reduce(op, data)`: `data[P, F]` reduced along the partition axis
    /// into `[1, F]`: transposed on the Tensor engine, reduced along the free axis, transposed
    /// back and copied to SBUF (both dimensions at most 128).
    fn partition_reduce(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let op = self.reduce_op(slots[0]?);
        let x = self.compute_tile(slots[1]?, cx, "`nisa.tensor_partition_reduce`");
        let (op, x) = (op?, x?);
        let x = if self.tensor(x.tensor).memory == Memory::Sbuf {
            x
        } else {
            let shape = x.size;
            self.emit(cx, Op::Copy, vec![x], Res::sbuf(shape), Dest::Temp, span)?
        };
        let cols = x.size[1];
        if cols <= PMAX {
            let t = self.transpose_of(x, span, cx, Dest::Temp)?;
            let r = self.row_reduce(op, &t, span, cx)?;
            let back = self.transpose_of(r, span, cx, Dest::Temp)?;
            let shape = back.size;
            return self.emit(cx, Op::Copy, vec![back], Res::sbuf(shape), dest, span);
        }
        // More columns than the PE array transposes at once: each block of at most 128 columns
        // is reduced on its own into its columns of a `[1, F]` result.
        let sum = self.sbuf_tile("_partition_reduce".to_string(), [1, cols], span.clone());
        let mut c0 = 0;
        while c0 < cols {
            let w = (cols - c0).min(PMAX);
            let mut block = x.clone();
            let Some(start) =
                super::arith::lin(&x.start[1], 1, &AffineExpr::constant(c0 as i64), 1)
            else {
                self.error(super::error::CheckError::SliceOverflow { at: span.clone() });
                return None;
            };
            block.start[1] = start;
            block.size[1] = w;
            let t = self.transpose_of(block, span, cx, Dest::Temp)?;
            let r = self.row_reduce(op, &t, span, cx)?;
            let back = self.transpose_of(r, span, cx, Dest::Temp)?;
            let mut target = sum.clone();
            target.start[1] = AffineExpr::constant(c0 as i64);
            target.size[1] = w;
            let into = Dest::Into {
                target,
                accumulate: false,
            };
            self.emit(cx, Op::Copy, vec![back], Res::sbuf([1, w]), into, span)?;
            c0 += w;
        }
        self.emit(cx, Op::Copy, vec![sum], Res::sbuf([1, cols]), dest, span)
    }

    /// `nisa.activation_reduce(op, data, reduce_op, reduce_res, bias, scale)`: the activation,
    /// returned, and its reduction along the free axis written into the `[P, 1]` `reduce_res`.
    fn activation_reduce(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let rop = self.reduce_op(slots[2]?);
        let (target, _) = self.view(slots[3]?)?;
        let rop = rop?;
        let act_slots = [slots[0], slots[1], slots[4], slots[5]];
        let t = self.activation(&act_slots, span, cx, dest)?;
        let into = Dest::Into {
            target,
            accumulate: false,
        };
        let shape = [t.size[0], 1];
        self.emit(
            cx,
            Op::Reduce { op: rop },
            vec![t.clone()],
            Res::sbuf(shape),
            into,
            span,
        )?;
        Some(t)
    }

    /// `nisa.tensor_scalar_reduce`: `nisa.tensor_scalar(data, op0, operand0, reverse0)`, then
    /// the reduction of its result along the free axis into `reduce_res`.
    fn tensor_scalar_reduce(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let rop = self.reduce_op(slots[3]?);
        let (target, _) = self.view(slots[4]?)?;
        let rop = rop?;
        let ts_slots = [slots[0], slots[1], slots[2], slots[5], None, None, None];
        let t = self.tensor_scalar(&ts_slots, span, cx, dest)?;
        let into = Dest::Into {
            target,
            accumulate: false,
        };
        let shape = [t.size[0], 1];
        self.emit(
            cx,
            Op::Reduce { op: rop },
            vec![t.clone()],
            Res::sbuf(shape),
            into,
            span,
        )?;
        Some(t)
    }

    /// The engine an `engine=` keyword asks of the instruction `inst`, or a diagnostic: the
    /// machine's engine must run the instruction, and `pool` never touches PSUM.
    pub(super) fn engine_choice(
        &mut self,
        e: &Expr,
        op_name: &str,
        inst: &CInst,
    ) -> Option<Option<EngineClass>> {
        let engine = match engine_named(e) {
            Ok(engine) => engine,
            Err(other) => {
                let what = if other.is_empty() {
                    "this".to_string()
                } else {
                    format!("`{other}`")
                };
                self.error(
                    Diagnostic::new(
                        codes::ENGINE_NOT_HERE,
                        format!("{what} is not an engine"),
                        e.span.clone(),
                    )
                    .with_label("expected an engine")
                    .with_note(
                        "the engines are nisa.vector_engine, nisa.scalar_engine, \
                         nisa.gpsimd_engine, nisa.tensor_engine and nisa.unknown_engine",
                    ),
                );
                return None;
            }
        };
        let Some(want) = engine else {
            return Some(None);
        };
        let runs = engines_running(&inst.op);
        if !runs.contains(&want) {
            let names: Vec<&str> = runs.iter().map(|&r| nki_engine(r)).collect();
            self.error(
                Diagnostic::new(
                    codes::ENGINE_NOT_HERE,
                    format!(
                        "`{op_name}` runs as the instruction `{}`, which {} does not run on this machine",
                        inst.op.name(),
                        nki_engine(want)
                    ),
                    e.span.clone(),
                )
                .with_label(format!("the `{}` engine has no `{}`", want.name(), inst.op.name()))
                .with_note(format!(
                    "the machine runs `{}` on {}",
                    inst.op.name(),
                    names.join(" or ")
                ))
                .with_help(format!(
                    "write `engine={}`, or leave `engine=` out and let nkc choose",
                    names[0]
                )),
            );
            return None;
        }
        let psum = std::iter::once(&inst.dst)
            .chain(&inst.srcs)
            .find(|o| self.tensor(o.tensor).memory == Memory::Psum);
        if let (EngineClass::GpSimd, Some(o)) = (want, psum) {
            let tensor = self.tensor(o.tensor).name.clone();
            self.error(
                Diagnostic::new(
                    codes::ENGINE_NOT_HERE,
                    format!("the GpSimd engine cannot access PSUM, but `{tensor}` is in PSUM"),
                    e.span.clone(),
                )
                .with_label("`pool` asked for here")
                .with_help("write `engine=nisa.vector_engine` or `nisa.scalar_engine`"),
            );
            return None;
        }
        Some(Some(want))
    }
}

impl Checker<'_> {
    /// Sets the engine of the last instruction a call emitted (those from `before` on) to the
    /// one its `engine=` keyword `e` names, when the machine allows it.
    pub(super) fn apply_engine(
        &mut self,
        e: &Expr,
        op_name: &str,
        before: usize,
        cx: &mut StmtCtx,
    ) -> Option<()> {
        // The call's own instruction: the last one it emitted that nkc did not insert.
        let Some(k) = (before..cx.insts.len())
            .rev()
            .find(|&k| !cx.insts[k].implicit)
        else {
            // An operation without an instruction (`nl.ndarray`, `nl.empty_like`).
            return Some(());
        };
        let inst = cx.insts[k].clone();
        let choice = self.engine_choice(e, op_name, &inst)?;
        cx.insts[k].engine = choice;
        Some(())
    }
}

impl Checker<'_> {
    /// An index expression of `nisa.iota` / `nisa.affine_select`: integers, index vectors
    /// (`nl.arange(n)[:, None]`, `nl.mgrid` names) and `+`, `-`, `*` by an integer. The vectors'
    /// starts must be compile-time constants.
    fn iota_form(&mut self, e: &Expr) -> Option<IotaForm> {
        use crate::ast::{BinOp, ExprKind, UnaryOp};
        let scalar = |v: i64| IotaForm {
            base: v,
            pstep: 0,
            fstep: 0,
            shape: [1, 1],
        };
        let combine = |this: &mut Self, a: IotaForm, b: IotaForm, sign: i64| -> Option<IotaForm> {
            let mut shape = [1, 1];
            for (k, out) in shape.iter_mut().enumerate() {
                *out = match (a.shape[k], b.shape[k]) {
                    (1, n) | (n, 1) => n,
                    (m, n) if m == n => m,
                    (m, n) => {
                        this.error(
                            Diagnostic::new(
                                codes::UNSUPPORTED,
                                format!("index vectors of {m} and {n} elements on one axis"),
                                e.span.clone(),
                            )
                            .with_label("the vectors of one axis must have one length"),
                        );
                        return None;
                    }
                };
            }
            Some(IotaForm {
                base: a.base.checked_add(sign.checked_mul(b.base)?)?,
                pstep: a.pstep.checked_add(sign.checked_mul(b.pstep)?)?,
                fstep: a.fstep.checked_add(sign.checked_mul(b.fstep)?)?,
                shape,
            })
        };
        match &e.kind {
            ExprKind::Binary { op, lhs, rhs } if matches!(op, BinOp::Add | BinOp::Sub) => {
                let a = self.iota_form(lhs)?;
                let b = self.iota_form(rhs)?;
                combine(self, a, b, if *op == BinOp::Add { 1 } else { -1 })
            }
            ExprKind::Binary {
                op: BinOp::Mul,
                lhs,
                rhs,
            } => {
                let (v, k) = if self.is_vector_expr(lhs) {
                    (lhs, rhs)
                } else {
                    (rhs, lhs)
                };
                let f = self.iota_form(v)?;
                let k = self.const_int(k)?;
                Some(IotaForm {
                    base: f.base.checked_mul(k)?,
                    pstep: f.pstep.checked_mul(k)?,
                    fstep: f.fstep.checked_mul(k)?,
                    shape: f.shape,
                })
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let f = self.iota_form(operand)?;
                combine(self, scalar(0), f, -1)
            }
            _ if self.is_vector_expr(e) => {
                let v = self.index_vec(e)?;
                if !v.extra.is_empty() {
                    // A name bound to a sum of vectors: reported as in a subscript.
                    let _ = self.single_vector(e);
                    return None;
                }
                let Some(start) = v.start.as_constant() else {
                    // The base of an iota is an immediate: a loop whose index it depends on is
                    // unrolled (`exec`), each copy's base a compile-time integer.
                    if self.unroll_for_division(&v.start, &AffineExpr::constant(0)) {
                        return None;
                    }
                    self.error(
                        Diagnostic::new(
                            codes::UNSUPPORTED,
                            "an iota or affine_select index that depends on a loop variable",
                            e.span.clone(),
                        )
                        .with_label("its start changes with the loop")
                        .with_note("nkc's iota takes compile-time constants: its base is an immediate")
                        .with_help("compute the loop-dependent part as a tile and select with nl.where(cond, x, y)"),
                    );
                    return None;
                };
                if v.ndim > 2 {
                    self.error(
                        Diagnostic::new(
                            codes::UNSUPPORTED,
                            format!("an iota or affine_select index of a {}-axis grid", v.ndim),
                            e.span.clone(),
                        )
                        .with_label("an iota is a 2-D tile: partitions and one free axis")
                        .with_help("place the vectors with `[:, None]` and `[None, :]`"),
                    );
                    return None;
                }
                let axis = v.axis.unwrap_or(1);
                let mut f = scalar(start);
                f.shape[axis] = v.len;
                if axis == 0 {
                    f.pstep = v.step;
                } else {
                    f.fstep = v.step;
                }
                Some(f)
            }
            _ => self.const_int(e).map(scalar),
        }
    }

    /// Emits the iota of `form` into `dest`.
    fn emit_iota(
        &mut self,
        form: IotaForm,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        // Exact in float32 only while every value is an integer below 2^24.
        let [p, f] = form.shape;
        let corners = [0, form.pstep * (p as i64 - 1)]
            .into_iter()
            .flat_map(|a| [a, a + form.fstep * (f as i64 - 1)]);
        if corners
            .map(|c| form.base + c)
            .any(|v| v.unsigned_abs() > 1 << 24)
        {
            self.error(
                Diagnostic::new(
                    codes::UNSUPPORTED,
                    "iota values beyond 2^24 are not exact in float32",
                    span.clone(),
                )
                .with_help("keep the index values below 16777216"),
            );
            return None;
        }
        let op = Op::Iota {
            base: form.base as f32,
            pstep: form.pstep as f32,
            fstep: form.fstep as f32,
        };
        self.emit(cx, op, vec![], Res::sbuf(form.shape), dest, span)
    }

    /// `nisa.iota(expr, dtype)`: the tile of the values of an index expression (float32; an
    /// integer dtype holds the same integers).
    fn iota(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let form = self.iota_form(slots[0]?)?;
        if let Some(d) = slots[1] {
            let int = d
                .attr_of(&["nl", "np", "numpy"])
                .is_some_and(|n| n.starts_with("int") || n.starts_with("uint"));
            if !int {
                self.dtype_of(d)?;
            }
        }
        self.emit_iota(form, span, cx, dest)
    }

    /// `nisa.affine_select(pred, on_true_tile, on_false_value)`: `on_true_tile` where the
    /// affine predicate of the indices holds, `on_false_value` elsewhere; an iota of
    /// `lhs - rhs`, compared with 0, then [`Checker::select`]'s exact selection.
    fn affine_select(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        use crate::ast::{CmpOp, ExprKind};
        let pred = slots[0]?;
        // deferred_preds: a name bound to a comparison of index expressions.
        let named = match &pred.kind {
            ExprKind::Name(n) => self.deferred_pred(n),
            _ => None,
        };
        let pred = named.as_ref().unwrap_or(pred);
        let ExprKind::Compare { op, lhs, rhs } = &pred.kind else {
            self.error(
                Diagnostic::new(
                    codes::UNSUPPORTED,
                    "the predicate of affine_select must be a comparison of index expressions",
                    pred.span.clone(),
                )
                .with_help("write it as `i_p >= i_f` or `(i_p - i_f) >= 0` with nl.arange / nl.mgrid indices"),
            );
            return None;
        };
        let a = self.iota_form(lhs);
        let b = self.iota_form(rhs);
        let (a, b) = (a?, b?);
        let diff = IotaForm {
            base: a.base.checked_sub(b.base)?,
            pstep: a.pstep.checked_sub(b.pstep)?,
            fstep: a.fstep.checked_sub(b.fstep)?,
            shape: [a.shape[0].max(b.shape[0]), a.shape[1].max(b.shape[1])],
        };
        let alu = match op {
            CmpOp::Eq | CmpOp::Is => AluOp::Equal,
            CmpOp::Ne | CmpOp::IsNot => AluOp::NotEqual,
            CmpOp::Lt => AluOp::Less,
            CmpOp::Gt => AluOp::Greater,
            CmpOp::Le => AluOp::LessEqual,
            CmpOp::Ge => AluOp::GreaterEqual,
            CmpOp::In | CmpOp::NotIn => {
                self.error(Diagnostic::new(
                    codes::UNSUPPORTED,
                    "the predicate of affine_select compares index expressions with ==, !=, <, >, <= or >=, not `in`",
                    pred.span.clone(),
                ));
                return None;
            }
        };
        let on_true = self.compute_tile(slots[1]?, cx, "`nisa.affine_select`");
        let on_false = self.arg(slots[2]?, cx);
        let (on_true, on_false) = (on_true?, on_false?);
        if on_true.size != diff.shape {
            self.error(
                Diagnostic::new(
                    codes::UNSUPPORTED,
                    format!(
                        "the predicate covers a {} tile, but on_true_tile is {}",
                        super::show_shape(diff.shape),
                        super::show_shape(on_true.size)
                    ),
                    span.clone(),
                )
                .with_help("index the predicate with vectors of the tile's shape"),
            );
            return None;
        }
        let idx = self.emit_iota(diff, span, cx, Dest::Temp)?;
        let cond = self.elementwise(
            alu,
            Arg::Tile(idx, span.clone()),
            Arg::Scalar(0.0),
            span,
            cx,
            Dest::Temp,
        )?;
        let sp = span.clone();
        let a = self.elementwise(
            AluOp::PassIf,
            Arg::Tile(on_true, sp.clone()),
            Arg::Tile(cond.clone(), sp.clone()),
            span,
            cx,
            Dest::Temp,
        )?;
        let b = self.elementwise(
            AluOp::PassUnless,
            on_false,
            Arg::Tile(cond, sp.clone()),
            span,
            cx,
            Dest::Temp,
        )?;
        self.tiles(AluOp::Add, a, b, span, cx, dest)
    }
}
