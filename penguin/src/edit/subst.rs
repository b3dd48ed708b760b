//! Substitutions: loop variables replaced by affine expressions, tensors by other tensors, in a
//! statement and everything nested in it.
//!
//! A [`Subst`] is an ordered list of axis replacements, applied one after the other to every
//! affine expression (`e[a1 -> x1][a2 -> x2]...`), and a map of tensor renames applied to every
//! operand. [`Subst::apply`] rewrites a subtree in place: the statements' predicates, and of every
//! instruction the operands' tensors, starts and slot selectors and the mask bounds. Nothing else
//! changes (loop bounds are constants, side tables are untouched).

use crate::affine::{AffineExpr, Predicate};
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Function, InstData, StmtKind};
use cranelift_entity::SecondaryMap;
use std::collections::BTreeMap;

/// Axis replacements (in order) and tensor renames; see the module doc.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Subst {
    axes: Vec<(Axis, AffineExpr)>,
    tensors: BTreeMap<Tensor, Tensor>,
}

impl Subst {
    /// The identity.
    pub fn new() -> Self {
        Subst::default()
    }

    /// `iv(a)` replaced by `by`, after the replacements already listed.
    pub fn axis(mut self, a: Axis, by: AffineExpr) -> Self {
        self.axes.push((a, by));
        self
    }

    /// Every replacement of `pairs`, in order, after those already listed.
    pub fn axes(mut self, pairs: impl IntoIterator<Item = (Axis, AffineExpr)>) -> Self {
        self.axes.extend(pairs);
        self
    }

    /// Every access to `from` made an access to `to`.
    pub fn tensor(mut self, from: Tensor, to: Tensor) -> Self {
        self.tensors.insert(from, to);
        self
    }

    /// Every rename of `renames`.
    pub fn tensors(mut self, renames: impl IntoIterator<Item = (Tensor, Tensor)>) -> Self {
        self.tensors.extend(renames);
        self
    }

    /// Whether it changes nothing.
    pub fn is_identity(&self) -> bool {
        self.axes.is_empty() && self.tensors.is_empty()
    }

    /// `e` with every axis replacement applied, in order.
    pub fn expr(&self, e: &AffineExpr) -> AffineExpr {
        let mut out = e.clone();
        for (a, by) in &self.axes {
            out = out.substitute(*a, by);
        }
        out
    }

    /// `p` with its expression substituted.
    pub fn pred(&self, p: &Predicate) -> Predicate {
        Predicate {
            expr: self.expr(&p.expr),
            ..p.clone()
        }
    }

    /// Substitutes in one instruction: operand tensors, starts, slots and mask bounds.
    pub fn inst(&self, d: &mut InstData) {
        for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
            if let Some(&to) = self.tensors.get(&o.tensor) {
                o.tensor = to;
            }
        }
        for e in d.exprs_mut() {
            *e = self.expr(e);
        }
    }

    /// Substitutes in statement `s` and everything nested in it (module doc).
    pub fn apply(&self, func: &mut Function, s: Stmt) {
        if self.is_identity() {
            return;
        }
        for t in subtree_stmts(func, s) {
            for p in &mut func.stmts[t].preds {
                *p = self.pred(p);
            }
            if let StmtKind::Insts(insts) = &func.stmts[t].kind {
                for &i in insts {
                    self.inst(&mut func.insts[i]);
                }
            }
        }
    }
}

/// Statement `s` and every statement nested in it, in program order.
pub fn subtree_stmts(func: &Function, s: Stmt) -> Vec<Stmt> {
    let mut out = Vec::new();
    let mut stack = vec![s];
    while let Some(t) = stack.pop() {
        out.push(t);
        if let StmtKind::Loop(a) = func.stmts[t].kind {
            stack.extend(func.axes[a].body.iter().rev().copied());
        }
    }
    out
}

/// The instructions of statement `s` and of everything nested in it, in program order.
pub fn subtree_insts(func: &Function, s: Stmt) -> Vec<Inst> {
    let mut out = Vec::new();
    for t in subtree_stmts(func, s) {
        if let StmtKind::Insts(insts) = &func.stmts[t].kind {
            out.extend(insts.iter().copied());
        }
    }
    out
}

/// Replaces `iv(a)` by the constant `k` in statement `s` and everything nested in it, and drops
/// the predicates that become constant and true: `s` as it runs in iteration `k` of loop `a`.
pub fn bind_iv(func: &mut Function, s: Stmt, a: Axis, k: i64) {
    Subst::new().axis(a, AffineExpr::constant(k)).apply(func, s);
    let mut ivs = SecondaryMap::new();
    ivs[a] = k;
    for t in subtree_stmts(func, s) {
        func.stmts[t]
            .preds
            .retain(|g| g.expr.as_constant().is_none() || !g.holds(&ivs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_function, write_function};

    const NEST: &str = "kernel k(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 128] local block[i: 2]
  tensor u: sbuf f32[128, 128] local
  loop i in 0..8 affine {
    loop j in 0..4 affine if i >= 1 {
      stmt if j < 3 {
        t{i}[0 +: 128, 0 +: 128] = load.dma a[128*i +: 128, 128*j +: 128]
      }
      stmt {
        c[128*i +: 128, 128*j +: 128] = store.dma t{i}[0 +: 128, 0 +: 128] mask(p < -10*i + 100)
      }
    }
  }
}
";

    fn loop_stmt(f: &Function, iv: &str) -> (Axis, Stmt) {
        let mut found = None;
        f.walk_stmts(|s, _| {
            if let StmtKind::Loop(a) = f.stmts[s].kind {
                if f.axes[a].iv_name == iv {
                    found = Some((a, s));
                }
            }
        });
        found.expect("the fixture has the loop")
    }

    #[test]
    fn a_substitution_rewrites_every_expression_and_operand_of_the_subtree() {
        let mut f = parse_function(NEST).expect("the fixture parses");
        let (i, _) = loop_stmt(&f, "i");
        let (j, js) = loop_stmt(&f, "j");
        let t = f
            .tensors
            .keys()
            .find(|&t| f.tensors[t].name == "t")
            .unwrap();
        let u = f
            .tensors
            .keys()
            .find(|&t| f.tensors[t].name == "u")
            .unwrap();
        // In order: j -> 2i + j, then i -> 3 (so the first replacement's i is bound too).
        let sub = Subst::new()
            .axis(j, AffineExpr::from_terms([(i, 2), (j, 1)], 0))
            .axis(i, AffineExpr::constant(3))
            .tensor(t, u);
        sub.apply(&mut f, js);
        // Every expression of the subtree, the loop statement's own guard included; `t` (blocked)
        // became `u` (not blocked) and keeps its slot selector, which the verifier would refuse.
        let want = "kernel k(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 128] local block[i: 2]
  tensor u: sbuf f32[128, 128] local
  loop i in 0..8 affine {
    loop j in 0..4 affine if 3 >= 1 {
      stmt if j + 6 < 3 {
        u{3}[0 +: 128, 0 +: 128] = load.dma a[384 +: 128, 128*j + 768 +: 128]
      }
      stmt {
        c[384 +: 128, 128*j + 768 +: 128] = store.dma u{3}[0 +: 128, 0 +: 128] mask(p < 70)
      }
    }
  }
}
";
        assert_eq!(write_function(&f), want);
    }

    #[test]
    fn binding_a_loop_variable_drops_the_guards_that_then_hold() {
        let mut f = parse_function(NEST).expect("the fixture parses");
        let (i, _) = loop_stmt(&f, "i");
        let (_, js) = loop_stmt(&f, "j");
        bind_iv(&mut f, js, i, 2);
        let text = write_function(&f);
        assert!(text.contains("loop j in 0..4 affine {"), "{text}");
        assert!(text.contains("stmt if j < 3 {"), "{text}");
        // Bound at 0 instead, the guard is constant and false: it stays.
        let mut g = parse_function(NEST).expect("the fixture parses");
        bind_iv(&mut g, js, i, 0);
        assert!(
            write_function(&g).contains("if 0 >= 1"),
            "{}",
            write_function(&g)
        );
    }
}
