//! One-dimensional numpy arrays of compile-time numbers: `np.arange(n, dtype=np.int32)`,
//! `np.array([...])`, and what a kernel computes from them while it is traced
//! (`(np.arange(OH) * H) // OH`, `ends - starts`, `a[i]`, `int(a.max())`, `a.tolist()`).
//!
//! They are Python values (`Py::Array`), as in NKI, where numpy runs on the host before any
//! instruction exists; only `nl.arange` / `nl.mgrid` make index vectors. Arithmetic follows
//! numpy: elementwise between an array and a number, or between two arrays of one length (or
//! of length 1), each element by Python's rules for its numbers (`comptime`); indexing and
//! iteration are a sequence's (`py_access::getitem`).
//!
//! Invariants: an array's elements are compile-time numbers (ints, floats or bools); an array
//! holds at most `MAX_STEPS` (`mod.rs`) elements.

use super::pyvalue::{Kwargs, Py};
use super::MAX_STEPS;
use super::{Checker, Value};
use crate::ast::{BinOp, Expr, ExprKind, Span};
use crate::codes;

/// Whether a dtype value (`np.float32`, `nl.bfloat16`, ...) is a floating-point type.
fn is_float_dtype(v: &Value) -> bool {
    matches!(v.as_py(), Some(Py::Ref(_, n)) if n.starts_with("float") || n.starts_with("bfloat"))
}

impl Checker<'_> {
    /// `np.arange([start,] stop[, step], dtype=...)`.
    pub(super) fn np_arange(&mut self, pos: &[Value], kws: &Kwargs, at: &Span) -> Option<Value> {
        let dtype = kws.iter().find(|(k, _, _)| k == "dtype").map(|(_, v, _)| v);
        if let Some((k, _, s)) = kws.iter().find(|(k, _, _)| k != "dtype") {
            return self.np_error(format!("`np.arange` takes no keyword `{k}`"), s);
        }
        let float = dtype.is_some_and(is_float_dtype) || pos.iter().any(|v| v.as_int().is_none());
        let nums: Option<Vec<f64>> = pos.iter().map(Value::as_f64).collect();
        let Some(nums) = nums else {
            return self.np_error("`np.arange` takes compile-time numbers".into(), at);
        };
        let (start, stop, step) = match nums.as_slice() {
            [n] => (0.0, *n, 1.0),
            [a, b] => (*a, *b, 1.0),
            [a, b, c] => (*a, *b, *c),
            _ => return self.np_error("`np.arange` takes 1 to 3 numbers".into(), at),
        };
        if step == 0.0 {
            return self.np_error("`np.arange` with a step of 0".into(), at);
        }
        let count = ((stop - start) / step).ceil().max(0.0);
        if count > MAX_STEPS as f64 {
            return self.np_error(
                format!("`np.arange` of {count} elements is more than nkc evaluates"),
                at,
            );
        }
        let items = (0..count as u64)
            .map(|i| {
                let x = start + i as f64 * step;
                if float {
                    Value::Float(x)
                } else {
                    Value::int(x as i64)
                }
            })
            .collect();
        Some(Value::array(items))
    }

    /// `np.array(seq)` / `np.asarray(seq)` of numbers.
    pub(super) fn np_array(&mut self, pos: &[Value], kws: &Kwargs, at: &Span) -> Option<Value> {
        let [seq] = pos else {
            return self.np_error("`np.array` takes one sequence".into(), at);
        };
        let Some(items) = seq.seq_items() else {
            return self.np_error(
                format!(
                    "`np.array` of a `{}`: nkc's arrays hold numbers",
                    seq.type_name()
                ),
                at,
            );
        };
        if items.iter().any(|v| v.as_f64().is_none()) {
            return self.np_error(
                "`np.array` of other than compile-time numbers (nkc's arrays are one-dimensional)"
                    .into(),
                at,
            );
        }
        let float = kws
            .iter()
            .any(|(k, v, _)| k == "dtype" && is_float_dtype(v));
        Some(Value::array(if float {
            items
                .iter()
                .map(|v| Value::Float(v.as_f64().unwrap_or_default()))
                .collect()
        } else {
            items
        }))
    }

    /// `a op b` when either side is an array: `Some(result)`; `None` when neither is.
    pub(super) fn array_binary(
        &mut self,
        op: BinOp,
        a: &Value,
        b: &Value,
        e: &Expr,
        rhs: &Expr,
    ) -> Option<Option<Value>> {
        let items = |v: &Value| match v.as_py() {
            Some(Py::Array(x)) => Some(x.clone()),
            _ => None,
        };
        let (xa, xb) = (items(a), items(b));
        if xa.is_none() && xb.is_none() {
            return None;
        }
        let n = match (&xa, &xb) {
            (Some(x), Some(y)) if x.len() != y.len() && x.len() != 1 && y.len() != 1 => {
                return Some(self.np_error(
                    format!(
                        "operands could not be broadcast together with shapes ({},) ({},)",
                        x.len(),
                        y.len()
                    ),
                    &e.span,
                ));
            }
            (Some(x), Some(y)) => x.len().max(y.len()),
            (Some(x), None) | (None, Some(x)) => x.len(),
            (None, None) => unreachable!("one side is an array (checked above)"),
        };
        let pick = |side: &Option<Vec<Value>>, whole: &Value, i: usize| match side {
            Some(x) if x.len() == 1 => x[0].clone(),
            Some(x) => x[i].clone(),
            None => whole.clone(),
        };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (p, q) = (pick(&xa, a, i), pick(&xb, b, i));
            if p.as_py().is_some() || q.as_py().is_some() {
                return Some(self.np_error(
                    format!(
                        "`{}` of an array and a `{}`: nkc's arrays combine with numbers and arrays",
                        op.symbol(),
                        if p.as_py().is_some() {
                            p.type_name()
                        } else {
                            q.type_name()
                        }
                    ),
                    &e.span,
                ));
            }
            match self.binary(op, p, q, e, rhs) {
                Some(v) => out.push(v),
                None => return Some(None),
            }
        }
        Some(Some(Value::array(out)))
    }

    /// `-a` of an array.
    pub(super) fn array_neg(&mut self, items: &[Value], e: &Expr) -> Option<Value> {
        let zero = Value::int(0);
        let mut out = Vec::with_capacity(items.len());
        for v in items {
            out.push(self.binary(BinOp::Sub, zero.clone(), v.clone(), e, e)?);
        }
        Some(Value::array(out))
    }

    /// `a.name(args)` of an array.
    pub(super) fn array_method(
        &mut self,
        items: &[Value],
        name: &str,
        pos: &[Value],
        e: &Expr,
    ) -> Option<Value> {
        let at = &e.span;
        let arg = Expr {
            kind: ExprKind::Error,
            span: at.clone(),
        };
        match (name, pos.len()) {
            ("tolist", 0) => Some(Value::list(items.to_vec())),
            ("copy" | "flatten" | "ravel", 0) => Some(Value::array(items.to_vec())),
            ("astype", 1) => {
                let float = is_float_dtype(&pos[0]);
                let mut out = Vec::with_capacity(items.len());
                for v in items {
                    let x = v.as_f64().unwrap_or_default();
                    out.push(if float {
                        Value::Float(x)
                    } else {
                        // numpy truncates toward zero.
                        Value::int(x.trunc() as i64)
                    });
                }
                Some(Value::array(out))
            }
            ("max" | "min", 0) => {
                let Some(first) = items.first() else {
                    return self.np_error(
                        format!("`.{name}()` of an empty array (zero-size array to reduction)"),
                        at,
                    );
                };
                let mut best = first.clone();
                for v in &items[1..] {
                    let (x, y) = (v.as_f64(), best.as_f64());
                    if let (Some(x), Some(y)) = (x, y) {
                        if (name == "max" && x > y) || (name == "min" && x < y) {
                            best = v.clone();
                        }
                    }
                }
                Some(best)
            }
            ("sum" | "prod", 0) => {
                let (op, mut acc) = if name == "sum" {
                    (BinOp::Add, Value::int(0))
                } else {
                    (BinOp::Mul, Value::int(1))
                };
                for v in items {
                    acc = self.binary(op, acc, v.clone(), e, &arg)?;
                }
                Some(acc)
            }
            ("item", 0) if items.len() == 1 => Some(items[0].clone()),
            _ => self.unsupported_py(
                format!(
                    "the method `.{name}` with {} arguments of a numpy array",
                    pos.len()
                ),
                at,
            ),
        }
    }

    fn np_error<T>(&mut self, message: String, at: &Span) -> Option<T> {
        self.raise(codes::PYTHON_ERROR, message, at);
        None
    }
}
