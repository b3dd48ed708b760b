//! The lexer: source text to a flat list of tokens with Python's layout tokens.
//!
//! Two layers. [`logos`] cuts the text into raw tokens (names, literals, operators, physical
//! newlines), skipping spaces, comments and backslash continuations. The layout pass then turns
//! physical lines into logical ones, the way Python's tokenizer does:
//! - a logical line ends with one [`Token::Newline`]; blank and comment-only lines produce nothing;
//! - newlines inside `(...)`/`[...]` are ignored (implicit line continuation);
//! - a deeper indentation after a block header (a line ending in `:`, or starting with `def` or
//!   `for`) produces [`Token::Indent`], a shallower one one [`Token::Dedent`] per closed block;
//! - the list always ends with [`Token::Eof`], after every open block was closed.
//!
//! Problems never stop the lexer; each becomes a diagnostic, and the token stream is repaired so
//! that the parser sees as little fallout as possible:
//! - a character that cannot start a token becomes [`Token::Error`];
//! - a tab in indentation is reported, then counted as Python counts it (to the next multiple of 8);
//! - an unexpected indent is reported and becomes a *phantom* level, which emits no
//!   `Indent`/`Dedent` token; a dedent to a column between two enclosing levels is reported and the
//!   line stays in the deeper block;
//! - a bracket that Python's matching would never close is reported as unclosed at the end of its
//!   line (a heuristic decides where the line ended: the next line is no deeper than the statement,
//!   or starts with a statement keyword) and closed there by zero-width closing tokens; a
//!   mismatched closer is replaced by the right one. Brackets that Python closes are never second
//!   guessed, so every valid file lexes as Python lexes it;
//! - a line nested more than [`MAX_NESTING`] brackets deep, or longer than [`MAX_LINE_TOKENS`]
//!   tokens, is reported and replaced by a single `Error` token, so that the parser's recursion
//!   and the depth of the trees stay bounded; a block nested more than [`MAX_NESTING`] deep is
//!   reported once per file and becomes a phantom level;
//! - a NUL byte anywhere, and a backslash continuation that ends the file, are reported because
//!   CPython rejects them (every `.nk` file is valid Python).
//!
//! The parts: [`token`] (the tokens), [`raw`] (logos's layer), [`layout`] (the logical lines
//! and every repair); this file runs them and adds what CPython rejects beyond them.
//!
//! Invariants of the output: brackets are balanced except for stray closers (which the parser
//! reports); `Indent`/`Dedent` are balanced; at most [`MAX_NESTING`] blocks are open at once; spans
//! are in increasing order and lie within the source (zero-width spans for synthetic tokens).

mod layout;
mod raw;
mod token;

use crate::ast::Span;
use crate::codes;
use crate::diagnostic::Error;
use crate::syntax_error::SyntaxError;
use layout::layout;
use logos::Logos;
use raw::Raw;
pub use token::Token;

/// The deepest nesting of brackets (in one logical line), and of indented blocks, that is accepted.
pub const MAX_NESTING: usize = 64;

/// The most tokens one logical line may hold. Longer lines are reported and replaced by one
/// `Error` token, which bounds the depth of the trees the parser builds (and later passes walk).
pub const MAX_LINE_TOKENS: usize = 1000;

/// Lexes a whole file. Always returns a token list ending in [`Token::Eof`], and every lexical
/// problem found, in source order.
pub fn lex(source: &str) -> (Vec<(Token<'_>, Span)>, Vec<Error>) {
    let raws: Vec<(Option<Raw>, Span)> = Raw::lexer(source)
        .spanned()
        .map(|(r, span)| (r.ok(), span))
        .collect();
    let (out, mut errors) = layout(source, &raws);
    not_python(source, &raws, &mut errors);
    errors.sort_by_key(|e| (e.span.start, e.span.end));
    (out, errors)
}

/// What CPython rejects although every token is fine: a NUL byte anywhere (a comment included;
/// reported once, at the first, instead of as a bad character), and a backslash continuation that
/// ends the file (the logical line never ends).
fn not_python(source: &str, raws: &[(Option<Raw>, Span)], errors: &mut Vec<Error>) {
    if let Some(first) = source.find('\0') {
        errors.retain(|e| {
            !(e.code == codes::BAD_CHARACTER && source[e.span.clone()].bytes().all(|b| b == 0))
        });
        let count = source.bytes().filter(|&b| b == 0).count();
        errors.push(
            SyntaxError::NulByte {
                at: first..first + 1,
                count,
            }
            .into(),
        );
    }
    let tail = source
        .strip_suffix("\\\n")
        .or_else(|| source.strip_suffix("\\\r\n"));
    if let Some(before) = tail {
        let backslash = before.len();
        // In a comment, a backslash continues nothing: a `#` earlier on the line, outside every
        // token (a string may hold one), starts a comment.
        let line_start = before.rfind(['\n', '\r']).map_or(0, |p| p + 1);
        let in_token = |p: usize| {
            // The spans are in increasing order: the last token starting at or before `p`.
            let k = raws.partition_point(|(_, sp)| sp.start <= p);
            k > 0 && p < raws[k - 1].1.end
        };
        let in_comment = before[line_start..]
            .match_indices('#')
            .any(|(off, _)| !in_token(line_start + off));
        if !in_comment {
            errors.push(
                SyntaxError::ContinuationAtEof {
                    at: backslash..backslash + 1,
                }
                .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests;
