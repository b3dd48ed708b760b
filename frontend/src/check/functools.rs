//! Python's `functools` and `operator` modules at compile time: `functools.partial`,
//! `functools.reduce` and the binary functions of `operator` (`operator.mul`, ...).
//!
//! `functools.partial(f, *args, **kwargs)` is a callable value ([`PartialData`]) that may be
//! bound, passed and returned like any function (`ncc.psum.alloc(partial(addr, bank_map=m))`).
//! Calling it calls `f` with the bound positional arguments first and then the call's, and with
//! the bound keywords merged with the call's, a call-site keyword replacing a bound one of the
//! same name: Python's `partial.__call__`. `functools.reduce(f, xs[, init])` folds left with any
//! callable; `operator.add(a, b)` is `a + b` on the evaluator's Python values.
//!
//! Invariant: nothing here traces a tile operation itself: every call goes through
//! `Checker::call_value`, so a partial of a helper that performs tile operations runs them where
//! the partial is called, as the helper would.

use super::pyvalue::{Kwargs, PartialData, Py};
use super::{Checker, Value};
use crate::ast::{BinOp, CmpOp, Expr, ExprKind, Span};

/// `functools.NAME` for the names nkc evaluates.
pub(crate) fn functools_attr(name: &str) -> Option<Value> {
    Some(Value::py(Py::Builtin(match name {
        "partial" => "functools.partial",
        "reduce" => "functools.reduce",
        _ => return None,
    })))
}

/// The binary functions of `operator`, with the operation each is.
const OPERATORS: [(&str, Op); 19] = [
    ("operator.add", Op::Bin(BinOp::Add)),
    ("operator.sub", Op::Bin(BinOp::Sub)),
    ("operator.mul", Op::Bin(BinOp::Mul)),
    ("operator.truediv", Op::Bin(BinOp::Div)),
    ("operator.floordiv", Op::Bin(BinOp::FloorDiv)),
    ("operator.mod", Op::Bin(BinOp::Mod)),
    ("operator.pow", Op::Bin(BinOp::Pow)),
    ("operator.and_", Op::Bin(BinOp::BitAnd)),
    ("operator.or_", Op::Bin(BinOp::BitOr)),
    ("operator.xor", Op::Bin(BinOp::BitXor)),
    ("operator.lshift", Op::Bin(BinOp::Shl)),
    ("operator.rshift", Op::Bin(BinOp::Shr)),
    ("operator.eq", Op::Cmp(CmpOp::Eq)),
    ("operator.ne", Op::Cmp(CmpOp::Ne)),
    ("operator.lt", Op::Cmp(CmpOp::Lt)),
    ("operator.le", Op::Cmp(CmpOp::Le)),
    ("operator.gt", Op::Cmp(CmpOp::Gt)),
    ("operator.ge", Op::Cmp(CmpOp::Ge)),
    ("operator.contains", Op::Contains),
];

#[derive(Clone, Copy)]
enum Op {
    Bin(BinOp),
    Cmp(CmpOp),
    /// `operator.contains(a, b)` is `b in a`.
    Contains,
}

/// `operator.NAME` for the binary functions nkc evaluates.
pub(crate) fn operator_attr(name: &str) -> Option<Value> {
    let full = format!("operator.{name}");
    let (b, _) = OPERATORS.iter().find(|(n, _)| *n == full)?;
    Some(Value::py(Py::Builtin(b)))
}

/// Whether `v` can be called (what `functools.partial` asks of its first argument).
fn is_callable(v: &Value) -> bool {
    matches!(
        v.as_py(),
        Some(
            Py::Func(_)
                | Py::Builtin(_)
                | Py::Method(..)
                | Py::Class(_)
                | Py::BoundMethod(..)
                | Py::Partial(_)
                | Py::Launch(..)
                | Py::Ref(..)
        )
    )
}

impl Checker<'_> {
    /// Calls `functools.NAME` or `operator.NAME` (`name` is the builtin's full name).
    pub(crate) fn call_functools(
        &mut self,
        name: &str,
        pos: Vec<Value>,
        spans: &[Span],
        kws: Kwargs,
        e: &Expr,
    ) -> Option<Value> {
        match name {
            "functools.partial" => {
                let mut pos = pos.into_iter();
                let Some(func) = pos.next() else {
                    return self.type_error(
                        "`functools.partial` takes the function to call first".into(),
                        &e.span,
                    );
                };
                if !is_callable(&func) {
                    if matches!(func, Value::Error) {
                        return None;
                    }
                    let at = spans.first().unwrap_or(&e.span).clone();
                    return self.type_error(
                        format!(
                            "the first argument of `functools.partial` must be callable, not a `{}`",
                            func.type_name()
                        ),
                        &at,
                    );
                }
                // A partial of a partial flattens, as Python's does.
                let (func, mut args, mut kwargs) = match func.as_py() {
                    Some(Py::Partial(p)) => (p.func.clone(), p.args.clone(), p.kwargs.clone()),
                    _ => (func, Vec::new(), Vec::new()),
                };
                args.extend(pos);
                merge_kwargs(&mut kwargs, kws);
                Some(Value::py(Py::Partial(PartialData { func, args, kwargs })))
            }
            "functools.reduce" => {
                if !kws.is_empty() || !(2..=3).contains(&pos.len()) {
                    return self.type_error(
                        format!(
                            "`functools.reduce` takes 2 or 3 positional arguments (function, iterable[, initial]), {} given",
                            pos.len() + kws.len()
                        ),
                        &e.span,
                    );
                }
                let mut pos = pos.into_iter();
                let (f, seq) = (pos.next()?, pos.next()?);
                let seq_at = Expr {
                    kind: ExprKind::Error,
                    span: spans.get(1).unwrap_or(&e.span).clone(),
                };
                let mut items = self.iterate(&seq, &seq_at)?.into_iter();
                let Some(mut acc) = pos.next().or_else(|| items.next()) else {
                    return self.type_error(
                        "`functools.reduce` of an empty sequence with no initial value".into(),
                        &e.span,
                    );
                };
                for x in items {
                    self.step(&e.span)?;
                    let args_at = [e.span.clone(), e.span.clone()];
                    acc = self.call_value(&f, vec![acc, x], &args_at, Vec::new(), e)?;
                }
                Some(acc)
            }
            _ => {
                let Some((_, op)) = OPERATORS.iter().find(|(n, _)| *n == name) else {
                    return self.unsupported_py(format!("`{name}`"), &e.span);
                };
                if !kws.is_empty() || pos.len() != 2 {
                    return self.type_error(
                        format!(
                            "`{name}` takes 2 arguments, {} given",
                            pos.len() + kws.len()
                        ),
                        &e.span,
                    );
                }
                let mut pos = pos.into_iter();
                let (a, b) = (pos.next()?, pos.next()?);
                let rhs = Expr {
                    kind: ExprKind::Error,
                    span: spans.get(1).unwrap_or(&e.span).clone(),
                };
                match *op {
                    Op::Bin(op) => self.binary(op, a, b, e, &rhs),
                    Op::Cmp(op) => self.compare(op, &a, &b, e).map(Value::Bool),
                    Op::Contains => self.compare(CmpOp::In, &b, &a, e).map(Value::Bool),
                }
            }
        }
    }

    /// Calls a `functools.partial` object: its bound arguments first, then the call's.
    pub(crate) fn call_partial(
        &mut self,
        p: &PartialData,
        pos: Vec<Value>,
        spans: &[Span],
        kws: Kwargs,
        e: &Expr,
    ) -> Option<Value> {
        let mut args = p.args.clone();
        let mut arg_spans = vec![e.span.clone(); args.len()];
        args.extend(pos);
        arg_spans.extend(spans.iter().cloned());
        let mut kwargs = p.kwargs.clone();
        merge_kwargs(&mut kwargs, kws);
        self.call_value(&p.func, args, &arg_spans, kwargs, e)
    }
}

/// `{**bound, **new}`: each keyword of `new` replaces the bound one of its name in place, or
/// comes after them.
fn merge_kwargs(bound: &mut Kwargs, new: Kwargs) {
    for (k, v, at) in new {
        match bound.iter_mut().find(|(b, _, _)| *b == k) {
            Some(slot) => *slot = (k, v, at),
            None => bound.push((k, v, at)),
        }
    }
}
