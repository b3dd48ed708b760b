//! Two-dimensional numpy arrays of compile-time numbers, and the constant HBM tensors NKI makes
//! of them: `nl.shared_constant(np.identity(128, dtype=np.int8), dtype=nl.bfloat16)`.
//!
//! numpy runs on the host while NKI traces the kernel, so `np.identity(n)`, `np.eye(n, m, k)`,
//! `np.tri(n, m, k)`, `np.tril(a, k)` / `np.triu(a, k)` of such an array, `np.zeros(shape)`, `np.ones(shape)` and `np.full(shape, v)` are Python
//! values ([`Py::Array2`], or a one-dimensional [`Py::Array`] for a shape of one dimension),
//! with `.shape`, `.ndim`, `.size`, `.T`, `.astype(dtype)`, `.tolist()` and `a[i]` (a row).
//! `nl.shared_constant(a, dtype=d)` makes of one an HBM tensor of kind `Const` whose values
//! (converted to `d`: integer dtypes truncate toward zero, as numpy's `astype` does, and are held
//! as float32 like every integer tile; `bfloat16` rounds to nearest even) are part of the
//! program: the loader fills it, the kernel only reads it (`nl.load`).
//!
//! Invariants: an [`Array2`] holds `rows * cols` compile-time numbers (ints, floats or bools),
//! row-major, at most [`penguin::ir::MAX_CONST_VALUES`] of them; a constant's values are exactly
//! representable in its dtype and never NaN other than the canonical one.

use super::operands::Dest;
use super::pyvalue::{Array2, Kwargs, Py};
use super::{CTensor, Checker, TileVal, Value};
use crate::ast::{Expr, Span};
use crate::codes;
use crate::diagnostic::Error;
use penguin::ir::MAX_CONST_VALUES;
use penguin::{DType, Memory, TensorKind};

/// An array's element at `(row, column)`.
type ElementOf = Box<dyn Fn(i64, i64) -> f64>;

/// Whether a dtype value (`np.float32`, `nl.bfloat16`, ...) is a floating-point type.
fn is_float_dtype(v: &Value) -> bool {
    matches!(v.as_py(), Some(Py::Ref(_, n)) if n.starts_with("float") || n.starts_with("bfloat"))
}

/// A number of the array's kind: a float, or an integer (numpy's integer dtypes).
fn number(x: f64, float: bool) -> Value {
    if float {
        Value::Float(x)
    } else {
        // numpy's `astype` to an integer type truncates toward zero.
        Value::int(x.trunc() as i64)
    }
}

impl Checker<'_> {
    /// `np.zeros`, `np.ones`, `np.full`, `np.identity`, `np.eye`, `np.tri` (`name` without
    /// `np.`): the array, or `None` after a diagnostic.
    pub(super) fn np_constructor(
        &mut self,
        name: &str,
        pos: &[Value],
        kws: &Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let (names, required): (&[&str], usize) = match name {
            "zeros" | "ones" => (&["shape", "dtype"], 1),
            "full" => (&["shape", "fill_value", "dtype"], 2),
            "identity" => (&["n", "dtype"], 1),
            "eye" => (&["N", "M", "k", "dtype"], 1),
            _ => (&["N", "M", "k", "dtype"], 1),
        };
        let mut args: Vec<Option<Value>> = vec![None; names.len()];
        if pos.len() > names.len() {
            return self.np_ctor_error(
                format!("`np.{name}` takes at most {} arguments", names.len()),
                at,
            );
        }
        for (k, v) in pos.iter().enumerate() {
            args[k] = Some(v.clone());
        }
        for (k, v, s) in kws {
            match names.iter().position(|n| n == k) {
                Some(i) if args[i].is_none() => args[i] = Some(v.clone()),
                Some(_) => {
                    return self.np_ctor_error(format!("`np.{name}` got `{k}` twice"), s);
                }
                None => {
                    return self.np_ctor_error(format!("`np.{name}` takes no keyword `{k}`"), s);
                }
            }
        }
        let args: Vec<Option<Value>> = args
            .into_iter()
            .map(|a| a.filter(|v| !matches!(v, Value::None)))
            .collect();
        if args[..required].iter().any(Option::is_none) {
            let missing = names[..required].join("`, `");
            return self.np_ctor_error(format!("`np.{name}` needs `{missing}`"), at);
        }
        let dtype = args.last().cloned().flatten();
        let int = |this: &mut Self, v: &Option<Value>, what: &str| -> Option<Option<i64>> {
            match v {
                None => Some(None),
                Some(v) => match v.as_int() {
                    Some(n) => Some(Some(n)),
                    None => this.np_ctor_error(
                        format!("`np.{name}`: `{what}` is a compile-time integer"),
                        at,
                    ),
                },
            }
        };
        let (rows, cols, value): (i64, Option<i64>, ElementOf) = match name {
            "zeros" | "ones" | "full" => {
                let fill = match name {
                    "zeros" => 0.0,
                    "ones" => 1.0,
                    _ => match args[1].as_ref().and_then(Value::as_f64) {
                        Some(v) => v,
                        None => {
                            return self.np_ctor_error(
                                "`np.full` fills with a compile-time number".into(),
                                at,
                            )
                        }
                    },
                };
                let shape = args[0].clone().unwrap_or(Value::None);
                let dims: Option<Vec<i64>> = match shape.seq_items() {
                    Some(items) => items.iter().map(Value::as_int).collect(),
                    None => shape.as_int().map(|n| vec![n]),
                };
                let float = match &dtype {
                    Some(d) => is_float_dtype(d),
                    None => name != "full" || matches!(args[1], Some(Value::Float(_))),
                };
                let fill = number(fill, float);
                match dims.as_deref() {
                    Some([n]) if *n >= 0 && *n as usize <= MAX_CONST_VALUES => {
                        return Some(Value::array(vec![fill; *n as usize]));
                    }
                    Some([r, c]) => {
                        let f = fill.as_f64().unwrap_or_default();
                        (*r, Some(*c), Box::new(move |_, _| f))
                    }
                    _ => {
                        return self.np_ctor_error(
                            format!(
                                "`np.{name}` of shape `{}`: nkc's numpy arrays have one or two dimensions of compile-time sizes",
                                shape.repr()
                            ),
                            at,
                        )
                    }
                }
            }
            "identity" => {
                let n = int(self, &args[0], "n")?.unwrap_or_default();
                (n, None, Box::new(|i, j| f64::from(u8::from(i == j))))
            }
            _ => {
                let n = int(self, &args[0], "N")?.unwrap_or_default();
                let m = int(self, &args[1], "M")?;
                let k = int(self, &args[2], "k")?.unwrap_or(0);
                if name == "eye" {
                    (n, m, Box::new(move |i, j| f64::from(u8::from(j - i == k))))
                } else {
                    (n, m, Box::new(move |i, j| f64::from(u8::from(j - i <= k))))
                }
            }
        };
        let cols = cols.unwrap_or(rows);
        if rows < 0 || cols < 0 || (rows as u128) * (cols as u128) > MAX_CONST_VALUES as u128 {
            return self.np_ctor_error(
                format!(
                    "`np.{name}` of {rows} x {cols} elements: nkc's numpy arrays hold at most {MAX_CONST_VALUES}"
                ),
                at,
            );
        }
        let float = dtype.as_ref().is_none_or(is_float_dtype);
        let mut items = Vec::with_capacity((rows * cols) as usize);
        for i in 0..rows {
            for j in 0..cols {
                items.push(number(value(i, j), float));
            }
        }
        Some(Value::py(Py::Array2(Array2 {
            rows: rows as usize,
            cols: cols as usize,
            items,
        })))
    }

    /// `np.tril(a, k=0)` / `np.triu(a, k=0)` (`name` without `np.`): the two-dimensional array
    /// `a` with the elements above (`tril`) or below (`triu`) its `k`-th diagonal zeroed.
    pub(super) fn np_triangle(
        &mut self,
        name: &str,
        pos: &[Value],
        kws: &Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let mut k = pos.get(1).cloned();
        for (key, v, s) in kws {
            match key.as_str() {
                "k" if k.is_none() => k = Some(v.clone()),
                _ => {
                    return self
                        .np_ctor_error(format!("`np.{name}` takes no keyword `{key}` here"), s)
                }
            }
        }
        let Some(k) = k.map_or(Some(0), |v| v.as_int()) else {
            return self.np_ctor_error(format!("`np.{name}`: `k` is a compile-time integer"), at);
        };
        let a = match pos.first().and_then(Value::as_py) {
            Some(Py::Array2(a)) if pos.len() <= 2 => a,
            _ => {
                return self.np_ctor_error(
                    format!("`np.{name}` takes a two-dimensional numpy array and an optional `k`"),
                    at,
                )
            }
        };
        let mut items = a.items.clone();
        for i in 0..a.rows {
            for j in 0..a.cols {
                let d = j as i64 - i as i64;
                let dropped = if name == "tril" { d > k } else { d < k };
                if dropped {
                    let float = matches!(items[i * a.cols + j], Value::Float(_));
                    items[i * a.cols + j] = number(0.0, float);
                }
            }
        }
        Some(Value::py(Py::Array2(Array2 {
            rows: a.rows,
            cols: a.cols,
            items,
        })))
    }

    /// `a.name` of a two-dimensional array: its attributes, or a method to call.
    pub(super) fn array2_attr(&mut self, v: &Value, a: &Array2, name: &str) -> Option<Value> {
        Some(match name {
            "shape" => Value::tuple(vec![Value::int(a.rows as i64), Value::int(a.cols as i64)]),
            "ndim" => Value::int(2),
            "size" => Value::int((a.rows * a.cols) as i64),
            "T" => {
                let mut items = Vec::with_capacity(a.items.len());
                for j in 0..a.cols {
                    for i in 0..a.rows {
                        items.push(a.items[i * a.cols + j].clone());
                    }
                }
                Value::py(Py::Array2(Array2 {
                    rows: a.cols,
                    cols: a.rows,
                    items,
                }))
            }
            _ => Value::py(Py::Method(v.clone(), name.to_string())),
        })
    }

    /// `a.name(args)` of a two-dimensional array.
    pub(super) fn array2_method(
        &mut self,
        a: &Array2,
        name: &str,
        pos: &[Value],
        at: &Span,
    ) -> Option<Value> {
        match (name, pos) {
            ("astype", [d]) => {
                let float = is_float_dtype(d);
                let items = a
                    .items
                    .iter()
                    .map(|v| number(v.as_f64().unwrap_or_default(), float))
                    .collect();
                Some(Value::py(Py::Array2(Array2 { items, ..*a })))
            }
            ("copy", []) => Some(Value::py(Py::Array2(a.clone()))),
            ("tolist", []) => Some(Value::list(a.row_values().map(Value::list).collect())),
            _ => self.unsupported_py(
                format!(
                    "the method `.{name}` with {} arguments of a two-dimensional numpy array",
                    pos.len()
                ),
                at,
            ),
        }
    }

    /// `nl.shared_constant(constant, dtype=None)`: a constant HBM tensor holding the array's
    /// values, bound to the name of `dest`.
    pub(super) fn shared_constant(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        dest: Dest,
    ) -> Option<TileVal> {
        let arr_e = slots.first().copied().flatten()?;
        let arr = self.eval(arr_e)?;
        let (rows, cols, items) = match arr.as_py() {
            Some(Py::Array2(a)) => (a.rows, a.cols, a.items.clone()),
            _ => {
                self.error(
                    Error::new(
                        codes::PYTHON_ERROR,
                        format!(
                            "`nl.shared_constant` takes a two-dimensional numpy array, not a `{}`",
                            arr.type_name()
                        ),
                        arr_e.span.clone(),
                    )
                    .with_label("not a 2-D numpy array")
                    .with_help("build it with `np.identity(n)`, `np.eye(n, m, k)`, `np.tri(n, m, k)`, `np.zeros((r, c))`, `np.ones((r, c))` or `np.full((r, c), v)`"),
                );
                return None;
            }
        };
        if rows == 0 || cols == 0 {
            self.error(Error::new(
                codes::PYTHON_ERROR,
                format!("`nl.shared_constant` of an empty array ({rows} x {cols})"),
                arr_e.span.clone(),
            ));
            return None;
        }
        let dtype = match slots.get(1).copied().flatten() {
            Some(d) => self.dtype_of(d)?,
            None => DType::F32,
        };
        let int = slots
            .get(1)
            .copied()
            .flatten()
            .and_then(|d| d.attr_of(&["nl", "np", "numpy"]))
            .is_some_and(|n| n.starts_with("int") || n.starts_with("uint"));
        let values: Vec<f32> = items
            .iter()
            .map(|v| {
                let x = v.as_f64().unwrap_or_default();
                let x = if int { x.trunc() } else { x };
                let x = penguin::ir::canonical_nan(x as f32);
                if dtype == DType::Bf16 {
                    vocab::round_bf16(x)
                } else {
                    x
                }
            })
            .collect();
        self.const_tensor(rows as u64, cols as u64, values, dtype, span, dest)
    }

    /// A constant HBM tensor of `rows × cols` `values` (row-major, already in `dtype`), bound to
    /// the name of `dest` (anything else is a diagnostic at `span`).
    pub(super) fn const_tensor(
        &mut self,
        rows: u64,
        cols: u64,
        values: Vec<f32>,
        dtype: DType,
        span: &Span,
        dest: Dest,
    ) -> Option<TileVal> {
        let Dest::New { name, span: bspan } = dest else {
            self.error(
                Error::new(
                    codes::PYTHON_ERROR,
                    "`nl.shared_constant` makes an HBM tensor: bind it to a name".to_string(),
                    span.clone(),
                )
                .with_label("not bound to a name")
                .with_help("write `c = nl.shared_constant(...)`, then `nl.load(c)`"),
            );
            return None;
        };
        let shape = [rows, cols];
        let t = self.new_tensor(CTensor {
            name,
            memory: Memory::Hbm,
            dtype,
            shape,
            kind: TensorKind::Const,
            span: bspan,
        });
        self.consts.insert(t, values);
        Some(TileVal::whole(t, shape))
    }

    fn np_ctor_error<T>(&mut self, message: String, at: &Span) -> Option<T> {
        self.raise(codes::PYTHON_ERROR, message, at);
        None
    }
}

impl Array2 {
    /// The rows, each as a list of its numbers.
    pub(crate) fn row_values(&self) -> impl Iterator<Item = Vec<Value>> + '_ {
        self.items.chunks(self.cols.max(1)).map(<[Value]>::to_vec)
    }
}
