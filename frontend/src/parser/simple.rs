//! Simple statements, one logical line each: `return`, `raise`, `pass`, `break`, `continue`,
//! `assert`, `import` / `from ... import`, assignments (plain, chained, augmented, annotated) and
//! expression statements; and the opaque lines nkc does not run (`with`, `try`, ... with the
//! block after them, skipped token by token).
//!
//! Invariants: every simple statement ends at the end of its line ([`end_of_line`]);
//! a left-hand side that cannot be a target is reported at its span and the statement becomes
//! `StmtKind::Error`; a docstring (a bare string) is `pass`.

use super::expr::ident;
use super::targets::{expr_list, to_target};
use super::{custom, sp, Ex, Rch, TokenInput, L_END};
use crate::ast::*;
use crate::lexer::Token;
use crate::syntax_error::SyntaxError;
use chumsky::input::Emitter;
use chumsky::prelude::*;

/// A simple statement and the end of its line.
pub(super) fn simple<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    // `raise`, `raise exc`, `raise exc from cause` (the cause is dropped).
    let raise = just(Token::Unsupported("raise"))
        .ignore_then(expr.clone().or_not())
        .then_ignore(just(Token::From).ignore_then(expr.clone()).or_not())
        .map(StmtKind::Raise);
    let assert = just(Token::Assert)
        .ignore_then(expr.clone())
        .then(just(Token::Comma).ignore_then(expr.clone()).or_not())
        .map(|(test, msg)| StmtKind::Assert { test, msg });
    choice((
        return_stmt(expr.clone()),
        raise,
        just(Token::Pass).to(StmtKind::Pass),
        just(Token::Break).to(StmtKind::Break),
        just(Token::Continue).to(StmtKind::Continue),
        assert,
        import(),
        from_import(),
        assign_or_expr(expr),
    ))
    .map_with(|kind, e| Stmt {
        kind,
        span: sp(e.span()),
    })
    .then_ignore(end_of_line())
}

/// `return`, `return a`, `return a, b` (a returned tuple is its items).
fn return_stmt<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, StmtKind, Ex<'t, 's>> + Clone {
    just(Token::Return)
        .ignore_then(
            expr.separated_by(just(Token::Comma))
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
        })
}

/// Assignments and expression statements: `a = b = v` (every target but the last is followed
/// by `=`), `a += v`, `x: T = v` (the annotation is a hint and is dropped), `x: T` (declares
/// nothing), `e`.
fn assign_or_expr<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, StmtKind, Ex<'t, 's>> + Clone {
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
    let annotation = just(Token::Colon).ignore_then(expr);
    expr_list
        .clone()
        .then(annotation.or_not())
        .then(assign_op.then(expr_list).repeated().collect::<Vec<_>>())
        .validate(|((lhs, ann), rhs), _, emitter| assignment(lhs, ann, rhs, emitter))
}

/// An assignment or expression statement from its parts: the first expression list, its
/// annotation, and each `OP value` after it (`=` is `None`).
fn assignment(
    lhs: Expr,
    ann: Option<Expr>,
    rhs: Vec<(Option<BinOp>, Expr)>,
    emitter: &mut Emitter<Rch<'_, '_>>,
) -> StmtKind {
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
}

/// `import a.b [as n], ...`.
fn import<'t, 's: 't, I: TokenInput<'t, 's>>() -> impl Parser<'t, I, StmtKind, Ex<'t, 's>> + Clone {
    just(Token::Import)
        .ignore_then(
            dotted()
                .then(alias())
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
        })
}

/// `a.b.c`.
fn dotted<'t, 's: 't, I: TokenInput<'t, 's>>() -> impl Parser<'t, I, Vec<Ident>, Ex<'t, 's>> + Clone
{
    ident()
        .separated_by(just(Token::Dot))
        .at_least(1)
        .collect::<Vec<Ident>>()
}

/// `[as n]`.
fn alias<'t, 's: 't, I: TokenInput<'t, 's>>(
) -> impl Parser<'t, I, Option<Ident>, Ex<'t, 's>> + Clone {
    just(Token::As).ignore_then(ident()).or_not()
}

/// `from a.b import c [as n], ...` (also in brackets, or `*`).
fn from_import<'t, 's: 't, I: TokenInput<'t, 's>>(
) -> impl Parser<'t, I, StmtKind, Ex<'t, 's>> + Clone {
    let from_names = ident()
        .then(alias())
        .separated_by(just(Token::Comma))
        .at_least(1)
        .allow_trailing()
        .collect::<Vec<_>>();
    // A relative module (`from .m import f`, `from .. import g`): its leading dots become the
    // path's first name (`.`, `..`), a module nkc does not know.
    let dots = choice((
        just(Token::Dot).to(1usize),
        just(Token::Ellipsis).to(3usize),
    ))
    .repeated()
    .collect::<Vec<usize>>()
    .map(|v| v.iter().sum::<usize>());
    let module = dots
        .then(dotted().or_not())
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
    just(Token::From)
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
        })
}

/// A statement nkc does not run, with its block (skipped token by token). Decorators before it
/// are skipped with it (`@dataclass` over a `class`).
pub(super) fn opaque<'t, 's: 't, I: TokenInput<'t, 's>>(
    expr: impl Parser<'t, I, Expr, Ex<'t, 's>> + Clone + 't,
) -> impl Parser<'t, I, Stmt, Ex<'t, 's>> + Clone {
    let skip_block = recursive(|sb| {
        just(Token::Indent)
            .ignore_then(choice((sb, none_of([Token::Indent, Token::Dedent]).ignored())).repeated())
            .then_ignore(just(Token::Dedent))
            .ignored()
            .boxed()
    });
    just(Token::At)
        .ignore_then(expr)
        .then_ignore(just(Token::Newline))
        .repeated()
        .ignore_then(select! { Token::Unsupported(k) if k != ";" && k != "raise" => k })
        .then_ignore(none_of([Token::Newline]).repeated())
        .then_ignore(just(Token::Newline))
        .then_ignore(skip_block.or_not())
        .map_with(|k: &str, e| Stmt {
            kind: StmtKind::Opaque(k.to_string()),
            span: sp(e.span()),
        })
}

/// The end of a simple statement's line.
fn end_of_line<'t, 's: 't, I: TokenInput<'t, 's>>() -> impl Parser<'t, I, (), Ex<'t, 's>> + Clone {
    just(Token::Newline).ignored().labelled(L_END)
}
