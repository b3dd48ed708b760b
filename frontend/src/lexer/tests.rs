//! Unit tests of the lexer: tokens, spans, layout and lexical diagnostics.

use super::{lex, Token, MAX_NESTING};
use crate::codes;
use crate::diagnostic::Error;

fn tokens(src: &str) -> Vec<Token<'_>> {
    let (tokens, errors) = lex(src);
    assert!(errors.is_empty(), "{src:?}: {errors:#?}");
    tokens.into_iter().map(|(t, _)| t).collect()
}

/// The 1-based line of byte `pos`.
fn line(src: &str, pos: usize) -> usize {
    src[..pos].matches('\n').count() + 1
}

fn codes_and_lines(src: &str, errors: &[Error]) -> Vec<(&'static str, usize)> {
    errors
        .iter()
        .map(|e| (e.code, line(src, e.span.start)))
        .collect()
}

use Token::*;

#[test]
fn names_keywords_and_operators() {
    assert_eq!(
        tokens("x += f(a, k=None) // 2 % b -> c"),
        vec![
            Name("x"),
            PlusAssign,
            Name("f"),
            LParen,
            Name("a"),
            Comma,
            Name("k"),
            Assign,
            Token::None,
            RParen,
            DoubleSlash,
            Int(2),
            Percent,
            Name("b"),
            Arrow,
            Name("c"),
            Newline,
            Eof
        ]
    );
    assert_eq!(
        tokens("def for in return pass True False define format_"),
        vec![
            Def,
            For,
            In,
            Return,
            Pass,
            True,
            False,
            Name("define"),
            Name("format_"),
            Newline,
            Eof
        ]
    );
    assert_eq!(
        tokens("a -= b *= c /= d"),
        vec![
            Name("a"),
            MinusAssign,
            Name("b"),
            StarAssign,
            Name("c"),
            SlashAssign,
            Name("d"),
            Newline,
            Eof
        ]
    );
}

#[test]
fn number_literals() {
    assert_eq!(
        tokens("0 7 1_000_000 1.0 .5 1e-3 2.5E+2 1. 3e4 1_0.2_5"),
        vec![
            Int(0),
            Int(7),
            Int(1_000_000),
            Float(1.0),
            Float(0.5),
            Float(1e-3),
            Float(250.0),
            Float(1.0),
            Float(3e4),
            Float(10.25),
            Newline,
            Eof
        ]
    );
    // `x.shape[0]` is an attribute, not a float; `1.e` is not a float exponent.
    assert_eq!(
        tokens("x.shape[0]"),
        vec![
            Name("x"),
            Dot,
            Name("shape"),
            LBracket,
            Int(0),
            RBracket,
            Newline,
            Eof
        ]
    );
    assert_eq!(tokens("9223372036854775807")[0], Int(i64::MAX));
    assert_eq!(
        tokens("1.e5 1_0e1_0 0.0")[..3],
        [Float(1e5), Float(1e11), Float(0.0)]
    );
    // Leading zeros are Python 2 octal: a diagnostic, as in Python 3. All-zero is fine.
    assert_eq!(tokens("00 0_0")[..2], [Int(0), Int(0)]);
    let (_, errors) = lex("x = 017\n");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, codes::BAD_NUMBER);
}

#[test]
fn integer_overflow_is_a_diagnostic() {
    let src = "x = 1\ny = 9223372036854775808\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::INT_OVERFLOW, 2)]
    );
    assert_eq!(&src[errors[0].span.clone()], "9223372036854775808");
    assert!(tokens.iter().any(|(t, _)| *t == Token::Error));
}

#[test]
fn spans_are_exact() {
    let src = "x = nl.load(a)\n";
    let (tokens, _) = lex(src);
    let texts: Vec<&str> = tokens.iter().map(|(_, s)| &src[s.clone()]).collect();
    assert_eq!(
        texts,
        vec!["x", "=", "nl", ".", "load", "(", "a", ")", "\n", ""]
    );
    assert_eq!(tokens.last().map(|(_, s)| s.clone()), Some(15..15));
}

#[test]
fn indent_and_dedent() {
    let src = "def k(a):\n    for i in r:\n        x = 1\n    return x\n";
    assert_eq!(
        tokens(src),
        vec![
            Def,
            Name("k"),
            LParen,
            Name("a"),
            RParen,
            Colon,
            Newline,
            Indent,
            For,
            Name("i"),
            In,
            Name("r"),
            Colon,
            Newline,
            Indent,
            Name("x"),
            Assign,
            Int(1),
            Newline,
            Dedent,
            Return,
            Name("x"),
            Newline,
            Dedent,
            Eof
        ]
    );
}

#[test]
fn blank_and_comment_lines_produce_nothing() {
    let src = "# header\n\ndef k(a):  # trailing\n\n      # odd comment\n    x = 1\n\n   \n    return x\n# end";
    let with = tokens(src);
    let without = tokens("def k(a):\n    x = 1\n    return x\n");
    assert_eq!(with, without);
}

#[test]
fn no_trailing_newline() {
    assert_eq!(
        tokens("def k(a):\n    return a"),
        vec![
            Def,
            Name("k"),
            LParen,
            Name("a"),
            RParen,
            Colon,
            Newline,
            Indent,
            Return,
            Name("a"),
            Newline,
            Dedent,
            Eof
        ]
    );
    assert_eq!(tokens(""), vec![Eof]);
    assert_eq!(tokens("\n\n# only a comment"), vec![Eof]);
}

#[test]
fn continuation_inside_brackets_and_after_backslash() {
    let joined = tokens("x = f(a, b[1, 2], c)\n");
    assert_eq!(tokens("x = f(a,\n      b[1,\n  2],\n   c\n)\n"), joined);
    assert_eq!(tokens("x = f(a, \\\n b[1, 2], c)\n"), joined);
    assert_eq!(tokens("x = f(a, b[1, 2], c)\r\n"), joined);
}

#[test]
fn tab_in_indentation() {
    let src = "def k(a):\n\tx = 1\n\treturn x\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::TAB_INDENT, 2), (codes::TAB_INDENT, 3)]
    );
    assert_eq!(errors[0].span, 10..11);
    assert!(errors[0].notes.iter().any(|n| n.starts_with("help:")));
    // The tab still indents, so the block structure survives.
    assert!(tokens.iter().any(|(t, _)| *t == Indent));
    // A tab after the indentation is plain whitespace.
    let (_, errors) = lex("x =\t1\n");
    assert!(errors.is_empty());
}

#[test]
fn bad_dedent() {
    let src =
        "def k(a):\n    for i in r:\n        x = 1\n      y = 2\n        z = 3\n    return z\n";
    let (tokens, errors) = lex(src);
    assert_eq!(codes_and_lines(src, &errors), vec![(codes::BAD_DEDENT, 4)]);
    // The stray line stays in the inner block; the next ones go on normally.
    let kinds: Vec<Token> = tokens.into_iter().map(|(t, _)| t).collect();
    assert_eq!(kinds.iter().filter(|t| **t == Indent).count(), 2);
    assert_eq!(kinds.iter().filter(|t| **t == Dedent).count(), 2);
}

#[test]
fn unexpected_indent() {
    let src = "x = 1\n    y = 2\n    z = 3\nw = 4\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::UNEXPECTED_INDENT, 2)]
    );
    assert!(!tokens.iter().any(|(t, _)| matches!(t, Indent | Dedent)));
}

#[test]
fn bad_character_becomes_an_error_token() {
    let src = "x = a $ b\ny = ?\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::BAD_CHARACTER, 1), (codes::BAD_CHARACTER, 2)]
    );
    assert_eq!(errors[0].span, 6..7);
    let kinds: Vec<Token> = tokens.into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        &kinds[..6],
        &[Name("x"), Assign, Name("a"), Error, Name("b"), Newline]
    );
}

#[test]
fn unclosed_bracket_is_closed_at_the_end_of_its_line() {
    let src = "def k(a):\n    x = f(a[1, 2]\n    y = 3\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::UNCLOSED_BRACKET, 2)]
    );
    assert_eq!(errors[0].secondary[0].0, 19..20);
    let kinds: Vec<Token> = tokens.into_iter().map(|(t, _)| t).collect();
    let close = kinds
        .iter()
        .rposition(|t| *t == RParen)
        .expect("a closing `)`");
    assert_eq!(kinds[close + 1], Newline);
    assert_eq!(kinds[close + 2], Name("y"));
    // At the end of the file too.
    let src = "x = f(a";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::UNCLOSED_BRACKET, 1)]
    );
    assert_eq!(tokens[5].0, RParen);
}

#[test]
fn unclosed_bracket_in_a_header() {
    let src = "def k(a):\n    for i in range(4:\n        x = 1\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::UNCLOSED_BRACKET, 2)]
    );
    assert_eq!(errors[0].span, 30..30);
    // The brackets are closed before the header's `:`, so the header still parses.
    let kinds: Vec<Token> = tokens.into_iter().map(|(t, _)| t).collect();
    assert_eq!(&kinds[13..18], &[Int(4), RParen, Colon, Newline, Indent]);
}

#[test]
fn mismatched_and_missing_inner_closers() {
    let src = "x = f(a]\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::MISMATCHED_BRACKET, 1)]
    );
    assert_eq!(tokens[5].0, RParen);
    let src = "x = f(a[1)\n";
    let (tokens, errors) = lex(src);
    assert_eq!(
        codes_and_lines(src, &errors),
        vec![(codes::UNCLOSED_BRACKET, 1)]
    );
    let kinds: Vec<Token> = tokens.into_iter().map(|(t, _)| t).collect();
    assert_eq!(&kinds[7..10], &[RBracket, RParen, Newline]);
}

#[test]
fn nesting_limit() {
    let src = format!(
        "x = {}\n",
        "(".repeat(MAX_NESTING + 1) + &")".repeat(MAX_NESTING + 1)
    );
    let (tokens, errors) = lex(&src);
    assert_eq!(codes_and_lines(&src, &errors), vec![(codes::TOO_DEEP, 1)]);
    let kinds: Vec<Token> = tokens.into_iter().map(|(t, _)| t).collect();
    assert_eq!(kinds, vec![Error, Newline, Eof]);
}

#[test]
fn unsupported_python_tokens_are_single_tokens() {
    assert_eq!(
        tokens("a ** b == 'c'"),
        vec![
            Name("a"),
            DoubleStar,
            Name("b"),
            Compare("=="),
            Str("'c'"),
            Newline,
            Eof
        ]
    );
}

#[test]
fn triple_quoted_strings_span_lines() {
    let src = "def k(a):\n    \"\"\"Adds.\n\n    Two lines, a \\\"\"\" quote.\n    \"\"\"\n    return a\n";
    let kinds = tokens(src);
    assert_eq!(
        kinds.iter().filter(|t| matches!(t, Str(_))).count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|t| **t == Indent).count(), 1);
    // Never closed: one error, at the opening quotes.
    let (_, errors) = lex("x = '''open\n\n");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].span.start, 4);
}

#[test]
fn closed_brackets_continue_over_any_indentation() {
    // Valid Python: continuation lines may be indented less than the statement, and a header's
    // annotation may be split after its `:`.
    let src = "def k(a:\n        t, b: t):\n    x = f(\na, b)\n    return x\n";
    let kinds = tokens(src);
    assert_eq!(kinds.iter().filter(|t| **t == Newline).count(), 3);
}

#[test]
fn radix_literals_bitwise_assignments_and_tilde() {
    assert_eq!(
        tokens("x = 0xD251_1F53 + 0o17 + 0B101 + 0x0"),
        vec![
            Name("x"),
            Assign,
            Int(0xD251_1F53),
            Plus,
            Int(0o17),
            Plus,
            Int(0b101),
            Plus,
            Int(0),
            Newline,
            Eof
        ]
    );
    assert_eq!(
        tokens("x &= ~y |= z ^= w <<= v >>= u **= t"),
        vec![
            Name("x"),
            AmpAssign,
            Tilde,
            Name("y"),
            PipeAssign,
            Name("z"),
            CaretAssign,
            Name("w"),
            ShlAssign,
            Name("v"),
            ShrAssign,
            Name("u"),
            PowAssign,
            Name("t"),
            Newline,
            Eof
        ]
    );
    let src = "x = 0x1_0000_0000_0000_0000\n";
    let (_, errors) = lex(src);
    assert_eq!(codes_and_lines(src, &errors).len(), 1, "{errors:#?}");
}
