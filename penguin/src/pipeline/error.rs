//! [`PipelineError`]: a problem the pipeliner found in a kernel, with its source spans.
//!
//! Each variant carries the data of one problem (the loop's name, the statements' spans, the
//! counts that do not fit); its message comes from `thiserror`, and [`PipelineError::to_diagnostic`]
//! is the one place where a variant becomes a [`Diagnostic`] with its code (from
//! [`super::codes`]), labels, notes and help. Penguin has no rendering machinery of its own: the
//! driver renders the diagnostic at the edge. Spans come from the side tables of the IR
//! (`Function::*_spans`); an IR built without spans (a test, the text form) gives `None`, and the
//! diagnostic then has the empty span `0..0` and no secondary label for it.

use super::codes;
use super::legality::LegalityError;
use super::plan::DepKind;
use crate::entities::{Axis, Stmt, Tensor};
use crate::ir::{Function, SrcSpan, StmtKind};
use crate::listing::{capped_list, LIST_CAP};
use crate::verify::VerifierError;
use vocab::Diagnostic;

/// A place of the source, when the IR knows it.
pub type At = Option<SrcSpan>;

/// The value of `num_stages` as written on a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StagesWritten {
    /// `num_stages=n`.
    Count(u32),
    /// `num_stages="auto"`.
    Auto,
}

impl std::fmt::Display for StagesWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StagesWritten::Count(n) => write!(f, "{n}"),
            StagesWritten::Auto => f.write_str("\"auto\""),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// `E0402`: a pipelined loop that does not start at 0.
    #[error("cannot pipeline loop `{iv}`: it starts at {lb}, not at 0")]
    NonCanonicalLoop {
        iv: String,
        lb: i64,
        trip_count: i64,
        header: At,
    },
    /// `E0403`: `num_stages` on the loop and `stage_id` on a statement of its body.
    #[error("loop `{iv}` cannot use both num_stages and stage_id")]
    BothModes {
        iv: String,
        /// The value of `num_stages` as written.
        num_stages: StagesWritten,
        stmt: At,
        header: At,
    },
    /// `E0411`: `execution_order` on a statement of a Mode A loop.
    #[error("execution_order needs stage_id on the statements of the loop")]
    OrderWithoutStage {
        num_stages: u32,
        stmt: At,
        header: At,
    },
    /// `E0404`: Mode A with more stages than the body has statements.
    #[error(
        "loop `{iv}` asks for {num_stages} stages but its body has only {statements} statement(s)"
    )]
    TooManyStages {
        iv: String,
        num_stages: u32,
        statements: usize,
        /// A loop of the body with enough statements for `num_stages`, to pipeline instead: its
        /// name and statement count.
        inner: Option<(String, usize)>,
        header: At,
    },
    /// `E0405`: Mode B with a statement that has no `stage_id`.
    #[error("this statement of loop `{iv}` has no stage_id, but others do")]
    MissingStageId {
        iv: String,
        stmt: At,
        with_stage: At,
    },
    /// `E0406`: stage ids that leave a gap.
    #[error("the stage ids of loop `{iv}` do not run from 0 to {max_stage} without a gap: no statement has stage {missing}")]
    StageGap {
        iv: String,
        max_stage: u32,
        /// The stages no statement has, listed.
        missing: String,
        header: At,
        /// The statement with the largest stage id.
        last: At,
    },
    /// `E0407`: a stage id smaller than the one before it.
    #[error(
        "stage ids must never decrease in program order, but stage {stage} follows stage {before}"
    )]
    StageDecreases {
        stage: u32,
        before: u32,
        stmt: At,
        prev: At,
    },
    /// `E0408`: `execution_order` on some statements but not this one.
    #[error("this statement has no execution_order, but other statements of loop `{iv}` do")]
    OrderMixed {
        iv: String,
        stmt: At,
        with_order: At,
    },
    /// `E0409`: an execution order outside `0..n`.
    #[error("execution orders must be a permutation of 0..{}, but this one is {order}", .statements - 1)]
    OrderOutOfRange {
        order: usize,
        statements: usize,
        stmt: At,
    },
    /// `E0409`: an execution order given twice.
    #[error("execution orders must be a permutation of 0..{}, but {order} is used twice", .statements - 1)]
    OrderTwice {
        order: usize,
        statements: usize,
        stmt: At,
        first: At,
    },
    /// `E0410`: execution orders that decrease within a stage.
    #[error("execution orders within stage {stage} must increase in program order, but {order} follows {before}")]
    OrderDecreasesInStage {
        stage: u32,
        order: u32,
        before: u32,
        stmt: At,
        prev: At,
    },
    /// `E0420`: a tile buffered both by `multi_buffer` and automatically.
    #[error("`{tensor}` would be buffered twice: {auto} buffers automatically and {manual} by multi_buffer")]
    ManualAndAutoBuffer {
        tensor: String,
        iv: String,
        auto: u32,
        manual: u32,
        /// The stage that writes the tile and the last stage that reads it.
        def_stage: u32,
        use_stage: u32,
        header: At,
        tensor_at: At,
    },
    /// `E0421`: the loop's SBUF tiles, widened, do not fit in SBUF.
    #[error("after multi-buffering, the tiles of loop `{iv}` need {total} bytes per partition, more than the {limit} bytes of SBUF")]
    SbufOverflow {
        iv: String,
        total: u64,
        limit: u64,
        /// Every SBUF tile of the loop: its name, buffers, bytes per partition and place.
        tiles: Vec<SbufTile>,
        header: At,
    },
    /// `E0422`: more PSUM banks in flight than PSUM has.
    #[error("loop `{iv}` keeps {banks} PSUM banks in flight, but PSUM has {limit}")]
    PsumBanks {
        iv: String,
        banks: u64,
        limit: u64,
        /// Every PSUM tile of the loop: its name, banks and place.
        tiles: Vec<(String, u64, At)>,
        header: At,
    },
    /// `E0430`: the pipelined schedule reverses a dependence.
    #[error("the pipeline of loop `{}` breaks {} {} dependence on `{}`", .0.iv, .0.article(), .0.kind.name(), .0.tensor)]
    DependenceViolation(Box<Violated>),
    /// `E0440`: `--peel` would copy too many instructions.
    #[error("peeling loop `{iv}` would copy more than the {limit} instructions `--peel` allows into prologues and epilogues")]
    PeelTooLarge {
        iv: String,
        limit: usize,
        trip_count: i64,
        num_stages: u32,
        header: At,
    },
    /// `E0499`: the pipeliner left Penguin IR that does not verify (a bug in the pipeliner); the
    /// note lists the violated invariants.
    #[error("the pipeliner produced invalid Penguin IR for `{function}`")]
    InvalidIr {
        function: String,
        errors: Vec<VerifierError>,
    },
    /// `E0499`: the legality check could not give a verdict on loop `iv` (a bug in the
    /// pipeliner).
    #[error("the legality check of loop `{iv}` failed: {error}")]
    LegalityFailed {
        iv: String,
        error: LegalityError,
        at: At,
    },
}

/// One SBUF tile of a loop that overflows SBUF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SbufTile {
    pub name: String,
    pub slots: u64,
    pub bytes: u64,
    pub at: At,
}

/// A dependence of the original program that the pipelined loop reverses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violated {
    pub iv: String,
    pub kind: DepKind,
    pub tensor: String,
    /// The access that must come first, and the one that must come after.
    pub source: Access,
    pub sink: Access,
    /// Pipelined loops inside the loop, whose extended iterations the iterations name: the inner
    /// loop's name and its stages.
    pub inner: Vec<(String, u32)>,
    pub help: ViolationHelp,
}

/// One side of a broken dependence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub at: At,
    /// The iteration, as `i = 3, j = 0`.
    pub iter: String,
    /// The statement, as ``` `t = load` (stage 1) ```.
    pub what: String,
}

/// What to do about a broken dependence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViolationHelp {
    /// A read before its write: reorder the stages.
    Flow,
    /// Fewer buffers than iterations in flight.
    TooFewBuffers { buffered: u32, count: u32 },
    /// A tile carried across iterations in one buffer.
    Carried,
    /// Any other overlap.
    Overlap,
}

impl Violated {
    /// The article before the kind of dependence.
    fn article(&self) -> &'static str {
        if self.kind == DepKind::Flow {
            "a"
        } else {
            "an"
        }
    }
}

/// A span, or the empty span at the start of the file.
fn range(at: At) -> std::ops::Range<usize> {
    at.map_or(0..0, |s| s.range())
}

/// Adds a secondary label; a missing span adds nothing.
fn secondary(d: Diagnostic, at: At, label: impl Into<String>) -> Diagnostic {
    match at {
        Some(s) => d.with_secondary(s.range(), label),
        None => d,
    }
}

impl PipelineError {
    /// The stable code, `E04xx`.
    pub fn code(&self) -> &'static str {
        use PipelineError::*;
        match self {
            NonCanonicalLoop { .. } => codes::NON_CANONICAL_LOOP,
            BothModes { .. } => codes::BOTH_MODES,
            OrderWithoutStage { .. } => codes::ORDER_WITHOUT_STAGE,
            TooManyStages { .. } => codes::TOO_MANY_STAGES,
            MissingStageId { .. } => codes::MISSING_STAGE_ID,
            StageGap { .. } => codes::STAGE_GAP,
            StageDecreases { .. } => codes::STAGE_DECREASES,
            OrderMixed { .. } => codes::ORDER_MIXED,
            OrderOutOfRange { .. } | OrderTwice { .. } => codes::ORDER_NOT_PERMUTATION,
            OrderDecreasesInStage { .. } => codes::ORDER_DECREASES_IN_STAGE,
            ManualAndAutoBuffer { .. } => codes::MANUAL_AND_AUTO_BUFFER,
            SbufOverflow { .. } => codes::SBUF_OVERFLOW,
            PsumBanks { .. } => codes::PSUM_BANKS,
            DependenceViolation(_) => codes::DEPENDENCE_VIOLATION,
            PeelTooLarge { .. } => codes::PEEL_TOO_LARGE,
            InvalidIr { .. } | LegalityFailed { .. } => codes::INTERNAL,
        }
    }

    /// Whether this is a bug in nkc rather than a problem of the kernel.
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            PipelineError::InvalidIr { .. } | PipelineError::LegalityFailed { .. }
        )
    }

    /// The diagnostic of this error: the one place where its code, spans, labels, notes and
    /// help are chosen. Its `help:` line ([`PipelineError::help`]) comes after its notes
    /// ([`PipelineError::located`]).
    pub fn to_diagnostic(&self) -> Diagnostic {
        self.located().with_help_opt(self.help())
    }

    /// The diagnostic without its help: the primary span and label, the related places and the
    /// notes.
    fn located(&self) -> Diagnostic {
        use PipelineError::*;
        let at = |span: At| Diagnostic::new(self.code(), self.to_string(), range(span));
        match self {
            NonCanonicalLoop { .. }
            | BothModes { .. }
            | OrderWithoutStage { .. }
            | TooManyStages { .. }
            | MissingStageId { .. }
            | StageGap { .. }
            | StageDecreases { .. } => self.stage_places(at),
            OrderMixed { .. }
            | OrderOutOfRange { .. }
            | OrderTwice { .. }
            | OrderDecreasesInStage { .. } => self.order_places(at),
            ManualAndAutoBuffer { .. } | SbufOverflow { .. } | PsumBanks { .. } => {
                self.buffer_places(at)
            }
            DependenceViolation(..)
            | PeelTooLarge { .. }
            | InvalidIr { .. }
            | LegalityFailed { .. } => self.schedule_places(at),
        }
    }

    /// The places of a stage annotation that breaks a rule of the two modes: the loop's
    /// `num_stages`, the statements' `stage_id`s.
    fn stage_places(&self, at: impl Fn(At) -> Diagnostic) -> Diagnostic {
        use PipelineError::*;
        match self {
            NonCanonicalLoop { header, .. } => at(*header).with_label("annotated for pipelining"),
            BothModes {
                num_stages,
                stmt,
                header,
                ..
            } => secondary(
                at(*stmt).with_label("a stage_id here"),
                *header,
                format!("num_stages={num_stages} here"),
            ),
            OrderWithoutStage {
                num_stages,
                stmt,
                header,
            } => secondary(
                at(*stmt).with_label("execution_order without stage_id"),
                *header,
                format!("num_stages={num_stages} slices the body in program order"),
            ),
            TooManyStages {
                num_stages, header, ..
            } => at(*header)
                .with_label(format!("num_stages={num_stages}"))
                .with_note("each stage needs at least one statement of the body"),
            MissingStageId {
                stmt, with_stage, ..
            } => secondary(
                at(*stmt).with_label("no stage_id"),
                *with_stage,
                "this statement has one",
            ),
            StageGap {
                max_stage,
                missing,
                header,
                last,
                ..
            } => secondary(
                at(*header).with_label(format!(
                    "{} stages, stage {missing} empty",
                    u64::from(*max_stage) + 1
                )),
                *last,
                format!("stage_id={max_stage}"),
            ),
            StageDecreases {
                stage,
                before,
                stmt,
                prev,
            } => secondary(
                at(*stmt).with_label(format!("stage_id={stage}")),
                *prev,
                format!("the statement before is in stage {before}"),
            ),
            // The other families: each has its own function.
            _ => at(None),
        }
    }

    /// The places of an `execution_order` that is not a permutation kept within each stage.
    fn order_places(&self, at: impl Fn(At) -> Diagnostic) -> Diagnostic {
        use PipelineError::*;
        match self {
            OrderMixed {
                stmt, with_order, ..
            } => secondary(
                at(*stmt).with_label("no execution_order"),
                *with_order,
                "this one has one",
            ),
            OrderOutOfRange {
                order,
                statements,
                stmt,
            } => at(*stmt)
                .with_label(format!("execution_order={order} is out of range"))
                .with_note(format!("the loop body has {statements} statements")),
            OrderTwice {
                order, stmt, first, ..
            } => secondary(
                at(*stmt).with_label(format!("execution_order={order} again")),
                *first,
                format!("execution_order={order} first here"),
            ),
            OrderDecreasesInStage {
                stage,
                order,
                before,
                stmt,
                prev,
            } => secondary(
                at(*stmt).with_label(format!("execution_order={order}")),
                *prev,
                format!("an earlier statement of stage {stage} has execution_order={before}"),
            )
            .with_note("within one stage, statements keep their program order"),
            // The other families: each has its own function.
            _ => at(None),
        }
    }

    /// The places of buffers that do not fit: the loop and the tiles it widens.
    fn buffer_places(&self, at: impl Fn(At) -> Diagnostic) -> Diagnostic {
        use PipelineError::*;
        match self {
            ManualAndAutoBuffer {
                iv,
                auto,
                manual,
                def_stage,
                use_stage,
                header,
                tensor_at,
                ..
            } => secondary(
                at(*header).with_label(format!("multi_buffer={manual} on loop `{iv}`")),
                *tensor_at,
                format!("written in stage {def_stage} and read in stage {use_stage}, so it gets {auto} buffers automatically"),
            ),
            SbufOverflow {
                iv, tiles, header, ..
            } => sbuf_tiles(at(*header).with_label(format!("pipelined loop `{iv}`")), tiles),
            PsumBanks {
                iv, tiles, header, ..
            } => tiles.iter().fold(
                at(*header).with_label(format!("pipelined loop `{iv}`")),
                |d, (name, banks, t)| secondary(d, *t, format!("`{name}`: {banks} bank(s)")),
            ),
            // The other families: each has its own function.
            _ => at(None),
        }
    }

    /// The places of a schedule the legality check refuses, of a peel too large, and of the
    /// internal errors.
    fn schedule_places(&self, at: impl Fn(At) -> Diagnostic) -> Diagnostic {
        use PipelineError::*;
        match self {
            DependenceViolation(v) => dependence_places(at(v.sink.at), v),
            PeelTooLarge {
                trip_count,
                num_stages,
                header,
                ..
            } => at(*header)
                .with_label("a pipelined loop to peel")
                .with_note(format!(
                    "the loop runs {trip_count} iteration(s) in {num_stages} stages: its prologue and its epilogue each copy up to {} extended iterations of its body",
                    num_stages - 1
                )),
            InvalidIr { errors, .. } => at(None).with_note(capped_list(errors, "\n")),
            LegalityFailed { at: span, .. } => at(*span),
            // The other families: each has its own function.
            _ => at(None),
        }
    }

    /// What to write instead, when there is something to say.
    fn help(&self) -> Option<String> {
        use PipelineError::*;
        let help = match self {
            NonCanonicalLoop { lb, trip_count, .. } => format!(
                "write the loop as `range({trip_count})` and add {lb} to the index"
            ),
            BothModes { num_stages, .. } => match num_stages {
                StagesWritten::Auto => "either let the compiler choose (num_stages=\"auto\"), or give stage_id on every statement",
                StagesWritten::Count(_) => "either give num_stages on the loop, or stage_id on every statement",
            }
            .to_string(),
            OrderWithoutStage { .. } => {
                "to order the statements, give each a stage_id and drop num_stages".to_string()
            }
            TooManyStages {
                num_stages,
                statements,
                inner,
                ..
            } => {
                let fewer = format!("use num_stages={} at most", (*statements).max(1));
                match inner {
                    Some((l, len)) => format!(
                        "to pipeline the inner loop `{l}` ({len} statements), write num_stages={num_stages} on its range call instead; or {fewer}"
                    ),
                    None => fewer,
                }
            }
            MissingStageId { .. } => {
                "give every statement directly in the loop body a stage_id".to_string()
            }
            StageGap { .. } => "number the stages 0, 1, 2, ... in program order".to_string(),
            StageDecreases { .. } => "a later stage runs an earlier iteration; to run this statement earlier in \
                 the loop body, use execution_order"
                .to_string(),
            OrderMixed { .. } => {
                "give execution_order on every statement of the loop, or on none".to_string()
            }
            OrderOutOfRange { .. } | OrderTwice { .. } => {
                "add disable_execution_order_check=True to the loop to allow any order values"
                    .to_string()
            }
            ManualAndAutoBuffer { .. } => "add disable_auto_buffer=True to the loop to buffer by hand only, or drop multi_buffer".to_string(),
            SbufOverflow { .. } => "use fewer stages, smaller tiles, or disable_auto_buffer=True with a smaller multi_buffer".to_string(),
            PsumBanks { .. } => "use fewer stages or fewer PSUM tiles live in the loop".to_string(),
            DependenceViolation(v) => dependence_help(v),
            PeelTooLarge { .. } => "drop `--peel` (the predicated loop copies nothing), or use fewer stages".to_string(),
            OrderDecreasesInStage { .. } | InvalidIr { .. } | LegalityFailed { .. } => {
                return None
            }
        };
        Some(help)
    }
}

/// Labels the multi-buffered tiles of an SBUF overflow on `d` (at most [`LIST_CAP`]) and notes
/// every tile of the loop with its size.
fn sbuf_tiles(mut d: Diagnostic, tiles: &[SbufTile]) -> Diagnostic {
    let mut list = Vec::new();
    let mut labelled = 0;
    for t in tiles {
        let (name, slots, bytes) = (&t.name, t.slots, t.bytes);
        let label = if slots > 1 {
            format!("`{name}`: {slots} buffers, {bytes} bytes per partition")
        } else {
            format!("`{name}`: {bytes} bytes per partition")
        };
        if slots > 1 && labelled < LIST_CAP {
            labelled += 1;
            d = secondary(d, t.at, label.clone());
        }
        list.push(label);
    }
    d.with_note(format!("the loop's tiles: {}", capped_list(&list, "; ")))
}

/// A dependence violation's places on `d` (at its sink): the two accesses, the iterations
/// that run in the wrong order, and the pipelined inner loops whose iterations they are.
fn dependence_places(d: Diagnostic, v: &Violated) -> Diagnostic {
    let (src_verb, sink_verb) = match v.kind {
        DepKind::Flow => ("writes", "reads"),
        DepKind::Anti => ("reads", "writes"),
        DepKind::Output => ("writes", "writes"),
    };
    let (tensor, src, sink) = (&v.tensor, &v.source, &v.sink);
    let mut d = secondary(
        d.with_label(format!("{sink_verb} `{tensor}` ({})", sink.iter)),
        src.at,
        format!("{src_verb} `{tensor}` ({})", src.iter),
    )
    .with_note(format!(
        "iteration {} of {} must run before iteration {} of {}, but the pipelined loop runs it after",
        src.iter, src.what, sink.iter, sink.what
    ));
    for (inner, stages) in &v.inner {
        d = d.with_note(format!(
            "loop `{inner}`, inside loop `{}`, is itself pipelined in {stages} stages: its iterations above are those of its extended loop, where a statement of stage s works on iteration {inner} - s",
            v.iv
        ));
    }
    d
}

/// What to do about a dependence violation, by its kind of help.
fn dependence_help(v: &Violated) -> String {
    let tensor = &v.tensor;
    match v.help {
        ViolationHelp::Flow => "put the reader in the same stage as the writer or a later one, and after it in execution order".to_string(),
        ViolationHelp::TooFewBuffers { buffered, count } => format!(
            "`{tensor}` has {buffered} buffer(s) but {count} iterations of it are in flight: let the \
             pipeliner buffer it (drop disable_auto_buffer=True) or raise multi_buffer"
        ),
        ViolationHelp::Carried => format!(
            "`{tensor}` is carried across iterations in one buffer: read and write it in one stage"
        ),
        ViolationHelp::Overlap => format!(
            "iterations in flight overlap on `{tensor}`: make the conflicting accesses in one stage"
        ),
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
