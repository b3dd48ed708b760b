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
//! Invariants: `None` from an evaluation means a diagnostic was reported (or the operand was an
//! error value already reported); a Python error (failed lookup, wrong types, division by zero)
//! stops the kernel's evaluation (`Checker::stopped`), as the exception would in Python.

use super::comptime::{tile_size, Const};
use super::error::CheckError;
use super::pyvalue::{format_spec, range_items, range_len, Py};
use super::{Checker, Value};
use crate::ast::{self, BinOp, CmpOp, Expr, ExprKind, FPart, Index, Span, UnaryOp};
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

/// The NeuronCore generation `nisa.get_nc_version()` answers: nkc models one NeuronCore-v2-like
/// core (`nisa.nc_version.gen2`).
pub(crate) const NC_VERSION: i64 = 2;

/// What a traced expression in a boolean context is called in messages.
pub(crate) fn module_of_path(path: &[String]) -> Value {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let strip = |p: &[&str]| -> Vec<String> {
        let p = if p.first() == Some(&"neuronxcc") {
            &p[1..]
        } else {
            p
        };
        p.iter().map(|s| s.to_string()).collect()
    };
    let p = strip(&p);
    let p: Vec<&str> = p.iter().map(String::as_str).collect();
    let module = match p.as_slice() {
        ["nki"] => "nki",
        ["nki", "language"] => "nl",
        ["nki", "isa"] => "nisa",
        ["nki", "typing"] => "nt",
        ["numpy"] => "np",
        ["math"] => "math",
        ["functools"] => "functools",
        ["operator"] => "operator",
        ["nki", "language", name] => return Value::py(Py::Ref("nl", name.to_string())),
        ["nki", "isa", name] => return Value::py(Py::Ref("nisa", name.to_string())),
        ["nki", "typing", name] => return Value::py(Py::Ref("nt", name.to_string())),
        ["nki", name] => {
            return module_attr("nki", name).unwrap_or(Value::py(Py::Ref("nki", name.to_string())))
        }
        ["math", name] => return module_attr("math", name).unwrap_or(Value::Error),
        ["numpy", name] => return module_attr("np", name).unwrap_or(Value::Error),
        [m @ ("functools" | "operator"), name] => {
            return module_attr(m, name).unwrap_or_else(|| Value::py(Py::Module(path.join("."))))
        }
        _ => return Value::py(Py::Module(path.join("."))),
    };
    Value::py(Py::Module(module.to_string()))
}

/// `module.name` for the modules nkc knows.
pub(crate) fn module_attr(module: &str, name: &str) -> Option<Value> {
    Some(match module {
        "nl" => Value::py(Py::Ref("nl", name.to_string())),
        "nisa" => Value::py(Py::Ref("nisa", name.to_string())),
        "nt" => Value::py(Py::Ref("nt", name.to_string())),
        "nki" => match name {
            "language" => Value::py(Py::Module("nl".into())),
            "isa" => Value::py(Py::Module("nisa".into())),
            "typing" => Value::py(Py::Module("nt".into())),
            _ => Value::py(Py::Ref("nki", name.to_string())),
        },
        // numpy's dtypes and elementwise functions are NKI's of the same name.
        "np" => match name {
            "newaxis" => Value::None,
            "pi" => Value::Float(std::f64::consts::PI),
            "e" => Value::Float(std::f64::consts::E),
            "inf" => Value::Float(f64::INFINITY),
            "prod" => Value::py(Py::Builtin("np.prod")),
            // np_array.rs: numpy arrays of compile-time numbers, not index vectors.
            "arange" => Value::py(Py::Builtin("np.arange")),
            "array" | "asarray" => Value::py(Py::Builtin("np.array")),
            // np_consts.rs: two-dimensional arrays, for `nl.shared_constant`.
            "zeros" => Value::py(Py::Builtin("np.zeros")),
            "ones" => Value::py(Py::Builtin("np.ones")),
            "full" => Value::py(Py::Builtin("np.full")),
            "identity" => Value::py(Py::Builtin("np.identity")),
            "eye" => Value::py(Py::Builtin("np.eye")),
            "tri" => Value::py(Py::Builtin("np.tri")),
            _ => Value::py(Py::Ref("nl", name.to_string())),
        },
        "math" => match name {
            "pi" => Value::Float(std::f64::consts::PI),
            "e" => Value::Float(std::f64::consts::E),
            "inf" => Value::Float(f64::INFINITY),
            "ceil" => Value::py(Py::Builtin("math.ceil")),
            "floor" => Value::py(Py::Builtin("math.floor")),
            "sqrt" => Value::py(Py::Builtin("math.sqrt")),
            "exp" => Value::py(Py::Builtin("math.exp")),
            "log" => Value::py(Py::Builtin("math.log")),
            "log2" => Value::py(Py::Builtin("math.log2")),
            "prod" => Value::py(Py::Builtin("np.prod")),
            "gcd" => Value::py(Py::Builtin("math.gcd")),
            "isclose" => Value::py(Py::Builtin("math.isclose")),
            "trunc" => Value::py(Py::Builtin("int")),
            _ => return None,
        },
        // functools.rs
        "functools" => return super::functools::functools_attr(name),
        "operator" => return super::functools::operator_attr(name),
        _ => return None,
    })
}

impl Checker<'_> {
    /// Reports a Python error and stops the kernel's evaluation.
    pub(crate) fn raise(&mut self, code: &'static str, message: String, at: &Span) {
        self.error(Error::new(code, message, at.clone()));
        self.stopped = true;
    }

    /// Python's `ZeroDivisionError`, with the code of a division by zero (E0121); stops.
    fn division_by_zero(&mut self, at: &Span) {
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

    /// `v.attr`.
    pub(crate) fn attribute(&mut self, v: &Value, attr: &ast::Ident, _e: &Expr) -> Option<Value> {
        let name = attr.name.as_str();
        match v {
            Value::Tile(t) => match name {
                "shape" => {
                    let dims = self.logical_dims(t).cloned().unwrap_or(t.size.to_vec());
                    Some(Value::tuple(
                        dims.into_iter().map(|d| Value::int(d as i64)).collect(),
                    ))
                }
                "ndim" => {
                    let n = self.logical_dims(t).map_or(2, Vec::len);
                    Some(Value::int(n as i64))
                }
                "dtype" => {
                    let d = self.tensor(t.tensor).dtype;
                    Some(Value::py(Py::Ref("nl", dtype_name(d).to_string())))
                }
                _ => Some(Value::py(Py::Method(v.clone(), name.to_string()))),
            },
            Value::Param(t) => {
                let whole = super::TileVal::whole(*t, self.tensor(*t).shape);
                self.attribute(&Value::Tile(whole), attr, _e)
            }
            Value::Float(_) | Value::Int(_) | Value::Bool(_) => match name {
                "real" => Some(v.clone()),
                _ => Some(Value::py(Py::Method(v.clone(), name.to_string()))),
            },
            Value::Py(p) => match &**p {
                Py::Module(m) => match module_attr(m, name) {
                    Some(v) => Some(v),
                    None => {
                        self.unknown_module_attrs += 1;
                        self.type_error(
                            format!("module `{m}` has no attribute `{name}` that nkc knows"),
                            &attr.span,
                        )
                    }
                },
                // `nisa.nc_version.gen3`: the generation's number, to compare with
                // `nisa.get_nc_version()`.
                Py::Ref("nisa", nv) if nv == "nc_version" => {
                    match name.strip_prefix("gen").and_then(|g| g.parse::<i64>().ok()) {
                        Some(g) => Some(Value::int(g)),
                        None => self.no_attr(v, name, &attr.span),
                    }
                }
                Py::Ref("nl", ts) if ts == "tile_size" => match tile_size(name) {
                    Some(v) => Some(Value::int(v)),
                    None => {
                        self.error(CheckError::UnknownTileSize {
                            name: name.to_string(),
                            at: attr.span.clone(),
                        });
                        None
                    }
                },
                // `nl.fp32.min`: the dtype's least (or greatest) finite value.
                Py::Ref("nl", d) if dtype_limit(d, name).is_some() => dtype_limit(d, name),
                Py::Ref(m, n) => Some(Value::py(Py::Ref(m, format!("{n}.{name}")))),
                Py::Slice(a, b, c) => match name {
                    "start" => Some(a.clone()),
                    "stop" => Some(b.clone()),
                    "step" => Some(c.clone()),
                    _ => self.no_attr(v, name, &attr.span),
                },
                Py::Range(a, b, c) => match name {
                    "start" => Some(Value::int(*a)),
                    "stop" => Some(Value::int(*b)),
                    "step" => Some(Value::int(*c)),
                    _ => self.no_attr(v, name, &attr.span),
                },
                Py::Func(f) if name == "__name__" => Some(Value::str(f.def.name.name.clone())),
                // classes.rs: attributes of user classes and their instances.
                Py::Class(_) | Py::Instance(_) => self.object_attr(v, name, &attr.span),
                Py::Grid(g) => {
                    let axis = ["p", "x", "y", "z"].iter().position(|f| *f == name);
                    match axis.and_then(|a| g.get(a)) {
                        Some(iv) => Some(Value::Vec(iv.clone())),
                        None => self.type_error(
                            format!(
                                "an `nl.mgrid` of {} axes has no field `{name}` (its fields are {})",
                                g.len(),
                                ["`.p`", "`.x`", "`.y`", "`.z`"][..g.len().min(4)].join(", ")
                            ),
                            &attr.span,
                        ),
                    }
                }
                Py::Str(_) | Py::List(_) | Py::Dict(_) | Py::Tuple(_) => {
                    Some(Value::py(Py::Method(v.clone(), name.to_string())))
                }
                Py::Array2(a) => self.array2_attr(v, a, name),
                Py::Array(items) => match name {
                    "shape" => Some(Value::tuple(vec![Value::int(items.len() as i64)])),
                    "size" => Some(Value::int(items.len() as i64)),
                    "ndim" => Some(Value::int(1)),
                    _ => Some(Value::py(Py::Method(v.clone(), name.to_string()))),
                },
                _ => self.no_attr(v, name, &attr.span),
            },
            Value::Error => None,
            _ => self.no_attr(v, name, &attr.span),
        }
    }

    fn no_attr(&mut self, v: &Value, name: &str, at: &Span) -> Option<Value> {
        self.type_error(
            format!("a `{}` has no attribute `{name}`", v.type_name()),
            at,
        )
    }

    /// `v[key]` of a Python container.
    pub(crate) fn getitem(&mut self, v: &Value, key: &Value, e: &Expr) -> Option<Value> {
        let at = &e.span;
        if let Value::Py(p) = v {
            match &**p {
                Py::Tuple(_) | Py::List(_) | Py::Str(_) | Py::Range(..) | Py::Array(_) => {
                    let items: Vec<Value> = match &**p {
                        Py::Str(s) => s.chars().map(|c| Value::str(c.to_string())).collect(),
                        Py::Range(a, b, c) => range_items(*a, *b, *c).map(Value::int).collect(),
                        _ => v.seq_items().unwrap_or_default(),
                    };
                    let rebuild = |items: Vec<Value>| match &**p {
                        Py::List(_) => Value::list(items),
                        Py::Array(_) => Value::array(items),
                        Py::Str(_) => {
                            Value::str(items.iter().map(Value::to_str).collect::<String>())
                        }
                        _ => Value::tuple(items),
                    };
                    if let Some(Py::Slice(a, b, c)) = key.as_py() {
                        let idx = self.slice_indices(a, b, c, items.len() as i64, at)?;
                        return Some(rebuild(idx.into_iter().map(|i| items[i].clone()).collect()));
                    }
                    if self.unroll_for_index(key) {
                        return None;
                    }
                    let Some(k) = self.concrete_int(key, e) else {
                        return self.type_error(
                            format!(
                                "a `{}` index must be an integer, not a `{}`",
                                v.type_name(),
                                key.type_name()
                            ),
                            at,
                        );
                    };
                    let n = items.len() as i64;
                    let i = if k < 0 { k + n } else { k };
                    if !(0..n).contains(&i) {
                        self.raise(
                            codes::PYTHON_ERROR,
                            format!(
                                "index {k} is out of range for a `{}` of length {n}",
                                v.type_name()
                            ),
                            at,
                        );
                        return None;
                    }
                    return Some(items[i as usize].clone());
                }
                Py::Dict(d) => {
                    let found = d
                        .borrow()
                        .iter()
                        .find(|(k, _)| k.py_eq(key) == Some(true))
                        .map(|(_, v)| v.clone());
                    return match found {
                        Some(v) => Some(v),
                        None => {
                            self.raise(
                                codes::PYTHON_ERROR,
                                format!("key {} is not in the dict", key.repr()),
                                at,
                            );
                            None
                        }
                    };
                }
                // `nl.par_dim[...]`-style type subscripts, `nt.tensor[...]`: hints.
                Py::Ref(..) => return Some(v.clone()),
                _ => {}
            }
        }
        if matches!(v, Value::Error) {
            return None;
        }
        self.type_error(format!("a `{}` cannot be indexed", v.type_name()), at)
    }

    /// The positions `[a:b:c]` selects in a sequence of `n` items.
    fn slice_indices(
        &mut self,
        a: &Value,
        b: &Value,
        c: &Value,
        n: i64,
        at: &Span,
    ) -> Option<Vec<usize>> {
        let part = |this: &mut Self, v: &Value| -> Option<Option<i64>> {
            match v {
                Value::None => Some(None),
                _ => match v.as_int() {
                    Some(i) => Some(Some(i)),
                    None => {
                        this.type_error("slice bounds must be integers".into(), at);
                        None
                    }
                },
            }
        };
        let (a, b, c) = (part(self, a)?, part(self, b)?, part(self, c)?);
        let c = c.unwrap_or(1);
        if c == 0 {
            self.type_error("slice step cannot be zero".into(), at);
            return None;
        }
        let norm = |x: i64, lo: i64, hi: i64| {
            let x = if x < 0 { x + n } else { x };
            x.clamp(lo, hi)
        };
        let (start, stop) = if c > 0 {
            (
                a.map_or(0, |x| norm(x, 0, n)),
                b.map_or(n, |x| norm(x, 0, n)),
            )
        } else {
            (
                a.map_or(n - 1, |x| norm(x, -1, n - 1)),
                b.map_or(-1, |x| norm(x, -1, n - 1)),
            )
        };
        Some(range_items(start, stop, c).map(|i| i as usize).collect())
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
    /// a `range` loop as a hardware loop this asks for it to be unrolled; otherwise it is a
    /// diagnostic saying what to write. Returns true when it was reported or deferred.
    pub(crate) fn needs_value(&mut self, a: &AffineExpr, at: &Expr) -> bool {
        let axes: Vec<penguin::Axis> = a.terms().iter().map(|(x, _)| *x).collect();
        if axes.iter().any(|x| self.soft_axes.contains(x)) {
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

    fn py_unary(&mut self, op: UnaryOp, v: Value, e: &Expr) -> Option<Value> {
        if let Some(Py::Array(items)) = v.as_py() {
            return match op {
                UnaryOp::Neg => self.array_neg(items, e),
                UnaryOp::Pos => Some(v.clone()),
                // numpy's `~` on an integer array: elementwise.
                UnaryOp::Invert => {
                    let items = items.clone();
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        out.push(self.py_unary(op, item, e)?);
                    }
                    Some(Value::py(Py::Array(out)))
                }
            };
        }
        match (op, &v) {
            (UnaryOp::Pos, Value::Int(_) | Value::Float(_)) => Some(v),
            (UnaryOp::Neg, Value::Float(x)) => Some(Value::Float(-x)),
            (UnaryOp::Neg | UnaryOp::Invert, Value::Int(a)) => {
                // `-a` is `-1 * a`, `~a` is `-1 * a - 1`.
                let k = if op == UnaryOp::Neg { 0 } else { 1 };
                match super::arith::lin(a, -1, &AffineExpr::constant(-1), k) {
                    Some(r) => Some(Value::Int(r)),
                    None => {
                        self.error(CheckError::ConstOverflow { at: e.span.clone() });
                        None
                    }
                }
            }
            (_, Value::Bool(b)) => {
                let i = i64::from(*b);
                Some(Value::int(match op {
                    UnaryOp::Neg => -i,
                    UnaryOp::Pos => i,
                    UnaryOp::Invert => !i,
                }))
            }
            _ => self.type_error(
                format!(
                    "bad operand type for unary `{}`: `{}`",
                    op.symbol(),
                    v.type_name()
                ),
                &e.span,
            ),
        }
    }

    /// `a @ b`, evaluated: E0016 at the operator (the expression's span is the `@`'s), as when
    /// the parser refused it; it parses only so that the Python beside a kernel parses.
    pub(crate) fn refuse_matmul_operator(&mut self, at: &Span) {
        let err = crate::syntax_error::SyntaxError::Unsupported {
            at: at.clone(),
            op: "@".to_string(),
        };
        self.error(vocab::Diagnostic::from(err));
    }

    /// `a op b` on Python values.
    pub(crate) fn binary(
        &mut self,
        op: BinOp,
        a: Value,
        b: Value,
        e: &Expr,
        rhs: &Expr,
    ) -> Option<Value> {
        // np_array.rs: numpy arrays, elementwise.
        if let Some(r) = self.array_binary(op, &a, &b, e, rhs) {
            return r;
        }
        // Masks joined with `&` (a bool keeps all, or nothing).
        if op == BinOp::BitAnd && (matches!(a, Value::Mask(_)) || matches!(b, Value::Mask(_))) {
            let pieces = |v: &Value| match v {
                Value::Mask(p) => Some(p.clone()),
                Value::Bool(true) => Some(vec![super::index_vec::MaskPiece::default()]),
                Value::Bool(false) => Some(Vec::new()),
                _ => None,
            };
            if let (Some(x), Some(y)) = (pieces(&a), pieces(&b)) {
                return Some(Value::Mask(super::index_vec::mask_and(&x, &y)));
            }
        }
        // Sequences: `+` concatenates, `*` repeats, `%` formats a string.
        if let (Some(x), Some(y)) = (a.as_py(), b.as_py()) {
            match (x, y, op) {
                (Py::Str(s), Py::Str(t), BinOp::Add) => return Some(Value::str(format!("{s}{t}"))),
                (Py::Tuple(s), Py::Tuple(t), BinOp::Add) => {
                    return Some(Value::tuple(s.iter().chain(t).cloned().collect()))
                }
                (Py::List(s), Py::List(t), BinOp::Add) => {
                    let v: Vec<Value> = s
                        .borrow()
                        .iter()
                        .chain(t.borrow().iter())
                        .cloned()
                        .collect();
                    return Some(Value::list(v));
                }
                _ => {}
            }
        }
        if op == BinOp::Mul {
            let (seq, n) = match (a.as_py(), b.as_int(), b.as_py(), a.as_int()) {
                (Some(_), Some(n), _, _) => (&a, n),
                (_, _, Some(_), Some(n)) => (&b, n),
                _ => (&a, -1),
            };
            if n >= 0 {
                if let Some(p) = seq.as_py() {
                    let n = n as usize;
                    if n.saturating_mul(seq.seq_items().map_or(1, |v| v.len()))
                        > super::MAX_STEPS as usize
                    {
                        self.limit(e, "a sequence this long");
                        return None;
                    }
                    match p {
                        Py::Str(s) => return Some(Value::str(s.repeat(n))),
                        Py::Tuple(v) => return Some(Value::tuple(repeat(v, n))),
                        Py::List(v) => return Some(Value::list(repeat(&v.borrow(), n))),
                        _ => {}
                    }
                }
            }
        }
        if op == BinOp::Mod {
            if let Some(Py::Str(fmt)) = a.as_py() {
                let args = b.seq_items().unwrap_or_else(|| vec![b.clone()]);
                return Some(Value::str(percent_format(fmt, &args)));
            }
        }
        // Integers, affine in loop indices.
        if let (Value::Int(x), Value::Int(y)) = (&a, &b) {
            return match op {
                BinOp::Div => {
                    let (Some(p), Some(q)) = (x.as_constant(), y.as_constant()) else {
                        let affine = if x.as_constant().is_none() { x } else { y };
                        self.needs_value(affine, e);
                        return None;
                    };
                    self.scalar(op, Const::Int(p), Const::Int(q), e, rhs)
                }
                BinOp::Pow | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                    let (Some(p), Some(q)) = (x.as_constant(), y.as_constant()) else {
                        let affine = if x.as_constant().is_none() { x } else { y };
                        self.needs_value(affine, e);
                        return None;
                    };
                    self.scalar(op, Const::Int(p), Const::Int(q), e, rhs)
                }
                BinOp::FloorDiv | BinOp::Mod if y.as_constant() == Some(0) => {
                    self.division_by_zero(&rhs.span);
                    None
                }
                _ => {
                    if matches!(op, BinOp::FloorDiv | BinOp::Mod | BinOp::BitAnd)
                        && (x.as_constant().is_none() || y.as_constant().is_none())
                        && (self.soft(x)
                            || self.soft(y)
                            || (op != BinOp::BitAnd && self.unroll_for_division(x, y)))
                    {
                        self.need_unroll = true;
                        self.stopped = true;
                        return None;
                    }
                    self.int_binary(op, x, y, &e.span, &rhs.span)
                        .map(Value::Int)
                }
            };
        }
        let num = |v: &Value| match v {
            Value::Int(x) => x.as_constant().map(Const::Int),
            Value::Float(f) => Some(Const::Float(*f)),
            Value::Bool(b) => Some(Const::Bool(*b)),
            _ => None,
        };
        match (num(&a), num(&b)) {
            (Some(x), Some(y)) => self.scalar(op, x, y, e, rhs),
            _ => {
                for v in [&a, &b] {
                    if let Value::Int(x) = v {
                        if x.as_constant().is_none() {
                            self.needs_value(x, e);
                            return None;
                        }
                    }
                }
                if matches!(a, Value::Error) || matches!(b, Value::Error) {
                    return None;
                }
                self.type_error(
                    format!(
                        "unsupported operand types for `{}`: `{}` and `{}`",
                        op.symbol(),
                        a.type_name(),
                        b.type_name()
                    ),
                    &e.span,
                )
            }
        }
    }

    /// A Python container indexed by the index of a loop being run that may be unrolled
    /// (`tiles[k]` in an `nl.affine_range(n)` loop, of the list its iterations built): asks for
    /// the unrolling and stops evaluation (true), as NKI's tracer gives each iteration its item.
    fn unroll_for_index(&mut self, key: &Value) -> bool {
        let axes: Vec<penguin::Axis> = match key {
            Value::Int(a) => a.terms().iter().map(|(x, _)| *x).collect(),
            Value::Iv(x) => vec![*x],
            _ => return false,
        };
        let soft = !axes.is_empty()
            && (axes.iter()).all(|x| self.soft_axes.contains(x) || self.div_soft_axes.contains(x));
        if soft {
            self.need_unroll = true;
            self.stopped = true;
        }
        soft
    }

    fn soft(&self, a: &AffineExpr) -> bool {
        a.terms().iter().any(|(x, _)| self.soft_axes.contains(x))
    }

    /// Arithmetic on two compile-time scalars, by the rules of `comptime`.
    fn scalar(&mut self, op: BinOp, a: Const, b: Const, e: &Expr, rhs: &Expr) -> Option<Value> {
        match op {
            BinOp::Pow => {
                return match (a, b) {
                    (Const::Int(x), Const::Int(y)) if y >= 0 => {
                        match u32::try_from(y).ok().and_then(|y| x.checked_pow(y)) {
                            Some(v) => Some(Value::int(v)),
                            None => {
                                self.error(CheckError::ConstOverflow { at: e.span.clone() });
                                None
                            }
                        }
                    }
                    _ => Some(Value::Float(a.as_f64().powf(b.as_f64()))),
                }
            }
            BinOp::BitOr | BinOp::BitXor => {
                let bits = |x: i64, y: i64| if op == BinOp::BitOr { x | y } else { x ^ y };
                return match (a, b) {
                    (Const::Bool(x), Const::Bool(y)) => {
                        Some(Value::Bool(bits(x as i64, y as i64) != 0))
                    }
                    (Const::Int(_) | Const::Bool(_), Const::Int(_) | Const::Bool(_)) => {
                        Some(Value::int(bits(a.as_f64() as i64, b.as_f64() as i64)))
                    }
                    _ => self.type_error(format!("`{}` of a float", op.symbol()), &e.span),
                };
            }
            BinOp::Shl | BinOp::Shr => {
                return match (a, b) {
                    (Const::Int(_) | Const::Bool(_), Const::Int(_) | Const::Bool(_)) => {
                        let (x, y) = (a.as_f64() as i64, b.as_f64() as i64);
                        if y < 0 {
                            return self.type_error(
                                format!("negative shift count `{y}` (Python's ValueError)"),
                                &rhs.span,
                            );
                        }
                        match super::arith::shift(op, x, y) {
                            Some(v) => Some(Value::int(v)),
                            None => {
                                self.error(CheckError::ConstOverflow { at: e.span.clone() });
                                None
                            }
                        }
                    }
                    _ => self.type_error(format!("`{}` of a float", op.symbol()), &e.span),
                };
            }
            _ => {}
        }
        if b.as_f64() == 0.0 && matches!(op, BinOp::Div | BinOp::FloorDiv | BinOp::Mod) {
            self.division_by_zero(&rhs.span);
            return None;
        }
        let before = self.errors.len();
        let r = self.const_binary(op, a, b, e, rhs);
        if self.errors.len() > before {
            self.stopped = true;
        }
        r.map(Const::value)
    }

    /// Python's comparison of two values.
    pub(crate) fn compare(&mut self, op: CmpOp, a: &Value, b: &Value, e: &Expr) -> Option<bool> {
        match op {
            CmpOp::In | CmpOp::NotIn => {
                let found = match b.as_py() {
                    Some(Py::Str(s)) => match a.as_py() {
                        Some(Py::Str(t)) => s.contains(t.as_str()),
                        _ => {
                            return self
                                .type_error("`in <str>` needs a string on its left".into(), &e.span)
                                .map(|_| false)
                        }
                    },
                    Some(Py::Dict(d)) => d.borrow().iter().any(|(k, _)| k.py_eq(a) == Some(true)),
                    _ => {
                        let items = self.iterate(b, e)?;
                        items.iter().any(|x| x.py_eq(a) == Some(true))
                    }
                };
                return Some(found == (op == CmpOp::In));
            }
            CmpOp::Is | CmpOp::IsNot | CmpOp::Eq | CmpOp::Ne => {
                let same = match a.py_eq(b) {
                    Some(s) => s,
                    None => {
                        for v in [a, b] {
                            if let Value::Int(x) = v {
                                if x.as_constant().is_none() {
                                    self.needs_value(x, e);
                                    return None;
                                }
                            }
                        }
                        false
                    }
                };
                return Some(same == matches!(op, CmpOp::Is | CmpOp::Eq));
            }
            _ => {}
        }
        for v in [a, b] {
            if let Value::Int(x) = v {
                if x.as_constant().is_none() {
                    self.needs_value(x, e);
                    return None;
                }
            }
        }
        if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
            if let (Some(p), Some(q)) = (a.as_int(), b.as_int()) {
                return Some(op.holds(p, q));
            }
            return Some(op.holds(x, y));
        }
        match (a.as_py(), b.as_py()) {
            (Some(Py::Str(s)), Some(Py::Str(t))) => Some(op.holds(s, t)),
            _ => match (a.seq_items(), b.seq_items()) {
                (Some(x), Some(y)) => {
                    // Lexicographic, as Python compares tuples.
                    for (p, q) in x.iter().zip(&y) {
                        if p.py_eq(q) != Some(true) {
                            return self.compare(op, p, q, e);
                        }
                    }
                    Some(op.holds(x.len(), y.len()))
                }
                _ => {
                    if matches!(a, Value::Error) || matches!(b, Value::Error) {
                        return None;
                    }
                    self.type_error(
                        format!(
                            "`{}` is not defined between a `{}` and a `{}`",
                            cmp_symbol(op),
                            a.type_name(),
                            b.type_name()
                        ),
                        &e.span,
                    )
                    .map(|_| false)
                }
            },
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

    /// `container[key] = v` for a list or a dict.
    pub(crate) fn setitem(
        &mut self,
        container: &Value,
        key: Value,
        v: Value,
        span: &Span,
    ) -> Option<()> {
        self.mutating(span)?;
        match container.as_py() {
            Some(Py::List(items)) => {
                let n = items.borrow().len() as i64;
                let Some(k) = key.as_int() else {
                    self.type_error("list indices must be integers".into(), span);
                    return None;
                };
                let i = if k < 0 { k + n } else { k };
                if !(0..n).contains(&i) {
                    self.raise(
                        codes::PYTHON_ERROR,
                        format!("list assignment index {k} out of range"),
                        span,
                    );
                    return None;
                }
                items.borrow_mut()[i as usize] = v;
                Some(())
            }
            Some(Py::Dict(d)) => {
                let mut d = d.borrow_mut();
                match d.iter_mut().find(|(k, _)| k.py_eq(&key) == Some(true)) {
                    Some(slot) => slot.1 = v,
                    None => d.push((key, v)),
                }
                Some(())
            }
            _ => {
                self.type_error(
                    format!(
                        "a `{}` does not support item assignment",
                        container.type_name()
                    ),
                    span,
                );
                None
            }
        }
    }

    /// Before a Python container is mutated: inside a `range` loop tried as a hardware loop, the
    /// loop is unrolled instead (its body would otherwise run once, not once per iteration).
    pub(crate) fn mutating(&mut self, _span: &Span) -> Option<()> {
        if !self.soft_axes.is_empty() {
            self.need_unroll = true;
            self.stopped = true;
            return None;
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

    /// Writes a compile-time value back as an expression of the core language, for the operation
    /// checks: numbers, booleans, strings, `None` and tuples as literals, NKI names as
    /// `nl.NAME`/`nisa.NAME`, tiles and loop indices as names bound to them.
    pub(crate) fn quote(&mut self, v: &Value, span: &Span) -> Option<Expr> {
        let mk = |kind| Expr {
            kind,
            span: span.clone(),
        };
        Some(match v {
            Value::Int(a) => match a.as_constant() {
                Some(c) => mk(ExprKind::Int(c)),
                None => {
                    let mut acc = mk(ExprKind::Int(a.constant_term()));
                    for &(axis, c) in a.terms() {
                        let name = self.iv_name(axis);
                        let term = mk(ExprKind::Binary {
                            op: BinOp::Mul,
                            lhs: Box::new(mk(ExprKind::Int(c))),
                            rhs: Box::new(mk(ExprKind::Name(name))),
                        });
                        acc = mk(ExprKind::Binary {
                            op: BinOp::Add,
                            lhs: Box::new(term),
                            rhs: Box::new(acc),
                        });
                    }
                    acc
                }
            },
            Value::Iv(axis) => {
                let name = self.iv_name(*axis);
                mk(ExprKind::Name(name))
            }
            Value::Float(x) => mk(ExprKind::Float(*x)),
            Value::Bool(b) => mk(ExprKind::Bool(*b)),
            Value::None => mk(ExprKind::None),
            Value::Tile(_) | Value::Param(_) | Value::Vec(_) | Value::Mask(_) => {
                self.temp_count += 1;
                let name = format!("_t{}", self.temp_count);
                let scope = self.scopes.last_mut().expect("a scope is always open");
                scope.insert(
                    name.clone(),
                    super::Bound {
                        value: v.clone(),
                        span: span.clone(),
                        leaked: false,
                    },
                );
                mk(ExprKind::Name(name))
            }
            Value::Error => return None,
            Value::Py(p) => match &**p {
                Py::Str(s) => mk(ExprKind::Str(s.clone())),
                Py::Tuple(_) | Py::List(_) => {
                    let items = v.seq_items().unwrap_or_default();
                    let mut out = Vec::new();
                    for i in &items {
                        out.push(self.quote(i, span)?);
                    }
                    mk(ExprKind::Tuple(out))
                }
                Py::Ellipsis => mk(ExprKind::Ellipsis),
                Py::Array2(_) => {
                    // `nl.shared_constant(np.identity(128))`: bound to a temporary name, which
                    // the operation reads back (`np_consts`).
                    self.temp_count += 1;
                    let name = format!("_t{}", self.temp_count);
                    let scope = self.scopes.last_mut().expect("a scope is always open");
                    scope.insert(
                        name.clone(),
                        super::Bound {
                            value: v.clone(),
                            span: span.clone(),
                            leaked: false,
                        },
                    );
                    mk(ExprKind::Name(name))
                }
                // alloc_api.rs: `nki.compiler.sbuf` as a buffer is `nl.sbuf`.
                Py::Ref("nki", n) if super::alloc_api::buffer_kind(n).is_some() => {
                    let a = super::pyvalue::AllocData {
                        memory: super::alloc_api::buffer_kind(n)?,
                        api: n.clone(),
                    };
                    return self.quote(&a.buffer_ref(), span);
                }
                Py::Ref(m, name) => {
                    let mut e = mk(ExprKind::Name(m.to_string()));
                    for part in name.split('.') {
                        e = mk(ExprKind::Attribute {
                            value: Box::new(e),
                            attr: ast::Ident {
                                name: part.to_string(),
                                span: span.clone(),
                            },
                        });
                    }
                    e
                }
                // alloc_api.rs: a buffer of the direct-allocation API is the memory it asks for.
                Py::Alloc(a) => return self.quote(&a.buffer_ref(), span),
                Py::Builtin(b) if b.starts_with("math.") => {
                    // `op=math.exp`: the activation function of that name.
                    let name = b.trim_start_matches("math.");
                    return self.quote(&Value::py(Py::Ref("nl", name.to_string())), span);
                }
                _ => {
                    self.type_error(
                        format!(
                            "a `{}` cannot be an operand of an NKI operation",
                            v.type_name()
                        ),
                        span,
                    );
                    return None;
                }
            },
        })
    }

    /// A name under which the loop index of `axis` can be written: its own, unless shadowed.
    fn iv_name(&mut self, axis: penguin::Axis) -> String {
        let iv = self.loop_data(axis).iv.clone();
        if matches!(self.find(&iv).map(|b| &b.value), Some(Value::Iv(a)) if *a == axis) {
            return iv;
        }
        let name = format!("_{iv}{}", axis.as_u32());
        let span = self.loop_data(axis).span.clone();
        let scope = self.scopes.last_mut().expect("a scope is always open");
        scope.insert(
            name.clone(),
            super::Bound {
                value: Value::Iv(axis),
                span,
                leaked: false,
            },
        );
        name
    }

    /// The expression the operation checks see for a traced expression: its Python parts
    /// evaluated and quoted, NKI aliases resolved (see the module doc).
    pub(crate) fn resid(&mut self, e: &Expr) -> Option<Expr> {
        if self.stopped {
            return None;
        }
        // A shape written with `nl.par_dim(n)` keeps the mark, which `tile_nd` reads: as a
        // tuple, a list, or a concatenation of displays (`[2] + [nl.par_dim(p), f]`).
        let displayed = par_dim_display(e);
        let e = displayed.as_ref().unwrap_or(e);
        if let ExprKind::Tuple(items) = &e.kind {
            if items
                .iter()
                .any(|i| super::comptime::par_dim_arg(i).is_some())
            {
                let mut out = Vec::new();
                for i in items {
                    out.push(match (&i.kind, super::comptime::par_dim_arg(i)) {
                        (ExprKind::Call { func, kwargs, .. }, Some(arg)) => Expr {
                            kind: ExprKind::Call {
                                func: func.clone(),
                                args: vec![self.resid(arg)?],
                                kwargs: kwargs.clone(),
                            },
                            span: i.span.clone(),
                        },
                        _ => self.resid(i)?,
                    });
                }
                return Some(Expr {
                    kind: ExprKind::Tuple(out),
                    span: e.span.clone(),
                });
            }
        }
        if !self.traced(e) {
            // A name whose value failed (already reported) stays a name: the operation checks
            // are silent about it and still check the other operands.
            if let ExprKind::Name(n) = &e.kind {
                if matches!(self.find(n).map(|b| &b.value), Some(Value::Error)) {
                    return Some(e.clone());
                }
            }
            // Keep the source form of names bound to non-tile values the checks read directly.
            let v = self.eval(e)?;
            return self.quote(&v, &e.span);
        }
        let mk = |kind| Expr {
            kind,
            span: e.span.clone(),
        };
        Some(match &e.kind {
            ExprKind::Name(_) => e.clone(),
            ExprKind::Call { func, args, kwargs } => {
                let nki_op = matches!(
                    self.peek_callee(func).as_ref().and_then(Value::as_py),
                    Some(Py::Ref(..))
                );
                let func = match self.peek_callee(func) {
                    Some(v) if matches!(v.as_py(), Some(Py::Ref(..))) => {
                        let mut q = self.quote(&v, &func.span)?;
                        // Diagnostics about the operation point at its name, as written.
                        if let (
                            ExprKind::Attribute { attr: written, .. },
                            ExprKind::Attribute { attr, .. },
                        ) = (&func.kind, &mut q.kind)
                        {
                            attr.span = written.span.clone();
                        }
                        q
                    }
                    Some(v) if matches!(v.as_py(), Some(Py::Builtin(_))) => (**func).clone(),
                    _ => match &func.kind {
                        ExprKind::Attribute { value, attr } => mk(ExprKind::Attribute {
                            value: Box::new(self.resid(value)?),
                            attr: attr.clone(),
                        }),
                        _ => (**func).clone(),
                    },
                };
                // Every operand is evaluated, so that an error in one (an undefined name) is
                // reported beside an operand that is already an error value.
                let mut a2 = Vec::new();
                let mut ok = true;
                for a in args {
                    if let ExprKind::Starred(inner) = &a.kind {
                        let v = self.eval(inner)?;
                        for item in self.iterate(&v, inner)? {
                            a2.push(self.quote(&item, &inner.span)?);
                        }
                    } else if let Some(r) = self.resid(a) {
                        a2.push(r);
                    } else {
                        ok = false;
                    }
                }
                let mut k2 = Vec::new();
                for k in kwargs {
                    let Some(value) = self.resid_kw(&k.name.name, &k.value) else {
                        ok = false;
                        continue;
                    };
                    // `bias=None`: NKI's operations take `None` for an optional argument left out.
                    if nki_op && value.kind == ExprKind::None {
                        continue;
                    }
                    k2.push(ast::Keyword {
                        name: k.name.clone(),
                        value,
                        span: k.span.clone(),
                    });
                }
                if !ok {
                    return None;
                }
                mk(ExprKind::Call {
                    func: Box::new(func),
                    args: a2,
                    kwargs: k2,
                })
            }
            ExprKind::Subscript { value, indices } => {
                let base = match self.peek_callee(value) {
                    Some(v) if matches!(v.as_py(), Some(Py::Ref(..))) => {
                        self.quote(&v, &value.span)?
                    }
                    _ => self.resid(value)?,
                };
                let mut out = Vec::new();
                for ix in indices {
                    match ix {
                        Index::Expr(x) if self.traced(x) => out.push(Index::Expr(self.resid(x)?)),
                        Index::Expr(x) => {
                            let v = self.eval(x)?;
                            match v.as_py() {
                                Some(Py::Slice(a, b, c)) => {
                                    let (a, b, c) = (a.clone(), b.clone(), c.clone());
                                    out.push(self.quote_slice(&a, &b, &c, &x.span)?)
                                }
                                Some(Py::Ellipsis) => out.push(Index::Expr(mk(ExprKind::Ellipsis))),
                                // `t[grid]`: one index per axis of the grid.
                                Some(Py::Grid(g)) => {
                                    for iv in g.clone() {
                                        let q = self.quote(&Value::Vec(iv), &x.span)?;
                                        out.push(Index::Expr(q));
                                    }
                                }
                                _ => out.push(Index::Expr(self.quote(&v, &x.span)?)),
                            }
                        }
                        Index::Slice { lo, hi, step, span } => {
                            let part =
                                |this: &mut Self, p: Option<&Expr>| -> Option<Option<Expr>> {
                                    match p {
                                        None => Some(None),
                                        Some(p) => this.resid(p).map(Some),
                                    }
                                };
                            let lo = part(self, lo.as_ref())?;
                            let hi = part(self, hi.as_ref())?;
                            let step = match step {
                                None => None,
                                Some(s) => {
                                    let v = self.eval(s)?;
                                    if v.as_int() == Some(1) || matches!(v, Value::None) {
                                        None
                                    } else {
                                        Some(Box::new(self.quote(&v, &s.span)?))
                                    }
                                }
                            };
                            out.push(Index::Slice {
                                lo,
                                hi,
                                step,
                                span: span.clone(),
                            });
                        }
                    }
                }
                let out = self.expand_ellipsis(&base, out);
                mk(ExprKind::Subscript {
                    value: Box::new(base),
                    indices: out,
                })
            }
            // `grid.p`: the index vector, under a name the checks read.
            ExprKind::Attribute { value, attr } if !self.traced(value) => {
                let base = self.eval(value)?;
                let v = self.attribute(&base, attr, e)?;
                return self.quote(&v, &e.span);
            }
            ExprKind::Attribute { value, attr } => mk(ExprKind::Attribute {
                value: Box::new(self.resid(value)?),
                attr: attr.clone(),
            }),
            ExprKind::Binary { op, lhs, rhs } => mk(ExprKind::Binary {
                op: *op,
                lhs: Box::new(self.resid(lhs)?),
                rhs: Box::new(self.resid(rhs)?),
            }),
            ExprKind::Compare { op, lhs, rhs } => mk(ExprKind::Compare {
                op: *op,
                lhs: Box::new(self.resid(lhs)?),
                rhs: Box::new(self.resid(rhs)?),
            }),
            ExprKind::BoolOp { and, lhs, rhs } => mk(ExprKind::BoolOp {
                and: *and,
                lhs: Box::new(self.resid(lhs)?),
                rhs: Box::new(self.resid(rhs)?),
            }),
            ExprKind::Unary { op, operand } => mk(ExprKind::Unary {
                op: *op,
                operand: Box::new(self.resid(operand)?),
            }),
            ExprKind::Not(operand) => mk(ExprKind::Not(Box::new(self.resid(operand)?))),
            ExprKind::Tuple(items) => {
                let mut out = Vec::new();
                for i in items {
                    out.push(self.resid(i)?);
                }
                mk(ExprKind::Tuple(out))
            }
            _ => e.clone(),
        })
    }

    /// A keyword argument of an operation: `num_stages="auto"` and the like stay as written when
    /// they are literals (the annotation checks read their form).
    fn resid_kw(&mut self, _name: &str, value: &Expr) -> Option<Expr> {
        match &value.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::None => Some(value.clone()),
            _ => self.resid(value),
        }
    }

    /// `lo:hi:step` from a `slice(...)` value.
    fn quote_slice(&mut self, a: &Value, b: &Value, c: &Value, span: &Span) -> Option<Index> {
        let part = |this: &mut Self, v: &Value| -> Option<Option<Expr>> {
            match v {
                Value::None => Some(None),
                _ => this.quote(v, span).map(Some),
            }
        };
        let lo = part(self, a)?;
        let hi = part(self, b)?;
        let step = if c.as_int() == Some(1) {
            None
        } else {
            part(self, c)?.map(Box::new)
        };
        Some(Index::Slice {
            lo,
            hi,
            step,
            span: span.clone(),
        })
    }

    /// `t[...]`: the ellipsis stands for as many whole axes as the tensor has left.
    fn expand_ellipsis(&mut self, base: &Expr, indices: Vec<Index>) -> Vec<Index> {
        let Some(pos) = indices
            .iter()
            .position(|i| matches!(i, Index::Expr(x) if x.kind == ExprKind::Ellipsis))
        else {
            return indices;
        };
        let rank = match &base.kind {
            ExprKind::Name(n) => match self.find(n).map(|b| b.value.clone()) {
                Some(Value::Tile(t)) => self.logical_dims(&t).map_or(2, Vec::len),
                Some(Value::Param(t)) => {
                    let whole = super::TileVal::whole(t, self.tensor(t).shape);
                    self.logical_dims(&whole).map_or(2, Vec::len)
                }
                _ => 2,
            },
            _ => 2,
        };
        let span = indices[pos].span();
        let fill = rank.saturating_sub(indices.len() - 1).max(1);
        let mut out = indices;
        out.splice(
            pos..=pos,
            (0..fill).map(|_| Index::Slice {
                lo: None,
                hi: None,
                step: None,
                span: span.clone(),
            }),
        );
        out
    }
}

/// `DTYPE.min` / `DTYPE.max` of an NKI (or numpy) dtype, as numpy's `finfo` / `iinfo` give them.
pub(super) fn dtype_limit(dtype: &str, which: &str) -> Option<Value> {
    if which == "itemsize" {
        // `np.dtype(dt).itemsize`: its bytes (direct-allocation kernels compute addresses).
        let bytes = match dtype {
            "fp32" | "float32" | "tfloat32" | "int32" | "uint32" => 4,
            "bfloat16" | "bf16" | "fp16" | "float16" | "int16" | "uint16" => 2,
            "int8" | "uint8" | "fp8_e4m3" | "fp8_e5m2" | "float8_e4m3" | "float8_e4m3fn"
            | "float8_e5m2" => 1,
            _ => return None,
        };
        return Some(Value::int(bytes));
    }
    let max = match dtype {
        "fp32" | "float32" | "tfloat32" => f64::from(f32::MAX),
        // bfloat16's largest finite value: (2 - 2^-7) · 2^127.
        "bfloat16" | "bf16" => 3.389_531_389_251_535_5e38,
        "fp16" | "float16" => 65504.0,
        "int32" => return int_limit(i64::from(i32::MIN), i64::from(i32::MAX), which),
        "int16" => return int_limit(i64::from(i16::MIN), i64::from(i16::MAX), which),
        "int8" => return int_limit(i64::from(i8::MIN), i64::from(i8::MAX), which),
        "uint8" => return int_limit(0, i64::from(u8::MAX), which),
        "uint16" => return int_limit(0, i64::from(u16::MAX), which),
        "uint32" => return int_limit(0, i64::from(u32::MAX), which),
        _ => return None,
    };
    // numpy's `finfo` fields: the machine epsilon, the least normal number, the width.
    let (eps, tiny, bits) = match dtype {
        "bfloat16" | "bf16" => (2f64.powi(-7), 2f64.powi(-126), 16),
        "fp16" | "float16" => (2f64.powi(-10), 2f64.powi(-14), 16),
        _ => (f64::from(f32::EPSILON), f64::from(f32::MIN_POSITIVE), 32),
    };
    match which {
        "max" => Some(Value::Float(max)),
        "min" => Some(Value::Float(-max)),
        "eps" => Some(Value::Float(eps)),
        "tiny" | "smallest_normal" => Some(Value::Float(tiny)),
        "bits" => Some(Value::int(bits)),
        _ => None,
    }
}

/// `nl.finfo(dtype)` / `np.finfo(dtype)` / `np.iinfo(dtype)`: the dtype itself, whose `.min`,
/// `.max` (and `finfo`'s `.eps`, `.tiny`, `.bits`) are its limits ([`dtype_limit`]); `None` when
/// the argument is not a dtype nkc knows the limits of.
pub(crate) fn type_info(arg: &Value) -> Option<Value> {
    let name = match arg.as_py()? {
        Py::Ref("nl", d) => d.clone(),
        Py::Str(s) => s.to_string(),
        _ => return None,
    };
    dtype_limit(&name, "max")?;
    Some(Value::py(Py::Ref("nl", name)))
}

fn int_limit(lo: i64, hi: i64, which: &str) -> Option<Value> {
    match which {
        "max" => Some(Value::int(hi)),
        "min" => Some(Value::int(lo)),
        _ => None,
    }
}

fn repeat(v: &[Value], n: usize) -> Vec<Value> {
    let mut out = Vec::with_capacity(v.len() * n);
    for _ in 0..n {
        out.extend(v.iter().cloned());
    }
    out
}

fn cmp_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Gt => ">",
        CmpOp::Le => "<=",
        CmpOp::Ge => ">=",
        CmpOp::Is => "is",
        CmpOp::IsNot => "is not",
        CmpOp::In => "in",
        CmpOp::NotIn => "not in",
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

/// `nl.float32` etc.: the NKI name of a dtype.
pub(crate) fn dtype_name(d: penguin::DType) -> &'static str {
    match d {
        penguin::DType::F32 => "float32",
        _ => "bfloat16",
    }
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

/// `"%d of %s" % (a, b)`.
fn percent_format(fmt: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut it = args.iter();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&n) = chars.peek() {
            chars.next();
            if n.is_ascii_alphabetic() || n == '%' {
                spec.push(n);
                break;
            }
            spec.push(n);
        }
        if spec == "%" {
            out.push('%');
            continue;
        }
        let Some(v) = it.next() else {
            break;
        };
        let kind = spec.chars().last().unwrap_or('s');
        let body = &spec[..spec.len().saturating_sub(1)];
        match kind {
            'd' | 'i' => out.push_str(&v.as_f64().map_or(v.to_str(), |x| (x as i64).to_string())),
            'f' | 'e' | 'g' => out.push_str(&format_spec(v, &format!("{body}{kind}"))),
            'r' => out.push_str(&v.repr()),
            _ => out.push_str(&v.to_str()),
        }
    }
    out
}

/// A shape display that marks `nl.par_dim` as a list or a concatenation of tuple and list
/// displays, as the one tuple of its items; `None` for anything else.
fn par_dim_display(e: &Expr) -> Option<Expr> {
    fn items<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) -> bool {
        match &e.kind {
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                out.extend(xs);
                true
            }
            ExprKind::Binary {
                op: crate::ast::BinOp::Add,
                lhs,
                rhs,
            } => items(lhs, out) && items(rhs, out),
            _ => false,
        }
    }
    if matches!(e.kind, ExprKind::Tuple(_)) {
        return None;
    }
    let mut out = Vec::new();
    let marked = items(e, &mut out)
        && out
            .iter()
            .any(|i| super::comptime::par_dim_arg(i).is_some());
    marked.then(|| Expr {
        kind: ExprKind::Tuple(out.into_iter().cloned().collect()),
        span: e.span.clone(),
    })
}
