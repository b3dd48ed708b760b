//! The first layer of the lexer: [`Raw`] tokens as logos cuts the text (names, literals,
//! keywords, operators, physical newlines), spaces, comments and backslash continuations
//! skipped.
//!
//! Invariant: every byte of the source is in a raw token's span, a skipped run, or an error
//! (`None` in the lexer's list), and the spans are in increasing order.

use logos::Logos;

/// Raw tokens, as logos cuts them. Spaces, comments and backslash-newline are skipped here.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\x0c]+")]
#[logos(skip(r"#[^\r\n]*", allow_greedy = true))]
#[logos(skip r"\\\r?\n")]
pub(super) enum Raw {
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Name,
    #[token("def")]
    Def,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("return")]
    Return,
    #[token("pass")]
    Pass,
    #[token("True")]
    True,
    #[token("False")]
    False,
    #[token("None")]
    None,
    #[token("if")]
    If,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("import")]
    Import,
    #[token("from")]
    From,
    #[token("as")]
    As,
    #[token("assert")]
    Assert,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("while")]
    While,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("lambda")]
    Lambda,
    #[token("|")]
    Pipe,
    #[token("**")]
    DoubleStar,
    #[token("//=")]
    FloorDivAssign,
    #[token("%=")]
    ModAssign,
    #[token("**=")]
    PowAssign,
    #[token("&=")]
    AmpAssign,
    #[token("|=")]
    PipeAssign,
    #[token("^=")]
    CaretAssign,
    #[token("<<=")]
    ShlAssign,
    #[token(">>=")]
    ShrAssign,
    #[token("~")]
    Tilde,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("@")]
    At,
    #[token("...")]
    Ellipsis,
    #[token("&")]
    Amp,
    #[token("^")]
    Caret,
    #[token("<<")]
    ShiftLeft,
    #[token(">>")]
    ShiftRight,
    #[token("is")]
    Is,
    #[token("==")]
    #[token("!=")]
    #[token("<")]
    #[token(">")]
    #[token("<=")]
    #[token(">=")]
    Compare,
    #[regex(r"[0-9](_?[0-9])*")]
    Int,
    /// `0x1F`, `0o17`, `0b101` (underscores between digits too).
    #[regex(r"0[xX](_?[0-9a-fA-F])+")]
    #[regex(r"0[oO](_?[0-7])+")]
    #[regex(r"0[bB](_?[01])+")]
    RadixInt,
    #[regex(r"[0-9](_?[0-9])*\.([0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?")]
    #[regex(r"\.[0-9](_?[0-9])*([eE][+-]?[0-9](_?[0-9])*)?")]
    #[regex(r"[0-9](_?[0-9])*[eE][+-]?[0-9](_?[0-9])*")]
    Float,
    #[regex(r#"([rRbBuUfF]|[fF][rR]|[rR][fF]|[bB][rR]|[rR][bB])?"([^"\\\r\n]|\\[^\r\n])*""#)]
    #[regex(r#"([rRbBuUfF]|[fF][rR]|[rR][fF]|[bB][rR]|[rR][bB])?'([^'\\\r\n]|\\[^\r\n])*'"#)]
    #[regex(r#"([rRbBuUfF]|[fF][rR]|[rR][fF])?""""#, |lex| triple_quoted(lex, "\"\"\""))]
    #[regex(r#"([rRbBuUfF]|[fF][rR]|[rR][fF])?'''"#, |lex| triple_quoted(lex, "'''"))]
    Str,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("//")]
    DoubleSlash,
    #[token("%")]
    Percent,
    #[token(";")]
    #[token("class")]
    #[token("with")]
    #[token("try")]
    #[token("except")]
    #[token("finally")]
    #[token("yield")]
    #[token("global")]
    #[token("nonlocal")]
    #[token("del")]
    #[token("raise")]
    #[token("async")]
    #[token("await")]
    Unsupported,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token(":")]
    Colon,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token("->")]
    Arrow,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[regex(r"\r?\n")]
    #[token("\r")]
    Newline,
}

/// The callback of a triple-quoted string (a docstring): the text up to the closing `quote`, which
/// may span lines. A string never closed is an error token (reported as a bad character).
fn triple_quoted(lex: &mut logos::Lexer<'_, Raw>, quote: &str) -> bool {
    let rest = lex.remainder();
    let mut i = 0;
    while i < rest.len() {
        if rest[i..].starts_with(quote) {
            lex.bump(i + quote.len());
            return true;
        }
        // A backslash escapes the next character (a quote included).
        let step = if rest.as_bytes()[i] == b'\\' { 2 } else { 1 };
        i += step;
        while i < rest.len() && !rest.is_char_boundary(i) {
            i += 1;
        }
    }
    lex.bump(rest.len());
    false
}
