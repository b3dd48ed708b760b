//! Residualising traced expressions: a tile operation inside the kernel's Python is written back
//! as an expression of the core language ([`Checker::resid`]): its Python parts evaluated and
//! quoted as literals ([`Checker::quote`]), module aliases made `nl.`/`nisa.`, `...` expanded, so
//! that `ops` checks it as it checks a kernel written in the core language.
//!
//! Invariant: a quoted value means what the evaluated one did (an affine integer is quoted over
//! the loop variables' names, a slice as a slice); a value with no literal form is a diagnostic.

use super::pyvalue::Py;
use super::{Checker, Value};
use crate::ast::{self, BinOp, Expr, ExprKind, Index, Span};

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

impl Checker<'_> {
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
                                // `t[tuple(access)]`, the one index a tuple value: Python's
                                // `t[a, b, ...]`, one index per item (a slice, `None`, ...).
                                Some(Py::Tuple(items)) if indices.len() == 1 => {
                                    for item in items.clone() {
                                        match item.as_py() {
                                            Some(Py::Slice(a, b, c)) => {
                                                let (a, b, c) = (a.clone(), b.clone(), c.clone());
                                                out.push(self.quote_slice(&a, &b, &c, &x.span)?)
                                            }
                                            Some(Py::Ellipsis) => {
                                                out.push(Index::Expr(mk(ExprKind::Ellipsis)))
                                            }
                                            _ => out.push(Index::Expr(self.quote(&item, &x.span)?)),
                                        }
                                    }
                                }
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
