//! Hardware loops of the core language: `for i in nl.affine_range(n)` (or `nl.sequential_range`,
//! `range`) as a Penguin IR loop whose body is traced once with a symbolic index, its trip count
//! checked, the names its body binds scoped (`loop_scope`), a `return` at the end of its body, and
//! the zeroing of an accumulator allocated before it.
//!
//! Invariant: a loop comes out with at least one and at most `MAX_EXTENT` iterations and bounds
//! within `MAX_EXTENT`; a name bound in its body is visible after it only when `loop_scope` says
//! the value means the same in every iteration.

use super::arith::MAX_EXTENT;
use super::calls::KwSite;
use super::error::CheckError;
use super::loop_scope::compute_loop_exit;
use super::stmts::{ends_body, Flow};
use super::{reserved, Bound, CInst, CLoop, CStmt, CStmtKind, Checker, TileVal, Value, RESERVED};
use crate::ast::{self, Expr, ExprKind, Span};
use penguin::{Axis, AxisAttrs, LoopKind, StmtAnnot};
use std::collections::HashMap;

/// Whether a value depends on loop `axis`: an integer or a tile's position affine in it.
fn depends_on(v: &Value, axis: Axis) -> bool {
    match v {
        Value::Int(a) => a.coeff(axis) != 0,
        Value::Iv(a) => *a == axis,
        Value::Tile(t) => t.start.iter().any(|s| s.coeff(axis) != 0),
        Value::Py(p) => match &**p {
            super::pyvalue::Py::Tuple(items) => items.iter().any(|i| depends_on(i, axis)),
            _ => false,
        },
        _ => false,
    }
}

impl Checker<'_> {
    /// `for var in iter: body` as a Penguin IR loop, `iter` a range call of the core language;
    /// the body is run (traced) once, with `var` bound to the loop's symbolic index.
    pub(super) fn for_loop(
        &mut self,
        var: &ast::Ident,
        iter: &Expr,
        body: &[ast::Stmt],
        s: &ast::Stmt,
        out: &mut Vec<CStmt>,
        in_loop: bool,
    ) -> Flow {
        let header = s.span.start..iter.span.end.max(s.span.start);
        let mut attrs = AxisAttrs::default();
        let mut annot = StmtAnnot::default();
        let mut bounds = None;
        let mut kind = LoopKind::Affine;
        match &iter.kind {
            ExprKind::Call { func, args, kwargs } => {
                let name = match &func.kind {
                    ExprKind::Attribute { value, attr } if matches!(&value.kind, ExprKind::Name(m) if m == "nl") => {
                        match attr.name.as_str() {
                            "affine_range" => Some((LoopKind::Affine, "nl.affine_range")),
                            "sequential_range" => {
                                Some((LoopKind::Sequential, "nl.sequential_range"))
                            }
                            _ => None,
                        }
                    }
                    ExprKind::Name(n) if n == "range" => Some((LoopKind::Range, "range")),
                    _ => None,
                };
                match name {
                    Some((k, fname)) => {
                        kind = k;
                        let site = if in_loop {
                            KwSite::Allowed
                        } else {
                            KwSite::NotInLoop
                        };
                        let slots = self.bind_args(
                            fname,
                            &iter.span,
                            args,
                            kwargs,
                            &[("start", true), ("stop", false)],
                            site,
                            &mut annot,
                            Some(&mut attrs),
                        );
                        if let Some(slots) = slots {
                            bounds = self.trip(&slots, &iter.span);
                        }
                    }
                    None => self.bad_iter(iter),
                }
            }
            ExprKind::Error => {}
            _ => self.bad_iter(iter),
        }
        let (lb, ub) = bounds.unwrap_or((0, 1));

        let tensors_before = self.tensors.len();
        let axis = Axis::from_u32(self.loops.len() as u32);
        self.loops.push(CLoop {
            iv: var.name.clone(),
            kind,
            lb,
            ub,
            attrs,
            span: header,
        });

        if RESERVED.contains(&var.name.as_str()) {
            self.error(reserved(var));
        } else if let Some(prev) = self
            .find(&var.name)
            .filter(|b| !self.unrolled_targets.contains(&b.span))
            .cloned()
        {
            // The index an earlier unrolled loop left bound (`for k in ...:` twice, the first
            // unrolled) is Python's to rebind; any other bound name stays refused.
            self.error(CheckError::LoopVarShadows {
                name: var.name.clone(),
                prev: prev.span,
                at: var.span.clone(),
            });
        }
        self.scopes.push(HashMap::new());
        self.bind(&var.name, Value::Iv(axis), var.span.clone());
        self.enclosing.push(axis);
        let mut inner = Vec::new();
        let flow = self.exec_block(body, &mut inner, true);
        if let Flow::Break | Flow::Continue = flow {
            self.raise(
                crate::codes::PYTHON_UNSUPPORTED,
                "`break` and `continue` in a hardware loop (`nl.affine_range`, `nl.sequential_range`, `range`) are not supported".into(),
                &s.span,
            );
        }
        let returned = match flow {
            Flow::Return(v, at) => self.loop_return(v, at, kind, axis, body),
            _ => None,
        };
        self.enclosing.pop();
        let scope = self.scopes.pop().unwrap_or_default();
        // loop_scope.rs: a name the body bound stays bound after the loop to its traced value
        // when that value is the same in every iteration.
        let mut names: Vec<_> = scope.into_iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, b) in names {
            let enclosing = &self.enclosing;
            let live = |a: Axis| enclosing.contains(&a);
            let exit = compute_loop_exit(&b.value, axis, &var.name, &live, tensors_before);
            // `_`, Python's throwaway name, is any loop's to bind, like a name an earlier loop
            // left.
            let outside = self.find(&name).map(|o| o.leaked || name == "_");
            let frame = self.frame_scope.min(self.scopes.len());
            let holder = (frame..self.scopes.len())
                .rev()
                .find(|&k| self.scopes[k].contains_key(&name));
            match exit {
                // Python's rebinding: the scope that has the name (or the enclosing one) gets
                // the body's value.
                None => {
                    let at = holder.unwrap_or(self.scopes.len() - 1);
                    self.out_of_scope.remove(&name);
                    self.scopes[at].insert(name, Bound { leaked: true, ..b });
                }
                // A compile-time int the body rebound to a value of one iteration (`stmts`
                // `may_bind`): Python would leave the last iteration's value, NKI's trace an
                // index of an ended loop, so the name is not bound after the loop.
                Some(why)
                    if outside == Some(false)
                        && matches!(b.value, Value::Int(_))
                        && holder.is_some_and(|k| {
                            matches!(self.scopes[k].get(&name), Some(o) if matches!(o.value, Value::Int(_)))
                        }) =>
                {
                    if let Some(k) = holder {
                        self.scopes[k].remove(&name);
                    }
                    self.out_of_scope.insert(name, (b.span, why));
                }
                // A name bound before the loop keeps that binding (nkc's rule before names
                // left loops).
                Some(_) if outside == Some(false) => {}
                // A name an earlier loop's body left bound, bound again here to a value of one
                // iteration: not bound after this loop.
                Some(why) => {
                    if let (Some(true), Some(k)) = (outside, holder) {
                        self.scopes[k].remove(&name);
                    }
                    self.out_of_scope.insert(name, (b.span, why));
                }
            }
        }
        self.zero_before_loop(tensors_before, axis, s, &mut inner, out);
        out.push(CStmt {
            kind: CStmtKind::Loop { axis, body: inner },
            annot,
            span: s.span.clone(),
        });
        if self.stopped {
            Flow::Stop
        } else if let Some((v, at)) = returned {
            Flow::Return(v, at)
        } else {
            Flow::Next
        }
    }

    /// A `return` that ended the traced body of a loop at the kernel's level (`exec`). NKI
    /// traces an `nl.affine_range` / `nl.sequential_range` body once, so a `return` as its last
    /// statement returns after the whole loop; its value must be one for every iteration (not
    /// depend on the loop index). Anywhere else it is reported, and the loop goes on as if it
    /// were not there.
    fn loop_return(
        &mut self,
        v: Value,
        at: Span,
        kind: LoopKind,
        axis: Axis,
        body: &[ast::Stmt],
    ) -> Option<(Value, Span)> {
        if !matches!(kind, LoopKind::Affine | LoopKind::Sequential) || !ends_body(body, &at) {
            self.error(CheckError::ReturnInLoop { at });
            return None;
        }
        if depends_on(&v, axis) {
            self.error(CheckError::ReturnVaries { at: at.clone() });
            // The kernel still returns there, with no value to check further.
            return Some((Value::Error, at));
        }
        Some((v, at))
    }

    /// Zeroes, before the loop that has just been traced, each PSUM tile of `zero_first` that
    /// was allocated before it (`tensors_before`): the loop's matmuls add to a tile nothing
    /// wrote, so its first iteration starts from zero. Of an array of more than one PSUM bank,
    /// the block the first matmul adds to is zeroed, when it is the same in every iteration of
    /// the loop (it names only the loops around it: the accumulation group of
    /// `acc[i] += nisa.nc_matmul(...)` in a loop inside the loop of `i`); otherwise the array
    /// is left as it is (the read of uninitialised memory is reported when the kernel runs).
    ///
    /// An accumulation group spans every loop around the matmuls whose body touches the tile
    /// only by matmuls into it: a zeroing an inner loop placed in this loop's `body` moves
    /// before this loop when the tile was allocated before it and nothing else in the body
    /// reads or writes it (a contraction split over `k1` and `k2` sums over both; a copy of
    /// the tile in the body ends the group at the inner loop, as for one output block per
    /// iteration).
    fn zero_before_loop(
        &mut self,
        tensors_before: usize,
        axis: Axis,
        s: &ast::Stmt,
        body: &mut Vec<CStmt>,
        out: &mut Vec<CStmt>,
    ) {
        let (mut now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.zero_first)
            .into_iter()
            .partition(|(t, _)| (t.as_u32() as usize) < tensors_before);
        self.zero_first = later;
        let (placed, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.zero_placed)
            .into_iter()
            .partition(|(a, _, _)| *a == axis);
        self.zero_placed = others;
        for (_, t, dst) in placed {
            // A block that names this loop's index is a group of its own per iteration.
            if (t.as_u32() as usize) < tensors_before
                && self.names_enclosing_only(&dst)
                && only_matmuls_into(body, t, &dst)
                && remove_zeroing(body, &dst)
            {
                now.push((t, dst));
            }
        }
        let parent = self.enclosing.last().copied();
        let mut insts = Vec::new();
        for (t, first) in now {
            let ct = self.tensor(t);
            let span = ct.span.clone();
            let dst = if ct.shape[1] * 4 <= vocab::machine::PSUM_BANK_BYTES {
                TileVal::whole(t, ct.shape).operand()
            } else if self.names_enclosing_only(&first) {
                first
            } else {
                continue;
            };
            if let Some(parent) = parent {
                self.zero_placed.push((parent, t, dst.clone()));
            }
            insts.push(CInst {
                op: penguin::Op::Memset { value: 0.0 },
                dst,
                srcs: Vec::new(),
                span,
                engine: None,
                mask: Vec::new(),
                guards: Vec::new(),
                implicit: true,
            });
        }
        if !insts.is_empty() {
            out.push(CStmt {
                kind: CStmtKind::Insts(insts),
                annot: StmtAnnot::default(),
                span: s.span.clone(),
            });
        }
    }

    /// True when `op` is a plain block whose start names only the loops open around the
    /// statement being traced.
    fn names_enclosing_only(&self, op: &penguin::Operand) -> bool {
        op.access.pattern.is_none()
            && (op.access.start.iter()).all(|e| e.axes().all(|a| self.enclosing.contains(&a)))
    }

    fn bad_iter(&mut self, iter: &Expr) {
        self.error(CheckError::BadLoopIter {
            at: iter.span.clone(),
        });
    }

    /// The bounds of a range call: `(n)` or `(start, stop)`, with at least one iteration.
    fn trip(&mut self, slots: &[Option<&Expr>], span: &Span) -> Option<(i64, i64)> {
        let a = self.const_int(slots[0]?);
        let b = slots[1].map(|e| self.const_int(e));
        let (lb, ub) = match b {
            None => (0, a?),
            Some(b) => (a?, b?),
        };
        // Every induction-variable value, and every value the pipeliners derive from one (shifted
        // by a stage, run ahead by a prefetch), stays far inside 64 bits.
        if let Some(bad) = [lb, ub]
            .into_iter()
            .find(|v| v.abs_diff(0) > MAX_EXTENT as u64)
        {
            self.error(CheckError::LoopBound {
                lb,
                ub,
                bad,
                at: span.clone(),
            });
            return None;
        }
        if matches!(ub.checked_sub(lb), Some(t) if (1..=MAX_EXTENT).contains(&t)) {
            return Some((lb, ub));
        }
        self.error(CheckError::TripCount {
            lb,
            ub,
            at: span.clone(),
        });
        None
    }
}

/// The implicit zeroing of `dst` (`Checker::zero_before_loop`).
fn is_zeroing(inst: &CInst, dst: &penguin::Operand) -> bool {
    inst.implicit && matches!(inst.op, penguin::Op::Memset { .. }) && inst.dst == *dst
}

/// True when every instruction of `body` (nested loops included) that touches `t` is a matmul
/// into it or the implicit zeroing of `dst`.
fn only_matmuls_into(body: &[CStmt], t: penguin::Tensor, dst: &penguin::Operand) -> bool {
    body.iter().all(|st| match &st.kind {
        CStmtKind::Insts(insts) => insts.iter().all(|i| {
            i.srcs.iter().all(|s| s.tensor != t)
                && (i.dst.tensor != t
                    || matches!(i.op, penguin::Op::Matmul { .. })
                    || is_zeroing(i, dst))
        }),
        CStmtKind::Loop { body, .. } => only_matmuls_into(body, t, dst),
    })
}

/// Removes the implicit zeroing of `dst` from the top level of `body`; false when it is not
/// there (a zeroing in a branch or a deeper loop stays where it is).
fn remove_zeroing(body: &mut Vec<CStmt>, dst: &penguin::Operand) -> bool {
    for (k, st) in body.iter_mut().enumerate() {
        if let CStmtKind::Insts(insts) = &mut st.kind {
            if let Some(j) = insts.iter().position(|i| is_zeroing(i, dst)) {
                insts.remove(j);
                if insts.is_empty() {
                    body.remove(k);
                }
                return true;
            }
        }
    }
    false
}
