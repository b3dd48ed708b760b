//! The `dst=` call style of newer NKI: an operation given its destination as a keyword writes
//! into it, as a statement of its own.
//!
//! - `nisa.dma_copy(dst=d, src=s)`: an HBM destination is `nl.store(d, value=s)`; an on-chip
//!   one is `d = nl.load(s)` written in place (`d[...] = nl.load(s)`);
//! - any other operation, `nisa.tensor_tensor(dst=t, data1=a, data2=b, op=nl.add)`, is
//!   `t[...] = nisa.tensor_tensor(data1=a, data2=b, op=nl.add)`, where `dst` is a tile name or a
//!   slice of one.
//!
//! Each is rewritten to the statement it means and checked as that statement, so the rules of
//! stores, loads and slice assignment (and their diagnostics) apply unchanged.

use super::error::CheckError;
use super::ops::{Dest, StmtCtx};
use super::Checker;
use crate::ast::{Expr, ExprKind, Ident, Keyword, Span};
use penguin::Memory;

/// `nl.NAME` as a callee, spanning `span`.
fn nl_func(name: &str, span: &Span) -> Expr {
    let nl = Expr {
        kind: ExprKind::Name("nl".to_string()),
        span: span.clone(),
    };
    Expr {
        kind: ExprKind::Attribute {
            value: Box::new(nl),
            attr: Ident {
                name: name.to_string(),
                span: span.clone(),
            },
        },
        span: span.clone(),
    }
}

fn call(func: Expr, args: Vec<Expr>, kwargs: Vec<Keyword>, span: &Span) -> Expr {
    Expr {
        kind: ExprKind::Call {
            func: Box::new(func),
            args,
            kwargs,
        },
        span: span.clone(),
    }
}

impl Checker<'_> {
    /// A call statement in the `dst=` style, checked as what it means. False when `e` is not one.
    pub(super) fn dst_call(&mut self, e: &Expr, cx: &mut StmtCtx) -> bool {
        let ExprKind::Call { func, args, kwargs } = &e.kind else {
            return false;
        };
        let is_dma = matches!(&func.kind, ExprKind::Attribute { value, attr }
            if attr.name == "dma_copy" && matches!(&value.kind, ExprKind::Name(m) if m == "nisa" || m == "nl"));
        let Some(dst) = kwargs.iter().find(|k| k.name.name == "dst") else {
            return false;
        };
        let rest: Vec<Keyword> = kwargs
            .iter()
            .filter(|k| k.name.name != "dst")
            .cloned()
            .collect();
        let Some((target, _)) = self.view(&dst.value) else {
            return true;
        };
        if is_dma {
            let Some(src) = rest.iter().find(|k| k.name.name == "src") else {
                self.error(CheckError::DmaCopyNoSrc { at: e.span.clone() });
                return true;
            };
            if !args.is_empty() {
                self.error(CheckError::DmaCopyPositional {
                    at: args[0].span.clone(),
                });
                return true;
            }
            if self.tensor(target.tensor).memory == Memory::Hbm {
                let value = Keyword {
                    name: Ident {
                        name: "value".to_string(),
                        span: src.name.span.clone(),
                    },
                    value: src.value.clone(),
                    span: src.span.clone(),
                };
                let store = call(
                    nl_func("store", &func.span),
                    vec![dst.value.clone()],
                    vec![value],
                    &e.span,
                );
                self.store(&store, cx);
            } else {
                let load = call(
                    nl_func("load", &func.span),
                    vec![src.value.clone()],
                    Vec::new(),
                    &e.span,
                );
                let dest = Dest::Into {
                    target,
                    accumulate: false,
                };
                self.tile_expr(&load, cx, dest, true);
            }
            return true;
        }
        let op = call((**func).clone(), args.clone(), rest, &e.span);
        let dest = Dest::Into {
            target,
            accumulate: false,
        };
        self.tile_expr(&op, cx, dest, true);
        true
    }
}
