//! The instructions of the core operations, which `ops` and every operation family build with:
//! [`Checker::emit`] (one instruction into its destination, with the memory rules of PSUM and the
//! Tensor engine), elementwise operations with their broadcasts, reductions (along the free axis,
//! or along the axes of an access pattern), transposes, activations, and `mask=` applied to the
//! instructions a call made.
//!
//! Invariant: an instruction is pushed into the statement's [`StmtCtx`] only with operands that
//! satisfy its `Op`'s rules (`LANGUAGE.md`); anything else is a diagnostic and `None`.

use super::error::CheckError;
use super::index_vec::{mask_and, MaskPiece, MaskPieces};
use super::operands::{act_func, Arg, Dest, Res, StmtCtx};
use super::{CInst, CTensor, Checker, TileVal};
use crate::ast::{Expr, ExprKind, Keyword, Span, UnaryOp};
use penguin::{AluOp, DType, Memory, Op, ReduceOp, Scale, TensorKind};
use vocab::machine::PMAX;

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

/// An integer literal, negated or not (`1`, `-1`).
fn int_literal(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => match &operand.kind {
            ExprKind::Int(v) => Some(-*v),
            _ => None,
        },
        _ => None,
    }
}

/// The axis of a plain one-axis reduction (`axis=1`, `axis=-1`): `None` for any other `axis=`.
fn plain_axis(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::List(items) | ExprKind::Tuple(items) if items.len() == 1 => plain_axis(&items[0]),
        _ => int_literal(e),
    }
}

/// The axes of `axis=` when they are not the free axis alone: a literal list or tuple of
/// several nonzero integers, or one other than `0`, `1` and `-1` (`patterns`).
fn pattern_axes(e: &Expr) -> Option<Vec<i64>> {
    let axes: Vec<i64> = match &e.kind {
        ExprKind::List(items) | ExprKind::Tuple(items) => items
            .iter()
            .map(int_literal)
            .collect::<Option<Vec<i64>>>()?,
        _ => vec![int_literal(e)?],
    };
    // One free axis of a 2-D tile is the plain reduction; several axes (`axis=[1, 3]`) or
    // axes past the first free one name axes of an access-pattern value.
    let plain = axes.len() == 1 && matches!(axes[0], -1..=1);
    (!plain && axes.iter().all(|&a| a != 0)).then_some(axes)
}

impl Checker<'_> {
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
        self.emitted += 1;
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
                // An elementwise result keeps the NKI shape of the operand of its shape
                // (patterns_nd), as `unary` does.
                let dims = [&a, &b]
                    .into_iter()
                    .filter(|t| t.size == shape)
                    .find_map(|t| self.value_dims(t));
                let r = self.emit(
                    cx,
                    Op::TensorTensor { op: alu },
                    vec![a, b],
                    Res::sbuf(shape),
                    dest,
                    span,
                )?;
                self.keep_shape(&r, dims);
                Some(r)
            }
            (Arg::Tile(a, sa), Arg::Scalar(v)) | (Arg::Scalar(v), Arg::Tile(a, sa)) => {
                if !self.compute_src(&a, &sa, &format!("`{}`", alu.name())) {
                    return None;
                }
                let shape = a.size;
                let dims = self.value_dims(&a);
                let op = Op::TensorScalar {
                    op: alu,
                    imm: v,
                    reverse,
                };
                let r = self.emit(cx, op, vec![a], Res::sbuf(shape), dest, span)?;
                self.keep_shape(&r, dims);
                Some(r)
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
        // One axis of a value of more than 2 axes (a reshaped or N-D tile, patterns_nd) names
        // that axis alone, as in NKI: `axis=1` of `[P, 2, 7]` gives `[P, 7]`, not `[P, 1]`.
        let axes = axes.or_else(|| {
            let nd = self.shaped_as_pattern(x.clone());
            let rank = nd.pattern.as_ref().map_or(2, |p| p.axes.len());
            let axis = plain_axis(axis_e)?;
            (x.pattern.is_none() && rank > 2).then_some(vec![axis])
        });
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
                // row_masks.rs: the mask narrows the row the operation reads.
                match super::row_masks::narrow_row_mask(inst, &mask) {
                    Ok(rest) => {
                        inst.mask.extend(rest);
                        continue;
                    }
                    Err(why) => why,
                }
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

    /// A one-operand operation (`nl.exp`, ..., `nl.copy`) of the tile `x_e` into a new SBUF
    /// tile; `what` names the operation in a diagnostic.
    pub(super) fn unary(
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
}
