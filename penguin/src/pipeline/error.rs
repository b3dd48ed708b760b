//! [`PipelineError`]: a problem the pipeliner found in a kernel, with its source spans.
//!
//! Penguin has no diagnostics machinery of its own: an error is plain data (a code from
//! [`super::codes`], a message, a primary span with its label, labelled secondary spans and
//! notes) that the driver turns into a front-end diagnostic at the edge. Spans come from the side
//! tables of the IR (`Function::*_spans`); an IR built without spans (a test, the text form) gives
//! `None`, and the driver then reports the error without a source snippet.

use crate::entities::{Axis, Stmt, Tensor};
use crate::ir::{Function, SrcSpan, StmtKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineError {
    /// A stable code, `E04xx` (see [`super::codes`]).
    pub code: &'static str,
    pub message: String,
    /// The offending source text, when the IR knows it.
    pub span: Option<SrcSpan>,
    /// The label under the primary span (may be empty).
    pub label: String,
    /// Related places, each with its label.
    pub secondary: Vec<(SrcSpan, String)>,
    /// `note:` / `help:` lines, each written with its prefix.
    pub notes: Vec<String>,
}

impl PipelineError {
    pub fn new(code: &'static str, message: impl Into<String>, span: Option<SrcSpan>) -> Self {
        PipelineError {
            code,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a secondary label; a missing span adds nothing.
    pub fn with_secondary(mut self, span: Option<SrcSpan>, label: impl Into<String>) -> Self {
        if let Some(span) = span {
            self.secondary.push((span, label.into()));
        }
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(format!("note: {}", note.into()));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.notes.push(format!("help: {}", help.into()));
        self
    }

    /// Whether this is a bug in nkc rather than a problem of the kernel.
    pub fn is_internal(&self) -> bool {
        self.code == super::codes::INTERNAL
    }
}

/// The span of a loop's `for` header.
pub fn axis_span(func: &Function, axis: Axis) -> Option<SrcSpan> {
    func.axis_spans.get(axis).copied().flatten()
}

/// The span that best shows a statement: the `for` header of a loop statement (its annotations
/// are on the range call there), the statement itself otherwise.
pub fn stmt_span(func: &Function, stmt: Stmt) -> Option<SrcSpan> {
    if let Some(StmtKind::Loop(axis)) = func.stmts.get(stmt).map(|s| &s.kind) {
        if let Some(span) = axis_span(func, *axis) {
            return Some(span);
        }
    }
    func.stmt_spans.get(stmt).copied().flatten()
}

/// The span where a tensor is made.
pub fn tensor_span(func: &Function, tensor: Tensor) -> Option<SrcSpan> {
    func.tensor_spans.get(tensor).copied().flatten()
}
