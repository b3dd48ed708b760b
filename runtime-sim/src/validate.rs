//! The static checks of a program: which engine runs which opcode, which memories each operand
//! may name, operand shapes, registers in scope and indices in range.
//!
//! Everything that does not depend on iteration registers is checked here, once, before the
//! simulator runs; the simulator checks only addresses (bounds and PSUM banks) at run time. A
//! program that passes has: every register bound by an enclosing loop (never rebound), every
//! tensor and semaphore index in range, at most 4 dimensions of positive size per pattern,
//! partition counts in `1..=128`, queues below 16, and operand shapes that agree. A broken rule
//! is a [`Violation`] carrying the values it found; its `Display` is the message users read.

pub use crate::isa::tile_operands;
use crate::isa::*;
use crate::machine::{DMA_QUEUES, PARTITIONS};
use crate::text::inst_to_string;
use std::fmt;

/// A program that breaks a static rule, with the instruction's line and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidateError {
    pub engine: Engine,
    /// The instruction's line in the program text (0 when built in code).
    pub line: u32,
    pub inst: String,
    pub violation: Violation,
}

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {} instruction `{}`: {}",
            self.line,
            self.engine.name(),
            self.inst,
            self.violation
        )
    }
}

impl std::error::Error for ValidateError {}

/// The shape of an on-chip operand as the checks compare it: partitions and elements per
/// partition, shown `[P, F]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub p: u64,
    pub f: u64,
}

impl Shape {
    fn of(a: &Ap) -> Shape {
        Shape {
            p: a.np as u64,
            f: a.free_elems(),
        }
    }

    /// `[P, F]`'s transpose `[F, P]`.
    fn transposed(self) -> Shape {
        Shape {
            p: self.f,
            f: self.p,
        }
    }

    /// A `[P, 1]` column.
    fn column(p: u64) -> Shape {
        Shape { p, f: 1 }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.p, self.f)
    }
}

/// One broken static rule and the values that broke it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    // Registers, patterns and declarations.
    #[error("the loop register is out of range or already bound")]
    LoopRegister,
    #[error("register r{} is not bound by an enclosing loop", reg.0)]
    UnboundRegister { reg: Reg },
    #[error("a modulus must be positive")]
    NonPositiveModulus,
    #[error("an access pattern has at most {MAX_DIMS} dimensions")]
    TooManyDims,
    #[error("a dimension size must be positive")]
    EmptyDim,
    #[error("an access pattern covers {elems} elements per partition, more than {limit}")]
    TooManyElems { elems: u64, limit: u64 },
    #[error("a partition count must be 1..={PARTITIONS}")]
    PartitionCount,
    #[error("semaphore #{sem} is not declared")]
    UndeclaredSemaphore { sem: usize },
    #[error("tensor #{tensor} is not declared")]
    UndeclaredTensor { tensor: usize },

    // Engines and memories.
    #[error("`{op}` does not run on {}; it runs on {}", engine.name(), engine_names(runs_on))]
    WrongEngine {
        op: &'static str,
        engine: Engine,
        runs_on: &'static [Engine],
    },
    #[error("{} cannot access PSUM", psum_engine_name(*engine))]
    PsumAccess { engine: Engine },
    #[error("matmul writes PSUM from two SBUF operands")]
    MatmulMemories,
    #[error("transpose writes PSUM from an SBUF operand")]
    TransposeMemories,
    #[error("vector_transpose writes SBUF")]
    VectorTransposeMemory,

    // Operand shapes.
    #[error("{what} has shape {src}, but the destination is {dst} (a source is [P, F] or a [P, 1] column)")]
    ElementwiseSource {
        what: &'static str,
        src: Shape,
        dst: Shape,
    },
    #[error("copy of {src} into {dst}")]
    CopyShape { src: Shape, dst: Shape },
    #[error(
        "matmul shapes disagree: dst {dst} = a {a}ᵀ · b {b} needs a [K, M], b [K, N], dst [M, N]"
    )]
    MatmulShapes { dst: Shape, a: Shape, b: Shape },
    #[error("scan's {what} is {src} but the destination is {dst}")]
    ScanSource {
        what: &'static str,
        src: Shape,
        dst: Shape,
    },
    #[error("scan's initial value is {init} but must be {}", Shape::column(*partitions))]
    ScanInit { init: Shape, partitions: u64 },
    #[error("vector_transpose of {src}: the Vector engine transposes at most [{max}, {max}]")]
    VectorTransposeSize { src: Shape, max: u64 },
    #[error("{op} of {src} gives {want}, but the destination is {dst}")]
    OutputShape {
        op: &'static str,
        src: Shape,
        want: Shape,
        dst: Shape,
    },
    #[error(
        "{op} cannot read {src} (bn_stats reads at most {fmax} elements per partition; \
         bn_aggr a multiple of 3)"
    )]
    BnSource {
        op: &'static str,
        src: Shape,
        fmax: u64,
    },
    #[error("{op} reads {src}, fewer than {min} elements per partition")]
    Top8Source {
        op: &'static str,
        src: Shape,
        min: u64,
    },
    #[error("the values of {op} are {vals} but must be {want}")]
    Top8Values {
        op: &'static str,
        vals: Shape,
        want: Shape,
    },
    #[error("{op} {detail}")]
    GatherShape { op: &'static str, detail: String },
    #[error("dropout reads {src} into a destination of {dst}")]
    DropoutShape { src: Shape, dst: Shape },
    #[error("the probability of dropout is {prob} but must be {}", Shape::column(*partitions))]
    DropoutProbability { prob: Shape, partitions: u64 },
    #[error("activation of {src} into {dst}")]
    ActivationShape { src: Shape, dst: Shape },
    #[error("the {what} is {tile}, not a {} column", Shape::column(*partitions))]
    ActivationColumn {
        what: &'static str,
        tile: Shape,
        partitions: u64,
    },

    // DMA.
    #[error("DMA queue q{queue} does not exist (q0..q15)")]
    DmaQueue { queue: u8 },
    #[error("a DMA moves data between HBM and SBUF: one side `hbm`, the other `sbuf`")]
    DmaSides,
    #[error("a DMA reaches SBUF only, not PSUM")]
    DmaPsum,
    #[error("an indirect DMA's HBM side has no dimension")]
    IndirectNoDim,
    #[error("the SBUF side moves {sbuf} elements but the HBM side {hbm}")]
    DmaElems { sbuf: u64, hbm: u64 },
    #[error("the index of an indirect DMA is an SBUF tile of one element in each of the {partitions} partitions of its tile side")]
    DmaIndex { partitions: u32 },
    #[error("`skip_oob` is a mode of an indirect DMA (one with `index`)")]
    SkipOobDirect,
    #[error("`add` (a read-modify-write DMA) needs an HBM destination")]
    AddNotHbm,
}

fn engine_names(engines: &[Engine]) -> String {
    let names: Vec<&str> = engines.iter().map(|e| e.name()).collect();
    names.join(", ")
}

fn psum_engine_name(e: Engine) -> &'static str {
    match e {
        Engine::Pool => "GpSimd (pool)",
        _ => e.name(),
    }
}

/// Checks a program; the first broken rule is the error.
pub fn validate(p: &Program) -> Result<(), ValidateError> {
    for e in Engine::ALL {
        let mut bound = Vec::new();
        check_stmts(p, e, p.stream(e), &mut bound)?;
    }
    Ok(())
}

/// A DMA's mode: skipping out-of-range indices needs an index, adding needs an HBM destination.
fn check_dma_mode(dst: &DmaSide, index: Option<&Ap>, mode: DmaMode) -> Result<(), Violation> {
    if mode.skip_oob && index.is_none() {
        return Err(Violation::SkipOobDirect);
    }
    if mode.accumulate && !matches!(dst, DmaSide::Hbm(_)) {
        return Err(Violation::AddNotHbm);
    }
    Ok(())
}

fn check_stmts(
    p: &Program,
    e: Engine,
    stmts: &[Stmt],
    bound: &mut Vec<Reg>,
) -> Result<(), ValidateError> {
    for s in stmts {
        match s {
            Stmt::Loop(l) => {
                if bound.contains(&l.reg) || l.reg.0 as usize >= MAX_REGS {
                    return Err(ValidateError {
                        engine: e,
                        line: 0,
                        inst: format!("loop r{}", l.reg.0),
                        violation: Violation::LoopRegister,
                    });
                }
                bound.push(l.reg);
                check_stmts(p, e, &l.body, bound)?;
                bound.pop();
            }
            Stmt::Inst(i) => {
                check_inst(p, e, i, bound).map_err(|violation| ValidateError {
                    engine: e,
                    line: i.pos,
                    inst: inst_to_string(p, i),
                    violation,
                })?;
            }
        }
    }
    Ok(())
}

/// The engines that can run an operation (MACHINE.md "Engines").
pub fn engines_of(op: &Op) -> &'static [Engine] {
    use Engine::*;
    match op {
        Op::Matmul { .. } | Op::Transpose { .. } => &[Pe],
        Op::Activation { .. } => &[Act],
        Op::Copy { .. } => &[Act, Dve, Pool],
        Op::TensorTensor { .. } | Op::TensorScalar { .. } | Op::Memset { .. } => &[Dve, Pool],
        Op::Reduce { .. } => &[Dve],
        Op::Iota { .. } => &[Pool],
        Op::TensorTensorScan { .. }
        | Op::BnStats { .. }
        | Op::BnAggr { .. }
        | Op::VectorTranspose { .. } => &[Dve],
        Op::Max8 { .. } | Op::FindIndex8 { .. } | Op::MatchReplace8 { .. } => &[Dve],
        Op::Rand { .. } | Op::Dropout { .. } | Op::Shuffle { .. } => &[Dve],
        Op::LocalGather { .. } | Op::SequenceBounds { .. } => &[Pool],
        Op::Dma { .. } => &[Sp],
        Op::Signal { .. } | Op::Wait { .. } => &[Pe, Act, Dve, Pool, Sp],
    }
}

fn check_expr(e: &Expr, bound: &[Reg]) -> Result<(), Violation> {
    for t in &e.terms {
        let (Term::Lin { reg, .. } | Term::Mod { reg, .. }) = *t;
        if !bound.contains(&reg) {
            return Err(Violation::UnboundRegister { reg });
        }
        if let Term::Mod { modulus, .. } = *t {
            if modulus <= 0 {
                return Err(Violation::NonPositiveModulus);
            }
        }
    }
    Ok(())
}

fn check_dims(dims: &[Dim], limit: u64) -> Result<(), Violation> {
    if dims.len() > MAX_DIMS {
        return Err(Violation::TooManyDims);
    }
    if dims.iter().any(|d| d.size == 0) {
        return Err(Violation::EmptyDim);
    }
    let elems = dims.iter().fold(1u64, |a, d| a.saturating_mul(d.size));
    if elems > limit {
        return Err(Violation::TooManyElems { elems, limit });
    }
    Ok(())
}

fn shape(a: &Ap) -> Shape {
    Shape::of(a)
}

/// A source of an elementwise op: the destination's shape, or `[P, 1]`.
fn check_elementwise_src(dst: &Ap, src: &Ap, what: &'static str) -> Result<(), Violation> {
    let (d, s) = (shape(dst), shape(src));
    if s.p == d.p && (s.f == d.f || s.f == 1) {
        Ok(())
    } else {
        Err(Violation::ElementwiseSource {
            what,
            src: s,
            dst: d,
        })
    }
}

/// `op`'s destination has the shape `want` that its source `src` gives.
fn check_output(op: &'static str, dst: &Ap, src: &Ap, want: Shape) -> Result<(), Violation> {
    if shape(dst) != want {
        return Err(Violation::OutputShape {
            op,
            src: shape(src),
            want,
            dst: shape(dst),
        });
    }
    Ok(())
}

/// One instruction on engine `e`, in loops binding `bound`: the engine runs it, its guard,
/// signal and tile operands are well formed, and its operands agree ([`check_operands`]).
fn check_inst(p: &Program, e: Engine, i: &Inst, bound: &[Reg]) -> Result<(), Violation> {
    let op = &i.op;
    check_engine(op, e)?;
    for c in &i.pred {
        check_expr(&c.lhs, bound)?;
        check_expr(&c.rhs, bound)?;
    }
    if let Some(sem) = i.signal {
        check_semaphore(p, sem)?;
    }
    check_tiles(op, e, bound)?;
    check_operands(p, op, bound)
}

/// Engine `e` runs `op`.
fn check_engine(op: &Op, e: Engine) -> Result<(), Violation> {
    if !engines_of(op).contains(&e) {
        return Err(Violation::WrongEngine {
            op: op.name(),
            engine: e,
            runs_on: engines_of(op),
        });
    }
    Ok(())
}

fn check_semaphore(p: &Program, sem: usize) -> Result<(), Violation> {
    if sem >= p.semaphores.len() {
        return Err(Violation::UndeclaredSemaphore { sem });
    }
    Ok(())
}

/// Every on-chip operand of `op` on engine `e`: expressions over bound registers, dimensions
/// within the limits, partitions `1..=PARTITIONS`, PSUM only from an engine that reaches it.
fn check_tiles(op: &Op, e: Engine, bound: &[Reg]) -> Result<(), Violation> {
    for a in tile_operands(op) {
        check_expr(&a.p0, bound)?;
        check_expr(&a.start, bound)?;
        check_dims(&a.dims, MAX_FREE_ELEMS)?;
        if a.np == 0 || a.np > PARTITIONS {
            return Err(Violation::PartitionCount);
        }
        if a.mem == Mem::Psum && !e.can_access_psum() {
            return Err(Violation::PsumAccess { engine: e });
        }
    }
    Ok(())
}

/// The operands of `op` agree: memories, shapes, queues, declared tensors and semaphores.
fn check_operands(p: &Program, op: &Op, bound: &[Reg]) -> Result<(), Violation> {
    match op {
        Op::Matmul { dst, a, b, .. } => check_matmul(dst, a, b)?,
        Op::Transpose { dst, src } => check_transpose(dst, src)?,
        Op::Activation {
            dst,
            src,
            scale,
            bias,
            ..
        } => check_activation(dst, src, scale, bias.as_ref())?,
        Op::TensorTensor { dst, a, b, .. } => {
            check_elementwise_src(dst, a, "the first source")?;
            check_elementwise_src(dst, b, "the second source")?;
        }
        Op::TensorScalar { dst, src, .. } => check_elementwise_src(dst, src, "the source")?,
        Op::Copy { dst, src } => {
            if shape(dst) != shape(src) {
                return Err(Violation::CopyShape {
                    src: shape(src),
                    dst: shape(dst),
                });
            }
        }
        Op::Reduce { dst, src, .. } => {
            check_output("reduce", dst, src, Shape::column(src.np as u64))?
        }
        Op::TensorTensorScan {
            dst, a, b, init, ..
        } => check_scan(dst, a, b, init)?,
        Op::VectorTranspose { dst, src } => check_vector_transpose(dst, src)?,
        Op::BnStats { dst, src } | Op::BnAggr { dst, src } => check_bn(op, dst, src)?,
        Op::Max8 { dst, src }
        | Op::FindIndex8 { dst, src, .. }
        | Op::MatchReplace8 { dst, src, .. } => check_top8(op, dst, src)?,
        Op::Dropout { dst, src, prob, .. } => check_dropout(dst, src, prob)?,
        Op::Shuffle { .. } | Op::LocalGather { .. } | Op::SequenceBounds { .. } => {
            check_gather_moves(op)?
        }
        Op::Memset { .. } | Op::Iota { .. } | Op::Rand { .. } => {}
        Op::Dma {
            queue,
            dst,
            src,
            index,
            mode,
        } => {
            check_dma(p, *queue, dst, src, index.as_ref(), bound)?;
            check_dma_mode(dst, index.as_ref(), *mode)?;
        }
        Op::Signal { sem } | Op::Wait { sem, .. } => {
            check_semaphore(p, *sem)?;
            if let Op::Wait { value, .. } = op {
                check_expr(value, bound)?;
            }
        }
    }
    Ok(())
}

/// A matmul writes PSUM `[M, N]` from SBUF `a` `[K, M]` and `b` `[K, N]`.
fn check_matmul(dst: &Ap, a: &Ap, b: &Ap) -> Result<(), Violation> {
    if dst.mem != Mem::Psum || a.mem != Mem::Sbuf || b.mem != Mem::Sbuf {
        return Err(Violation::MatmulMemories);
    }
    let (sa, sb) = (shape(a), shape(b));
    if sa.p != sb.p || shape(dst) != (Shape { p: sa.f, f: sb.f }) {
        return Err(Violation::MatmulShapes {
            dst: shape(dst),
            a: sa,
            b: sb,
        });
    }
    Ok(())
}

/// A transpose writes PSUM from SBUF, its destination the source's shape transposed.
fn check_transpose(dst: &Ap, src: &Ap) -> Result<(), Violation> {
    if dst.mem != Mem::Psum || src.mem != Mem::Sbuf {
        return Err(Violation::TransposeMemories);
    }
    check_output("transpose", dst, src, shape(src).transposed())
}

/// A scan's sources are its destination's shape, its initial value a `[P, 1]` column.
fn check_scan(dst: &Ap, a: &Ap, b: &Ap, init: &Ap) -> Result<(), Violation> {
    for (x, what) in [(a, "the first source"), (b, "the second source")] {
        if shape(x) != shape(dst) {
            return Err(Violation::ScanSource {
                what,
                src: shape(x),
                dst: shape(dst),
            });
        }
    }
    if shape(init) != Shape::column(dst.np as u64) {
        return Err(Violation::ScanInit {
            init: shape(init),
            partitions: dst.np as u64,
        });
    }
    Ok(())
}

/// The Vector engine's transpose: at most `[DVE_TRANSPOSE_MAX, DVE_TRANSPOSE_MAX]`, into SBUF.
fn check_vector_transpose(dst: &Ap, src: &Ap) -> Result<(), Violation> {
    let s = shape(src);
    check_output("vector_transpose", dst, src, s.transposed())?;
    let max = vocab::machine::DVE_TRANSPOSE_MAX;
    if s.p > max || s.f > max {
        return Err(Violation::VectorTransposeSize { src: s, max });
    }
    if dst.mem != Mem::Sbuf {
        return Err(Violation::VectorTransposeMemory);
    }
    Ok(())
}

/// `bn_stats` and `bn_aggr` (`op`): their output width, and what the source may hold.
fn check_bn(op: &Op, dst: &Ap, src: &Ap) -> Result<(), Violation> {
    let (name, width) = match op {
        Op::BnStats { .. } => ("bn_stats", vocab::BN_STATS_WIDTH as u64),
        _ => ("bn_aggr", vocab::BN_AGGR_WIDTH as u64),
    };
    let want = Shape {
        p: src.np as u64,
        f: width,
    };
    check_output(name, dst, src, want)?;
    let limit_ok = match op {
        Op::BnStats { .. } => src.free_elems() <= vocab::machine::BN_STATS_FMAX,
        _ => src.free_elems().is_multiple_of(3),
    };
    if !limit_ok {
        return Err(Violation::BnSource {
            op: name,
            src: shape(src),
            fmax: vocab::machine::BN_STATS_FMAX,
        });
    }
    Ok(())
}

/// The top-8 operations (`op`): a source of at least `TOP8_MIN_FREE` elements per partition, the
/// destination's shape, and the values' `[P, 8]`.
fn check_top8(op: &Op, dst: &Ap, src: &Ap) -> Result<(), Violation> {
    let top = vocab::TOP8 as u64;
    let s = shape(src);
    if s.f < vocab::TOP8_MIN_FREE as u64 {
        return Err(Violation::Top8Source {
            op: op.name(),
            src: s,
            min: vocab::TOP8_MIN_FREE as u64,
        });
    }
    let values = Shape { p: s.p, f: top };
    let want = match op {
        Op::MatchReplace8 { .. } => s,
        _ => values,
    };
    check_output(op.name(), dst, src, want)?;
    if let Op::FindIndex8 { vals, .. } | Op::MatchReplace8 { vals, .. } = op {
        if shape(vals) != values {
            return Err(Violation::Top8Values {
                op: op.name(),
                vals: shape(vals),
                want: values,
            });
        }
    }
    Ok(())
}

/// `shuffle`, `local_gather` and `sequence_bounds` (`op`): the shapes their parameters give
/// (`vocab::gather_ops`).
fn check_gather_moves(op: &Op) -> Result<(), Violation> {
    let bad = |detail: String| {
        Err(Violation::GatherShape {
            op: op.name(),
            detail,
        })
    };
    match op {
        Op::Shuffle { dst, src, mask } => {
            let (d, s) = (shape(dst), shape(src));
            let reach = (0..d.p as usize)
                .filter_map(|r| vocab::shuffle_source(mask, r))
                .max();
            if s.f != d.f || reach.is_some_and(|r| r as u64 >= s.p) {
                return bad(format!("of {s} into {d} reads row {}", reach.unwrap_or(0)));
            }
        }
        Op::LocalGather {
            dst,
            src,
            index,
            group,
            elems,
        } => {
            let (d, s, i) = (shape(dst), shape(src), shape(index));
            let (g, e) = (u64::from(*group), u64::from(*elems));
            let count = d.f.checked_div(e).unwrap_or(0);
            let ok = g > 0
                && e > 0
                && d.f % e == 0
                && d.p == s.p
                && i.p == s.p
                && s.p % g == 0
                && count <= g * i.f
                && e <= s.f
                && src.mem == Mem::Sbuf
                && index.mem == Mem::Sbuf
                && dst.mem == Mem::Sbuf;
            if !ok {
                return bad(format!(
                    "of {s} by indices {i} in groups of {group}, {elems} per index, into {d}"
                ));
            }
        }
        Op::SequenceBounds { dst, src } => {
            let (d, s) = (shape(dst), shape(src));
            check_output("sequence_bounds", dst, src, Shape { p: s.p, f: 2 * s.f })?;
            if src.mem != Mem::Sbuf || dst.mem != Mem::Sbuf {
                return bad(format!("of {s} into {d} must stay in SBUF"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// `dropout`: the data and the destination of one shape, the probability one column.
fn check_dropout(dst: &Ap, src: &Ap, prob: &Ap) -> Result<(), Violation> {
    let d = shape(dst);
    if shape(src) != d {
        return Err(Violation::DropoutShape {
            src: shape(src),
            dst: d,
        });
    }
    if shape(prob) != Shape::column(d.p) {
        return Err(Violation::DropoutProbability {
            prob: shape(prob),
            partitions: d.p,
        });
    }
    Ok(())
}

/// An activation's operands: the destination's shape is the source's, and a tile scale or bias
/// is a `[P, 1]` column.
fn check_activation(dst: &Ap, src: &Ap, scale: &Scale, bias: Option<&Ap>) -> Result<(), Violation> {
    if shape(dst) != shape(src) {
        return Err(Violation::ActivationShape {
            src: shape(src),
            dst: shape(dst),
        });
    }
    for (what, t) in [("scale", scale_tile(scale)), ("bias", bias)] {
        if let Some(t) = t {
            if shape(t) != Shape::column(dst.np as u64) {
                return Err(Violation::ActivationColumn {
                    what,
                    tile: shape(t),
                    partitions: dst.np as u64,
                });
            }
        }
    }
    Ok(())
}

/// A DMA's operands: an existing queue, one SBUF tile and one declared HBM tensor, moving the
/// same number of elements.
fn check_dma(
    p: &Program,
    queue: u8,
    dst: &DmaSide,
    src: &DmaSide,
    index: Option<&Ap>,
    bound: &[Reg],
) -> Result<(), Violation> {
    if queue as usize >= DMA_QUEUES {
        return Err(Violation::DmaQueue { queue });
    }
    let (tile, hbm) = match (dst, src) {
        (DmaSide::Tile(t), DmaSide::Hbm(h)) | (DmaSide::Hbm(h), DmaSide::Tile(t)) => (t, h),
        _ => return Err(Violation::DmaSides),
    };
    if tile.mem != Mem::Sbuf {
        return Err(Violation::DmaPsum);
    }
    if hbm.tensor >= p.tensors.len() {
        return Err(Violation::UndeclaredTensor { tensor: hbm.tensor });
    }
    check_expr(&hbm.start, bound)?;
    check_dims(&hbm.dims, MAX_FREE_ELEMS * PARTITIONS as u64)?;
    let sbuf = (tile.np as u64).saturating_mul(tile.free_elems());
    // An indirect DMA moves one index of the HBM side's outermost dimension per partition.
    let moved = match (index, hbm.dims.first()) {
        (None, _) => hbm.elems(),
        (Some(_), Some(d)) => (hbm.elems() / d.size.max(1)).saturating_mul(tile.np as u64),
        (Some(_), None) => return Err(Violation::IndirectNoDim),
    };
    if sbuf != moved {
        return Err(Violation::DmaElems { sbuf, hbm: moved });
    }
    if let Some(idx) = index {
        if idx.mem != Mem::Sbuf || idx.np != tile.np || idx.free_elems() != 1 {
            return Err(Violation::DmaIndex {
                partitions: tile.np,
            });
        }
    }
    Ok(())
}

fn scale_tile(s: &Scale) -> Option<&Ap> {
    match s {
        Scale::Tile(t) => Some(t),
        Scale::Imm(_) => None,
    }
}
