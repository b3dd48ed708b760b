//! The static checks of a program: which engine runs which opcode, which memories each operand
//! may name, operand shapes, registers in scope and indices in range.
//!
//! Everything that does not depend on iteration registers is checked here, once, before the
//! simulator runs; the simulator checks only addresses (bounds and PSUM banks) at run time. A
//! program that passes has: every register bound by an enclosing loop (never rebound), every
//! tensor and semaphore index in range, at most 4 dimensions of positive size per pattern,
//! partition counts in `1..=128`, queues below 16, and operand shapes that agree.

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
    pub message: String,
}

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {} instruction `{}`: {}",
            self.line,
            self.engine.name(),
            self.inst,
            self.message
        )
    }
}

impl std::error::Error for ValidateError {}

/// Checks a program; the first broken rule is the error.
pub fn validate(p: &Program) -> Result<(), ValidateError> {
    for e in Engine::ALL {
        let mut bound = Vec::new();
        check_stmts(p, e, p.stream(e), &mut bound)?;
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
                        message: "the loop register is out of range or already bound".into(),
                    });
                }
                bound.push(l.reg);
                check_stmts(p, e, &l.body, bound)?;
                bound.pop();
            }
            Stmt::Inst(i) => {
                check_inst(p, e, i, bound).map_err(|message| ValidateError {
                    engine: e,
                    line: i.pos,
                    inst: inst_to_string(p, i),
                    message,
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
        Op::Rand { .. } | Op::Dropout { .. } => &[Dve],
        Op::Dma { .. } => &[Sp],
        Op::Signal { .. } | Op::Wait { .. } => &[Pe, Act, Dve, Pool, Sp],
    }
}

fn check_expr(e: &Expr, bound: &[Reg]) -> Result<(), String> {
    for t in &e.terms {
        let (Term::Lin { reg, .. } | Term::Mod { reg, .. }) = *t;
        if !bound.contains(&reg) {
            return Err(format!(
                "register r{} is not bound by an enclosing loop",
                reg.0
            ));
        }
        if let Term::Mod { modulus, .. } = *t {
            if modulus <= 0 {
                return Err("a modulus must be positive".into());
            }
        }
    }
    Ok(())
}

fn check_dims(dims: &[Dim], limit: u64) -> Result<(), String> {
    if dims.len() > MAX_DIMS {
        return Err(format!(
            "an access pattern has at most {MAX_DIMS} dimensions"
        ));
    }
    if dims.iter().any(|d| d.size == 0) {
        return Err("a dimension size must be positive".into());
    }
    let n = dims.iter().fold(1u64, |a, d| a.saturating_mul(d.size));
    if n > limit {
        return Err(format!(
            "an access pattern covers {n} elements per partition, more than {limit}"
        ));
    }
    Ok(())
}

fn shape(a: &Ap) -> (u64, u64) {
    (a.np as u64, a.free_elems())
}

fn fmt_shape(a: &Ap) -> String {
    let (p, f) = shape(a);
    format!("[{p}, {f}]")
}

/// A source of an elementwise op: the destination's shape, or `[P, 1]`.
fn check_elementwise_src(dst: &Ap, src: &Ap, what: &str) -> Result<(), String> {
    let (p, f) = shape(dst);
    let (sp, sf) = shape(src);
    if sp == p && (sf == f || sf == 1) {
        Ok(())
    } else {
        Err(format!(
            "{what} has shape {}, but the destination is {} (a source is [P, F] or a [P, 1] column)",
            fmt_shape(src),
            fmt_shape(dst)
        ))
    }
}

/// One instruction on engine `e`, in loops binding `bound`: the engine runs it, its guard,
/// signal and tile operands are well formed, and its operands agree ([`check_operands`]).
fn check_inst(p: &Program, e: Engine, i: &Inst, bound: &[Reg]) -> Result<(), String> {
    let op = &i.op;
    check_engine(op, e)?;
    for c in &i.pred {
        check_expr(&c.lhs, bound)?;
        check_expr(&c.rhs, bound)?;
    }
    if let Some(s) = i.signal {
        if s >= p.semaphores.len() {
            return Err(format!("semaphore #{s} is not declared"));
        }
    }
    check_tiles(op, e, bound)?;
    check_operands(p, op, bound)
}

/// Engine `e` runs `op`.
fn check_engine(op: &Op, e: Engine) -> Result<(), String> {
    if !engines_of(op).contains(&e) {
        let names: Vec<&str> = engines_of(op).iter().map(|e| e.name()).collect();
        return Err(format!(
            "`{}` does not run on {}; it runs on {}",
            op.name(),
            e.name(),
            names.join(", ")
        ));
    }
    Ok(())
}

/// Every on-chip operand of `op` on engine `e`: expressions over bound registers, dimensions
/// within the limits, partitions `1..=PARTITIONS`, PSUM only from an engine that reaches it.
fn check_tiles(op: &Op, e: Engine, bound: &[Reg]) -> Result<(), String> {
    for a in tile_operands(op) {
        check_expr(&a.p0, bound)?;
        check_expr(&a.start, bound)?;
        check_dims(&a.dims, MAX_FREE_ELEMS)?;
        if a.np == 0 || a.np > PARTITIONS {
            return Err(format!("a partition count must be 1..={PARTITIONS}"));
        }
        if a.mem == Mem::Psum && !e.can_access_psum() {
            return Err(match e {
                Engine::Pool => "GpSimd (pool) cannot access PSUM".into(),
                _ => format!("{} cannot access PSUM", e.name()),
            });
        }
    }
    Ok(())
}

/// The operands of `op` agree: memories, shapes, queues, declared tensors and semaphores.
fn check_operands(p: &Program, op: &Op, bound: &[Reg]) -> Result<(), String> {
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
                return Err(format!(
                    "copy of {} into {}",
                    fmt_shape(src),
                    fmt_shape(dst)
                ));
            }
        }
        Op::Reduce { dst, src, .. } => {
            if shape(dst) != (src.np as u64, 1) {
                return Err(format!(
                    "reduce of {} gives [{}, 1], but the destination is {}",
                    fmt_shape(src),
                    src.np,
                    fmt_shape(dst)
                ));
            }
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
        Op::Memset { .. } | Op::Iota { .. } | Op::Rand { .. } => {}
        Op::Dma {
            queue,
            dst,
            src,
            index,
        } => check_dma(p, *queue, dst, src, index.as_ref(), bound)?,
        Op::Signal { sem } | Op::Wait { sem, .. } => {
            if *sem >= p.semaphores.len() {
                return Err(format!("semaphore #{sem} is not declared"));
            }
            if let Op::Wait { value, .. } = op {
                check_expr(value, bound)?;
            }
        }
    }
    Ok(())
}

/// A matmul writes PSUM `[M, N]` from SBUF `a` `[K, M]` and `b` `[K, N]`.
fn check_matmul(dst: &Ap, a: &Ap, b: &Ap) -> Result<(), String> {
    if dst.mem != Mem::Psum || a.mem != Mem::Sbuf || b.mem != Mem::Sbuf {
        return Err("matmul writes PSUM from two SBUF operands".into());
    }
    let ((k, m), (kb, n)) = (shape(a), shape(b));
    if k != kb || shape(dst) != (m, n) {
        return Err(format!(
            "matmul shapes disagree: dst {} = a {}ᵀ · b {} needs a [K, M], b [K, N], dst [M, N]",
            fmt_shape(dst),
            fmt_shape(a),
            fmt_shape(b)
        ));
    }
    Ok(())
}

/// A transpose writes PSUM from SBUF, its destination the source's shape transposed.
fn check_transpose(dst: &Ap, src: &Ap) -> Result<(), String> {
    if dst.mem != Mem::Psum || src.mem != Mem::Sbuf {
        return Err("transpose writes PSUM from an SBUF operand".into());
    }
    let (sp, sf) = shape(src);
    if shape(dst) != (sf, sp) {
        return Err(format!(
            "transpose of {} gives [{sf}, {sp}], but the destination is {}",
            fmt_shape(src),
            fmt_shape(dst)
        ));
    }
    Ok(())
}

/// A scan's sources are its destination's shape, its initial value a `[P, 1]` column.
fn check_scan(dst: &Ap, a: &Ap, b: &Ap, init: &Ap) -> Result<(), String> {
    for (x, what) in [(a, "the first source"), (b, "the second source")] {
        if shape(x) != shape(dst) {
            return Err(format!(
                "scan's {what} is {} but the destination is {}",
                fmt_shape(x),
                fmt_shape(dst)
            ));
        }
    }
    if shape(init) != (dst.np as u64, 1) {
        return Err(format!(
            "scan's initial value is {} but must be [{}, 1]",
            fmt_shape(init),
            dst.np
        ));
    }
    Ok(())
}

/// The Vector engine's transpose: at most `[DVE_TRANSPOSE_MAX, DVE_TRANSPOSE_MAX]`, into SBUF.
fn check_vector_transpose(dst: &Ap, src: &Ap) -> Result<(), String> {
    let (sp, sf) = shape(src);
    if shape(dst) != (sf, sp) {
        return Err(format!(
            "vector_transpose of {} gives [{sf}, {sp}], but the destination is {}",
            fmt_shape(src),
            fmt_shape(dst)
        ));
    }
    let max = vocab::machine::DVE_TRANSPOSE_MAX;
    if sp > max || sf > max {
        return Err(format!(
            "vector_transpose of {}: the Vector engine transposes at most [{max}, {max}]",
            fmt_shape(src)
        ));
    }
    if dst.mem != Mem::Sbuf {
        return Err("vector_transpose writes SBUF".to_string());
    }
    Ok(())
}

/// `bn_stats` and `bn_aggr` (`op`): their output width, and what the source may hold.
fn check_bn(op: &Op, dst: &Ap, src: &Ap) -> Result<(), String> {
    let (name, width) = match op {
        Op::BnStats { .. } => ("bn_stats", vocab::BN_STATS_WIDTH as u64),
        _ => ("bn_aggr", vocab::BN_AGGR_WIDTH as u64),
    };
    if shape(dst) != (src.np as u64, width) {
        return Err(format!(
            "{name} of {} gives [{}, {width}], but the destination is {}",
            fmt_shape(src),
            src.np,
            fmt_shape(dst)
        ));
    }
    let limit_ok = match op {
        Op::BnStats { .. } => src.free_elems() <= vocab::machine::BN_STATS_FMAX,
        _ => src.free_elems().is_multiple_of(3),
    };
    if !limit_ok {
        return Err(format!(
            "{name} cannot read {} (bn_stats reads at most {} elements per partition; \
             bn_aggr a multiple of 3)",
            fmt_shape(src),
            vocab::machine::BN_STATS_FMAX
        ));
    }
    Ok(())
}

/// The top-8 operations (`op`): a source of at least `TOP8_MIN_FREE` elements per partition, the
/// destination's shape, and the values' `[P, 8]`.
fn check_top8(op: &Op, dst: &Ap, src: &Ap) -> Result<(), String> {
    let top = vocab::TOP8 as u64;
    let (sp, sf) = shape(src);
    if sf < vocab::TOP8_MIN_FREE as u64 {
        return Err(format!(
            "{} reads {}, fewer than {} elements per partition",
            op.name(),
            fmt_shape(src),
            vocab::TOP8_MIN_FREE
        ));
    }
    let want = match op {
        Op::MatchReplace8 { .. } => (sp, sf),
        _ => (sp, top),
    };
    if shape(dst) != want {
        return Err(format!(
            "{} of {} gives [{}, {}], but the destination is {}",
            op.name(),
            fmt_shape(src),
            want.0,
            want.1,
            fmt_shape(dst)
        ));
    }
    if let Op::FindIndex8 { vals, .. } | Op::MatchReplace8 { vals, .. } = op {
        if shape(vals) != (sp, top) {
            return Err(format!(
                "the values of {} are {} but must be [{sp}, {top}]",
                op.name(),
                fmt_shape(vals)
            ));
        }
    }
    Ok(())
}

/// `dropout`: the data and the destination of one shape, the probability one column.
fn check_dropout(dst: &Ap, src: &Ap, prob: &Ap) -> Result<(), String> {
    let (dp, df) = shape(dst);
    if shape(src) != (dp, df) {
        return Err(format!(
            "dropout reads {} into a destination of {}",
            fmt_shape(src),
            fmt_shape(dst)
        ));
    }
    if shape(prob) != (dp, 1) {
        return Err(format!(
            "the probability of dropout is {} but must be [{dp}, 1]",
            fmt_shape(prob)
        ));
    }
    Ok(())
}

/// An activation's operands: the destination's shape is the source's, and a tile scale or bias
/// is a `[P, 1]` column.
fn check_activation(dst: &Ap, src: &Ap, scale: &Scale, bias: Option<&Ap>) -> Result<(), String> {
    if shape(dst) != shape(src) {
        return Err(format!(
            "activation of {} into {}",
            fmt_shape(src),
            fmt_shape(dst)
        ));
    }
    for (what, t) in [("scale", scale_tile(scale)), ("bias", bias)] {
        if let Some(t) = t {
            if shape(t) != (dst.np as u64, 1) {
                return Err(format!(
                    "the {what} is {}, not a [{}, 1] column",
                    fmt_shape(t),
                    dst.np
                ));
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
) -> Result<(), String> {
    if queue as usize >= DMA_QUEUES {
        return Err(format!("DMA queue q{queue} does not exist (q0..q15)"));
    }
    let (tile, hbm) = match (dst, src) {
        (DmaSide::Tile(t), DmaSide::Hbm(h)) | (DmaSide::Hbm(h), DmaSide::Tile(t)) => (t, h),
        _ => {
            return Err(
                "a DMA moves data between HBM and SBUF: one side `hbm`, the other `sbuf`".into(),
            )
        }
    };
    if tile.mem != Mem::Sbuf {
        return Err("a DMA reaches SBUF only, not PSUM".into());
    }
    if hbm.tensor >= p.tensors.len() {
        return Err(format!("tensor #{} is not declared", hbm.tensor));
    }
    check_expr(&hbm.start, bound)?;
    check_dims(&hbm.dims, MAX_FREE_ELEMS * PARTITIONS as u64)?;
    let n = (tile.np as u64).saturating_mul(tile.free_elems());
    // An indirect DMA moves one index of the HBM side's outermost dimension per partition.
    let moved = match (index, hbm.dims.first()) {
        (None, _) => hbm.elems(),
        (Some(_), Some(d)) => (hbm.elems() / d.size.max(1)).saturating_mul(tile.np as u64),
        (Some(_), None) => return Err("an indirect DMA's HBM side has no dimension".into()),
    };
    if n != moved {
        return Err(format!(
            "the SBUF side moves {n} elements but the HBM side {moved}"
        ));
    }
    if let Some(idx) = index {
        if idx.mem != Mem::Sbuf || idx.np != tile.np || idx.free_elems() != 1 {
            return Err(format!(
                "the index of an indirect DMA is an SBUF tile of one element in each of the {} partitions of its tile side",
                tile.np
            ));
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
