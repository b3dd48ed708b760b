//! Attributes and subscripts of compile-time values: the attributes of modules (`nl.float32`,
//! `math.pi`, `np.finfo`, NKI's module paths), of tiles (`x.shape`, `x.dtype`) and of Python
//! values (methods, an instance's fields), subscripts of containers with Python's rules
//! (negative indices, slices), and item assignment into lists and dicts.
//!
//! Invariant: a failed lookup is a Python error (`Checker::raise`), which stops the kernel's
//! evaluation as the exception would; nothing here traces a tile operation.

use super::comptime::tile_size;
use super::error::CheckError;
use super::pyvalue::{range_items, Py};
use super::{Checker, Value};
use crate::ast::{self, Expr, Span};
use crate::codes;

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
            "tril" => Value::py(Py::Builtin("np.tril")),
            "triu" => Value::py(Py::Builtin("np.triu")),
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

/// `nl.float32` etc.: the NKI name of a dtype.
pub(crate) fn dtype_name(d: penguin::DType) -> &'static str {
    match d {
        penguin::DType::F32 => "float32",
        _ => "bfloat16",
    }
}

impl Checker<'_> {
    /// `v.attr`.
    pub(crate) fn attribute(&mut self, v: &Value, attr: &ast::Ident, _e: &Expr) -> Option<Value> {
        let name = attr.name.as_str();
        match v {
            Value::Tile(t) => match name {
                "shape" => {
                    // tile_nd: a computed tile keeps its operand's NKI shape (`keep_shape`).
                    let dims = (self.logical_dims(t).cloned())
                        .or_else(|| self.value_dims(t))
                        .unwrap_or(t.size.to_vec());
                    Some(Value::tuple(
                        dims.into_iter().map(|d| Value::int(d as i64)).collect(),
                    ))
                }
                "ndim" => {
                    let n = (self.logical_dims(t).map(Vec::len))
                        .or_else(|| self.value_dims(t).map(|d| d.len()))
                        .unwrap_or(2);
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
                Py::Package(m) => self.package_attr(&m.clone(), name, &attr.span),
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
                // grid.rs: `kernel[2, 4]`, a launch of the function over a grid.
                Py::Func(_) => return self.launch_value(v, key, at),
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
                // `tiles[k] = ...` with `k` the index of a loop that may be unrolled: each
                // iteration assigns its own item, as NKI's tracer runs the loop.
                if key.as_int().is_none() && self.unroll_for_index(&key) {
                    return None;
                }
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
}
