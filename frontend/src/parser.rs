//! The parser: tokens (from `lexer`) to the AST, with error recovery (chumsky).
//!
//! The grammar is the Python subset of `LANGUAGE.md`: a module of `def` kernels (each after any
//! number of decorator lines `@expr`, which are ignored) and simple statements; blocks made of
//! `Newline Indent stmt+ Dedent`; assignments (to a name, a subscript, or a tuple of names),
//! augmented assignments, expression statements (a bare string, such as a docstring, is `pass`),
//! `for`, `if` / `elif` / `else`, `assert test[, msg]`, `import` / `from ... import` lines (kept
//! as `pass`), `return`, `pass`; parameters `name[: annotation][= default]`; expressions with
//! Python's precedence (`or` < `and` < `not` < comparisons and `is [not]` < `&` < `+ -` <
//! `* / // %` < unary `- +` < calls, attributes, subscripts < atoms, which include strings,
//! `...` and list displays `[a, b]`, read as tuples).
//!
//! Recovery, from the most precise to the bluntest:
//! - a missing `:` at the end of a `def`/`for` header is reported and assumed;
//! - a broken call, subscript or parenthesised expression is skipped up to its balanced closing
//!   bracket and becomes an `ExprKind::Error` (the lexer guarantees balanced brackets);
//! - a broken statement is skipped up to the end of its logical line (with the indented block
//!   that follows it, if any) and becomes a `StmtKind::Error`.
//!
//! Diagnostics: chumsky's `Rich` errors carry a ready [`Error`] (a
//! [`SyntaxError`] converted) when the parser made them itself (`Rich::custom`), and otherwise an
//! expected/found pair, which [`convert`] words for humans as a [`SyntaxError::Unexpected`].
//! At most one syntax error is kept per source line (the first), and none on a line where the
//! lexer already reported one: later errors on a line are fallout of the first.
//!
//! Invariant: the recursion of the parser is bounded because the lexer rejects lines nested more
//! than `MAX_NESTING` brackets deep, and blocks nested more than `MAX_NESTING` deep; chains of
//! operators are parsed iteratively.

use crate::ast::*;
use crate::diagnostic::Error;
use crate::lexer::{self, Token};
use crate::syntax_error::SyntaxError;
use chumsky::error::{RichPattern, RichReason};
use chumsky::{input::ValueInput, prelude::*};

type Rch<'t, 's> = Rich<'t, Token<'s>, SimpleSpan, Error>;
type Ex<'t, 's> = extra::Err<Rch<'t, 's>>;

/// Labels given to parsers, which [`convert`] recognises.
const L_EXPR: &str = "an expression";
const L_OPERATOR: &str = "an operator";
const L_NAME: &str = "a name";
const L_BLOCK: &str = "an indented block";
const L_STMT: &str = "a statement";
const L_END: &str = "end of line";
const L_PARAMS: &str = "`(` and the parameters";
const L_COLON_FOR: &str = "`:` after the `for` header";
const L_COLON_DEF: &str = "`:` after the `def` header";
const L_COLON_IF: &str = "`:` after the `if` header";
const L_COLON_ELSE: &str = "`:` after `else`";

/// Parses a whole file: lexes it, parses the tokens and merges the diagnostics of both.
pub fn parse(source: &str) -> (Module, Vec<Error>) {
    let (tokens, lex_errors) = lexer::lex(source);
    // Drop the final `Eof`: chumsky has its own end of input, at the same place.
    let body = match tokens.split_last() {
        Some(((Token::Eof, _), rest)) => rest,
        _ => &tokens[..],
    };
    let chumsky_tokens: Vec<(Token<'_>, SimpleSpan)> = body
        .iter()
        .map(|(t, s)| (t.clone(), SimpleSpan::from(s.clone())))
        .collect();
    let eoi = SimpleSpan::from(source.len()..source.len());
    let (module, rich) = module_parser()
        .parse(chumsky_tokens.as_slice().split_token_span(eoi))
        .into_output_errors();
    let parse_errors: Vec<Error> = rich.into_iter().filter_map(convert).collect();
    (
        module.unwrap_or_default(),
        merge(source, lex_errors, parse_errors),
    )
}

/// The text of a string literal without its quotes (one or three of them).
fn string_text(text: &str) -> String {
    let q = if text.starts_with("\"\"\"") || text.starts_with("'''") {
        3
    } else {
        1
    };
    text.get(q..text.len().saturating_sub(q))
        .unwrap_or_default()
        .to_string()
}

fn sp(s: SimpleSpan) -> Span {
    s.start..s.end
}

fn custom<'t, 's>(error: impl Into<Error>) -> Rch<'t, 's> {
    let error = error.into();
    Rich::custom(SimpleSpan::from(error.span.clone()), error)
}

/// Keeps every lexer error, and the first parser error of each line that has no lexer error.
fn merge(source: &str, lex_errors: Vec<Error>, mut parse_errors: Vec<Error>) -> Vec<Error> {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |pos: usize| line_starts.partition_point(|&start| start <= pos);
    let mut taken: std::collections::HashSet<usize> =
        lex_errors.iter().map(|e| line_of(e.span.start)).collect();
    parse_errors.sort_by_key(|e| (e.span.start, e.span.end));
    let mut all = lex_errors;
    for e in parse_errors {
        if taken.insert(line_of(e.span.start)) {
            all.push(e);
        }
    }
    all.sort_by_key(|e| (e.span.start, e.span.end));
    all
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

fn ident<'t, 's: 't, I>() -> impl Parser<'t, I, Ident, Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    select! { Token::Name(n) => n }
        .map_with(|n: &str, e| Ident {
            name: n.to_string(),
            span: sp(e.span()),
        })
        .labelled(L_NAME)
}

fn expr_parser<'t, 's: 't, I>() -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    recursive(|expr| {
        let literal = select! {
            Token::Name(n) => ExprKind::Name(n.to_string()),
            Token::Int(v) => ExprKind::Int(v),
            Token::Float(v) => ExprKind::Float(v),
            Token::True => ExprKind::Bool(true),
            Token::False => ExprKind::Bool(false),
            Token::None => ExprKind::None,
            Token::Str(text) => ExprKind::Str(string_text(text)),
            Token::Ellipsis => ExprKind::Ellipsis,
            Token::Error => ExprKind::Error,
        }
        .map_with(|kind, e| Expr {
            kind,
            span: sp(e.span()),
        });

        // `(e)`, `()`, `(a,)`, `(a, b)`.
        let items = expr
            .clone()
            .separated_by(just(Token::Comma))
            .at_least(1)
            .collect::<Vec<Expr>>()
            .then(just(Token::Comma).or_not().map(|c| c.is_some()));
        let paren = items
            .or_not()
            .delimited_by(just(Token::LParen), just(Token::RParen))
            .map_with(|items, e| match items {
                Some((v, false)) if v.len() == 1 => {
                    v.into_iter().next().expect("length checked to be 1")
                }
                Some((v, _)) => Expr {
                    kind: ExprKind::Tuple(v),
                    span: sp(e.span()),
                },
                None => Expr {
                    kind: ExprKind::Tuple(Vec::new()),
                    span: sp(e.span()),
                },
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

        // `[a, b]`: a list, which the language treats as a tuple (`axis=[1]`, shapes).
        let list = expr
            .clone()
            .separated_by(just(Token::Comma))
            .allow_trailing()
            .collect::<Vec<Expr>>()
            .delimited_by(just(Token::LBracket), just(Token::RBracket))
            .map_with(|items, e| Expr {
                kind: ExprKind::Tuple(items),
                span: sp(e.span()),
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

        let atom = literal.or(paren).or(list).boxed();

        // Calls: positional arguments, then keyword arguments.
        let kwarg = ident()
            .then_ignore(just(Token::Assign))
            .then(expr.clone())
            .map_with(|(name, value), e| {
                Arg::Kw(Keyword {
                    name,
                    value,
                    span: sp(e.span()),
                })
            });
        let arg = kwarg.or(expr.clone().map(Arg::Pos));
        let call = arg
            .separated_by(just(Token::Comma))
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
            )));

        // Subscripts: `e` or `lo:hi` with optional bounds, comma-separated.
        let index = choice((
            just(Token::Colon)
                .ignore_then(expr.clone().or_not())
                .map_with(|hi, e| Index::Slice {
                    lo: None,
                    hi,
                    span: sp(e.span()),
                }),
            expr.clone()
                .then(
                    just(Token::Colon)
                        .ignore_then(expr.clone().or_not())
                        .or_not(),
                )
                .map_with(|(lo, rest), e| match rest {
                    None => Index::Expr(lo),
                    Some(hi) => Index::Slice {
                        lo: Some(lo),
                        hi,
                        span: sp(e.span()),
                    },
                }),
        ));
        let subscript = index
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
            )));

        let attr = just(Token::Dot).ignore_then(ident()).map(Postfix::Attr);

        let postfix = atom
            .foldl_with(
                choice((call, subscript, attr)).repeated(),
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
            .boxed();

        // Unary operators, folded from the inside out (iteratively: no recursion per operator).
        let unary_op = select! {
            Token::Minus => UnaryOp::Neg,
            Token::Plus => UnaryOp::Pos,
        }
        .map_with(|op, e| (op, sp(e.span())));
        let unary = unary_op
            .repeated()
            .collect::<Vec<_>>()
            .then(postfix)
            .map(|(ops, operand)| {
                ops.into_iter().rev().fold(operand, |acc, (op, span)| Expr {
                    span: span.start..acc.span.end,
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(acc),
                    },
                })
            })
            .labelled(L_EXPR);

        let binary = |op: BinOp, lhs: Expr, rhs: Expr, span: SimpleSpan| Expr {
            kind: ExprKind::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            span: sp(span),
        };
        let mul_op = select! {
            Token::Star => BinOp::Mul,
            Token::Slash => BinOp::Div,
            Token::DoubleSlash => BinOp::FloorDiv,
            Token::Percent => BinOp::Mod,
        }
        .labelled(L_OPERATOR);
        let product = unary
            .clone()
            .foldl_with(mul_op.then(unary).repeated(), move |lhs, (op, rhs), e| {
                binary(op, lhs, rhs, e.span())
            })
            .boxed();
        let add_op = select! {
            Token::Plus => BinOp::Add,
            Token::Minus => BinOp::Sub,
        }
        .labelled(L_OPERATOR);
        let sum = product
            .clone()
            .foldl_with(add_op.then(product).repeated(), move |lhs, (op, rhs), e| {
                binary(op, lhs, rhs, e.span())
            })
            .boxed();
        // `&`, which binds tighter than comparisons (masks write `(a < n) & (b < m)`).
        let bit_and = sum
            .clone()
            .foldl_with(
                just(Token::Amp).ignore_then(sum).repeated(),
                move |lhs, rhs, e| binary(BinOp::BitAnd, lhs, rhs, e.span()),
            )
            .boxed();
        // Comparisons, `not`, `and`, `or` (loosest last), each folded iteratively.
        let is_op = just(Token::Is)
            .ignore_then(just(Token::Not).or_not())
            .map(|not| {
                if not.is_some() {
                    CmpOp::IsNot
                } else {
                    CmpOp::Is
                }
            });
        let cmp_op = select! { Token::Compare(s) => s }
            .try_map(|s: &str, span| {
                CmpOp::from_symbol(s).ok_or_else(|| Rich::custom(span, unsupported(s, sp(span))))
            })
            .or(is_op)
            .labelled(L_OPERATOR);
        let comparison = bit_and
            .clone()
            .foldl_with(cmp_op.then(bit_and).repeated(), |lhs, (op, rhs), e| Expr {
                kind: ExprKind::Compare {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span: sp(e.span()),
            })
            .boxed();
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
            move |lhs: Expr, rhs: Expr, e: &mut chumsky::input::MapExtra<'t, '_, I, Ex<'t, 's>>| {
                Expr {
                    kind: ExprKind::BoolOp {
                        and,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    span: sp(e.span()),
                }
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
            .labelled(L_EXPR)
            .boxed()
    })
}

/// `:` at the end of a header. When the line simply ends without it, the colon is reported and
/// assumed, so that the block after the header is still parsed.
fn header_colon<'t, 's: 't, I>(
    label: &'static str,
    header: &'static str,
) -> impl Parser<'t, I, (), Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
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

/// The end of a simple statement's line.
fn end_of_line<'t, 's: 't, I>() -> impl Parser<'t, I, (), Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    just(Token::Newline).ignored().labelled(L_END)
}

/// Converts the left-hand side of `=` to a target, or reports why it cannot be one.
fn to_target(lhs: Expr) -> Result<Target, Box<Error>> {
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
        ExprKind::Tuple(items) => {
            let mut names = Vec::new();
            for item in items {
                match item.kind {
                    ExprKind::Name(name) => names.push(Ident {
                        name,
                        span: item.span,
                    }),
                    _ => return Err(Box::new(SyntaxError::TupleTarget { at: item.span }.into())),
                }
            }
            Ok(Target::Tuple { names, span })
        }
        _ => Err(Box::new(SyntaxError::BadTarget { at: span }.into())),
    }
}

fn stmt_parser<'t, 's: 't, I>() -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    let expr = expr_parser();
    recursive(|stmt| {
        let block = just(Token::Newline)
            .ignore_then(just(Token::Indent).labelled(L_BLOCK))
            .ignore_then(stmt.clone().repeated().at_least(1).collect::<Vec<Stmt>>())
            .then_ignore(just(Token::Dedent))
            .boxed();

        let for_stmt = just(Token::For)
            .map_with(|_, e| sp(e.span()))
            .then(ident())
            .then_ignore(just(Token::In))
            .then(expr.clone())
            .then_ignore(header_colon(L_COLON_FOR, "for"))
            .then(block.clone())
            .map(|(((kw, var), iter), body)| {
                let end = body.last().map_or(kw.end, |s| s.span.end);
                Stmt {
                    kind: StmtKind::For { var, iter, body },
                    span: kw.start..end,
                }
            });

        // `if test: ...`, any number of `elif test: ...`, then optionally `else: ...`; an `elif`
        // is an `if` alone in the `else` branch of the one before.
        let else_block = just(Token::Else)
            .ignore_then(header_colon(L_COLON_ELSE, "else"))
            .ignore_then(block.clone());
        let elif = just(Token::Elif)
            .map_with(|_, e| sp(e.span()))
            .then(expr.clone())
            .then_ignore(header_colon(L_COLON_IF, "elif"))
            .then(block.clone());
        let if_stmt = just(Token::If)
            .map_with(|_, e| sp(e.span()))
            .then(expr.clone())
            .then_ignore(header_colon(L_COLON_IF, "if"))
            .then(block.clone())
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
            });

        let ret = just(Token::Return)
            .ignore_then(
                expr.clone()
                    .separated_by(just(Token::Comma))
                    .allow_trailing()
                    .collect::<Vec<Expr>>(),
            )
            .map(|mut values| {
                if values.len() == 1 && matches!(values[0].kind, ExprKind::Tuple(_)) {
                    match values.pop().map(|e| e.kind) {
                        Some(ExprKind::Tuple(items)) => values = items,
                        _ => unreachable!("checked to be a one-element list holding a tuple"),
                    }
                }
                StmtKind::Return(values)
            });

        let assign_op = select! {
            Token::Assign => None,
            Token::PlusAssign => Some(BinOp::Add),
            Token::MinusAssign => Some(BinOp::Sub),
            Token::StarAssign => Some(BinOp::Mul),
            Token::SlashAssign => Some(BinOp::Div),
        };
        // `a, b` where a tuple may stand without brackets (both sides of `=`).
        let expr_list = expr
            .clone()
            .separated_by(just(Token::Comma))
            .at_least(1)
            .collect::<Vec<Expr>>()
            .then(just(Token::Comma).or_not().map(|c| c.is_some()))
            .map_with(|(mut items, trailing), e| {
                if items.len() == 1 && !trailing {
                    items.pop().expect("one item")
                } else {
                    Expr {
                        kind: ExprKind::Tuple(items),
                        span: sp(e.span()),
                    }
                }
            });
        let assign_or_expr = expr_list
            .clone()
            .then(assign_op.then(expr_list).or_not())
            .validate(|(lhs, rhs), _, emitter| match rhs {
                None if lhs.kind == ExprKind::Error => StmtKind::Error,
                // A docstring, or any bare string: it does nothing.
                None if matches!(lhs.kind, ExprKind::Str(_)) => StmtKind::Pass,
                None => StmtKind::Expr(lhs),
                Some((op, value)) => match to_target(lhs) {
                    Ok(target) => match op {
                        None => StmtKind::Assign { target, value },
                        Some(op) => StmtKind::AugAssign { target, op, value },
                    },
                    Err(error) => {
                        emitter.emit(custom(*error));
                        StmtKind::Error
                    }
                },
            });

        let assert = just(Token::Assert)
            .ignore_then(expr.clone())
            .then(just(Token::Comma).ignore_then(expr.clone()).or_not())
            .map(|(test, msg)| StmtKind::Assert { test, msg });
        // `import m [as n]`, `from m import a, b`: the names are NKI's modules, which nkc knows.
        let import = just(Token::Import)
            .or(just(Token::From))
            .then(none_of([Token::Newline]).repeated())
            .to(StmtKind::Pass);

        let simple = choice((
            ret,
            just(Token::Pass).to(StmtKind::Pass),
            assert,
            import,
            assign_or_expr,
        ))
        .map_with(|kind, e| Stmt {
            kind,
            span: sp(e.span()),
        })
        .then_ignore(end_of_line());

        // An indented block where none was opened (the lexer normally catches this first).
        let stray_block = just(Token::Indent)
            .ignore_then(stmt.clone().repeated().collect::<Vec<Stmt>>())
            .then_ignore(just(Token::Dedent))
            .map_with(|_, e| Stmt {
                kind: StmtKind::Error,
                span: sp(e.span()),
            })
            .validate(|s: Stmt, _, emitter| {
                emitter.emit(custom(SyntaxError::StrayBlock { at: s.span.clone() }));
                s
            });

        // Recovery: skip the rest of the logical line, and the block after it if there is one;
        // keep the names the line visibly binds (`a, b = ...`).
        let skip_line = none_of([Token::Newline, Token::Indent, Token::Dedent])
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
            });

        choice((for_stmt, if_stmt, simple, stray_block))
            .labelled(L_STMT)
            .recover_with(via_parser(skip_line))
            .boxed()
    })
}

/// The names a broken line binds: `name (, name)* OP`, with `OP` an assignment, at its start.
fn bound_names(toks: &[(Token<'_>, Span)]) -> Vec<Ident> {
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
                | Token::SlashAssign,
                false,
            ) => return names,
            _ => return Vec::new(),
        }
    }
    Vec::new()
}

/// A top-level item of a module.
enum Item {
    Kernel(Kernel),
    Stmt(Stmt),
}

fn module_parser<'t, 's: 't, I>() -> impl Parser<'t, I, Module, Ex<'t, 's>>
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    let expr = expr_parser();
    let stmt = stmt_parser();

    let block = just(Token::Newline)
        .ignore_then(just(Token::Indent).labelled(L_BLOCK))
        .ignore_then(stmt.clone().repeated().at_least(1).collect::<Vec<Stmt>>())
        .then_ignore(just(Token::Dedent));

    let param = ident()
        .then(just(Token::Colon).ignore_then(expr.clone()).or_not())
        .then(just(Token::Assign).ignore_then(expr.clone()).or_not())
        .map_with(|((name, ty), default), e| Param {
            name,
            ty,
            default,
            span: sp(e.span()),
        });
    // `@nki.jit`, `@nki.jit(mode="simulation")`: decorators are accepted and ignored.
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

    let kernel = decorator
        .repeated()
        .ignore_then(just(Token::Def))
        .map_with(|_, e| sp(e.span()))
        .then(ident())
        .then(params)
        .then_ignore(just(Token::Arrow).then(expr).or_not())
        .then_ignore(header_colon(L_COLON_DEF, "def"))
        .then(block)
        .map(|(((kw, name), params), body)| {
            let end = body.last().map_or(kw.end, |s| s.span.end);
            Kernel {
                name,
                params,
                body,
                span: kw.start..end,
            }
        });

    // Last resort, for a token no statement can start with and no recovery can skip.
    let stray = any().map_with(|t: Token<'s>, e| {
        let span = sp(e.span());
        (t, span)
    });
    let stray = stray.validate(|(t, span): (Token<'s>, Span), _, emitter| {
        emitter.emit(custom(SyntaxError::StrayToken {
            at: span.clone(),
            found: t.describe(),
        }));
        Item::Stmt(Stmt {
            kind: StmtKind::Error,
            span,
        })
    });

    // A kernel is a statement too, as far as messages go ("expected a statement").
    choice((
        kernel.map(Item::Kernel).labelled(L_STMT),
        stmt.map(Item::Stmt),
        stray,
    ))
    .repeated()
    .collect::<Vec<Item>>()
    .map(|items| {
        let mut module = Module::default();
        for item in items {
            match item {
                Item::Kernel(k) => module.kernels.push(k),
                Item::Stmt(s) => module.items.push(s),
            }
        }
        module
    })
}

/// Words a chumsky error as a diagnostic. `None` for an error at an `Error` token, which the
/// lexer has already reported.
fn convert(err: Rch<'_, '_>) -> Option<Error> {
    let span = sp(*err.span());
    let (expected, found) = match err.into_reason() {
        RichReason::Custom(error) => return Some(error),
        RichReason::ExpectedFound { expected, found } => (expected, found.map(|t| t.into_inner())),
    };
    // An error at the end of a line points just after its last character, not at the newline.
    let span = if found == Some(Token::Newline) {
        span.start..span.start
    } else {
        span
    };
    let found_text = found
        .as_ref()
        .map_or_else(|| "end of file".to_string(), Token::describe);

    match &found {
        Some(Token::Error) => return None,
        Some(Token::Colon)
            if expected
                .iter()
                .any(|p| matches!(p, RichPattern::Token(t) if **t == Token::RBracket)) =>
        {
            return Some(SyntaxError::SliceStep { at: span }.into())
        }
        Some(Token::Unsupported(op)) => return Some(unsupported(op, span)),
        Some(Token::At) => return Some(unsupported("@", span)),
        Some(Token::Str(_)) => return Some(SyntaxError::StringLiteral { at: span }.into()),
        _ => {}
    }

    let mut labels: Vec<&str> = expected
        .iter()
        .filter_map(|p| match p {
            RichPattern::Label(l) => Some(l.as_ref()),
            _ => None,
        })
        .collect();
    // Where a statement could start, "an indented block" is left over from the recovery of the
    // line before (which looked for a block after it), not something this line lacks.
    let stale_block = labels.contains(&L_STMT);
    if stale_block {
        labels.retain(|l| *l != L_BLOCK);
    }
    for (label, header) in [
        (L_COLON_FOR, "for"),
        (L_COLON_DEF, "def"),
        (L_COLON_IF, "if"),
        (L_COLON_ELSE, "else"),
    ] {
        if labels.contains(&label) {
            return Some(
                SyntaxError::MissingColon {
                    at: span,
                    header,
                    found: Some(found_text),
                }
                .into(),
            );
        }
    }
    if labels.contains(&L_BLOCK) {
        return Some(
            SyntaxError::ExpectedBlock {
                at: span,
                found: found_text,
            }
            .into(),
        );
    }
    if found == Some(Token::Def) {
        return Some(SyntaxError::DefInBlock { at: span }.into());
    }

    // What could have come instead, in words. Continuations of an expression that is already
    // complete (more operators, calls, ...) are noise next to anything else.
    let mut words: Vec<String> = Vec::new();
    let mut continuation = false;
    for pattern in &expected {
        let word = match pattern {
            RichPattern::Label(l) if *l == L_OPERATOR => {
                continuation = true;
                continue;
            }
            RichPattern::Token(t) => match &**t {
                Token::LParen
                | Token::LBracket
                | Token::Dot
                | Token::And
                | Token::Or
                | Token::Amp => {
                    continuation = true;
                    continue;
                }
                Token::Comma if words.is_empty() => "`,`".to_string(),
                t => t.describe(),
            },
            RichPattern::Label(l) if stale_block && *l == L_BLOCK => continue,
            RichPattern::Label(l) => l.to_string(),
            RichPattern::EndOfInput => "end of file".to_string(),
            _ => continue,
        };
        if !words.contains(&word) {
            words.push(word);
        }
    }
    if words.is_empty() && continuation {
        words.push(L_OPERATOR.to_string());
    }
    if words.len() > 1 {
        // A full statement could go here, but so could the end of the previous expression:
        // keep the words that say what is missing.
        words.retain(|w| w != L_STMT);
    }
    let label = match &found {
        None | Some(Token::Newline) => "the line ends here".to_string(),
        Some(t) => format!("unexpected {}", t.describe()),
    };
    let starts_expression = matches!(
        found,
        Some(
            Token::Name(_)
                | Token::Int(_)
                | Token::Float(_)
                | Token::True
                | Token::False
                | Token::None
        )
    );
    Some(
        SyntaxError::Unexpected {
            at: span,
            expression: words.first().map(String::as_str) == Some(L_EXPR),
            expected: words,
            found: found_text,
            label,
            operator_missing: continuation && starts_expression,
        }
        .into(),
    )
}

fn unsupported(op: &str, span: Span) -> Error {
    SyntaxError::Unsupported {
        at: span,
        op: op.to_string(),
    }
    .into()
}

#[cfg(test)]
mod tests;
