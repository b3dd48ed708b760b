//! The decision log that `--log pipeliner` prints, which every step of the pipeliner writes to.
//!
//! Every decision of the pipeliner is one [`PipelineRemark`], in the order it is taken: targets
//! found and skipped with the reason, the number of stages and how it was chosen, the groups, the
//! buffer counts with their reasons, the widened allocations, the new bounds, the execution order
//! and the legality verdict with its dependence counts. A remark carries its data; its `Display`
//! is its line of `--log pipeliner`, which names loops by induction variable and statements by
//! what they compute (`ta = load`, `loop k`), so it reads without the IR at hand. Tests match the
//! variants; the filetests' `; log:` expectations match the lines.
//!
//! A step outside this crate that runs with the pipeliner (the backend's `num_stages="auto"`)
//! writes its own typed remark as a [`PipelineRemark::Foreign`], which keeps its type for
//! [`PipelineRemark::foreign`] to recover.

use super::buffers::SkipReason;
use super::context::Mode;
use super::targets::NotTarget;
use crate::entities::Stmt;
use crate::ir::{Function, StmtKind};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// One decision of the pipeliner, with its data; its [`fmt::Display`] is its line (without the
/// `pipeliner: ` prefix). Loops are named by display name, statements described
/// ([`describe_stmt`]), when the remark is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineRemark {
    /// Loop `from` asks for more stages than its body (the single loop `to`, of `statements`
    /// statements) has: `to` is pipelined instead.
    Descended {
        from: String,
        num_stages: u32,
        to: String,
        statements: usize,
    },
    /// Loop `iv` is no target.
    Skipped { iv: String, why: NotTarget },
    /// Loop `iv` is a target of `trip` iterations.
    Target { iv: String, trip: i64 },
    /// Loop `iv` extended to `[lb, ub)` from `[lb, was_ub)`.
    Extended {
        iv: String,
        lb: i64,
        ub: i64,
        was_ub: i64,
    },
    /// Loop `iv` pipelined in `num_stages` stages.
    Applied { iv: String, num_stages: u32 },
    /// Loop `iv` has `num_stages` stages, given as `mode` says.
    StageCount {
        iv: String,
        num_stages: u32,
        mode: Mode,
    },
    /// The statements of stage `stage` of loop `iv`.
    Stage {
        iv: String,
        stage: usize,
        statements: Vec<String>,
    },
    /// Loop `iv` keeps program order (no `execution_order`).
    ProgramOrder { iv: String },
    /// Loop `iv`, which holds a loop and has no `execution_order`, runs its later stages first
    /// (`default`, `auto`) when `legal`; each statement with its stage.
    HolderOrder {
        iv: String,
        statements: Vec<(String, u32)>,
        legal: bool,
    },
    /// Loop `iv`'s execution order: each statement with its stage.
    Order {
        iv: String,
        statements: Vec<(String, u32)>,
    },
    /// Tensor `tensor` of loop `iv`, defined first in stage `def_min` and used last in
    /// `use_max`, needs `count` buffers.
    BufferCount {
        iv: String,
        tensor: String,
        def_min: u32,
        use_max: u32,
        count: u32,
    },
    /// Tensor `tensor` of loop `iv` is not multi-buffered.
    BufferSkipped {
        iv: String,
        tensor: String,
        why: SkipReason,
    },
    /// Loop `iv` has `disable_auto_buffer=True`.
    AutoBufferOff { iv: String },
    /// Tensor `tensor` of loop `iv` gets `count` buffers (`manual`: by `multi_buffer`); a PSUM
    /// ring when `psum`, else `bytes` per partition in all.
    Allocated {
        iv: String,
        tensor: String,
        manual: bool,
        psum: bool,
        count: u32,
        bytes: u64,
    },
    /// Loop `iv`'s legality check is off (`--no-legality-check`).
    LegalityOff { iv: String },
    /// Loop `iv`'s legality check: `violations` violated dependences (none: legal), and the
    /// dependences it checked.
    Legality {
        iv: String,
        violations: usize,
        flow: usize,
        anti: usize,
        output: usize,
        checked: usize,
        preserved: usize,
    },
    /// Loop `iv` peeled around a steady state `[lo, hi)` of its extended iterations `[lb, ub)`,
    /// with `prologue` and `epilogue` statements.
    Peeled {
        iv: String,
        prologue: usize,
        epilogue: usize,
        lb: i64,
        lo: i64,
        hi: i64,
        ub: i64,
    },
    /// Loop `iv` (`trip` iterations in `stages` stages) peeled without a steady state: its
    /// `iterations` extended iterations as `statements` statements.
    PeeledFlat {
        iv: String,
        trip: i64,
        stages: u32,
        iterations: i64,
        statements: usize,
    },
    /// A decision of a step outside this crate that writes to this log: `num_stages="auto"` of
    /// the backend, which runs before the pipeliner. Its line is the remark's own.
    Foreign(Arc<dyn ForeignRemark>),
}

impl PipelineRemark {
    /// A remark of a step outside this crate, in its own type.
    pub fn foreign(remark: impl ForeignRemark) -> Self {
        PipelineRemark::Foreign(Arc::new(remark))
    }

    /// The foreign remark, when it is one of type `T`.
    pub fn as_foreign<T: ForeignRemark>(&self) -> Option<&T> {
        match self {
            // `Arc` is a `ForeignRemark` too: ask the remark inside it.
            PipelineRemark::Foreign(r) => (**r).as_any().downcast_ref(),
            _ => None,
        }
    }
}

/// The typed remark of a step outside this crate ([`PipelineRemark::Foreign`]): any type with a
/// line, compared by type and value.
pub trait ForeignRemark: fmt::Display + fmt::Debug + Send + Sync + 'static {
    /// The remark as [`Any`], to recover its type.
    fn as_any(&self) -> &dyn Any;
    /// Whether `other` is a remark of the same type and value.
    fn eq_foreign(&self, other: &dyn ForeignRemark) -> bool;
}

impl<T: fmt::Display + fmt::Debug + Eq + Send + Sync + 'static> ForeignRemark for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn eq_foreign(&self, other: &dyn ForeignRemark) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

impl PartialEq for dyn ForeignRemark {
    fn eq(&self, other: &Self) -> bool {
        self.eq_foreign(other)
    }
}

impl Eq for dyn ForeignRemark {}

impl fmt::Display for PipelineRemark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PipelineRemark as R;
        match self {
            R::Descended { .. }
            | R::Skipped { .. }
            | R::Target { .. }
            | R::Extended { .. }
            | R::Applied { .. } => fmt_loops(self, f),
            R::StageCount { .. }
            | R::Stage { .. }
            | R::ProgramOrder { .. }
            | R::HolderOrder { .. }
            | R::Order { .. } => fmt_schedule(self, f),
            R::BufferCount { .. }
            | R::BufferSkipped { .. }
            | R::AutoBufferOff { .. }
            | R::Allocated { .. } => fmt_buffers(self, f),
            R::LegalityOff { .. }
            | R::Legality { .. }
            | R::Peeled { .. }
            | R::PeeledFlat { .. }
            | R::Foreign(..) => fmt_checks_and_peels(self, f),
        }
    }
}

/// The lines about the loops the pipeliner looks at: targets, skipped ones, extended ones.
fn fmt_loops(r: &PipelineRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use PipelineRemark as R;
    match r {
        R::Descended {
            from,
            num_stages,
            to,
            statements,
        } => write!(
            f,
            "loop `{from}`: num_stages={num_stages} asks for more stages than its body has statements, and the body is the single loop `{to}` ({statements} statement(s)): pipelining `{to}` instead"
        ),
        R::Skipped { iv, why } => write!(f, "loop `{iv}`: skipped: {why}"),
        R::Target { iv, trip } => write!(f, "loop `{iv}`: target found (trip count {trip})"),
        R::Extended { iv, lb, ub, was_ub } => write!(
            f,
            "loop `{iv}`: created the extended loop with bounds [{lb}, {ub}) (was [{lb}, {was_ub}))"
        ),
        R::Applied { iv, num_stages } => write!(
            f,
            "loop `{iv}`: applied software pipelining with num_stages={num_stages}"
        ),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The lines of the schedule: the stages, their statements and their order.
fn fmt_schedule(r: &PipelineRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use PipelineRemark as R;
    match r {
        R::StageCount {
            iv,
            num_stages,
            mode,
        } => write!(
            f,
            "loop `{iv}`: chosen number of pipeline stages: {num_stages} ({})",
            match mode {
                Mode::NumStages => "from num_stages on the loop (Mode A)",
                Mode::StageIds => "from the stage_id of its statements (Mode B)",
            }
        ),
        R::Stage {
            iv,
            stage,
            statements,
        } => write!(f, "loop `{iv}`: stage {stage}: {}", statements.join(", ")),
        R::ProgramOrder { iv } => write!(
            f,
            "loop `{iv}`: no execution_order specified, keeping program order"
        ),
        R::HolderOrder {
            iv,
            statements,
            legal,
        } => {
            let names: Vec<String> = statements
                .iter()
                .map(|(s, stage)| format!("{s} (stage {stage})"))
                .collect();
            if *legal {
                write!(
                    f,
                    "loop `{iv}` holds a loop: its later stages run first: {}",
                    names.join(", ")
                )
            } else {
                write!(
                    f,
                    "loop `{iv}` holds a loop: keeping program order (later stages first is illegal: {})",
                    names.join(", ")
                )
            }
        }
        R::Order { iv, statements } => {
            let names: Vec<String> = statements
                .iter()
                .map(|(s, stage)| format!("{s} (stage {stage})"))
                .collect();
            write!(f, "loop `{iv}`: execution order: {}", names.join(", "))
        }
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The lines of the buffers: the counts multi-buffering gives, and the allocation.
fn fmt_buffers(r: &PipelineRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use PipelineRemark as R;
    match r {
        R::BufferCount {
            iv,
            tensor,
            def_min,
            use_max,
            count,
        } => write!(
            f,
            "loop `{iv}`: `{tensor}` is defined first in stage {def_min} and used last in stage {use_max}: the buffer size needed is {count}"
        ),
        R::BufferSkipped { iv, tensor, why } => {
            write!(f, "loop `{iv}`: `{tensor}` {}, skip", why.describe())
        }
        R::AutoBufferOff { iv } => write!(
            f,
            "loop `{iv}`: automatic buffering disabled (disable_auto_buffer=True)"
        ),
        R::Allocated {
            iv,
            tensor,
            manual,
            psum,
            count,
            bytes,
        } => {
            let how = if *manual {
                "by multi_buffer"
            } else {
                "automatically"
            };
            write!(f, "loop `{iv}`: allocated `{tensor}` {how} with ")?;
            if *psum {
                write!(f, "a PSUM ring of depth {count} (realised by the backend)")
            } else {
                write!(f, "{count} buffers ({bytes} bytes per partition)")
            }
        }
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The lines of the legality check, of peeling, and of other passes' remarks.
fn fmt_checks_and_peels(r: &PipelineRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use PipelineRemark as R;
    match r {
        R::LegalityOff { iv } => write!(
            f,
            "loop `{iv}`: legality check skipped (--no-legality-check)"
        ),
        R::Legality {
            iv,
            violations,
            flow,
            anti,
            output,
            checked,
            preserved,
        } => {
            write!(f, "loop `{iv}`: legality: ")?;
            if *violations == 0 {
                f.write_str("legal")?;
            } else {
                write!(f, "{violations} violated dependence(s)")?;
            }
            write!(
                f,
                " (checked {flow} flow, {anti} anti and {output} output dependences on {checked} tensor(s) with ISL; {preserved} tensor(s) keep their order without ISL)"
            )
        }
        R::Peeled {
            iv,
            prologue,
            epilogue,
            lb,
            lo,
            hi,
            ub,
        } => write!(
            f,
            "loop `{iv}`: peeled: a prologue of {prologue} statement(s) (iterations [{lb}, {lo})), the steady-state loop [{lo}, {hi}) without guards, an epilogue of {epilogue} statement(s) (iterations [{hi}, {ub}))"
        ),
        R::PeeledFlat {
            iv,
            trip,
            stages,
            iterations,
            statements,
        } => write!(
            f,
            "loop `{iv}`: peeled: no steady state ({trip} iteration(s) in {stages} stages): all {iterations} extended iterations are straight-line code, {statements} statement(s)"
        ),
        R::Foreign(remark) => fmt::Display::fmt(remark, f),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The remarks of the log, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineLog {
    pub remarks: Vec<PipelineRemark>,
}

impl PipelineLog {
    pub fn push(&mut self, remark: PipelineRemark) {
        self.remarks.push(remark);
    }

    /// Whether some line contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.remarks.iter().any(|r| r.to_string().contains(needle))
    }
}

impl fmt::Display for PipelineLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.remarks {
            writeln!(f, "pipeliner: {r}")?;
        }
        Ok(())
    }
}

/// A short description of a statement: `ta = load`, `acc = matmul`, `loop k`.
pub fn describe_stmt(func: &Function, stmt: Stmt) -> String {
    match &func.stmts[stmt].kind {
        StmtKind::Loop(axis) => format!("loop {}", func.display_iv(*axis)),
        StmtKind::Insts(insts) => match insts.last() {
            Some(&i) => {
                let d = &func.insts[i];
                format!("{} = {}", func.display_name(d.dst.tensor), d.op.name())
            }
            None => "(empty statement)".into(),
        },
    }
}
