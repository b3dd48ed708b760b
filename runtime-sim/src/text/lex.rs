//! The tokens of the pseudo-ISA's text form (identifiers, numbers, strings, punctuation), each
//! with its line and column, and the reader's error, [`ParseError`].
//!
//! `#` starts a comment that runs to the end of the line; whitespace separates tokens. A number is
//! digits with an optional fraction and exponent (a sign is a token of its own); a string is
//! double-quoted on one line, with the escapes `\"`, `\\` and `\n`. The longest punctuation
//! wins (`<=` before `<`). Invariants: the token list ends with one [`Tok::Eof`]; the lexer never
//! panics: anything else is a [`ParseError`] at the offending character.

use std::fmt;

/// A malformed program: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.col, self.message
        )
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: u32,
    pub(super) col: u32,
}

const PUNCTS: [&str; 22] = [
    "->", "&&", "<=", ">=", "==", "!=", "..", "{", "}", "[", "]", "(", ")", ",", ";", ":", "+",
    "-", "*", "=", "@", ".",
];
const PUNCTS1: [&str; 2] = ["<", ">"];

/// The tokens of `src`, ending with [`Tok::Eof`].
pub(super) fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |line, col, m: String| ParseError {
        line,
        col,
        message: m,
    };
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            col += 1;
            continue;
        }
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let (tl, tc) = (line, col);
        let scanned = if c.is_ascii_alphabetic() || c == b'_' {
            let end = ident_end(bytes, i);
            Some((Tok::Ident(src[i..end].to_string()), end, (end - i) as u32))
        } else if c.is_ascii_digit() {
            let end = number_end(bytes, i);
            Some((Tok::Num(src[i..end].to_string()), end, (end - i) as u32))
        } else if c == b'"' {
            let (s, end) = string(src, i).map_err(|m| err(tl, tc, m.into()))?;
            let width = s.chars().count() as u32 + 2;
            Some((Tok::Str(s), end, width))
        } else {
            None
        };
        if let Some((tok, end, width)) = scanned {
            i = end;
            col += width;
            out.push(Token {
                tok,
                line: tl,
                col: tc,
            });
            continue;
        }
        let rest = &src[i..];
        if let Some(p) = PUNCTS
            .iter()
            .chain(PUNCTS1.iter())
            .find(|p| rest.starts_with(**p))
        {
            i += p.len();
            col += p.len() as u32;
            out.push(Token {
                tok: Tok::Punct(p),
                line: tl,
                col: tc,
            });
            continue;
        }
        let ch = rest.chars().next().unwrap_or('?');
        return Err(err(
            tl,
            tc,
            format!("unexpected character `{}`", ch.escape_debug()),
        ));
    }
    out.push(Token {
        tok: Tok::Eof,
        line,
        col,
    });
    Ok(out)
}

/// How an error message names a token.
pub(super) fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Num(s) => format!("number `{s}`"),
        Tok::Str(_) => "a string".into(),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Eof => "the end of the program".into(),
    }
}

/// The register number a name like `r3` denotes (`u8::MAX` when out of range), or `None` when
/// the name does not look like a register.
pub(super) fn reg_of(name: &str) -> Option<u8> {
    let digits = name.strip_prefix('r')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u8>().ok().or(Some(u8::MAX))
}

/// The end of the identifier that starts at `i`.
fn ident_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
        i += 1;
    }
    i
}

/// The end of the number that starts at `i`: digits, then `.digits` and an exponent
/// (`e`/`E`, an optional sign, digits) when present.
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            i = j;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

/// The string whose opening quote is at `i`, unescaped, and the index after its closing quote;
/// or what is wrong with it.
fn string(src: &str, i: usize) -> Result<(String, usize), &'static str> {
    let mut s = String::new();
    let mut chars = src[i + 1..].char_indices();
    while let Some((k, ch)) = chars.next() {
        match ch {
            '"' => return Ok((s, i + 1 + k + 1)),
            '\\' => match chars.next() {
                Some((_, '"')) => s.push('"'),
                Some((_, '\\')) => s.push('\\'),
                Some((_, 'n')) => s.push('\n'),
                _ => return Err("bad escape in string"),
            },
            '\n' => return Err("string runs past the end of its line"),
            ch => s.push(ch),
        }
    }
    Err("unterminated string")
}
