//! The parser of the pseudo-ISA's text form (the grammar is in [`super`]'s doc): recursive
//! descent over [`super::lex`]'s tokens into a [`Program`].
//!
//! Beyond the grammar it checks what the text alone decides: tensors and semaphores are declared
//! once, before use, under names that are not register names; registers are bound by an enclosing
//! `loop` (which starts at 0), never twice; each engine has at most one stream; DMA queues are
//! `q0`..`q15`; numbers fit their fields. What needs the whole program (engines, shapes, memories)
//! is [`crate::validate`]'s. Invariant: every error is a [`ParseError`] at the token that caused
//! it; the parser never panics.

use super::lex::{describe, lex, reg_of, ParseError, Tok, Token};
use crate::isa::*;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    prog: Program,
    bound: Vec<Reg>,
}

type PResult<T> = Result<T, ParseError>;

/// Builds an operation from its destination and source.
type DstSrcOp = fn(Ap, Ap) -> Op;

/// The operations written `NAME DST, SRC` and nothing more, with how to build each.
const DST_SRC_OPS: [(&str, DstSrcOp); 7] = [
    ("transpose", |dst, src| Op::Transpose { dst, src }),
    ("copy", |dst, src| Op::Copy { dst, src }),
    ("vector_transpose", |dst, src| Op::VectorTranspose {
        dst,
        src,
    }),
    ("bn_stats", |dst, src| Op::BnStats { dst, src }),
    ("bn_aggr", |dst, src| Op::BnAggr { dst, src }),
    ("max8", |dst, src| Op::Max8 { dst, src }),
    ("sequence_bounds", |dst, src| Op::SequenceBounds {
        dst,
        src,
    }),
];

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

    /// `= [RUN, ...]`: the values of a constant tensor of `shape` (declared at `at`), a run
    /// being `VALUE` or `VALUE*COUNT`; exactly one value per element.
    fn const_values(&mut self, shape: &[u64], at: &Token) -> PResult<Vec<f32>> {
        let elems = shape.iter().fold(1u64, |a, &d| a.saturating_mul(d));
        self.expect_punct("=")?;
        self.expect_punct("[")?;
        let mut out: Vec<f32> = Vec::new();
        if !self.eat_punct("]") {
            loop {
                let v = self.float("a value")?;
                let ct = self.peek().clone();
                let n = if self.eat_punct("*") {
                    self.uint("a repeat count")?
                } else {
                    1
                };
                if (out.len() as u64).saturating_add(n) > elems {
                    return self.err_at(&ct, format!("more values than the {elems} elements"));
                }
                out.extend(std::iter::repeat_n(v, n as usize));
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct("]")?;
        }
        if out.len() as u64 != elems {
            return self.err_at(
                at,
                format!("{} values for a constant of {elems} elements", out.len()),
            );
        }
        Ok(out)
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

    /// `[@(CMP && ...)] OPCODE OPERANDS [-> SEM] [line N] [stage N] [stmt "..."]`.
    fn inst(&mut self) -> PResult<Inst> {
        let first = self.peek().clone();
        let pred = if self.eat_punct("@") {
            self.guard()?
        } else {
            Vec::new()
        };
        let (opname, t) = self.ident("an instruction")?;
        let op = self.op(&opname, &t)?;
        let mut inst = Inst::new(op);
        inst.pred = pred;
        inst.pos = first.line;
        if self.eat_punct("->") {
            inst.signal = Some(self.sem()?);
        }
        self.meta(&mut inst.meta)?;
        Ok(inst)
    }

    /// The comparisons of a guard `(CMP && ...)`, after its `@`.
    fn guard(&mut self) -> PResult<Vec<Cmp>> {
        let mut pred = Vec::new();
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
        Ok(pred)
    }

    /// The operands of opcode `opname` (token `t`), the operation they make.
    fn op(&mut self, opname: &str, t: &Token) -> PResult<Op> {
        if let Some((_, make)) = DST_SRC_OPS.iter().find(|(name, _)| *name == opname) {
            let (dst, src) = self.dst_src()?;
            return Ok(make(dst, src));
        }
        Ok(match opname {
            "matmul" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let a = self.ap()?;
                self.expect_punct(",")?;
                let b = self.ap()?;
                let acc = self.eat_keyword("acc");
                Op::Matmul { dst, a, b, acc }
            }
            "activation" => self.activation()?,
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
                let (dst, src) = self.dst_src()?;
                self.expect_punct(",")?;
                let imm = self.float("an immediate")?;
                let reverse = self.eat_keyword("reverse");
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
                let (dst, src) = self.dst_src()?;
                Op::Reduce { op, dst, src }
            }
            "memset" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let value = self.float("a value")?;
                Op::Memset { dst, value }
            }
            "iota" => self.iota()?,
            "tensor_tensor_scan" => self.scan()?,
            "find_index8" | "match_replace8" => self.top8(opname == "match_replace8")?,
            "rand" => {
                let dst = self.ap()?;
                self.expect_punct(",")?;
                let stream = self.stream()?;
                Op::Rand { dst, stream }
            }
            "dropout" => {
                let (dst, src) = self.dst_src()?;
                self.expect_punct(",")?;
                let prob = self.ap()?;
                self.expect_punct(",")?;
                let stream = self.stream()?;
                Op::Dropout {
                    dst,
                    src,
                    prob,
                    stream,
                }
            }
            "shuffle" => self.shuffle()?,
            "local_gather" => {
                let (dst, src) = self.dst_src()?;
                self.expect_punct(",")?;
                let index = self.ap()?;
                self.expect_punct(",")?;
                let group = self.uint_u32("a group of partitions")?;
                self.expect_punct(",")?;
                let elems = self.uint_u32("elements per index")?;
                Op::LocalGather {
                    dst,
                    src,
                    index,
                    group,
                    elems,
                }
            }
            "dma" => self.dma()?,
            "signal" => Op::Signal { sem: self.sem()? },
            "wait" => {
                let sem = self.sem()?;
                self.expect_punct(">=")?;
                let value = self.expr()?;
                Op::Wait { sem, value }
            }
            _ => return self.err_at(t, format!("unknown instruction `{opname}`")),
        })
    }

    /// The stream number of a random instruction (a `u32`).
    fn stream(&mut self) -> PResult<u32> {
        let t = self.peek().clone();
        let v = self.uint("a stream number")?;
        u32::try_from(v).or_else(|_| self.err_at(&t, format!("stream {v} is out of range")))
    }

    /// `DST, SRC`: two access patterns.
    fn dst_src(&mut self) -> PResult<(Ap, Ap)> {
        let dst = self.ap()?;
        self.expect_punct(",")?;
        let src = self.ap()?;
        Ok((dst, src))
    }

    /// Whether the next token is keyword `k`, taken when it is.
    fn eat_keyword(&mut self, k: &str) -> bool {
        let there = self.is_ident(k);
        if there {
            self.next();
        }
        there
    }

    /// `activation FUNC DST, SRC, scale=IMM|AP[, bias=AP]`, after the opcode.
    fn activation(&mut self) -> PResult<Op> {
        let func = self.named("activation function", &ActFunc::ALL, ActFunc::name)?;
        let (dst, src) = self.dst_src()?;
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
        Ok(Op::Activation {
            func,
            dst,
            src,
            scale,
            bias,
        })
    }

    /// `tensor_tensor_scan OP0 OP1 DST, A, B, INIT`, after the opcode.
    fn scan(&mut self) -> PResult<Op> {
        let op0 = self.named("ALU operation", &AluOp::ALL, AluOp::name)?;
        let op1 = self.named("ALU operation", &AluOp::ALL, AluOp::name)?;
        let dst = self.ap()?;
        self.expect_punct(",")?;
        let a = self.ap()?;
        self.expect_punct(",")?;
        let b = self.ap()?;
        self.expect_punct(",")?;
        let init = self.ap()?;
        Ok(Op::TensorTensorScan {
            op0,
            op1,
            dst,
            a,
            b,
            init,
        })
    }

    /// `find_index8 DST, SRC, VALS`, or with `replace` `match_replace8 DST, SRC, VALS, IMM`,
    /// after the opcode.
    fn top8(&mut self, replace: bool) -> PResult<Op> {
        let (dst, src) = self.dst_src()?;
        self.expect_punct(",")?;
        let vals = self.ap()?;
        if !replace {
            return Ok(Op::FindIndex8 { dst, src, vals });
        }
        self.expect_punct(",")?;
        let imm = self.float("a value")?;
        Ok(Op::MatchReplace8 {
            dst,
            src,
            vals,
            imm,
        })
    }

    /// `shuffle DST, SRC, [M0, ..., M31]`, after the opcode: each row 0 to 31, or 255 (kept).
    fn shuffle(&mut self) -> PResult<Op> {
        let (dst, src) = self.dst_src()?;
        self.expect_punct(",")?;
        let open = self.peek().clone();
        self.expect_punct("[")?;
        let mut mask = Vec::new();
        loop {
            let t = self.peek().clone();
            let v = self.uint("a shuffle row")?;
            match u8::try_from(v) {
                Ok(m) if usize::from(m) < vocab::SHUFFLE_QUADRANT || m == vocab::SHUFFLE_KEEP => {
                    mask.push(m)
                }
                _ => return self.err_at(&t, format!("shuffle row {v} is not 0 to 31 or 255")),
            }
            if self.is_punct("]") {
                self.next();
                break;
            }
            self.expect_punct(",")?;
        }
        match <[u8; 32]>::try_from(mask) {
            Ok(mask) => Ok(Op::Shuffle { dst, src, mask }),
            Err(m) => self.err_at(
                &open,
                format!("a shuffle mask has 32 rows, not {}", m.len()),
            ),
        }
    }

    /// `iota DST, BASE, PSTEP, FSTEP`, after the opcode.
    fn iota(&mut self) -> PResult<Op> {
        let dst = self.ap()?;
        self.expect_punct(",")?;
        let base = self.float("a base")?;
        self.expect_punct(",")?;
        let pstep = self.float("a partition step")?;
        self.expect_punct(",")?;
        let fstep = self.float("a free step")?;
        Ok(Op::Iota {
            dst,
            base,
            pstep,
            fstep,
        })
    }

    /// `dma qN DST, SRC [index IDX] [skip_oob] [add]`, after the opcode.
    fn dma(&mut self) -> PResult<Op> {
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
        let index = if self.eat_keyword("index") {
            Some(self.ap()?)
        } else {
            None
        };
        let mode = DmaMode {
            skip_oob: self.eat_keyword("skip_oob"),
            accumulate: self.eat_keyword("add"),
        };
        Ok(Op::Dma {
            queue,
            dst,
            src,
            index,
            mode,
        })
    }

    /// The trailing metadata of an instruction: `[line N] [stage N] [stmt "..."]`.
    fn meta(&mut self, meta: &mut Meta) -> PResult<()> {
        if self.eat_keyword("line") {
            meta.line = Some(self.uint_u32("a line number")?);
        }
        if self.eat_keyword("stage") {
            meta.stage = Some(self.uint_u32("a stage")?);
        }
        if self.eat_keyword("stmt") {
            let t = self.next();
            match t.tok {
                Tok::Str(s) => meta.stmt = Some(s),
                ref other => {
                    return self.err_at(&t, format!("expected a string, found {}", describe(other)))
                }
            }
        }
        Ok(())
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
                    let (word, rt) = self.ident("`input`, `output`, `scratch` or `const`")?;
                    let Some(role) = Role::ALL.into_iter().find(|r| r.name() == word) else {
                        return self.err_at(
                            &rt,
                            format!(
                                "expected `input`, `output`, `scratch` or `const`, found `{word}`"
                            ),
                        );
                    };
                    let values = if role == Role::Const {
                        self.const_values(&shape, &rt)?
                    } else {
                        Vec::new()
                    };
                    self.prog.tensors.push(TensorDecl {
                        name,
                        dtype,
                        shape,
                        role,
                        values,
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
