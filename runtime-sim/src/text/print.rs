//! The printer of the pseudo-ISA's text form: [`print`] writes a whole program, and the
//! `*_to_string` functions one expression, access pattern, instruction or operation (the trace
//! and the tests name instructions with them).
//!
//! Invariant: the output reads back ([`super::parse()`]) to the same program, instruction
//! positions aside, and printing what was read back gives the same text; immediates are printed
//! as Rust prints an f32, which reads back bit for bit.

use crate::isa::*;
use std::fmt::Write;

/// Prints a program in the text form [`super::parse()`] reads.
pub fn print(p: &Program) -> String {
    let mut out = String::new();
    for t in &p.tensors {
        let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
        let _ = write!(
            out,
            "tensor {}: {}[{}] {}",
            t.name,
            t.dtype.name(),
            shape.join(", "),
            t.role.name()
        );
        if t.role == Role::Const {
            write_const_values(&mut out, &t.values);
        }
        out.push('\n');
    }
    for s in &p.semaphores {
        let _ = writeln!(out, "semaphore {s}");
    }
    for e in Engine::ALL {
        let stream = p.stream(e);
        if stream.is_empty() {
            continue;
        }
        let _ = writeln!(out, "engine {} {{", e.name());
        print_stmts(p, stream, 1, &mut out);
        out.push_str("}\n");
    }
    out
}

fn print_stmts(p: &Program, stmts: &[Stmt], depth: usize, out: &mut String) {
    for s in stmts {
        for _ in 0..depth {
            out.push_str("  ");
        }
        match s {
            Stmt::Inst(i) => {
                write_inst(out, p, i);
                out.push('\n');
            }
            Stmt::Loop(l) => {
                let _ = writeln!(out, "loop r{} = 0..{} {{", l.reg.0, l.trip);
                print_stmts(p, &l.body, depth + 1, out);
                for _ in 0..depth {
                    out.push_str("  ");
                }
                out.push_str("}\n");
            }
        }
    }
}

/// An expression in the text form.
pub fn expr_to_string(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

/// Appends [`expr_to_string`] of `e` to `s`.
fn write_expr(s: &mut String, e: &Expr) {
    for (i, t) in e.terms.iter().enumerate() {
        let coeff = match *t {
            Term::Lin { coeff, .. } | Term::Mod { coeff, .. } => coeff,
        };
        let neg = coeff < 0;
        if i == 0 {
            if neg {
                s.push('-');
            }
        } else {
            s.push_str(if neg { " - " } else { " + " });
        }
        let mag = coeff.unsigned_abs();
        match *t {
            Term::Lin { reg, .. } => {
                if mag != 1 {
                    let _ = write!(s, "{mag}*");
                }
                let _ = write!(s, "r{}", reg.0);
            }
            Term::Mod {
                reg,
                offset,
                modulus,
                ..
            } => {
                let _ = match offset {
                    0 => write!(s, "(r{} mod {modulus})", reg.0),
                    o if o > 0 => write!(s, "((r{} + {o}) mod {modulus})", reg.0),
                    o => write!(s, "((r{} - {}) mod {modulus})", reg.0, o.unsigned_abs()),
                };
                if mag != 1 {
                    let _ = write!(s, "*{mag}");
                }
            }
        }
    }
    if e.terms.is_empty() {
        let _ = write!(s, "{}", e.constant);
    } else if e.constant != 0 {
        let _ = write!(
            s,
            " {} {}",
            if e.constant < 0 { "-" } else { "+" },
            e.constant.unsigned_abs()
        );
    }
}

fn write_dims(s: &mut String, dims: &[Dim]) {
    for (k, d) in dims.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{}:{}", d.size, d.stride);
    }
}

/// An access pattern in the text form.
pub fn ap_to_string(a: &Ap) -> String {
    let mut s = String::new();
    write_ap(&mut s, a);
    s
}

/// Appends [`ap_to_string`] of `a` to `s`.
fn write_ap(s: &mut String, a: &Ap) {
    let _ = write!(s, "{}.{}[", a.mem.name(), a.dtype.name());
    write_expr(s, &a.p0);
    let _ = write!(s, ", {}; ", a.np);
    write_expr(s, &a.start);
    s.push_str("; ");
    write_dims(s, &a.dims);
    s.push(']');
}

fn write_side(s: &mut String, p: &Program, side: &DmaSide) {
    match side {
        DmaSide::Tile(a) => write_ap(s, a),
        DmaSide::Hbm(h) => {
            let name = p.tensors.get(h.tensor).map_or("?", |t| t.name.as_str());
            let _ = write!(s, "hbm {name}[");
            write_expr(s, &h.start);
            s.push_str("; ");
            write_dims(s, &h.dims);
            s.push(']');
        }
    }
}

/// ` = [RUN, ...]`: a constant's values, row-major, each run of equal values as `VALUE*COUNT`
/// (`VALUE` alone for one).
fn write_const_values(s: &mut String, values: &[f32]) {
    let _ = vocab::write_value_runs(s, values, |o, x| write!(o, "{x:?}"));
}

fn write_float(s: &mut String, x: f32) {
    let _ = write!(s, "{x:?}");
}

fn sem_name(p: &Program, s: usize) -> &str {
    p.semaphores.get(s).map_or("?", |s| s.as_str())
}

/// One instruction in the text form (one line, without indentation).
pub fn inst_to_string(p: &Program, i: &Inst) -> String {
    let mut s = String::new();
    write_inst(&mut s, p, i);
    s
}

/// Appends [`inst_to_string`] of `i` to `s`.
fn write_inst(s: &mut String, p: &Program, i: &Inst) {
    if !i.pred.is_empty() {
        s.push_str("@(");
        for (k, c) in i.pred.iter().enumerate() {
            if k > 0 {
                s.push_str(" && ");
            }
            write_expr(s, &c.lhs);
            let _ = write!(s, " {} ", c.op.symbol());
            write_expr(s, &c.rhs);
        }
        s.push_str(") ");
    }
    write_op(s, p, &i.op);
    if let Some(sem) = i.signal {
        let _ = write!(s, " -> {}", sem_name(p, sem));
    }
    if let Some(l) = i.meta.line {
        let _ = write!(s, " line {l}");
    }
    if let Some(st) = i.meta.stage {
        let _ = write!(s, " stage {st}");
    }
    if let Some(t) = &i.meta.stmt {
        let esc = t
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let _ = write!(s, " stmt \"{esc}\"");
    }
}

/// An operation in the text form.
pub fn op_to_string(p: &Program, op: &Op) -> String {
    let mut s = String::new();
    write_op(&mut s, p, op);
    s
}

/// Appends [`op_to_string`] of `op` to `s`: its name, then its qualifiers (an ALU operation,
/// an activation function, a queue), its operands, each written by `write_ap` or `write_float`,
/// separated by `", "`, and its flags (`acc`, `reverse`); the reader's `op` in reverse.
fn write_op(s: &mut String, p: &Program, op: &Op) {
    s.push_str(op.name());
    s.push(' ');
    match op {
        Op::Matmul { dst, a: x, b, acc } => {
            aps(s, &[dst, x, b]);
            flag(s, *acc, "acc");
        }
        Op::Transpose { dst, src }
        | Op::Copy { dst, src }
        | Op::VectorTranspose { dst, src }
        | Op::BnStats { dst, src }
        | Op::BnAggr { dst, src }
        | Op::Max8 { dst, src }
        | Op::SequenceBounds { dst, src } => aps(s, &[dst, src]),
        Op::Shuffle { dst, src, mask } => {
            aps(s, &[dst, src]);
            let rows: Vec<String> = mask.iter().map(u8::to_string).collect();
            let _ = write!(s, ", [{}]", rows.join(", "));
        }
        Op::LocalGather {
            dst,
            src,
            index,
            group,
            elems,
        } => {
            aps(s, &[dst, src, index]);
            let _ = write!(s, ", {group}, {elems}");
        }
        Op::Activation {
            func,
            dst,
            src,
            scale,
            bias,
        } => write_activation(s, func.name(), &[dst, src], scale, bias.as_ref()),
        Op::TensorTensor { op, dst, a: x, b } => {
            let _ = write!(s, "{} ", op.name());
            aps(s, &[dst, x, b]);
        }
        Op::TensorScalar {
            op,
            dst,
            src,
            imm,
            reverse,
        } => {
            let _ = write!(s, "{} ", op.name());
            aps(s, &[dst, src]);
            floats(s, &[*imm]);
            flag(s, *reverse, "reverse");
        }
        Op::Reduce { op, dst, src } => {
            let _ = write!(s, "{} ", op.name());
            aps(s, &[dst, src]);
        }
        Op::TensorTensorScan {
            op0,
            op1,
            dst,
            a: x,
            b,
            init,
        } => {
            let _ = write!(s, "{} {} ", op0.name(), op1.name());
            aps(s, &[dst, x, b, init]);
        }
        Op::FindIndex8 { dst, src, vals } | Op::MatchReplace8 { dst, src, vals, .. } => {
            aps(s, &[dst, src, vals]);
            if let Op::MatchReplace8 { imm, .. } = op {
                floats(s, &[*imm]);
            }
        }
        Op::Rand { dst, stream } => {
            aps(s, &[dst]);
            let _ = write!(s, ", {stream}");
        }
        Op::Dropout {
            dst,
            src,
            prob,
            stream,
        } => {
            aps(s, &[dst, src, prob]);
            let _ = write!(s, ", {stream}");
        }
        Op::Memset { dst, value } => {
            aps(s, &[dst]);
            floats(s, &[*value]);
        }
        Op::Iota {
            dst,
            base,
            pstep,
            fstep,
        } => {
            aps(s, &[dst]);
            floats(s, &[*base, *pstep, *fstep]);
        }
        Op::Dma {
            queue,
            dst,
            src,
            index,
            mode,
        } => write_dma(s, p, *queue, [dst, src], index.as_ref(), *mode),
        Op::Signal { sem } => s.push_str(sem_name(p, *sem)),
        Op::Wait { sem, value } => {
            let _ = write!(s, "{} >= ", sem_name(p, *sem));
            write_expr(s, value);
        }
    }
}

/// Appends access patterns, separated by `", "`.
fn aps(s: &mut String, list: &[&Ap]) {
    for (k, a) in list.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        write_ap(s, a);
    }
}

/// Appends immediates after the operands, each after `", "`.
fn floats(s: &mut String, list: &[f32]) {
    for x in list {
        s.push_str(", ");
        write_float(s, *x);
    }
}

/// Appends ` WORD` when `set`: a flag after the operands.
fn flag(s: &mut String, set: bool, word: &str) {
    if set {
        s.push(' ');
        s.push_str(word);
    }
}

/// `FUNC DST, SRC, scale=IMM|AP[, bias=AP]` of an activation, after its name.
fn write_activation(
    s: &mut String,
    func: &str,
    operands: &[&Ap],
    scale: &Scale,
    bias: Option<&Ap>,
) {
    let _ = write!(s, "{func} ");
    aps(s, operands);
    s.push_str(", scale=");
    match scale {
        Scale::Imm(x) => write_float(s, *x),
        Scale::Tile(t) => write_ap(s, t),
    }
    if let Some(b) = bias {
        s.push_str(", bias=");
        write_ap(s, b);
    }
}

/// `qN DST, SRC [index IDX] [skip_oob] [add]` of a DMA, after its name.
fn write_dma(
    s: &mut String,
    p: &Program,
    queue: u8,
    [dst, src]: [&DmaSide; 2],
    index: Option<&Ap>,
    mode: DmaMode,
) {
    let _ = write!(s, "q{queue} ");
    write_side(s, p, dst);
    s.push_str(", ");
    write_side(s, p, src);
    if let Some(idx) = index {
        s.push_str(" index ");
        aps(s, &[idx]);
    }
    if mode.skip_oob {
        s.push_str(" skip_oob");
    }
    if mode.accumulate {
        s.push_str(" add");
    }
}
