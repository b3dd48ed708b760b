//! Evaluation of expressions: the kernel's Python, run at compile time as NKI's tracer runs it.
//!
//! [`Checker::eval`] computes the value of an expression that is not a tile operation: numbers
//! (integers stay affine in the loop indices of hardware loops), strings and f-strings, tuples,
//! lists, dicts, slices, comprehensions, conditional expressions, comparisons, attribute access on
//! modules (`nl.float32`, `math.pi`) and tiles (`x.shape`, `x.dtype`), subscripts of containers,
//! and calls of builtins, methods and user functions (see `functions`). A tile operation met inside
//! such an expression (`helper(nl.exp(t))`) is traced where it stands: it becomes a statement of
//! its own that binds a temporary, whose tile is the value.
//!
//! [`Checker::traced`] says whether an expression is a tile operation (or an expression over
//! tiles, index vectors or masks): those are not evaluated here but residualised
//! ([`Checker::resid`]): their Python parts are evaluated and written back as literals
//! ([`Checker::quote`]), module aliases become `nl.`/`nisa.`, and the result is checked by the
//! operation checks as a statement of the core language. So `ops` sees the same expressions for a
//! kernel written in the core language as before, and the same IR comes out.
//!
//! The evaluation is split by what it reads: this file walks expressions, names, containers,
//! comprehensions, truth, iteration and bindings; `py_access` attributes and subscripts;
//! `py_operators` Python's operators and comparisons; `residualise` the traced expressions. They
//! form the expression layer (`mod.rs`): above values, errors and compile-time constants, below
//! the operation families and statements.
//!
//! Invariants: `None` from an evaluation means a diagnostic was reported (or the operand was an
//! error value already reported); a Python error (failed lookup, wrong types, division by zero)
//! stops the kernel's evaluation (`Checker::stopped`), as the exception would in Python.

use super::error::CheckError;
use super::py_access::module_attr;
use super::pyvalue::{format_spec, range_items, range_len, Py};
use super::{Checker, Value};
use crate::ast::{self, BinOp, CmpOp, Expr, ExprKind, FPart, Index, Span};
use crate::codes;
use crate::diagnostic::Error;
use penguin::AffineExpr;
use std::cell::RefCell;
use std::rc::Rc;

/// The builtins of Python that kernels call.
pub(crate) const BUILTINS: [&str; 28] = [
    "range",
    "len",
    "min",
    "max",
    "abs",
    "int",
    "float",
    "bool",
    "str",
    "round",
    "divmod",
    "isinstance",
    "slice",
    "print",
    "zip",
    "enumerate",
    "list",
    "tuple",
    "sum",
    "any",
    "all",
    "sorted",
    "reversed",
    "dict",
    "type",
    "repr",
    "hasattr",
    "getattr",
];

/// `nl` names that are Python, not tile operations.
const PURE_NL: [&str; 15] = [
    "tile_size",
    "ds",
    "finfo",
    "iinfo",
    "device_print",
    "dtype",
    "static_range",
    "affine_range",
    "sequential_range",
    "par_dim",
    "program_ndim",
    "program_id",
    "num_programs",
    "get_nc_version",
    "nc_version",
];

impl Checker<'_> {
    /// Reports a Python error and stops the kernel's evaluation.
    pub(crate) fn raise(&mut self, code: &'static str, message: String, at: &Span) {
        self.error(Error::new(code, message, at.clone()));
        self.stopped = true;
    }

    /// Python's `ZeroDivisionError`, with the code of a division by zero (E0121); stops.
    pub(super) fn division_by_zero(&mut self, at: &Span) {
        self.error(
            Error::new(codes::DIVISION_BY_ZERO, "division by zero", at.clone())
                .with_label("this is zero"),
        );
        self.stopped = true;
    }

    /// Reports a `TypeError`-like misuse and stops.
    pub(crate) fn type_error(&mut self, message: String, at: &Span) -> Option<Value> {
        self.raise(codes::PYTHON_ERROR, message, at);
        None
    }

    /// A Python construct or builtin nkc does not evaluate.
    pub(crate) fn unsupported_py(&mut self, what: String, at: &Span) -> Option<Value> {
        self.raise(
            codes::PYTHON_UNSUPPORTED,
            format!("{what} is not supported by nkc's compile-time Python"),
            at,
        );
        None
    }

    /// The value `nl.NAME` or `nisa.NAME` names, when `func` names one without side effects.
    pub(crate) fn peek_callee(&self, func: &Expr) -> Option<Value> {
        match &func.kind {
            ExprKind::Name(n) => match self.find(n) {
                Some(b) => Some(b.value.clone()),
                None if BUILTINS.contains(&n.as_str()) => Some(Value::py(Py::Builtin(builtin(n)))),
                None => match n.as_str() {
                    "nl" => Some(Value::py(Py::Module("nl".into()))),
                    "nisa" => Some(Value::py(Py::Module("nisa".into()))),
                    "math" => Some(Value::py(Py::Module("math".into()))),
                    _ => None,
                },
            },
            ExprKind::Attribute { value, attr } => {
                let base = self.peek_callee(value)?;
                match base.as_py()? {
                    Py::Module(m) => module_attr(m, &attr.name),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether `e` is a tile operation or an expression over tiles, index vectors or masks, which
    /// the operation checks see (residualised) rather than the evaluator.
    pub(crate) fn traced(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(n) => matches!(
                self.find(n).map(|b| &b.value),
                Some(Value::Tile(_) | Value::Param(_) | Value::Vec(_) | Value::Mask(_))
            ),
            ExprKind::Call { func, args, kwargs } => match self.peek_callee(func) {
                Some(v) => match v.as_py() {
                    Some(Py::Ref("nl" | "nisa", name)) => !PURE_NL.contains(&name.as_str()),
                    Some(Py::Builtin(_)) => {
                        // `min(t, ...)` has no meaning on tiles; a builtin of Python values is
                        // evaluated.
                        args.iter().any(|a| self.traced(a))
                            && !matches!(&func.kind, ExprKind::Name(n) if n == "len" || n == "isinstance")
                            && kwargs.is_empty()
                    }
                    _ => false,
                },
                // A method of a tile (`t.broadcast_to(...)`), or something the checks report.
                None => match &func.kind {
                    ExprKind::Attribute { value, .. } => self.traced(value),
                    _ => false,
                },
            },
            ExprKind::Subscript { value, .. } => self.traced(value),
            // A field of an `nl.mgrid` grid is an index vector.
            ExprKind::Attribute { value, attr } => {
                !matches!(attr.name.as_str(), "shape" | "dtype" | "ndim")
                    && (self.traced(value) || self.is_grid(value))
            }
            // `t is None` asks for the object, never for the tile's values: Python.
            ExprKind::Compare {
                op: CmpOp::Is | CmpOp::IsNot,
                ..
            } => false,
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Compare { lhs, rhs, .. }
            | ExprKind::BoolOp { lhs, rhs, .. } => self.traced(lhs) || self.traced(rhs),
            ExprKind::Unary { operand, .. } | ExprKind::Not(operand) => self.traced(operand),
            ExprKind::Tuple(items) => items.iter().any(|i| self.traced(i)),
            _ => false,
        }
    }

    /// Whether `e` names an `nl.mgrid` grid.
    fn is_grid(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Name(n) if matches!(
            self.find(n).map(|b| &b.value).and_then(Value::as_py),
            Some(Py::Grid(_))
        ))
    }

    /// Evaluates a traced expression where a value is needed: a statement `_tmpN = e` is checked
    /// (its instructions join the block being evaluated) and the temporary's value returned.
    fn eval_traced(&mut self, e: &Expr) -> Option<Value> {
        let value = self.resid(e)?;
        self.temp_count += 1;
        let name = format!("_{}{}", temp_stem(e), self.temp_count);
        let id = ast::Ident {
            name: name.clone(),
            span: e.span.clone(),
        };
        let s = ast::Stmt {
            kind: ast::StmtKind::Assign {
                target: ast::Target::Name(id),
                value,
            },
            span: e.span.clone(),
        };
        let mut out = Vec::new();
        let in_loop = self.in_loop_body;
        self.stmt(&s, &mut out, in_loop);
        self.pending.extend(out);
        match self.find(&name).map(|b| b.value.clone()) {
            Some(Value::Error) | None => None,
            Some(v) => Some(v),
        }
    }

    /// The value of an expression (see the module doc).
    pub(crate) fn eval(&mut self, e: &Expr) -> Option<Value> {
        if self.stopped {
            return None;
        }
        if self.traced(e) {
            return self.eval_traced(e);
        }
        match &e.kind {
            ExprKind::Int(v) => Some(Value::int(*v)),
            ExprKind::Float(v) => Some(Value::Float(*v)),
            ExprKind::Bool(b) => Some(Value::Bool(*b)),
            ExprKind::None => Some(Value::None),
            ExprKind::Str(s) => Some(Value::str(s.clone())),
            ExprKind::Ellipsis => Some(Value::py(Py::Ellipsis)),
            ExprKind::Error => None,
            ExprKind::FStr(parts) => {
                let mut out = String::new();
                for p in parts {
                    match p {
                        FPart::Lit(t) => out.push_str(t),
                        FPart::Expr(x, spec) => {
                            let v = self.eval(x)?;
                            if let Some(text) = self.no_value(&v, x) {
                                out.push_str(&text);
                                continue;
                            }
                            match spec {
                                Some(s) => out.push_str(&format_spec(&v, s)),
                                None => out.push_str(&v.to_str()),
                            }
                        }
                    }
                }
                Some(Value::str(out))
            }
            ExprKind::Name(n) => self.eval_name(n, &e.span),
            ExprKind::Attribute { value, attr } => {
                // tile_nd: a name bound to `x.reshape(shape)` has the new shape.
                if let (ExprKind::Name(n), "shape" | "ndim") = (&value.kind, attr.name.as_str()) {
                    if let Some(dims) = self.reshaped_dims(n) {
                        return Some(if attr.name == "ndim" {
                            Value::int(dims.len() as i64)
                        } else {
                            Value::tuple(dims.into_iter().map(|d| Value::int(d as i64)).collect())
                        });
                    }
                }
                let v = self.eval(value)?;
                self.attribute(&v, attr, e)
            }
            ExprKind::Subscript { value, indices } => {
                let v = self.eval(value)?;
                if matches!(v.as_py(), Some(Py::Ref("nl", n)) if n == "mgrid") {
                    let mut items = Vec::new();
                    for ix in indices {
                        items.push((self.eval_index(ix)?, ix.span()));
                    }
                    return self.mgrid_value(&items);
                }
                if matches!(v, Value::Tile(_) | Value::Param(_)) {
                    // A subscript of a tile that a Python expression gives (`tiles[k][0:128,
                    // j]`, an item of a list of tiles): the tile's subscript, as if named.
                    let base = self.quote(&v, &value.span)?;
                    let sub = Expr {
                        kind: ExprKind::Subscript {
                            value: Box::new(base),
                            indices: indices.clone(),
                        },
                        span: e.span.clone(),
                    };
                    return self.eval_traced(&sub);
                }
                let key = if indices.len() == 1 {
                    self.eval_index(&indices[0])?
                } else {
                    let mut items = Vec::new();
                    for ix in indices {
                        items.push(self.eval_index(ix)?);
                    }
                    Value::tuple(items)
                };
                self.getitem(&v, &key, e)
            }
            ExprKind::Tuple(items) => Some(Value::tuple(self.eval_items(items)?)),
            ExprKind::List(items) => Some(Value::list(self.eval_items(items)?)),
            ExprKind::Dict(items) => {
                let mut out = Vec::new();
                for (k, v) in items {
                    let k = self.eval(k)?;
                    let v = self.eval(v)?;
                    out.retain(|(k2, _): &(Value, Value)| k.py_eq(k2) != Some(true));
                    out.push((k, v));
                }
                Some(Value::py(Py::Dict(RefCell::new(out))))
            }
            ExprKind::Starred(_) => {
                self.unsupported_py("`*` outside a call, a tuple or a list".into(), &e.span)
            }
            ExprKind::IfExp { test, body, orelse } => {
                let t = self.eval(test)?;
                if self.truthy(&t, test)? {
                    self.eval(body)
                } else {
                    self.eval(orelse)
                }
            }
            ExprKind::ListComp { elt, gens } => {
                let mut out = Vec::new();
                self.scopes.push(Default::default());
                let ok = self.comprehension(elt, gens, &mut out);
                self.scopes.pop();
                ok.map(|_| Value::list(out))
            }
            ExprKind::Lambda { params, body } => {
                let def = ast::Kernel {
                    name: ast::Ident {
                        name: "<lambda>".into(),
                        span: e.span.clone(),
                    },
                    decorators: Vec::new(),
                    params: params.clone(),
                    body: vec![ast::Stmt {
                        kind: ast::StmtKind::Return(vec![(**body).clone()]),
                        span: body.span.clone(),
                    }],
                    span: e.span.clone(),
                };
                self.make_function(Rc::new(def))
            }
            ExprKind::Call { func, args, kwargs } => {
                let callee = self.eval(func)?;
                let mut pos = Vec::new();
                let mut spans = Vec::new();
                for a in args {
                    if let ExprKind::Starred(inner) = &a.kind {
                        let v = self.eval(inner)?;
                        let items = self.iterate(&v, inner)?;
                        spans.extend(std::iter::repeat_n(inner.span.clone(), items.len()));
                        pos.extend(items);
                    } else {
                        pos.push(self.eval(a)?);
                        spans.push(a.span.clone());
                    }
                }
                let mut kws = Vec::new();
                for k in kwargs {
                    kws.push((k.name.name.clone(), self.eval(&k.value)?, k.span.clone()));
                }
                self.call_value(&callee, pos, &spans, kws, e)
            }
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand)?;
                self.py_unary(*op, v, e)
            }
            ExprKind::Not(operand) => {
                let v = self.eval(operand)?;
                Some(Value::Bool(!self.truthy(&v, operand)?))
            }
            ExprKind::BoolOp { and, lhs, rhs } => {
                let a = self.eval(lhs)?;
                // Python's short circuit: the right operand is not evaluated when the left decides.
                if self.truthy(&a, lhs)? != *and {
                    return Some(a);
                }
                self.eval(rhs)
            }
            ExprKind::Binary {
                op: BinOp::MatMul, ..
            } => {
                self.refuse_matmul_operator(&e.span);
                None
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.eval(lhs)?;
                let b = self.eval(rhs)?;
                self.binary(*op, a, b, e, rhs)
            }
            ExprKind::Compare { op, lhs, rhs } => {
                let a = self.eval(lhs)?;
                let b = self.eval(rhs)?;
                // mask_guards.rs: a condition on hardware loop indices is a mask value.
                if let Some(m) = self.guard_value(*op, &a, &b, &e.span) {
                    return m;
                }
                self.compare(*op, &a, &b, e).map(Value::Bool)
            }
        }
    }

    /// Text for a value that has no compile-time value (a loop index, a tile) in an f-string.
    fn no_value(&mut self, v: &Value, at: &Expr) -> Option<String> {
        match v {
            Value::Int(a) if a.as_constant().is_none() => {
                if self.needs_value(a, at) {
                    return Some(String::new());
                }
                Some(self.show(a))
            }
            Value::Iv(axis) => Some(self.loop_data(*axis).iv.clone()),
            Value::Tile(_) | Value::Param(_) => Some("<tile>".into()),
            _ => None,
        }
    }

    fn eval_items(&mut self, items: &[Expr]) -> Option<Vec<Value>> {
        let mut out = Vec::new();
        for i in items {
            if let ExprKind::Starred(inner) = &i.kind {
                let v = self.eval(inner)?;
                out.extend(self.iterate(&v, inner)?);
            } else {
                out.push(self.eval(i)?);
            }
        }
        Some(out)
    }

    fn comprehension(
        &mut self,
        elt: &Expr,
        gens: &[ast::CompFor],
        out: &mut Vec<Value>,
    ) -> Option<()> {
        let Some((g, rest)) = gens.split_first() else {
            out.push(self.eval(elt)?);
            return Some(());
        };
        let it = self.eval(&g.iter)?;
        for item in self.iterate(&it, &g.iter)? {
            self.step(&g.iter.span)?;
            self.bind_target(&g.target, item)?;
            let mut keep = true;
            for c in &g.conds {
                let v = self.eval(c)?;
                if !self.truthy(&v, c)? {
                    keep = false;
                    break;
                }
            }
            if keep {
                self.comprehension(elt, rest, out)?;
            }
        }
        Some(())
    }

    fn eval_name(&mut self, n: &str, span: &Span) -> Option<Value> {
        if self.find(n).is_none() {
            if BUILTINS.contains(&n) {
                return Some(Value::py(Py::Builtin(builtin(n))));
            }
            match n {
                "nl" | "nisa" | "math" | "np" => return Some(Value::py(Py::Module(n.into()))),
                "__name__" => return Some(Value::str("__nkc__")),
                _ => {}
            }
        }
        if n == "nl" || n == "nisa" {
            // The reserved module names are never bound; `lookup` would call them no value.
            return Some(Value::py(Py::Module(n.into())));
        }
        match self.lookup(n, span) {
            Value::Error => None,
            Value::Iv(axis) => Some(Value::Int(AffineExpr::iv(axis))),
            v => Some(v),
        }
    }

    fn eval_index(&mut self, ix: &Index) -> Option<Value> {
        match ix {
            Index::Expr(e) => self.eval(e),
            Index::Slice { lo, hi, step, .. } => {
                let part = |this: &mut Self, e: Option<&Expr>| match e {
                    Some(e) => this.eval(e),
                    None => Some(Value::None),
                };
                let a = part(self, lo.as_ref())?;
                let b = part(self, hi.as_ref())?;
                let c = part(self, step.as_deref())?;
                Some(Value::py(Py::Slice(a, b, c)))
            }
        }
    }

    /// The integer value of `v` when it has one; a loop index here is reported as needing one.
    pub(crate) fn concrete_int(&mut self, v: &Value, at: &Expr) -> Option<i64> {
        match v {
            Value::Int(a) => match a.as_constant() {
                Some(c) => Some(c),
                None => {
                    self.needs_value(a, at);
                    None
                }
            },
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// Python needs the value of an integer that depends on hardware loop indices: while trying
    /// a `range` loop as a hardware loop, or running `nl.affine_range` / `nl.sequential_range`
    /// loops of every index it names, this asks for the loop to be unrolled; otherwise it is a
    /// diagnostic saying what to write. Returns true when it was reported or deferred.
    pub(crate) fn needs_value(&mut self, a: &AffineExpr, at: &Expr) -> bool {
        let axes: Vec<penguin::Axis> = a.terms().iter().map(|(x, _)| *x).collect();
        // A `range` loop being tried, or an `nl.affine_range` / `nl.sequential_range` loop
        // whose every index here may be unrolled: since NKI 0.7 these iterate as Python's
        // `range`, so the value exists per iteration and the loop is traced once per index.
        let div_soft = !axes.is_empty() && axes.iter().all(|x| self.div_soft_axes.contains(x));
        if axes.iter().any(|x| self.soft_axes.contains(x)) || div_soft {
            self.need_unroll = true;
            self.stopped = true;
            return true;
        }
        let Some(&axis) = axes.first() else {
            return false;
        };
        let l = self.loop_data(axis);
        let (iv, kind) = (l.iv.clone(), l.kind);
        let shown = self.show(a);
        let range = match kind {
            penguin::LoopKind::Sequential => "nl.sequential_range",
            penguin::LoopKind::Range => "range",
            _ => "nl.affine_range",
        };
        self.raise(
            codes::LOOP_INDEX_VALUE,
            format!("`{shown}` has no value at compile time: `{iv}` is the index of a `{range}` loop, which runs on the device"),
            &at.span,
        );
        if let Some(last) = self.errors.last_mut() {
            last.notes.push(format!(
                "help: to select elements by the index, write a mask: `mask=({iv} * 128 + i_p < n)`; to run Python for each value of `{iv}`, iterate `nl.static_range(...)` instead"
            ));
        }
        true
    }

    /// Whether `v` is an HBM tensor (a parameter, or an `nl.ndarray` in HBM): while NKI traces
    /// the kernel it is a handle, whose truth is Python's for any object, true; an on-chip tile's
    /// is asked of values the device computes, which nkc refuses.
    pub(crate) fn is_hbm_handle(&self, v: &Value) -> bool {
        match v {
            Value::Param(_) => true,
            Value::Tile(t) => self.tensor(t.tensor).memory == penguin::Memory::Hbm,
            _ => false,
        }
    }

    /// Whether the condition `e` is a name bound to an HBM tensor ([`Self::is_hbm_handle`]),
    /// possibly under `not`: a compile-time truth although the name is traced.
    pub(crate) fn names_hbm_handle(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(n) => self.find(n).is_some_and(|b| self.is_hbm_handle(&b.value)),
            ExprKind::Not(x) => self.names_hbm_handle(x),
            _ => false,
        }
    }

    /// Python's truth value of `v` (the expression `at` gave it).
    pub(crate) fn truthy(&mut self, v: &Value, at: &Expr) -> Option<bool> {
        Some(match v {
            Value::Int(a) => match a.as_constant() {
                Some(c) => c != 0,
                None => {
                    self.needs_value(a, at);
                    return None;
                }
            },
            Value::Iv(axis) => {
                let a = AffineExpr::iv(*axis);
                self.needs_value(&a, at);
                return None;
            }
            Value::Float(x) => *x != 0.0,
            Value::Bool(b) => *b,
            Value::None => false,
            Value::Mask(p) if p.iter().all(|p| p.bounds.is_empty()) => {
                self.guard_condition(p, at);
                return None;
            }
            // An HBM tensor is a handle while NKI traces: a Python object, true (`x if bias
            // else y` asks whether the optional parameter `bias` was given).
            v if self.is_hbm_handle(v) => true,
            Value::Tile(_) | Value::Param(_) | Value::Vec(_) | Value::Mask(_) => {
                self.error(CheckError::TileCondition {
                    what: "if".into(),
                    at: at.span.clone(),
                });
                self.stopped = true;
                return None;
            }
            Value::Error => return None,
            Value::Py(p) => match &**p {
                Py::Str(s) => !s.is_empty(),
                Py::Tuple(v) => !v.is_empty(),
                Py::List(v) => !v.borrow().is_empty(),
                Py::Dict(v) => !v.borrow().is_empty(),
                Py::Range(a, b, c) => range_len(*a, *b, *c) > 0,
                _ => true,
            },
        })
    }

    /// The items `for x in v` visits.
    pub(crate) fn iterate(&mut self, v: &Value, at: &Expr) -> Option<Vec<Value>> {
        if let Some(items) = v.seq_items() {
            return Some(items);
        }
        match v {
            Value::Py(p) => match &**p {
                Py::Range(a, b, c) => {
                    if range_len(*a, *b, *c) > super::MAX_STEPS as i64 {
                        self.limit(at, "a range this long");
                        return None;
                    }
                    Some(range_items(*a, *b, *c).map(Value::int).collect())
                }
                Py::Str(s) => Some(s.chars().map(|c| Value::str(c.to_string())).collect()),
                Py::Dict(d) => Some(d.borrow().iter().map(|(k, _)| k.clone()).collect()),
                Py::Grid(g) => Some(g.iter().cloned().map(Value::Vec).collect()),
                _ => {
                    self.type_error(format!("a `{}` is not iterable", v.type_name()), &at.span);
                    None
                }
            },
            Value::Error => None,
            Value::Int(a) if a.as_constant().is_none() => {
                self.needs_value(a, at);
                None
            }
            _ => {
                self.type_error(format!("a `{}` is not iterable", v.type_name()), &at.span);
                None
            }
        }
    }

    /// The current scope's Python values of an unrolled loop's or comprehension's target.
    pub(crate) fn bind_target(&mut self, t: &ast::Target, v: Value) -> Option<()> {
        match t {
            ast::Target::Name(id) => {
                self.bind_value(id, v);
                Some(())
            }
            ast::Target::Tuple { names, span } => {
                let targets: Vec<ast::Target> =
                    names.iter().cloned().map(ast::Target::Name).collect();
                self.unpack_value(&targets, v, span)
            }
            ast::Target::Seq { items, span } => self.unpack_value(items, v, span),
            ast::Target::Starred(id) => {
                self.type_error(
                    "a starred target must be in a tuple or a list".into(),
                    &id.span,
                );
                None
            }
            ast::Target::Attribute { value, attr, span } => self.assign_attr(value, attr, v, span),
            ast::Target::Subscript {
                base,
                indices,
                span,
            } => {
                let container = self.eval_name(&base.name, &base.span)?;
                let key = if indices.len() == 1 {
                    self.eval_index(&indices[0])?
                } else {
                    let mut items = Vec::new();
                    for ix in indices {
                        items.push(self.eval_index(ix)?);
                    }
                    Value::tuple(items)
                };
                self.setitem(&container, key, v, span)
            }
        }
    }

    /// `a, *b, c = v`.
    fn unpack_value(&mut self, targets: &[ast::Target], v: Value, span: &Span) -> Option<()> {
        let at = Expr {
            kind: ExprKind::Error,
            span: span.clone(),
        };
        let items = self.iterate(&v, &at)?;
        let star = targets
            .iter()
            .position(|t| matches!(t, ast::Target::Starred(_)));
        let fixed = targets.len() - usize::from(star.is_some());
        if items.len() < fixed || (star.is_none() && items.len() != fixed) {
            self.error(CheckError::UnpackCount {
                names: targets.len(),
                values: items.len(),
                at: span.clone(),
            });
            self.stopped = true;
            return None;
        }
        let mut k = 0;
        for (i, t) in targets.iter().enumerate() {
            if Some(i) == star {
                let n = items.len() - fixed;
                let rest = items[k..k + n].to_vec();
                if let ast::Target::Starred(id) = t {
                    self.bind_value(id, Value::list(rest));
                }
                k += n;
            } else {
                self.bind_target(t, items[k].clone())?;
                k += 1;
            }
        }
        Some(())
    }

    /// An evaluation limit reached: reported, and evaluation stops.
    pub(crate) fn limit(&mut self, at: &Expr, what: &str) {
        self.raise(
            codes::EVAL_LIMIT,
            format!(
                "{what} exceeds nkc's limit of {} evaluation steps",
                super::MAX_STEPS
            ),
            &at.span,
        );
    }
}

/// The static name of a builtin.
fn builtin(n: &str) -> &'static str {
    BUILTINS
        .iter()
        .find(|b| **b == n)
        .copied()
        .unwrap_or("print")
}

/// The stem of a temporary's name: the operation it holds (`_exp3`).
fn temp_stem(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Call { func, .. } => match &func.kind {
            ExprKind::Attribute { attr, .. } => attr.name.clone(),
            ExprKind::Name(n) => n.clone(),
            _ => "tmp".into(),
        },
        _ => "tmp".into(),
    }
}
