//! [`Diagnostic`]: the one form in which every stage of nkc reports a problem of a kernel.
//!
//! Each stage keeps its own error enum, whose variants carry the data of the problem (names,
//! shapes, spans, counts); each converts its enum to a `Diagnostic` in one place
//! (`to_diagnostic`), and the driver renders diagnostics with codespan at the edge
//! (`frontend::diagnostic::render`). A `Diagnostic` is plain data, so that the stages need no
//! rendering machinery of their own.
//!
//! Invariants: `code` is a stable code of the table in `frontend/src/codes.rs` (or its ranges);
//! every span is a byte range into the file being compiled (`0..0` when the stage knows no place);
//! each note is written with its prefix (`help: …`, `note: …`).

use std::ops::Range;

/// A byte range into the source file.
pub type Span = Range<usize>;

/// One problem in a kernel, as it is rendered.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// A stable code such as `E0101`.
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

impl Diagnostic {
    pub fn new(code: &'static str, message: impl Into<String>, span: Span) -> Self {
        Diagnostic {
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

    /// Adds a `help:` line when there is one.
    pub fn with_help_opt(self, help: Option<impl Into<String>>) -> Self {
        match help {
            Some(h) => self.with_help(h),
            None => self,
        }
    }

    /// Adds a `note:` line when there is one.
    pub fn with_note_opt(self, note: Option<impl Into<String>>) -> Self {
        match note {
            Some(n) => self.with_note(n),
            None => self,
        }
    }
}
