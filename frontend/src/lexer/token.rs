//! The tokens the parser reads ([`Token`]): names, literals, keywords, operators and the
//! layout tokens (`Newline`, `Indent`, `Dedent`, `Eof`), with how a diagnostic names each.
//!
//! Invariant: a token borrows its text from the source (`'src`); synthetic tokens (closers the
//! layout adds, layout tokens) carry no text.

use std::fmt;

/// A token of the kernel language.
#[derive(Clone, Debug, PartialEq)]
pub enum Token<'src> {
    Name(&'src str),
    Int(i64),
    Float(f64),
    /// A string literal: Python has them, the kernel language does not; the parser reports it.
    Str(&'src str),
    // Keywords.
    Def,
    For,
    In,
    Return,
    Pass,
    True,
    False,
    None,
    If,
    Elif,
    Else,
    Import,
    From,
    As,
    Assert,
    And,
    Or,
    Not,
    While,
    Break,
    Continue,
    Lambda,
    // Operators.
    Plus,
    Minus,
    Star,
    Slash,
    DoubleSlash,
    Percent,
    /// A comparison operator: `==`, `!=`, `<`, `>`, `<=`, `>=`.
    Compare(&'src str),
    /// `@`, which starts a decorator line.
    At,
    /// `...`
    Ellipsis,
    /// `&`
    Amp,
    /// `|`
    Pipe,
    /// `^`
    Caret,
    /// `<<`
    ShiftLeft,
    /// `>>`
    ShiftRight,
    /// `**`
    DoubleStar,
    /// `is`
    Is,
    /// `;` and Python's keywords other than the ones above (`class`, `with`, ...): Python syntax
    /// the kernel language does not have. Kept as one token so that the parser can name it.
    Unsupported(&'src str),
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    FloorDivAssign,
    ModAssign,
    /// `**=`
    PowAssign,
    /// `&=`
    AmpAssign,
    /// `|=`
    PipeAssign,
    /// `^=`
    CaretAssign,
    /// `<<=`
    ShlAssign,
    /// `>>=`
    ShrAssign,
    /// `~`, the unary bitwise inversion.
    Tilde,
    // Punctuation.
    Colon,
    Comma,
    Dot,
    Arrow,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    // Layout.
    Newline,
    Indent,
    Dedent,
    Eof,
    /// Text that is not a token; a diagnostic has been reported for it.
    Error,
}

impl Token<'_> {
    /// How the token is named in a diagnostic: "`(`", "`foo`", "end of line".
    pub fn describe(&self) -> String {
        match self {
            Token::Name(n) => format!("`{n}`"),
            Token::Int(v) => format!("`{v}`"),
            Token::Float(v) => format!("`{v:?}`"),
            Token::Str(_) => "a string literal".to_string(),
            Token::Unsupported(s) | Token::Compare(s) => format!("`{s}`"),
            Token::Newline => "end of line".to_string(),
            Token::Indent => "an indented line".to_string(),
            Token::Dedent => "the end of the block".to_string(),
            Token::Eof => "end of file".to_string(),
            Token::Error => "an invalid token".to_string(),
            other => format!("`{}`", other.symbol()),
        }
    }

    /// The source text of a fixed token (keywords, operators, punctuation); "" for the others.
    pub fn symbol(&self) -> &'static str {
        match self {
            Token::Def => "def",
            Token::For => "for",
            Token::In => "in",
            Token::Return => "return",
            Token::Pass => "pass",
            Token::True => "True",
            Token::False => "False",
            Token::None => "None",
            Token::If => "if",
            Token::Elif => "elif",
            Token::Else => "else",
            Token::Import => "import",
            Token::From => "from",
            Token::As => "as",
            Token::Assert => "assert",
            Token::And => "and",
            Token::Or => "or",
            Token::Not => "not",
            Token::While => "while",
            Token::Break => "break",
            Token::Continue => "continue",
            Token::Lambda => "lambda",
            Token::Pipe => "|",
            Token::Caret => "^",
            Token::ShiftLeft => "<<",
            Token::ShiftRight => ">>",
            Token::DoubleStar => "**",
            Token::FloorDivAssign => "//=",
            Token::ModAssign => "%=",
            Token::PowAssign => "**=",
            Token::AmpAssign => "&=",
            Token::PipeAssign => "|=",
            Token::CaretAssign => "^=",
            Token::ShlAssign => "<<=",
            Token::ShrAssign => ">>=",
            Token::Tilde => "~",
            Token::LBrace => "{",
            Token::RBrace => "}",
            Token::At => "@",
            Token::Ellipsis => "...",
            Token::Amp => "&",
            Token::Is => "is",
            Token::Plus => "+",
            Token::Minus => "-",
            Token::Star => "*",
            Token::Slash => "/",
            Token::DoubleSlash => "//",
            Token::Percent => "%",
            Token::Assign => "=",
            Token::PlusAssign => "+=",
            Token::MinusAssign => "-=",
            Token::StarAssign => "*=",
            Token::SlashAssign => "/=",
            Token::Colon => ":",
            Token::Comma => ",",
            Token::Dot => ".",
            Token::Arrow => "->",
            Token::LParen => "(",
            Token::RParen => ")",
            Token::LBracket => "[",
            Token::RBracket => "]",
            _ => "",
        }
    }
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}
