//! Backend errors: what a kernel asks of the machine that the backend cannot give it.
//!
//! Every error in a kernel is a [`BackendError`] with a stable code (`E0500`–`E0599`, table below)
//! and, where one exists, the span of the source text responsible; the driver renders it as a
//! diagnostic (exit code 1). A backend error is never a panic and never a silent overlap.
//!
//! | code | problem |
//! | --- | --- |
//! | `E0501` | the kernel's SBUF tensors do not fit in SBUF |
//! | `E0502` | more PSUM banks are needed at once than the 8 PSUM has |
//! | `E0503` | a PSUM tile larger than one bank (a PSUM tile never crosses a bank) |
//! | `E0504` | an IR shape the backend does not lower (the message says which; e.g. a multi-buffered HBM scratch tensor) |
//! | `E0599` | an internal error of the backend (a bug in nkc, not in the kernel) |

use penguin::SrcSpan;
use std::fmt;

/// SBUF overflow.
pub const SBUF_OVERFLOW: &str = "E0501";
/// Too many PSUM banks.
pub const PSUM_OVERFLOW: &str = "E0502";
/// A PSUM tile across a bank.
pub const PSUM_TILE_TOO_LARGE: &str = "E0503";
/// Something the backend does not lower.
pub const UNSUPPORTED: &str = "E0504";
/// A bug in the backend.
pub const INTERNAL: &str = "E0599";

#[derive(Clone, Debug, PartialEq)]
pub struct BackendError {
    pub code: &'static str,
    pub message: String,
    pub span: Option<SrcSpan>,
    pub label: String,
    pub notes: Vec<String>,
}

impl BackendError {
    pub fn new(code: &'static str, message: impl Into<String>, span: Option<SrcSpan>) -> Self {
        BackendError {
            code,
            message: message.into(),
            span,
            label: String::new(),
            notes: Vec::new(),
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn internal(message: impl Into<String>) -> Self {
        BackendError::new(INTERNAL, message, None)
    }

    pub fn is_internal(&self) -> bool {
        self.code == INTERNAL
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)?;
        for n in &self.notes {
            write!(f, "\n  note: {n}")?;
        }
        Ok(())
    }
}
