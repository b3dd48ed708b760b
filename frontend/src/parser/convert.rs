//! Wording chumsky's errors as diagnostics: a `Rich` error the parser made itself carries its
//! ready [`Error`]; an expected/found pair becomes the most precise [`SyntaxError`] that fits
//! (a slice step, an unsupported operator, a missing `:`, a missing block), else a
//! [`SyntaxError::Unexpected`] that says in words what could have come instead.
//!
//! Invariant: an error at an `Error` token gives no diagnostic (the lexer already reported it);
//! an error at the end of a line points just after its last character, not at the newline.

use super::{
    sp, Rch, L_BLOCK, L_COLON_DEF, L_COLON_ELSE, L_COLON_FOR, L_COLON_IF, L_EXPR, L_OPERATOR,
    L_STMT,
};
use crate::ast::Span;
use crate::diagnostic::Error;
use crate::lexer::Token;
use crate::syntax_error::SyntaxError;
use chumsky::error::{RichPattern, RichReason};

/// Words a chumsky error as a diagnostic. `None` for an error at an `Error` token, which the
/// lexer has already reported.
pub(super) fn convert(err: Rch<'_, '_>) -> Option<Error> {
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
    let found_text = found
        .as_ref()
        .map_or_else(|| "end of file".to_string(), Token::describe);
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
    if let Some(error) = missing_header_part(&labels, &span, &found_text) {
        return Some(error);
    }
    Some(unexpected(&expected, found, span, found_text, stale_block))
}

/// A missing `:` after a header, or a missing indented block, when a label says so.
fn missing_header_part(labels: &[&str], span: &Span, found_text: &str) -> Option<Error> {
    for (label, header) in [
        (L_COLON_FOR, "for"),
        (L_COLON_DEF, "def"),
        (L_COLON_IF, "if"),
        (L_COLON_ELSE, "else"),
    ] {
        if labels.contains(&label) {
            return Some(
                SyntaxError::MissingColon {
                    at: span.clone(),
                    header,
                    found: Some(found_text.to_string()),
                }
                .into(),
            );
        }
    }
    if labels.contains(&L_BLOCK) {
        return Some(
            SyntaxError::ExpectedBlock {
                at: span.clone(),
                found: found_text.to_string(),
            }
            .into(),
        );
    }
    None
}

/// [`SyntaxError::Unexpected`]: what could have come instead, in words. Continuations of an
/// expression that is already complete (more operators, calls, ...) are noise next to anything
/// else.
fn unexpected(
    expected: &[RichPattern<'_, Token<'_>>],
    found: Option<Token<'_>>,
    span: Span,
    found_text: String,
    stale_block: bool,
) -> Error {
    let mut words: Vec<String> = Vec::new();
    let mut continuation = false;
    for pattern in expected {
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
    SyntaxError::Unexpected {
        at: span,
        expression: words.first().map(String::as_str) == Some(L_EXPR),
        expected: words,
        found: found_text,
        label,
        operator_missing: continuation && starts_expression,
    }
    .into()
}

/// [`SyntaxError::Unsupported`]: `op` is Python that nkc does not read.
pub(super) fn unsupported(op: &str, span: Span) -> Error {
    SyntaxError::Unsupported {
        at: span,
        op: op.to_string(),
    }
    .into()
}
