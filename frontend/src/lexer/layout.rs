//! The second layer of the lexer: the layout pass, which turns the raw tokens' physical lines
//! into Python's logical lines ([`Token::Newline`], [`Token::Indent`], [`Token::Dedent`],
//! [`Token::Eof`]), repairs the stream where the text is broken (unclosed or mismatched brackets,
//! bad indentation, lines or blocks nested too deeply) and reports each repair.
//!
//! Invariants of its output: the lexer's (see [`super`]): brackets balanced but for stray
//! closers, `Indent`/`Dedent` balanced, at most [`MAX_NESTING`] blocks open at once, spans in
//! increasing order.

use super::raw::Raw;
use super::{Token, MAX_LINE_TOKENS, MAX_NESTING};
use crate::ast::Span;
use crate::diagnostic::Error;
use crate::syntax_error::SyntaxError;
use std::collections::HashSet;

/// The logical lines of `raws` (the raw tokens of `src`) as tokens ending in [`Token::Eof`], and
/// the problems the layout found.
pub(super) fn layout<'src>(
    src: &'src str,
    raws: &[(Option<Raw>, Span)],
) -> (Vec<(Token<'src>, Span)>, Vec<Error>) {
    let mut layout = Layout {
        src,
        raws,
        out: Vec::with_capacity(raws.len() + 8),
        errors: Vec::new(),
        indents: vec![Level {
            col: 0,
            phantom: false,
            too_deep: false,
        }],
        brackets: Vec::new(),
        unmatched: unmatched_openers(raws),
        line: None,
        prev_line_opens_block: false,
        too_deep_reported: false,
    };
    layout.run();
    (layout.out, layout.errors)
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
                // Python's `;` after a line's last statement (`n = 64000;`) ends nothing more
                // than the line does; between two statements it stays refused.
                Some(Raw::Unsupported)
                    if &self.src[span.clone()] == ";"
                        && self.line.is_some()
                        && self.brackets.is_empty()
                        && matches!(self.raws.get(i + 1), None | Some((Some(Raw::Newline), _))) => {
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
