//! The lexer of the IR text forms: Penguin's (`parse`) and the backend's BIR (which adds `@`).
//!
//! It owns the token kinds and their positions: identifiers (`[A-Za-z_][A-Za-z0-9_.]*`),
//! unsigned integers (decimal or `0x`), floats with a fraction or an exponent, the punctuation a
//! language passes in, and `#` comments to the end of the line. Invariants: the token list ends
//! with [`Tok::Eof`]; lines and columns are 1-based, columns counted in characters.

use std::fmt;

/// A syntax error in Penguin IR text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

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

/// A parser's position in a token list, and the reading steps both IR readers share: look at and
/// take tokens, expect punctuation and words, read identifiers, integer literals and
/// comma-separated lists, with errors at the offending token. A reader implements the three
/// accessors (the IR readers get them from their [`crate::parse::Reading`]); its error type takes
/// a [`ParseError`].
pub trait TokenCursor {
    type Error: From<ParseError>;

    /// The tokens, ending with [`Tok::Eof`].
    fn toks(&self) -> &[Token];
    fn pos(&self) -> usize;
    fn set_pos(&mut self, pos: usize);

    fn peek(&self) -> &Token {
        // The token list always ends with `Eof` and `pos` never passes it.
        let toks = self.toks();
        &toks[self.pos().min(toks.len() - 1)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos() < self.toks().len() - 1 {
            self.set_pos(self.pos() + 1);
        }
        t
    }

    fn err_at<T>(&self, tok: &Token, message: impl Into<String>) -> Result<T, Self::Error> {
        Err(ParseError {
            line: tok.line,
            col: tok.col,
            message: message.into(),
        }
        .into())
    }

    fn expected<T>(&self, what: &str) -> Result<T, Self::Error> {
        let t = self.peek();
        self.err_at(t, format!("expected {what}, found {}", t.tok.describe()))
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(&self.peek().tok, Tok::Sym(x) if *x == s)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(x) if x == w)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        let yes = self.is_sym(s);
        if yes {
            self.bump();
        }
        yes
    }

    fn expect_sym(&mut self, s: &str) -> Result<Token, Self::Error> {
        if self.is_sym(s) {
            Ok(self.bump())
        } else {
            self.expected(&format!("`{s}`"))
        }
    }

    fn expect_word(&mut self, w: &str) -> Result<Token, Self::Error> {
        if self.is_word(w) {
            Ok(self.bump())
        } else {
            self.expected(&format!("`{w}`"))
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, Token), Self::Error> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let s = s.clone();
                Ok((s, self.bump()))
            }
            _ => self.expected(what),
        }
    }

    /// An unsigned integer literal as `u128` (anything wider is an error).
    fn uint(&mut self, what: &str) -> Result<(u128, Token), Self::Error> {
        let Tok::Int(s) = self.peek().tok.clone() else {
            return self.expected(what);
        };
        let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u128::from_str_radix(hex, 16),
            None => s.parse::<u128>(),
        };
        let tok = self.bump();
        match parsed {
            Ok(v) => Ok((v, tok)),
            Err(_) => self.err_at(&tok, format!("integer `{s}` is malformed or too large")),
        }
    }

    fn u64_lit(&mut self, what: &str) -> Result<u64, Self::Error> {
        let (v, tok) = self.uint(what)?;
        u64::try_from(v).or_else(|_| self.err_at(&tok, format!("{what} {v} is too large")))
    }

    fn u32_lit(&mut self, what: &str) -> Result<u32, Self::Error> {
        let (v, tok) = self.uint(what)?;
        u32::try_from(v).or_else(|_| self.err_at(&tok, format!("{what} {v} is too large")))
    }

    /// `['-'] INT` as an `i64`.
    fn i64_lit(&mut self, what: &str) -> Result<i64, Self::Error> {
        let first = self.peek().clone();
        let neg = self.eat_sym("-");
        let (v, _) = self.uint(what)?;
        let v = i128::try_from(v).unwrap_or(i128::MAX);
        let v = if neg { -v } else { v };
        i64::try_from(v).or_else(|_| self.err_at(&first, format!("{what} {v} is out of range")))
    }

    /// The arguments of a `pipelined` loop attribute, after the word: `(stages=N, trip=T)` or
    /// `(stages=N, trip=T, peeled)` ([`crate::ir::Pipelined`]'s text form).
    fn pipelined_args(&mut self) -> Result<crate::ir::Pipelined, Self::Error> {
        self.expect_sym("(")?;
        self.expect_word("stages")?;
        self.expect_sym("=")?;
        let num_stages = self.u32_lit("a stage count")?;
        self.expect_sym(",")?;
        self.expect_word("trip")?;
        self.expect_sym("=")?;
        let orig_trip = self.i64_lit("a trip count")?;
        let peeled = self.eat_sym(",");
        if peeled {
            self.expect_word("peeled")?;
        }
        self.expect_sym(")")?;
        Ok(crate::ir::Pipelined {
            num_stages,
            orig_trip,
            peeled,
        })
    }

    /// A comma-separated list up to `close` (the opening symbol already eaten).
    fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, Self::Error>,
    ) -> Result<Vec<T>, Self::Error>
    where
        Self: Sized,
    {
        let mut out = Vec::new();
        if self.eat_sym(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat_sym(close) {
                return Ok(out);
            }
            if !self.eat_sym(",") {
                return self.expected(&format!("`,` or `{close}`"));
            }
        }
    }
}
