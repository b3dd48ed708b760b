//! Assignment and loop targets: the left-hand side of `=` converted to a [`Target`] (or why it
//! cannot be one), the bracket-free tuples of `a, b = ...` / `return a, b` / `for ... in a, b`,
//! the target of a `for`, and the names a broken line visibly binds (kept by recovery).
//!
//! Invariant: a target made only of names is a [`Target::Tuple`]; one with a subscript, a
//! starred name or nesting is a [`Target::Seq`].

use super::expr::{ident, starred_item};
use super::{sp, Ex, TokenInput};
use crate::ast::*;
use crate::diagnostic::Error;
use crate::lexer::Token;
use crate::syntax_error::SyntaxError;
use chumsky::prelude::*;

/// Converts the left-hand side of `=` to a target, or reports why it cannot be one.
pub(super) fn to_target(lhs: Expr) -> Result<Target, Box<Error>> {
    let span = lhs.span.clone();
    match lhs.kind {
        ExprKind::Name(name) => Ok(Target::Name(Ident { name, span })),
        ExprKind::Subscript { value, indices } => match value.kind {
            ExprKind::Name(name) => Ok(Target::Subscript {
                base: Ident {
                    name,
                    span: value.span,
                },
                indices,
                span,
            }),
            _ => Err(Box::new(
                SyntaxError::SubscriptTarget { at: value.span }.into(),
            )),
        },
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            if items.iter().all(|i| matches!(i.kind, ExprKind::Name(_))) {
                let names = items
                    .into_iter()
                    .map(|item| match item.kind {
                        ExprKind::Name(name) => Ident {
                            name,
                            span: item.span,
                        },
                        _ => unreachable!("checked to be names"),
                    })
                    .collect();
                return Ok(Target::Tuple { names, span });
            }
            let mut out = Vec::new();
            for item in items {
                out.push(to_target(item)?);
            }
            Ok(Target::Seq { items: out, span })
        }
        ExprKind::Attribute { value, attr } => Ok(Target::Attribute { value, attr, span }),
        ExprKind::Starred(inner) => match inner.kind {
            ExprKind::Name(name) => Ok(Target::Starred(Ident {
                name,
                span: inner.span,
            })),
            _ => Err(Box::new(SyntaxError::TupleTarget { at: inner.span }.into())),
        },
        _ => Err(Box::new(SyntaxError::BadTarget { at: span }.into())),
    }
}

/// `a, b` where a tuple may stand without brackets (both sides of `=`, `return`, `for ... in`).
pub(super) fn expr_list<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone {
    starred_item(expr)
        .separated_by(just(Token::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Token::Comma).or_not().map(|c| c.is_some()))
        .map_with(|(mut items, trailing), e| {
            if items.len() == 1 && !trailing && !matches!(items[0].kind, ExprKind::Starred(_)) {
                items.pop().expect("one item")
            } else {
                Expr {
                    kind: ExprKind::Tuple(items),
                    span: sp(e.span()),
                }
            }
        })
}

/// The target of a `for` (or a comprehension): names, possibly nested in brackets, one `*rest`.
pub(super) fn target_parser<'t, 's: 't, I: TokenInput<'t, 's>>(
) -> impl Parser<'t, I, Target, Ex<'t, 's>> + Clone {
    let seq = |items: Vec<Target>, span: Span| {
        if items.iter().all(|t| matches!(t, Target::Name(_))) {
            let names = items
                .into_iter()
                .map(|t| match t {
                    Target::Name(id) => id,
                    _ => unreachable!("checked to be names"),
                })
                .collect();
            Target::Tuple { names, span }
        } else {
            Target::Seq { items, span }
        }
    };
    let item = recursive(|item| {
        let items = item
            .separated_by(just(Token::Comma))
            .at_least(1)
            .allow_trailing()
            .collect::<Vec<Target>>();
        choice((
            ident().map(Target::Name),
            just(Token::Star).ignore_then(ident()).map(Target::Starred),
            items
                .clone()
                .delimited_by(just(Token::LParen), just(Token::RParen))
                .map_with(move |items, e| seq(items, sp(e.span()))),
            items
                .delimited_by(just(Token::LBracket), just(Token::RBracket))
                .map_with(move |items, e| seq(items, sp(e.span()))),
        ))
    });
    item.separated_by(just(Token::Comma))
        .at_least(1)
        .collect::<Vec<Target>>()
        .then(just(Token::Comma).or_not().map(|c| c.is_some()))
        .map_with(move |(mut items, trailing), e| {
            if items.len() == 1 && !trailing && !matches!(items[0], Target::Starred(_)) {
                items.pop().expect("one item")
            } else {
                seq(items, sp(e.span()))
            }
        })
        .boxed()
}

/// The names a broken line binds: `name (, name)* OP`, with `OP` an assignment, at its start.
pub(super) fn bound_names(toks: &[(Token<'_>, Span)]) -> Vec<Ident> {
    let mut names = Vec::new();
    let mut expect_name = true;
    for (t, span) in toks {
        match (t, expect_name) {
            (Token::Name(n), true) => {
                names.push(Ident {
                    name: n.to_string(),
                    span: span.clone(),
                });
                expect_name = false;
            }
            (Token::Comma, false) => expect_name = true,
            (
                Token::Assign
                | Token::PlusAssign
                | Token::MinusAssign
                | Token::StarAssign
                | Token::SlashAssign
                | Token::FloorDivAssign
                | Token::ModAssign
                | Token::PowAssign
                | Token::AmpAssign
                | Token::PipeAssign
                | Token::CaretAssign
                | Token::ShlAssign
                | Token::ShrAssign,
                false,
            ) => return names,
            _ => return Vec::new(),
        }
    }
    Vec::new()
}
