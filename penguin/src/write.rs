//! The printer of Penguin IR's text form.
//!
//! [`write_function`] renders a [`Function`] as text that [`crate::parse::parse_function`] reads
//! back. The form is line-oriented and names entities by their source names, never by number:
//!
//! ```text
//! kernel tensor_add(a, b) -> (c) {
//!   tensor a: hbm f32[2048, 512] input
//!   tensor b: hbm f32[2048, 512] input
//!   tensor c: hbm f32[2048, 512] output
//!   tensor ta: sbuf f32[128, 512] local block[i: 2]
//!   loop i in 0..18 affine num_stages=3 pipelined(stages=3, trip=16) {
//!     stmt stage_id=0 execution_order=2 stage=0 if i >= 0 && i < 16 {
//!       ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
//!     }
//!   }
//! }
//! ```
//!
//! - `kernel NAME(params) -> (outputs)`: the parameters and outputs in order.
//! - `tensor NAME: MEMORY DTYPE[SHAPE] KIND [block[IV: COUNT, ...]]`, one line per tensor, in entity
//!   order, before any statement; a `const` tensor ends with its values, row-major, as runs
//!   `= [1.0, 0.0*128, 1.0, ...]` (`VALUE*COUNT`: that many equal values).
//! - `loop IV in LB..UB KIND [num_stages=N | num_stages=auto] [multi_buffer=N] [disable_auto_buffer]
//!   [disable_execution_order_check] [pipelined(stages=N, trip=T[, peeled])] STMT-ATTRS { ... }`: a loop
//!   statement with its axis.
//! - `stmt STMT-ATTRS { INST ... }`: an instruction statement, one instruction per line.
//! - STMT-ATTRS are `[stage_id=N] [execution_order=N] [stage=N] [if PRED && PRED ...]`: the source
//!   annotations, the stage tag set by the pipeliner, and the predicates (`EXPR >= N`, `EXPR < N`,
//!   `EXPR == N`).
//! - An instruction is `DST = OP.ENGINE[(PARAMS)] SRC, SRC, ...`. An operand is
//!   `TENSOR[{SLOT, ...}][START +: SIZE, ...]`: the slot selectors (one per block dimension, taken
//!   modulo its count) in braces, then one affine start and one constant size per dimension.
//!   A general access pattern is `TENSOR[{SLOT, ...}][START, ... : (COUNT: STEP, ...), ...]`:
//!   one affine start per dimension, then the value's axes, partition axis first, each a count
//!   and one integer step per tensor dimension (`x[0, 4 : (2: 1, 0), (3: 0, 2)]` is rows 0..2,
//!   columns 4, 6, 8). Its size is not written: it is the pattern's bounding box.
//!   A masked instruction ends with `mask(BOUND, ...)`, each bound `p >= EXPR`, `p < EXPR`,
//!   `f >= EXPR` or `f < EXPR` over its partition (`p`) or free (`f`) index.
//! - Op parameters are all written, as `key=value`: `matmul(accumulate=B)`, `tensor_tensor(op=ALU)`,
//!   `tensor_scalar(op=ALU, imm=F, reverse=B)`, `activation(func=F, scale=F|tile, bias=B)`,
//!   `reduce(op=R)`, `memset(value=F)`.
//! - Floats are written with Rust's `{:?}`, which reads back bit-exactly (`inf`, `-inf`, `NaN` for
//!   the canonical NaN); any other NaN is written `nan:0xBITS`.
//! - `#` starts a comment that runs to the end of the line.
//!
//! Source spans are not part of the text. Invariants: the printer never panics, even on a function
//! the verifier rejects; undefined references print as `<undefined t7>` and a statement reached a
//! second time (a cycle or a shared statement) prints as a comment, so such text does not parse
//! back. For a function that verifies, `write(parse(write(f))) == write(f)`.

use crate::affine::{AffineExpr, Predicate};
use crate::entities::{Axis, Stmt, Tensor};
use crate::ir::{Function, InstData, MaskBound, Op, Operand, Scale, StmtKind};
use std::collections::HashSet;
use std::fmt::{self, Write};

/// The text form of `func`.
pub fn write_function(func: &Function) -> String {
    let mut out = String::new();
    // Writing into a `String` cannot fail.
    let _ = Printer::new(func).function(&mut out);
    out
}

/// Displays a function in its text form (as `Function`'s own `Display` does).
pub struct DisplayFunction<'a>(pub &'a Function);

impl fmt::Display for DisplayFunction<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&write_function(self.0))
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&write_function(self))
    }
}

/// Writes an `f32` so that the parser reads back the same bits.
pub fn write_f32(out: &mut dyn Write, v: f32) -> fmt::Result {
    if v.is_nan() && v.to_bits() != f32::NAN.to_bits() {
        write!(out, "nan:0x{:08x}", v.to_bits())
    } else {
        write!(out, "{v:?}")
    }
}

/// ` = [RUN, ...]`: a constant's values, row-major, each run of equal values (equal bits) as
/// `VALUE*COUNT` (`VALUE` alone for one).
pub fn write_const_values(out: &mut dyn Write, values: &[f32]) -> fmt::Result {
    vocab::write_value_runs(out, values, write_f32)
}

/// The name of a tensor, or a placeholder for an undefined reference.
pub fn tensor_name(func: &Function, t: Tensor) -> String {
    func.tensors
        .get(t)
        .map_or_else(|| format!("<undefined {t}>"), |d| d.name.clone())
}

/// The name of an axis's induction variable, or a placeholder for an undefined reference.
pub fn iv_name(func: &Function, a: Axis) -> String {
    func.axes
        .get(a)
        .map_or_else(|| format!("<undefined {a}>"), |d| d.iv_name.clone())
}

/// Writes an affine expression with induction-variable names.
pub fn write_affine(out: &mut dyn Write, func: &Function, e: &AffineExpr) -> fmt::Result {
    e.fmt_with(out, &|a| iv_name(func, a))
}

/// Writes a predicate, `EXPR CMP BOUND`.
pub fn write_predicate(out: &mut dyn Write, func: &Function, p: &Predicate) -> fmt::Result {
    write_affine(out, func, &p.expr)?;
    write!(out, " {} {}", p.cmp.symbol(), p.bound)
}

/// Writes an operand, `TENSOR{SLOTS}[START +: SIZE, ...]` or, for a general access pattern,
/// `TENSOR{SLOTS}[START, ... : (COUNT: STEP, ...), ...]`.
pub fn write_operand(out: &mut dyn Write, func: &Function, o: &Operand) -> fmt::Result {
    out.write_str(&tensor_name(func, o.tensor))?;
    let acc = &o.access;
    if !acc.slots.is_empty() {
        out.write_str("{")?;
        for (k, s) in acc.slots.iter().enumerate() {
            if k > 0 {
                out.write_str(", ")?;
            }
            write_affine(out, func, s)?;
        }
        out.write_str("}")?;
    }
    out.write_str("[")?;
    if let Some(pat) = &acc.pattern {
        for (d, s) in acc.start.iter().enumerate() {
            if d > 0 {
                out.write_str(", ")?;
            }
            write_affine(out, func, s)?;
        }
        out.write_str(" :")?;
        for (k, a) in pat.axes.iter().enumerate() {
            out.write_str(if k > 0 { ", (" } else { " (" })?;
            write!(out, "{}:", a.count)?;
            for (d, st) in a.step.iter().enumerate() {
                write!(out, "{}{st}", if d > 0 { ", " } else { " " })?;
            }
            out.write_str(")")?;
        }
        return out.write_str("]");
    }
    let n = acc.start.len().max(acc.size.len());
    for d in 0..n {
        if d > 0 {
            out.write_str(", ")?;
        }
        match acc.start.get(d) {
            Some(s) => write_affine(out, func, s)?,
            None => out.write_str("<missing start>")?,
        }
        match acc.size.get(d) {
            Some(z) => write!(out, " +: {z}")?,
            None => out.write_str(" +: <missing size>")?,
        }
    }
    out.write_str("]")
}

/// Writes an operation with its engine and parameters, `OP.ENGINE(PARAMS)`.
pub fn write_op(out: &mut dyn Write, inst: &InstData) -> fmt::Result {
    write!(out, "{}.{}", inst.op.name(), inst.engine.name())?;
    write_op_params(out, &inst.op)
}

/// Writes an operation's parameters, `(NAME=VALUE, ...)`, or nothing for an operation without
/// any (the BIR text form writes them the same way).
pub fn write_op_params(out: &mut dyn Write, op: &Op) -> fmt::Result {
    match op {
        Op::Load | Op::Store | Op::Transpose | Op::Copy | Op::BnStats | Op::BnAggr => Ok(()),
        Op::VectorTranspose | Op::Max8 | Op::FindIndex8 => Ok(()),
        Op::Rand { stream } | Op::Dropout { stream } => write!(out, "(stream={stream})"),
        Op::SequenceBounds => Ok(()),
        Op::Shuffle { mask } => {
            out.write_str("(mask=[")?;
            for (k, m) in mask.iter().enumerate() {
                write!(out, "{}{m}", if k == 0 { "" } else { ", " })?;
            }
            out.write_str("])")
        }
        Op::LocalGather {
            group,
            elems,
            count,
        } => write!(out, "(group={group}, elems={elems}, count={count})"),
        Op::MatchReplace8 { imm } => {
            out.write_str("(imm=")?;
            write_f32(out, *imm)?;
            out.write_str(")")
        }
        Op::TensorTensorScan { op0, op1 } => {
            write!(out, "(op0={}, op1={})", op0.name(), op1.name())
        }
        Op::Matmul { accumulate } => write!(out, "(accumulate={accumulate})"),
        Op::Gather { skip_oob } => write!(out, "(skip_oob={skip_oob})"),
        Op::Scatter {
            skip_oob,
            accumulate,
        } => write!(out, "(skip_oob={skip_oob}, accumulate={accumulate})"),
        Op::TensorTensor { op } => write!(out, "(op={})", op.name()),
        Op::TensorScalar { op, imm, reverse } => {
            write!(out, "(op={}, imm=", op.name())?;
            write_f32(out, *imm)?;
            write!(out, ", reverse={reverse})")
        }
        Op::Activation { func, scale, bias } => {
            write!(out, "(func={}, scale=", func.name())?;
            match scale {
                Scale::Imm(v) => write_f32(out, *v)?,
                Scale::Tile => out.write_str("tile")?,
            }
            write!(out, ", bias={bias})")
        }
        Op::Reduce { op } => write!(out, "(op={})", op.name()),
        Op::Memset { value } => {
            out.write_str("(value=")?;
            write_f32(out, *value)?;
            out.write_str(")")
        }
        Op::Iota { base, pstep, fstep } => {
            out.write_str("(base=")?;
            write_f32(out, *base)?;
            out.write_str(", pstep=")?;
            write_f32(out, *pstep)?;
            out.write_str(", fstep=")?;
            write_f32(out, *fstep)?;
            out.write_str(")")
        }
    }
}

/// Writes one instruction, `DST = OP.ENGINE(PARAMS) SRC, SRC`.
pub fn write_inst(out: &mut dyn Write, func: &Function, inst: &InstData) -> fmt::Result {
    write_operand(out, func, &inst.dst)?;
    out.write_str(" = ")?;
    write_op(out, inst)?;
    for (k, src) in inst.srcs.iter().enumerate() {
        out.write_str(if k == 0 { " " } else { ", " })?;
        write_operand(out, func, src)?;
    }
    write_mask(out, func, &inst.mask)
}

/// Writes a mask, ` mask(p < EXPR, f >= EXPR, ...)`, or nothing for an empty one.
pub fn write_mask(out: &mut dyn Write, func: &Function, mask: &[MaskBound]) -> fmt::Result {
    for (k, b) in mask.iter().enumerate() {
        out.write_str(if k == 0 { " mask(" } else { ", " })?;
        let cmp = if b.lower { ">=" } else { "<" };
        write!(out, "{} {cmp} ", b.dim.name())?;
        write_affine(out, func, &b.bound)?;
    }
    if !mask.is_empty() {
        out.write_str(")")?;
    }
    Ok(())
}

struct Printer<'a> {
    func: &'a Function,
    /// Statements already printed: a second visit is a malformed tree and is not followed.
    seen: HashSet<Stmt>,
}

impl<'a> Printer<'a> {
    fn new(func: &'a Function) -> Self {
        Printer {
            func,
            seen: HashSet::new(),
        }
    }

    fn function(&mut self, out: &mut String) -> fmt::Result {
        let func = self.func;
        write!(out, "kernel {}(", func.name)?;
        for (k, &t) in func.params.iter().enumerate() {
            if k > 0 {
                out.write_str(", ")?;
            }
            out.write_str(&tensor_name(func, t))?;
        }
        out.write_str(") -> (")?;
        for (k, &t) in func.outputs.iter().enumerate() {
            if k > 0 {
                out.write_str(", ")?;
            }
            out.write_str(&tensor_name(func, t))?;
        }
        out.write_str(") {\n")?;
        for (t_id, t) in func.tensors.iter() {
            write!(
                out,
                "  tensor {}: {} {}[",
                t.name,
                t.memory.name(),
                t.dtype.name()
            )?;
            for (k, d) in t.shape.iter().enumerate() {
                if k > 0 {
                    out.write_str(", ")?;
                }
                write!(out, "{d}")?;
            }
            write!(out, "] {}", t.kind.name())?;
            if !t.block.is_empty() {
                out.write_str(" block[")?;
                for (k, b) in t.block.iter().enumerate() {
                    if k > 0 {
                        out.write_str(", ")?;
                    }
                    write!(out, "{}: {}", iv_name(func, b.axis), b.count)?;
                }
                out.write_str("]")?;
            }
            if let Some(values) = func.consts.get(&t_id) {
                write_const_values(out, values)?;
            }
            out.write_str("\n")?;
        }
        for &s in &func.body {
            self.stmt(out, s, 1)?;
        }
        out.write_str("}\n")
    }

    fn indent(out: &mut String, depth: usize) {
        for _ in 0..depth {
            out.push_str("  ");
        }
    }

    /// The statement attributes: annotations, stage tag, predicates.
    fn stmt_attrs(&self, out: &mut String, s: Stmt) -> fmt::Result {
        let func = self.func;
        let annot = func.annots[s];
        if let Some(v) = annot.stage_id {
            write!(out, " stage_id={v}")?;
        }
        if let Some(v) = annot.execution_order {
            write!(out, " execution_order={v}")?;
        }
        if let Some(v) = func.stage_tags[s] {
            write!(out, " stage={v}")?;
        }
        if let Some(data) = func.stmts.get(s) {
            for (k, p) in data.preds.iter().enumerate() {
                out.write_str(if k == 0 { " if " } else { " && " })?;
                write_predicate(out, func, p)?;
            }
        }
        Ok(())
    }

    fn stmt(&mut self, out: &mut String, s: Stmt, depth: usize) -> fmt::Result {
        let func = self.func;
        Self::indent(out, depth);
        let Some(data) = func.stmts.get(s) else {
            return writeln!(out, "# <undefined statement {s}>");
        };
        if !self.seen.insert(s) {
            return writeln!(out, "# <statement {s} again>");
        }
        match &data.kind {
            StmtKind::Insts(insts) => {
                out.write_str("stmt")?;
                self.stmt_attrs(out, s)?;
                out.write_str(" {\n")?;
                for &i in insts {
                    Self::indent(out, depth + 1);
                    match func.insts.get(i) {
                        Some(inst) => write_inst(out, func, inst)?,
                        None => write!(out, "# <undefined instruction {i}>")?,
                    }
                    out.write_str("\n")?;
                }
            }
            StmtKind::Loop(axis) => {
                let Some(ax) = func.axes.get(*axis) else {
                    return writeln!(out, "# <loop over undefined axis {axis}>");
                };
                write!(
                    out,
                    "loop {} in {}..{} {}",
                    ax.iv_name,
                    ax.lb,
                    ax.ub,
                    ax.kind.name()
                )?;
                let a = &ax.attrs;
                if let Some(n) = a.num_stages {
                    write!(out, " num_stages={n}")?;
                }
                if a.auto_stages {
                    out.write_str(" num_stages=auto")?;
                }
                if let Some(n) = a.multi_buffer {
                    write!(out, " multi_buffer={n}")?;
                }
                if a.disable_auto_buffer {
                    out.write_str(" disable_auto_buffer")?;
                }
                if a.disable_execution_order_check {
                    out.write_str(" disable_execution_order_check")?;
                }
                if let Some(p) = a.pipelined {
                    write!(out, " {p}")?;
                }
                self.stmt_attrs(out, s)?;
                out.write_str(" {\n")?;
                for &child in &ax.body {
                    self.stmt(out, child, depth + 1)?;
                }
            }
        }
        Self::indent(out, depth);
        out.write_str("}\n")
    }
}
