//! The lexer of the IR text forms: Penguin's (`parse`) and the backend's BIR (which adds `@`).
//!
//! It owns the token kinds and their positions: identifiers (`[A-Za-z_][A-Za-z0-9_.]*`),
//! unsigned integers (decimal or `0x`), floats with a fraction or an exponent, the punctuation a
//! language passes in, and `#` comments to the end of the line. Invariants: the token list ends
//! with [`Tok::Eof`]; lines and columns are 1-based, columns counted in characters.

use crate::parse::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_.]*`
    Ident(String),
    /// Decimal or `0x` hexadecimal digits, unsigned; the value is checked where it is used.
    Int(String),
    /// A decimal number with a fraction or an exponent.
    Float(String),
    Sym(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
    pub col: usize,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(s) => format!("integer `{s}`"),
            Tok::Float(s) => format!("number `{s}`"),
            Tok::Sym(s) => format!("`{s}`"),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

/// Penguin's symbols, longest first so that `->` wins over `-`.
pub const SYMBOLS: &[&str] = &[
    "->", "+:", "..", ">=", "==", "&&", "(", ")", "{", "}", "[", "]", ",", ":", "=", "+", "-", "*",
    "<",
];

/// The tokens of `text`, ending with [`Tok::Eof`]; `symbols` (longest first) are the punctuation
/// the language has. A character that starts no token is an error at its line and column.
pub fn lex(text: &str, symbols: &[&'static str]) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            col += 1;
            continue;
        }
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            Tok::Ident(chars[start..i].iter().collect())
        } else if c.is_ascii_digit() {
            let digit_at = |k: usize| chars.get(k).is_some_and(|c| c.is_ascii_digit());
            if c == '0' && matches!(chars.get(i + 1), Some('x') | Some('X')) {
                i += 2;
                while i < chars.len() && chars[i].is_ascii_hexdigit() {
                    i += 1;
                }
                Tok::Int(chars[start..i].iter().collect())
            } else {
                let mut float = false;
                while digit_at(i) {
                    i += 1;
                }
                if chars.get(i) == Some(&'.') && digit_at(i + 1) {
                    float = true;
                    i += 1;
                    while digit_at(i) {
                        i += 1;
                    }
                }
                if matches!(chars.get(i), Some('e') | Some('E')) {
                    let signed = matches!(chars.get(i + 1), Some('+') | Some('-'));
                    let first = if signed { i + 2 } else { i + 1 };
                    if digit_at(first) {
                        float = true;
                        i = first;
                        while digit_at(i) {
                            i += 1;
                        }
                    }
                }
                let s: String = chars[start..i].iter().collect();
                if float {
                    Tok::Float(s)
                } else {
                    Tok::Int(s)
                }
            }
        } else {
            let rest = &chars[i..];
            let sym = symbols.iter().find(|s| {
                let n = s.chars().count();
                rest.len() >= n && s.chars().zip(rest.iter()).all(|(a, &b)| a == b)
            });
            match sym {
                Some(s) => {
                    i += s.chars().count();
                    Tok::Sym(s)
                }
                None => {
                    return Err(ParseError {
                        line,
                        col,
                        message: format!("unexpected character `{}`", c.escape_debug()),
                    })
                }
            }
        };
        toks.push(Token { tok, line, col });
        col += i - start;
    }
    toks.push(Token {
        tok: Tok::Eof,
        line,
        col,
    });
    Ok(toks)
}
