//! Compile-time values other than affine integers: floats, booleans and the conditions of `if`
//! and `assert`, as NKI's tracing evaluates them in Python before a kernel is built.
//!
//! [`Checker::const_value`] evaluates literals, names bound to compile-time values, `+ - * / // %`
//! (integers stay integers except under `/`, which is Python's true division), comparisons,
//! `and` / `or` / `not`, `x.shape[k]`, `nl.tile_size.*`, and the builtins `math.ceil`,
//! `math.floor`, `math.sqrt`, `math.exp`, `math.log`, `min`, `max`, `abs`, `int`, `float`, `bool` and `len` (of a shape or tuple);
//! shapes compare with shapes and tuples (`a.shape == b.shape`). Anything that depends on a loop
//! variable or a tile is a diagnostic, never a guess.
//!
//! Invariant: every value returned is finite or came from finite inputs by IEEE arithmetic; an
//! integer result is checked for overflow like every other compile-time integer.

use super::error::CheckError;
use super::{Checker, Value};
use crate::ast::{BinOp, CmpOp, Expr, ExprKind, UnaryOp};

/// What kind of value an expression denotes, judged from its form before evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Int,
    Tile,
    Float,
    /// A boolean or `None`: a compile-time value that is not a number.
    Bool,
    /// Something already reported (or to be reported when evaluated as an integer).
    Poison,
    Other,
}

/// A compile-time scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Const {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// `None`, as the default of an optional parameter (`scale=None`).
    None,
}

impl Const {
    /// Python's truth value.
    pub(crate) fn truthy(self) -> bool {
        match self {
            Const::Int(v) => v != 0,
            Const::Float(v) => v != 0.0,
            Const::Bool(b) => b,
            Const::None => false,
        }
    }

    /// The number as a float (a boolean is 0 or 1, as in Python; `None`, which arithmetic
    /// never reaches, NaN).
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Const::Int(v) => v as f64,
            Const::Float(v) => v,
            Const::Bool(b) => f64::from(u8::from(b)),
            Const::None => f64::NAN,
        }
    }

    /// The value a name bound to it holds.
    pub(crate) fn value(self) -> Value {
        match self {
            Const::Int(v) => Value::Int(penguin::AffineExpr::constant(v)),
            Const::Float(v) => Value::Float(v),
            Const::Bool(b) => Value::Bool(b),
            Const::None => Value::None,
        }
    }
}

/// Whether `e` is written as a tuple: `x.shape` or `(a, b)`.
fn is_tuple(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Attribute { attr, .. } => attr.name == "shape",
        ExprKind::Tuple(_) => true,
        _ => false,
    }
}

/// `nl.tile_size.NAME`: the hardware tile limits NKI publishes.
pub(crate) fn tile_size(name: &str) -> Option<i64> {
    use vocab::machine;
    let size = match name {
        "pmax" => machine::PMAX,
        "psum_fmax" => machine::PSUM_FMAX,
        "gemm_stationary_fmax" => machine::GEMM_STATIONARY_FMAX,
        "gemm_moving_fmax" => machine::GEMM_MOVING_FMAX,
        "psum_partition_max" => machine::PMAX,
        "bn_stats_fmax" => machine::BN_STATS_FMAX,
        _ => return None,
    };
    Some(size as i64)
}

/// Whether `e` is `nl.tile_size.NAME` (known or not).
pub(crate) fn is_tile_size(e: &Expr) -> Option<&crate::ast::Ident> {
    let ExprKind::Attribute { value, attr } = &e.kind else {
        return None;
    };
    let ExprKind::Attribute { value: m, attr: ts } = &value.kind else {
        return None;
    };
    (matches!(&m.kind, ExprKind::Name(n) if n == "nl") && ts.name == "tile_size").then_some(attr)
}

/// The name of a builtin scalar function called as `func`: `math.ceil`, `min`, ...
pub(crate) fn builtin_name(func: &Expr) -> Option<&'static str> {
    match &func.kind {
        ExprKind::Attribute { value, attr } if matches!(&value.kind, ExprKind::Name(m) if m == "math") => {
            match attr.name.as_str() {
                "ceil" => Some("math.ceil"),
                "floor" => Some("math.floor"),
                "sqrt" => Some("math.sqrt"),
                "exp" => Some("math.exp"),
                "log" => Some("math.log"),
                _ => None,
            }
        }
        // A dtype called as a constructor (`np.float32(0.0)`, `np.int32(n)`; the front end reads
        // `np.` names as `nl.` ones): the number,
        // as `float` / `int` make it (nkc's scalars are float32 when they reach a tile anyway).
        ExprKind::Attribute { value, attr } if matches!(&value.kind, ExprKind::Name(m) if m == "nl" || m == "np" || m == "numpy") => {
            match attr.name.as_str() {
                "float16" | "float32" | "float64" | "bfloat16" => Some("float"),
                "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32" | "uint64" => {
                    Some("int")
                }
                "bool_" => Some("bool"),
                _ => None,
            }
        }
        ExprKind::Name(n) => match n.as_str() {
            "min" => Some("min"),
            "len" => Some("len"),
            "max" => Some("max"),
            "abs" => Some("abs"),
            "int" => Some("int"),
            "float" => Some("float"),
            "bool" => Some("bool"),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `func` is a dtype called as a constructor (`np.float32`, read as `nl.float32`).
pub(crate) fn is_dtype_ctor(func: &Expr) -> bool {
    matches!(&func.kind, ExprKind::Attribute { value, .. } if matches!(&value.kind, ExprKind::Name(m) if m == "nl" || m == "np" || m == "numpy"))
        && builtin_name(func).is_some()
}

/// The class of a builtin's result.
pub(crate) fn builtin_class(name: &str) -> Class {
    match name {
        "float" | "math.sqrt" | "math.exp" | "math.log" => Class::Float,
        "bool" => Class::Bool,
        _ => Class::Int,
    }
}

impl Checker<'_> {
    /// A compile-time scalar; reports and returns `None` when `e` is not one.
    pub(crate) fn const_value(&mut self, e: &Expr) -> Option<Const> {
        match &e.kind {
            ExprKind::Int(v) => Some(Const::Int(*v)),
            ExprKind::Float(v) => Some(Const::Float(*v)),
            ExprKind::Bool(b) => Some(Const::Bool(*b)),
            ExprKind::None => Some(Const::None),
            ExprKind::Name(n) => match self.lookup(n, &e.span) {
                Value::Float(v) => Some(Const::Float(v)),
                Value::Bool(b) => Some(Const::Bool(b)),
                Value::None => Some(Const::None),
                Value::Error => None,
                _ => self.const_int(e).map(Const::Int),
            },
            ExprKind::Unary { op, operand } => match self.const_value(operand)? {
                Const::Float(v) if *op == UnaryOp::Neg => Some(Const::Float(-v)),
                Const::Float(v) if *op == UnaryOp::Pos => Some(Const::Float(v)),
                _ => self.const_int(e).map(Const::Int),
            },
            ExprKind::Not(operand) => Some(Const::Bool(!self.const_value(operand)?.truthy())),
            ExprKind::BoolOp { and, lhs, rhs } => {
                let a = self.const_value(lhs)?;
                // Python's short circuit: the right operand is not evaluated when the left decides.
                if a.truthy() != *and {
                    return Some(a);
                }
                self.const_value(rhs)
            }
            ExprKind::Compare { op, lhs, rhs } if is_tuple(lhs) || is_tuple(rhs) => {
                let a = self.int_tuple(lhs);
                let b = self.int_tuple(rhs);
                Some(Const::Bool(op.holds(a?, b?)))
            }
            ExprKind::Call { func, args, kwargs }
                if matches!(&func.kind, ExprKind::Name(n) if n == "len")
                    && args.len() == 1
                    && kwargs.is_empty() =>
            {
                let t = self.int_tuple(&args[0])?;
                Some(Const::Int(t.len() as i64))
            }
            ExprKind::Compare { op, lhs, rhs } => {
                let a = self.const_value(lhs);
                let b = self.const_value(rhs);
                let (a, b) = (a?, b?);
                let is = matches!(op, CmpOp::Is | CmpOp::IsNot);
                let holds = match (a, b) {
                    // `x is None`, `x == None`: whether `x` is `None`.
                    (Const::None, _) | (_, Const::None) => {
                        let same = a == b;
                        match op {
                            CmpOp::Is | CmpOp::Eq => same,
                            CmpOp::IsNot | CmpOp::Ne => !same,
                            _ => return self.none_operand(e),
                        }
                    }
                    _ if is => {
                        self.error(CheckError::IsNotNone { at: e.span.clone() });
                        return None;
                    }
                    (Const::Int(x), Const::Int(y)) => op.holds(x, y),
                    _ => op.holds(a.as_f64(), b.as_f64()),
                };
                Some(Const::Bool(holds))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.const_value(lhs);
                let b = self.const_value(rhs);
                let (a, b) = (a?, b?);
                match (a, b) {
                    (Const::Int(_), Const::Int(_)) if !matches!(op, BinOp::Div) => {
                        self.const_int(e).map(Const::Int)
                    }
                    _ => self.const_binary(*op, a, b, e, rhs),
                }
            }
            ExprKind::Call { func, args, kwargs } if builtin_name(func).is_some() => {
                let name = builtin_name(func).expect("checked by the guard");
                self.builtin(name, args, kwargs, e)
            }
            ExprKind::Error => None,
            _ => {
                if self.classify(e) == Class::Int {
                    return self.const_int(e).map(Const::Int);
                }
                self.error(CheckError::NotConst { at: e.span.clone() });
                None
            }
        }
    }

    /// `a op b` on two compile-time scalars (`e` is the whole expression, `rhs` its right
    /// operand): Python's rules, integers staying integers except under `/`.
    pub(crate) fn const_binary(
        &mut self,
        op: BinOp,
        a: Const,
        b: Const,
        e: &Expr,
        rhs: &Expr,
    ) -> Option<Const> {
        match (a, b, op) {
            (Const::None, _, _) | (_, Const::None, _) => self.none_operand(e),
            (Const::Bool(x), Const::Bool(y), BinOp::BitAnd) => Some(Const::Bool(x & y)),
            (Const::Float(_), _, BinOp::BitAnd) | (_, Const::Float(_), BinOp::BitAnd) => {
                self.error(CheckError::AndOfFloat { at: e.span.clone() });
                None
            }
            (Const::Int(_) | Const::Bool(_), Const::Int(_) | Const::Bool(_), BinOp::Div) => {
                let (x, y) = (a.as_f64(), b.as_f64());
                self.float_div(x, y, rhs).map(Const::Float)
            }
            (Const::Float(_), _, _) | (_, Const::Float(_), _) => {
                let (x, y) = (a.as_f64(), b.as_f64());
                let v = match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => self.float_div(x, y, rhs)?,
                    BinOp::FloorDiv => (self.float_div(x, y, rhs)?).floor(),
                    BinOp::Mod => {
                        self.float_div(x, y, rhs)?;
                        x - y * (x / y).floor()
                    }
                    BinOp::Pow => x.powf(y),
                    BinOp::MatMul => {
                        self.refuse_matmul_operator(&e.span);
                        return None;
                    }
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                        self.error(CheckError::AndOfFloat { at: e.span.clone() });
                        return None;
                    }
                };
                Some(Const::Float(v))
            }
            _ => {
                let x = penguin::AffineExpr::constant(a.as_f64() as i64);
                let y = penguin::AffineExpr::constant(b.as_f64() as i64);
                let r = self.int_binary(op, &x, &y, &e.span, &rhs.span)?;
                r.as_constant().map(Const::Int)
            }
        }
    }

    /// A tuple of compile-time integers: `x.shape`, or `(a, b)` of integers.
    pub(crate) fn int_tuple(&mut self, e: &Expr) -> Option<Vec<i64>> {
        match &e.kind {
            ExprKind::Attribute { value, attr } if attr.name == "shape" => self
                .shape_value(value)
                .map(|s| s.into_iter().map(|d| d as i64).collect()),
            ExprKind::Tuple(items) => {
                let vals: Vec<Option<i64>> = items.iter().map(|i| self.const_int(i)).collect();
                vals.into_iter().collect()
            }
            ExprKind::Error => None,
            _ => {
                self.error(CheckError::NotATuple { at: e.span.clone() });
                None
            }
        }
    }

    /// `None` where a number is needed.
    fn none_operand(&mut self, e: &Expr) -> Option<Const> {
        self.error(CheckError::NoneOperand { at: e.span.clone() });
        None
    }

    fn float_div(&mut self, x: f64, y: f64, rhs: &Expr) -> Option<f64> {
        if y == 0.0 {
            self.error(CheckError::FloatDivisionByZero {
                at: rhs.span.clone(),
            });
            return None;
        }
        Some(x / y)
    }

    /// `math.ceil(x)`, `min(a, b, ...)`, ...: a builtin on compile-time scalars.
    fn builtin(
        &mut self,
        name: &str,
        args: &[Expr],
        kwargs: &[crate::ast::Keyword],
        e: &Expr,
    ) -> Option<Const> {
        if let Some(k) = kwargs.first() {
            self.error(CheckError::BuiltinKeyword {
                name: name.to_string(),
                at: k.span.clone(),
            });
            return None;
        }
        let variadic = matches!(name, "min" | "max");
        if (variadic && args.is_empty()) || (!variadic && args.len() != 1) {
            self.error(CheckError::BuiltinArity {
                name: name.to_string(),
                variadic,
                given: args.len(),
                at: e.span.clone(),
            });
            return None;
        }
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.const_value(a));
        }
        let vals: Vec<Const> = vals.into_iter().collect::<Option<_>>()?;
        self.apply_builtin(name, vals, e)
    }

    /// A numeric builtin (`math.ceil`, `min`, `abs`, `int`, ...) applied to compile-time scalars
    /// (`vals` is not empty).
    pub(crate) fn apply_builtin(
        &mut self,
        name: &str,
        vals: Vec<Const>,
        e: &Expr,
    ) -> Option<Const> {
        if vals.contains(&Const::None) {
            return self.none_operand(e);
        }
        let to_int = |this: &mut Self, v: f64| {
            if v.is_finite() && v.abs() < 9.0e18 {
                Some(Const::Int(v as i64))
            } else {
                this.error(CheckError::BuiltinOverflow {
                    name: name.to_string(),
                    value: v,
                    at: e.span.clone(),
                });
                None
            }
        };
        let x = vals[0];
        match name {
            "math.ceil" => match x {
                Const::Float(v) => to_int(self, v.ceil()),
                Const::Bool(b) => Some(Const::Int(i64::from(b))),
                other => Some(other),
            },
            "math.floor" | "int" => match x {
                Const::Float(v) if name == "math.floor" => to_int(self, v.floor()),
                Const::Float(v) => to_int(self, v.trunc()),
                Const::Bool(b) => Some(Const::Int(i64::from(b))),
                other => Some(other),
            },
            "float" => Some(Const::Float(x.as_f64())),
            "math.sqrt" | "math.log"
                if x.as_f64() < 0.0 || (name == "math.log" && x.as_f64() == 0.0) =>
            {
                self.error(CheckError::MathDomain {
                    name: name.to_string(),
                    value: x.as_f64(),
                    at: e.span.clone(),
                });
                None
            }
            "math.sqrt" => Some(Const::Float(x.as_f64().sqrt())),
            "math.exp" => Some(Const::Float(x.as_f64().exp())),
            "math.log" => Some(Const::Float(x.as_f64().ln())),
            "bool" => Some(Const::Bool(x.truthy())),
            "abs" => match x {
                Const::Float(v) => Some(Const::Float(v.abs())),
                Const::Int(v) => match v.checked_abs() {
                    Some(a) => Some(Const::Int(a)),
                    None => to_int(self, (v as f64).abs()),
                },
                Const::Bool(b) => Some(Const::Int(i64::from(b))),
                Const::None => self.none_operand(e),
            },
            _ => {
                let all_int = vals.iter().all(|v| matches!(v, Const::Int(_)));
                let pick = |a: f64, b: f64| if name == "min" { a.min(b) } else { a.max(b) };
                if all_int {
                    let ints = vals.iter().map(|v| match v {
                        Const::Int(i) => *i,
                        _ => unreachable!("checked to be integers"),
                    });
                    let r = if name == "min" {
                        ints.min()
                    } else {
                        ints.max()
                    };
                    r.map(Const::Int)
                } else {
                    let f = vals.iter().map(|v| v.as_f64()).fold(x.as_f64(), pick);
                    Some(Const::Float(f))
                }
            }
        }
    }

    /// The truth of an `if` or `assert` condition, which must be known at compile time.
    pub(crate) fn condition(&mut self, e: &Expr, what: &str) -> Option<bool> {
        let class = self.classify(e);
        if class == Class::Tile {
            self.error(CheckError::TileCondition {
                what: what.to_string(),
                at: e.span.clone(),
            });
            return None;
        }
        self.const_value(e).map(Const::truthy)
    }
}

/// A float scalar written as a literal: `2.0`, `-1`, `+0.5`.
pub(super) fn literal_scalar(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Float(v) => Some(*v),
        ExprKind::Int(v) => Some(*v as f64),
        ExprKind::Unary { op, operand } => {
            let v = literal_scalar(operand)?;
            match op {
                UnaryOp::Neg => Some(-v),
                UnaryOp::Pos => Some(v),
                // `~` of an integer literal only: `~2.0` is Python's TypeError.
                UnaryOp::Invert => match operand.kind {
                    ExprKind::Int(i) => Some(!i as f64),
                    _ => None,
                },
            }
        }
        _ => None,
    }
}

/// Whether `e` is `nl.par_dim(n)` (or `par_dim(n)`, imported by name): its argument.
pub(super) fn par_dim_arg(e: &Expr) -> Option<&Expr> {
    let ExprKind::Call { func, args, kwargs } = &e.kind else {
        return None;
    };
    let named = match &func.kind {
        ExprKind::Name(n) => n == "par_dim",
        ExprKind::Attribute { value, attr } => {
            attr.name == "par_dim" && matches!(&value.kind, ExprKind::Name(m) if m == "nl")
        }
        _ => false,
    };
    (named && args.len() == 1 && kwargs.is_empty()).then(|| &args[0])
}

/// `nl.add` for messages.
pub(super) fn func_name(func: &Expr) -> String {
    match &func.kind {
        ExprKind::Attribute { value, attr } => match &value.kind {
            ExprKind::Name(m) => format!("{m}.{}", attr.name),
            _ => attr.name.clone(),
        },
        ExprKind::Name(n) => n.clone(),
        _ => "call".into(),
    }
}
