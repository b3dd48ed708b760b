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
//!   slice assignment) of tiles are the way to carry state.
//!
//! Structure: parameters are `nl.hbm[DTYPE, ROWS, COLS]`; a kernel ends with one `return` of names
//! bound to `nl.ndarray(..., buffer=nl.shared_hbm)` arrays; loops iterate `nl.affine_range`,
//! `nl.sequential_range` or `range`, with one argument (`n`) or two (`start, stop`), and at least
//! one iteration.

use super::arith::MAX_EXTENT;
use super::calls::KwSite;
use super::comptime::{builtin_class, builtin_name, is_tile_size, literal_scalar, Class};
use super::error::CheckError;
use super::loop_scope::compute_loop_exit;
use super::operands::{Arg, Dest, Res, StmtCtx};
use super::ops::{is_matmul, is_store};
use super::{
    reserved, Bound, CInst, CLoop, CStmt, CStmtKind, CTensor, CheckedKernel, Checker, TileVal,
    Value, RESERVED,
};
use crate::ast::{self, BinOp, Expr, ExprKind, Span, Stmt, StmtKind, Target};
use crate::diagnostic::Error;
use penguin::{Axis, AxisAttrs, LoopKind, Memory, Op, StmtAnnot, TensorKind};
use std::collections::HashMap;

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

    /// Checks one kernel: binds its parameters, then runs its body.
    pub(super) fn kernel(&mut self, k: &ast::Kernel) -> CheckedKernel {
        let mut params = Vec::new();
        let mut seen: HashMap<&str, Span> = HashMap::new();
        self.kernel_frame = true;
        for p in &k.params {
            if p.name.name.starts_with('*') {
                continue;
            }
            if RESERVED.contains(&p.name.name.as_str()) {
                self.error(reserved(&p.name));
                continue;
            }
            if let Some(first) = seen.get(p.name.name.as_str()) {
                self.error(CheckError::DuplicateParam {
                    name: p.name.name.clone(),
                    first: first.clone(),
                    at: p.name.span.clone(),
                });
                continue;
            }
            seen.insert(&p.name.name, p.name.span.clone());
            if let Some(v) = self.args.and_then(|a| a.get(&p.name.name)) {
                // A scalar argument of the run (`--arg eps=1e-5`).
                let v = self.scalar_arg_value(v, &p.name.span);
                self.bind(&p.name.name, v, p.name.span.clone());
                continue;
            }
            if let Some(default) = &p.default {
                // A compile-time parameter: its default is its value.
                let value = self.scalar_param(p, default);
                self.bind(&p.name.name, value, p.name.span.clone());
                continue;
            }
            if let Some(hint) = p.ty.as_ref().and_then(scalar_hint) {
                self.error(
                    Error::new(
                        crate::codes::MISSING_SCALAR_ARG,
                        format!(
                            "the {hint} parameter `{}` has no default and no value",
                            p.name.name
                        ),
                        p.span.clone(),
                    )
                    .with_label("needs a value")
                    .with_help(format!("give it one: `--arg {}=VALUE`", p.name.name)),
                );
                self.bind(&p.name.name, Value::Error, p.name.span.clone());
                continue;
            }
            let value = match self.param_type(p) {
                Some((dtype, shape, dims)) => {
                    let t = self.new_tensor(CTensor {
                        name: p.name.name.clone(),
                        memory: Memory::Hbm,
                        dtype,
                        shape,
                        kind: TensorKind::Input,
                        span: p.name.span.clone(),
                    });
                    if dims.len() != 2 {
                        self.logical.insert(t, dims);
                    }
                    params.push(t);
                    Value::Param(t)
                }
                None => Value::Error,
            };
            self.bind(&p.name.name, value, p.name.span.clone());
        }
        self.unspecialised_note(k);

        // grid.rs: the run's launch grid, as loops around the body.
        let grid = self.specs.and_then(|s| s.grid.clone());
        self.open_grid(grid.as_deref(), &k.name.span);
        let mut body = Vec::new();
        let flow = self.exec_block(&k.body, &mut body, false);
        let body = self.close_grid(body, &k.name.span);
        self.check_guarded_reads(&body);
        let mut outputs = Vec::new();
        let broken = k
            .body
            .iter()
            .any(|s| matches!(s.kind, StmtKind::Error | StmtKind::Recovered { .. }));
        match flow {
            Flow::Return(v, span) => outputs = self.returns(v, &span),
            Flow::Stop => {}
            _ if self.stopped || broken || !self.missing.is_empty() || self.has_out_params() => {}
            _ => self.error(CheckError::NoReturn {
                kernel: k.name.name.clone(),
                at: k.name.span.clone(),
            }),
        }
        for &t in &outputs {
            self.tensors[t.as_u32() as usize].kind = TensorKind::Output;
        }
        // out_params.rs: the parameters stored into follow the returned arrays.
        self.finish_out_params(&body, &mut params, &mut outputs);
        // psum_banks.rs: no access to a PSUM array of several banks crosses a bank.
        self.check_psum_banks(&body);
        CheckedKernel {
            name: k.name.name.clone(),
            span: k.span.clone(),
            tensors: std::mem::take(&mut self.tensors),
            loops: std::mem::take(&mut self.loops),
            params,
            outputs,
            body,
            user_names: std::mem::take(&mut self.user_names),
            consts: std::mem::take(&mut self.consts),
            notes: std::mem::take(&mut self.notes),
            restored: std::mem::take(&mut self.tile_nd.restored),
            arrays: std::mem::take(&mut self.tile_nd.arrays),
        }
    }

    /// One diagnostic for all the parameters that need a shape from the run, instead of one each.
    fn unspecialised_note(&mut self, k: &ast::Kernel) {
        if self.missing.is_empty() {
            return;
        }
        let names: Vec<String> = self.missing.iter().map(|(n, _)| format!("`{n}`")).collect();
        let first = self.missing[0].1.clone();
        let example = self.missing[0].0.clone();
        let message = if names.len() == 1 {
            format!(
                "parameter {} has no type, and no shape was given for it",
                names[0]
            )
        } else {
            format!(
                "kernel `{}`: parameters {} have no type, and no shape was given for them",
                k.name.name,
                names.join(", ")
            )
        };
        let mut d = Error::new(crate::codes::UNSPECIALISED_PARAM, message, first)
            .with_label("a shape-generic input");
        for (_, span) in self.missing.iter().skip(1) {
            d.secondary.push((span.clone(), "shape-generic too".into()));
        }
        d.notes.push(
            "note: a kernel is specialised for the shapes of its inputs when it is run; the checks that do not depend on these shapes were run".to_string(),
        );
        d.notes.push(format!(
            "help: give each one `--input {example}=FILE.npy` or `--shape {example}=ROWSxCOLS` (with `--dtype`), `--arg {example}=VALUE` for a scalar, or write `{example}: nl.hbm[nl.float32, ROWS, COLS]`"
        ));
        self.error(d);
    }

    /// `name=default`: any compile-time Python value.
    fn scalar_param(&mut self, p: &ast::Param, default: &Expr) -> Value {
        if self.traced(default) {
            self.error(CheckError::DefaultNotConst {
                param: p.name.name.clone(),
                at: default.span.clone(),
            });
            return Value::Error;
        }
        match self.eval(default) {
            Some(
                Value::Iv(_) | Value::Tile(_) | Value::Param(_) | Value::Vec(_) | Value::Mask(_),
            ) => {
                self.error(CheckError::DefaultNotConst {
                    param: p.name.name.clone(),
                    at: default.span.clone(),
                });
                Value::Error
            }
            Some(v) => v,
            None => Value::Error,
        }
    }

    /// The shape a run gives an untyped parameter.
    fn param_spec(&mut self, p: &ast::Param) -> Option<(penguin::DType, [u64; 2], Vec<u64>)> {
        let name = &p.name.name;
        let Some(spec) = self.specs.and_then(|s| s.get(name)) else {
            self.missing.push((name.to_string(), p.span.clone()));
            return None;
        };
        let (dtype, shape) = (spec.dtype, spec.shape.clone());
        match super::nd::flatten(&shape) {
            Some(flat) => Some((dtype, flat, shape)),
            None => {
                self.error(CheckError::BadSpecShape {
                    name: name.to_string(),
                    shape: shape.clone(),
                    at: p.span.clone(),
                });
                None
            }
        }
    }

    /// `nl.hbm[DTYPE, ROWS, COLS]`, or the shape of the run's input for an untyped parameter.
    fn param_type(&mut self, p: &ast::Param) -> Option<(penguin::DType, [u64; 2], Vec<u64>)> {
        let Some(ty) = p.ty.as_ref().filter(|t| !is_hint(t)) else {
            return self.param_spec(p);
        };
        if let ExprKind::Subscript { value, indices } = &ty.kind {
            let is_hbm = matches!(&value.kind, ExprKind::Attribute { value: m, attr }
                if matches!(&m.kind, ExprKind::Name(n) if n == "nl") && attr.name == "hbm");
            if let (true, [ast::Index::Expr(d), ast::Index::Expr(r), ast::Index::Expr(c)]) =
                (is_hbm, indices.as_slice())
            {
                let dtype = self.dtype_of(d);
                let rows = self.dim(r);
                let cols = self.dim(c);
                let shape = [rows?, cols?];
                return Some((dtype?, shape, shape.to_vec()));
            }
        }
        if !matches!(ty.kind, ExprKind::Error) {
            self.error(CheckError::BadParamType {
                param: p.name.name.clone(),
                at: ty.span.clone(),
            });
        }
        None
    }

    /// The outputs a kernel's `return` gives: HBM arrays made by the kernel, whole.
    fn returns(&mut self, v: Value, span: &Span) -> Vec<penguin::Tensor> {
        let flat: Vec<Value> = match (&v, v.seq_items()) {
            (Value::Py(p), Some(items)) if matches!(**p, super::pyvalue::Py::Tuple(_)) => items,
            _ => vec![v.clone()],
        };
        if flat.is_empty() || matches!(v, Value::None) {
            self.error(CheckError::EmptyReturn { at: span.clone() });
            return Vec::new();
        }
        let mut outputs: Vec<(penguin::Tensor, Span)> = Vec::new();
        let items = std::mem::take(&mut self.return_items);
        let mut names = if items.len() == flat.len() {
            items.into_iter()
        } else {
            Vec::new().into_iter()
        };
        for item in flat {
            let (at, name) = names
                .next()
                .unwrap_or((span.clone(), "the value".to_string()));
            let span = &at;
            let bad = |this: &mut Self, what: &str| {
                this.error(CheckError::ReturnNotOutput {
                    name: name.clone(),
                    what: what.to_string(),
                    at: span.clone(),
                });
            };
            match item {
                Value::Tile(t) => {
                    let td = self.tensor(t.tensor).clone();
                    if td.kind == TensorKind::Input {
                        bad(self, "a parameter");
                    } else if td.kind == TensorKind::Const {
                        bad(self, "a constant (`nl.shared_constant`)");
                    } else if td.memory != Memory::Hbm {
                        bad(
                            self,
                            &format!("a tile in {}", td.memory.name().to_uppercase()),
                        );
                    } else if t != TileVal::whole(t.tensor, td.shape) {
                        bad(self, "a slice of an array");
                    } else if let Some((_, first)) = outputs.iter().find(|(x, _)| *x == t.tensor) {
                        let first = first.clone();
                        self.error(CheckError::DuplicateReturn {
                            name: name.clone(),
                            first,
                            at: span.clone(),
                        });
                    } else {
                        outputs.push((t.tensor, span.clone()));
                    }
                }
                Value::Param(_) => bad(self, "a parameter"),
                Value::Int(_) | Value::Iv(_) => bad(self, "an integer"),
                Value::Error => {}
                other => bad(self, &format!("a `{}`", other.type_name())),
            }
        }
        outputs.into_iter().map(|(t, _)| t).collect()
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
    fn trace_once_note(&mut self, name: &str) {
        let note = format!(
            "`{name} op= ...` inside a `nl.affine_range`/`sequential_range` loop: as in NKI, the \
             loop body is traced once, so the update runs once, not once per iteration (use the \
             loop index for a per-iteration value)"
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
            Value::Tile(t) => Some(self.logical_dims(&t).cloned().unwrap_or(t.size.to_vec())),
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

    /// `for var in iter: body` as a Penguin IR loop, `iter` a range call of the core language;
    /// the body is run (traced) once, with `var` bound to the loop's symbolic index.
    pub(super) fn for_loop(
        &mut self,
        var: &ast::Ident,
        iter: &Expr,
        body: &[ast::Stmt],
        s: &ast::Stmt,
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> Flow {
        let header = s.span.start..iter.span.end.max(s.span.start);
        let mut attrs = AxisAttrs::default();
        let mut annot = StmtAnnot::default();
        let mut bounds = None;
        let mut kind = LoopKind::Affine;
        match &iter.kind {
            ExprKind::Call { func, args, kwargs } => {
                let name = match &func.kind {
                    ExprKind::Attribute { value, attr } if matches!(&value.kind, ExprKind::Name(m) if m == "nl") => {
                        match attr.name.as_str() {
                            "affine_range" => Some((LoopKind::Affine, "nl.affine_range")),
                            "sequential_range" => {
                                Some((LoopKind::Sequential, "nl.sequential_range"))
                            }
                            _ => None,
                        }
                    }
                    ExprKind::Name(n) if n == "range" => Some((LoopKind::Range, "range")),
                    _ => None,
                };
                match name {
                    Some((k, fname)) => {
                        kind = k;
                        let site = if in_loop {
                            KwSite::Allowed
                        } else {
                            KwSite::NotInLoop
                        };
                        let slots = self.bind_args(
                            fname,
                            &iter.span,
                            args,
                            kwargs,
                            &[("start", true), ("stop", false)],
                            site,
                            &mut annot,
                            Some(&mut attrs),
                        );
                        if let Some(slots) = slots {
                            bounds = self.trip(&slots, &iter.span);
                        }
                    }
                    None => self.bad_iter(iter),
                }
            }
            ExprKind::Error => {}
            _ => self.bad_iter(iter),
        }
        let (lb, ub) = bounds.unwrap_or((0, 1));

        let tensors_before = self.tensors.len();
        let axis = Axis::from_u32(self.loops.len() as u32);
        self.loops.push(CLoop {
            iv: var.name.clone(),
            kind,
            lb,
            ub,
            attrs,
            span: header,
        });

        if RESERVED.contains(&var.name.as_str()) {
            self.error(reserved(var));
        } else if let Some(prev) = self.find(&var.name).cloned() {
            self.error(CheckError::LoopVarShadows {
                name: var.name.clone(),
                prev: prev.span,
                at: var.span.clone(),
            });
        }
        self.scopes.push(HashMap::new());
        self.bind(&var.name, Value::Iv(axis), var.span.clone());
        self.enclosing.push(axis);
        let mut inner = Vec::new();
        let flow = self.exec_block(body, &mut inner, true);
        if let Flow::Break | Flow::Continue = flow {
            self.raise(
                crate::codes::PYTHON_UNSUPPORTED,
                "`break` and `continue` in a hardware loop (`nl.affine_range`, `nl.sequential_range`, `range`) are not supported".into(),
                &s.span,
            );
        }
        let returned = match flow {
            Flow::Return(v, at) => self.loop_return(v, at, kind, axis, body),
            _ => None,
        };
        self.enclosing.pop();
        let scope = self.scopes.pop().unwrap_or_default();
        // loop_scope.rs: a name the body bound stays bound after the loop to its traced value
        // when that value is the same in every iteration.
        let mut names: Vec<_> = scope.into_iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, b) in names {
            let enclosing = &self.enclosing;
            let live = |a: Axis| enclosing.contains(&a);
            let exit = compute_loop_exit(&b.value, axis, &var.name, &live, tensors_before);
            // `_`, Python's throwaway name, is any loop's to bind, like a name an earlier loop
            // left.
            let outside = self.find(&name).map(|o| o.leaked || name == "_");
            let frame = self.frame_scope.min(self.scopes.len());
            let holder = (frame..self.scopes.len())
                .rev()
                .find(|&k| self.scopes[k].contains_key(&name));
            match exit {
                // Python's rebinding: the scope that has the name (or the enclosing one) gets
                // the body's value.
                None => {
                    let at = holder.unwrap_or(self.scopes.len() - 1);
                    self.out_of_scope.remove(&name);
                    self.scopes[at].insert(name, Bound { leaked: true, ..b });
                }
                // A name bound before the loop keeps that binding (nkc's rule before names
                // left loops).
                Some(_) if outside == Some(false) => {}
                // A name an earlier loop's body left bound, bound again here to a value of one
                // iteration: not bound after this loop.
                Some(why) => {
                    if let (Some(true), Some(k)) = (outside, holder) {
                        self.scopes[k].remove(&name);
                    }
                    self.out_of_scope.insert(name, (b.span, why));
                }
            }
        }
        self.zero_before_loop(tensors_before, s, out);
        out.push(CStmt {
            kind: CStmtKind::Loop { axis, body: inner },
            annot,
            span: s.span.clone(),
        });
        if self.stopped {
            Flow::Stop
        } else if let Some((v, at)) = returned {
            Flow::Return(v, at)
        } else {
            Flow::Next
        }
    }

    /// A `return` that ended the traced body of a loop at the kernel's level (`exec`). NKI
    /// traces an `nl.affine_range` / `nl.sequential_range` body once, so a `return` as its last
    /// statement returns after the whole loop; its value must be one for every iteration (not
    /// depend on the loop index). Anywhere else it is reported, and the loop goes on as if it
    /// were not there.
    fn loop_return(
        &mut self,
        v: Value,
        at: Span,
        kind: LoopKind,
        axis: Axis,
        body: &[ast::Stmt],
    ) -> Option<(Value, Span)> {
        if !matches!(kind, LoopKind::Affine | LoopKind::Sequential) || !ends_body(body, &at) {
            self.error(CheckError::ReturnInLoop { at });
            return None;
        }
        if depends_on(&v, axis) {
            self.error(CheckError::ReturnVaries { at: at.clone() });
            // The kernel still returns there, with no value to check further.
            return Some((Value::Error, at));
        }
        Some((v, at))
    }

    /// Zeroes, before the loop that has just been traced, each PSUM tile of `zero_first` that
    /// was allocated before it (`tensors_before`): the loop's matmuls add to a tile nothing
    /// wrote, so its first iteration starts from zero. Of an array of more than one PSUM bank,
    /// the block the first matmul adds to is zeroed, when it is the same in every iteration of
    /// the loop (it names only the loops around it: the accumulation group of
    /// `acc[i] += nisa.nc_matmul(...)` in a loop inside the loop of `i`); otherwise the array
    /// is left as it is (the read of uninitialised memory is reported when the kernel runs).
    fn zero_before_loop(&mut self, tensors_before: usize, s: &ast::Stmt, out: &mut Vec<CStmt>) {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.zero_first)
            .into_iter()
            .partition(|(t, _)| (t.as_u32() as usize) < tensors_before);
        self.zero_first = later;
        let mut insts = Vec::new();
        for (t, first) in now {
            let ct = self.tensor(t);
            let dst = if ct.shape[1] * 4 <= vocab::machine::PSUM_BANK_BYTES {
                TileVal::whole(t, ct.shape).operand()
            } else if first.access.pattern.is_none()
                && (first.access.start.iter())
                    .all(|e| e.axes().all(|a| self.enclosing.contains(&a)))
            {
                first
            } else {
                continue;
            };
            insts.push(CInst {
                op: penguin::Op::Memset { value: 0.0 },
                dst,
                srcs: Vec::new(),
                span: ct.span.clone(),
                engine: None,
                mask: Vec::new(),
                guards: Vec::new(),
                implicit: true,
            });
        }
        if !insts.is_empty() {
            out.push(CStmt {
                kind: CStmtKind::Insts(insts),
                annot: StmtAnnot::default(),
                span: s.span.clone(),
            });
        }
    }

    fn bad_iter(&mut self, iter: &Expr) {
        self.error(CheckError::BadLoopIter {
            at: iter.span.clone(),
        });
    }

    /// The bounds of a range call: `(n)` or `(start, stop)`, with at least one iteration.
    fn trip(&mut self, slots: &[Option<&Expr>], span: &Span) -> Option<(i64, i64)> {
        let a = self.const_int(slots[0]?);
        let b = slots[1].map(|e| self.const_int(e));
        let (lb, ub) = match b {
            None => (0, a?),
            Some(b) => (a?, b?),
        };
        // Every induction-variable value, and every value the pipeliners derive from one (shifted
        // by a stage, run ahead by a prefetch), stays far inside 64 bits.
        if let Some(bad) = [lb, ub]
            .into_iter()
            .find(|v| v.abs_diff(0) > MAX_EXTENT as u64)
        {
            self.error(CheckError::LoopBound {
                lb,
                ub,
                bad,
                at: span.clone(),
            });
            return None;
        }
        if matches!(ub.checked_sub(lb), Some(t) if (1..=MAX_EXTENT).contains(&t)) {
            return Some((lb, ub));
        }
        self.error(CheckError::TripCount {
            lb,
            ub,
            at: span.clone(),
        });
        None
    }
}

/// A parameter annotation that is only a hint: `nt.tensor[...]`, `nki.tensor`, `nl.ndarray`, or a
/// Python type; the parameter's shape then comes from the run, as for an untyped one.
pub(crate) fn is_hint(ty: &Expr) -> bool {
    let base = match &ty.kind {
        ExprKind::Subscript { value, .. } => value,
        _ => ty,
    };
    match &base.kind {
        ExprKind::Attribute { value, attr } => {
            !(matches!(&value.kind, ExprKind::Name(m) if m == "nl") && attr.name == "hbm")
        }
        ExprKind::Name(_) | ExprKind::Str(_) => true,
        _ => false,
    }
}

/// `int`, `float`, `bool`, `str`: the annotation of a scalar parameter.
pub(crate) fn scalar_hint(ty: &Expr) -> Option<&'static str> {
    match &ty.kind {
        ExprKind::Name(n) => match n.as_str() {
            "int" => Some("integer"),
            "float" => Some("float"),
            "bool" => Some("boolean"),
            "str" => Some("string"),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a value depends on loop `axis`: an integer or a tile's position affine in it.
fn depends_on(v: &Value, axis: Axis) -> bool {
    match v {
        Value::Int(a) => a.coeff(axis) != 0,
        Value::Iv(a) => *a == axis,
        Value::Tile(t) => t.start.iter().any(|s| s.coeff(axis) != 0),
        Value::Py(p) => match &**p {
            super::pyvalue::Py::Tuple(items) => items.iter().any(|i| depends_on(i, axis)),
            _ => false,
        },
        _ => false,
    }
}

/// Whether the statement that returned (`at`, the `return`'s span) is the last of `body`, or
/// inside the last (an `if`, an inner loop, which checked their own).
pub(super) fn ends_body(body: &[Stmt], at: &Span) -> bool {
    body.last()
        .is_some_and(|last| last.span.start <= at.start && at.end <= last.span.end)
}
