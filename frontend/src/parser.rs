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

/// The text of a string literal without its prefix (`f`, `r`, ...) and quotes (one or three of
/// them), with Python's common escapes (`\\n`, `\\t`, `\\\\`, quotes) applied unless it is raw.
fn string_text(text: &str) -> String {
    let (prefix, body) = split_prefix(text);
    let raw = prefix.contains(['r', 'R']);
    let inner = strip_quotes(body);
    if raw {
        inner.to_string()
    } else {
        unescape(inner)
    }
}

/// `(prefix, rest)` of a string literal: `f"a"` gives `("f", "\"a\"")`.
fn split_prefix(text: &str) -> (&str, &str) {
    let k = text.find(['"', '\'']).unwrap_or(0);
    text.split_at(k)
}

fn strip_quotes(body: &str) -> &str {
    let q = if body.starts_with("\"\"\"") || body.starts_with("'''") {
        3
    } else {
        1
    };
    body.get(q..body.len().saturating_sub(q))
        .unwrap_or_default()
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\n') => {}
            Some(c @ ('\\' | '\'' | '"')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A string literal token at `start` as an expression: a plain string, or an f-string split into
/// its literal text and its `{expression[:spec]}` parts (each parsed where it stands in the file).
#[allow(clippy::result_large_err)]
fn string_expr(text: &str, start: usize) -> Result<ExprKind, Error> {
    let (prefix, body) = split_prefix(text);
    if !prefix.contains(['f', 'F']) {
        return Ok(ExprKind::Str(string_text(text)));
    }
    let q = if body.starts_with("\"\"\"") || body.starts_with("'''") {
        3
    } else {
        1
    };
    let inner = strip_quotes(body);
    let base = start + prefix.len() + q;
    let mut parts = Vec::new();
    let mut lit = String::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                lit.push('{');
                i += 2;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                lit.push('}');
                i += 2;
            }
            b'{' => {
                // The expression ends at the matching `}`; a top-level `:` or `!` starts its
                // format spec or conversion.
                let mut depth = 0usize;
                let mut j = i + 1;
                let mut split = None;
                while j < bytes.len() {
                    match bytes[j] {
                        b'(' | b'[' | b'{' => depth += 1,
                        b')' | b']' => depth = depth.saturating_sub(1),
                        b'}' if depth == 0 => break,
                        b'}' => depth -= 1,
                        b':' | b'!'
                            if depth == 0 && split.is_none() && bytes.get(j + 1) != Some(&b'=') =>
                        {
                            split = Some(j)
                        }
                        _ => {}
                    }
                    j += 1;
                }
                if j >= bytes.len() {
                    return Err(SyntaxError::Unsupported {
                        at: base + i..base + inner.len(),
                        op: "an f-string `{` without its `}`".to_string(),
                    }
                    .into());
                }
                let end = split.unwrap_or(j);
                let mut piece = &inner[i + 1..end];
                // `{expr=}` (Python 3.8's self-documenting form): the text `expr=`, then the
                // value (its conversion, `repr` there, is dropped as `!r` is).
                let trimmed = piece.trim_end();
                if let Some(head) = trimmed.strip_suffix('=') {
                    if !head.ends_with(['=', '!', '<', '>']) {
                        lit.push_str(piece);
                        piece = head;
                    }
                }
                let spec = split.and_then(|k| {
                    let rest = &inner[k..j];
                    // `!r` / `!s` conversions are dropped; `:spec` is kept.
                    rest.find(':').map(|c| rest[c + 1..].to_string())
                });
                let expr = parse_expr_at(piece, base + i + 1)?;
                if !lit.is_empty() {
                    parts.push(FPart::Lit(std::mem::take(&mut lit)));
                }
                parts.push(FPart::Expr(expr, spec));
                i = j + 1;
            }
            _ => {
                let c = inner[i..].chars().next().unwrap_or(' ');
                lit.push(c);
                i += c.len_utf8();
            }
        }
    }
    if !lit.is_empty() {
        parts.push(FPart::Lit(unescape(&lit)));
    }
    Ok(ExprKind::FStr(parts))
}

/// Parses `piece`, which stands at byte `offset` of the file, as one expression whose spans are
/// positions in the file.
#[allow(clippy::result_large_err)]
fn parse_expr_at(piece: &str, offset: usize) -> Result<Expr, Error> {
    let bad = || -> Error {
        SyntaxError::Unsupported {
            at: offset..offset + piece.len(),
            op: "this f-string expression".to_string(),
        }
        .into()
    };
    if offset < 2 || piece.trim().is_empty() || piece.contains('\n') {
        return Err(bad());
    }
    // A comment line of `offset - 1` bytes and its newline put the piece at `offset`.
    let padded = format!("#{}\n({piece})", " ".repeat(offset - 2));
    let (tokens, lex_errors) = lexer::lex(&padded);
    if !lex_errors.is_empty() {
        return Err(bad());
    }
    let body = match tokens.split_last() {
        Some(((Token::Eof, _), rest)) => rest,
        _ => &tokens[..],
    };
    // The parentheses were added one byte before the piece: shift every span back by one.
    let chumsky_tokens: Vec<(Token<'_>, SimpleSpan)> = body
        .iter()
        .map(|(t, s)| {
            (
                t.clone(),
                SimpleSpan::from(s.start.saturating_sub(1)..s.end.saturating_sub(1)),
            )
        })
        .collect();
    let eoi = SimpleSpan::from(padded.len()..padded.len());
    let (expr, errors) = expr_parser()
        .then_ignore(just(Token::Newline).or_not())
        .parse(chumsky_tokens.as_slice().split_token_span(eoi))
        .into_output_errors();
    match expr {
        Some(e) if errors.is_empty() => Ok(e),
        _ => Err(bad()),
    }
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
            Token::Ellipsis => ExprKind::Ellipsis,
            Token::Error => ExprKind::Error,
        }
        .map_with(|kind, e| Expr {
            kind,
            span: sp(e.span()),
        });

        // String literals, adjacent ones concatenated as Python does (`"a" f"{b}"`).
        let one_string = select! { Token::Str(text) => text }
            .map_with(|text: &str, e| (text, sp(e.span())))
            .validate(|(text, span): (&str, Span), _, emitter| {
                match string_expr(text, span.start) {
                    Ok(k) => k,
                    Err(err) => {
                        emitter.emit(custom(err));
                        ExprKind::Error
                    }
                }
            });
        let string = one_string
            .repeated()
            .at_least(1)
            .collect::<Vec<ExprKind>>()
            .map_with(|kinds, e| Expr {
                kind: concat_strings(kinds),
                span: sp(e.span()),
            });

        // `*e` in a display or a call.
        let starred_item = just(Token::Star)
            .ignore_then(expr.clone())
            .map_with(|inner, e| Expr {
                kind: ExprKind::Starred(Box::new(inner)),
                span: sp(e.span()),
            })
            .or(expr.clone())
            .labelled(L_EXPR);

        // `for target in iter if cond ...`, one or more, after a comprehension's element.
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
        // The iterable and conditions of a comprehension stop before `if`/`for`: they are
        // parsed without conditional expressions (`or`-level).
        let comp_for = just(Token::For)
            .ignore_then(comp_target)
            .then_ignore(just(Token::In))
            .then(expr.clone())
            .then(
                just(Token::If)
                    .ignore_then(expr.clone())
                    .repeated()
                    .collect::<Vec<Expr>>(),
            )
            .map(|((target, iter), conds)| CompFor {
                target,
                iter,
                conds,
            });
        let comp_fors = comp_for
            .repeated()
            .at_least(1)
            .collect::<Vec<CompFor>>()
            .boxed();

        // What follows the first item of a bracketed display: a comprehension, more items, or
        // nothing (each item is parsed once, so nesting stays linear).
        let tail = choice((
            comp_fors.clone().map(Tail::Comp),
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
        let body = starred_item.clone().then(tail).or_not();

        // `(e)`, `()`, `(a,)`, `(a, b)`, `(e for v in xs)`.
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

        // `[a, b]` and `[e for v in xs if c]`.
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

        // `{k: v, ...}`
        let dict = expr
            .clone()
            .then_ignore(just(Token::Colon))
            .then(expr.clone())
            .separated_by(just(Token::Comma))
            .allow_trailing()
            .collect::<Vec<(Expr, Expr)>>()
            .delimited_by(just(Token::LBrace), just(Token::RBrace))
            .map_with(|items, e| Expr {
                kind: ExprKind::Dict(items),
                span: sp(e.span()),
            });

        let atom = literal.or(string).or(paren).or(list).or(dict).boxed();

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
        // A positional argument, or a generator (`sum(x for x in xs)`), parsed once.
        let pos_arg = starred_item
            .clone()
            .then(comp_fors.clone().or_not())
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
        // `e`, or a slice `lo:hi[:step]` with every part optional.
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
            expr.clone()
                .then(slice_rest.or_not())
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
            Token::Tilde => UnaryOp::Invert,
        }
        .map_with(|op, e| (op, sp(e.span())));
        // `a ** b`: tighter than a unary minus on its left (`-x ** 2` is `-(x ** 2)`); the
        // exponent is a unary expression (not chained).
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
        let unary = unary_op
            .repeated()
            .collect::<Vec<_>>()
            .then(power)
            .map(fold_unary)
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
        let sum = product
            .clone()
            .foldl_with(add_op.then(product).repeated(), move |lhs, (op, rhs), e| {
                binary(op, lhs, rhs, e.span())
            })
            .boxed();
        // Python's bitwise levels, tightest first: `<<` / `>>`, `&`, `^`, `|`; all bind tighter
        // than comparisons (masks write `(a < n) & (b < m)`).
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
        let bit_and = bit_xor
            .clone()
            .foldl_with(
                just(Token::Pipe).ignore_then(bit_xor).repeated(),
                move |lhs, rhs, e| binary(BinOp::BitOr, lhs, rhs, e.span()),
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
        // `a < b < c` is `a < b and b < c` (`b` is a pure expression here, evaluated twice).
        let comparison = bit_and
            .clone()
            .then(
                cmp_op
                    .then(bit_and)
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
        let disjunction = conjunction
            .clone()
            .foldl_with(
                just(Token::Or).ignore_then(conjunction).repeated(),
                bool_op(false),
            )
            .boxed();
        // `body if test else orelse`, and `lambda params: body`.
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
            .then(
                just(Token::Assign)
                    .ignore_then(disjunction.clone())
                    .or_not(),
            )
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
            .then(expr.clone())
            .map_with(|(params, body), e| Expr {
                kind: ExprKind::Lambda {
                    params,
                    body: Box::new(body),
                },
                span: sp(e.span()),
            });
        lambda.or(ifexp).labelled(L_EXPR).boxed()
    })
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

/// Adjacent string literals as one: plain text joined, or f-string parts in order.
fn concat_strings(kinds: Vec<ExprKind>) -> ExprKind {
    if kinds.len() == 1 {
        return kinds.into_iter().next().expect("one item");
    }
    if kinds.contains(&ExprKind::Error) {
        return ExprKind::Error;
    }
    if kinds.iter().all(|k| matches!(k, ExprKind::Str(_))) {
        let mut out = String::new();
        for k in kinds {
            if let ExprKind::Str(t) = k {
                out.push_str(&t);
            }
        }
        return ExprKind::Str(out);
    }
    let mut parts = Vec::new();
    for k in kinds {
        match k {
            ExprKind::Str(t) => parts.push(FPart::Lit(t)),
            ExprKind::FStr(ps) => parts.extend(ps),
            _ => {}
        }
    }
    ExprKind::FStr(parts)
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
fn expr_list<'t, 's: 't, I>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone,
) -> impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    let item = just(Token::Star)
        .ignore_then(expr.clone())
        .map_with(|inner, e| Expr {
            kind: ExprKind::Starred(Box::new(inner)),
            span: sp(e.span()),
        })
        .or(expr)
        .labelled(L_EXPR);
    item.separated_by(just(Token::Comma))
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
fn target_parser<'t, 's: 't, I>() -> impl Parser<'t, I, Target, Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
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

/// `@decorator ... def name(params) [-> T]: body`, at module level or in a block.
fn def_parser<'t, 's: 't, I>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
    block: impl Parser<'t, I, Vec<Stmt>, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Kernel, Ex<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
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

        // `for i in ...`, `for i, (a, b) in ...`: the target is a name or an unpacking.
        let for_target = target_parser();
        let for_stmt = just(Token::For)
            .map_with(|_, e| sp(e.span()))
            .then(for_target)
            .then_ignore(just(Token::In))
            .then(expr_list(expr.clone()))
            .then_ignore(header_colon(L_COLON_FOR, "for"))
            .then(block.clone())
            .map(|(((kw, target), iter), body)| {
                let end = body.last().map_or(kw.end, |s| s.span.end);
                Stmt {
                    kind: StmtKind::For { target, iter, body },
                    span: kw.start..end,
                }
            });
        let while_stmt = just(Token::While)
            .map_with(|_, e| sp(e.span()))
            .then(expr.clone())
            .then_ignore(header_colon(L_COLON_IF, "while"))
            .then(block.clone())
            .map(|((kw, test), body)| {
                let end = body.last().map_or(kw.end, |s| s.span.end);
                Stmt {
                    kind: StmtKind::While { test, body },
                    span: kw.start..end,
                }
            });
        let def_stmt = def_parser(expr.clone(), block.clone()).map(|k| Stmt {
            span: k.span.clone(),
            kind: StmtKind::Def(std::rc::Rc::new(k)),
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
            Token::FloorDivAssign => Some(BinOp::FloorDiv),
            Token::ModAssign => Some(BinOp::Mod),
            Token::PowAssign => Some(BinOp::Pow),
            Token::AmpAssign => Some(BinOp::BitAnd),
            Token::PipeAssign => Some(BinOp::BitOr),
            Token::CaretAssign => Some(BinOp::BitXor),
            Token::ShlAssign => Some(BinOp::Shl),
            Token::ShrAssign => Some(BinOp::Shr),
        };
        // `a, b` where a tuple may stand without brackets (both sides of `=`).
        let expr_list = expr_list(expr.clone());
        // `x: T = v` (the annotation is a hint and is dropped), `x: T` (declares nothing).
        let annotation = just(Token::Colon).ignore_then(expr.clone());
        // `a = b = v`: every target but the last is followed by `=`.
        let assign_or_expr = expr_list
            .clone()
            .then(annotation.or_not())
            .then(
                assign_op
                    .then(expr_list.clone())
                    .repeated()
                    .collect::<Vec<_>>(),
            )
            .validate(|((lhs, ann), rhs), _, emitter| {
                let mut rhs = rhs;
                let Some((op, value)) = rhs.pop() else {
                    return match (&lhs.kind, ann) {
                        (ExprKind::Error, _) => StmtKind::Error,
                        (ExprKind::Name(n), Some(_)) => StmtKind::Declare(Ident {
                            name: n.clone(),
                            span: lhs.span.clone(),
                        }),
                        (_, Some(_)) => StmtKind::Pass,
                        // A docstring, or any bare string: it does nothing.
                        (ExprKind::Str(_), None) => StmtKind::Pass,
                        _ => StmtKind::Expr(lhs),
                    };
                };
                // Chained `a = b = v`: the first target and the middle ones.
                let mut targets = vec![lhs];
                for (op, middle) in rhs {
                    if op.is_some() {
                        emitter.emit(custom(SyntaxError::BadTarget {
                            at: middle.span.clone(),
                        }));
                        return StmtKind::Error;
                    }
                    targets.push(middle);
                }
                if targets.len() > 1 {
                    if op.is_some() {
                        emitter.emit(custom(SyntaxError::BadTarget {
                            at: value.span.clone(),
                        }));
                        return StmtKind::Error;
                    }
                    let mut ts = Vec::new();
                    for t in targets {
                        match to_target(t) {
                            Ok(t) => ts.push(t),
                            Err(error) => {
                                emitter.emit(custom(*error));
                                return StmtKind::Error;
                            }
                        }
                    }
                    return StmtKind::MultiAssign { targets: ts, value };
                }
                let lhs = targets.pop().expect("one target");
                if let ExprKind::Subscript { value, .. } = &lhs.kind {
                    if matches!(value.kind, ExprKind::Attribute { .. }) {
                        // `os.environ["X"] = "1"`: Python nkc does not run.
                        return StmtKind::Opaque("item assignment through an attribute".into());
                    }
                }
                match to_target(lhs) {
                    Ok(target) => match op {
                        None => StmtKind::Assign { target, value },
                        Some(op) => StmtKind::AugAssign { target, op, value },
                    },
                    Err(error) => {
                        emitter.emit(custom(*error));
                        StmtKind::Error
                    }
                }
            });

        let assert = just(Token::Assert)
            .ignore_then(expr.clone())
            .then(just(Token::Comma).ignore_then(expr.clone()).or_not())
            .map(|(test, msg)| StmtKind::Assert { test, msg });
        // `import a.b [as n], ...` and `from a.b import c [as n], ...` (also in brackets).
        let dotted = ident()
            .separated_by(just(Token::Dot))
            .at_least(1)
            .collect::<Vec<Ident>>();
        let alias = just(Token::As).ignore_then(ident()).or_not();
        let import = just(Token::Import)
            .ignore_then(
                dotted
                    .clone()
                    .then(alias.clone())
                    .separated_by(just(Token::Comma))
                    .at_least(1)
                    .collect::<Vec<_>>(),
            )
            .map(|items| {
                StmtKind::Import(
                    items
                        .into_iter()
                        .map(|(path, alias)| {
                            let names: Vec<String> = path.iter().map(|i| i.name.clone()).collect();
                            // `import a.b` binds `a` to the package `a`; `import a.b as n` binds `n`.
                            match alias {
                                Some(n) => (names, n),
                                None => (vec![names[0].clone()], path[0].clone()),
                            }
                        })
                        .collect(),
                )
            });
        let from_names = ident()
            .then(alias)
            .separated_by(just(Token::Comma))
            .at_least(1)
            .allow_trailing()
            .collect::<Vec<_>>();
        // A relative module (`from .m import f`, `from .. import g`): its leading dots become
        // the path's first name (`.`, `..`), a module nkc does not know.
        let dots = choice((
            just(Token::Dot).to(1usize),
            just(Token::Ellipsis).to(3usize),
        ))
        .repeated()
        .collect::<Vec<usize>>()
        .map(|v| v.iter().sum::<usize>());
        let module = dots
            .then(dotted.or_not())
            .filter(|(n, path)| *n > 0 || path.is_some())
            .map(|(n, path)| {
                let mut out: Vec<Ident> = Vec::new();
                if n > 0 {
                    let at = path
                        .as_ref()
                        .and_then(|p| p.first())
                        .map_or(0..0, |i| i.span.start.saturating_sub(n)..i.span.start);
                    out.push(Ident {
                        name: ".".repeat(n),
                        span: at,
                    });
                }
                out.extend(path.unwrap_or_default());
                out
            });
        let from_import = just(Token::From)
            .ignore_then(module)
            .then_ignore(just(Token::Import))
            .then(
                from_names
                    .clone()
                    .delimited_by(just(Token::LParen), just(Token::RParen))
                    .or(from_names)
                    .or(just(Token::Star).to(Vec::new())),
            )
            .map(|(path, names)| {
                let base: Vec<String> = path.iter().map(|i| i.name.clone()).collect();
                StmtKind::Import(
                    names
                        .into_iter()
                        .map(|(name, alias)| {
                            let mut full = base.clone();
                            full.push(name.name.clone());
                            (full, alias.unwrap_or(name))
                        })
                        .collect(),
                )
            });

        // A statement nkc does not run, with its block (skipped token by token).
        let skip_block = recursive(|sb| {
            just(Token::Indent)
                .ignore_then(
                    choice((sb, none_of([Token::Indent, Token::Dedent]).ignored())).repeated(),
                )
                .then_ignore(just(Token::Dedent))
                .ignored()
                .boxed()
        });
        // Decorators before it are skipped with it (`@dataclass` over a `class`).
        let opaque = just(Token::At)
            .ignore_then(expr.clone())
            .then_ignore(just(Token::Newline))
            .repeated()
            .ignore_then(select! { Token::Unsupported(k) if k != ";" && k != "raise" => k })
            .then_ignore(none_of([Token::Newline]).repeated())
            .then_ignore(just(Token::Newline))
            .then_ignore(skip_block.or_not())
            .map_with(|k: &str, e| Stmt {
                kind: StmtKind::Opaque(k.to_string()),
                span: sp(e.span()),
            });

        // `raise`, `raise exc`, `raise exc from cause` (the cause is dropped).
        let raise = just(Token::Unsupported("raise"))
            .ignore_then(expr.clone().or_not())
            .then_ignore(just(Token::From).ignore_then(expr.clone()).or_not())
            .map(StmtKind::Raise);
        let simple = choice((
            ret,
            raise,
            just(Token::Pass).to(StmtKind::Pass),
            just(Token::Break).to(StmtKind::Break),
            just(Token::Continue).to(StmtKind::Continue),
            assert,
            import,
            from_import,
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
            .then_ignore(block.clone().ignored().or(just(Token::Newline).ignored()))
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

        // `@decorators class Name(bases): body`; a header nkc does not read (keyword bases such
        // as `metaclass=`) leaves the statement opaque.
        let class_stmt = just(Token::At)
            .ignore_then(expr.clone())
            .then_ignore(just(Token::Newline))
            .repeated()
            .collect::<Vec<Expr>>()
            .then(just(Token::Unsupported("class")).map_with(|_, e| sp(e.span())))
            .then(ident())
            .then(
                expr.clone()
                    .separated_by(just(Token::Comma))
                    .allow_trailing()
                    .collect::<Vec<Expr>>()
                    .delimited_by(just(Token::LParen), just(Token::RParen))
                    .or_not(),
            )
            .then_ignore(just(Token::Colon))
            .then(block.clone())
            .map(|((((decorators, kw), name), bases), body)| {
                let end = body.last().map_or(kw.end, |s| s.span.end);
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
            });

        choice((
            for_stmt,
            while_stmt,
            if_stmt,
            def_stmt,
            class_stmt,
            opaque,
            simple,
            stray_block,
        ))
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

fn module_parser<'t, 's: 't, I>() -> impl Parser<'t, I, Module, Ex<'t, 's>>
where
    I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>,
{
    let stmt = stmt_parser();

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
        Stmt {
            kind: StmtKind::Error,
            span,
        }
    });

    // A module-level `def` is a kernel (or a helper the kernels call); the other statements are
    // run before the kernel, in order.
    choice((stmt, stray))
        .repeated()
        .collect::<Vec<Stmt>>()
        .map(|items| {
            let mut module = Module::default();
            add_module_items(&mut module, items);
            module
        })
}

/// Adds module-level statements to `module`. The body of `if FLAG:` (a bare name, as in `try:
/// import nki; HAS_NKI = True except ImportError: HAS_NKI = False` then `if HAS_NKI:`) is taken
/// as if the flag were true: the guard of an optional dependency, which NKI always has when it
/// traces a kernel. Its `else` is dropped.
fn add_module_items(module: &mut Module, items: Vec<Stmt>) {
    for item in items {
        match item.kind {
            StmtKind::Def(k) => module
                .kernels
                .push(std::rc::Rc::try_unwrap(k).unwrap_or_else(|k| (*k).clone())),
            StmtKind::If { test, body, .. } if matches!(test.kind, ExprKind::Name(_)) => {
                add_module_items(module, body)
            }
            kind => module.items.push(Stmt {
                kind,
                span: item.span,
            }),
        }
    }
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
                | Token::Amp
                | Token::Caret => {
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
