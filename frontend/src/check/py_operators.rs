//! Python's operators on compile-time values: unary and binary arithmetic (integers affine in
//! the loop variables, floats, strings, sequences, numpy arrays, `%`-formatting), comparisons and
//! their chains, with Python's semantics (floor division, integer overflow refused, `==` across
//! types).
//!
//! Invariant: an operation Python would raise on (a division by zero, unsupported operand types)
//! is a Python error that stops the evaluation; an operator over tiles, index vectors or masks is
//! never evaluated here (`Checker::traced` sends it to the operation checks).

use super::comptime::Const;
use super::error::CheckError;
use super::pyvalue::{format_spec, Py};
use super::{Checker, Value};
use crate::ast::{BinOp, CmpOp, Expr, Span, UnaryOp};
use penguin::AffineExpr;

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

fn repeat(v: &[Value], n: usize) -> Vec<Value> {
    let mut out = Vec::with_capacity(v.len() * n);
    for _ in 0..n {
        out.extend(v.iter().cloned());
    }
    out
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

impl Checker<'_> {
    pub(super) fn py_unary(&mut self, op: UnaryOp, v: Value, e: &Expr) -> Option<Value> {
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
    pub(super) fn unroll_for_index(&mut self, key: &Value) -> bool {
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
}
