//! The expression grammar: one sub-parser per precedence level, loosest last, each built from
//! the one tighter than it (atoms < calls, attributes, subscripts < `**` < unary `- + ~` <
//! `* / // % @` < `+ -` < `<< >>` < `&` < `^` < `|` < comparisons < `not` < `and` < `or` <
//! conditional expressions and `lambda`), tied together by [`expr_parser`]'s `recursive`.
//!
//! Invariants: chains of binary operators are folded iteratively (`foldl`), never by recursion
//! per operator; a broken call, subscript or bracketed display is skipped to its balanced closing
//! bracket and becomes an `ExprKind::Error` (or [`Postfix::Broken`]); every expression's span
//! covers its tokens, except an `@` product's, which is its operator's.

use super::strings::{concat_strings, string_expr};
use super::{custom, sp, unsupported, Bx, Ex, TokenInput, L_EXPR, L_NAME, L_OPERATOR};
use crate::ast::*;
use crate::lexer::Token;
use crate::syntax_error::SyntaxError;
use chumsky::prelude::*;

/// What follows the first item in brackets.
#[derive(Clone)]
enum Tail {
    Comp(Vec<CompFor>),
    More(Vec<Expr>),
    Nothing,
}

/// The outcome of one postfix operation, folded onto the expression before it.
enum Postfix {
    Call(Vec<Expr>, Vec<Keyword>),
    Attr(Ident),
    Index(Vec<Index>),
    /// A call or subscript whose brackets held a syntax error (already reported).
    Broken,
}

/// One argument of a call, in source order.
enum Arg {
    Pos(Expr),
    Kw(Keyword),
}

pub(super) fn ident<'t, 's: 't, I: TokenInput<'t, 's>>(
) -> impl Parser<'t, I, Ident, Ex<'t, 's>> + Clone {
    select! { Token::Name(n) => n }
        .map_with(|n: &str, e| Ident {
            name: n.to_string(),
            span: sp(e.span()),
        })
        .labelled(L_NAME)
}

/// An expression: the loosest level, `lambda` or a conditional expression.
pub(super) fn expr_parser<'t, 's: 't, I: TokenInput<'t, 's>>(
) -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone {
    recursive(|expr| {
        let starred = starred_item(expr.clone());
        let comp_fors = comp_fors(expr.clone());
        let atom = atom(expr.clone(), starred.clone(), comp_fors.clone());
        let postfix = postfix(atom, expr.clone(), starred, comp_fors);
        let bit_or = bitwise(arithmetic(unary(postfix)));
        let disjunction = boolean(comparison(bit_or));
        conditional(disjunction, expr)
    })
}

/// `*e` in a display, a call or a bracket-free tuple, or an expression.
pub(super) fn starred_item<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone {
    just(Token::Star)
        .ignore_then(expr.clone())
        .map_with(|inner, e| Expr {
            kind: ExprKind::Starred(Box::new(inner)),
            span: sp(e.span()),
        })
        .or(expr)
        .labelled(L_EXPR)
}

/// `for target in iter if cond ...`, one or more, after a comprehension's element. The iterable
/// and conditions stop before `if`/`for`: they are parsed without conditional expressions
/// (`or`-level).
fn comp_fors<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> Bx<'t, 's, I, Vec<CompFor>> {
    let target_atom = ident().map(Target::Name);
    let comp_target = target_atom
        .clone()
        .separated_by(just(Token::Comma))
        .at_least(1)
        .collect::<Vec<Target>>()
        .or(target_atom
            .separated_by(just(Token::Comma))
            .at_least(1)
            .collect::<Vec<Target>>()
            .delimited_by(just(Token::LParen), just(Token::RParen)))
        .map_with(|mut items, e| {
            if items.len() == 1 {
                items.pop().expect("one item")
            } else {
                Target::Seq {
                    items,
                    span: sp(e.span()),
                }
            }
        });
    let comp_for = just(Token::For)
        .ignore_then(comp_target)
        .then_ignore(just(Token::In))
        .then(expr.clone())
        .then(
            just(Token::If)
                .ignore_then(expr)
                .repeated()
                .collect::<Vec<Expr>>(),
        )
        .map(|((target, iter), conds)| CompFor {
            target,
            iter,
            conds,
        });
    comp_for
        .repeated()
        .at_least(1)
        .collect::<Vec<CompFor>>()
        .boxed()
}

/// The atoms: names and literals, strings, `(...)`, `[...]` and `{k: v}`.
fn atom<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    starred_item: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    comp_fors: Bx<'t, 's, I, Vec<CompFor>>,
) -> Bx<'t, 's, I, Expr> {
    let literal = select! {
        Token::Name(n) => ExprKind::Name(n.to_string()),
        Token::Int(v) => ExprKind::Int(v),
        Token::Float(v) => ExprKind::Float(v),
        Token::True => ExprKind::Bool(true),
        Token::False => ExprKind::Bool(false),
        Token::None => ExprKind::None,
        Token::Ellipsis => ExprKind::Ellipsis,
        Token::Error => ExprKind::Error,
    }
    .map_with(|kind, e| Expr {
        kind,
        span: sp(e.span()),
    });
    let (paren, list) = bracketed(starred_item, comp_fors);
    literal
        .or(string())
        .or(paren)
        .or(list)
        .or(dict(expr))
        .boxed()
}

/// String literals, adjacent ones concatenated as Python does (`"a" f"{b}"`).
fn string<'t, 's: 't, I: TokenInput<'t, 's>>() -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone {
    let one_string = select! { Token::Str(text) => text }
        .map_with(|text: &str, e| (text, sp(e.span())))
        .validate(
            |(text, span): (&str, Span), _, emitter| match string_expr(text, span.start) {
                Ok(k) => k,
                Err(err) => {
                    emitter.emit(custom(err));
                    ExprKind::Error
                }
            },
        );
    one_string
        .repeated()
        .at_least(1)
        .collect::<Vec<ExprKind>>()
        .map_with(|kinds, e| Expr {
            kind: concat_strings(kinds),
            span: sp(e.span()),
        })
}

/// `(e)`, `()`, `(a,)`, `(a, b)`, `(e for v in xs)`; and `[a, b]`, `[e for v in xs if c]`.
fn bracketed<'t, 's: 't, I: TokenInput<'t, 's>>(
    starred_item: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    comp_fors: Bx<'t, 's, I, Vec<CompFor>>,
) -> (
    impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone,
    impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone,
) {
    // What follows the first item of a bracketed display: a comprehension, more items, or
    // nothing (each item is parsed once, so nesting stays linear).
    let tail = choice((
        comp_fors.map(Tail::Comp),
        just(Token::Comma)
            .ignore_then(
                starred_item
                    .clone()
                    .separated_by(just(Token::Comma))
                    .allow_trailing()
                    .collect::<Vec<Expr>>(),
            )
            .map(Tail::More),
        empty().to(Tail::Nothing),
    ));
    let body = starred_item.then(tail).or_not();

    let paren = body
        .clone()
        .delimited_by(just(Token::LParen), just(Token::RParen))
        .map_with(|body, e| {
            let span = sp(e.span());
            match body {
                None => Expr {
                    kind: ExprKind::Tuple(Vec::new()),
                    span,
                },
                Some((first, Tail::Nothing)) if !matches!(first.kind, ExprKind::Starred(_)) => {
                    first
                }
                Some((first, Tail::Nothing)) => Expr {
                    kind: ExprKind::Tuple(vec![first]),
                    span,
                },
                Some((first, Tail::More(rest))) => {
                    let mut items = vec![first];
                    items.extend(rest);
                    Expr {
                        kind: ExprKind::Tuple(items),
                        span,
                    }
                }
                Some((first, Tail::Comp(gens))) => Expr {
                    kind: ExprKind::ListComp {
                        elt: Box::new(first),
                        gens,
                    },
                    span,
                },
            }
        })
        .recover_with(via_parser(nested_delimiters(
            Token::LParen,
            Token::RParen,
            [(Token::LBracket, Token::RBracket)],
            |span| Expr {
                kind: ExprKind::Error,
                span: sp(span),
            },
        )));

    let list = body
        .delimited_by(just(Token::LBracket), just(Token::RBracket))
        .map_with(|body, e| {
            let span = sp(e.span());
            let kind = match body {
                None => ExprKind::List(Vec::new()),
                Some((first, Tail::Nothing)) => ExprKind::List(vec![first]),
                Some((first, Tail::More(rest))) => {
                    let mut items = vec![first];
                    items.extend(rest);
                    ExprKind::List(items)
                }
                Some((first, Tail::Comp(gens))) => ExprKind::ListComp {
                    elt: Box::new(first),
                    gens,
                },
            };
            Expr { kind, span }
        })
        .recover_with(via_parser(nested_delimiters(
            Token::LBracket,
            Token::RBracket,
            [(Token::LParen, Token::RParen)],
            |span| Expr {
                kind: ExprKind::Error,
                span: sp(span),
            },
        )));
    (paren, list)
}

/// `{k: v, ...}`
fn dict<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone {
    expr.clone()
        .then_ignore(just(Token::Colon))
        .then(expr)
        .separated_by(just(Token::Comma))
        .allow_trailing()
        .collect::<Vec<(Expr, Expr)>>()
        .delimited_by(just(Token::LBrace), just(Token::RBrace))
        .map_with(|items, e| Expr {
            kind: ExprKind::Dict(items),
            span: sp(e.span()),
        })
}

/// Calls, subscripts and attributes after an atom, folded left to right.
fn postfix<'t, 's: 't, I: TokenInput<'t, 's>>(
    atom: Bx<'t, 's, I, Expr>,
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    starred_item: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    comp_fors: Bx<'t, 's, I, Vec<CompFor>>,
) -> Bx<'t, 's, I, Expr> {
    let call = call_args(expr.clone(), starred_item, comp_fors);
    let attr = just(Token::Dot).ignore_then(ident()).map(Postfix::Attr);
    atom.foldl_with(
        choice((call, subscript(expr), attr)).repeated(),
        |lhs, post, e| {
            let kind = match post {
                Postfix::Call(args, kwargs) => ExprKind::Call {
                    func: Box::new(lhs),
                    args,
                    kwargs,
                },
                Postfix::Attr(attr) => ExprKind::Attribute {
                    value: Box::new(lhs),
                    attr,
                },
                Postfix::Index(indices) => ExprKind::Subscript {
                    value: Box::new(lhs),
                    indices,
                },
                Postfix::Broken => ExprKind::Error,
            };
            Expr {
                kind,
                span: sp(e.span()),
            }
        },
    )
    .boxed()
}

/// A call's brackets: positional arguments, then keyword arguments.
fn call_args<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    starred_item: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    comp_fors: Bx<'t, 's, I, Vec<CompFor>>,
) -> impl Parser<'t, I, Postfix, Ex<'t, 's>> + Clone {
    let kwarg = ident()
        .then_ignore(just(Token::Assign))
        .then(expr)
        .map_with(|(name, value), e| {
            Arg::Kw(Keyword {
                name,
                value,
                span: sp(e.span()),
            })
        });
    // A positional argument, or a generator (`sum(x for x in xs)`), parsed once.
    let pos_arg = starred_item
        .then(comp_fors.or_not())
        .map_with(|(elt, gens), e| match gens {
            None => elt,
            Some(gens) => Expr {
                kind: ExprKind::ListComp {
                    elt: Box::new(elt),
                    gens,
                },
                span: sp(e.span()),
            },
        });
    let arg = kwarg.or(pos_arg.map(Arg::Pos));
    arg.separated_by(just(Token::Comma))
        .allow_trailing()
        .collect::<Vec<Arg>>()
        .delimited_by(just(Token::LParen), just(Token::RParen))
        .validate(|args, _, emitter| {
            let mut pos = Vec::new();
            let mut kws: Vec<Keyword> = Vec::new();
            for arg in args {
                match arg {
                    Arg::Pos(a) => {
                        if let Some(kw) = kws.last() {
                            emitter.emit(custom(SyntaxError::PositionalAfterKeyword {
                                at: a.span.clone(),
                                keyword_at: kw.span.clone(),
                            }));
                        }
                        pos.push(a);
                    }
                    Arg::Kw(k) => kws.push(k),
                }
            }
            Postfix::Call(pos, kws)
        })
        .recover_with(via_parser(nested_delimiters(
            Token::LParen,
            Token::RParen,
            [(Token::LBracket, Token::RBracket)],
            |_| Postfix::Broken,
        )))
}

/// A subscript's brackets: `e`, or a slice `lo:hi[:step]` with every part optional,
/// comma-separated.
fn subscript<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Postfix, Ex<'t, 's>> + Clone {
    let step = just(Token::Colon).ignore_then(expr.clone().or_not());
    let slice_rest = just(Token::Colon)
        .ignore_then(expr.clone().or_not())
        .then(step.or_not());
    let index = choice((
        slice_rest.clone().map_with(|(hi, step), e| Index::Slice {
            lo: None,
            hi,
            step: step.flatten().map(Box::new),
            span: sp(e.span()),
        }),
        expr.then(slice_rest.or_not())
            .map_with(|(lo, rest), e| match rest {
                None => Index::Expr(lo),
                Some((hi, step)) => Index::Slice {
                    lo: Some(lo),
                    hi,
                    step: step.flatten().map(Box::new),
                    span: sp(e.span()),
                },
            }),
    ));
    index
        .separated_by(just(Token::Comma))
        .at_least(1)
        .allow_trailing()
        .collect::<Vec<Index>>()
        .delimited_by(just(Token::LBracket), just(Token::RBracket))
        .map(Postfix::Index)
        .recover_with(via_parser(nested_delimiters(
            Token::LBracket,
            Token::RBracket,
            [(Token::LParen, Token::RParen)],
            |_| Postfix::Broken,
        )))
}

/// `a ** b` and the unary operators, folded from the inside out (iteratively: no recursion per
/// operator). `**` binds tighter than a unary minus on its left (`-x ** 2` is `-(x ** 2)`); the
/// exponent is a unary expression (not chained).
fn unary<'t, 's: 't, I: TokenInput<'t, 's>>(
    postfix: Bx<'t, 's, I, Expr>,
) -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone {
    let unary_op = select! {
        Token::Minus => UnaryOp::Neg,
        Token::Plus => UnaryOp::Pos,
        Token::Tilde => UnaryOp::Invert,
    }
    .map_with(|op, e| (op, sp(e.span())));
    let signed_postfix = unary_op
        .repeated()
        .collect::<Vec<_>>()
        .then(postfix.clone())
        .map(fold_unary);
    let power = postfix
        .then(just(Token::DoubleStar).ignore_then(signed_postfix).or_not())
        .map_with(|(base, exp), e| match exp {
            None => base,
            Some(exp) => Expr {
                kind: ExprKind::Binary {
                    op: BinOp::Pow,
                    lhs: Box::new(base),
                    rhs: Box::new(exp),
                },
                span: sp(e.span()),
            },
        })
        .boxed();
    unary_op
        .repeated()
        .collect::<Vec<_>>()
        .then(power)
        .map(fold_unary)
        .labelled(L_EXPR)
}

/// A binary expression of `op` with its span.
fn binary(op: BinOp, lhs: Expr, rhs: Expr, span: SimpleSpan) -> Expr {
    Expr {
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span: sp(span),
    }
}

/// The arithmetic levels over unary expressions: `* / // % @`, then `+ -`.
fn arithmetic<'t, 's: 't, I: TokenInput<'t, 's>>(
    unary: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> Bx<'t, 's, I, Expr> {
    let mul_op = select! {
        Token::Star => BinOp::Mul,
        Token::Slash => BinOp::Div,
        Token::DoubleSlash => BinOp::FloorDiv,
        Token::Percent => BinOp::Mod,
        Token::At => BinOp::MatMul,
    }
    .map_with(|op, e| (op, e.span()))
    .labelled(L_OPERATOR);
    let product = unary
        .clone()
        .foldl_with(
            mul_op.then(unary).repeated(),
            move |lhs, ((op, op_span), rhs), e| {
                // An `@` expression's span is its operator's: evaluating it is refused there.
                let span = if op == BinOp::MatMul {
                    op_span
                } else {
                    e.span()
                };
                binary(op, lhs, rhs, span)
            },
        )
        .boxed();
    let add_op = select! {
        Token::Plus => BinOp::Add,
        Token::Minus => BinOp::Sub,
    }
    .labelled(L_OPERATOR);
    product
        .clone()
        .foldl_with(add_op.then(product).repeated(), move |lhs, (op, rhs), e| {
            binary(op, lhs, rhs, e.span())
        })
        .boxed()
}

/// Python's bitwise levels over sums, tightest first: `<<` / `>>`, `&`, `^`, `|`; all bind
/// tighter than comparisons (masks write `(a < n) & (b < m)`).
fn bitwise<'t, 's: 't, I: TokenInput<'t, 's>>(sum: Bx<'t, 's, I, Expr>) -> Bx<'t, 's, I, Expr> {
    let shift_op = select! {
        Token::ShiftLeft => BinOp::Shl,
        Token::ShiftRight => BinOp::Shr,
    }
    .labelled(L_OPERATOR);
    let shift = sum
        .clone()
        .foldl_with(shift_op.then(sum).repeated(), move |lhs, (op, rhs), e| {
            binary(op, lhs, rhs, e.span())
        })
        .boxed();
    let bit_and = shift
        .clone()
        .foldl_with(
            just(Token::Amp).ignore_then(shift).repeated(),
            move |lhs, rhs, e| binary(BinOp::BitAnd, lhs, rhs, e.span()),
        )
        .boxed();
    let bit_xor = bit_and
        .clone()
        .foldl_with(
            just(Token::Caret).ignore_then(bit_and).repeated(),
            move |lhs, rhs, e| binary(BinOp::BitXor, lhs, rhs, e.span()),
        )
        .boxed();
    bit_xor
        .clone()
        .foldl_with(
            just(Token::Pipe).ignore_then(bit_xor).repeated(),
            move |lhs, rhs, e| binary(BinOp::BitOr, lhs, rhs, e.span()),
        )
        .boxed()
}

/// Comparisons (`< <= == != >= >`, `is [not]`, `[not] in`) over bitwise expressions: `a < b <
/// c` is `a < b and b < c` (`b` is a pure expression here, evaluated twice).
fn comparison<'t, 's: 't, I: TokenInput<'t, 's>>(
    bit_or: Bx<'t, 's, I, Expr>,
) -> Bx<'t, 's, I, Expr> {
    let is_op = just(Token::Is)
        .ignore_then(just(Token::Not).or_not())
        .map(|not| {
            if not.is_some() {
                CmpOp::IsNot
            } else {
                CmpOp::Is
            }
        });
    let in_op = just(Token::In)
        .to(CmpOp::In)
        .or(just(Token::Not).then(just(Token::In)).to(CmpOp::NotIn));
    let cmp_op = select! { Token::Compare(s) => s }
        .try_map(|s: &str, span| {
            CmpOp::from_symbol(s).ok_or_else(|| Rich::custom(span, unsupported(s, sp(span))))
        })
        .or(is_op)
        .or(in_op)
        .labelled(L_OPERATOR);
    bit_or
        .clone()
        .then(
            cmp_op
                .then(bit_or)
                .repeated()
                .collect::<Vec<(CmpOp, Expr)>>(),
        )
        .map(|(first, rest)| {
            let mut lhs = first;
            let mut chain: Option<Expr> = None;
            for (op, rhs) in rest {
                let cmp = Expr {
                    span: lhs.span.start..rhs.span.end,
                    kind: ExprKind::Compare {
                        op,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs.clone()),
                    },
                };
                chain = Some(match chain {
                    None => cmp,
                    Some(prev) => Expr {
                        span: prev.span.start..cmp.span.end,
                        kind: ExprKind::BoolOp {
                            and: true,
                            lhs: Box::new(prev),
                            rhs: Box::new(cmp),
                        },
                    },
                });
                lhs = rhs;
            }
            chain.unwrap_or(lhs)
        })
        .boxed()
}

/// `not`, `and`, `or` (loosest last) over comparisons, each folded iteratively.
fn boolean<'t, 's: 't, I: TokenInput<'t, 's>>(
    comparison: Bx<'t, 's, I, Expr>,
) -> Bx<'t, 's, I, Expr> {
    let not = just(Token::Not)
        .map_with(|_, e| sp(e.span()))
        .repeated()
        .collect::<Vec<Span>>()
        .then(comparison)
        .map(|(nots, operand)| {
            nots.into_iter().rev().fold(operand, |acc, span| Expr {
                span: span.start..acc.span.end,
                kind: ExprKind::Not(Box::new(acc)),
            })
        })
        .boxed();
    let bool_op = |and: bool| {
        move |lhs: Expr, rhs: Expr, e: &mut chumsky::input::MapExtra<'t, '_, I, Ex<'t, 's>>| Expr {
            kind: ExprKind::BoolOp {
                and,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            span: sp(e.span()),
        }
    };
    let conjunction = not
        .clone()
        .foldl_with(just(Token::And).ignore_then(not).repeated(), bool_op(true))
        .boxed();
    conjunction
        .clone()
        .foldl_with(
            just(Token::Or).ignore_then(conjunction).repeated(),
            bool_op(false),
        )
        .boxed()
}

/// The loosest level: `body if test else orelse`, and `lambda params: body`.
fn conditional<'t, 's: 't, I: TokenInput<'t, 's>>(
    disjunction: Bx<'t, 's, I, Expr>,
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> Bx<'t, 's, I, Expr> {
    let ifexp = disjunction
        .clone()
        .then(
            just(Token::If)
                .ignore_then(disjunction.clone())
                .then_ignore(just(Token::Else))
                .then(expr.clone())
                .or_not(),
        )
        .map_with(|(body, rest), e| match rest {
            None => body,
            Some((test, orelse)) => Expr {
                kind: ExprKind::IfExp {
                    test: Box::new(test),
                    body: Box::new(body),
                    orelse: Box::new(orelse),
                },
                span: sp(e.span()),
            },
        });
    let lambda_param = ident()
        .then(just(Token::Assign).ignore_then(disjunction).or_not())
        .map_with(|(name, default), e| Param {
            name,
            ty: None,
            default,
            span: sp(e.span()),
        });
    let lambda = just(Token::Lambda)
        .ignore_then(
            lambda_param
                .separated_by(just(Token::Comma))
                .collect::<Vec<Param>>(),
        )
        .then_ignore(just(Token::Colon))
        .then(expr)
        .map_with(|(params, body), e| Expr {
            kind: ExprKind::Lambda {
                params,
                body: Box::new(body),
            },
            span: sp(e.span()),
        });
    lambda.or(ifexp).labelled(L_EXPR).boxed()
}

/// Folds prefix `-`/`+` operators (innermost last) onto their operand.
fn fold_unary((ops, operand): (Vec<(UnaryOp, Span)>, Expr)) -> Expr {
    ops.into_iter().rev().fold(operand, |acc, (op, span)| Expr {
        span: span.start..acc.span.end,
        kind: ExprKind::Unary {
            op,
            operand: Box::new(acc),
        },
    })
}
