//! Names bound in the body of a hardware loop (`nl.affine_range`, `nl.sequential_range`,
//! `range`), seen after the loop.
//!
//! Python keeps a name bound in a loop's body after the loop. NKI's tracer runs a hardware
//! loop's body once, with the loop variable standing for every iteration, so after the loop the
//! name holds that traced value. It means the same thing after the loop only when it is the same
//! in every iteration: [`compute_loop_exit`] answers whether a value is, and why not.
//!
//! - A value that names no index of a loop that has ended (a compile-time Python value, an
//!   index vector `nl.arange(n)[:, None]`, an affine expression of the enclosing loops, a view of
//!   an array allocated before the loop at a place that does not move with the loop) stays bound.
//! - A value that names the ended loop's index ([`LoopExit::Varies`]) differs per iteration.
//! - A tile the body allocates ([`LoopExit::BodyTile`]) is one buffer per iteration in nkc's IR
//!   (its allocation lives in the loop's body); after the loop it would be the last iteration's
//!   data, which nkc does not keep.
//!
//! Invariant: the answer depends only on the value, the loops still open (`enclosing`) and the
//! number of arrays that existed before the loop, so it is the same for every name of a body.

use super::pyvalue::Py;
use super::{TileVal, Value};
use penguin::{AffineExpr, Axis};

/// Why a name bound in a loop body is not bound after the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopExit {
    /// It is the loop's own variable.
    LoopVar,
    /// Its value depends on the index of a loop that has ended (`iv`, the innermost one named).
    Varies { iv: String },
    /// It is (or holds) a tile the loop's body allocated.
    BodyTile,
}

/// How deep [`compute_loop_exit`] looks into nested containers (a list that holds itself ends
/// there, and counts as varying).
const MAX_DEPTH: usize = 32;

/// Whether `v`, bound in the body of the loop of `axis` (named `iv`), keeps its meaning after the
/// loop: `None` when it does. `live` says whether a loop index is still in scope (an enclosing
/// loop's); `tensors_before` is the number of arrays allocated before the loop.
pub(crate) fn compute_loop_exit(
    v: &Value,
    axis: Axis,
    iv: &str,
    live: &dyn Fn(Axis) -> bool,
    tensors_before: usize,
) -> Option<LoopExit> {
    if matches!(v, Value::Iv(a) if *a == axis) {
        return Some(LoopExit::LoopVar);
    }
    let cx = Cx {
        live,
        tensors_before,
    };
    cx.value(v, 0).map(|why| match why {
        Why::Varies => LoopExit::Varies { iv: iv.to_string() },
        Why::BodyTile => LoopExit::BodyTile,
    })
}

enum Why {
    Varies,
    BodyTile,
}

struct Cx<'a> {
    live: &'a dyn Fn(Axis) -> bool,
    tensors_before: usize,
}

impl Cx<'_> {
    fn affine(&self, e: &AffineExpr) -> Option<Why> {
        e.axes().any(|a| !(self.live)(a)).then_some(Why::Varies)
    }

    fn tile(&self, t: &TileVal) -> Option<Why> {
        if t.tensor.as_u32() as usize >= self.tensors_before {
            return Some(Why::BodyTile);
        }
        if let Some(why) = t.start.iter().find_map(|s| self.affine(s)) {
            return Some(why);
        }
        if t.pattern.is_some() {
            // An access pattern's offsets may name the loop; nkc does not look into them.
            return Some(Why::Varies);
        }
        (t.indirect.as_ref()).and_then(|i| self.tile(i))
    }

    fn all<'v>(&self, vs: impl IntoIterator<Item = &'v Value>, depth: usize) -> Option<Why> {
        vs.into_iter().find_map(|v| self.value(v, depth + 1))
    }

    fn value(&self, v: &Value, depth: usize) -> Option<Why> {
        if depth > MAX_DEPTH {
            return Some(Why::Varies);
        }
        match v {
            Value::Int(e) => self.affine(e),
            Value::Iv(a) => (!(self.live)(*a)).then_some(Why::Varies),
            Value::Tile(t) => self.tile(t),
            Value::Vec(iv) => self.affine(&iv.start),
            Value::Mask(pieces) => pieces.iter().find_map(|p| {
                (p.bounds.iter().find_map(|b| self.affine(&b.bound)))
                    .or_else(|| p.guards.iter().find_map(|g| self.affine(&g.expr)))
                    .or_else(|| p.nd.iter().find_map(|b| self.affine(&b.bound)))
            }),
            Value::Param(_) | Value::Float(_) | Value::Bool(_) | Value::None | Value::Error => None,
            Value::Py(p) => self.py(p, depth),
        }
    }

    fn py(&self, p: &Py, depth: usize) -> Option<Why> {
        match p {
            Py::Tuple(items) | Py::Array(items) => self.all(items, depth),
            Py::List(items) => self.all(items.borrow().iter(), depth),
            Py::Dict(items) => {
                let items = items.borrow();
                self.all(items.iter().flat_map(|(k, v)| [k, v]), depth)
            }
            Py::Slice(a, b, c) => self.all([a, b, c], depth),
            Py::Array2(a) => self.all(&a.items, depth),
            Py::Grid(g) => g.iter().find_map(|iv| self.affine(&iv.start)),
            Py::Method(recv, _) => self.value(recv, depth + 1),
            Py::BoundMethod(recv, f) => self.all([recv, f], depth),
            Py::Launch(f, _) => self.value(f, depth + 1),
            Py::Partial(p) => (self.value(&p.func, depth + 1)).or_else(|| {
                self.all(
                    p.args.iter().chain(p.kwargs.iter().map(|(_, v, _)| v)),
                    depth,
                )
            }),
            // A function defined in the body closes over the body's scope, its loop variable
            // included.
            Py::Func(f) => (f.closure.iter())
                .find_map(|scope| self.all(scope.values().map(|b| &b.value), depth)),
            Py::Instance(i) => self.all(i.attrs.borrow().values(), depth),
            Py::Class(c) => self.all(c.attrs.borrow().values(), depth),
            Py::Str(_)
            | Py::Range(..)
            | Py::Ellipsis
            | Py::Module(_)
            | Py::Package(_)
            | Py::Ref(..)
            | Py::Builtin(_)
            | Py::Unrun(_)
            | Py::Alloc(_) => None,
        }
    }
}
