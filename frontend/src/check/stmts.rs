//! Statements: bindings, in-place updates, loops, `return`, and the kernel signature.
//!
//! Binding rules (each break is one diagnostic, and the name is then bound to an error value so
//! later uses stay silent):
//! - `nl`, `nisa` and `range` cannot be bound; parameters and loop variables cannot be assigned;
//! - a name keeps its kind: a name bound to an integer cannot be rebound to a tile, nor the reverse;
//!   rebinding a tile name to another tile makes a new value;
//! - a loop variable cannot reuse a name already bound;
//! - names bound in a loop body are local to it, and a name bound outside a loop cannot be rebound
//!   inside it (Python would carry the new value to the next iteration; nkc does not, so the
//!   program is rejected rather than silently given another meaning). In-place updates (`+=`,
//!   slice assignment) of tiles are the way to carry state. A compile-time int is the exception,
//!   as in NKI's trace of the body: rebinding it in the body binds a name of the body, which
//!   shadows the outer one from that statement on (reads before it see the outer value in every
//!   iteration); after the loop the name has the body's value when it is the same in every
//!   iteration, and is unbound when it varies.
//!
//! Structure: parameters are `nl.hbm[DTYPE, ROWS, COLS]`; a kernel ends with one `return` of names
//! bound to `nl.ndarray(..., buffer=nl.shared_hbm)` arrays; loops iterate `nl.affine_range`,
//! `nl.sequential_range` or `range`, with one argument (`n`) or two (`start, stop`), and at least
//! one iteration.
//!
//! This file checks one statement of the core language (bindings, unpacking, in-place updates);
//! the kernel's signature and `return` are `signature`'s, hardware loops `hw_loops`'s, and the
//! Python statements around them `exec`'s. They form the statements layer (`mod.rs`), the top.

use super::comptime::{
    builtin_class, builtin_name, is_dtype_ctor, is_tile_size, literal_scalar, Class,
};
use super::error::CheckError;
use super::operands::{Arg, Dest, Res, StmtCtx};
use super::ops::{is_matmul, is_store};
use super::{reserved, CStmt, CStmtKind, Checker, TileVal, Value, RESERVED};
use crate::ast::{self, BinOp, Expr, ExprKind, Span, Stmt, StmtKind, Target};
use crate::diagnostic::Error;
use penguin::{Memory, Op};

/// How a block of statements ended.
#[derive(Clone, Debug)]
pub(crate) enum Flow {
    /// It ran to its end.
    Next,
    Break,
    Continue,
    /// `return value` (the statement's span).
    Return(Value, Span),
    /// A Python error stopped the evaluation.
    Stop,
}

impl Checker<'_> {
    pub(super) fn classify(&self, e: &Expr) -> Class {
        match &e.kind {
            ExprKind::Int(_) => Class::Int,
            ExprKind::Float(_) => Class::Float,
            ExprKind::Name(n) => match self.find(n).map(|b| &b.value) {
                Some(Value::Int(_) | Value::Iv(_)) => Class::Int,
                Some(Value::Float(_)) => Class::Float,
                Some(Value::Bool(_) | Value::None) => Class::Bool,
                Some(Value::Vec(_) | Value::Mask(_) | Value::Py(_)) => Class::Other,
                Some(Value::Tile(_) | Value::Param(_)) => Class::Tile,
                Some(Value::Error) => Class::Poison,
                // Evaluated as an integer, which reports the undefined name.
                None => Class::Int,
            },
            // A dtype constructor of a tile (`nl.float32(t)`) is no number: a tile call, which
            // reports it as no operation.
            ExprKind::Call { func, args, .. }
                if is_dtype_ctor(func) && args.iter().any(|a| self.classify(a) == Class::Tile) =>
            {
                Class::Tile
            }
            ExprKind::Call { func, .. } => builtin_name(func).map_or(Class::Tile, builtin_class),
            ExprKind::Attribute { .. } if is_tile_size(e).is_some() => Class::Int,
            ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Compare { .. }
            | ExprKind::BoolOp { .. }
            | ExprKind::Not(_) => Class::Bool,
            ExprKind::Subscript { value, .. } => match &value.kind {
                ExprKind::Attribute { attr, .. } if attr.name == "shape" => Class::Int,
                _ => Class::Tile,
            },
            ExprKind::Binary { lhs, rhs, .. } => {
                let (a, b) = (self.classify(lhs), self.classify(rhs));
                if a == Class::Tile || b == Class::Tile {
                    Class::Tile
                } else if a == Class::Poison || b == Class::Poison {
                    Class::Poison
                } else if a == Class::Other || b == Class::Other {
                    Class::Other
                } else if a == Class::Bool && b == Class::Bool {
                    Class::Bool
                } else if a == Class::Float
                    || b == Class::Float
                    || matches!(e.kind, ExprKind::Binary { op: BinOp::Div, .. })
                {
                    // `/` is true division, of integers too.
                    Class::Float
                } else {
                    Class::Int
                }
            }
            ExprKind::Unary { operand, .. } => self.classify(operand),
            ExprKind::Error => Class::Poison,
            ExprKind::Tuple(_)
            | ExprKind::Str(_)
            | ExprKind::Ellipsis
            | ExprKind::Attribute { .. }
            | ExprKind::List(_)
            | ExprKind::Dict(_)
            | ExprKind::Starred(_)
            | ExprKind::FStr(_)
            | ExprKind::IfExp { .. }
            | ExprKind::ListComp { .. }
            | ExprKind::Lambda { .. } => Class::Other,
        }
    }

    /// One statement of a block; `in_loop` when the block is a loop body.
    pub(super) fn stmt(&mut self, s: &ast::Stmt, out: &mut Vec<CStmt>, in_loop: bool) {
        let mut cx = StmtCtx {
            in_loop_body: in_loop,
            ..StmtCtx::default()
        };
        // unroll_axes: a statement whose patterns need fewer axes, once per index of those.
        let plan = self.unroll_plan(s);
        if plan.is_empty() {
            self.stmt_kind(s, &mut cx);
        } else {
            for fixed in Self::unroll_copies(&plan) {
                let n = self.errors.len();
                self.unroll.fixed = fixed;
                self.stmt_kind(s, &mut cx);
                if self.errors.len() > n {
                    break;
                }
            }
            self.unroll.fixed.clear();
        }
        self.stmt_effects(cx, &s.span, out);
    }

    /// What statement `s` does, traced into `cx`.
    fn stmt_kind(&mut self, s: &ast::Stmt, cx: &mut StmtCtx) {
        match &s.kind {
            StmtKind::Assign {
                target: Target::Name(id),
                value,
            } => self.assign(id, value, cx),
            StmtKind::Assign {
                target:
                    Target::Subscript {
                        base,
                        indices,
                        span,
                    },
                value,
            } => {
                if let Some(target) = self.target_slice(base, indices, span) {
                    if let Some(v) = literal_scalar(value) {
                        let res = Res::sbuf(target.size);
                        let dest = Dest::Into {
                            target,
                            accumulate: false,
                        };
                        self.emit(
                            cx,
                            Op::Memset { value: v as f32 },
                            vec![],
                            res,
                            dest,
                            &s.span,
                        );
                    } else {
                        let dest = Dest::Into {
                            target,
                            accumulate: false,
                        };
                        self.tile_expr(value, cx, dest, true);
                    }
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                self.aug_assign(target, *op, value, &s.span, cx)
            }
            StmtKind::Expr(e) => {
                if is_store(e) {
                    self.store(e, cx);
                } else if self.dst_call(e, cx) {
                    // `op(dst=t, ...)`: checked as `t[...] = op(...)` (or a load or store).
                } else if matches!(e.kind, ExprKind::Call { .. }) {
                    if self.tile_expr(e, cx, Dest::Temp, true).is_some() {
                        self.error(CheckError::UnusedResult { at: e.span.clone() });
                    }
                } else if !matches!(e.kind, ExprKind::Error) {
                    self.error(CheckError::NoEffect { at: e.span.clone() });
                }
            }
            // Python's statements are run by `exec`; only residual statements arrive here.
            StmtKind::For { .. }
            | StmtKind::While { .. }
            | StmtKind::Def(_)
            | StmtKind::Import(_)
            | StmtKind::Break
            | StmtKind::Opaque(_)
            | StmtKind::Class(_)
            | StmtKind::Raise(_)
            | StmtKind::Declare(_)
            | StmtKind::Continue
            | StmtKind::MultiAssign { .. }
            | StmtKind::Return(_)
            | StmtKind::Assign {
                target: Target::Seq { .. } | Target::Starred(_) | Target::Attribute { .. },
                ..
            } => {}
            StmtKind::Assign {
                target: Target::Tuple { names, span },
                value,
            } => self.unpack(names, value, span, cx),
            StmtKind::Assert { .. } | StmtKind::If { .. } => {}
            StmtKind::Recovered { binds } => {
                for id in binds {
                    if self.find(&id.name).is_none() {
                        self.bind(&id.name, Value::Error, id.span.clone());
                    }
                }
            }
            StmtKind::Pass | StmtKind::Error => {}
        }
    }

    /// Records what the instructions of a traced statement write, and appends them to `out`.
    fn stmt_effects(&mut self, cx: StmtCtx, span: &Span, out: &mut Vec<CStmt>) {
        for inst in &cx.insts {
            (self.tile_nd.accessed).extend(inst.srcs.iter().map(|s| s.tensor));
            self.tile_nd.accessed.insert(inst.dst.tensor);
            let t = inst.dst.tensor;
            // Each block of a PSUM array of several banks is an accumulation group of its own.
            let ct = self.tensor(t);
            let block = (ct.memory == penguin::Memory::Psum
                && ct.shape[1] * ct.dtype.size_bytes() > vocab::machine::PSUM_BANK_BYTES
                && matches!(inst.op, penguin::Op::Matmul { .. }))
            .then(|| inst.dst.access.clone());
            let first = match &block {
                None => self.written.insert((t, None)),
                Some(_) => {
                    !self.written.contains(&(t, None)) & self.written.insert((t, block.clone()))
                }
            };
            let queued = (self.zero_first.iter())
                .any(|(z, d)| *z == t && block.as_ref().is_none_or(|b| *b == d.access));
            if first
                && matches!(inst.op, penguin::Op::Matmul { accumulate: true })
                && self.tensor(t).memory == penguin::Memory::Psum
                && !queued
            {
                self.zero_first.push((t, inst.dst.clone()));
            }
        }
        if !cx.insts.is_empty() {
            out.push(CStmt {
                kind: CStmtKind::Insts(cx.insts),
                annot: cx.annot,
                span: span.clone(),
            });
        }
    }

    /// Checks that `name` may be (re)bound to a value of class `class`; reports and returns false
    /// otherwise.
    pub(super) fn may_bind(&mut self, id: &ast::Ident, class: Class) -> bool {
        if RESERVED.contains(&id.name.as_str()) {
            self.error(reserved(id));
            return false;
        }
        let Some(prev) = self.find(&id.name).cloned() else {
            return true;
        };
        if prev.leaked || id.name == "_" {
            // A name an earlier loop's body left bound (`loop_scope`), or `_`: rebinding it is
            // Python's rebinding of a name, checked as a new one.
            return true;
        }
        let e = match (&prev.value, class) {
            // A helper's parameters are its locals, which it may rebind.
            (Value::Param(_), _) if self.frames > 0 => return true,
            // Outside loops a kernel rebinds a parameter's name as Python does (`x =
            // x.reshape(...)`, `imm = nl.load(imm)`); the parameter itself is unchanged.
            (Value::Param(_), _) if !self.bound_outside_loop(&id.name) => return true,
            (Value::Param(_), _) => CheckError::AssignToParam {
                name: id.name.clone(),
                prev: prev.span,
                at: id.span.clone(),
            }
            .into(),
            (Value::Iv(_), _) => CheckError::AssignToLoopVar {
                name: id.name.clone(),
                prev: prev.span,
                at: id.span.clone(),
            }
            .into(),
            (Value::Int(_), Class::Tile) => CheckError::IntRebound {
                name: id.name.clone(),
                prev: prev.span,
                at: id.span.clone(),
            }
            .into(),
            (Value::Tile(_), Class::Int) => CheckError::TileRebound {
                name: id.name.clone(),
                prev: prev.span,
                at: id.span.clone(),
            }
            .into(),
            // An index computed in the body (`idx = (x - i) * w + y` after `idx = 0`): NKI
            // traces the body once, so every iteration reads the outer value before this
            // statement and its own after it, as a name of the body does; after the loop the
            // name is not bound when its value varies (`hw_loops`).
            (Value::Int(_), Class::Int) if self.bound_outside_loop(&id.name) => return true,
            (Value::Int(_) | Value::Tile(_), _) if self.bound_outside_loop(&id.name) => {
                self.rebind_in_loop(id, prev.span)
            }
            _ => return true,
        };
        self.error(e);
        false
    }

    /// True when the statement being checked is in a loop body and `name` is bound outside it.
    pub(super) fn bound_outside_loop(&self, name: &str) -> bool {
        let inner = self.scopes.len() - 1;
        self.enclosing.len() > self.loop_base && !self.scopes[inner].contains_key(name)
    }

    /// Records, once per name, that a Python int bound outside a device loop is rebound in its
    /// body: as in NKI, the body is traced once, so the statement runs once, not once per
    /// iteration (an address counter advanced in the loop, `cur_addr += size`).
    pub(super) fn trace_once_note(&mut self, name: &str) {
        let note = format!(
            "`{name} = ...` or `{name} op= ...` inside a `nl.affine_range`/`sequential_range` \
             loop: as in NKI, the loop body is traced once, so the update runs once, not once per \
             iteration (use the loop index for a per-iteration value)"
        );
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// The error for rebinding, in a loop body, a name bound outside the loop.
    fn rebind_in_loop(&self, id: &ast::Ident, prev: Span) -> Error {
        CheckError::RebindInLoop {
            name: id.name.clone(),
            prev,
            at: id.span.clone(),
        }
        .into()
    }

    /// `name = value`.
    fn assign(&mut self, id: &ast::Ident, value: &Expr, cx: &mut StmtCtx) {
        if self.is_mask_expr(value) {
            // `valid = (i * 128 + i_p < n) & (i_f < d)`: a mask, passed later as `mask=valid`.
            if self.may_bind(id, Class::Other) {
                // deferred_preds: a comparison of two index expressions (a triangle) is read
                // where the name is used, as `affine_select`'s predicate or as a mask.
                if self.defer_vector_compare(id, value) {
                    self.bind(&id.name, Value::Error, id.span.clone());
                    return;
                }
                let m = self.mask(value).map_or(Value::Error, Value::Mask);
                self.bind(&id.name, m, id.span.clone());
            }
            return;
        }
        if self.is_vector_expr(value) {
            // `i_p = nl.arange(128)[:, None]`: an index vector, used in subscripts and masks.
            if self.may_bind(id, Class::Other) {
                let v = self.offset_vector(value).map_or(Value::Error, Value::Vec);
                self.bind(&id.name, v, id.span.clone());
            }
            return;
        }
        let class = self.classify(value);
        let allowed = self.may_bind(id, class);
        let bound = match class {
            Class::Int => self.affine(value).map(Value::Int),
            Class::Tile => {
                let dest = if allowed {
                    Dest::New {
                        name: id.name.clone(),
                        span: id.span.clone(),
                    }
                } else {
                    Dest::Temp
                };
                self.tile_expr(value, cx, dest, true).map(Value::Tile)
            }
            Class::Float | Class::Bool => self.const_value(value).map(|c| c.value()),
            Class::Other => {
                self.error(CheckError::NotIntOrTile {
                    at: value.span.clone(),
                });
                None
            }
            Class::Poison => None,
        };
        // A rejected rebinding keeps the old binding, so later uses are checked against it and
        // do not cascade.
        if let (true, Some(Value::Tile(tile))) = (allowed, &bound) {
            self.note_user_name(tile, &id.name);
        }
        if allowed {
            self.bind(&id.name, bound.unwrap_or(Value::Error), id.span.clone());
        }
    }

    /// `a, b = value`: `value` is a tuple of as many items (bound left to right, after all are
    /// evaluated when they are compile-time scalars), or `x.shape`.
    fn unpack(&mut self, names: &[ast::Ident], value: &Expr, span: &Span, cx: &mut StmtCtx) {
        let mismatch = |this: &mut Self, n: usize| {
            this.error(CheckError::UnpackCount {
                names: names.len(),
                values: n,
                at: span.clone(),
            });
            for id in names {
                if this.may_bind(id, Class::Poison) {
                    this.bind(&id.name, Value::Error, id.span.clone());
                }
            }
        };
        match &value.kind {
            ExprKind::Tuple(items) => {
                if items.len() != names.len() {
                    return mismatch(self, items.len());
                }
                let scalar = items
                    .iter()
                    .all(|i| matches!(self.classify(i), Class::Int | Class::Float | Class::Bool));
                if scalar {
                    let vals: Vec<(Class, Option<Value>)> = items
                        .iter()
                        .map(|i| match self.classify(i) {
                            Class::Int => (Class::Int, self.affine(i).map(Value::Int)),
                            c => (c, self.const_value(i).map(|c| c.value())),
                        })
                        .collect();
                    for (id, (class, v)) in names.iter().zip(vals) {
                        if self.may_bind(id, class) {
                            self.bind(&id.name, v.unwrap_or(Value::Error), id.span.clone());
                        }
                    }
                } else {
                    for (id, item) in names.iter().zip(items) {
                        self.assign(id, item, cx);
                    }
                }
            }
            _ if Checker::is_mgrid(value) => {
                let Some(vecs) = self.mgrid(value) else {
                    for id in names {
                        self.bind(&id.name, Value::Error, id.span.clone());
                    }
                    return;
                };
                if vecs.len() != names.len() {
                    return mismatch(self, vecs.len());
                }
                for (id, v) in names.iter().zip(vecs) {
                    if self.may_bind(id, Class::Other) {
                        self.bind(&id.name, Value::Vec(v), id.span.clone());
                    }
                }
            }
            ExprKind::Attribute { value: base, attr } if attr.name == "shape" => {
                let Some(shape) = self.shape_value(base) else {
                    for id in names {
                        self.bind(&id.name, Value::Error, id.span.clone());
                    }
                    return;
                };
                if shape.len() != names.len() {
                    return mismatch(self, shape.len());
                }
                for (id, d) in names.iter().zip(shape) {
                    if self.may_bind(id, Class::Int) {
                        let v = Value::Int(penguin::AffineExpr::constant(d as i64));
                        self.bind(&id.name, v, id.span.clone());
                    }
                }
            }
            ExprKind::Error => {}
            _ => {
                self.error(CheckError::UnpackNotTuple {
                    at: value.span.clone(),
                });
                for id in names {
                    self.bind(&id.name, Value::Error, id.span.clone());
                }
            }
        }
    }

    /// The shape of the tensor named by `base` (for `x.shape`).
    pub(super) fn shape_value(&mut self, base: &Expr) -> Option<Vec<u64>> {
        let ExprKind::Name(n) = &base.kind else {
            if !matches!(base.kind, ExprKind::Error) {
                self.error(CheckError::ShapeOfNonName {
                    at: base.span.clone(),
                });
            }
            return None;
        };
        // tile_nd: a name bound to `x.reshape(shape)` has the new shape.
        if let Some(dims) = self.reshaped_dims(n) {
            return Some(dims);
        }
        match self.lookup(n, &base.span) {
            // tile_nd: a computed tile keeps the NKI shape of its operand (`keep_shape`).
            Value::Tile(t) => Some(
                (self.logical_dims(&t).cloned())
                    .or_else(|| self.value_dims(&t))
                    .unwrap_or(t.size.to_vec()),
            ),
            Value::Param(t) => {
                let whole = TileVal::whole(t, self.tensor(t).shape);
                Some(
                    self.logical_dims(&whole)
                        .cloned()
                        .unwrap_or(whole.size.to_vec()),
                )
            }
            Value::Error => None,
            v => {
                let what = if matches!(v, Value::Int(_) | Value::Iv(_)) {
                    "an integer"
                } else {
                    "a scalar"
                };
                self.error(CheckError::ShapeOfScalar {
                    name: n.to_string(),
                    what,
                    at: base.span.clone(),
                });
                None
            }
        }
    }

    /// The tile written by `base[indices] = ...` or `base[indices] += ...`.
    fn target_slice(
        &mut self,
        base: &ast::Ident,
        indices: &[ast::Index],
        span: &Span,
    ) -> Option<TileVal> {
        let t = match self.lookup(&base.name, &base.span) {
            Value::Tile(t) => t,
            Value::Param(t) => TileVal::whole(t, self.tensor(t).shape),
            Value::Error => return None,
            Value::Int(_)
            | Value::Iv(_)
            | Value::Float(_)
            | Value::Bool(_)
            | Value::Vec(_)
            | Value::Mask(_)
            | Value::None
            | Value::Py(_) => {
                self.error(CheckError::SubscriptOfScalar {
                    name: base.name.clone(),
                    at: base.span.clone(),
                });
                return None;
            }
        };
        self.subscript(&t, &base.name, indices, span)
    }

    /// `target op= value`.
    fn aug_assign(
        &mut self,
        target: &Target,
        op: BinOp,
        value: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
    ) {
        let tile = match target {
            Target::Name(id) => match self.find(&id.name).map(|b| b.value.clone()) {
                Some(Value::Int(a)) => {
                    // An integer update: `n += 1` rebinds `n`. In a device loop's body, bound
                    // outside it, a compile-time update runs once, as NKI traces the body once
                    // (`bind` rebinds the outer name; an address counter, `addr += size`); one
                    // that depends on a loop index would differ per iteration: refused.
                    let b = self.affine(value);
                    if self.bound_outside_loop(&id.name) {
                        let constant = |e: &Option<penguin::AffineExpr>| {
                            e.as_ref().is_some_and(|e| e.as_constant().is_some())
                        };
                        if a.as_constant().is_none() || !constant(&b) {
                            let prev = self
                                .find(&id.name)
                                .map_or(id.span.clone(), |b| b.span.clone());
                            let e = self.rebind_in_loop(id, prev);
                            self.error(e);
                            return;
                        }
                        self.trace_once_note(&id.name);
                    }
                    let Some(b) = b else {
                        self.bind(&id.name, Value::Error, id.span.clone());
                        return;
                    };
                    let r = self.int_binary(op, &a, &b, span, &value.span);
                    self.bind(
                        &id.name,
                        r.map_or(Value::Error, Value::Int),
                        id.span.clone(),
                    );
                    return;
                }
                Some(Value::Tile(t)) => t,
                Some(Value::Error) => return,
                Some(
                    Value::Float(_)
                    | Value::Bool(_)
                    | Value::Vec(_)
                    | Value::Mask(_)
                    | Value::None
                    | Value::Py(_),
                ) => {
                    self.error(CheckError::UpdateScalar {
                        name: id.name.clone(),
                        at: id.span.clone(),
                    });
                    return;
                }
                Some(Value::Param(_) | Value::Iv(_)) => {
                    self.may_bind(id, Class::Tile);
                    return;
                }
                None => {
                    self.lookup(&id.name, &id.span);
                    return;
                }
            },
            Target::Subscript {
                base,
                indices,
                span,
            } => match self.target_slice(base, indices, span) {
                Some(t) => t,
                None => return,
            },
            Target::Tuple { span, .. } | Target::Seq { span, .. } => {
                self.error(CheckError::UpdateTuple {
                    op: op.symbol(),
                    at: span.clone(),
                });
                return;
            }
            Target::Starred(id) => {
                self.error(CheckError::UpdateTuple {
                    op: op.symbol(),
                    at: id.span.clone(),
                });
                return;
            }
            // An attribute is a Python object's, updated by `exec`.
            Target::Attribute { .. } => return,
        };
        let tt = self.tensor(tile.tensor).clone();
        let tspan = target.span();
        match tt.memory {
            Memory::Hbm => {
                self.error(CheckError::UpdateHbm {
                    tensor: tt.name.clone(),
                    at: tspan,
                });
            }
            Memory::Psum if op == BinOp::Add && is_matmul(value) => {
                let dest = Dest::Into {
                    target: tile,
                    accumulate: true,
                };
                self.tile_expr(value, cx, dest, true);
            }
            // Any other update is an elementwise read-modify-write, on SBUF as on PSUM (`act`
            // and `dve` read and write PSUM; MACHINE.md).
            Memory::Sbuf | Memory::Psum => {
                let Some(alu) = super::ops::tile_alu(op) else {
                    self.error(CheckError::UpdateNotOnTiles {
                        op: op.symbol(),
                        at: span.clone(),
                    });
                    return;
                };
                let Some(v) = self.arg_at(value, cx, true) else {
                    return;
                };
                let dest = Dest::Into {
                    target: tile.clone(),
                    accumulate: false,
                };
                self.elementwise(alu, Arg::Tile(tile, tspan), v, span, cx, dest);
            }
        }
    }
}

/// Whether the statement that returned (`at`, the `return`'s span) is the last of `body`, or
/// inside the last (an `if`, an inner loop, which checked their own).
pub(super) fn ends_body(body: &[Stmt], at: &Span) -> bool {
    body.last()
        .is_some_and(|last| last.span.start <= at.start && at.end <= last.span.end)
}
