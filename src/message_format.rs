//! `--message-format json`: failures as machine-readable JSON, one object per diagnostic.
//!
//! Each object (one per line on standard output, in the order the human form prints them) has
//! the fields:
//! - `type`: `"diagnostic"`;
//! - `code`: the stable code (`"E0205"`; `nkc explain CODE` prints its explanation), or `null`
//!   for an error that has none (a missing file, a bad option);
//! - `severity`: `"error"`, or `"internal_error"` for a bug in nkc (exit code 101);
//! - `message`: the one-line message;
//! - `file`: the file it is about, or `null`;
//! - `spans`: the places in the file, the primary one first: `file`, `byte_start`, `byte_end`
//!   (a half-open byte range), `line_start`, `column_start`, `line_end`, `column_end` (1-based,
//!   columns in characters), `label` (the text shown under it, maybe empty), `is_primary`;
//!   empty when the error has no place in the file;
//! - `notes` and `help`: the `note:` and `help:` lines, without their prefixes;
//! - `rendered`: the human form, as `nkc` prints it with `--color never`.
//!
//! Invariant: every byte offset lies inside the file (spans are clamped to its length), and
//! every line and column is that of its offset.

use crate::driver::{Failure, Source};
use frontend::diagnostic::{self, Diagnostic};
use serde_json::{json, Value};

/// The JSON objects of a failure, in the order the human form prints them (at most
/// [`diagnostic::MAX_DIAGNOSTICS`] diagnostics of a file, as there).
pub fn failure_json(failure: &Failure, source: Option<&Source>) -> Vec<Value> {
    match failure {
        Failure::Diagnostics(errors) => {
            let mut sorted: Vec<&Diagnostic> = errors.iter().collect();
            if source.is_some() {
                sorted.sort_by_key(|e| (e.span.start, e.span.end));
            }
            sorted
                .into_iter()
                .take(diagnostic::MAX_DIAGNOSTICS)
                .map(|d| diagnostic_json(d, source))
                .collect()
        }
        Failure::Unplaced(d) => vec![diagnostic_json(d, None)],
        Failure::User(cause) => vec![message_json("error", &cause.to_string(), source)],
        Failure::Internal(cause) => {
            vec![message_json("internal_error", &cause.to_string(), source)]
        }
    }
}

/// One diagnostic; its spans are placed in `source` when it is given.
pub fn diagnostic_json(d: &Diagnostic, source: Option<&Source>) -> Value {
    // A diagnostic in another file of the kernel's package is placed in that file.
    if let Some((name, text, local)) =
        source.and_then(|s| diagnostic::in_imported_file(d, s.text.len()))
    {
        let other = Source {
            path: std::path::PathBuf::from(name),
            text: text.to_string(),
        };
        return diagnostic_json(&local, Some(&other));
    }
    let (notes, help) = split_notes(&d.notes);
    let file = source.map(Source::display_name);
    let spans: Vec<Value> = match source {
        Some(src) => std::iter::once((&d.span, &d.label, true))
            .chain(d.secondary.iter().map(|(s, l)| (s, l, false)))
            .map(|(span, label, primary)| span_json(src, span, label, primary))
            .collect(),
        None => Vec::new(),
    };
    let rendered = match source {
        Some(src) => {
            diagnostic::render_plain(&src.display_name(), &src.text, std::slice::from_ref(d))
        }
        None => {
            let mut s = match d.code {
                "" => format!("error: {}\n", d.message),
                code => format!("error[{code}]: {}\n", d.message),
            };
            for n in &d.notes {
                s += &format!("  = {n}\n");
            }
            s
        }
    };
    json!({
        "type": "diagnostic",
        "code": if d.code.is_empty() { Value::Null } else { json!(d.code) },
        "severity": "error",
        "message": d.message,
        "file": file,
        "spans": spans,
        "notes": notes,
        "help": help,
        "rendered": rendered,
    })
}

/// An error with no code and no place (a file that cannot be read, an internal error): its
/// first line is the message, the others are notes.
fn message_json(severity: &str, msg: &str, source: Option<&Source>) -> Value {
    let mut lines = msg.lines();
    let message = lines.next().unwrap_or_default();
    let rest: Vec<String> = lines.map(|l| l.trim().to_string()).collect();
    let prefix = if severity == "error" {
        "error"
    } else {
        "error: internal compiler error"
    };
    json!({
        "type": "diagnostic",
        "code": Value::Null,
        "severity": severity,
        "message": message,
        "file": source.map(Source::display_name),
        "spans": [],
        "notes": rest,
        "help": [],
        "rendered": format!("{prefix}: {msg}\n"),
    })
}

/// The `note:` and `help:` lines of a diagnostic, without their prefixes (a line with neither
/// is a note).
fn split_notes(lines: &[String]) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let mut help = Vec::new();
    for l in lines {
        if let Some(h) = l.strip_prefix("help: ") {
            help.push(h.to_string());
        } else {
            notes.push(l.strip_prefix("note: ").unwrap_or(l).to_string());
        }
    }
    (notes, help)
}

/// One span, with its lines and columns in `src`.
fn span_json(src: &Source, span: &std::ops::Range<usize>, label: &str, primary: bool) -> Value {
    let len = src.text.len();
    let end = span.end.min(len);
    let start = span.start.min(end);
    let (line_start, column_start) = line_column(&src.text, start);
    let (line_end, column_end) = line_column(&src.text, end);
    json!({
        "file": src.display_name(),
        "byte_start": start,
        "byte_end": end,
        "line_start": line_start,
        "column_start": column_start,
        "line_end": line_end,
        "column_end": column_end,
        "label": label,
        "is_primary": primary,
    })
}

/// The 1-based line and character column of byte `at` of `text` (an offset inside a character
/// counts as that character).
pub fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..at].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_are_one_based_in_characters() {
        let t = "ab\ncé d\n";
        assert_eq!(line_column(t, 0), (1, 1));
        assert_eq!(line_column(t, 3), (2, 1));
        // `d` follows `c`, `é` (two bytes) and a space.
        assert_eq!(line_column(t, 7), (2, 4));
        assert_eq!(line_column(t, 100), (3, 1));
    }

    #[test]
    fn a_diagnostic_carries_its_code_spans_notes_and_help() {
        let src = Source {
            path: "k.nk".into(),
            text: "x = 1\ny = z\n".into(),
        };
        let d = Diagnostic::new("E0100", "cannot find `z`", 10..11)
            .with_label("not bound")
            .with_secondary(0..1, "an earlier binding")
            .with_note("names are bound by assignments")
            .with_help("did you mean `x`?");
        let v = diagnostic_json(&d, Some(&src));
        assert_eq!(v["code"], "E0100");
        assert_eq!(v["spans"][0]["line_start"], 2);
        assert_eq!(v["spans"][0]["column_start"], 5);
        assert_eq!(v["spans"][0]["is_primary"], true);
        assert_eq!(v["spans"][1]["byte_start"], 0);
        assert_eq!(v["notes"][0], "names are bound by assignments");
        assert_eq!(v["help"][0], "did you mean `x`?");
        assert!(v["rendered"].as_str().unwrap().contains("error[E0100]"));
    }
}
