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
//! Invariants of the output: brackets are balanced except for stray closers (which the parser
//! reports); `Indent`/`Dedent` are balanced; at most [`MAX_NESTING`] blocks are open at once; spans
//! are in increasing order and lie within the source (zero-width spans for synthetic tokens).

use crate::ast::Span;
use crate::codes;
use crate::diagnostic::Error;
use crate::syntax_error::SyntaxError;
use logos::Logos;
use std::collections::HashSet;
use std::fmt;

/// The deepest nesting of brackets (in one logical line), and of indented blocks, that is accepted.
pub const MAX_NESTING: usize = 64;

/// The most tokens one logical line may hold. Longer lines are reported and replaced by one
/// `Error` token, which bounds the depth of the trees the parser builds (and later passes walk).
pub const MAX_LINE_TOKENS: usize = 1000;

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

/// Raw tokens, as logos cuts them. Spaces, comments and backslash-newline are skipped here.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\x0c]+")]
#[logos(skip(r"#[^\r\n]*", allow_greedy = true))]
#[logos(skip r"\\\r?\n")]
enum Raw {
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

/// Lexes a whole file. Always returns a token list ending in [`Token::Eof`], and every lexical
/// problem found, in source order.
pub fn lex(source: &str) -> (Vec<(Token<'_>, Span)>, Vec<Error>) {
    let raws: Vec<(Option<Raw>, Span)> = Raw::lexer(source)
        .spanned()
        .map(|(r, span)| (r.ok(), span))
        .collect();
    let mut layout = Layout {
        src: source,
        raws: &raws,
        out: Vec::with_capacity(raws.len() + 8),
        errors: Vec::new(),
        indents: vec![Level {
            col: 0,
            phantom: false,
            too_deep: false,
        }],
        brackets: Vec::new(),
        unmatched: unmatched_openers(&raws),
        line: None,
        prev_line_opens_block: false,
        too_deep_reported: false,
    };
    layout.run();
    let Layout {
        out, mut errors, ..
    } = layout;
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

/// One enclosing indentation level.
struct Level {
    col: usize,
    /// Pushed by error recovery: no `Indent` was emitted for it, and no `Dedent` will be.
    phantom: bool,
    /// A phantom level deeper than [`MAX_NESTING`] blocks, or any level inside one: every line
    /// inside it is poisoned (one `Error` token), so that the parser reports nothing more about
    /// the too-deep code. Inherited by the levels above, so the top of the stack tells.
    too_deep: bool,
}

/// The logical line being built.
struct Line {
    /// Index in `out` of the line's first token.
    first_out: usize,
    /// Indentation column of the line.
    indent: usize,
    /// The line's first raw token (to recognise `def`/`for` headers).
    first: Option<Raw>,
    /// The last raw token so far (to recognise a header's final `:`).
    last: Option<Raw>,
    /// Nested too deeply: the line's tokens are replaced by one `Error` token at its end.
    poisoned: bool,
}

struct Layout<'src, 'r> {
    src: &'src str,
    raws: &'r [(Option<Raw>, Span)],
    out: Vec<(Token<'src>, Span)>,
    errors: Vec<Error>,
    indents: Vec<Level>,
    /// Open brackets: the opening token and its span.
    brackets: Vec<(Token<'src>, Span)>,
    /// Byte offsets of the openers that Python's own bracket matching never closes. Only while
    /// one of them is open does a newline inside brackets get a second look.
    unmatched: HashSet<usize>,
    line: Option<Line>,
    prev_line_opens_block: bool,
    /// Blocks nested too deeply were reported (once per file).
    too_deep_reported: bool,
}

impl<'src> Layout<'src, '_> {
    fn run(&mut self) {
        for i in 0..self.raws.len() {
            let (raw, span) = self.raws[i].clone();
            match raw {
                Some(Raw::Newline) => {
                    if self.line.is_none() {
                        continue; // blank or comment-only line
                    }
                    if self.brackets.is_empty() {
                        self.end_line(span);
                    } else if self.header_in_brackets() {
                        // `for i in range(4:`: close the brackets before the header's `:`.
                        let (colon, colon_span) = self.out.pop().expect("the line ends with `:`");
                        self.close_unclosed(colon_span.start);
                        self.out.push((colon, colon_span));
                        self.end_line(span);
                    } else if self.brackets_end_here(i) {
                        self.close_unclosed(span.start);
                        self.end_line(span);
                    }
                    // Otherwise: an implicit continuation inside brackets.
                }
                _ => {
                    if self.line.is_none() {
                        self.start_line(raw, span.start);
                    }
                    self.token(raw, span);
                }
            }
        }
        let end = self.src.len();
        if self.line.is_some() {
            if !self.brackets.is_empty() {
                self.close_unclosed(end);
            }
            self.end_line(end..end);
        }
        while let Some(level) = self.indents.pop() {
            if !level.phantom && !self.indents.is_empty() {
                self.out.push((Token::Dedent, end..end));
            }
        }
        self.out.push((Token::Eof, end..end));
    }

    /// The start of the physical line holding byte `pos`.
    fn line_start(&self, pos: usize) -> usize {
        self.src[..pos].rfind(['\n', '\r']).map_or(0, |p| p + 1)
    }

    /// The indentation column of the physical line whose first token starts at `pos`, and the span
    /// of the first tab in that indentation, if any.
    fn indentation(&self, pos: usize) -> (usize, Option<Span>) {
        let start = self.line_start(pos);
        let mut col = 0;
        let mut tab = None;
        for (off, ch) in self.src[start..pos].char_indices() {
            match ch {
                '\t' => {
                    tab.get_or_insert(start + off..start + off + 1);
                    col = (col / 8 + 1) * 8;
                }
                '\x0c' => col = 0,
                _ => col += 1,
            }
        }
        (col, tab)
    }

    /// Begins a logical line whose first token is `first` at byte `pos`: checks the indentation
    /// and emits `Indent`/`Dedent` tokens.
    fn start_line(&mut self, first: Option<Raw>, pos: usize) {
        let (col, tab) = self.indentation(pos);
        if let Some(tab) = tab {
            self.errors.push(SyntaxError::TabIndent { at: tab }.into());
        }
        let ws = self.line_start(pos)..pos;
        let top = self.indents.last().map_or(0, |l| l.col);
        if col > top {
            let depth = self.indents.iter().filter(|l| !l.phantom).count();
            if !self.prev_line_opens_block {
                self.errors
                    .push(SyntaxError::UnexpectedIndent { at: ws }.into());
                let too_deep = self.indents.last().is_some_and(|l| l.too_deep);
                self.indents.push(Level {
                    col,
                    phantom: true,
                    too_deep,
                });
            } else if depth > MAX_NESTING {
                // Once per file: every deeper line would report it again.
                if !self.too_deep_reported {
                    self.too_deep_reported = true;
                    self.errors.push(
                        SyntaxError::BlocksTooDeep {
                            at: ws,
                            max: MAX_NESTING,
                        }
                        .into(),
                    );
                }
                self.indents.push(Level {
                    col,
                    phantom: true,
                    too_deep: true,
                });
            } else {
                self.indents.push(Level {
                    col,
                    phantom: false,
                    too_deep: false,
                });
                self.out.push((Token::Indent, pos..pos));
            }
        } else if col < top {
            // Close the blocks deeper than the line, but stop at a level the line falls short of:
            // a line at 6 between blocks at 4 and 8 stays in the block at 8 (and is reported).
            while let [.., lower, top] = self.indents.as_slice() {
                if top.col <= col || lower.col < col {
                    break;
                }
                let level = self.indents.pop().expect("matched two levels");
                if !level.phantom {
                    self.out.push((Token::Dedent, pos..pos));
                }
            }
            let top = self.indents.last().map_or(0, |l| l.col);
            if top != col {
                self.errors.push(
                    SyntaxError::BadDedent {
                        at: ws,
                        col,
                        enclosing: self.indent_columns(),
                    }
                    .into(),
                );
            }
        }
        self.line = Some(Line {
            first_out: self.out.len(),
            indent: col,
            first,
            last: None,
            poisoned: self.indents.last().is_some_and(|l| l.too_deep),
        });
    }

    /// The columns of the real enclosing blocks, for a help line: "0, 4 or 8".
    fn indent_columns(&self) -> String {
        let cols: Vec<String> = self
            .indents
            .iter()
            .filter(|l| !l.phantom)
            .map(|l| l.col.to_string())
            .collect();
        match cols.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => cols.join(""),
        }
    }

    /// Ends the logical line with a `Newline` token at `span`.
    fn end_line(&mut self, span: Span) {
        let line = self
            .line
            .take()
            .expect("end_line is only called inside a line");
        if line.poisoned {
            let start = self.out[line.first_out].1.start;
            let end = self.out.last().map_or(start, |(_, s)| s.end);
            self.out.truncate(line.first_out);
            self.out.push((Token::Error, start..end));
        }
        // A header opens a block even when its `:` is missing (the parser reports that).
        self.prev_line_opens_block = line.last == Some(Raw::Colon)
            || matches!(line.first, Some(Raw::Def | Raw::For | Raw::While));
        self.out.push((Token::Newline, span));
    }

    /// Whether one of the open brackets is one that Python never closes.
    fn unclosed_open(&self) -> bool {
        self.brackets
            .iter()
            .any(|(_, s)| self.unmatched.contains(&s.start))
    }

    /// At a physical newline inside brackets: whether the line is a `def` or `for` header that
    /// ends with its `:` while a bracket that is never closed is open, as in `for i in range(4:`.
    fn header_in_brackets(&self) -> bool {
        self.unclosed_open()
            && self.line.as_ref().is_some_and(|l| {
                matches!(l.first, Some(Raw::Def | Raw::For)) && l.last == Some(Raw::Colon)
            })
            && self.out.last().is_some_and(|(t, _)| *t == Token::Colon)
    }

    /// Decides, at the physical newline `raws[i]` inside brackets, whether the brackets were left
    /// unclosed and the logical line ends here. Python would read on to the end of the file; we
    /// stop at the first sign that the next line is a new statement. Brackets that Python closes
    /// are always continued over, so that every valid file lexes exactly as Python lexes it.
    fn brackets_end_here(&self, i: usize) -> bool {
        if !self.unclosed_open() {
            return false;
        }
        let line = self
            .line
            .as_ref()
            .expect("brackets are only open inside a line");
        let Some((next, span)) = self.raws[i + 1..]
            .iter()
            .find(|(r, _)| *r != Some(Raw::Newline))
        else {
            return true; // the file ends: close the brackets on this line rather than at the end
        };
        if matches!(next, Some(Raw::Def | Raw::For | Raw::Return | Raw::Pass)) {
            return true;
        }
        if self.line_start(span.start) == self.line_start(self.raws[i].1.start) {
            return false; // `\r` followed by more text on the same line: cannot happen, be safe
        }
        let (col, _) = self.indentation(span.start);
        col <= line.indent && !matches!(next, Some(Raw::RParen | Raw::RBracket))
    }

    /// Reports the innermost open bracket as unclosed at byte `pos`, and closes every open bracket
    /// there with zero-width tokens.
    fn close_unclosed(&mut self, pos: usize) {
        let Some((open, open_span)) = self.brackets.last().cloned() else {
            return;
        };
        self.errors.push(
            SyntaxError::Unclosed {
                at: pos..pos,
                open: open.describe(),
                closer: closer(&open).describe(),
                open_at: open_span,
                more: self.brackets.len() - 1,
            }
            .into(),
        );
        while let Some((open, _)) = self.brackets.pop() {
            self.out.push((closer(&open), pos..pos));
        }
    }

    /// Emits the token for one raw token (not a newline).
    fn token(&mut self, raw: Option<Raw>, span: Span) {
        let text = &self.src[span.clone()];
        if let Some(line) = self.line.as_mut() {
            line.last = raw;
        }
        let token = match raw {
            None => {
                self.bad_character(text, span.clone());
                Token::Error
            }
            Some(raw) => match raw {
                Raw::Name => Token::Name(text),
                Raw::Def => Token::Def,
                Raw::For => Token::For,
                Raw::In => Token::In,
                Raw::Return => Token::Return,
                Raw::Pass => Token::Pass,
                Raw::True => Token::True,
                Raw::False => Token::False,
                Raw::None => Token::None,
                Raw::If => Token::If,
                Raw::Elif => Token::Elif,
                Raw::Else => Token::Else,
                Raw::Import => Token::Import,
                Raw::From => Token::From,
                Raw::As => Token::As,
                Raw::Assert => Token::Assert,
                Raw::And => Token::And,
                Raw::Or => Token::Or,
                Raw::Not => Token::Not,
                Raw::While => Token::While,
                Raw::Break => Token::Break,
                Raw::Continue => Token::Continue,
                Raw::Lambda => Token::Lambda,
                Raw::Pipe => Token::Pipe,
                Raw::DoubleStar => Token::DoubleStar,
                Raw::FloorDivAssign => Token::FloorDivAssign,
                Raw::ModAssign => Token::ModAssign,
                Raw::PowAssign => Token::PowAssign,
                Raw::AmpAssign => Token::AmpAssign,
                Raw::PipeAssign => Token::PipeAssign,
                Raw::CaretAssign => Token::CaretAssign,
                Raw::ShlAssign => Token::ShlAssign,
                Raw::ShrAssign => Token::ShrAssign,
                Raw::Tilde => Token::Tilde,
                Raw::At => Token::At,
                Raw::Ellipsis => Token::Ellipsis,
                Raw::Amp => Token::Amp,
                Raw::Caret => Token::Caret,
                Raw::ShiftLeft => Token::ShiftLeft,
                Raw::ShiftRight => Token::ShiftRight,
                Raw::Is => Token::Is,
                Raw::Compare => Token::Compare(text),
                Raw::Int => self.int(text, span.clone()),
                Raw::RadixInt => self.radix_int(text, span.clone()),
                Raw::Float => self.float(text, span.clone()),
                Raw::Str => Token::Str(text),
                Raw::Plus => Token::Plus,
                Raw::Minus => Token::Minus,
                Raw::Star => Token::Star,
                Raw::Slash => Token::Slash,
                Raw::DoubleSlash => Token::DoubleSlash,
                Raw::Percent => Token::Percent,
                Raw::Unsupported => Token::Unsupported(text),
                Raw::Assign => Token::Assign,
                Raw::PlusAssign => Token::PlusAssign,
                Raw::MinusAssign => Token::MinusAssign,
                Raw::StarAssign => Token::StarAssign,
                Raw::SlashAssign => Token::SlashAssign,
                Raw::Colon => Token::Colon,
                Raw::Comma => Token::Comma,
                Raw::Dot => Token::Dot,
                Raw::Arrow => Token::Arrow,
                Raw::LParen | Raw::LBracket | Raw::LBrace => {
                    let open = match raw {
                        Raw::LParen => Token::LParen,
                        Raw::LBracket => Token::LBracket,
                        _ => Token::LBrace,
                    };
                    self.brackets.push((open.clone(), span.clone()));
                    if self.brackets.len() == MAX_NESTING + 1 {
                        self.too_deep(span.clone());
                    }
                    open
                }
                Raw::RParen | Raw::RBracket | Raw::RBrace => {
                    let close = match raw {
                        Raw::RParen => Token::RParen,
                        Raw::RBracket => Token::RBracket,
                        _ => Token::RBrace,
                    };
                    self.close(close, span);
                    return;
                }
                Raw::Newline => unreachable!("newlines are handled by `run`"),
            },
        };
        self.out.push((token, span.clone()));
        self.count_line_token(span);
    }

    /// Counts a token of the current line against [`MAX_LINE_TOKENS`].
    fn count_line_token(&mut self, span: Span) {
        let Some(line) = self.line.as_mut() else {
            return;
        };
        if self.out.len() - line.first_out == MAX_LINE_TOKENS + 1 && !line.poisoned {
            line.poisoned = true;
            self.errors.push(
                SyntaxError::LineTooLong {
                    at: span,
                    max: MAX_LINE_TOKENS,
                }
                .into(),
            );
        }
    }

    fn bad_character(&mut self, text: &str, span: Span) {
        self.errors.push(
            SyntaxError::BadCharacter {
                at: span,
                text: text.to_string(),
            }
            .into(),
        );
    }

    fn too_deep(&mut self, span: Span) {
        if self.line.as_ref().is_some_and(|l| l.poisoned) {
            return; // one report per line
        }
        self.errors.push(
            SyntaxError::BracketsTooDeep {
                at: span,
                max: MAX_NESTING,
            }
            .into(),
        );
        if let Some(line) = self.line.as_mut() {
            line.poisoned = true;
        }
    }

    /// Handles a closing bracket: the normal case, a missing inner closer, or a mismatch.
    fn close(&mut self, close: Token<'src>, span: Span) {
        let opener = opener(&close);
        match self.brackets.iter().rposition(|(t, _)| *t == opener) {
            Some(k) if k + 1 == self.brackets.len() => {
                self.brackets.pop();
                self.out.push((close, span));
            }
            Some(k) => {
                // Inner brackets were left open: close them just before this one.
                let (inner, inner_span) = self.brackets.last().cloned().expect("k < len - 1");
                self.errors.push(
                    SyntaxError::UnclosedBefore {
                        at: span.clone(),
                        open: inner.describe(),
                        closer: closer(&inner).describe(),
                        close: close.describe(),
                        open_at: inner_span,
                    }
                    .into(),
                );
                while self.brackets.len() > k + 1 {
                    let (open, _) = self.brackets.pop().expect("len > k + 1");
                    self.out.push((closer(&open), span.start..span.start));
                }
                self.brackets.pop();
                self.out.push((close, span));
            }
            None => match self.brackets.pop() {
                None => self.out.push((close, span)), // a stray closer: the parser reports it
                Some((open, open_span)) => {
                    let right = closer(&open);
                    self.errors.push(
                        SyntaxError::MismatchedBracket {
                            at: span.clone(),
                            expected: right.describe(),
                            found: close.describe(),
                            open: open.describe(),
                            open_at: open_span,
                        }
                        .into(),
                    );
                    self.out.push((right, span));
                }
            },
        }
    }

    fn int(&mut self, text: &str, span: Span) -> Token<'src> {
        let digits: String = text.chars().filter(|c| *c != '_').collect();
        if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0') {
            self.errors.push(
                SyntaxError::LeadingZeros {
                    at: span.clone(),
                    digits: digits.clone(),
                }
                .into(),
            );
        }
        match digits.parse::<i64>() {
            Ok(v) => Token::Int(v),
            Err(_) => {
                self.errors
                    .push(SyntaxError::IntTooLarge { at: span }.into());
                Token::Error
            }
        }
    }

    /// A hexadecimal, octal or binary literal (the regex admits only its radix's digits).
    fn radix_int(&mut self, text: &str, span: Span) -> Token<'src> {
        let radix = match text.as_bytes().get(1) {
            Some(b'x' | b'X') => 16,
            Some(b'o' | b'O') => 8,
            _ => 2,
        };
        let digits: String = text[2..].chars().filter(|c| *c != '_').collect();
        match i64::from_str_radix(&digits, radix) {
            Ok(v) => Token::Int(v),
            Err(_) => {
                self.errors
                    .push(SyntaxError::IntTooLarge { at: span }.into());
                Token::Error
            }
        }
    }

    fn float(&mut self, text: &str, span: Span) -> Token<'src> {
        let digits: String = text.chars().filter(|c| *c != '_').collect();
        match digits.parse::<f64>() {
            Ok(v) => Token::Float(v),
            Err(_) => {
                self.errors.push(SyntaxError::BadFloat { at: span }.into());
                Token::Error
            }
        }
    }
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

/// The byte offsets of the openers that Python's bracket matching leaves unclosed: still open at
/// the end of the file, or popped by a closer of the other kind.
fn unmatched_openers(raws: &[(Option<Raw>, Span)]) -> HashSet<usize> {
    let mut stack: Vec<(Raw, usize)> = Vec::new();
    let mut bad = HashSet::new();
    for (raw, span) in raws {
        match raw {
            Some(open @ (Raw::LParen | Raw::LBracket | Raw::LBrace)) => {
                stack.push((*open, span.start))
            }
            Some(close @ (Raw::RParen | Raw::RBracket | Raw::RBrace)) => {
                let want = match close {
                    Raw::RParen => Raw::LParen,
                    Raw::RBracket => Raw::LBracket,
                    _ => Raw::LBrace,
                };
                while let Some((open, at)) = stack.pop() {
                    if open == want {
                        break;
                    }
                    bad.insert(at);
                }
            }
            _ => {}
        }
    }
    bad.extend(stack.into_iter().map(|(_, at)| at));
    bad
}

fn closer<'src>(open: &Token<'src>) -> Token<'src> {
    match open {
        Token::LParen => Token::RParen,
        Token::LBrace => Token::RBrace,
        _ => Token::RBracket,
    }
}

fn opener<'src>(close: &Token<'src>) -> Token<'src> {
    match close {
        Token::RParen => Token::LParen,
        Token::RBrace => Token::LBrace,
        _ => Token::LBracket,
    }
}

#[cfg(test)]
mod tests;
