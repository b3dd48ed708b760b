//! Copies of statements, loops and tensors, with their side tables.
//!
//! [`copy_stmt`] makes a deep copy of a statement (a loop with its whole subtree, or a group of
//! instructions) under a [`Subst`]: new statement, instruction and axis entities, unplaced (the
//! caller puts the copy in a block, with a [`super::Cursor`]). Every entity of the copy carries
//! the side tables of the one it copies: statements their source span, annotations and stage tag,
//! instructions their span, axes their span and display name. A nested loop of the copy is a new
//! axis named [`derived`] from its own with the caller's tag (`k.n0`), and every expression of
//! the copy that named the old axis names the new one; then the caller's substitution applies.
//!
//! [`copy_loop_header`] makes a new, empty loop like an existing one, [`copy_tensor`] a new tensor
//! like an existing one, and [`copy_stmt_tables`] gives one statement the side tables of another.
//!
//! Invariants: the source is left as it was; entities are created in program order, each
//! statement after what it holds (instructions, nested axes and their statements), so that a pass
//! that copies the same statements makes the same entities.

use super::names::{derived, fresh_iv_name, fresh_tensor_name};
use super::subst::Subst;
use crate::affine::AffineExpr;
use crate::entities::{Axis, Stmt, Tensor};
use crate::ir::{Function, StmtData, StmtKind};

/// A deep copy of statement `s` under `subst`, unplaced; nested loops are named
/// `INNER.loop_tag` (module doc).
pub fn copy_stmt(func: &mut Function, s: Stmt, subst: &Subst, loop_tag: &str) -> Stmt {
    let mut renamed: Vec<(Axis, AffineExpr)> = Vec::new();
    let copy = copy_entities(func, s, loop_tag, &mut renamed);
    Subst::new().axes(renamed).apply(func, copy);
    subst.apply(func, copy);
    copy
}

/// New entities for statement `s` and everything nested in it, with their side tables; `renamed`
/// collects every nested axis with its copy's induction variable (the copy's expressions still
/// name the old axes).
fn copy_entities(
    func: &mut Function,
    s: Stmt,
    loop_tag: &str,
    renamed: &mut Vec<(Axis, AffineExpr)>,
) -> Stmt {
    let data = func.stmts[s].clone();
    let kind = match data.kind {
        StmtKind::Insts(insts) => StmtKind::Insts(
            insts
                .iter()
                .map(|&i| {
                    let n = func.insts.push(func.insts[i].clone());
                    func.inst_spans[n] = func.inst_spans[i];
                    n
                })
                .collect(),
        ),
        StmtKind::Loop(inner) => {
            let name = fresh_iv_name(func, &derived(&func.axes[inner].iv_name, loop_tag));
            let new = copy_loop_header(func, inner, name);
            renamed.push((inner, AffineExpr::iv(new)));
            let body = func.axes[inner].body.clone();
            let copied = body
                .iter()
                .map(|&c| copy_entities(func, c, loop_tag, renamed))
                .collect();
            func.axes[new].body = copied;
            StmtKind::Loop(new)
        }
    };
    let n = func.stmts.push(StmtData {
        kind,
        preds: data.preds,
    });
    copy_stmt_tables(func, s, n);
    n
}

/// A new loop like `a` (kind, bounds, attributes, span, display name), named `iv_name`, with an
/// empty body and no statement yet.
pub fn copy_loop_header(func: &mut Function, a: Axis, iv_name: String) -> Axis {
    let data = crate::ir::AxisData {
        iv_name,
        body: Vec::new(),
        ..func.axes[a].clone()
    };
    let new = func.axes.push(data);
    func.axis_spans[new] = func.axis_spans[a];
    func.axis_display[new] = func.axis_display[a].clone();
    new
}

/// A new tensor like `t` (memory, dtype, shape, kind, block, span, display name), named
/// [`fresh_tensor_name`]`(derived(t, tag))`.
pub fn copy_tensor(func: &mut Function, t: Tensor, tag: &str) -> Tensor {
    let name = fresh_tensor_name(func, &derived(&func.tensors[t].name, tag));
    let new = func.tensors.push(crate::ir::TensorData {
        name,
        ..func.tensors[t].clone()
    });
    func.tensor_spans[new] = func.tensor_spans[t];
    func.tensor_display[new] = func.tensor_display[t].clone();
    new
}

/// Gives statement `to` the side tables of `from`: source span, annotations and stage tag.
pub fn copy_stmt_tables(func: &mut Function, from: Stmt, to: Stmt) {
    func.stmt_spans[to] = func.stmt_spans[from];
    func.annots[to] = func.annots[from];
    func.stage_tags[to] = func.stage_tags[from];
}
