//! Backend errors: what a kernel asks of the machine that the backend cannot give it.
//!
//! Every error in a kernel is a [`BackendError`] variant that carries the data of the problem
//! (the tensor's name, the sizes that do not fit, the span of the source text responsible where
//! one exists); its message comes from `thiserror`, and [`BackendError::to_diagnostic`] is the one
//! place where it becomes a [`Diagnostic`] with its stable code (`E0500`–`E0599`, table below),
//! label and notes. The driver renders it at the edge (exit code 1). A backend error is never a
//! panic and never a silent overlap.
//!
//! | code | problem |
//! | --- | --- |
//! | `E0501` | the kernel's SBUF tensors do not fit in SBUF |
//! | `E0502` | more PSUM banks are needed at once than the 8 PSUM has |
//! | `E0503` | a PSUM tile larger than one bank (a PSUM tile never crosses a bank) |
//! | `E0504` | an IR shape the backend does not lower (the message says which; e.g. a multi-buffered HBM scratch tensor) |
//! | `E0599` | an internal error of the backend (a bug in nkc, not in the kernel) |

use penguin::SrcSpan;
use vocab::Diagnostic;

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

/// A place of the source, when the IR knows it.
type At = Option<SrcSpan>;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// `E0501`: the SBUF buffers, coloured, need more than a partition of SBUF.
    #[error("the kernel's SBUF buffers need {bytes} bytes per partition, more than the {limit} SBUF has")]
    SbufOverflow {
        bytes: u64,
        limit: u64,
        /// The buffers with their sizes, listed.
        buffers: String,
        /// The largest buffer.
        at: At,
    },
    /// `E0502`: more PSUM banks at once than PSUM has.
    #[error(
        "the kernel's PSUM buffers need {banks} banks at once, more than the {limit} PSUM has"
    )]
    PsumOverflow {
        banks: u64,
        limit: u64,
        /// The rings with their banks, listed.
        buffers: String,
        /// The largest ring.
        at: At,
    },
    /// `E0503`: a PSUM tensor larger than the PSUM (all its banks).
    #[error(
        "PSUM tensor `{tensor}` needs {bytes} bytes per partition, more than the PSUM's {bank}-byte banks hold"
    )]
    PsumTileTooLarge {
        tensor: String,
        bytes: u64,
        bank: u64,
        at: At,
    },
    /// `E0504`: loops nested deeper than the registers.
    #[error("loops nested more than {limit} deep")]
    TooDeep { limit: usize, at: At },
    /// `E0504`: a GpSimd instruction on PSUM.
    #[error("a GpSimd instruction cannot access PSUM")]
    GpSimdPsum { at: At },
    /// `E0504`: a multi-buffered HBM scratch tensor.
    #[error("HBM scratch `{tensor}` is multi-buffered, which the backend does not lower")]
    MultiBufferedScratch { tensor: String, at: At },
    /// `E0504`: an on-chip tensor of other than two dimensions.
    #[error("on-chip tensor `{tensor}` has {dims} dimensions; the backend lowers [partitions, free] tiles")]
    TileDims { tensor: String, dims: usize, at: At },
    /// `E0504`: an operand that is not a two-dimensional tile.
    #[error("`{tensor}` is not a [partitions, free] tile")]
    OperandDims { tensor: String, at: At },
    /// `E0504`: a ring slot selector the emitter cannot rotate.
    #[error("the ring slot selector `{selector}` of `{tensor}` is not `iv + constant`")]
    RingSelector {
        selector: String,
        tensor: String,
        at: At,
    },
    /// `E0504`: a DMA to or from another memory than SBUF.
    #[error("a DMA reaches SBUF only")]
    DmaNotSbuf { at: At },
    /// `E0504`: a mask the backend cannot split into versions of constant extent.
    #[error("this mask cannot be lowered: {why}")]
    Mask { why: MaskDecline, at: At },
    /// `E0599`: the Penguin IR a pass left breaks an invariant (a bug in the backend).
    #[error("Penguin IR does not verify after {pass}:\n{}", lines(errors))]
    PenguinNotVerified {
        pass: &'static str,
        errors: Vec<penguin::verify::VerifierError>,
    },
    /// `E0599`: the BIR a pass left breaks an invariant (a bug in the backend).
    #[error("BIR does not verify after {pass}:\n{}", lines(errors))]
    BirNotVerified {
        pass: String,
        errors: Vec<BirVerifierError>,
    },
    /// `E0599`: the program a pass left breaks a static rule (a bug in the backend).
    #[error("the program does not validate after {pass}: {error}")]
    ProgramNotValid {
        pass: &'static str,
        error: runtime_sim::validate::ValidateError,
    },
    /// `E0599`: the program the backend emitted breaks a static rule (a bug in the backend).
    #[error("the backend emitted an invalid program: {0}")]
    InvalidProgram(runtime_sim::validate::ValidateError),
    /// `E0599`: emission met an operand it cannot place (a bug in the backend).
    #[error("{0}")]
    Emission(EmitBug),
}

/// What emission met that earlier passes should have ruled out, in [`BackendError::Emission`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmitBug {
    /// A tile operand of `tensor` has no on-chip place.
    NoPlace { tensor: String },
    /// An access pattern of tile `tensor` has `axes` free axes, more than `max`.
    TileAxes {
        tensor: String,
        axes: usize,
        max: usize,
    },
    /// An HBM operand of `tensor` has no tensor in the program.
    NoHbmTensor { tensor: String },
    /// An access pattern of HBM tensor `tensor` has `axes` axes, more than `max`.
    HbmAxes {
        tensor: String,
        axes: usize,
        max: usize,
    },
    /// A partition-major DMA's HBM run overflows.
    RunOverflow,
}

impl std::fmt::Display for EmitBug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmitBug::NoPlace { tensor } => {
                write!(f, "tile operand `{tensor}` has no on-chip place")
            }
            EmitBug::TileAxes { tensor, axes, max } => write!(
                f,
                "an access pattern of `{tensor}` has {axes} free axes; the machine takes at most {max}"
            ),
            EmitBug::NoHbmTensor { tensor } => write!(f, "HBM operand `{tensor}` has no tensor"),
            EmitBug::HbmAxes { tensor, axes, max } => write!(
                f,
                "an access pattern of HBM tensor `{tensor}` has {axes} axes; a DMA takes at most {max}"
            ),
            EmitBug::RunOverflow => f.write_str("a partition-major DMA's HBM run overflows"),
        }
    }
}

/// One violated invariant of BIR (its verifier, `codegen::bir_verify`, finds them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BirVerifierError {
    /// What is wrong where: `inst3 (sp.load tx)`, `loop1 (i)`, `bir`.
    pub location: String,
    pub message: String,
}

impl std::fmt::Display for BirVerifierError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// Why a masked instruction cannot be lowered to versions of constant extent
/// (`codegen::masks`), in [`BackendError::Mask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaskDecline {
    /// The operation (its name) cannot carry a mask.
    NotMaskable { op: &'static str },
    /// Its iteration space is not [partitions, free].
    NotTile,
    /// A bound's dimension is larger than an `i64`.
    ExtentTooLarge,
    /// A bound takes more than `max` partial values over its loops.
    TooManyPartials { max: usize },
    /// A bound in several loop variables ranges over more than `max` iterations.
    BoxTooLarge { max: u64 },
    /// The versions needed, more than `max`.
    TooManyVersions { total: usize, max: usize },
}

impl std::fmt::Display for MaskDecline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaskDecline::NotMaskable { op } => write!(f, "`{op}` cannot carry a mask"),
            MaskDecline::NotTile => f.write_str("its iteration space is not [partitions, free]"),
            MaskDecline::ExtentTooLarge => f.write_str("its extent is too large"),
            MaskDecline::TooManyPartials { max } => write!(
                f,
                "a bound takes more than {max} partial values over its loops"
            ),
            MaskDecline::BoxTooLarge { max } => write!(
                f,
                "a bound in several loop variables ranges over more than {max} iterations"
            ),
            MaskDecline::TooManyVersions { total, max } => write!(
                f,
                "it would need {total} versions of constant extent (at most {max})"
            ),
        }
    }
}

/// Every error's text, one a line.
fn lines(errors: &[impl std::fmt::Display]) -> String {
    errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

impl BackendError {
    /// The stable code, `E05xx`.
    pub fn code(&self) -> &'static str {
        use BackendError::*;
        match self {
            SbufOverflow { .. } => SBUF_OVERFLOW,
            PsumOverflow { .. } => PSUM_OVERFLOW,
            PsumTileTooLarge { .. } => PSUM_TILE_TOO_LARGE,
            TooDeep { .. }
            | GpSimdPsum { .. }
            | MultiBufferedScratch { .. }
            | TileDims { .. }
            | OperandDims { .. }
            | RingSelector { .. }
            | DmaNotSbuf { .. }
            | Mask { .. } => UNSUPPORTED,
            PenguinNotVerified { .. }
            | BirNotVerified { .. }
            | ProgramNotValid { .. }
            | InvalidProgram(_)
            | Emission(_) => INTERNAL,
        }
    }

    pub fn is_internal(&self) -> bool {
        self.code() == INTERNAL
    }

    /// The source text responsible, when there is one.
    pub fn span(&self) -> At {
        use BackendError::*;
        match self {
            SbufOverflow { at, .. }
            | PsumOverflow { at, .. }
            | PsumTileTooLarge { at, .. }
            | TooDeep { at, .. }
            | GpSimdPsum { at }
            | MultiBufferedScratch { at, .. }
            | TileDims { at, .. }
            | OperandDims { at, .. }
            | RingSelector { at, .. }
            | DmaNotSbuf { at }
            | Mask { at, .. } => *at,
            PenguinNotVerified { .. }
            | BirNotVerified { .. }
            | ProgramNotValid { .. }
            | InvalidProgram(_)
            | Emission(_) => None,
        }
    }

    /// The diagnostic of this error: the one place where its code, span, label and notes are
    /// chosen. (The backend's notes are written without a `note:` prefix.)
    pub fn to_diagnostic(&self) -> Diagnostic {
        use BackendError::*;
        let span = self.span().map_or(0..0, |s| s.range());
        let mut d = Diagnostic::new(self.code(), self.to_string(), span);
        match self {
            SbufOverflow { buffers, .. } => {
                d = d.with_label("the largest buffer");
                d.notes.push(format!(
                    "buffers (bytes per partition, all ring slots; buffers live at the same time cannot share): {buffers}"
                ));
            }
            PsumOverflow { buffers, .. } => {
                d = d.with_label("the largest PSUM ring");
                d.notes
                    .push(format!("PSUM buffers in flight together: {buffers}"));
            }
            PsumTileTooLarge { bank, .. } => {
                d = d.with_label("a PSUM tile never crosses a bank");
                d.notes.push(format!(
                    "a PSUM bank holds {} float32 per partition",
                    bank / 4
                ));
            }
            MultiBufferedScratch { .. } => d = d.with_label("a multi-buffered local HBM tensor"),
            _ => {}
        }
        d
    }

    /// The one-line report of an internal error (`error[E0599]: …`).
    pub fn report(&self) -> String {
        format!("error[{}]: {self}", self.code())
    }
}
