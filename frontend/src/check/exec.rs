//! Statements, run as Python runs them at compile time, with the tile operations among them
//! handed to the operation checks of `stmts`.
//!
//! [`Checker::exec_block`] runs a block: assignments (to names, subscripts, unpackings with
//! `*rest`, chained), augmented assignments, `if`/`elif`/`else` decided at compile time, `for`
//! over Python iterables (unrolled: the body runs once per item), `while`, `break`, `continue`,
//! `assert` (a false one is a diagnostic with its evaluated message, and evaluation stops),
//! `return` anywhere, `def`, `import`. A statement whose value is a tile operation is residualised
//! (`eval_expr`) and checked by `Checker::stmt` as a statement of the core language.
//!
//! Loops: `nl.affine_range` and `nl.sequential_range` are hardware loops (a Penguin IR loop whose
//! body is traced once, with a symbolic index); `nl.static_range` and any other iterable are
//! unrolled. A `range` loop is first tried as a hardware loop, as nkc's core language has always
//! compiled it; when its body needs the index's value (to index a list, in an `if`, in an
//! f-string) or mutates a Python container, the attempt is rolled back and the loop unrolled, as
//! Python would run it. A hardware loop whose body takes `//` or `%` of its index (not an affine
//! index: `tile_position=((i % 2) * 64, ...)`), or whose iota base depends on the index, is
//! unrolled the same way, its index then a
//! compile-time integer in each copy of the body.
//!
//! Invariants: every statement counts one evaluation step (`MAX_STEPS`, `mod.rs`); after a
//! Python error (`Checker::stopped`) no further statement of the kernel runs; instructions come
//! out in the order Python would run the statements.

use super::comptime::Class;
use super::error::CheckError;
use super::py_access::{dtype_limit, module_of_path};
use super::pyvalue::Py;
use super::stmts::{ends_body, Flow};
use super::{CStmt, Checker, Value};
use crate::ast::{self, Expr, ExprKind, Span, Stmt, StmtKind, Target};
use crate::codes;
use penguin::Axis;
use std::collections::HashMap;

/// How a `for` loop runs.
enum LoopWay {
    /// A Penguin IR loop (`nl.affine_range`, `nl.sequential_range`).
    Hardware,
    /// `range`: a hardware loop unless its body needs the index's value.
    TryHardware,
    /// Python's loop, unrolled.
    Unroll,
}

/// What a `range` loop tried as a hardware loop must restore when it is unrolled instead.
struct Snapshot {
    errors: usize,
    tensors: usize,
    loops: usize,
    out: usize,
    pending: usize,
    scopes: Vec<std::collections::HashMap<String, super::Bound>>,
    out_of_scope: std::collections::HashMap<String, (Span, super::loop_scope::LoopExit)>,
    reported: std::collections::HashSet<String>,
    hbm_elements: u64,
    unrolled_matmuls: Vec<std::collections::HashSet<penguin::Tensor>>,
    written: std::collections::HashSet<(penguin::Tensor, Option<penguin::Access>)>,
    zero_first: Vec<(penguin::Tensor, penguin::Operand)>,
    zero_placed: Vec<(penguin::Axis, penguin::Tensor, penguin::Operand)>,
}

impl Checker<'_> {
    /// Runs a block; see the module doc.
    pub(crate) fn exec_block(
        &mut self,
        stmts: &[Stmt],
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> Flow {
        for s in stmts {
            let flow = self.exec(s, out, in_loop);
            self.flush(out);
            if self.stopped {
                return Flow::Stop;
            }
            if !matches!(flow, Flow::Next) {
                return flow;
            }
        }
        Flow::Next
    }

    /// Moves the instructions of tile operations traced inside expressions (temporaries, helper
    /// bodies) to the block, before the statement that needed them.
    pub(crate) fn flush(&mut self, out: &mut Vec<CStmt>) {
        out.append(&mut self.pending);
    }

    fn exec(&mut self, s: &Stmt, out: &mut Vec<CStmt>, in_loop: bool) -> Flow {
        if self.step(&s.span).is_none() {
            return Flow::Stop;
        }
        let saved = std::mem::replace(&mut self.in_loop_body, in_loop);
        let flow = self.exec_inner(s, out, in_loop);
        self.in_loop_body = saved;
        flow
    }

    /// Checks a residual statement of the core language.
    fn core(&mut self, kind: StmtKind, span: &Span, out: &mut Vec<CStmt>, in_loop: bool) {
        self.flush(out);
        let s = Stmt {
            kind,
            span: span.clone(),
        };
        self.stmt(&s, out, in_loop);
    }

    fn exec_inner(&mut self, s: &Stmt, out: &mut Vec<CStmt>, in_loop: bool) -> Flow {
        match &s.kind {
            StmtKind::Assign { target, value } => self.exec_assign(target, value, s, out, in_loop),
            StmtKind::MultiAssign { targets, value } => {
                if let Some(v) = self.eval(value) {
                    for t in targets {
                        if self.assign_value(t, v.clone()).is_none() {
                            break;
                        }
                    }
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                self.exec_aug(target, *op, value, s, out, in_loop)
            }
            StmtKind::Expr(e) => match &e.kind {
                ExprKind::Ellipsis | ExprKind::Str(_) | ExprKind::FStr(_) => {}
                _ if self.traced(e) => {
                    if let Some(r) = self.resid(e) {
                        self.core(StmtKind::Expr(r), &s.span, out, in_loop);
                    }
                }
                ExprKind::Call { .. } => {
                    self.eval(e);
                }
                _ => self.core(s.kind.clone(), &s.span, out, in_loop),
            },
            StmtKind::For { target, iter, body } => {
                return self.exec_for(target, iter, body, s, out, in_loop)
            }
            StmtKind::While { test, body } => loop {
                if self.step(&s.span).is_none() {
                    return Flow::Stop;
                }
                let Some(t) = self.test(test, "while") else {
                    return Flow::Stop;
                };
                if !t {
                    break;
                }
                match self.exec_block(body, out, in_loop) {
                    Flow::Break => break,
                    Flow::Next | Flow::Continue => {}
                    f => return f,
                }
            },
            StmtKind::If { test, body, orelse } => {
                // Decided at compile time: only the branch taken runs, as in NKI's tracing. A
                // condition of device loop indices alone guards both branches (if_guards.rs).
                // `if not cond:` is the `else` of `if cond:`.
                let (mut inner, mut negated) = (test, false);
                while let ExprKind::Not(operand) = &inner.kind {
                    (inner, negated) = (&**operand, !negated);
                }
                let Some(v) = self.condition_value(inner, "if") else {
                    return if self.stopped { Flow::Stop } else { Flow::Next };
                };
                if let Value::Mask(p) = &v {
                    if p.iter().all(|p| p.bounds.is_empty() && p.nd.is_empty()) {
                        return self.exec_guarded_if(p, negated, test, body, orelse, out, in_loop);
                    }
                }
                let Some(holds) = self.truthy(&v, inner) else {
                    return if self.stopped { Flow::Stop } else { Flow::Next };
                };
                let taken = holds != negated;
                return self.exec_block(if taken { body } else { orelse }, out, in_loop);
            }
            StmtKind::Assert { test, msg } => {
                if self.test(test, "assert") == Some(false) {
                    let says = match msg {
                        Some(m) => match self.eval(m) {
                            Some(v) => Some(v.to_str()),
                            None => return Flow::Stop,
                        },
                        None => None,
                    };
                    self.error(CheckError::AssertFailed {
                        assert_at: s.span.clone(),
                        says,
                        missing_dtype: missing_dtype(test),
                        at: test.span.clone(),
                    });
                    self.stopped = true;
                    return Flow::Stop;
                }
            }
            StmtKind::Return(values) => {
                // At the kernel's level, a `return` in a hardware loop's body returns from the
                // loop: `for_loop` accepts it when it ends the body of an `nl.affine_range` or
                // `nl.sequential_range` loop (NKI traces that body once, so its `return` returns
                // after the whole loop), and reports it otherwise.
                if self.enclosing.len() > self.loop_base && self.frames > 0 {
                    self.error(CheckError::ReturnInLoop { at: s.span.clone() });
                    return Flow::Next;
                }
                if self.frames == 0 {
                    self.return_items = values
                        .iter()
                        .map(|e| {
                            let name = match &e.kind {
                                ExprKind::Name(n) => n.clone(),
                                _ => "the value".to_string(),
                            };
                            (e.span.clone(), name)
                        })
                        .collect();
                }
                let v = match values.as_slice() {
                    [] => Value::None,
                    [one] => match self.eval(one) {
                        Some(v) => v,
                        None => {
                            return if self.stopped {
                                Flow::Stop
                            } else {
                                Flow::Return(Value::Error, s.span.clone())
                            }
                        }
                    },
                    many => {
                        let mut items = Vec::new();
                        for e in many {
                            items.push(self.eval(e).unwrap_or(Value::Error));
                        }
                        if self.stopped {
                            return Flow::Stop;
                        }
                        Value::tuple(items)
                    }
                };
                return Flow::Return(v, s.span.clone());
            }
            StmtKind::Def(k) => {
                if let Some(f) = self.make_function(k.clone()) {
                    self.bind(&k.name.name, f, k.name.span.clone());
                }
            }
            StmtKind::Import(items) => {
                for (path, alias) in items {
                    // package_imports: a module of the kernel's package, from its file.
                    let v = match self.import_from_package(path, &alias.span) {
                        Some(v) => v,
                        None if self.stopped => return Flow::Stop,
                        None => module_of_path(path),
                    };
                    self.bind(&alias.name, v, alias.span.clone());
                }
            }
            StmtKind::Opaque(what) => {
                // At module level (a test class, a driver block) it is skipped; in a kernel or a
                // helper it would change what the kernel computes.
                if self.kernel_frame || self.frames > 0 {
                    let what = if what.contains(' ') {
                        what.clone()
                    } else {
                        format!("a `{what}` statement")
                    };
                    self.unsupported_py(what, &s.span);
                    return Flow::Stop;
                }
            }
            StmtKind::Class(c) => return self.exec_class(c, &s.span),
            StmtKind::Raise(e) => return self.exec_raise(e.as_ref(), &s.span),
            StmtKind::Declare(_) => {}
            StmtKind::Break => return Flow::Break,
            StmtKind::Continue => return Flow::Continue,
            StmtKind::Pass | StmtKind::Error | StmtKind::Recovered { .. } => {
                self.core(s.kind.clone(), &s.span, out, in_loop)
            }
        }
        Flow::Next
    }

    /// The truth of an `if`, `while` or `assert` condition, which must be known at compile time.
    fn test(&mut self, test: &Expr, what: &str) -> Option<bool> {
        let v = self.condition_value(test, what)?;
        if let Value::Mask(p) = &v {
            if what == "while" && p.iter().all(|p| p.bounds.is_empty()) {
                self.while_guard(test);
                return None;
            }
        }
        self.truthy(&v, test)
    }

    /// The value of an `if`, `while` or `assert` condition: a condition of loop indices alone
    /// (mask_guards.rs) is evaluated, a tile is reported.
    fn condition_value(&mut self, test: &Expr, what: &str) -> Option<Value> {
        if self.traced(test) && !self.is_guard_expr(test) && !self.names_hbm_handle(test) {
            self.error(CheckError::TileCondition {
                what: what.to_string(),
                at: test.span.clone(),
            });
            return None;
        }
        self.eval(test)
    }

    fn exec_assign(
        &mut self,
        target: &Target,
        value: &Expr,
        s: &Stmt,
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) {
        match target {
            Target::Name(_) | Target::Tuple { .. } if self.traced(value) => {
                if let Some(r) = self.resid(value) {
                    self.core(
                        StmtKind::Assign {
                            target: target.clone(),
                            value: r,
                        },
                        &s.span,
                        out,
                        in_loop,
                    );
                } else if !self.stopped {
                    self.poison(target);
                }
            }
            Target::Subscript {
                base,
                indices,
                span,
            } if self.is_tile_name(&base.name) => {
                let Some((target, value)) = self.resid_subscript(base, indices, span, value) else {
                    return;
                };
                self.core(StmtKind::Assign { target, value }, &s.span, out, in_loop);
            }
            _ => match self.eval(value) {
                Some(v) => {
                    self.flush(out);
                    self.assign_value(target, v);
                }
                None if !self.stopped => self.poison(target),
                None => {}
            },
        }
    }

    /// Binds the names of a target whose value failed (already reported) to the error value.
    fn poison(&mut self, target: &Target) {
        match target {
            Target::Name(id) | Target::Starred(id) => {
                if self.may_bind(id, Class::Poison) {
                    self.bind(&id.name, Value::Error, id.span.clone());
                }
            }
            Target::Tuple { names, .. } => {
                for id in names {
                    self.bind(&id.name, Value::Error, id.span.clone());
                }
            }
            Target::Seq { items, .. } => items.iter().for_each(|t| self.poison(t)),
            Target::Subscript { .. } | Target::Attribute { .. } => {}
        }
    }

    /// `target = v` for a computed value.
    fn assign_value(&mut self, target: &Target, v: Value) -> Option<()> {
        self.bind_target(target, v)
    }

    /// Binds `id` to `v` by the binding rules of `stmts` (kinds kept, loop bodies local).
    pub(crate) fn bind_value(&mut self, id: &ast::Ident, v: Value) {
        let class = match &v {
            Value::Int(_) | Value::Iv(_) => Class::Int,
            Value::Tile(_) | Value::Param(_) => Class::Tile,
            Value::Float(_) => Class::Float,
            Value::Bool(_) | Value::None => Class::Bool,
            Value::Error => Class::Poison,
            Value::Vec(_) | Value::Mask(_) | Value::Py(_) => Class::Other,
        };
        if self.traced_int_rebind(id, &v) {
            // `n = n // 2` in a device loop's body: traced once, as NKI's tracer runs it
            // (`bind` rebinds the outer name), like `n //= 2`.
            self.bind(&id.name, v, id.span.clone());
            return;
        }
        if self.may_bind(id, class) {
            if let Value::Tile(tile) = &v {
                self.note_user_name(tile, &id.name);
            }
            self.bind(&id.name, v, id.span.clone());
        }
    }

    /// Whether `id = v` rebinds, in a device loop's body, a compile-time int bound outside the
    /// loop to another compile-time int: NKI traces the body once, so the assignment runs once
    /// (as `aug_assign` does for `n += k`); a value that depends on a loop index stays E0201.
    fn traced_int_rebind(&mut self, id: &ast::Ident, v: &Value) -> bool {
        let constant = |v: &Value| matches!(v, Value::Int(e) if e.as_constant().is_some());
        let prev = self.find(&id.name).map(|b| (constant(&b.value), b.leaked));
        if !constant(v) || prev != Some((true, false)) || !self.bound_outside_loop(&id.name) {
            return false;
        }
        self.trace_once_note(&id.name);
        true
    }

    fn is_tile_name(&self, name: &str) -> bool {
        matches!(
            self.find(name).map(|b| &b.value),
            Some(Value::Tile(_) | Value::Param(_))
        )
    }

    /// The target and value of `base[indices] = value` (or `+=`) on a tile, residualised.
    fn resid_subscript(
        &mut self,
        base: &ast::Ident,
        indices: &[ast::Index],
        span: &Span,
        value: &Expr,
    ) -> Option<(Target, Expr)> {
        let sub = Expr {
            kind: ExprKind::Subscript {
                value: Box::new(Expr {
                    kind: ExprKind::Name(base.name.clone()),
                    span: base.span.clone(),
                }),
                indices: indices.to_vec(),
            },
            span: span.clone(),
        };
        let r = self.resid(&sub)?;
        let ExprKind::Subscript { indices, .. } = r.kind else {
            return None;
        };
        let value = self.resid(value)?;
        let target = Target::Subscript {
            base: base.clone(),
            indices,
            span: span.clone(),
        };
        Some((target, value))
    }

    fn exec_aug(
        &mut self,
        target: &Target,
        op: ast::BinOp,
        value: &Expr,
        s: &Stmt,
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) {
        match target {
            Target::Name(id) => {
                let cur = self.find(&id.name).map(|b| b.value.clone());
                match cur {
                    Some(
                        Value::Tile(_)
                        | Value::Param(_)
                        | Value::Iv(_)
                        | Value::Int(_)
                        | Value::Error,
                    )
                    | None => {
                        // The core language's updates: tiles in place, integers rebound.
                        let Some(r) = self.resid(value) else {
                            return;
                        };
                        self.core(
                            StmtKind::AugAssign {
                                target: target.clone(),
                                op,
                                value: r,
                            },
                            &s.span,
                            out,
                            in_loop,
                        );
                    }
                    Some(cur) => {
                        let Some(v) = self.eval(value) else {
                            return;
                        };
                        // `xs += [...]` extends the list in place, as Python does.
                        if let (Some(Py::List(items)), ast::BinOp::Add) = (cur.as_py(), op) {
                            let at = value.clone();
                            if let Some(more) = self.iterate(&v, &at) {
                                if self.mutating(&s.span).is_some() {
                                    items.borrow_mut().extend(more);
                                }
                            }
                            return;
                        }
                        let whole = Expr {
                            kind: ExprKind::Error,
                            span: s.span.clone(),
                        };
                        if let Some(r) = self.binary(op, cur, v, &whole, value) {
                            self.bind_value(id, r);
                        }
                    }
                }
            }
            Target::Subscript {
                base,
                indices,
                span,
            } if self.is_tile_name(&base.name) => {
                let Some((target, value)) = self.resid_subscript(base, indices, span, value) else {
                    return;
                };
                let kind = StmtKind::AugAssign { target, op, value };
                self.core(kind, &s.span, out, in_loop);
            }
            Target::Subscript {
                base,
                indices,
                span,
            } => {
                let expr = Expr {
                    kind: ExprKind::Subscript {
                        value: Box::new(Expr {
                            kind: ExprKind::Name(base.name.clone()),
                            span: base.span.clone(),
                        }),
                        indices: indices.clone(),
                    },
                    span: span.clone(),
                };
                let Some(cur) = self.eval(&expr) else {
                    return;
                };
                let Some(v) = self.eval(value) else {
                    return;
                };
                if let Some(r) = self.binary(op, cur, v, &expr, value) {
                    self.bind_target(target, r);
                }
            }
            Target::Attribute {
                value: obj, attr, ..
            } => {
                self.aug_attr(obj, attr, op, value, &s.span);
            }
            _ => self.core(s.kind.clone(), &s.span, out, in_loop),
        }
    }

    fn loop_way(&self, iter: &Expr) -> LoopWay {
        let ExprKind::Call { func, .. } = &iter.kind else {
            return LoopWay::Unroll;
        };
        match self.peek_callee(func).as_ref().and_then(Value::as_py) {
            Some(Py::Ref("nl", n)) if n == "affine_range" || n == "sequential_range" => {
                LoopWay::Hardware
            }
            Some(Py::Builtin("range")) => LoopWay::TryHardware,
            _ => LoopWay::Unroll,
        }
    }

    fn exec_for(
        &mut self,
        target: &Target,
        iter: &Expr,
        body: &[Stmt],
        s: &Stmt,
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> Flow {
        let way = self.loop_way(iter);
        let var = match target {
            Target::Name(id) => Some(id),
            _ => None,
        };
        match (way, var) {
            (LoopWay::Hardware, Some(var)) => {
                // `//` or `%` of the index, a list index, or a list bound outside the body and
                // grown in it unrolls the loop (`Checker::div_soft_axes`).
                let snap = self.snapshot(out);
                let axis = Axis::from_u32(self.loops.len() as u32);
                self.div_soft_axes.push(axis);
                self.div_soft_scopes.push((self.frames, self.scopes.len()));
                let flow = self.hardware_loop(var, iter, body, s, out, in_loop);
                self.div_soft_axes.pop();
                self.div_soft_scopes.pop();
                if !self.need_unroll {
                    return flow;
                }
                self.restore(snap, out);
                self.need_unroll = false;
                self.stopped = false;
                let before = self.innermost_spans();
                let flow = self.unrolled(target, iter, body, out, in_loop, true);
                self.mark_left_by_loop(&before);
                flow
            }
            (LoopWay::Hardware, None) => {
                self.raise(
                    codes::PYTHON_ERROR,
                    "the index of a hardware loop is one name".into(),
                    &target.span(),
                );
                Flow::Stop
            }
            (LoopWay::TryHardware, Some(var)) => {
                let snap = self.snapshot(out);
                let axis = Axis::from_u32(self.loops.len() as u32);
                self.soft_axes.push(axis);
                let flow = self.hardware_loop(var, iter, body, s, out, in_loop);
                self.soft_axes.pop();
                if !self.need_unroll {
                    return flow;
                }
                self.restore(snap, out);
                self.need_unroll = false;
                self.stopped = false;
                let before = self.innermost_spans();
                let flow = self.unrolled(target, iter, body, out, in_loop, false);
                self.mark_left_by_loop(&before);
                flow
            }
            _ => self.unrolled(target, iter, body, out, in_loop, false),
        }
    }

    fn snapshot(&mut self, out: &[CStmt]) -> Snapshot {
        Snapshot {
            errors: self.errors.len(),
            tensors: self.tensors.len(),
            loops: self.loops.len(),
            out: out.len(),
            pending: self.pending.len(),
            scopes: self.scopes.clone(),
            out_of_scope: self.out_of_scope.clone(),
            reported: self.reported.clone(),
            hbm_elements: self.hbm_elements,
            unrolled_matmuls: self.unrolled_matmuls.clone(),
            written: self.written.clone(),
            zero_first: self.zero_first.clone(),
            zero_placed: self.zero_placed.clone(),
        }
    }

    fn restore(&mut self, s: Snapshot, out: &mut Vec<CStmt>) {
        self.errors.truncate(s.errors);
        self.tensors.truncate(s.tensors);
        self.if_guards.truncate(s.tensors);
        let tensors = s.tensors;
        self.logical.retain(|t, _| (t.as_u32() as usize) < tensors);
        self.loops.truncate(s.loops);
        out.truncate(s.out);
        self.pending.truncate(s.pending);
        self.scopes = s.scopes;
        self.out_of_scope = s.out_of_scope;
        self.reported = s.reported;
        self.hbm_elements = s.hbm_elements;
        self.unrolled_matmuls = s.unrolled_matmuls;
        self.written = s.written;
        self.zero_first = s.zero_first;
        self.zero_placed = s.zero_placed;
    }

    /// A Penguin IR loop: the header's Python arguments evaluated, the body traced once.
    fn hardware_loop(
        &mut self,
        var: &ast::Ident,
        iter: &Expr,
        body: &[Stmt],
        s: &Stmt,
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> Flow {
        let Some(iter) = self.resid_range(iter) else {
            return if self.stopped { Flow::Stop } else { Flow::Next };
        };
        self.flush(out);
        self.for_loop(var, &iter, body, s, out, in_loop)
    }

    /// The range call of a hardware loop with its arguments evaluated and written back.
    fn resid_range(&mut self, iter: &Expr) -> Option<Expr> {
        let ExprKind::Call { func, args, kwargs } = &iter.kind else {
            return Some(iter.clone());
        };
        let func = match self.peek_callee(func) {
            Some(v) if matches!(v.as_py(), Some(Py::Ref(..))) => self.quote(&v, &func.span)?,
            _ => Expr {
                kind: ExprKind::Name("range".into()),
                span: func.span.clone(),
            },
        };
        let mut a2 = Vec::new();
        for a in args {
            let v = self.eval(a)?;
            a2.push(self.quote(&v, &a.span)?);
        }
        let mut k2 = Vec::new();
        for k in kwargs {
            let value = match &k.value.kind {
                ExprKind::Int(_)
                | ExprKind::Float(_)
                | ExprKind::Bool(_)
                | ExprKind::Str(_)
                | ExprKind::None => k.value.clone(),
                _ => {
                    let v = self.eval(&k.value)?;
                    self.quote(&v, &k.value.span)?
                }
            };
            k2.push(ast::Keyword {
                name: k.name.clone(),
                value,
                span: k.span.clone(),
            });
        }
        Some(Expr {
            kind: ExprKind::Call {
                func: Box::new(func),
                args: a2,
                kwargs: k2,
            },
            span: iter.span.clone(),
        })
    }

    /// Where each name of the innermost scope was bound: taken before a hardware loop that nkc
    /// unrolls, to tell afterwards which names its body bound.
    fn innermost_spans(&self) -> HashMap<String, Span> {
        (self.scopes.last().into_iter())
            .flat_map(|scope| scope.iter().map(|(n, b)| (n.clone(), b.span.clone())))
            .collect()
    }

    /// After a hardware loop that nkc unrolled (its index needed a value, or its body grows a
    /// list): every name its body bound (or bound anew) is one an earlier loop's body left
    /// bound, as it would be had the loop stayed a hardware loop (`hw_loops`), so a later
    /// loop's body may bind it as one of its own (`result_tile = tiles[m]` in a later loop,
    /// after `result_tile = nl.ndarray(...)` in the unrolled one).
    fn mark_left_by_loop(&mut self, before: &HashMap<String, Span>) {
        let Some(scope) = self.scopes.last_mut() else {
            return;
        };
        for (name, b) in scope.iter_mut() {
            if before.get(name) != Some(&b.span) {
                b.leaked = true;
            }
        }
    }

    /// Python's loop: the body runs once per item, in the enclosing block. With `traced` (an
    /// `nl.affine_range` / `nl.sequential_range` loop unrolled because its index needed a value),
    /// a `return` ending its body returns after the last iteration, as it does from the loop NKI
    /// traces once (`hw_loops::loop_return`).
    fn unrolled(
        &mut self,
        target: &Target,
        iter: &Expr,
        body: &[Stmt],
        out: &mut Vec<CStmt>,
        in_loop: bool,
        traced: bool,
    ) -> Flow {
        let Some(it) = self.eval(iter) else {
            return if self.stopped { Flow::Stop } else { Flow::Next };
        };
        let Some(items) = self.iterate(&it, iter) else {
            return if self.stopped { Flow::Stop } else { Flow::Next };
        };
        // The index of a loop unrolled in a hardware loop's body may have the name of an
        // earlier loop's index outside that body (`for k in ...:` twice, the first unrolled):
        // it is a new binding of this body, as the index of a hardware loop is.
        if let Target::Name(id) = target {
            if self.bound_outside_loop(&id.name) {
                self.bind(&id.name, Value::None, id.span.clone());
            }
        }
        if let Target::Name(id) = target {
            self.unrolled_targets.insert(id.span.clone());
        }
        self.unrolled_matmuls.push(std::collections::HashSet::new());
        let mut returned: Option<(Value, Span, String)> = None;
        let mut flow = Flow::Next;
        for item in items {
            if self.step(&iter.span).is_none() || self.bind_target(target, item).is_none() {
                flow = Flow::Stop;
                break;
            }
            match self.exec_block(body, out, in_loop) {
                Flow::Break => break,
                Flow::Next | Flow::Continue => {}
                Flow::Return(v, at) if traced && self.frames == 0 && ends_body(body, &at) => {
                    let key = format!("{v:?}");
                    match &returned {
                        Some((_, _, k)) if *k != key => {
                            self.error(CheckError::ReturnVaries { at });
                            flow = Flow::Stop;
                            break;
                        }
                        Some(_) => {}
                        None => returned = Some((v, at, key)),
                    }
                }
                Flow::Return(_, at) if traced && self.frames == 0 => {
                    self.error(CheckError::ReturnInLoop { at });
                }
                f => {
                    flow = f;
                    break;
                }
            }
        }
        self.unrolled_matmuls.pop();
        match (flow, returned) {
            (Flow::Next, Some((v, at, _))) => Flow::Return(v, at),
            (f, _) => f,
        }
    }
}

/// A dtype nkc's machine model does not have (`nl.float8_e4m3`, `np.int8`, `nl.float16`) that a
/// failed assertion requires: one side of an `==` (or an `in` of only such dtypes), searched
/// through `and` and `or`. `assert x.dtype == nl.float8_e4m3` fails for that reason, not for the
/// kernel's shapes; a `!=` or a test that also admits float32 says nothing.
fn missing_dtype(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Compare {
            op: ast::CmpOp::Eq,
            lhs,
            rhs,
        } => lacking_dtype(lhs).or_else(|| lacking_dtype(rhs)),
        ExprKind::Compare {
            op: ast::CmpOp::In,
            rhs,
            ..
        } => match &rhs.kind {
            ExprKind::Tuple(items) | ExprKind::List(items) if !items.is_empty() => {
                let names: Option<Vec<String>> = items.iter().map(lacking_dtype).collect();
                names.map(|n| n.join("`, `"))
            }
            _ => None,
        },
        ExprKind::BoolOp { lhs, rhs, .. } => missing_dtype(lhs).or_else(|| missing_dtype(rhs)),
        _ => None,
    }
}

/// `nl.X` / `np.X` / `nki.language.X` where `X` is an NKI or numpy dtype (one with an
/// `itemsize`, [`dtype_limit`]) other than the two nkc has, float32 and bfloat16.
fn lacking_dtype(e: &Expr) -> Option<String> {
    let ExprKind::Attribute { value, attr } = &e.kind else {
        return None;
    };
    let module = match &value.kind {
        ExprKind::Name(m) => ["nl", "np", "numpy"].contains(&m.as_str()),
        ExprKind::Attribute { attr: a, .. } => a.name == "language",
        _ => false,
    };
    let name = attr.name.as_str();
    let has = ["float32", "fp32", "bfloat16", "bf16"].contains(&name);
    (module && !has && dtype_limit(name, "itemsize").is_some()).then(|| format!("nl.{name}"))
}
