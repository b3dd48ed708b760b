//! User-defined classes of the compile-time Python: `class` statements, instances, bound
//! methods, `@dataclass`, and `raise`.
//!
//! The object model is Python's, reduced to what kernels use: a class is a name, its bases and a
//! dict of attributes (the values its body bound: constants, methods); an instance is a class and
//! a dict of its own attributes; `obj.name` looks in the instance's dict, then in the class and
//! its bases (depth first, in order), and a function found on the class is bound to the instance
//! (a [`Py::BoundMethod`]). Calling a class makes an instance and runs `__init__` with it; a
//! `@dataclass` without its own `__init__` gets the generated one (its fields, in the order the
//! class body declares them, positional or by keyword, with their defaults). `raise` of an
//! exception is a diagnostic (`E0215`) carrying its message, as the traced kernel would stop with
//! it.
//!
//! Invariants: a class's dict and an instance's are shared and mutable (`RefCell` inside the
//! value's `Rc`), as Python's objects are: a module-level instance mutated by a kernel's helper
//! keeps the change; a method closes over the scopes around its `class` statement, never over the
//! class body (Python's rule: the body's names are reached through `self` or the class).

use super::enum_classes;
use super::pyvalue::{class_of, same, ClassVal, FuncVal, InstanceVal, Py};
use super::stmts::Flow;
use super::{Checker, Value};
use crate::ast::{self, Expr, ExprKind, Span};
use crate::codes;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Exception classes of Python a kernel may raise or derive from without defining them.
pub(crate) const EXCEPTIONS: [&str; 10] = [
    "Exception",
    "ValueError",
    "TypeError",
    "AssertionError",
    "NotImplementedError",
    "RuntimeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "ZeroDivisionError",
];

/// `name` in the dict of class `c` or of its bases (depth first).
pub(crate) fn class_lookup(c: &ClassVal, name: &str) -> Option<Value> {
    if let Some(v) = c.attrs.borrow().get(name) {
        return Some(v.clone());
    }
    c.bases
        .iter()
        .filter_map(class_of)
        .find_map(|b| class_lookup(b, name))
}

/// Whether class `c` is `target` or derives from it.
fn derives(c: &Value, target: &Value) -> bool {
    if let (Some(Py::Class(_)), Some(Py::Class(_))) = (c.as_py(), target.as_py()) {
        if same(c, target) {
            return true;
        }
    }
    class_of(c).is_some_and(|cv| cv.bases.iter().any(|b| derives(b, target)))
}

/// Whether `v` is an instance of class `class` (or of a class derived from it).
pub(crate) fn is_instance(v: &Value, class: &Value) -> bool {
    match v.as_py() {
        Some(Py::Instance(i)) => derives(&i.class, class),
        _ => false,
    }
}

/// The dataclass decorator's `frozen=`, when `d` is `@dataclass`, `@dataclasses.dataclass` or
/// either called with keywords; `None` for any other decorator.
fn dataclass_decorator(d: &Expr) -> Option<Option<&Expr>> {
    let (func, kwargs) = match &d.kind {
        ExprKind::Call { func, kwargs, .. } => (&**func, Some(kwargs)),
        _ => (d, None),
    };
    let name = match &func.kind {
        ExprKind::Name(n) => n.as_str(),
        ExprKind::Attribute { attr, .. } => attr.name.as_str(),
        _ => return None,
    };
    if name != "dataclass" {
        return None;
    }
    let frozen = kwargs.and_then(|k| k.iter().find(|k| k.name.name == "frozen"));
    Some(frozen.map(|k| &k.value))
}

impl Checker<'_> {
    /// Runs a `class` statement: its body in a scope of its own, whose bindings become the
    /// class's dict; binds the class's name.
    pub(crate) fn exec_class(&mut self, c: &Rc<ast::ClassDef>, at: &Span) -> Flow {
        let mut dataclass = false;
        let mut frozen = false;
        for d in &c.decorators {
            match dataclass_decorator(d) {
                Some(f) => {
                    dataclass = true;
                    if let Some(f) = f {
                        let Some(v) = self.eval(f) else {
                            return Flow::Stop;
                        };
                        match self.truthy(&v, f) {
                            Some(b) => frozen = b,
                            None => return Flow::Stop,
                        }
                    }
                }
                None => {
                    self.unsupported_py(
                        "a class decorator other than `@dataclass`".into(),
                        &d.span,
                    );
                    return Flow::Stop;
                }
            }
        }
        let mut bases = Vec::new();
        let mut exception = false;
        let mut is_enum = false;
        for b in &c.bases {
            if let ExprKind::Name(n) = &b.kind {
                if self.find(n).is_none() {
                    if EXCEPTIONS.contains(&n.as_str()) {
                        exception = true;
                        continue;
                    }
                    if n == "object" {
                        continue;
                    }
                }
            }
            let Some(v) = self.eval(b) else {
                return Flow::Stop;
            };
            // enum_classes: `nl.NKIObject`, `enum.Enum` and its kin.
            match enum_classes::foreign_base(&v) {
                Some(enum_classes::ForeignBase::Object) => continue,
                Some(enum_classes::ForeignBase::Enum) => {
                    is_enum = true;
                    continue;
                }
                None => {}
            }
            match class_of(&v) {
                Some(bc) => {
                    exception |= bc.exception;
                    bases.push(v.clone());
                }
                None => {
                    self.unsupported_py(
                        format!("deriving a class from a `{}`", v.type_name()),
                        &b.span,
                    );
                    return Flow::Stop;
                }
            }
        }
        // The methods close over the scopes around the class, as `def`s there would.
        let closure = if self.frames > 0 || self.scopes.len() > 1 || self.kernel_frame {
            self.scopes.clone()
        } else {
            Vec::new()
        };
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        let in_loop = self.in_loop_body;
        let flow = self.exec_block(&c.body, &mut out, in_loop);
        self.pending.extend(out);
        let scope = self.scopes.pop().unwrap_or_default();
        match flow {
            Flow::Next => {}
            Flow::Stop => return Flow::Stop,
            _ => {
                self.unsupported_py("`return`, `break` or `continue` in a class body".into(), at);
                return Flow::Stop;
            }
        }
        let mut attrs: HashMap<String, Value> = HashMap::new();
        for (name, b) in scope {
            let v = match b.value.as_py() {
                Some(Py::Func(f)) => Value::py(Py::Func(FuncVal {
                    def: f.def.clone(),
                    defaults: f.defaults.clone(),
                    closure: closure.clone(),
                    package: f.package.clone(),
                })),
                _ => b.value,
            };
            attrs.insert(name, v);
        }
        let fields = dataclass.then(|| {
            let mut fields: Vec<(String, Option<Value>)> = Vec::new();
            for b in bases.iter().filter_map(class_of) {
                for f in b.fields.iter().flatten() {
                    fields.retain(|(n, _)| *n != f.0);
                    fields.push(f.clone());
                }
            }
            for s in &c.body {
                let name = match &s.kind {
                    ast::StmtKind::Declare(id) => &id.name,
                    ast::StmtKind::Assign {
                        target: ast::Target::Name(id),
                        ..
                    } => &id.name,
                    _ => continue,
                };
                let default = attrs.get(name).cloned();
                match fields.iter_mut().find(|(n, _)| n == name) {
                    Some(f) => f.1 = default.or(f.1.take()),
                    None => fields.push((name.clone(), default)),
                }
            }
            fields
        });
        let class = ClassVal {
            name: c.name.name.clone(),
            bases,
            exception,
            attrs: RefCell::new(attrs),
            fields,
            frozen,
        };
        let class = Value::py(Py::Class(class));
        if is_enum {
            let order: Vec<String> = (c.body.iter())
                .filter_map(|s| match &s.kind {
                    ast::StmtKind::Assign {
                        target: ast::Target::Name(id),
                        ..
                    } => Some(id.name.clone()),
                    _ => None,
                })
                .collect();
            enum_classes::make_members(&class, &order);
        }
        self.bind(&c.name.name, class, c.name.span.clone());
        Flow::Next
    }

    /// `C(args)`: a new instance, initialised by `__init__` (or a dataclass's generated one).
    pub(crate) fn instantiate(
        &mut self,
        class: &Value,
        pos: Vec<Value>,
        kws: super::pyvalue::Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let c = class_of(class)?;
        let inst = Value::py(Py::Instance(InstanceVal {
            class: class.clone(),
            attrs: RefCell::new(HashMap::new()),
            frozen: std::cell::Cell::new(false),
        }));
        let Some(Py::Instance(iv)) = inst.as_py() else {
            return None;
        };
        if let Some(init) = class_lookup(c, "__init__") {
            let Some(Py::Func(f)) = init.as_py() else {
                return self.type_error(format!("`{}.__init__` is not a function", c.name), at);
            };
            let mut args = vec![inst.clone()];
            args.extend(pos);
            let r = self.call_function(f, args, kws, at)?;
            if !matches!(r, Value::None) {
                return self.type_error(
                    format!(
                        "`{}.__init__` returned a `{}`, not `None`",
                        c.name,
                        r.type_name()
                    ),
                    at,
                );
            }
            return Some(inst);
        }
        if let Some(fields) = &c.fields {
            if pos.len() > fields.len() {
                return self.type_error(
                    format!(
                        "`{}` takes {} positional argument{} but {} were given",
                        c.name,
                        fields.len(),
                        if fields.len() == 1 { "" } else { "s" },
                        pos.len()
                    ),
                    at,
                );
            }
            let mut given: Vec<Option<Value>> = pos.into_iter().map(Some).collect();
            given.resize(fields.len(), None);
            for (name, v, span) in kws {
                match fields.iter().position(|(n, _)| *n == name) {
                    Some(k) if given[k].is_some() => {
                        return self.type_error(
                            format!("`{}` got several values for argument `{name}`", c.name),
                            &span,
                        )
                    }
                    Some(k) => given[k] = Some(v),
                    None => {
                        return self.type_error(
                            format!("`{}` got an unexpected keyword argument `{name}`", c.name),
                            &span,
                        )
                    }
                }
            }
            for ((name, default), v) in fields.iter().zip(given) {
                let Some(v) = v.or_else(|| default.clone()) else {
                    return self
                        .type_error(format!("`{}` is missing the argument `{name}`", c.name), at);
                };
                iv.attrs.borrow_mut().insert(name.clone(), v);
            }
            iv.frozen.set(c.frozen);
            return Some(inst);
        }
        if c.exception {
            // An exception class without `__init__`: its arguments, as `args`.
            iv.attrs
                .borrow_mut()
                .insert("args".into(), Value::tuple(pos));
            return Some(inst);
        }
        if !pos.is_empty() || !kws.is_empty() {
            return self.type_error(format!("`{}` takes no arguments", c.name), at);
        }
        Some(inst)
    }

    /// `v.name` of a class or an instance.
    pub(crate) fn object_attr(&mut self, v: &Value, name: &str, at: &Span) -> Option<Value> {
        match v.as_py() {
            Some(Py::Instance(i)) => {
                if let Some(a) = i.attrs.borrow().get(name) {
                    return Some(a.clone());
                }
                let c = class_of(&i.class)?;
                match (class_lookup(c, name), name) {
                    (Some(f), _) if matches!(f.as_py(), Some(Py::Func(_))) => {
                        Some(Value::py(Py::BoundMethod(v.clone(), f)))
                    }
                    (Some(a), _) => Some(a),
                    (None, "__class__") => Some(i.class.clone()),
                    (None, _) => self.type_error(
                        format!("a `{}` object has no attribute `{name}`", c.name),
                        at,
                    ),
                }
            }
            Some(Py::Class(c)) => match (class_lookup(c, name), name) {
                (Some(a), _) => Some(a),
                (None, "__name__") => Some(Value::str(c.name.clone())),
                (None, _) => {
                    self.type_error(format!("class `{}` has no attribute `{name}`", c.name), at)
                }
            },
            _ => None,
        }
    }

    /// Whether `v.name` exists, for `hasattr`.
    pub(crate) fn object_has_attr(v: &Value, name: &str) -> bool {
        match v.as_py() {
            Some(Py::Instance(i)) => {
                i.attrs.borrow().contains_key(name)
                    || class_of(&i.class).is_some_and(|c| class_lookup(c, name).is_some())
            }
            Some(Py::Class(c)) => class_lookup(c, name).is_some(),
            _ => false,
        }
    }

    /// `obj.name = v` (`self.offset = 0`).
    pub(crate) fn set_attr(&mut self, obj: &Value, name: &str, v: Value, at: &Span) -> Option<()> {
        match obj.as_py() {
            Some(Py::Instance(i)) => {
                if i.frozen.get() {
                    self.raise(
                        codes::PYTHON_ERROR,
                        format!("cannot assign to field `{name}` of a frozen dataclass"),
                        at,
                    );
                    return None;
                }
                self.mutating(at)?;
                i.attrs.borrow_mut().insert(name.to_string(), v);
                Some(())
            }
            Some(Py::Class(c)) => {
                self.mutating(at)?;
                c.attrs.borrow_mut().insert(name.to_string(), v);
                Some(())
            }
            _ if matches!(obj, Value::Error) => None,
            _ => {
                self.type_error(
                    format!(
                        "nkc cannot set the attribute `{name}` of a `{}`",
                        obj.type_name()
                    ),
                    at,
                );
                None
            }
        }
    }

    /// `value.attr = v` for a target.
    pub(crate) fn assign_attr(
        &mut self,
        value: &Expr,
        attr: &ast::Ident,
        v: Value,
        at: &Span,
    ) -> Option<()> {
        let obj = self.eval(value)?;
        self.set_attr(&obj, &attr.name, v, at)
    }

    /// `value.attr op= rhs`.
    pub(crate) fn aug_attr(
        &mut self,
        value: &Expr,
        attr: &ast::Ident,
        op: ast::BinOp,
        rhs: &Expr,
        at: &Span,
    ) -> Option<()> {
        let obj = self.eval(value)?;
        let cur = self.object_attr(&obj, &attr.name, &attr.span)?;
        let r = self.eval(rhs)?;
        let whole = Expr {
            kind: ExprKind::Error,
            span: at.clone(),
        };
        let new = self.binary(op, cur, r, &whole, rhs)?;
        self.set_attr(&obj, &attr.name, new, at)
    }

    /// `raise exc`: the exception's type and message, as a diagnostic; evaluation stops.
    pub(crate) fn exec_raise(&mut self, exc: Option<&Expr>, at: &Span) -> Flow {
        let (kind, message) = match exc {
            None => ("Exception".to_string(), String::new()),
            Some(e) => match self.exception_parts(e) {
                Some(parts) => parts,
                None => return Flow::Stop,
            },
        };
        if !self.stopped {
            self.error(super::error::CheckError::Raised {
                exc: kind,
                message,
                at: exc.map_or(at.clone(), |e| e.span.clone()),
            });
        }
        self.stopped = true;
        Flow::Stop
    }

    /// The type name and message of a raised exception: `ValueError("...")` of Python's
    /// exceptions, an instance of a user exception class, or anything else (its `str()`).
    fn exception_parts(&mut self, e: &Expr) -> Option<(String, String)> {
        let builtin = |this: &Self, f: &Expr| match &f.kind {
            ExprKind::Name(n) if this.find(n).is_none() && EXCEPTIONS.contains(&n.as_str()) => {
                Some(n.clone())
            }
            _ => None,
        };
        if let Some(kind) = builtin(self, e) {
            return Some((kind, String::new()));
        }
        if let ExprKind::Call { func, args, .. } = &e.kind {
            if let Some(kind) = builtin(self, func) {
                let mut parts = Vec::new();
                for a in args {
                    let v = self.eval(a)?;
                    parts.push(v.to_str());
                }
                return Some((kind, parts.join(", ")));
            }
        }
        let v = self.eval(e)?;
        if let Some(Py::Instance(i)) = v.as_py() {
            let name = class_of(&i.class).map_or(String::new(), |c| c.name.clone());
            let args = i.attrs.borrow().get("args").cloned();
            let message = match args.as_ref().and_then(Value::seq_items) {
                Some(items) => items
                    .iter()
                    .map(Value::to_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                None => String::new(),
            };
            return Some((name, message));
        }
        if let Some(Py::Class(c)) = v.as_py() {
            return Some((c.name.clone(), String::new()));
        }
        Some(("Exception".into(), v.to_str()))
    }

    /// `isinstance(v, C)` where `C` is a user class; `None` when `C` is not one.
    pub(crate) fn isinstance_user(v: &Value, class: &Value) -> Option<bool> {
        class_of(class)?;
        Some(is_instance(v, class))
    }
}
