//! A comparison of two index expressions bound to a name (`causal_pred = q_pos >= k_pos`, with
//! `q_pos` along the partitions and `k_pos` along the free axis): a triangle of the tile, which
//! `nisa.affine_select(pred=causal_pred, ...)` takes and a `mask=` does not (nkc's masks keep
//! boxes, `vectors.rs`).
//!
//! NKI evaluates the comparison when the name is bound and passes the predicate object on; nkc
//! keeps the comparison's expression beside the binding (`Checker::deferred_preds`, keyed by the
//! binding's span) and reads it where the name is used: as `affine_select`'s predicate it is
//! the comparison written there, and as a `mask=` it is checked as that mask (E0206 at the
//! comparison when it is a triangle).
//!
//! Invariant: a name is looked up here only while the binding that recorded it is the name's
//! current one (the binding's span is the key), so a rebound name is never read as an old
//! comparison.

use super::Checker;
use crate::ast::{Expr, ExprKind, Ident};

impl Checker<'_> {
    /// Records `id = value` when `value` compares two index expressions; `true` when recorded
    /// (the caller then binds the name without reading it as a mask).
    pub(super) fn defer_vector_compare(&mut self, id: &Ident, value: &Expr) -> bool {
        let ExprKind::Compare { lhs, rhs, .. } = &value.kind else {
            return false;
        };
        if !(self.is_vector_expr(lhs) && self.is_vector_expr(rhs)) {
            return false;
        }
        self.deferred_preds.insert(id.span.clone(), value.clone());
        true
    }

    /// The comparison the name `n` is currently bound to, when it was recorded.
    pub(super) fn deferred_pred(&self, n: &str) -> Option<Expr> {
        let b = self.find(n)?;
        self.deferred_preds.get(&b.span).cloned()
    }
}
