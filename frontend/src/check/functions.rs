//! Calls at compile time: user functions (`def` helpers, other kernels of the file, `lambda`),
//! Python's builtins and the methods of Python values.
//!
//! Calling a user function binds its parameters (positional, keyword, defaults, `*args`,
//! `**kwargs`) in a new frame, runs its body with the statements of `stmts`, and returns what its
//! `return` gave (`None` without one). A helper may take and return tiles and perform tile
//! operations: those are checked where the call runs, as part of the caller's block, which is how
//! NKI's tracer inlines them.
//!
//! Invariants: frames nest at most [`MAX_DEPTH`] deep and a kernel's evaluation runs at most
//! [`MAX_STEPS`] statements and loop iterations, so no kernel (`while True: pass`, unbounded
//! recursion) can hang the compiler: past either limit evaluation stops with a diagnostic. A
//! frame sees its own scopes, those it closes over and the module's globals, never its caller's.

use super::comptime::Const;
use super::eval_expr::BUILTINS;
use super::pyvalue::{range_len, FuncVal, Kwargs, Py};
use super::stmts::Flow;
use super::{Bound, Checker, Value, MAX_STEPS};
use crate::ast::{self, Expr, ExprKind, Span};
use crate::codes;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The deepest nesting of calls of user functions.
pub(crate) const MAX_DEPTH: usize = 64;

/// Stack left below which a user-function call moves to a new stack segment.
const STACK_RED_ZONE: usize = 512 * 1024;

/// Size of each stack segment a deep call chain adds.
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

impl Checker<'_> {
    /// Counts one evaluation step; past [`MAX_STEPS`] reports and stops.
    pub(crate) fn step(&mut self, at: &Span) -> Option<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            if !self.stopped {
                self.raise(
                    codes::EVAL_LIMIT,
                    format!("the kernel's Python runs more than {MAX_STEPS} steps; nkc stops here (a loop that does not end?)"),
                    at,
                );
            }
            self.stopped = true;
            return None;
        }
        (!self.stopped).then_some(())
    }

    /// The function a `def` (or `lambda`) defines here, with its defaults evaluated now.
    pub(crate) fn make_function(&mut self, def: Rc<ast::Kernel>) -> Option<Value> {
        let mut defaults = Vec::new();
        for p in &def.params {
            defaults.push(match &p.default {
                Some(d) => Some(self.eval(d)?),
                None => None,
            });
        }
        // A function defined inside another closes over that function's scopes; at module level
        // (one scope, the globals being built) it sees the globals when called.
        let closure = if self.frames > 0 || self.scopes.len() > 1 || self.kernel_frame {
            self.scopes.clone()
        } else {
            Vec::new()
        };
        Some(Value::py(Py::Func(FuncVal {
            def,
            defaults,
            closure,
            package: self.package.clone(),
        })))
    }

    /// `callee(pos..., kws...)` for any callable value.
    pub(crate) fn call_value(
        &mut self,
        callee: &Value,
        pos: Vec<Value>,
        spans: &[Span],
        kws: Kwargs,
        e: &Expr,
    ) -> Option<Value> {
        match callee.as_py() {
            Some(Py::Func(f)) => self.call_function(f, pos, kws, &e.span),
            // functools.rs: `functools.partial`, `functools.reduce`, `operator.*`.
            Some(Py::Builtin(b)) if b.starts_with("functools.") || b.starts_with("operator.") => {
                self.call_functools(b, pos, spans, kws, e)
            }
            Some(Py::Partial(p)) => self.call_partial(p, pos, spans, kws, e),
            // grid.rs: `kernel[2, 4](a, b)`, the programs of the grid one after the other.
            Some(Py::Launch(f, grid)) => {
                let (f, grid) = (f.clone(), grid.clone());
                self.call_launch(&f, &grid, pos, kws, &e.span)
            }
            Some(Py::Builtin(b)) => self.call_builtin(b, pos, spans, kws, e),
            Some(Py::Method(recv, name)) => {
                let (recv, name) = (recv.clone(), name.clone());
                self.call_method(&recv, &name, pos, e)
            }
            // classes.rs: a class makes an instance; a bound method gets its instance first.
            Some(Py::Class(_)) => self.instantiate(callee, pos, kws, &e.span),
            Some(Py::BoundMethod(recv, f)) => match f.as_py() {
                Some(Py::Func(f)) => {
                    let mut args = vec![recv.clone()];
                    args.extend(pos);
                    self.call_function(f, args, kws, &e.span)
                }
                _ => self.type_error("a bound method of a non-function".into(), &e.span),
            },
            // alloc_api.rs: NKI's direct-allocation API and its decorators.
            Some(Py::Ref("nki", path)) if path.starts_with("compiler.") => {
                match self.call_compiler_api(path, &pos, &e.span) {
                    Some(v) => v,
                    None => self.unsupported_py(
                        format!("calling `nki.{path}` outside a tile operation"),
                        &e.span,
                    ),
                }
            }
            Some(Py::Ref(m, name)) => match (*m, name.as_str()) {
                ("nl", "static_range" | "affine_range" | "sequential_range") => {
                    self.call_builtin("range", pos, spans, Vec::new(), e)
                }
                ("nl", "par_dim") => pos.into_iter().next().or(Some(Value::None)),
                // `nl.finfo(dtype).min`, `np.iinfo(np.int32).max`: the dtype's limits.
                ("nl", "finfo" | "iinfo") if pos.len() == 1 && kws.is_empty() => {
                    match super::py_access::type_info(&pos[0]) {
                        Some(v) => Some(v),
                        None => self.type_error(
                            format!("`{m}.{name}` of a `{}`, not a dtype nkc knows the limits of", pos[0].type_name()),
                            &e.span,
                        ),
                    }
                }
                // vectors.rs: `sl = nl.ds(start, size)`, a slice value.
                ("nl", "ds") => self.ds_value(pos, spans, kws, e),
                // grid.rs: the SPMD launch grid.
                ("nl", "program_id") => self.program_id(pos, kws, &e.span),
                ("nl", "num_programs") => self.num_programs(pos, kws, &e.span),
                ("nl", "program_ndim") => Some(self.program_ndim()),
                ("nisa", "get_nc_version") if pos.is_empty() && kws.is_empty() => {
                    Some(Value::int(super::py_access::NC_VERSION))
                }
                // `nl.device_print(prefix, x)`: NKI's simulator prints the tensor's values as it
                // runs; nkc compiles no instruction for it. With `NKC_PRINT` set the prefix and
                // the operand are printed at compile time, as `print` is (the values are in
                // `nkc run --output DIR`).
                ("nl", "device_print") => {
                    if std::env::var_os("NKC_PRINT").is_some() {
                        let text: Vec<String> = pos.iter().map(Value::to_str).collect();
                        eprintln!("device_print: {}", text.join(" "));
                    }
                    Some(Value::None)
                }
                ("nki", "jit" | "baremetal" | "benchmark" | "simulate_kernel" | "simulate" | "profile") => {
                    pos.into_iter().next().or_else(|| Some(callee.clone()))
                }
                // `np.dtype(np.float32)`: the dtype.
                ("nl", "dtype") if pos.len() == 1 => pos.into_iter().next(),
                // A dtype called as a constructor (`np.float32(1.0)`): the number.
                ("nl", "float32" | "bfloat16" | "float16" | "int32") => {
                    pos.into_iter().next().or(Some(Value::Float(0.0)))
                }
                _ => self.unsupported_py(
                    format!("calling `{m}.{name}` outside a tile operation"),
                    &e.span,
                ),
            },
            // `enum.auto()`: the placeholder an enum class numbers (enum_classes).
            Some(Py::Module(m)) if m == "enum.auto" && pos.is_empty() && kws.is_empty() => {
                Some(Value::py(Py::Module("enum.auto()".into())))
            }
            // `from common import helper`: a name of a module nkc does not have.
            Some(Py::Module(m)) if m.contains('.') => self.unsupported_py(
                format!(
                    "calling `{m}`, imported from a module outside the kernel's file (define the function in the file)"
                ),
                &e.span,
            ),
            _ => {
                if matches!(callee, Value::Error) {
                    return None;
                }
                self.type_error(
                    format!("a `{}` is not callable", callee.type_name()),
                    &e.span,
                )
            }
        }
    }

    /// Calls a user function: binds its arguments in a new frame and runs its body.
    ///
    /// The checker recurses through `eval` and `exec` once per nested call, so the native stack
    /// needed grows with the kernel's call depth (at most [`MAX_DEPTH`]). The body runs on a
    /// segment that `stacker` extends when less than [`STACK_RED_ZONE`] remains, so any caller's
    /// thread, a 2 MiB test thread included, can check any kernel.
    pub(crate) fn call_function(
        &mut self,
        f: &FuncVal,
        pos: Vec<Value>,
        kws: Kwargs,
        at: &Span,
    ) -> Option<Value> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.call_function_body(f, pos, kws, at)
        })
    }

    fn call_function_body(
        &mut self,
        f: &FuncVal,
        pos: Vec<Value>,
        kws: Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let name = f.def.name.name.clone();
        if self.frames >= MAX_DEPTH {
            self.raise(
                codes::EVAL_LIMIT,
                format!(
                    "calls nest more than {MAX_DEPTH} deep (in `{name}`): unbounded recursion?"
                ),
                at,
            );
            return None;
        }
        let mut frame: HashMap<String, Bound> = HashMap::new();
        let params = &f.def.params;
        let star = params
            .iter()
            .position(|p| p.name.name.starts_with('*') && !p.name.name.starts_with("**"));
        let dstar = params.iter().position(|p| p.name.name.starts_with("**"));
        let plain: Vec<usize> = (0..params.len())
            .filter(|&i| Some(i) != star && Some(i) != dstar)
            .collect();
        let positional_slots: Vec<usize> = plain
            .iter()
            .copied()
            .filter(|&i| star.is_none_or(|s| i < s))
            .collect();
        let mut given: Vec<Option<Value>> = vec![None; params.len()];
        let mut extra = Vec::new();
        for (k, v) in pos.into_iter().enumerate() {
            match positional_slots.get(k) {
                Some(&i) => given[i] = Some(v),
                None if star.is_some() => extra.push(v),
                None => {
                    return self.type_error(
                        format!(
                            "`{name}` takes {} positional argument{} but more were given",
                            positional_slots.len(),
                            if positional_slots.len() == 1 { "" } else { "s" }
                        ),
                        at,
                    )
                }
            }
        }
        let mut extra_kw = Vec::new();
        for (kname, v, span) in kws {
            match plain.iter().find(|&&i| params[i].name.name == kname) {
                Some(&i) if given[i].is_some() => {
                    return self.type_error(
                        format!("`{name}` got several values for argument `{kname}`"),
                        &span,
                    )
                }
                Some(&i) => given[i] = Some(v),
                None if dstar.is_some() => extra_kw.push((Value::str(kname), v)),
                None => {
                    return self.type_error(
                        format!("`{name}` got an unexpected keyword argument `{kname}`"),
                        &span,
                    )
                }
            }
        }
        for &i in &plain {
            let p = &params[i];
            let v = match given[i].take().or_else(|| f.defaults[i].clone()) {
                Some(v) => v,
                None if p.name.name == "*" => continue,
                None => {
                    return self.type_error(
                        format!("`{name}` is missing the argument `{}`", p.name.name),
                        at,
                    )
                }
            };
            frame.insert(
                p.name.name.clone(),
                Bound {
                    value: v,
                    span: p.name.span.clone(),
                    leaked: false,
                },
            );
        }
        if let Some(s) = star {
            let p = &params[s];
            frame.insert(
                p.name.name.trim_start_matches('*').to_string(),
                Bound {
                    value: Value::tuple(extra),
                    span: p.name.span.clone(),
                    leaked: false,
                },
            );
        }
        if let Some(s) = dstar {
            let p = &params[s];
            frame.insert(
                p.name.name.trim_start_matches('*').to_string(),
                Bound {
                    value: Value::py(Py::Dict(RefCell::new(extra_kw))),
                    span: p.name.span.clone(),
                    leaked: false,
                },
            );
        }

        // The new frame: the closure's scopes, then the parameters.
        let mut scopes = f.closure.clone();
        let saved_frame = std::mem::replace(&mut self.frame_scope, scopes.len());
        scopes.push(frame);
        let saved_scopes = std::mem::replace(&mut self.scopes, scopes);
        let saved_base = std::mem::replace(&mut self.loop_base, self.enclosing.len());
        let saved_soft = std::mem::take(&mut self.soft_axes);
        self.soft_axes = saved_soft.clone();
        self.frames += 1;
        // A function of another file of the package runs with that module's globals.
        let saved_package = std::mem::replace(&mut self.package, f.package.clone());
        let mut out = Vec::new();
        let in_loop = self.in_loop_body;
        let flow = self.exec_block(&f.def.body, &mut out, in_loop);
        self.package = saved_package;
        self.frames -= 1;
        self.pending.extend(out);
        self.scopes = saved_scopes;
        self.frame_scope = saved_frame;
        self.loop_base = saved_base;
        self.soft_axes = saved_soft;
        match flow {
            Flow::Return(v, _) => Some(v),
            Flow::Stop => None,
            Flow::Next => Some(Value::None),
            Flow::Break | Flow::Continue => Some(Value::None),
        }
    }

    /// A builtin of Python (`len`, `range`, `min`, `zip`, ...).
    fn call_builtin(
        &mut self,
        name: &str,
        pos: Vec<Value>,
        spans: &[Span],
        kws: Kwargs,
        e: &Expr,
    ) -> Option<Value> {
        let at = &e.span;
        let arg_expr = |k: usize| Expr {
            kind: ExprKind::Error,
            span: spans.get(k).cloned().unwrap_or(at.clone()),
        };
        let kw = |n: &str| {
            kws.iter()
                .find(|(k, _, _)| k == n)
                .map(|(_, v, _)| v.clone())
        };
        let arity = |this: &mut Self, lo: usize, hi: usize| -> Option<()> {
            if pos.len() < lo || pos.len() > hi {
                this.type_error(
                    format!(
                        "`{name}` takes {} argument{}, {} given",
                        if lo == hi {
                            lo.to_string()
                        } else {
                            format!("{lo} to {hi}")
                        },
                        if hi == 1 { "" } else { "s" },
                        pos.len()
                    ),
                    at,
                );
                return None;
            }
            Some(())
        };
        match name {
            "print" => {
                let text: Vec<String> = pos.iter().map(Value::to_str).collect();
                if std::env::var_os("NKC_PRINT").is_some() {
                    eprintln!("{}", text.join(" "));
                }
                Some(Value::None)
            }
            "range" => {
                arity(self, 1, 3)?;
                let mut ints = Vec::new();
                for (k, v) in pos.iter().enumerate() {
                    match self.concrete_int(v, &arg_expr(k)) {
                        Some(i) => ints.push(i),
                        None => {
                            if self.stopped {
                                return None;
                            }
                            return self.type_error(
                                format!("`range` takes integers, not a `{}`", v.type_name()),
                                &arg_expr(k).span,
                            );
                        }
                    }
                }
                let (a, b, c) = match ints.as_slice() {
                    [n] => (0, *n, 1),
                    [a, b] => (*a, *b, 1),
                    [a, b, c] => (*a, *b, *c),
                    _ => unreachable!("arity checked"),
                };
                if c == 0 {
                    return self.type_error("`range` step cannot be zero".into(), at);
                }
                Some(Value::py(Py::Range(a, b, c)))
            }
            "slice" => {
                arity(self, 1, 3)?;
                let mut p = pos;
                let (a, b, c) = match p.len() {
                    1 => (Value::None, p.remove(0), Value::None),
                    2 => {
                        let b = p.remove(1);
                        (p.remove(0), b, Value::None)
                    }
                    _ => {
                        let c = p.remove(2);
                        let b = p.remove(1);
                        (p.remove(0), b, c)
                    }
                };
                Some(Value::py(Py::Slice(a, b, c)))
            }
            "len" => {
                arity(self, 1, 1)?;
                let v = &pos[0];
                let n = match v.as_py() {
                    Some(Py::Str(s)) => s.chars().count() as i64,
                    Some(Py::Dict(d)) => d.borrow().len() as i64,
                    Some(Py::Range(a, b, c)) => range_len(*a, *b, *c),
                    _ => match v.seq_items() {
                        Some(items) => items.len() as i64,
                        None => match v {
                            Value::Tile(_) | Value::Param(_) => {
                                let ident = ast::Ident {
                                    name: "shape".into(),
                                    span: at.clone(),
                                };
                                let shape = self.attr_shape(v, &ident, e)?;
                                shape
                                    .seq_items()
                                    .and_then(|s| s.first().and_then(Value::as_int))
                                    .unwrap_or(0)
                            }
                            _ => {
                                return self
                                    .type_error(format!("a `{}` has no len()", v.type_name()), at)
                            }
                        },
                    },
                };
                Some(Value::int(n))
            }
            "isinstance" => {
                arity(self, 2, 2)?;
                let types = pos[1].seq_items().unwrap_or_else(|| vec![pos[1].clone()]);
                let tn = pos[0].type_name();
                let hit = types.iter().any(|t| match t.as_py() {
                    Some(Py::Builtin(b)) => *b == tn || (*b == "int" && tn == "bool"),
                    // classes.rs: an instance of a user class or of one derived from it.
                    Some(Py::Class(_)) => Self::isinstance_user(&pos[0], t).unwrap_or(false),
                    _ => false,
                });
                Some(Value::Bool(hit))
            }
            "str" | "repr" => {
                arity(self, 0, 1)?;
                let v = pos.first().cloned().unwrap_or(Value::str(""));
                Some(Value::str(if name == "str" {
                    v.to_str()
                } else {
                    v.repr()
                }))
            }
            "type" => {
                arity(self, 1, 1)?;
                let tn = pos[0].type_name();
                Some(Value::py(Py::Builtin(
                    BUILTINS
                        .iter()
                        .find(|b| **b == tn)
                        .copied()
                        .unwrap_or("type"),
                )))
            }
            "hasattr" => {
                arity(self, 2, 2)?;
                let name = pos[1].to_str();
                Some(Value::Bool(Self::object_has_attr(&pos[0], &name)))
            }
            "getattr" => {
                arity(self, 2, 3)?;
                let Some(Py::Str(name)) = pos[1].as_py() else {
                    return self
                        .type_error("`getattr`'s attribute name must be a string".into(), at);
                };
                if pos.len() == 3 && !Self::object_has_attr(&pos[0], name) {
                    if let Some(Py::Class(_) | Py::Instance(_)) = pos[0].as_py() {
                        return Some(pos[2].clone());
                    }
                }
                let attr = ast::Ident {
                    name: name.clone(),
                    span: at.clone(),
                };
                self.attribute(&pos[0], &attr, e)
            }
            "round" => {
                arity(self, 1, 2)?;
                let x = self.number(&pos[0], at)?;
                match pos.get(1) {
                    None | Some(Value::None) => {
                        // Python rounds half to even.
                        let r = x.round();
                        let r = if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                            r - x.signum()
                        } else {
                            r
                        };
                        Some(Value::int(r as i64))
                    }
                    Some(n) => {
                        let n = n.as_int().unwrap_or(0) as i32;
                        let k = 10f64.powi(n);
                        Some(Value::Float((x * k).round() / k))
                    }
                }
            }
            "divmod" => {
                arity(self, 2, 2)?;
                let rhs = arg_expr(1);
                let q = self.binary(
                    ast::BinOp::FloorDiv,
                    pos[0].clone(),
                    pos[1].clone(),
                    e,
                    &rhs,
                )?;
                let r = self.binary(ast::BinOp::Mod, pos[0].clone(), pos[1].clone(), e, &rhs)?;
                Some(Value::tuple(vec![q, r]))
            }
            "zip" => {
                let mut cols = Vec::new();
                for (k, v) in pos.iter().enumerate() {
                    cols.push(self.iterate(v, &arg_expr(k))?);
                }
                let n = cols.iter().map(Vec::len).min().unwrap_or(0);
                Some(Value::list(
                    (0..n)
                        .map(|i| Value::tuple(cols.iter().map(|c| c[i].clone()).collect()))
                        .collect(),
                ))
            }
            "enumerate" => {
                arity(self, 1, 2)?;
                let items = self.iterate(&pos[0], &arg_expr(0))?;
                let start = pos
                    .get(1)
                    .cloned()
                    .or_else(|| kw("start"))
                    .and_then(|v| v.as_int())
                    .unwrap_or(0);
                Some(Value::list(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| Value::tuple(vec![Value::int(start + i as i64), v]))
                        .collect(),
                ))
            }
            "list" | "tuple" | "sorted" | "reversed" => {
                arity(self, 0, 1)?;
                let mut items = match pos.first() {
                    Some(v) => self.iterate(v, &arg_expr(0))?,
                    None => Vec::new(),
                };
                if name == "sorted" {
                    let mut bad = false;
                    items.sort_by(|a, b| match (a.as_f64(), b.as_f64()) {
                        (Some(x), Some(y)) => {
                            x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
                        }
                        _ => match (a.as_py(), b.as_py()) {
                            (Some(Py::Str(x)), Some(Py::Str(y))) => x.cmp(y),
                            _ => {
                                bad = true;
                                std::cmp::Ordering::Equal
                            }
                        },
                    });
                    if bad {
                        return self.unsupported_py(
                            "`sorted` of other than numbers or strings".into(),
                            at,
                        );
                    }
                    if kw("reverse").is_some_and(|v| matches!(v, Value::Bool(true))) {
                        items.reverse();
                    }
                }
                if name == "reversed" {
                    items.reverse();
                }
                Some(if name == "tuple" {
                    Value::tuple(items)
                } else {
                    Value::list(items)
                })
            }
            "dict" => {
                let mut out = Vec::new();
                if let Some(v) = pos.first() {
                    for item in self.iterate(v, &arg_expr(0))? {
                        match item.seq_items().as_deref() {
                            Some([k, v]) => out.push((k.clone(), v.clone())),
                            _ => return self.type_error("`dict` takes pairs".into(), at),
                        }
                    }
                }
                for (k, v, _) in kws {
                    out.push((Value::str(k), v));
                }
                Some(Value::py(Py::Dict(RefCell::new(out))))
            }
            "np.arange" => self.np_arange(&pos, &kws, at),
            "np.array" => self.np_array(&pos, &kws, at),
            "np.zeros" | "np.ones" | "np.full" | "np.identity" | "np.eye" | "np.tri" => {
                self.np_constructor(&name[3..], &pos, &kws, at)
            }
            "np.tril" | "np.triu" => self.np_triangle(&name[3..], &pos, &kws, at),
            "sum" | "any" | "all" | "np.prod" => {
                arity(self, 1, 2)?;
                let items = self.iterate(&pos[0], &arg_expr(0))?;
                match name {
                    "any" | "all" => {
                        let mut acc = name == "all";
                        for v in &items {
                            let t = self.truthy(v, &arg_expr(0))?;
                            if name == "any" && t {
                                acc = true;
                            }
                            if name == "all" && !t {
                                acc = false;
                            }
                        }
                        Some(Value::Bool(acc))
                    }
                    _ => {
                        let (op, unit) = if name == "sum" {
                            (ast::BinOp::Add, Value::int(0))
                        } else {
                            (ast::BinOp::Mul, Value::int(1))
                        };
                        let mut acc = pos.get(1).cloned().unwrap_or(unit);
                        for v in items {
                            acc = self.binary(op, acc, v, e, &arg_expr(0))?;
                        }
                        Some(acc)
                    }
                }
            }
            "math.log2" => {
                arity(self, 1, 1)?;
                let x = self.number(&pos[0], at)?;
                if x <= 0.0 {
                    return self.type_error("math domain error".into(), at);
                }
                Some(Value::Float(x.log2()))
            }
            "math.gcd" => {
                let mut g: i64 = 0;
                for (k, v) in pos.iter().enumerate() {
                    let Some(mut b) = self.concrete_int(v, &arg_expr(k)) else {
                        return self.type_error("`math.gcd` takes integers".into(), at);
                    };
                    let mut a = g.abs();
                    b = b.abs();
                    while b != 0 {
                        (a, b) = (b, a % b);
                    }
                    g = a;
                }
                Some(Value::int(g))
            }
            "math.isclose" => {
                arity(self, 2, 2)?;
                let (a, b) = (self.number(&pos[0], at)?, self.number(&pos[1], at)?);
                let rel = kw("rel_tol").and_then(|v| v.as_f64()).unwrap_or(1e-9);
                let abs = kw("abs_tol").and_then(|v| v.as_f64()).unwrap_or(0.0);
                Some(Value::Bool(
                    (a - b).abs() <= (rel * a.abs().max(b.abs())).max(abs),
                ))
            }
            "min" | "max" if pos.len() == 1 => {
                let items = self.iterate(&pos[0], &arg_expr(0))?;
                if items.is_empty() {
                    return self.type_error(format!("`{name}` of an empty sequence"), at);
                }
                self.call_builtin(name, items, &[], Vec::new(), e)
            }
            "int" | "float" | "bool"
                if pos.len() == 1 && matches!(pos[0].as_py(), Some(Py::Str(_))) =>
            {
                let s = pos[0].to_str();
                let t = s.trim();
                let v = match name {
                    "int" => t.parse::<i64>().ok().map(Value::int),
                    "float" => t.parse::<f64>().ok().map(Value::Float),
                    _ => Some(Value::Bool(!s.is_empty())),
                };
                match v {
                    Some(v) => Some(v),
                    None => self.type_error(format!("invalid literal for {name}(): '{s}'"), at),
                }
            }
            "bool" if pos.len() == 1 => {
                let t = self.truthy(&pos[0], &arg_expr(0))?;
                Some(Value::Bool(t))
            }
            "int" | "float" | "bool" if pos.is_empty() => Some(match name {
                "int" => Value::int(0),
                "float" => Value::Float(0.0),
                _ => Value::Bool(false),
            }),
            _ => {
                // The numeric builtins shared with the core language's constant folding.
                let mut vals = Vec::new();
                for (k, v) in pos.iter().enumerate() {
                    vals.push(match v {
                        Value::Int(a) => match a.as_constant() {
                            Some(c) => Const::Int(c),
                            None => {
                                self.needs_value(a, &arg_expr(k));
                                return None;
                            }
                        },
                        Value::Float(x) => Const::Float(*x),
                        Value::Bool(b) => Const::Bool(*b),
                        Value::None => Const::None,
                        Value::Error => return None,
                        _ => {
                            return self.type_error(
                                format!("`{name}` takes numbers, not a `{}`", v.type_name()),
                                &arg_expr(k).span,
                            )
                        }
                    });
                }
                let variadic = matches!(name, "min" | "max");
                if (variadic && vals.is_empty()) || (!variadic && vals.len() != 1) {
                    return self.type_error(
                        format!(
                            "`{name}` takes {} argument{}, {} given",
                            if variadic { "1 or more" } else { "1" },
                            if variadic { "s" } else { "" },
                            vals.len()
                        ),
                        at,
                    );
                }
                let before = self.errors.len();
                let r = self.apply_builtin(name, vals, e);
                if self.errors.len() > before {
                    self.stopped = true;
                }
                r.map(Const::value)
            }
        }
    }

    fn attr_shape(&mut self, v: &Value, ident: &ast::Ident, e: &Expr) -> Option<Value> {
        let _ = e;
        match v {
            Value::Tile(t) => {
                let dims = self.logical_dims(t).cloned().unwrap_or(t.size.to_vec());
                let _ = ident;
                Some(Value::tuple(
                    dims.into_iter().map(|d| Value::int(d as i64)).collect(),
                ))
            }
            Value::Param(t) => {
                let whole = super::TileVal::whole(*t, self.tensor(*t).shape);
                self.attr_shape(&Value::Tile(whole), ident, e)
            }
            _ => None,
        }
    }

    fn number(&mut self, v: &Value, at: &Span) -> Option<f64> {
        match v.as_f64() {
            Some(x) => Some(x),
            None => {
                self.type_error(
                    format!("expected a number, found a `{}`", v.type_name()),
                    at,
                );
                None
            }
        }
    }

    /// Whether the call `e`, `name.append(...)` (or `extend`, `insert`), grows a list bound
    /// outside the body of an `nl.affine_range` / `nl.sequential_range` loop being run: then
    /// each iteration adds its own values (`tiles.append(tile)` of the tile it allocates), as
    /// NKI's tracer runs the loop, so the loop is unrolled and this asks for that (true: the
    /// evaluation stops and the loop is run again, unrolled).
    fn grows_outer_list(&mut self, e: &Expr) -> bool {
        let ExprKind::Call { func, .. } = &e.kind else {
            return false;
        };
        let ExprKind::Attribute { value, .. } = &func.kind else {
            return false;
        };
        let ExprKind::Name(n) = &value.kind else {
            return false;
        };
        // The scope of the current frame that binds the list (module-level lists are outside
        // every loop).
        let bound_in = self.scopes.iter().rposition(|s| s.contains_key(n));
        let outside = |&(frame, open): &(usize, usize)| {
            frame == self.frames && bound_in.is_none_or(|b| b < open)
        };
        if self.div_soft_scopes.iter().any(outside) {
            self.need_unroll = true;
            self.stopped = true;
            return true;
        }
        false
    }

    /// `recv.name(args)` for strings, lists, dicts and tuples.
    fn call_method(
        &mut self,
        recv: &Value,
        name: &str,
        pos: Vec<Value>,
        e: &Expr,
    ) -> Option<Value> {
        let at = &e.span;
        let Some(p) = recv.as_py() else {
            return self.unsupported_py(
                format!("the method `.{name}` of a `{}`", recv.type_name()),
                at,
            );
        };
        if let Py::Array(items) = p {
            return self.array_method(items, name, &pos, e);
        }
        if let Py::Array2(a) = p {
            return self.array2_method(a, name, &pos, at);
        }
        if matches!(p, Py::List(_))
            && matches!(name, "append" | "extend" | "insert")
            && self.grows_outer_list(e)
        {
            return None;
        }
        match (p, name) {
            (Py::List(items), "append") if pos.len() == 1 => {
                self.mutating(at)?;
                items.borrow_mut().push(pos[0].clone());
                Some(Value::None)
            }
            (Py::List(items), "extend") if pos.len() == 1 => {
                let more = self.iterate(&pos[0], e)?;
                self.mutating(at)?;
                items.borrow_mut().extend(more);
                Some(Value::None)
            }
            (Py::List(items), "insert") if pos.len() == 2 => {
                self.mutating(at)?;
                let n = items.borrow().len() as i64;
                let k = pos[0].as_int().unwrap_or(n);
                let k = if k < 0 { (k + n).max(0) } else { k.min(n) };
                items.borrow_mut().insert(k as usize, pos[1].clone());
                Some(Value::None)
            }
            (Py::List(items), "pop") if pos.len() <= 1 => {
                self.mutating(at)?;
                let n = items.borrow().len() as i64;
                let k = pos.first().and_then(Value::as_int).unwrap_or(-1);
                let i = if k < 0 { k + n } else { k };
                if !(0..n).contains(&i) {
                    return self.type_error("pop index out of range".into(), at);
                }
                Some(items.borrow_mut().remove(i as usize))
            }
            (Py::List(_) | Py::Tuple(_), "index" | "count") if pos.len() == 1 => {
                let items = recv.seq_items().unwrap_or_default();
                let hits: Vec<usize> = items
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.py_eq(&pos[0]) == Some(true))
                    .map(|(i, _)| i)
                    .collect();
                if name == "count" {
                    return Some(Value::int(hits.len() as i64));
                }
                match hits.first() {
                    Some(&i) => Some(Value::int(i as i64)),
                    None => self.type_error(format!("{} is not in the list", pos[0].repr()), at),
                }
            }
            (Py::Dict(d), "get") if !pos.is_empty() && pos.len() <= 2 => Some(
                d.borrow()
                    .iter()
                    .find(|(k, _)| k.py_eq(&pos[0]) == Some(true))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| pos.get(1).cloned().unwrap_or(Value::None)),
            ),
            (Py::Dict(d), "keys" | "values" | "items") if pos.is_empty() => Some(Value::list(
                d.borrow()
                    .iter()
                    .map(|(k, v)| match name {
                        "keys" => k.clone(),
                        "values" => v.clone(),
                        _ => Value::tuple(vec![k.clone(), v.clone()]),
                    })
                    .collect(),
            )),
            (Py::Dict(d), "update") if pos.len() == 1 => {
                self.mutating(at)?;
                if let Some(Py::Dict(other)) = pos[0].as_py() {
                    let other = other.borrow().clone();
                    let mut d = d.borrow_mut();
                    for (k, v) in other {
                        match d.iter_mut().find(|(k2, _)| k2.py_eq(&k) == Some(true)) {
                            Some(slot) => slot.1 = v,
                            None => d.push((k, v)),
                        }
                    }
                }
                Some(Value::None)
            }
            (Py::Str(s), "format") => {
                let mut out = String::new();
                let mut it = pos.iter();
                let mut rest = s.as_str();
                while let Some(i) = rest.find('{') {
                    out.push_str(&rest[..i]);
                    let Some(j) = rest[i..].find('}') else {
                        break;
                    };
                    let inner = &rest[i + 1..i + j];
                    let v = it.next().cloned().unwrap_or(Value::str(""));
                    match inner.split_once(':') {
                        Some((_, spec)) => out.push_str(&super::pyvalue::format_spec(&v, spec)),
                        None => out.push_str(&v.to_str()),
                    }
                    rest = &rest[i + j + 1..];
                }
                out.push_str(rest);
                Some(Value::str(out))
            }
            (Py::Str(s), "join") if pos.len() == 1 => {
                let items = self.iterate(&pos[0], e)?;
                Some(Value::str(
                    items.iter().map(Value::to_str).collect::<Vec<_>>().join(s),
                ))
            }
            (Py::Str(s), "upper") => Some(Value::str(s.to_uppercase())),
            (Py::Str(s), "lower") => Some(Value::str(s.to_lowercase())),
            (Py::Str(s), "startswith") if pos.len() == 1 => {
                Some(Value::Bool(s.starts_with(&pos[0].to_str())))
            }
            (Py::Str(s), "endswith") if pos.len() == 1 => {
                Some(Value::Bool(s.ends_with(&pos[0].to_str())))
            }
            _ => self.unsupported_py(
                format!("the method `.{name}` of a `{}`", recv.type_name()),
                at,
            ),
        }
    }
}

/// Whether a module-level `def` is the kernel of its file rather than a helper: it carries a
/// decorator (`@nki.jit`, `@nki.baremetal`, ...).
pub(crate) fn is_decorated(k: &ast::Kernel) -> bool {
    k.is_nki_kernel()
}
