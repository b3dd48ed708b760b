//! Folding a PSUM accumulator's zeroing into its first matmul (LANGUAGE.md: "which the compiler
//! may fold into the first accumulating matmul").
//!
//! [`fold_psum_zeros`] looks for a statement that sets a PSUM tile to `+0.0` (a `memset`, from
//! `nl.zeros(..., buffer=nl.psum)`), directly followed in its block by a loop `L` under the same
//! guards whose body's first access to the tile is an accumulating matmul over all of it, at an
//! access that does not depend on `L`'s induction variable, in an unguarded statement. The memset
//! goes, and the matmul becomes two statements: `@(iv == lb)` an overwriting matmul, and
//! `@(iv >= lb + 1)` the accumulating one. The Tensor engine then no longer waits for the Vector
//! engine to zero the bank, and the first iteration's matmul writes the tile instead of reading it.
//!
//! The fold is exact, bit for bit: both the interpreter and the simulator compute a matmul's sum
//! `s` upward from `+0.0`, so `s` is never `-0.0` (`+0 + -0 = +0` in round-to-nearest), and
//! `+0.0 + s = s` for every other `s` (a NaN's payload is canonical once stored). Later
//! accumulations see the same value either way.
//!
//! Invariants: the function still verifies (the zeroing's statement and instruction become the
//! overwriting matmul, so no entity leaves the tree); the matmul's spans, annotations and stage
//! tag are copied to it; a tile's accesses are otherwise unchanged.

use crate::transform::remark::Remark;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{Memory, Op, StmtKind};
use penguin::{Axis, Function, Inst, Stmt, Tensor};

/// Folds every foldable zeroing; returns one remark per fold.
pub fn fold_psum_zeros(func: &mut Function) -> Vec<Remark> {
    let mut log = Vec::new();
    let mut blocks: Vec<Option<Axis>> = vec![None];
    blocks.extend(func.axes.keys().map(Some));
    for parent in blocks {
        let mut j = 0;
        while j + 1 < func.block(parent).len() {
            let block = func.block(parent);
            let (s, next) = (block[j], block[j + 1]);
            if let Some((tensor, l, m_stmt)) = foldable(func, s, next) {
                fold(func, parent, j, l, m_stmt);
                log.push(Remark::ZeroingFolded {
                    tile: func.display_name(tensor).to_string(),
                    iv: func.display_iv(l).to_string(),
                    lb: func.axes[l].lb,
                });
                continue;
            }
            j += 1;
        }
    }
    log
}

/// `(tile, L, matmul statement)` when `s` zeroes a PSUM tile that loop statement `next` starts
/// by accumulating into.
fn foldable(func: &Function, s: Stmt, next: Stmt) -> Option<(Tensor, Axis, Stmt)> {
    let StmtKind::Insts(insts) = &func.stmts[s].kind else {
        return None;
    };
    let [i] = insts[..] else { return None };
    let d = &func.insts[i];
    let Op::Memset { value } = d.op else {
        return None;
    };
    let t = d.dst.tensor;
    let td = &func.tensors[t];
    if value.to_bits() != 0.0f32.to_bits()
        || !d.mask.is_empty()
        || td.memory != Memory::Psum
        || d.dst.access.pattern.is_some()
        || d.dst.access.size != td.shape
        || d.dst
            .access
            .start
            .iter()
            .any(|e| e.as_constant() != Some(0))
    {
        return None;
    }
    let StmtKind::Loop(l) = func.stmts[next].kind else {
        return None;
    };
    let ad = &func.axes[l];
    if func.stmts[next].preds != func.stmts[s].preds || ad.ub <= ad.lb {
        return None;
    }
    for &c in &ad.body {
        match &func.stmts[c].kind {
            StmtKind::Insts(ci) => {
                let touches: Vec<Inst> = ci
                    .iter()
                    .copied()
                    .filter(|&k| {
                        let kd = &func.insts[k];
                        kd.dst.tensor == t || kd.srcs.iter().any(|o| o.tensor == t)
                    })
                    .collect();
                if touches.is_empty() {
                    continue;
                }
                let [m] = ci[..] else { return None };
                let md = &func.insts[m];
                let ok = matches!(md.op, Op::Matmul { accumulate: true })
                    && md.dst.tensor == t
                    && md.srcs.iter().all(|o| o.tensor != t)
                    && md.dst.access == d.dst.access
                    && !mentions(&md.dst.access.slots, l)
                    && func.stmts[c].preds.is_empty();
                return ok.then_some((t, l, c));
            }
            StmtKind::Loop(a) => {
                if loop_touches(func, *a, t) {
                    return None;
                }
            }
        }
    }
    None
}

fn mentions(es: &[AffineExpr], l: Axis) -> bool {
    es.iter().any(|e| e.coeff(l) != 0)
}

fn loop_touches(func: &Function, a: Axis, t: Tensor) -> bool {
    func.axes[a]
        .body
        .iter()
        .any(|&c| match &func.stmts[c].kind {
            StmtKind::Insts(ci) => ci.iter().any(|&k| {
                let kd = &func.insts[k];
                kd.dst.tensor == t || kd.srcs.iter().any(|o| o.tensor == t)
            }),
            StmtKind::Loop(b) => loop_touches(func, *b, t),
        })
}

/// Turns the zeroing statement at `parent[j]` into the overwriting matmul, moved into loop `l`
/// just before matmul statement `m_stmt` (which keeps accumulating from the second iteration).
/// The zeroing's statement and instruction entities are reused, so every entity stays in the tree.
fn fold(func: &mut Function, parent: Option<Axis>, j: usize, l: Axis, m_stmt: Stmt) {
    let s = match parent {
        None => func.body.remove(j),
        Some(a) => func.axes[a].body.remove(j),
    };
    let lb = func.axes[l].lb;
    let (StmtKind::Insts(zero), StmtKind::Insts(acc)) =
        (func.stmts[s].kind.clone(), func.stmts[m_stmt].kind.clone())
    else {
        unreachable!("foldable() matched two instruction statements")
    };
    let (z, m) = (zero[0], acc[0]);
    func.insts[z] = func.insts[m].clone();
    func.insts[z].op = Op::Matmul { accumulate: false };
    func.inst_spans[z] = func.inst_spans[m];
    penguin::edit::copy_stmt_tables(func, m_stmt, s);
    func.stmts[s].preds = vec![Predicate {
        expr: AffineExpr::iv(l),
        cmp: CmpOp::Eq,
        bound: lb,
    }];
    func.stmts[m_stmt].preds = vec![Predicate {
        expr: AffineExpr::iv(l),
        cmp: CmpOp::Ge,
        bound: lb + 1,
    }];
    let body = &mut func.axes[l].body;
    let at = body
        .iter()
        .position(|&c| c == m_stmt)
        .expect("the matmul statement is in the loop's body (foldable() found it there)");
    body.insert(at, s);
}
