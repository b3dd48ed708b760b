//! The compile-time Python values that are not numbers, booleans, `None` or tiles: strings,
//! tuples, lists, dicts, slices, ranges, `...`, functions, modules and references to NKI's names.
//!
//! A kernel is a Python program that NKI traces: every value that is not a tile is an ordinary
//! Python value, computed while the kernel is checked. Integers (affine in the loop variables of
//! hardware loops), floats, booleans and `None` keep their [`Value`] variants of the checker; the
//! others are a [`Value::Py`] holding a [`Py`]. This file owns those values: their Python type
//! names, truth, equality, iteration and text (`str()`/`repr()`), including the data of the
//! values other files make and call (a user class and its instances, [`ClassVal`] and
//! [`InstanceVal`], whose behaviour is `classes`'s; a buffer of the direct-allocation API,
//! [`AllocData`], `alloc_api`'s; a `functools.partial`, [`PartialData`], `functools`'s) and the
//! keyword arguments of a call ([`Kwargs`]). It sits on the values layer (`mod.rs`): it imports
//! only `index_vec`, so every file that evaluates may name these values.
//!
//! Invariants: a `Py` never holds a tile directly by name: tiles inside containers are
//! [`Value::Tile`]/[`Value::Param`] values, snapshots of the binding, as Python's references are;
//! lists and dicts are shared and mutable (`RefCell` inside an `Rc`), everything else immutable.

use super::index_vec::IndexVec;
use super::Value;
use crate::ast::Kernel;
use crate::ast::Span;
use penguin::AffineExpr;
use penguin::Memory;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A user function (a `def` or a `lambda`) with what it closes over.
#[derive(Debug)]
pub(crate) struct FuncVal {
    pub def: Rc<Kernel>,
    /// The default of each parameter, evaluated where the `def` ran.
    pub defaults: Vec<Option<Value>>,
    /// The scopes of the enclosing function when the `def` ran (empty at module level).
    pub closure: Vec<HashMap<String, super::Bound>>,
    /// The module of the kernel's package the `def` ran in (`None`: the kernel's file): its
    /// globals are the function's.
    pub package: Option<Rc<super::package_data::ModuleData>>,
}

/// A Python value other than a number, a boolean, `None` or a tile.
///
/// Always held behind the `Rc` of `Value::Py`, so the size of its largest variant (a slice of
/// three values) costs one allocation per value, not a copy.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Py {
    Str(String),
    Tuple(Vec<Value>),
    List(RefCell<Vec<Value>>),
    /// Insertion-ordered, as Python's dicts are.
    Dict(RefCell<Vec<(Value, Value)>>),
    /// `slice(lo, hi, step)` or `lo:hi:step`; each part an integer (possibly affine) or `None`.
    Slice(Value, Value, Value),
    Range(i64, i64, i64),
    Ellipsis,
    Func(FuncVal),
    /// A module of the kernel's package, imported from another file (`package_imports`).
    Package(Rc<super::package_data::ModuleData>),
    /// A module, by its canonical name: `nl`, `nisa`, `math`, `np`, `nki`, `nt`, or the dotted
    /// path of a module nkc does not know (which may be imported but not used).
    Module(String),
    /// A name of NKI's API, `module.name` (`nl.add`, `nl.float32`, `nisa.activation`): an
    /// operation, a dtype, a buffer or a function that operations take (`op=nl.exp`).
    Ref(&'static str, String),
    /// A Python builtin (`len`, `math.ceil`, ...), by name.
    Builtin(&'static str),
    /// `obj.method` of a Python value, not yet called.
    Method(Value, String),
    /// A one-dimensional numpy array of compile-time numbers (`np.arange`, `np.array`): Python
    /// values with numpy's semantics (elementwise arithmetic, indexing, `.max()`, `.tolist()`),
    /// not an index vector (only `nl.arange` / `nl.mgrid` make those).
    Array(Vec<Value>),
    /// A two-dimensional numpy array of compile-time numbers (`np.identity(128)`), which
    /// `nl.shared_constant` makes a constant HBM tensor of (`np_consts`).
    Array2(Array2),
    /// `nl.mgrid[...]`: one index vector per axis, read as `.p`, `.x`, `.y`, `.z`, by
    /// unpacking, or whole as the index of a tensor (`t[grid]`).
    Grid(Vec<IndexVec>),
    /// A module-level name whose assignment nkc could not evaluate (it calls a `class`, which nkc
    /// skips, say): the diagnostics that assignment gave, reported where a kernel uses the name.
    /// A kernel that never uses it compiles, as a Python kernel does whatever the rest of its
    /// module holds.
    Unrun(Vec<crate::diagnostic::Error>),
    /// A class of the kernel's file (`classes`).
    Class(ClassVal),
    /// An instance of such a class (`classes`).
    Instance(InstanceVal),
    /// `obj.method` of an instance: the instance and the class's function, not yet called.
    BoundMethod(Value, Value),
    /// A buffer of NKI's direct-allocation API (`ncc.sbuf.mod_alloc(...)`,
    /// `ncc.psum.alloc(f)`): the memory it asks for (`alloc_api`).
    Alloc(AllocData),
    /// `functools.partial(f, *args, **kwargs)`: a function with arguments bound (`functools`).
    Partial(PartialData),
    /// `kernel[2, 4]`: a function with a launch grid, not yet called (`grid::call_launch`).
    Launch(Value, Vec<u64>),
}

/// Keyword arguments: name, value and the span of `name=value`.
pub(crate) type Kwargs = Vec<(String, Value, Span)>;

/// A class made by a `class` statement.
#[derive(Debug)]
pub(crate) struct ClassVal {
    pub name: String,
    /// The classes it derives from, in order (user classes only; `object` and Python's
    /// exceptions are not kept).
    pub bases: Vec<Value>,
    /// Whether it derives from one of Python's exceptions.
    pub exception: bool,
    /// The names its body bound.
    pub attrs: RefCell<HashMap<String, Value>>,
    /// For a `@dataclass`: its fields with their defaults, the bases' first.
    pub fields: Option<Vec<(String, Option<Value>)>>,
    /// `@dataclass(frozen=True)`: its instances' attributes cannot be set after `__init__`.
    pub frozen: bool,
}

/// An instance of a user class.
#[derive(Debug)]
pub(crate) struct InstanceVal {
    /// A [`Py::Class`].
    pub class: Value,
    pub attrs: RefCell<HashMap<String, Value>>,
    /// Set once the generated `__init__` of a frozen dataclass has run.
    pub frozen: std::cell::Cell<bool>,
}

/// A buffer of the direct-allocation API.
#[derive(Debug, Clone)]
pub(crate) struct AllocData {
    /// SBUF or PSUM.
    pub memory: Memory,
    /// The API function that made it (`sbuf.mod_alloc`), for messages.
    pub api: String,
}

impl AllocData {
    pub(crate) fn repr(&self) -> String {
        format!("<{} buffer>", self.api)
    }

    /// `nl.sbuf` or `nl.psum`: the buffer the operation checks see.
    pub(crate) fn buffer_ref(&self) -> Value {
        let name = match self.memory {
            Memory::Psum => "psum",
            _ => "sbuf",
        };
        Value::py(Py::Ref("nl", name.to_string()))
    }
}

/// A `functools.partial` object: the function and the arguments bound to it.
#[derive(Debug, Clone)]
pub(crate) struct PartialData {
    pub func: Value,
    pub args: Vec<Value>,
    pub kwargs: Kwargs,
}

impl PartialData {
    pub(crate) fn repr(&self) -> String {
        let mut parts = vec![self.func.repr()];
        parts.extend(self.args.iter().map(Value::repr));
        parts.extend((self.kwargs.iter()).map(|(k, v, _)| format!("{k}={}", v.repr())));
        format!("functools.partial({})", parts.join(", "))
    }
}

impl Value {
    pub(crate) fn py(p: Py) -> Value {
        Value::Py(Rc::new(p))
    }

    pub(crate) fn str(s: impl Into<String>) -> Value {
        Value::py(Py::Str(s.into()))
    }

    pub(crate) fn int(v: i64) -> Value {
        Value::Int(AffineExpr::constant(v))
    }

    pub(crate) fn tuple(items: Vec<Value>) -> Value {
        Value::py(Py::Tuple(items))
    }

    pub(crate) fn list(items: Vec<Value>) -> Value {
        Value::py(Py::List(RefCell::new(items)))
    }

    /// A one-dimensional numpy array of compile-time numbers.
    pub(crate) fn array(items: Vec<Value>) -> Value {
        Value::py(Py::Array(items))
    }

    /// The integer when this is a compile-time integer (a boolean counts, as in Python).
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(a) => a.as_constant(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// The number as a float, for an integer, float or boolean.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(v) => Some(*v),
            _ => self.as_int().map(|v| v as f64),
        }
    }

    pub(crate) fn as_py(&self) -> Option<&Py> {
        match self {
            Value::Py(p) => Some(p),
            _ => None,
        }
    }

    /// Python's type name, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Int(a) if a.as_constant().is_none() => "loop index",
            Value::Int(_) => "int",
            Value::Iv(_) => "loop index",
            Value::Tile(_) | Value::Param(_) => "tile",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Vec(_) => "index vector",
            Value::Mask(_) => "mask",
            Value::None => "NoneType",
            Value::Error => "error",
            Value::Py(p) => match &**p {
                Py::Str(_) => "str",
                Py::Tuple(_) => "tuple",
                Py::List(_) => "list",
                Py::Dict(_) => "dict",
                Py::Slice(..) => "slice",
                Py::Range(..) => "range",
                Py::Ellipsis => "ellipsis",
                Py::Func(_) => "function",
                Py::Module(_) | Py::Package(_) => "module",
                Py::Ref(..) => "NKI name",
                Py::Builtin(_) => "builtin function",
                Py::Method(..) => "method",
                Py::Grid(_) => "mgrid",
                Py::Array(_) | Py::Array2(_) => "numpy.ndarray",
                Py::Unrun(_) => "value nkc could not compute",
                Py::Class(_) => "type",
                Py::Instance(_) => "object",
                Py::BoundMethod(..) => "method",
                Py::Alloc(_) => "allocation",
                Py::Partial(_) => "functools.partial",
                Py::Launch(..) => "launch",
            },
        }
    }

    /// The items of a tuple or a list (a copy), or `None` for anything else.
    pub(crate) fn seq_items(&self) -> Option<Vec<Value>> {
        match self.as_py()? {
            Py::Tuple(v) => Some(v.clone()),
            Py::List(v) => Some(v.borrow().clone()),
            Py::Array(v) => Some(v.clone()),
            Py::Array2(a) => Some(a.row_values().map(Value::array).collect()),
            _ => None,
        }
    }

    /// Python's `==` on compile-time values; `None` when one side has no compile-time value to
    /// compare (a loop index, a tile), which the caller reports.
    pub(crate) fn py_eq(&self, other: &Value) -> Option<bool> {
        match (self, other) {
            (Value::Int(a), Value::Int(b))
                if a.as_constant().is_none() || b.as_constant().is_none() =>
            {
                (a == b).then_some(true)
            }
            (Value::Iv(a), Value::Iv(b)) => (a == b).then_some(true),
            (Value::Tile(a), Value::Tile(b)) => Some(a == b),
            (Value::Param(a), Value::Param(b)) => Some(a == b),
            (Value::None, Value::None) => Some(true),
            (Value::None, _) | (_, Value::None) => Some(false),
            _ => {
                if let (Some(x), Some(y)) = (self.as_f64(), other.as_f64()) {
                    if matches!(self, Value::Float(_)) || matches!(other, Value::Float(_)) {
                        return Some(x == y);
                    }
                    return Some(self.as_int() == other.as_int());
                }
                match (self.as_py(), other.as_py()) {
                    (Some(a), Some(b)) => py_eq(a, b),
                    _ => Some(false),
                }
            }
        }
    }

    /// `str(v)`, as Python prints it.
    pub(crate) fn to_str(&self) -> String {
        match self {
            Value::Py(p) => match &**p {
                Py::Str(s) => s.clone(),
                _ => self.repr(),
            },
            _ => self.repr(),
        }
    }

    /// `repr(v)`.
    pub(crate) fn repr(&self) -> String {
        match self {
            Value::Int(a) => match a.as_constant() {
                Some(c) => c.to_string(),
                None => format!("{a:?}"),
            },
            Value::Iv(a) => format!("{a:?}"),
            Value::Float(v) => float_repr(*v),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::None => "None".into(),
            Value::Tile(_) | Value::Param(_) => "<tile>".into(),
            Value::Vec(_) => "<index vector>".into(),
            Value::Mask(_) => "<mask>".into(),
            Value::Error => "<error>".into(),
            Value::Py(p) => match &**p {
                Py::Str(s) => format!("'{s}'"),
                Py::Tuple(v) if v.len() == 1 => format!("({},)", v[0].repr()),
                Py::Tuple(v) => format!("({})", join(v)),
                Py::List(v) => format!("[{}]", join(&v.borrow())),
                Py::Dict(v) => {
                    let items: Vec<String> = v
                        .borrow()
                        .iter()
                        .map(|(k, v)| format!("{}: {}", k.repr(), v.repr()))
                        .collect();
                    format!("{{{}}}", items.join(", "))
                }
                Py::Slice(a, b, c) => format!("slice({}, {}, {})", a.repr(), b.repr(), c.repr()),
                Py::Range(a, b, 1) => format!("range({a}, {b})"),
                Py::Range(a, b, c) => format!("range({a}, {b}, {c})"),
                Py::Ellipsis => "Ellipsis".into(),
                Py::Func(f) => format!("<function {}>", f.def.name.name),
                Py::Module(m) => format!("<module '{m}'>"),
                Py::Package(m) => format!("<module '{}'>", m.name),
                Py::Ref(m, n) => format!("{m}.{n}"),
                Py::Builtin(n) => format!("<built-in function {n}>"),
                Py::Method(_, n) => format!("<method {n}>"),
                Py::Grid(g) => format!("<mgrid of {} axes>", g.len()),
                Py::Array(v) => {
                    let items: Vec<String> = v.iter().map(Value::repr).collect();
                    format!("array([{}])", items.join(", "))
                }
                Py::Array2(a) => {
                    let rows: Vec<String> =
                        a.row_values().map(|r| format!("[{}]", join(&r))).collect();
                    format!("array([{}])", rows.join(", "))
                }
                Py::Unrun(_) => "<not evaluated>".into(),
                Py::Class(_) | Py::Instance(_) | Py::BoundMethod(..) => {
                    object_repr(p).unwrap_or_default()
                }
                Py::Alloc(a) => a.repr(),
                Py::Partial(p) => p.repr(),
                Py::Launch(f, grid) => {
                    let g: Vec<String> = grid.iter().map(u64::to_string).collect();
                    format!("{}[{}]", f.repr(), g.join(", "))
                }
            },
        }
    }
}

fn join(v: &[Value]) -> String {
    v.iter().map(Value::repr).collect::<Vec<_>>().join(", ")
}

/// Python's `repr` of a float: `1.0`, `1e-05`, `0.1`.
pub(crate) fn float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == v.trunc() && v.abs() < 1e16 {
        return format!("{v:.1}");
    }
    let a = v.abs();
    if !(1e-4..1e16).contains(&a) {
        // Python writes `1e-05`: a two-digit exponent at least.
        let s = format!("{v:e}");
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ("-", d),
                None => ("+", e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    format!("{v}")
}

fn py_eq(a: &Py, b: &Py) -> Option<bool> {
    let seq_eq = |x: &[Value], y: &[Value]| -> Option<bool> {
        if x.len() != y.len() {
            return Some(false);
        }
        for (p, q) in x.iter().zip(y) {
            if !p.py_eq(q)? {
                return Some(false);
            }
        }
        Some(true)
    };
    Some(match (a, b) {
        (Py::Str(x), Py::Str(y)) => x == y,
        (Py::Tuple(x), Py::Tuple(y)) => return seq_eq(x, y),
        (Py::List(x), Py::List(y)) => return seq_eq(&x.borrow(), &y.borrow()),
        (Py::Range(a, b, c), Py::Range(d, e, f)) => (a, b, c) == (d, e, f),
        (Py::Ellipsis, Py::Ellipsis) => true,
        (Py::Module(x), Py::Module(y)) => x == y,
        (Py::Package(x), Py::Package(y)) => Rc::ptr_eq(x, y),
        (Py::Ref(m, x), Py::Ref(n, y)) => m == n && x == y,
        (Py::Builtin(x), Py::Builtin(y)) => x == y,
        (Py::Func(x), Py::Func(y)) => Rc::ptr_eq(&x.def, &y.def),
        (Py::Instance(_), Py::Instance(_)) | (Py::Class(_), Py::Class(_)) => {
            return object_eq(a, b)
        }
        (Py::Dict(x), Py::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            if x.len() != y.len() {
                return Some(false);
            }
            for (k, v) in x.iter() {
                match y.iter().find(|(k2, _)| k.py_eq(k2) == Some(true)) {
                    Some((_, v2)) if v.py_eq(v2)? => {}
                    _ => return Some(false),
                }
            }
            true
        }
        _ => false,
    })
}

/// The elements `range(a, b, c)` yields (`c != 0`).
pub(crate) fn range_items(a: i64, b: i64, c: i64) -> impl Iterator<Item = i64> {
    let mut x = a;
    std::iter::from_fn(move || {
        let more = if c > 0 { x < b } else { x > b };
        if !more {
            return None;
        }
        let v = x;
        x = x.saturating_add(c);
        Some(v)
    })
}

/// The number of elements of `range(a, b, c)` (`c != 0`).
pub(crate) fn range_len(a: i64, b: i64, c: i64) -> i64 {
    if c > 0 && b > a {
        (b - a + c - 1) / c
    } else if c < 0 && a > b {
        (a - b - c - 1) / (-c)
    } else {
        0
    }
}

/// Python's `format(v, spec)` for the specs kernels write in messages: `d`, `.3f`, `.2e`, `g`,
/// `>8`, `<8`, `^8`, `08d`, `,`; any other spec prints the value as `str()` does.
pub(crate) fn format_spec(v: &Value, spec: &str) -> String {
    let (align, rest) = match spec.chars().next() {
        Some(c @ ('<' | '>' | '^')) => (Some(c), &spec[1..]),
        _ => (None, spec),
    };
    let zero = rest.starts_with('0') && rest.len() > 1;
    let rest = if zero { &rest[1..] } else { rest };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let width: usize = digits.parse().unwrap_or(0);
    let rest = &rest[digits.len()..];
    let rest = rest.trim_start_matches(',');
    let body = match (rest, v.as_f64()) {
        (r, Some(x)) if r.starts_with('.') => {
            let kind = r.chars().last().unwrap_or('f');
            let prec: usize = r[1..]
                .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse()
                .unwrap_or(6);
            match kind {
                'e' => format!("{x:.prec$e}"),
                '%' => format!("{:.prec$}%", x * 100.0),
                _ => format!("{x:.prec$}"),
            }
        }
        ("f", Some(x)) => format!("{x:.6}"),
        ("e", Some(x)) => format!("{x:.6e}"),
        _ => v.to_str(),
    };
    if body.len() >= width {
        return body;
    }
    let pad = width - body.len();
    if zero {
        return format!("{}{body}", "0".repeat(pad));
    }
    let numeric = v.as_f64().is_some();
    match align.unwrap_or(if numeric { '>' } else { '<' }) {
        '>' => format!("{}{body}", " ".repeat(pad)),
        '^' => format!("{}{body}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2)),
        _ => format!("{body}{}", " ".repeat(pad)),
    }
}

/// A two-dimensional numpy array of compile-time numbers, row-major (`np.identity(128)`, `np.tri(n, m)`:
/// [`super::np_consts`] builds them; a value type, so it lives with the other Python values).
#[derive(Debug, Clone)]
pub(crate) struct Array2 {
    pub rows: usize,
    pub cols: usize,
    pub items: Vec<Value>,
}

/// The class of a class value.
pub(crate) fn class_of(v: &Value) -> Option<&ClassVal> {
    match v.as_py()? {
        Py::Class(c) => Some(c),
        _ => None,
    }
}

/// Whether two values are the same Python object.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Py(x), Value::Py(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// `repr()` of a class or an instance: a dataclass's fields, else Python's default form.
fn object_repr(p: &Py) -> Option<String> {
    match p {
        Py::Class(c) => Some(format!("<class '{}'>", c.name)),
        Py::Instance(i) => {
            let c = class_of(&i.class)?;
            match &c.fields {
                Some(fields) => {
                    let attrs = i.attrs.borrow();
                    let items: Vec<String> = fields
                        .iter()
                        .map(|(n, _)| {
                            let v = attrs.get(n).map_or("?".into(), Value::repr);
                            format!("{n}={v}")
                        })
                        .collect();
                    Some(format!("{}({})", c.name, items.join(", ")))
                }
                None => Some(format!("<{} object>", c.name)),
            }
        }
        Py::BoundMethod(_, f) => match f.as_py() {
            Some(Py::Func(f)) => Some(format!("<bound method {}>", f.def.name.name)),
            _ => Some("<bound method>".into()),
        },
        _ => None,
    }
}

/// `a == b` of two instances: a dataclass compares its fields, any other class identity.
fn object_eq(a: &Py, b: &Py) -> Option<bool> {
    match (a, b) {
        (Py::Instance(x), Py::Instance(y)) => {
            if std::ptr::eq(x, y) {
                return Some(true);
            }
            if !same(&x.class, &y.class) {
                return Some(false);
            }
            let fields = class_of(&x.class).and_then(|c| c.fields.as_ref());
            let Some(fields) = fields else {
                return Some(false);
            };
            let (xa, ya) = (x.attrs.borrow(), y.attrs.borrow());
            for (n, _) in fields {
                match (xa.get(n), ya.get(n)) {
                    (Some(p), Some(q)) if p.py_eq(q)? => {}
                    _ => return Some(false),
                }
            }
            Some(true)
        }
        (Py::Class(x), Py::Class(y)) => Some(std::ptr::eq(x, y)),
        _ => None,
    }
}
