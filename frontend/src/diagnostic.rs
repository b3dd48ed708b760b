//! Front-end errors, and their conversion to codespan-reporting diagnostics.
//!
//! Every stage of the front end (lexer, parser, checks, lowering) reports problems in the kernel's
//! source as [`Error`] values: a stable code, a message, a primary span and optional secondary
//! labels and help notes. They become `codespan_reporting` diagnostics only at the edge, in
//! [`Error::to_diagnostic`], and are rendered by [`render`].
//!
//! Invariants: every span is a byte range into the file being compiled, and the primary span is the
//! offending text itself (not its enclosing statement) wherever there is such text.

use crate::ast::Span;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::WriteColor};

/// One problem in the kernel's source.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// A stable code such as `E0101`; see the table in `codes`.
    pub code: &'static str,
    pub message: String,
    /// The offending text.
    pub span: Span,
    /// A short text shown under the primary span (may be empty).
    pub label: String,
    /// Secondary labels: related places, such as an earlier binding.
    pub secondary: Vec<(Span, String)>,
    /// `help:` and `note:` lines, each written with its prefix.
    pub notes: Vec<String>,
}

impl Error {
    pub fn new(code: &'static str, message: impl Into<String>, span: Span) -> Self {
        Error {
            code,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Sets the text under the primary span.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a secondary label at another place in the file.
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }

    /// Adds a `help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.notes.push(format!("help: {}", help.into()));
        self
    }

    /// Adds a `note:` line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(format!("note: {}", note.into()));
        self
    }

    pub fn to_diagnostic<FileId: Copy>(&self, file: FileId) -> Diagnostic<FileId> {
        let mut labels =
            vec![Label::primary(file, self.span.clone()).with_message(self.label.clone())];
        labels.extend(
            self.secondary
                .iter()
                .map(|(span, msg)| Label::secondary(file, span.clone()).with_message(msg.clone())),
        );
        Diagnostic::error()
            .with_code(self.code)
            .with_message(self.message.clone())
            .with_labels(labels)
            .with_notes(self.notes.clone())
    }
}

/// Renders `errors` against the source, in source order, the way `nkc` prints them.
pub fn render(
    writer: &mut dyn WriteColor,
    file_name: &str,
    source: &str,
    errors: &[Error],
) -> std::io::Result<()> {
    let file = SimpleFile::new(file_name, source);
    let config = term::Config::default();
    let mut sorted: Vec<&Error> = errors.iter().collect();
    sorted.sort_by_key(|e| (e.span.start, e.span.end));
    for error in sorted {
        let error = clamp_spans(error, source.len());
        term::emit_to_write_style(writer, &config, &file, &error.to_diagnostic(()))
            .map_err(std::io::Error::other)?;
    }
    Ok(())
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
