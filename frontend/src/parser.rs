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
//! The parts: [`expr`] (one sub-parser per precedence level), [`stmt`] (the statement parser
//! and the compound statements), [`simple`] (one-line statements), [`targets`] (assignment and
//! loop targets), [`strings`] (string literals and f-strings), [`convert`] (chumsky's errors
//! worded as diagnostics); this file holds the entry point, the module parser and what they
//! share (labels, spans, the merge of lexer and parser errors).
//!
//! Invariant: the recursion of the parser is bounded because the lexer rejects lines nested more
//! than `MAX_NESTING` brackets deep, and blocks nested more than `MAX_NESTING` deep; chains of
//! operators are parsed iteratively.

mod convert;
mod expr;
mod simple;
mod stmt;
mod strings;
mod targets;

use crate::ast::*;
use crate::diagnostic::Error;
use crate::lexer::{self, Token};
use crate::syntax_error::SyntaxError;
use chumsky::{input::ValueInput, prelude::*};
use convert::{convert, unsupported};
use expr::expr_parser;
use stmt::stmt_parser;

type Rch<'t, 's> = Rich<'t, Token<'s>, SimpleSpan, Error>;
type Ex<'t, 's> = extra::Err<Rch<'t, 's>>;
/// A boxed sub-parser (chumsky's `Boxed`) of `O`.
type Bx<'t, 's, I, O> = Boxed<'t, 't, I, O, Ex<'t, 's>>;

/// What every sub-parser reads: the lexer's tokens with chumsky's spans.
trait TokenInput<'t, 's: 't>: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan> {}

impl<'t, 's: 't, I: ValueInput<'t, Token = Token<'s>, Span = SimpleSpan>> TokenInput<'t, 's> for I {}

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
    let chumsky_tokens = token_input(&tokens, 0);
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
    // The parentheses were added one byte before the piece: shift every span back by one.
    let chumsky_tokens = token_input(&tokens, 1);
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

/// The lexer's tokens as chumsky's input, each span moved `shift` bytes back; the final `Eof`
/// is dropped (chumsky has its own end of input, at the same place).
fn token_input<'s>(tokens: &[(Token<'s>, Span)], shift: usize) -> Vec<(Token<'s>, SimpleSpan)> {
    let body = match tokens.split_last() {
        Some(((Token::Eof, _), rest)) => rest,
        _ => tokens,
    };
    body.iter()
        .map(|(t, s)| {
            (
                t.clone(),
                SimpleSpan::from(s.start.saturating_sub(shift)..s.end.saturating_sub(shift)),
            )
        })
        .collect()
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

fn module_parser<'t, 's: 't, I: TokenInput<'t, 's>>() -> impl Parser<'t, I, Module, Ex<'t, 's>> {
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

#[cfg(test)]
mod tests;
