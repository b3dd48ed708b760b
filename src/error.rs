//! The driver's own diagnostics: the errors a kernel can only show when it is read as Penguin IR
//! text or when it runs (`nkc run`, `nkc sim`), as one enum whose variants carry the data, and
//! their one conversion to the edge's [`Diagnostic`] ([`RunError::to_diagnostic`]), as each
//! compiler stage has its own (the front end's `CheckError`, the pipeliner's `PipelineError`, the
//! backend's `BackendError`).
//!
//! Invariant: every variant has a stable code from `frontend::codes`, and its primary span is a
//! byte range of the file the user gave (`0..0` when nothing in the file is to blame).

use frontend::codes;
use std::ops::Range;
use vocab::diagnostic::Diagnostic;

/// An error the driver finds in the kernel (exit code 1).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// E0050: a `.pir` file that is not Penguin IR text.
    #[error("invalid Penguin IR: {message}")]
    PenguinSyntax { message: String, at: Range<usize> },
    /// E0051: a `.pir` file that reads but breaks an invariant of the verifier.
    #[error("the Penguin IR of `{function}` does not verify ({} error(s))", errors.len())]
    PenguinInvalid {
        function: String,
        errors: Vec<String>,
    },
    /// E0051 too: a `.pir` instruction that certainly reads an element nothing wrote before it
    /// ([`penguin::uninit`]), at the instruction.
    #[error("the Penguin IR of `{function}` does not verify: this reads part of `{tensor}` that was never written")]
    PenguinUnwrittenRead {
        function: String,
        tensor: String,
        at: Range<usize>,
        element: (u64, u64),
    },
    /// E0900: a read of HBM scratch that nothing wrote, at the statement. `element` is the first
    /// such element when it is known before running; `detail` what the engine that ran into it
    /// says.
    #[error("this reads part of `{tensor}` that was never written")]
    UnwrittenRead {
        tensor: String,
        at: Range<usize>,
        element: Option<(u64, u64)>,
        detail: Option<String>,
    },
    /// E0903: an indirect load or store (gather, scatter) whose index tile holds a value that is
    /// not a row of the HBM tensor it indexes, at the statement; `detail` is the engine's message.
    #[error("an index of this indirect access is not a row of `{tensor}`")]
    IndexOutOfRange {
        tensor: String,
        at: Range<usize>,
        detail: String,
    },
    /// E0900 at run time: a statement that would store undefined values (memory never written,
    /// or values computed from it) of `tensor` into the HBM tensor `dest`, at the statement;
    /// `detail` is what the interpreter says (instruction, element, iteration).
    #[error("this stores undefined values of `{tensor}` into `{dest}`")]
    UndefinedStore {
        tensor: String,
        dest: String,
        at: Range<usize>,
        detail: String,
    },
    /// E0901: HBM tensors larger than `nkc run` holds, at the largest.
    #[error("`{kernel}` is too large to run: the kernel's HBM tensors hold {elems} elements, more than the {limit} `nkc run` holds")]
    TooLargeToRun {
        kernel: String,
        /// The element count, or `2^64 or more`.
        elems: String,
        limit: u64,
        largest: String,
        shape: Vec<u64>,
        at: Range<usize>,
    },
    /// E0902: a run past `--max-cycles`, at the loop that runs most often (with its count).
    #[error("`{kernel}` runs longer than the limit of {max_cycles} cycles (--max-cycles)")]
    CycleLimit {
        kernel: String,
        max_cycles: u64,
        busiest: Option<(Range<usize>, u64)>,
        detail: String,
    },
    /// E0901 or E0902 from the simulator of a program given as pseudo-ISA text (`nkc sim`), which
    /// has no spans: the file and the simulator's message.
    #[error("{file}: {message}")]
    Program {
        code: &'static str,
        file: String,
        message: String,
    },
}

impl RunError {
    /// The error's stable code.
    pub fn code(&self) -> &'static str {
        match self {
            RunError::PenguinSyntax { .. } => codes::PENGUIN_SYNTAX,
            RunError::PenguinInvalid { .. } | RunError::PenguinUnwrittenRead { .. } => {
                codes::PENGUIN_INVALID
            }
            RunError::UnwrittenRead { .. } | RunError::UndefinedStore { .. } => {
                codes::UNINITIALISED_READ
            }
            RunError::IndexOutOfRange { .. } => codes::INDEX_OUT_OF_RANGE,
            RunError::TooLargeToRun { .. } => codes::TOO_LARGE_TO_RUN,
            RunError::CycleLimit { .. } => codes::CYCLE_LIMIT,
            RunError::Program { code, .. } => code,
        }
    }

    /// The one place where a driver error gets its span, labels, notes and help.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let at = match self {
            RunError::PenguinSyntax { at, .. }
            | RunError::PenguinUnwrittenRead { at, .. }
            | RunError::UnwrittenRead { at, .. }
            | RunError::IndexOutOfRange { at, .. }
            | RunError::UndefinedStore { at, .. }
            | RunError::TooLargeToRun { at, .. } => at.clone(),
            RunError::CycleLimit { busiest, .. } => busiest.as_ref().map_or(0..0, |b| b.0.clone()),
            RunError::PenguinInvalid { .. } | RunError::Program { .. } => 0..0,
        };
        let d = Diagnostic::new(self.code(), self.to_string(), at);
        match self {
            RunError::PenguinSyntax { .. } => d.with_label("here"),
            RunError::PenguinInvalid { errors, .. } => {
                let mut d = d;
                d.notes = errors.iter().take(20).cloned().collect();
                d
            }
            RunError::PenguinUnwrittenRead {
                tensor,
                element: (r, c),
                ..
            } => d
                .with_label("reads uninitialised memory")
                .with_note(format!(
                    "element [{r}, {c}] of `{tensor}` is read here, in the first iteration of every enclosing loop, before any instruction writes it"
                ))
                .with_help(format!("write every element of `{tensor}` that is read before reading it")),
            RunError::UnwrittenRead {
                tensor,
                element,
                detail,
                ..
            } => {
                let note = match (element, detail) {
                    (_, Some(detail)) => detail.clone(),
                    (Some((r, c)), None) => format!(
                        "element [{r}, {c}] of `{tensor}` is read here before anything writes it"
                    ),
                    (None, None) => format!("`{tensor}` is read here before anything writes it"),
                };
                d.with_label("reads uninitialised memory")
                    .with_note(note)
                    .with_help(format!(
                    "write every element of `{tensor}` before reading it, or make it with nl.zeros"
                ))
            }
            RunError::IndexOutOfRange { tensor, detail, .. } => d
                .with_label("an index tile value outside the rows it may name")
                .with_note(detail.clone())
                .with_help(format!(
                    "give the index tile integers in the range of the indexed dimension of `{tensor}` (check the index input's values, or clamp the indices on chip with nl.minimum/nl.maximum)"
                )),
            RunError::UndefinedStore {
                tensor,
                dest,
                detail,
                ..
            } => d
                .with_label("stores undefined data")
                .with_note(detail.clone())
                .with_help(format!(
                    "store into `{dest}` only the elements of `{tensor}` that were computed from written memory (e.g. give the store the mask of the load), or write every element first (make the tile with nl.zeros)"
                )),
            RunError::TooLargeToRun {
                largest,
                shape,
                limit,
                ..
            } => {
                let shape: Vec<String> = shape.iter().map(u64::to_string).collect();
                d.with_label(format!("`{largest}` alone is [{}]", shape.join(", ")))
                    .with_note(format!(
                        "the limit is {} MiB of f32 over every parameter, output and HBM scratch array",
                        (limit * 4) >> 20
                    ))
            }
            RunError::CycleLimit {
                busiest, detail, ..
            } => {
                let d = match busiest {
                    Some((_, n)) => d.with_label(format!("this loop runs {n} times in all")),
                    None => d,
                };
                d.with_note(detail.clone()).with_help(
                    "raise the limit with `--max-cycles N` if the kernel is meant to run this long",
                )
            }
            RunError::Program { .. } => d,
        }
    }
}
