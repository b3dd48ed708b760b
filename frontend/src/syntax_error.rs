//! [`SyntaxError`]: every problem the lexer and the parser find in a kernel's text.
//!
//! Each variant carries the data of one problem (its spans, the tokens involved, the limits
//! crossed); its message comes from `thiserror`, and `impl From<SyntaxError> for Diagnostic` is
//! the one place where a variant gets its code (`E0001`–`E0099`, see `codes`), labels, notes and
//! help. The lexer and the parser report `SyntaxError`s and keep them as diagnostics.
//!
//! Invariants: every span is a byte range into the source; token descriptions are those of
//! `Token::describe` (already quoted, such as ``` `(` ``` or `end of file`).

use crate::ast::Span;
use crate::codes;
use vocab::Diagnostic;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SyntaxError {
    /// A NUL byte anywhere in the file: `count` of them, the first at `at`.
    #[error("the source contains a NUL byte")]
    NulByte { at: Span, count: usize },
    /// A backslash continuation that ends the file.
    #[error("the file ends right after a line continuation")]
    ContinuationAtEof { at: Span },
    /// A tab in the indentation of a line.
    #[error("tab character in indentation")]
    TabIndent { at: Span },
    /// An indented line where no block was opened (found by the lexer).
    #[error("unexpected indent")]
    UnexpectedIndent { at: Span },
    /// An indented block that belongs to no header (found by the parser).
    #[error("unexpected indent")]
    StrayBlock { at: Span },
    /// More than `max` nested blocks.
    #[error("blocks nested too deeply")]
    BlocksTooDeep { at: Span, max: usize },
    /// More than `max` nested brackets.
    #[error("brackets nested too deeply")]
    BracketsTooDeep { at: Span, max: usize },
    /// More than `max` tokens on one line.
    #[error("line too long")]
    LineTooLong { at: Span, max: usize },
    /// A dedent to column `col`, which no enclosing block has; `enclosing` lists their columns.
    #[error("unindent does not match any outer indentation level")]
    BadDedent {
        at: Span,
        col: usize,
        enclosing: String,
    },
    /// Text that cannot start a token (an unterminated string, a stray `\`, a `$`).
    #[error("unexpected character{} `{}`", if .text.chars().count() == 1 { "" } else { "s" }, .text.chars().flat_map(char::escape_debug).collect::<String>())]
    BadCharacter { at: Span, text: String },
    /// A bracket still open at the end of the line (`at`, where its closer was expected);
    /// `more` enclosing brackets are unclosed too.
    #[error("unclosed {open}")]
    Unclosed {
        at: Span,
        open: String,
        closer: String,
        open_at: Span,
        more: usize,
    },
    /// An inner bracket left open when an outer one closes at `at`.
    #[error("unclosed {open}")]
    UnclosedBefore {
        at: Span,
        open: String,
        closer: String,
        close: String,
        open_at: Span,
    },
    /// A closing bracket of the wrong kind.
    #[error("mismatched closing bracket: expected {expected}, found {found}")]
    MismatchedBracket {
        at: Span,
        expected: String,
        found: String,
        open: String,
        open_at: Span,
    },
    /// An integer literal with leading zeros (`digits` as written, without `_`).
    #[error("leading zeros are not allowed in an integer literal")]
    LeadingZeros { at: Span, digits: String },
    /// An integer literal beyond 64 bits.
    #[error("integer literal is too large")]
    IntTooLarge { at: Span },
    /// A float literal that does not parse.
    #[error("malformed float literal")]
    BadFloat { at: Span },
    /// A positional argument after a keyword argument.
    #[error("positional argument follows keyword argument")]
    PositionalAfterKeyword { at: Span, keyword_at: Span },
    /// A `def`/`for`/`if`/`else` header without its `:`; `found` is what stands there instead
    /// (none at the end of the line).
    #[error("expected `:` after the `{header}` header{}", .found.as_ref().map(|f| format!(", found {f}")).unwrap_or_default())]
    MissingColon {
        at: Span,
        header: &'static str,
        found: Option<String>,
    },
    /// A subscript of something other than a name, assigned to.
    #[error("cannot assign to a subscript of this expression")]
    SubscriptTarget { at: Span },
    /// A tuple target with an item that is not a name.
    #[error("tuple unpacking binds plain names only")]
    TupleTarget { at: Span },
    /// An assignment to something that is neither a name nor a subscript.
    #[error("cannot assign to this expression")]
    BadTarget { at: Span },
    /// A token no statement starts with.
    #[error("unexpected {found}")]
    StrayToken { at: Span, found: String },
    /// A slice with a step.
    #[error("slice steps are not part of the kernel language")]
    SliceStep { at: Span },
    /// A string literal.
    #[error("string literals are not part of the kernel language")]
    StringLiteral { at: Span },
    /// Python syntax the language does not have (`**`, `@`, `;`, `//=`, ...).
    #[error("`{op}` is not part of the kernel language")]
    Unsupported { at: Span, op: String },
    /// A header without its indented block.
    #[error("expected an indented block, found {found}")]
    ExpectedBlock { at: Span, found: String },
    /// `def` inside a block.
    #[error("unexpected `def` inside a block")]
    DefInBlock { at: Span },
    /// The general syntax error: `expected` lists what could have come (empty when nothing
    /// useful is known), `found` what came (`label` is the text under it). `expression` when an
    /// expression is what is missing; `operator_missing` when an operator or a `,` before the
    /// found token would have continued the line.
    #[error("{}", expected_message(.expected, .found))]
    Unexpected {
        at: Span,
        expected: Vec<String>,
        found: String,
        label: String,
        expression: bool,
        operator_missing: bool,
    },
}

/// "expected A, B or C, found X".
fn expected_message(expected: &[String], found: &str) -> String {
    match expected {
        [] => format!("unexpected {found}"),
        [one] => format!("expected {one}, found {found}"),
        [init @ .., last] => format!("expected {} or {last}, found {found}", init.join(", ")),
    }
}

/// The help for a construct of Python that the language does not have.
fn unsupported_help(op: &str) -> &'static str {
    match op {
        "**" => "write the power as a product, or use an `nl` function",
        "@" => "for a matrix product in a kernel use `nl.matmul(x, y, transpose_x=True)`; `@` is numpy's product of host arrays, which a kernel does not have",
        ";" => "write one statement per line",
        "//=" | "%=" => "write `x = x // y` or `x = x % y`",
        _ => {
            "the kernel language has the statements `def`, `for`, `if`, `assert`, `return`, `pass`, `import` and assignments"
        }
    }
}

impl SyntaxError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        use SyntaxError::*;
        match self {
            NulByte { .. } => codes::NUL_BYTE,
            ContinuationAtEof { .. } => codes::CONTINUATION_AT_EOF,
            TabIndent { .. } => codes::TAB_INDENT,
            UnexpectedIndent { .. } | StrayBlock { .. } => codes::UNEXPECTED_INDENT,
            BlocksTooDeep { .. } | BracketsTooDeep { .. } | LineTooLong { .. } => codes::TOO_DEEP,
            BadDedent { .. } => codes::BAD_DEDENT,
            BadCharacter { .. } => codes::BAD_CHARACTER,
            Unclosed { .. } | UnclosedBefore { .. } => codes::UNCLOSED_BRACKET,
            MismatchedBracket { .. } => codes::MISMATCHED_BRACKET,
            LeadingZeros { .. } | BadFloat { .. } => codes::BAD_NUMBER,
            IntTooLarge { .. } => codes::INT_OVERFLOW,
            PositionalAfterKeyword { .. } => codes::POSITIONAL_AFTER_KEYWORD,
            MissingColon { .. } => codes::MISSING_COLON,
            SubscriptTarget { .. } | TupleTarget { .. } | BadTarget { .. } => codes::BAD_TARGET,
            StrayToken { .. } | DefInBlock { .. } => codes::UNEXPECTED_TOKEN,
            SliceStep { .. } | StringLiteral { .. } | Unsupported { .. } => {
                codes::UNSUPPORTED_SYNTAX
            }
            ExpectedBlock { .. } => codes::EXPECTED_BLOCK,
            Unexpected { expression, .. } => {
                if *expression {
                    codes::EXPECTED_EXPR
                } else {
                    codes::UNEXPECTED_TOKEN
                }
            }
        }
    }

    /// The offending text.
    pub fn span(&self) -> &Span {
        use SyntaxError::*;
        match self {
            NulByte { at, .. }
            | ContinuationAtEof { at }
            | TabIndent { at }
            | UnexpectedIndent { at }
            | StrayBlock { at }
            | BlocksTooDeep { at, .. }
            | BracketsTooDeep { at, .. }
            | LineTooLong { at, .. }
            | BadDedent { at, .. }
            | BadCharacter { at, .. }
            | Unclosed { at, .. }
            | UnclosedBefore { at, .. }
            | MismatchedBracket { at, .. }
            | LeadingZeros { at, .. }
            | IntTooLarge { at }
            | BadFloat { at }
            | PositionalAfterKeyword { at, .. }
            | MissingColon { at, .. }
            | SubscriptTarget { at }
            | TupleTarget { at }
            | BadTarget { at }
            | StrayToken { at, .. }
            | SliceStep { at }
            | StringLiteral { at }
            | Unsupported { at, .. }
            | ExpectedBlock { at, .. }
            | DefInBlock { at }
            | Unexpected { at, .. } => at,
        }
    }
}

impl From<SyntaxError> for Diagnostic {
    /// The one place where a syntax error gets its code, labels, notes and help: the code,
    /// message and span here, the rest from the function of its family (every variant is in
    /// exactly one).
    fn from(e: SyntaxError) -> Diagnostic {
        use SyntaxError::*;
        let d = Diagnostic::new(e.code(), e.to_string(), e.span().clone());
        match e {
            NulByte { .. }
            | ContinuationAtEof { .. }
            | TabIndent { .. }
            | UnexpectedIndent { .. }
            | StrayBlock { .. }
            | BlocksTooDeep { .. }
            | BracketsTooDeep { .. }
            | LineTooLong { .. }
            | BadDedent { .. } => layout_parts(e, d),
            BadCharacter { .. }
            | Unclosed { .. }
            | UnclosedBefore { .. }
            | MismatchedBracket { .. }
            | LeadingZeros { .. }
            | IntTooLarge { .. }
            | BadFloat { .. } => token_parts(e, d),
            PositionalAfterKeyword { .. }
            | MissingColon { .. }
            | SubscriptTarget { .. }
            | TupleTarget { .. }
            | BadTarget { .. }
            | StrayToken { .. }
            | SliceStep { .. }
            | StringLiteral { .. }
            | Unsupported { .. }
            | ExpectedBlock { .. }
            | DefInBlock { .. }
            | Unexpected { .. } => grammar_parts(e, d),
        }
    }
}

/// The labels, notes and help of a problem of the file's layout: its bytes, lines, indentation
/// and nesting.
fn layout_parts(e: SyntaxError, d: Diagnostic) -> Diagnostic {
    use SyntaxError::*;
    match e {
        NulByte { count, .. } => d
            .with_label("a NUL byte (shown as `?`)")
            .with_note("Python rejects a file with a NUL byte anywhere, even in a comment")
            .with_note_opt(
                (count > 1).then(|| format!("the file has {count} NUL bytes; this is the first")),
            ),
        ContinuationAtEof { .. } => d
            .with_label("this `\\` continues the line, but the file ends")
            .with_help("remove the backslash"),
        TabIndent { .. } => d
            .with_label("tab here")
            .with_help("indent with spaces only; tabs are not allowed in kernel source"),
        UnexpectedIndent { .. } => d
            .with_label("this line is indented, but no block was opened")
            .with_help("only the lines after a `def` or `for` header are indented"),
        StrayBlock { .. } => d.with_label("this block belongs to no header"),
        BlocksTooDeep { max, .. } => d
            .with_label(format!("more than {max} nested blocks"))
            .with_note(format!(
                "a kernel nests at most {max} blocks; deeper lines are not reported again"
            ))
            .with_help("split the kernel into smaller loops"),
        BracketsTooDeep { max, .. } => d
            .with_label(format!("more than {max} nested brackets"))
            .with_help("split the expression into several statements"),
        LineTooLong { max, .. } => d
            .with_label(format!("more than {max} tokens on this line"))
            .with_help("split the expression into several statements"),
        BadDedent { col, enclosing, .. } => d
            .with_label(format!(
                "this line is indented by {col}, which matches no enclosing block"
            ))
            .with_help(format!(
                "indent it like one of the enclosing blocks (by {enclosing})"
            )),
        // The other families: [`Diagnostic::from`] gives each to its own function.
        _ => d,
    }
}

/// The labels, notes and help of a token that does not lex: a bad character, a bracket, a
/// number.
fn token_parts(e: SyntaxError, d: Diagnostic) -> Diagnostic {
    use SyntaxError::*;
    match e {
        BadCharacter { text, .. } => d
            .with_label(if text.chars().count() == 1 {
                "this character cannot start a token"
            } else {
                "these characters do not form a token"
            })
            .with_help_opt(if text.starts_with('\\') {
                Some("a `\\` continues a line only when it is the last character")
            } else if text.starts_with("\"\"\"") || text.starts_with("'''") {
                Some("this triple-quoted string is never closed")
            } else if text.starts_with(['"', '\'']) {
                Some("string literals must end on the line they start")
            } else {
                None
            }),
        Unclosed {
            open,
            closer,
            open_at,
            more,
            ..
        } => d
            .with_label(format!("expected {closer} here"))
            .with_secondary(open_at, format!("this {open} is never closed"))
            .with_note_opt(
                (more > 0).then(|| format!("{more} more enclosing brackets are also unclosed")),
            ),
        UnclosedBefore {
            open,
            closer,
            close,
            open_at,
            ..
        } => d
            .with_label(format!("expected {closer} before this {close}"))
            .with_secondary(open_at, format!("this {open} is never closed")),
        MismatchedBracket {
            expected,
            open,
            open_at,
            ..
        } => d
            .with_label(format!("expected {expected}"))
            .with_secondary(open_at, format!("to close this {open}")),
        LeadingZeros { digits, .. } => d
            .with_label("leading zero")
            .with_help(format!("write `{}`", digits.trim_start_matches('0'))),
        IntTooLarge { .. } => d
            .with_label(format!("larger than {}", i64::MAX))
            .with_note("integers are 64-bit signed"),
        BadFloat { .. } => d.with_label("not a number"),
        // The other families: [`Diagnostic::from`] gives each to its own function.
        _ => d,
    }
}

/// The labels, notes and help of a problem the parser finds: a statement or an expression of
/// the wrong form.
fn grammar_parts(e: SyntaxError, d: Diagnostic) -> Diagnostic {
    use SyntaxError::*;
    match e {
        PositionalAfterKeyword { keyword_at, .. } => d
            .with_label("positional argument")
            .with_secondary(keyword_at, "after this keyword argument")
            .with_help("put every positional argument first"),
        MissingColon { header, .. } => d
            .with_label("`:` expected here")
            .with_help(format!("a `{header}` header ends with `:`")),
        SubscriptTarget { .. } => d
            .with_label("not a plain name")
            .with_help("only `name = ...` and `name[...] = ...` are assignments"),
        TupleTarget { .. } => d
            .with_label("not a name")
            .with_help("write `a, b = ...` with names, then update tiles one by one"),
        BadTarget { .. } => d
            .with_label("not a name or a subscript of a name")
            .with_help("only `name = ...` and `name[...] = ...` are assignments"),
        StrayToken { .. } => d.with_label("unexpected here"),
        SliceStep { .. } => d
            .with_label("a second `:` in a slice")
            .with_help("a slice is `lo:hi`, with either bound optional"),
        StringLiteral { .. } => d.with_label("string literal"),
        Unsupported { op, .. } => d
            .with_label("not supported")
            .with_help(unsupported_help(&op)),
        ExpectedBlock { .. } => d
            .with_label("an indented line was expected here")
            .with_help("the body of a `def` or `for` is indented under its header"),
        DefInBlock { .. } => d
            .with_label("a kernel cannot be defined here")
            .with_help("kernels are defined at the top level of the file"),
        Unexpected {
            label,
            operator_missing,
            ..
        } => d.with_label(label).with_help_opt(
            operator_missing.then_some("is an operator or a `,` missing before it?"),
        ),
        // The other families: [`Diagnostic::from`] gives each to its own function.
        _ => d,
    }
}
