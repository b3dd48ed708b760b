//! String literals: their text (prefix, quotes and escapes), f-strings split into literal parts
//! and `{expression[:spec]}` parts (each expression parsed where it stands in the file, by
//! [`super::parse_expr_at`]), and
//! adjacent literals joined as one.
//!
//! Invariant: every span of an expression inside an f-string is a position in the file, so its
//! diagnostics point into the string where the user wrote it.

use super::parse_expr_at;
use crate::ast::*;
use crate::diagnostic::Error;
use crate::syntax_error::SyntaxError;

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
pub(super) fn string_expr(text: &str, start: usize) -> Result<ExprKind, Error> {
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

/// Adjacent string literals as one: plain text joined, or f-string parts in order.
pub(super) fn concat_strings(kinds: Vec<ExprKind>) -> ExprKind {
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
