//! The text form of the pseudo-ISA: a parser and a printer that round-trip.
//!
//! `parse(&print(p)) == p` for every program `p` the parser returns (instruction positions aside,
//! which the printer does not write), and `print(&parse(t))` is a fixed point. A malformed program
//! is a [`ParseError`] naming the line and the column; the parser never panics.
//!
//! ```text
//! # comments run to the end of the line
//! tensor a: f32[128, 512] input
//! tensor out: f32[128, 512] output
//! tensor tmp: f32[65536] scratch
//! semaphore loaded
//! engine sp {
//!   dma q0 sbuf.f32[0, 128; 0; 512:1], hbm a[0; 128:512, 512:1] -> loaded
//! }
//! engine dve {
//!   wait loaded >= 1
//!   loop r0 = 0..4 {
//!     @(r0 >= 1) tensor_scalar add sbuf.f32[0, 128; (r0 mod 2)*2048; 512:1], sbuf.f32[0, 128; 0; 512:1], 1.0 line 3 stage 1
//!   }
//! }
//! ```
//!
//! A tensor is an `input` (given), an `output` (returned, starts as zeros) or `scratch` (HBM
//! working memory: uninitialised, a read of an element never written is a run-time error).
//! An access pattern is `MEM.DTYPE[P0, NP; START; SIZE:STRIDE, ...]` (start in bytes, strides in
//! elements), an HBM pattern `hbm NAME[START; SIZE:STRIDE, ...]` (start in elements). Names that
//! look like registers (`r0`, `r12`) are reserved for registers. Registers must be bound by an
//! enclosing `loop`, and tensors and semaphores declared before they are used.
//!
//! Every instruction is `[@(CMP && ...)] OPCODE OPERANDS [-> SEM] [line N] [stage N] [stmt "..."]`,
//! where `-> SEM` signals `SEM` when the instruction completes (a DMA: when its transfer
//! completes) and the three metadata fields feed the trace. `EXPR` is a sum of `C`, `C*rK` and
//! `(rK mod M)*C` terms; `CMP` is `EXPR OP EXPR` with `OP` one of `< <= > >= == !=`. Opcodes:
//!
//! | text | engines | meaning |
//! | --- | --- | --- |
//! | `matmul DST, A, B [acc]` | pe | `DST[M,N] (psum) = A[K,M]ᵀ·B[K,N]` (sbuf), `+= DST` with `acc`; a bf16 operand beside an f32 one is widened (the f32 rate) |
//! | `transpose DST, SRC` | pe | `DST[F,P] (psum) = SRC[P,F]ᵀ` |
//! | `activation FUNC DST, SRC, scale=IMM\|AP[, bias=AP]` | act | `FUNC(SRC*scale + bias)`, scale and bias `[P,1]` tiles or an immediate scale |
//! | `tensor_tensor ALU DST, A, B` | dve, pool | elementwise; a `[P,1]` source broadcasts |
//! | `tensor_scalar ALU DST, SRC, IMM [reverse]` | dve, pool | `SRC alu IMM` (`IMM alu SRC` with `reverse`) |
//! | `reduce sum\|max\|min DST, SRC` | dve | `DST[P,1]` = the reduction of each row of `SRC` |
//! | `copy DST, SRC` | act, dve, pool | converts dtype on store |
//! | `memset DST, IMM` | dve, pool | |
//! | `iota DST, BASE, PSTEP, FSTEP` | pool | `BASE + p*PSTEP + f*FSTEP`, `p` the tile's row, `f` the flat free index |
//! | `dma qN DST, SRC` | sp | HBM to SBUF or back on queue `N` (0..16); elements pair up in row-major order |
//! | `signal SEM` | any | adds one to `SEM` |
//! | `wait SEM >= EXPR` | any | blocks until `SEM` has been signalled `EXPR` times |
//!
//! `FUNC` is one of identity, exp, log, tanh, sigmoid, relu, gelu, sqrt, rsqrt, square,
//! reciprocal; `ALU` one of add, subtract, multiply, divide, maximum, minimum. Immediates are
//! f32 literals as Rust prints them (`1.0`, `-0.0`, `inf`, `NaN`, `1e-45`).

use crate::isa::*;
use std::fmt::{self, Write};

/// A malformed program: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.col, self.message
        )
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: u32,
    col: u32,
}

const PUNCTS: [&str; 22] = [
    "->", "&&", "<=", ">=", "==", "!=", "..", "{", "}", "[", "]", "(", ")", ",", ";", ":", "+",
    "-", "*", "=", "@", ".",
];
const PUNCTS1: [&str; 2] = ["<", ">"];

fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |line, col, m: String| ParseError {
        line,
        col,
        message: m,
    };
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            col += 1;
            continue;
        }
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let (tl, tc) = (line, col);
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            col += (i - s) as u32;
            out.push(Token {
                tok: Tok::Ident(src[s..i].to_string()),
                line: tl,
                col: tc,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let s = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            col += (i - s) as u32;
            out.push(Token {
                tok: Tok::Num(src[s..i].to_string()),
                line: tl,
                col: tc,
            });
            continue;
        }
        if c == b'"' {
            let mut s = String::new();
            let mut chars = src[i + 1..].char_indices();
            let mut closed = false;
            while let Some((k, ch)) = chars.next() {
                match ch {
                    '"' => {
                        i = i + 1 + k + 1;
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, '"')) => s.push('"'),
                        Some((_, '\\')) => s.push('\\'),
                        Some((_, 'n')) => s.push('\n'),
                        _ => return Err(err(tl, tc, "bad escape in string".into())),
                    },
                    '\n' => return Err(err(tl, tc, "string runs past the end of its line".into())),
                    ch => s.push(ch),
                }
            }
            if !closed {
                return Err(err(tl, tc, "unterminated string".into()));
            }
            col += s.chars().count() as u32 + 2;
            out.push(Token {
                tok: Tok::Str(s),
                line: tl,
                col: tc,
            });
            continue;
        }
        let rest = &src[i..];
        if let Some(p) = PUNCTS
            .iter()
            .chain(PUNCTS1.iter())
            .find(|p| rest.starts_with(**p))
        {
            i += p.len();
            col += p.len() as u32;
            out.push(Token {
                tok: Tok::Punct(p),
                line: tl,
                col: tc,
            });
            continue;
        }
        let ch = rest.chars().next().unwrap_or('?');
        return Err(err(
            tl,
            tc,
            format!("unexpected character `{}`", ch.escape_debug()),
        ));
    }
    out.push(Token {
        tok: Tok::Eof,
        line,
        col,
    });
    Ok(out)
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Num(s) => format!("number `{s}`"),
        Tok::Str(_) => "a string".into(),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Eof => "the end of the program".into(),
    }
}

fn reg_of(name: &str) -> Option<u8> {
    let digits = name.strip_prefix('r')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u8>().ok().or(Some(u8::MAX))
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    prog: Program,
    bound: Vec<Reg>,
}

type PResult<T> = Result<T, ParseError>;

impl Parser {
    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn err_at<T>(&self, t: &Token, m: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            line: t.line,
            col: t.col,
            message: m.into(),
        })
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(&self.peek().tok, Tok::Punct(q) if *q == p)
    }

    fn is_ident(&self, s: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(q) if q == s)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, p: &str) -> PResult<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            let t = self.peek().clone();
            self.err_at(&t, format!("expected `{p}`, found {}", describe(&t.tok)))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<(String, Token)> {
        let t = self.next();
        match &t.tok {
            Tok::Ident(s) => Ok((s.clone(), t.clone())),
            other => self.err_at(&t, format!("expected {what}, found {}", describe(other))),
        }
    }

    fn expect_keyword(&mut self, k: &str) -> PResult<()> {
        if self.is_ident(k) {
            self.next();
            Ok(())
        } else {
            let t = self.peek().clone();
            self.err_at(&t, format!("expected `{k}`, found {}", describe(&t.tok)))
        }
    }

    fn uint(&mut self, what: &str) -> PResult<u64> {
        let t = self.next();
        match &t.tok {
            Tok::Num(s) => s
                .parse::<u64>()
                .or_else(|_| self.err_at(&t, format!("expected {what} (an integer), found `{s}`"))),
            other => self.err_at(&t, format!("expected {what}, found {}", describe(other))),
        }
    }

    fn sint(&mut self, what: &str) -> PResult<i64> {
        let neg = self.eat_punct("-");
        let t = self.peek().clone();
        let v = self.uint(what)?;
        let v = i64::try_from(v).or_else(|_| self.err_at(&t, format!("{what} is too large")))?;
        Ok(if neg { -v } else { v })
    }

    fn float(&mut self, what: &str) -> PResult<f32> {
        let neg = self.eat_punct("-");
        let t = self.next();
        let v = match &t.tok {
            Tok::Num(s) => s
                .parse::<f32>()
                .or_else(|_| self.err_at(&t, format!("bad number `{s}`")))?,
            Tok::Ident(s) if s == "inf" => f32::INFINITY,
            Tok::Ident(s) if s == "NaN" || s == "nan" => f32::NAN,
            other => return self.err_at(&t, format!("expected {what}, found {}", describe(other))),
        };
        Ok(if neg { -v } else { v })
    }

    fn reg(&mut self) -> PResult<Reg> {
        let (name, t) = self.ident("a register")?;
        match reg_of(&name) {
            Some(r) if (r as usize) < MAX_REGS => {
                let reg = Reg(r);
                if !self.bound.contains(&reg) {
                    return self.err_at(
                        &t,
                        format!("register `{name}` is not bound by an enclosing loop"),
                    );
                }
                Ok(reg)
            }
            Some(_) => self.err_at(
                &t,
                format!("register `{name}` is out of range (r0..r{})", MAX_REGS - 1),
            ),
            None => self.err_at(&t, format!("expected a register, found `{name}`")),
        }
    }

    fn is_reg_next(&self) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if reg_of(s).is_some())
    }

    /// `term (('+'|'-') term)*` with an optional leading `-`.
    fn expr(&mut self) -> PResult<Expr> {
        let mut e = Expr::default();
        let mut neg = self.eat_punct("-");
        loop {
            self.term(&mut e, neg)?;
            if self.eat_punct("+") {
                neg = false;
            } else if self.eat_punct("-") {
                neg = true;
            } else {
                return Ok(e);
            }
        }
    }

    fn term(&mut self, e: &mut Expr, neg: bool) -> PResult<()> {
        let sign = if neg { -1i64 } else { 1 };
        let t = self.peek().clone();
        let overflow = |p: &Self| p.err_at::<()>(&t, "a coefficient is too large");
        if self.is_punct("(") {
            let (reg, offset, modulus) = self.mod_term()?;
            let mut coeff = 1i64;
            if self.eat_punct("*") {
                coeff = self.sint("a coefficient")?;
            }
            e.terms.push(Term::Mod {
                coeff: coeff
                    .checked_mul(sign)
                    .map_or_else(|| overflow(self).map(|_| 0), Ok)?,
                reg,
                offset,
                modulus,
            });
        } else if self.is_reg_next() {
            let reg = self.reg()?;
            let mut coeff = 1i64;
            if self.eat_punct("*") {
                coeff = self.sint("a coefficient")?;
            }
            e.terms.push(Term::Lin {
                coeff: coeff
                    .checked_mul(sign)
                    .map_or_else(|| overflow(self).map(|_| 0), Ok)?,
                reg,
            });
        } else {
            let c = self.sint("an integer, a register or `(rK mod M)`")?;
            if self.eat_punct("*") {
                if self.is_punct("(") {
                    let (reg, offset, modulus) = self.mod_term()?;
                    e.terms.push(Term::Mod {
                        coeff: c
                            .checked_mul(sign)
                            .map_or_else(|| overflow(self).map(|_| 0), Ok)?,
                        reg,
                        offset,
                        modulus,
                    });
                } else {
                    let reg = self.reg()?;
                    e.terms.push(Term::Lin {
                        coeff: c
                            .checked_mul(sign)
                            .map_or_else(|| overflow(self).map(|_| 0), Ok)?,
                        reg,
                    });
                }
            } else {
                e.constant = c
                    .checked_mul(sign)
                    .and_then(|c| e.constant.checked_add(c))
                    .map_or_else(|| overflow(self).map(|_| 0), Ok)?;
            }
        }
        Ok(())
    }

    /// `(rK mod M)` or `((rK + c) mod M)` / `((rK - c) mod M)`: register, offset, modulus.
    fn mod_term(&mut self) -> PResult<(Reg, i64, i64)> {
        self.expect_punct("(")?;
        let (reg, offset) = if self.eat_punct("(") {
            let reg = self.reg()?;
            let sign = if self.eat_punct("+") {
                1
            } else {
                self.expect_punct("-")?;
                -1
            };
            let c = self.sint("an offset")?;
            self.expect_punct(")")?;
            (reg, c.saturating_mul(sign))
        } else {
            (self.reg()?, 0)
        };
        self.expect_keyword("mod")?;
        let t = self.peek().clone();
        let m = self.sint("a modulus")?;
        if m <= 0 {
            return self.err_at(&t, "a modulus must be positive");
        }
        self.expect_punct(")")?;
        Ok((reg, offset, m))
    }

    fn dims(&mut self, close: &str) -> PResult<Vec<Dim>> {
        let mut dims = Vec::new();
        if self.is_punct(close) {
            return Ok(dims);
        }
        loop {
            let t = self.peek().clone();
            let size = self.uint("a dimension size")?;
            if size == 0 {
                return self.err_at(&t, "a dimension size must be positive");
            }
            self.expect_punct(":")?;
            let stride = self.sint("a stride")?;
            dims.push(Dim { size, stride });
            if dims.len() > MAX_DIMS {
                return self.err_at(
                    &t,
                    format!("an access pattern has at most {MAX_DIMS} dimensions"),
                );
            }
            if !self.eat_punct(",") {
                return Ok(dims);
            }
        }
    }

    fn ap(&mut self) -> PResult<Ap> {
        let (m, t) = self.ident("an access pattern (`sbuf.DTYPE[...]` or `psum.DTYPE[...]`)")?;
        let mem = match m.as_str() {
            "sbuf" => Mem::Sbuf,
            "psum" => Mem::Psum,
            _ => return self.err_at(&t, format!("expected `sbuf` or `psum`, found `{m}`")),
        };
        self.expect_punct(".")?;
        let dtype = self.dtype()?;
        self.expect_punct("[")?;
        let p0 = self.expr()?;
        self.expect_punct(",")?;
        let t = self.peek().clone();
        let np = self.uint("a partition count")?;
        if np == 0 || np > crate::machine::PARTITIONS as u64 {
            return self.err_at(
                &t,
                format!(
                    "a partition count must be 1..={}",
                    crate::machine::PARTITIONS
                ),
            );
        }
        self.expect_punct(";")?;
        let start = self.expr()?;
        self.expect_punct(";")?;
        let dims = self.dims("]")?;
        self.expect_punct("]")?;
        Ok(Ap {
            mem,
            dtype,
            p0,
            np: np as u32,
            start,
            dims,
        })
    }

    fn dtype(&mut self) -> PResult<DType> {
        let (d, t) = self.ident("a dtype")?;
        DType::from_name(&d).map_or_else(
            || self.err_at(&t, format!("unknown dtype `{d}` (f32 or bf16)")),
            Ok,
        )
    }

    fn dma_side(&mut self) -> PResult<DmaSide> {
        if self.is_ident("hbm") {
            self.next();
            let (name, t) = self.ident("a tensor name")?;
            let Some(tensor) = self.prog.tensor_index(&name) else {
                return self.err_at(&t, format!("unknown tensor `{name}`"));
            };
            self.expect_punct("[")?;
            let start = self.expr()?;
            self.expect_punct(";")?;
            let dims = self.dims("]")?;
            self.expect_punct("]")?;
            Ok(DmaSide::Hbm(HbmAp {
                tensor,
                start,
                dims,
            }))
        } else {
            Ok(DmaSide::Tile(self.ap()?))
        }
    }

    fn sem(&mut self) -> PResult<usize> {
        let (name, t) = self.ident("a semaphore")?;
        self.prog.semaphore_index(&name).map_or_else(
            || self.err_at(&t, format!("unknown semaphore `{name}`")),
            Ok,
        )
    }

    fn named<T: Copy>(
        &mut self,
        what: &str,
        all: &[T],
        name: impl Fn(T) -> &'static str,
    ) -> PResult<T> {
        let (s, t) = self.ident(what)?;
        match all.iter().find(|x| name(**x) == s) {
            Some(x) => Ok(*x),
            None => {
                let names: Vec<&str> = all.iter().map(|x| name(*x)).collect();
                self.err_at(
                    &t,
                    format!("unknown {what} `{s}` (one of {})", names.join(", ")),
                )
            }
        }
    }

    fn inst(&mut self) -> PResult<Inst> {
        let mut pred = Vec::new();
        let first = self.peek().clone();
        if self.eat_punct("@") {
            self.expect_punct("(")?;
            loop {
                let lhs = self.expr()?;
                let t = self.next();
                let op = match t.tok {
                    Tok::Punct("<") => CmpOp::Lt,
                    Tok::Punct("<=") => CmpOp::Le,
                    Tok::Punct(">") => CmpOp::Gt,
                    Tok::Punct(">=") => CmpOp::Ge,
                    Tok::Punct("==") => CmpOp::Eq,
                    Tok::Punct("!=") => CmpOp::Ne,
                    ref other => {
                        return self.err_at(
                            &t,
                            format!("expected a comparison, found {}", describe(other)),
                        )
                    }
                };
                let rhs = self.expr()?;
                pred.push(Cmp { lhs, op, rhs });
                if !self.eat_punct("&&") {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        let (opname, t) = self.ident("an instruction")?;
        let op = match opname.as_str() {
            "matmul" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let a = self.ap()?;
                self.expect_punct(",")?;
                let b = self.ap()?;
                let acc = self.is_ident("acc");
                if acc {
                    self.next();
                }
                Op::Matmul { dst, a, b, acc }
            }
            "transpose" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let src = self.ap()?;
                Op::Transpose { dst, src }
            }
            "activation" => {
                let func = self.named("activation function", &ActFunc::ALL, ActFunc::name)?;
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let src = self.ap()?;
                self.expect_punct(",")?;
                self.expect_keyword("scale")?;
                self.expect_punct("=")?;
                let scale = if self.is_ident("sbuf") || self.is_ident("psum") {
                    Scale::Tile(self.ap()?)
                } else {
                    Scale::Imm(self.float("a scale")?)
                };
                let bias = if self.eat_punct(",") {
                    self.expect_keyword("bias")?;
                    self.expect_punct("=")?;
                    Some(self.ap()?)
                } else {
                    None
                };
                Op::Activation {
                    func,
                    dst,
                    src,
                    scale,
                    bias,
                }
            }
            "tensor_tensor" => {
                let op = self.named("ALU operation", &AluOp::ALL, AluOp::name)?;
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let a = self.ap()?;
                self.expect_punct(",")?;
                let b = self.ap()?;
                Op::TensorTensor { op, dst, a, b }
            }
            "tensor_scalar" => {
                let op = self.named("ALU operation", &AluOp::ALL, AluOp::name)?;
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let src = self.ap()?;
                self.expect_punct(",")?;
                let imm = self.float("an immediate")?;
                let reverse = self.is_ident("reverse");
                if reverse {
                    self.next();
                }
                Op::TensorScalar {
                    op,
                    dst,
                    src,
                    imm,
                    reverse,
                }
            }
            "reduce" => {
                let op = self.named("reduction", &ReduceOp::ALL, ReduceOp::name)?;
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let src = self.ap()?;
                Op::Reduce { op, dst, src }
            }
            "copy" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let src = self.ap()?;
                Op::Copy { dst, src }
            }
            "memset" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let value = self.float("a value")?;
                Op::Memset { dst, value }
            }
            "iota" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let base = self.float("a base")?;
                self.expect_punct(",")?;
                let pstep = self.float("a partition step")?;
                self.expect_punct(",")?;
                let fstep = self.float("a free step")?;
                Op::Iota {
                    dst,
                    base,
                    pstep,
                    fstep,
                }
            }
            "dma" => {
                let (q, qt) = self.ident("a DMA queue (`q0`..`q15`)")?;
                let queue = q
                    .strip_prefix('q')
                    .and_then(|d| d.parse::<u8>().ok())
                    .filter(|&n| (n as usize) < crate::machine::DMA_QUEUES && q.len() <= 3);
                let Some(queue) = queue else {
                    return self.err_at(
                        &qt,
                        format!("expected a DMA queue `q0`..`q15`, found `{q}`"),
                    );
                };
                let dst = self.dma_side()?;
                self.expect_punct(",")?;
                let src = self.dma_side()?;
                Op::Dma { queue, dst, src }
            }
            "signal" => Op::Signal { sem: self.sem()? },
            "wait" => {
                let sem = self.sem()?;
                self.expect_punct(">=")?;
                let value = self.expr()?;
                Op::Wait { sem, value }
            }
            _ => return self.err_at(&t, format!("unknown instruction `{opname}`")),
        };
        let mut inst = Inst::new(op);
        inst.pred = pred;
        inst.pos = first.line;
        if self.eat_punct("->") {
            inst.signal = Some(self.sem()?);
        }
        if self.is_ident("line") {
            self.next();
            inst.meta.line = Some(self.uint_u32("a line number")?);
        }
        if self.is_ident("stage") {
            self.next();
            inst.meta.stage = Some(self.uint_u32("a stage")?);
        }
        if self.is_ident("stmt") {
            self.next();
            let t = self.next();
            match t.tok {
                Tok::Str(s) => inst.meta.stmt = Some(s),
                ref other => {
                    return self.err_at(&t, format!("expected a string, found {}", describe(other)))
                }
            }
        }
        Ok(inst)
    }

    fn uint_u32(&mut self, what: &str) -> PResult<u32> {
        let t = self.peek().clone();
        let v = self.uint(what)?;
        u32::try_from(v).or_else(|_| self.err_at(&t, format!("{what} is too large")))
    }

    fn stmts(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            if self.is_punct("}") {
                self.next();
                return Ok(out);
            }
            if matches!(self.peek().tok, Tok::Eof) {
                let t = self.peek().clone();
                return self.err_at(&t, "expected `}` before the end of the program");
            }
            if self.is_ident("loop") {
                self.next();
                let (name, t) = self.ident("a register")?;
                let reg = match reg_of(&name) {
                    Some(r) if (r as usize) < MAX_REGS => Reg(r),
                    _ => {
                        return self.err_at(
                            &t,
                            format!(
                                "expected a register `r0`..`r{}`, found `{name}`",
                                MAX_REGS - 1
                            ),
                        )
                    }
                };
                if self.bound.contains(&reg) {
                    return self.err_at(
                        &t,
                        format!("register `{name}` is already bound by an enclosing loop"),
                    );
                }
                self.expect_punct("=")?;
                let t0 = self.peek().clone();
                if self.uint("0")? != 0 {
                    return self.err_at(&t0, "a loop starts at 0");
                }
                self.expect_punct("..")?;
                let trip = self.uint("a trip count")?;
                self.expect_punct("{")?;
                self.bound.push(reg);
                let body = self.stmts()?;
                self.bound.pop();
                out.push(Stmt::Loop(Loop { reg, trip, body }));
            } else {
                out.push(Stmt::Inst(self.inst()?));
            }
        }
    }

    fn new_name(&self, name: &str, t: &Token) -> PResult<()> {
        if reg_of(name).is_some() {
            return self.err_at(t, format!("`{name}` is reserved for a register"));
        }
        if self.prog.tensor_index(name).is_some() || self.prog.semaphore_index(name).is_some() {
            return self.err_at(t, format!("`{name}` is declared twice"));
        }
        Ok(())
    }

    fn program(&mut self) -> PResult<()> {
        let mut seen = [false; 5];
        loop {
            let t = self.next();
            match &t.tok {
                Tok::Eof => return Ok(()),
                Tok::Ident(k) if k == "tensor" => {
                    let (name, nt) = self.ident("a tensor name")?;
                    self.new_name(&name, &nt)?;
                    self.expect_punct(":")?;
                    let dtype = self.dtype()?;
                    self.expect_punct("[")?;
                    let mut shape = Vec::new();
                    loop {
                        let st = self.peek().clone();
                        let d = self.uint("a dimension")?;
                        if d == 0 {
                            return self.err_at(&st, "a tensor dimension must be positive");
                        }
                        shape.push(d);
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                    self.expect_punct("]")?;
                    let (word, rt) = self.ident("`input`, `output` or `scratch`")?;
                    let Some(role) = Role::ALL.into_iter().find(|r| r.name() == word) else {
                        return self.err_at(
                            &rt,
                            format!("expected `input`, `output` or `scratch`, found `{word}`"),
                        );
                    };
                    self.prog.tensors.push(TensorDecl {
                        name,
                        dtype,
                        shape,
                        role,
                    });
                }
                Tok::Ident(k) if k == "semaphore" => {
                    let (name, nt) = self.ident("a semaphore name")?;
                    self.new_name(&name, &nt)?;
                    self.prog.semaphores.push(name);
                }
                Tok::Ident(k) if k == "engine" => {
                    let (name, et) = self.ident("an engine")?;
                    let Some(e) = Engine::from_name(&name) else {
                        return self.err_at(
                            &et,
                            format!("unknown engine `{name}` (pe, act, dve, pool, sp)"),
                        );
                    };
                    if seen[e.index()] {
                        return self.err_at(&et, format!("engine `{name}` has two streams"));
                    }
                    seen[e.index()] = true;
                    self.expect_punct("{")?;
                    self.prog.streams[e.index()] = self.stmts()?;
                }
                other => {
                    return self.err_at(
                        &t,
                        format!(
                            "expected `tensor`, `semaphore` or `engine`, found {}",
                            describe(other)
                        ),
                    )
                }
            }
        }
    }
}

/// Parses a program.
pub fn parse(src: &str) -> Result<Program, ParseError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        prog: Program::default(),
        bound: Vec::new(),
    };
    p.program()?;
    Ok(p.prog)
}

/// Prints a program in the text form [`parse`] reads.
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
