//! The edge of nkc's diagnostics: [`Diagnostic`]s (of every stage) rendered with
//! codespan-reporting.
//!
//! Each stage reports problems as its own error enum, whose variants carry the data: the lexer and
//! the parser [`crate::syntax_error::SyntaxError`], the semantic checks `check::error::CheckError`,
//! the pipeliner `penguin::pipeline::PipelineError`, the backend `backend::BackendError`. Each
//! converts to a [`Diagnostic`] (`vocab::Diagnostic`: a stable code, a message, a primary span
//! and optional secondary labels and notes) in one place. Diagnostics become
//! `codespan_reporting` ones only here, in [`to_codespan`], and are rendered by [`render`];
//! [`Error`] is the front end's older name for [`Diagnostic`].
//!
//! Invariants: every span is a byte range into the file being compiled, and the primary span is the
//! offending text itself (not its enclosing statement) wherever there is such text.

use crate::ast::Span;
use codespan_reporting::diagnostic::Label;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::WriteColor};

pub use vocab::Diagnostic;

/// The front end's name for a [`Diagnostic`], kept for the driver and the tests.
pub type Error = Diagnostic;

/// The codespan form of `d`, against `file`: the one place where a diagnostic becomes codespan's.
pub fn to_codespan<FileId: Copy>(
    d: &Diagnostic,
    file: FileId,
) -> codespan_reporting::diagnostic::Diagnostic<FileId> {
    let mut labels = vec![Label::primary(file, d.span.clone()).with_message(d.label.clone())];
    labels.extend(
        d.secondary
            .iter()
            .map(|(span, msg)| Label::secondary(file, span.clone()).with_message(msg.clone())),
    );
    codespan_reporting::diagnostic::Diagnostic::error()
        .with_code(d.code)
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.clone())
}

/// The most diagnostics printed for one file; the rest are counted in a final note, as compilers
/// stop after an error limit, so that no file can make nkc print without bound.
pub const MAX_DIAGNOSTICS: usize = 20;

/// The final note after [`MAX_DIAGNOSTICS`] errors, when `total` were found.
pub fn aborting_note(total: usize) -> String {
    format!(
        "aborting after {MAX_DIAGNOSTICS} errors ({} more not shown)",
        penguin::listing::thousands((total - MAX_DIAGNOSTICS) as u64)
    )
}

/// Renders `errors` against the source, in source order, the way `nkc` prints them: the first
/// [`MAX_DIAGNOSTICS`], then a note counting the others.
pub fn render(
    writer: &mut dyn WriteColor,
    file_name: &str,
    source: &str,
    errors: &[Error],
) -> std::io::Result<()> {
    let shown = printable(source);
    let file = SimpleFile::new(file_name, shown.as_ref());
    let config = term::Config::default();
    let mut sorted: Vec<&Error> = errors.iter().collect();
    sorted.sort_by_key(|e| (e.span.start, e.span.end));
    for error in sorted.iter().take(MAX_DIAGNOSTICS) {
        // A diagnostic in another file of the kernel's package, against that file.
        if let Some((name, text, local)) = in_imported_file(error, source.len()) {
            let shown = printable(&text).into_owned();
            let other = SimpleFile::new(name, shown.as_str());
            let local = clamp_spans(&local, text.len());
            term::emit_to_write_style(writer, &config, &other, &to_codespan(&local, ()))
                .map_err(std::io::Error::other)?;
            continue;
        }
        let error = clamp_spans(error, source.len());
        term::emit_to_write_style(writer, &config, &file, &to_codespan(&error, ()))
            .map_err(std::io::Error::other)?;
    }
    if sorted.len() > MAX_DIAGNOSTICS {
        let note = codespan_reporting::diagnostic::Diagnostic::note()
            .with_message(aborting_note(sorted.len()));
        term::emit_to_write_style(writer, &config, &file, &note).map_err(std::io::Error::other)?;
    }
    Ok(())
}

/// When `error`'s primary span lies past the kernel's file (of `len` bytes), in a file the kernel
/// imported (`check::package_data`): that file's name and text, and the diagnostic with its spans
/// in that file (secondary labels elsewhere dropped).
pub fn in_imported_file(error: &Error, len: usize) -> Option<(String, std::rc::Rc<str>, Error)> {
    if error.span.start <= len {
        return None;
    }
    let file = crate::locate(error.span.start)?;
    let inside = |s: &Span| s.start >= file.base && s.end <= file.base + file.text.len();
    let shift = |s: &Span| s.start - file.base..s.end - file.base;
    let mut local = error.clone();
    local.span = shift(&(error.span.start..error.span.end.max(error.span.start)));
    local.secondary = (error.secondary.iter())
        .filter(|(s, _)| inside(s))
        .map(|(s, m)| (shift(s), m.clone()))
        .collect();
    Some((file.path.display().to_string(), file.text, local))
}

/// The source as diagnostics show it: every control character other than a tab, a form feed or
/// a line break becomes `?`, byte for byte (so every span still points at the same text), so that
/// no NUL, escape sequence or other control byte of a kernel reaches the terminal.
fn printable(source: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c');
    if !source.chars().any(bad) {
        return std::borrow::Cow::Borrowed(source);
    }
    std::borrow::Cow::Owned(
        source
            .chars()
            .map(|c| {
                if bad(c) {
                    // One `?` per byte of the character (C1 controls take two bytes in UTF-8).
                    "?".repeat(c.len_utf8())
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// Renders `errors` as plain text, for snapshots and for output that is not a terminal.
pub fn render_plain(file_name: &str, source: &str, errors: &[Error]) -> String {
    let mut buf = term::termcolor::NoColor::new(Vec::new());
    // Writing into a Vec cannot fail, and every span was checked to lie in `source`.
    render(&mut buf, file_name, source, errors).expect("writing diagnostics to memory");
    String::from_utf8_lossy(&buf.into_inner()).into_owned()
}

/// A copy of `error` whose spans all lie inside a source of `len` bytes, so that rendering never
/// fails on a span that points one past the end (as an unexpected end of input does).
fn clamp_spans(error: &Error, len: usize) -> Error {
    let clamp = |span: &Span| {
        let end = span.end.min(len);
        span.start.min(end)..end
    };
    let mut error = error.clone();
    error.span = clamp(&error.span);
    for (span, _) in &mut error.secondary {
        *span = clamp(span);
    }
    error
}
