//! Statements: the `recursive` statement parser ([`stmt_parser`]) that chooses among the
//! compound statements (`for`, `while`, `if`/`elif`/`else`, `def`, `class`), which own an
//! indented block, the simple ones of [`super::simple`], and the recovery of a broken line; one
//! sub-parser per statement family.
//!
//! Invariants: a block is `Newline Indent stmt+ Dedent` (the lexer balances `Indent`/`Dedent`);
//! a compound statement's span runs from its keyword to the end of its last statement; a broken
//! statement is skipped to the end of its logical line (with its block, if any) and becomes a
//! `StmtKind::Error`, or `StmtKind::Recovered` with the names it visibly binds.

use super::expr::{expr_parser, ident};
use super::simple::{opaque, simple};
use super::targets::{bound_names, expr_list, target_parser};
use super::{
    custom, sp, unsupported, Bx, Ex, TokenInput, L_BLOCK, L_COLON_DEF, L_COLON_ELSE, L_COLON_FOR,
    L_COLON_IF, L_PARAMS, L_STMT,
};
use crate::ast::*;
use crate::lexer::Token;
use crate::syntax_error::SyntaxError;
use chumsky::prelude::*;

/// A statement, compound or simple, or a broken line skipped.
pub(super) fn stmt_parser<'t, 's: 't, I: TokenInput<'t, 's>>(
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    let expr = expr_parser();
    recursive(|stmt| {
        // A suite: an indented block, or (Python's one-line form, `if done: break`) one
        // simple statement on the header's line.
        let block = just(Token::Newline)
            .ignore_then(just(Token::Indent).labelled(L_BLOCK))
            .ignore_then(stmt.clone().repeated().at_least(1).collect::<Vec<Stmt>>())
            .then_ignore(just(Token::Dedent))
            .or(simple(expr.clone()).map(|s| vec![s]))
            .boxed();
        let def_stmt = def_parser(expr.clone(), block.clone()).map(|k| Stmt {
            span: k.span.clone(),
            kind: StmtKind::Def(std::rc::Rc::new(k)),
        });
        choice((
            for_stmt(expr.clone(), block.clone()),
            while_stmt(expr.clone(), block.clone()),
            if_stmt(expr.clone(), block.clone()),
            def_stmt,
            class_stmt(expr.clone(), block.clone()),
            opaque(expr.clone()),
            simple(expr.clone()),
            stray_block(stmt),
        ))
        .labelled(L_STMT)
        .recover_with(via_parser(skip_line(block)))
        .boxed()
    })
}

/// The end of a compound statement: its last statement's, or its keyword's if it has none.
fn block_end(kw: &Span, body: &[Stmt]) -> usize {
    body.last().map_or(kw.end, |s| s.span.end)
}

/// `for i in ...`, `for i, (a, b) in ...`: the target is a name or an unpacking.
fn for_stmt<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    block: Bx<'t, 's, I, Vec<Stmt>>,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    just(Token::For)
        .map_with(|_, e| sp(e.span()))
        .then(target_parser())
        .then_ignore(just(Token::In))
        .then(expr_list(expr))
        .then_ignore(header_colon(L_COLON_FOR, "for"))
        .then(block)
        .map(|(((kw, target), iter), body)| {
            let end = block_end(&kw, &body);
            Stmt {
                kind: StmtKind::For { target, iter, body },
                span: kw.start..end,
            }
        })
}

/// `while test: ...`.
fn while_stmt<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    block: Bx<'t, 's, I, Vec<Stmt>>,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    just(Token::While)
        .map_with(|_, e| sp(e.span()))
        .then(expr)
        .then_ignore(header_colon(L_COLON_IF, "while"))
        .then(block)
        .map(|((kw, test), body)| {
            let end = block_end(&kw, &body);
            Stmt {
                kind: StmtKind::While { test, body },
                span: kw.start..end,
            }
        })
}

/// `if test: ...`, any number of `elif test: ...`, then optionally `else: ...`; an `elif` is an
/// `if` alone in the `else` branch of the one before.
fn if_stmt<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    block: Bx<'t, 's, I, Vec<Stmt>>,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    let else_block = just(Token::Else)
        .ignore_then(header_colon(L_COLON_ELSE, "else"))
        .ignore_then(block.clone());
    let elif = just(Token::Elif)
        .map_with(|_, e| sp(e.span()))
        .then(expr.clone())
        .then_ignore(header_colon(L_COLON_IF, "elif"))
        .then(block.clone());
    just(Token::If)
        .map_with(|_, e| sp(e.span()))
        .then(expr)
        .then_ignore(header_colon(L_COLON_IF, "if"))
        .then(block)
        .then(elif.repeated().collect::<Vec<_>>())
        .then(else_block.or_not())
        .map(|((((kw, test), body), elifs), orelse)| {
            let mut orelse = orelse.unwrap_or_default();
            for ((kw, test), body) in elifs.into_iter().rev() {
                let end = orelse
                    .last()
                    .or(body.last())
                    .map_or(kw.end, |s: &Stmt| s.span.end);
                orelse = vec![Stmt {
                    kind: StmtKind::If { test, body, orelse },
                    span: kw.start..end,
                }];
            }
            let end = orelse
                .last()
                .or(body.last())
                .map_or(kw.end, |s: &Stmt| s.span.end);
            Stmt {
                kind: StmtKind::If { test, body, orelse },
                span: kw.start..end,
            }
        })
}

/// `@decorators class Name(bases): body`; a header nkc does not read (keyword bases such as
/// `metaclass=`) leaves the statement opaque.
fn class_stmt<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    block: Bx<'t, 's, I, Vec<Stmt>>,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    just(Token::At)
        .ignore_then(expr.clone())
        .then_ignore(just(Token::Newline))
        .repeated()
        .collect::<Vec<Expr>>()
        .then(just(Token::Unsupported("class")).map_with(|_, e| sp(e.span())))
        .then(ident())
        .then(
            expr.separated_by(just(Token::Comma))
                .allow_trailing()
                .collect::<Vec<Expr>>()
                .delimited_by(just(Token::LParen), just(Token::RParen))
                .or_not(),
        )
        .then_ignore(just(Token::Colon))
        .then(block)
        .map(|((((decorators, kw), name), bases), body)| {
            let end = block_end(&kw, &body);
            let span = kw.start..end;
            Stmt {
                kind: StmtKind::Class(std::rc::Rc::new(crate::ast::ClassDef {
                    name,
                    decorators,
                    bases: bases.unwrap_or_default(),
                    body,
                    span: span.clone(),
                })),
                span,
            }
        })
}

/// An indented block where none was opened (the lexer normally catches this first).
fn stray_block<'t, 's: 't, I: TokenInput<'t, 's>>(
    stmt: impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    just(Token::Indent)
        .ignore_then(stmt.repeated().collect::<Vec<Stmt>>())
        .then_ignore(just(Token::Dedent))
        .map_with(|_, e| Stmt {
            kind: StmtKind::Error,
            span: sp(e.span()),
        })
        .validate(|s: Stmt, _, emitter| {
            emitter.emit(custom(SyntaxError::StrayBlock { at: s.span.clone() }));
            s
        })
}

/// Recovery: skip the rest of the logical line, and the block after it if there is one; keep
/// the names the line visibly binds (`a, b = ...`).
fn skip_line<'t, 's: 't, I: TokenInput<'t, 's>>(
    block: Bx<'t, 's, I, Vec<Stmt>>,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    none_of([Token::Newline, Token::Indent, Token::Dedent])
        .map_with(|t, e| (t, sp(e.span())))
        .repeated()
        .collect::<Vec<(Token<'s>, Span)>>()
        .map_with(|toks, e| (toks, sp(e.span())))
        .then_ignore(block.ignored().or(just(Token::Newline).ignored()))
        .map(|(toks, span)| {
            let binds = bound_names(&toks);
            Stmt {
                kind: if binds.is_empty() {
                    StmtKind::Error
                } else {
                    StmtKind::Recovered { binds }
                },
                span,
            }
        })
}

/// `:` at the end of a header. When the line simply ends without it, the colon is reported and
/// assumed, so that the block after the header is still parsed.
pub(super) fn header_colon<'t, 's: 't, I: TokenInput<'t, 's>>(
    label: &'static str,
    header: &'static str,
) -> impl Parser<'t, I, (), Ex<'t, 's>> + Clone {
    let missing = any()
        .filter(|t: &Token<'s>| *t == Token::Newline)
        .map_with(|_, e| e.span())
        .rewind()
        .validate(move |span: SimpleSpan, _, emitter| {
            emitter.emit(custom(SyntaxError::MissingColon {
                at: span.start..span.start,
                header,
                found: None,
            }));
        });
    just(Token::Colon).ignored().labelled(label).or(missing)
}

/// `@decorator ... def name(params) [-> T]: body`, at module level or in a block.
fn def_parser<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    block: impl Parser<'t, I, Vec<Stmt>, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Kernel, Ex<'t, 's>> + Clone {
    // `name[: annotation][= default]`, `*args`, `**kwargs` (both accepted; `*` alone too).
    let param = just(Token::Star)
        .or(just(Token::DoubleStar))
        .or_not()
        .then(ident().or_not())
        .then(just(Token::Colon).ignore_then(expr.clone()).or_not())
        .then(just(Token::Assign).ignore_then(expr.clone()).or_not())
        .try_map(|(((star, name), ty), default), span| {
            let name = match (star, name) {
                (None, Some(n)) => n,
                (Some(Token::Star), Some(n)) => Ident {
                    name: format!("*{}", n.name),
                    span: n.span,
                },
                (Some(_), Some(n)) => Ident {
                    name: format!("**{}", n.name),
                    span: n.span,
                },
                (Some(Token::Star), None) => Ident {
                    name: "*".to_string(),
                    span: sp(span),
                },
                _ => {
                    // An empty match can end before it starts: point at where it starts.
                    let at = SimpleSpan::from(span.start.min(span.end)..span.start.min(span.end));
                    return Err(Rich::custom(at, unsupported("this parameter", sp(at))));
                }
            };
            Ok(Param {
                name,
                ty,
                default,
                span: sp(span),
            })
        });
    let decorator = just(Token::At)
        .ignore_then(expr.clone())
        .then_ignore(just(Token::Newline));
    let params = param
        .separated_by(just(Token::Comma))
        .allow_trailing()
        .collect::<Vec<Param>>()
        .delimited_by(just(Token::LParen), just(Token::RParen))
        .recover_with(via_parser(nested_delimiters(
            Token::LParen,
            Token::RParen,
            [(Token::LBracket, Token::RBracket)],
            |_| Vec::new(),
        )))
        .labelled(L_PARAMS);
    decorator
        .repeated()
        .collect::<Vec<Expr>>()
        .then(just(Token::Def).map_with(|_, e| sp(e.span())))
        .then(ident())
        .then(params)
        .then_ignore(just(Token::Arrow).then(expr).or_not())
        .then_ignore(header_colon(L_COLON_DEF, "def"))
        .then(block)
        .map(|((((decorators, kw), name), params), body)| {
            let end = body.last().map_or(kw.end, |s| s.span.end);
            let start = decorators
                .first()
                .map_or(kw.start, |d| kw.start.min(d.span.start));
            let _ = start;
            Kernel {
                name,
                decorators,
                params,
                body,
                span: kw.start..end,
            }
        })
}
