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
        let role = match t.role {
            Role::Input => "input",
            Role::Output => "output",
            Role::Scratch => "scratch",
        };
        let _ = writeln!(
            out,
            "tensor {}: {}[{}] {role}",
            t.name,
            t.dtype.name(),
            shape.join(", ")
        );
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
                out.push_str(&inst_to_string(p, i));
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
    for (i, t) in e.terms.iter().enumerate() {
        let (coeff, body) = match *t {
            Term::Lin { coeff, reg } => (coeff, format!("r{}", reg.0)),
            Term::Mod {
                coeff,
                reg,
                offset,
                modulus,
            } => match offset {
                0 => (coeff, format!("(r{} mod {modulus})", reg.0)),
                o if o > 0 => (coeff, format!("((r{} + {o}) mod {modulus})", reg.0)),
                o => (
                    coeff,
                    format!("((r{} - {}) mod {modulus})", reg.0, o.unsigned_abs()),
                ),
            },
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
        match t {
            Term::Lin { .. } if mag != 1 => {
                let _ = write!(s, "{mag}*{body}");
            }
            Term::Mod { .. } if mag != 1 => {
                let _ = write!(s, "{body}*{mag}");
            }
            _ => s.push_str(&body),
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
    s
}

fn dims_to_string(dims: &[Dim]) -> String {
    let d: Vec<String> = dims
        .iter()
        .map(|d| format!("{}:{}", d.size, d.stride))
        .collect();
    d.join(", ")
}

/// An access pattern in the text form.
pub fn ap_to_string(a: &Ap) -> String {
    format!(
        "{}.{}[{}, {}; {}; {}]",
        a.mem.name(),
        a.dtype.name(),
        expr_to_string(&a.p0),
        a.np,
        expr_to_string(&a.start),
        dims_to_string(&a.dims)
    )
}

fn side_to_string(p: &Program, s: &DmaSide) -> String {
    match s {
        DmaSide::Tile(a) => ap_to_string(a),
        DmaSide::Hbm(h) => format!(
            "hbm {}[{}; {}]",
            p.tensors.get(h.tensor).map_or("?", |t| t.name.as_str()),
            expr_to_string(&h.start),
            dims_to_string(&h.dims)
        ),
    }
}

fn float(x: f32) -> String {
    format!("{x:?}")
}

fn sem_name(p: &Program, s: usize) -> &str {
    p.semaphores.get(s).map_or("?", |s| s.as_str())
}

/// One instruction in the text form (one line, without indentation).
pub fn inst_to_string(p: &Program, i: &Inst) -> String {
    let mut s = String::new();
    if !i.pred.is_empty() {
        let c: Vec<String> = i
            .pred
            .iter()
            .map(|c| {
                format!(
                    "{} {} {}",
                    expr_to_string(&c.lhs),
                    c.op.symbol(),
                    expr_to_string(&c.rhs)
                )
            })
            .collect();
        let _ = write!(s, "@({}) ", c.join(" && "));
    }
    s.push_str(&op_to_string(p, &i.op));
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
    s
}

/// An operation in the text form.
pub fn op_to_string(p: &Program, op: &Op) -> String {
    let a = ap_to_string;
    match op {
        Op::Matmul { dst, a: x, b, acc } => format!(
            "matmul {}, {}, {}{}",
            a(dst),
            a(x),
            a(b),
            if *acc { " acc" } else { "" }
        ),
        Op::Transpose { dst, src } => format!("transpose {}, {}", a(dst), a(src)),
        Op::Activation {
            func,
            dst,
            src,
            scale,
            bias,
        } => {
            let scale = match scale {
                Scale::Imm(x) => float(*x),
                Scale::Tile(t) => a(t),
            };
            let bias = bias
                .as_ref()
                .map_or(String::new(), |b| format!(", bias={}", a(b)));
            format!(
                "activation {} {}, {}, scale={scale}{bias}",
                func.name(),
                a(dst),
                a(src)
            )
        }
        Op::TensorTensor { op, dst, a: x, b } => {
            format!("tensor_tensor {} {}, {}, {}", op.name(), a(dst), a(x), a(b))
        }
        Op::TensorScalar {
            op,
            dst,
            src,
            imm,
            reverse,
        } => format!(
            "tensor_scalar {} {}, {}, {}{}",
            op.name(),
            a(dst),
            a(src),
            float(*imm),
            if *reverse { " reverse" } else { "" }
        ),
        Op::Reduce { op, dst, src } => format!("reduce {} {}, {}", op.name(), a(dst), a(src)),
        Op::Copy { dst, src } => format!("copy {}, {}", a(dst), a(src)),
        Op::Memset { dst, value } => format!("memset {}, {}", a(dst), float(*value)),
        Op::Iota {
            dst,
            base,
            pstep,
            fstep,
        } => format!(
            "iota {}, {}, {}, {}",
            a(dst),
            float(*base),
            float(*pstep),
            float(*fstep)
        ),
        Op::Dma { queue, dst, src } => format!(
            "dma q{queue} {}, {}",
            side_to_string(p, dst),
            side_to_string(p, src)
        ),
        Op::Signal { sem } => format!("signal {}", sem_name(p, *sem)),
        Op::Wait { sem, value } => {
            format!("wait {} >= {}", sem_name(p, *sem), expr_to_string(value))
        }
    }
}
