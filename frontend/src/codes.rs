//! Every diagnostic code of the front end, in one place.
//!
//! The codes are stable: tests and the `tests/ui` corpus name them. A code is never reused for a
//! different problem.
//!
//! | range | owner |
//! | --- | --- |
//! | `E0001`–`E0099` | syntax: the lexer (`lexer.rs`) and the parser (`parser.rs`) |
//! | `E0100`– | semantic checks (added by the checks, in this same file) |
//!
//! Syntax codes:
//!
//! | code | problem |
//! | --- | --- |
//! | `E0001` | a character that cannot start a token |
//! | `E0002` | a tab in the indentation of a line |
//! | `E0003` | a dedent to a column that matches no enclosing block |
//! | `E0004` | an indented line where no block was opened |
//! | `E0005` | an unclosed `(` or `[` |
//! | `E0006` | a closing bracket that does not match the open one |
//! | `E0007` | an integer literal that does not fit in 64 bits |
//! | `E0008` | brackets or blocks nested too deeply |
//! | `E0009` | a malformed number literal |
//! | `E0010` | an unexpected token (the general syntax error) |
//! | `E0011` | a missing `:` after a `def` or `for` header |
//! | `E0012` | a missing indented block after a header |
//! | `E0013` | a missing expression |
//! | `E0014` | an assignment to something that is not a name or a subscript of a name |
//! | `E0015` | a positional argument after a keyword argument |
//! | `E0016` | syntax that Python has but the kernel language does not (strings, `**`, `==`, ...) |

/// A character that cannot start a token.
pub const BAD_CHARACTER: &str = "E0001";
/// A tab in the indentation of a line.
pub const TAB_INDENT: &str = "E0002";
/// A dedent to a column that matches no enclosing block.
pub const BAD_DEDENT: &str = "E0003";
/// An indented line where no block was opened.
pub const UNEXPECTED_INDENT: &str = "E0004";
/// An unclosed `(` or `[`.
pub const UNCLOSED_BRACKET: &str = "E0005";
/// A closing bracket that does not match the open one.
pub const MISMATCHED_BRACKET: &str = "E0006";
/// An integer literal that does not fit in 64 bits.
pub const INT_OVERFLOW: &str = "E0007";
/// Brackets or blocks nested too deeply.
pub const TOO_DEEP: &str = "E0008";
/// A malformed number literal.
pub const BAD_NUMBER: &str = "E0009";
/// An unexpected token: the general syntax error.
pub const UNEXPECTED_TOKEN: &str = "E0010";
/// A missing `:` after a `def` or `for` header.
pub const MISSING_COLON: &str = "E0011";
/// A missing indented block after a header.
pub const EXPECTED_BLOCK: &str = "E0012";
/// A missing expression.
pub const EXPECTED_EXPR: &str = "E0013";
/// An assignment to something that is not a name or a subscript of a name.
pub const BAD_TARGET: &str = "E0014";
/// A positional argument after a keyword argument.
pub const POSITIONAL_AFTER_KEYWORD: &str = "E0015";
/// Python syntax that the kernel language does not have.
pub const UNSUPPORTED_SYNTAX: &str = "E0016";

// Semantic checks: E0100 and up, below this line.
