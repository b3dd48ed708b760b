//! Base classes a kernel's class may derive from that are not classes of its file:
//! `nl.NKIObject` (NKI's base of objects a kernel passes around, an ordinary object here) and
//! `enum.Enum` / `IntEnum` / `Flag` (from `enum`). An enum class's plain attributes become its
//! members: instances of the class with `name` and `value`, equal only to themselves, as
//! Python's `Enum` makes them; `enum.auto()` numbers them from 1.
//!
//! Invariants: a member is made once, when the `class` statement runs, so identity is equality;
//! methods and names starting with `_` stay plain class attributes.

use super::pyvalue::{InstanceVal, Py};
use super::Value;
use std::cell::RefCell;
use std::collections::HashMap;

/// What a base class value that is no user class means.
pub(super) enum ForeignBase {
    /// `object`'s equivalent: nothing to inherit.
    Object,
    /// An enum base: the class's attributes become members.
    Enum,
}

/// The meaning of base `v` when it is one of the foreign bases nkc models.
pub(super) fn foreign_base(v: &Value) -> Option<ForeignBase> {
    match v.as_py()? {
        Py::Ref("nl" | "nki", n) if n == "NKIObject" => Some(ForeignBase::Object),
        Py::Module(m) => match m.as_str() {
            "nki.language.NKIObject" | "neuronxcc.nki.language.NKIObject" => {
                Some(ForeignBase::Object)
            }
            "enum.Enum" | "enum.IntEnum" | "enum.Flag" | "enum.IntFlag" | "enum.StrEnum" => {
                Some(ForeignBase::Enum)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether `v` is the placeholder `enum.auto()` returns (`functions`).
pub(super) fn is_auto(v: &Value) -> bool {
    matches!(v.as_py(), Some(Py::Module(m)) if m == "enum.auto()")
}

/// Turns the plain attributes of enum class `class` (a `Py::Class`) into its members, in
/// `order` (the body's order of bindings).
pub(super) fn make_members(class: &Value, order: &[String]) {
    let Some(Py::Class(c)) = class.as_py() else {
        return;
    };
    let mut attrs = c.attrs.borrow_mut();
    let mut next_auto = 1i64;
    for name in order {
        if name.starts_with('_') {
            continue;
        }
        let Some(v) = attrs.get(name).cloned() else {
            continue;
        };
        if matches!(v.as_py(), Some(Py::Func(_) | Py::Builtin(_) | Py::Class(_))) {
            continue;
        }
        let value = if is_auto(&v) {
            Value::int(next_auto)
        } else {
            v
        };
        if let Some(i) = value.as_int() {
            next_auto = i + 1;
        }
        let member = Value::py(Py::Instance(InstanceVal {
            class: class.clone(),
            attrs: RefCell::new(HashMap::from([
                ("name".to_string(), Value::str(name)),
                ("value".to_string(), value.clone()),
                ("_value_".to_string(), value),
            ])),
            frozen: std::cell::Cell::new(true),
        }));
        attrs.insert(name.clone(), member);
    }
}
