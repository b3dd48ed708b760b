//! The SPMD launch grid: `nl.program_id(axis)`, `nl.num_programs(axes)`, `nl.program_ndim()`, and
//! the loops that run the kernel's programs.
//!
//! NKI launches a kernel as a grid of programs (`kernel[2, 4](a, b)`), each running the whole
//! body with its own `nl.program_id`. nkc runs the programs of one launch on one core, one after
//! the other: the grid given by the run (`--grid 2x4`) becomes loops around the kernel's body,
//! outermost for axis 0, each an `nl.affine_range` over that axis's extent (programs are
//! independent, so the backend may overlap consecutive programs as it overlaps the iterations of
//! any affine loop), and `nl.program_id(axis)` is that loop's index. An axis of extent 1 makes
//! no loop: its program id is the constant 0, so `--grid 1` compiles the kernel exactly as
//! without a grid.
//!
//! A launch written in Python (`return _kernel[BH](q, k, v)`, in a wrapper that host code calls
//! as the kernel) is the same: `f[2, 4]` is a launch value, and calling it traces `f` with the
//! grid's loops around the statements of its call, its program ids being those loops' indices.
//! A launch inside a launched program, or under a run's `--grid`, is E0214 (NKI launches
//! kernels from the host only).
//!
//! Invariants:
//! - the grid loops are created before the kernel's body is traced, so their axes come first in
//!   `Checker::loops` (enclosing loops before the loops they enclose) and they are in
//!   `Checker::enclosing` while the body is traced: every index built from a program id is affine
//!   in them and bounds-checked over the whole grid;
//! - no scope is opened for them, and they are the kernel frame's base (`Checker::loop_base`):
//!   the names the body binds are the kernel's, and its `return` names the kernel's outputs, as
//!   without a grid;
//! - a kernel that asks for a program id without a grid from the run is one diagnostic (E0260)
//!   naming `--grid`: NKI documents no default grid for `program_id`.

use super::{CLoop, CStmt, CStmtKind, Checker, Value};
use crate::ast::Span;
use crate::codes;
use crate::diagnostic::Error;
use penguin::{Axis, AxisAttrs, LoopKind, StmtAnnot};

/// The most axes a launch grid may have (NKI's grids have at most 3 in its examples; 4 keeps
/// every program id an affine value of its own loop).
pub const MAX_GRID_AXES: usize = 4;

/// The launch grid of the kernel being checked.
#[derive(Clone, Debug, Default)]
pub(crate) struct GridData {
    /// The extent of each axis, from the run; `None` when the run gives no grid.
    extents: Option<Vec<u64>>,
    /// The program id of each axis: its loop's index (an integer affine in it, so Python
    /// arithmetic on it builds index expressions), or 0 for an axis of extent 1.
    ids: Vec<Value>,
    /// The loops made for the axes of extent more than 1, outermost first.
    axes: Vec<Axis>,
    /// Whether "no grid" was already reported for this kernel.
    reported: bool,
}

impl Checker<'_> {
    /// Opens the grid loops of the run's grid (if any) before the body of kernel at `span` is
    /// traced.
    pub(super) fn open_grid(&mut self, grid: Option<&[u64]>, span: &Span) {
        let Some(extents) = grid else {
            return;
        };
        let mut ids = Vec::new();
        let mut axes = Vec::new();
        for (k, &n) in extents.iter().enumerate() {
            if n <= 1 {
                ids.push(Value::int(0));
                continue;
            }
            let axis = Axis::from_u32(self.loops.len() as u32);
            self.loops.push(CLoop {
                iv: format!("program_id{k}"),
                kind: LoopKind::Affine,
                lb: 0,
                ub: n as i64,
                attrs: AxisAttrs::default(),
                span: span.clone(),
            });
            self.enclosing.push(axis);
            ids.push(Value::Int(penguin::AffineExpr::iv(axis)));
            axes.push(axis);
        }
        // The body is the kernel's frame, not a loop body: `return` and rebinding work as
        // without a grid.
        self.loop_base = self.enclosing.len();
        self.grid = GridData {
            extents: Some(extents.to_vec()),
            ids,
            axes,
            reported: false,
        };
    }

    /// Closes the grid loops around the traced `body` of the kernel at `span`.
    pub(super) fn close_grid(&mut self, body: Vec<CStmt>, span: &Span) -> Vec<CStmt> {
        let axes = std::mem::take(&mut self.grid.axes);
        self.loop_base = 0;
        let mut body = body;
        for &axis in axes.iter().rev() {
            self.enclosing.pop();
            body = vec![CStmt {
                kind: CStmtKind::Loop { axis, body },
                annot: StmtAnnot::default(),
                span: span.clone(),
            }];
        }
        body
    }

    /// `f[key]` of a function: a launch over the grid `key` (an integer or a tuple of them,
    /// each at least 1, at most [`MAX_GRID_AXES`]).
    pub(super) fn launch_value(&mut self, f: &Value, key: &Value, at: &Span) -> Option<Value> {
        let items = key.seq_items().unwrap_or_else(|| vec![key.clone()]);
        let extents: Option<Vec<u64>> = (items.iter())
            .map(|v| v.as_int().filter(|&n| n >= 1).map(|n| n as u64))
            .collect();
        match extents {
            Some(e) if !e.is_empty() && e.len() <= MAX_GRID_AXES => {
                Some(Value::py(super::pyvalue::Py::Launch(f.clone(), e)))
            }
            _ => self.type_error(
                format!(
                    "a launch grid is 1 to {MAX_GRID_AXES} compile-time integers of at least 1, not `{}`",
                    key.repr()
                ),
                at,
            ),
        }
    }

    /// `f[grid](args)`: calls `f` with the grid's loops around the statements of the call.
    pub(super) fn call_launch(
        &mut self,
        f: &Value,
        grid: &[u64],
        pos: Vec<Value>,
        kws: super::pyvalue::Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let Some(super::pyvalue::Py::Func(func)) = f.as_py() else {
            return self.type_error("a launch of a non-function".into(), at);
        };
        if self.grid.extents.is_some() {
            self.error(
                Error::new(
                    codes::PYTHON_UNSUPPORTED,
                    "a kernel launched inside a launched program (or under the run's `--grid`)",
                    at.clone(),
                )
                .with_label("a launch from a program")
                .with_help("NKI launches kernels from the host: launch this one from the function `--kernel` names, and give no `--grid` when it does"),
            );
            self.stopped = true;
            return None;
        }
        let saved_base = self.loop_base;
        let first = self.pending.len();
        self.open_grid(Some(grid), at);
        let out = self.call_function(func, pos, kws, at);
        let body = self.pending.split_off(first.min(self.pending.len()));
        let body = self.close_grid(body, at);
        self.grid = GridData::default();
        self.loop_base = saved_base;
        self.pending.extend(body);
        out
    }

    /// The extents of the grid, or the diagnostic for a grid query without one (once).
    fn grid_extents(&mut self, what: &str, at: &Span) -> Option<Vec<u64>> {
        if let Some(e) = &self.grid.extents {
            return Some(e.clone());
        }
        if !self.grid.reported {
            self.grid.reported = true;
            self.error(
                Error::new(
                    codes::NO_GRID,
                    format!("`{what}` needs a launch grid, and the run gives none"),
                    at.clone(),
                )
                .with_label("the kernel is an SPMD program")
                .with_help(
                    "give the grid the kernel is launched with, as NKI's `kernel[2, 4](...)`: `--grid 2x4` (one extent per axis; `--grid 1` for a single program)",
                ),
            );
        }
        self.stopped = true;
        None
    }

    /// An axis argument of `what`: an integer in `0..ndim`, negative ones counted from the end.
    fn grid_axis(&mut self, v: &Value, ndim: usize, what: &str, at: &Span) -> Option<usize> {
        let Some(k) = v.as_int() else {
            self.type_error(
                format!("`{what}` takes an integer axis, not a `{}`", v.type_name()),
                at,
            );
            return None;
        };
        let idx = if k < 0 { k + ndim as i64 } else { k };
        if idx < 0 || idx >= ndim as i64 {
            self.error(
                Error::new(
                    codes::GRID_AXIS,
                    format!("`{what}`: axis {k} is outside the launch grid of {ndim} axes"),
                    at.clone(),
                )
                .with_label("no such axis")
                .with_help(format!(
                    "the run's grid (`--grid`) has axes 0 to {}; give one extent per axis the kernel uses",
                    ndim.saturating_sub(1)
                )),
            );
            self.stopped = true;
            return None;
        }
        Some(idx as usize)
    }

    /// `nl.program_id(axis=0)`: the index of the program along `axis`.
    pub(crate) fn program_id(
        &mut self,
        pos: Vec<Value>,
        kws: super::pyvalue::Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let axis = one_arg(pos, kws, "axis").unwrap_or(Value::int(0));
        let extents = self.grid_extents("nl.program_id", at)?;
        let k = self.grid_axis(&axis, extents.len(), "nl.program_id", at)?;
        Some(self.grid.ids[k].clone())
    }

    /// `nl.num_programs(axes=None)`: the extent of one axis, the product of several, or of all.
    pub(crate) fn num_programs(
        &mut self,
        pos: Vec<Value>,
        kws: super::pyvalue::Kwargs,
        at: &Span,
    ) -> Option<Value> {
        let axes = one_arg(pos, kws, "axes").unwrap_or(Value::None);
        let extents = self.grid_extents("nl.num_programs", at)?;
        let picked: Vec<Value> = match &axes {
            Value::None => (0..extents.len()).map(|k| Value::int(k as i64)).collect(),
            v => v.seq_items().unwrap_or_else(|| vec![v.clone()]),
        };
        let mut n: i64 = 1;
        for a in &picked {
            let k = self.grid_axis(a, extents.len(), "nl.num_programs", at)?;
            n = n.saturating_mul(extents[k] as i64);
        }
        Some(Value::int(n))
    }

    /// `nl.program_ndim()`: the number of axes of the grid, 0 without one (as NKI documents).
    pub(crate) fn program_ndim(&self) -> Value {
        Value::int(self.grid.extents.as_ref().map_or(0, |e| e.len()) as i64)
    }
}

/// The one argument of a grid query, positional or by keyword `name`.
fn one_arg(pos: Vec<Value>, kws: super::pyvalue::Kwargs, name: &str) -> Option<Value> {
    pos.into_iter().next().or_else(|| {
        kws.into_iter()
            .find(|(k, _, _)| k == name)
            .map(|(_, v, _)| v)
    })
}
