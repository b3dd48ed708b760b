//! The reader of BIR's text form (the grammar is documented at [`crate::codegen::bir::write_bir`]).
//!
//! [`parse_bir`] reads what `write_bir` writes (and texts written by hand for the filetests) into
//! a `(penguin::Function, Bir)` pair: BIR names Penguin entities, so the reader also builds the
//! Function that holds them, with exactly what the backend passes read:
//! - a tensor per `buffer` line (memory, dtype, shape, kind, block dimensions); the header's
//!   parameters and outputs become `params` and `outputs`;
//! - an axis per `loop` header (induction variable, `lb..lb + trip`, the `pipelined` attribute),
//!   placed in the Function's tree as a loop statement holding the statements of its body;
//! - a statement per instruction, holding that instruction alone, with the instruction's guards as
//!   its predicates and its stage as the statement's stage tag (so `BInstData::stmt` is valid, and
//!   lowering the Function again gives the same BIR: guards and engines are explicit).
//!
//! Numbering is canonical: tensors in declaration order, axes and BIR loops in the order of their
//! headers (pre-order), instructions and statements in order of appearance. A loop's `depth` is
//! the register number its header names and each instruction's `loops` is the chain of loops
//! around it, so a wrong register number reads and the verifier ([`crate::codegen::bir_verify`]) reports
//! it. Induction variables are resolved for the whole text (a ring or a guard may name any loop),
//! so that a variable used outside its loop reads and the verifier reports that too.
//!
//! Invariants: the reader never panics, whatever the input; every error is a [`BirParseError`]
//! naming a line and column (1-based, columns in characters) and what was expected; integers out
//! of range and affine coefficients beyond 64 bits are errors. For BIR that verifies,
//! `write_bir(parse_bir(write_bir(x))) == write_bir(x)`. Source spans are not part of the text.

use crate::codegen::bir::{BInstData, BLoopData, BNode, Bir, BirLoop, MAX_TEXT_DEPTH};
use penguin::affine::{CmpOp, Predicate};
use penguin::ir::{
    ActFunc, AluOp, AxisAttrs, AxisData, BlockDim, DType, EngineClass, InstData, LoopKind, Memory,
    Op, ReduceOp, Scale, TensorData, TensorKind,
};
use penguin::lex::{Tok, Token, TokenCursor};
use penguin::parse::OperandReader;
use penguin::{Axis, Function, Stmt, Tensor};
use runtime_sim::isa::Engine;
use std::collections::HashMap;
use std::fmt;

/// A syntax error in BIR text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BirParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    pub message: String,
}

impl fmt::Display for BirParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for BirParseError {}

/// Reads the text form of one kernel's BIR, with the Penguin Function it references.
pub fn parse_bir(text: &str) -> Result<(Function, Bir), BirParseError> {
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        func: Function::default(),
        bir: Bir::default(),
        tensors: HashMap::new(),
        axes: HashMap::new(),
        loops: Vec::new(),
    };
    p.prescan_loops()?;
    p.kernel()?;
    Ok((p.func, p.bir))
}

/// The engine class of the Penguin instruction behind a BIR instruction on `engine`.
pub fn engine_class(engine: Engine) -> EngineClass {
    match engine {
        Engine::Sp => EngineClass::Dma,
        Engine::Pe => EngineClass::Tensor,
        Engine::Dve => EngineClass::Vector,
        Engine::Act => EngineClass::Scalar,
        Engine::Pool => EngineClass::GpSimd,
    }
}

// ---------------------------------------------------------------------------------------------
// Lexer (the tokens of Penguin's text form, plus `@`)

/// BIR's punctuation: Penguin's and the guard marker `@`, longest first.
const SYMBOLS: [&str; 20] = [
    "->", "+:", "..", ">=", "==", "&&", "(", ")", "{", "}", "[", "]", ",", ":", "=", "+", "-", "*",
    "<", "@",
];

/// The shared lexer ([`penguin::lex`]) with BIR's symbols; its errors as BIR's.
fn lex(text: &str) -> Result<Vec<Token>, BirParseError> {
    penguin::lex::lex(text, &SYMBOLS).map_err(BirParseError::from)
}

type PResult<T> = Result<T, BirParseError>;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    func: Function,
    bir: Bir,
    tensors: HashMap<String, Tensor>,
    axes: HashMap<String, Axis>,
    /// The BIR loops enclosing the current position, outermost first.
    loops: Vec<BirLoop>,
}

impl TokenCursor for Parser {
    type Error = BirParseError;

    fn toks(&self) -> &[Token] {
        &self.toks
    }

    fn pos(&self) -> usize {
        self.pos
    }

    fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }
}

impl From<penguin::ParseError> for BirParseError {
    fn from(e: penguin::ParseError) -> Self {
        BirParseError {
            line: e.line,
            col: e.col,
            message: e.message,
        }
    }
}

impl OperandReader for Parser {
    const OPERAND: &'static str = "a buffer operand";

    fn tensor_ref(&self, name: &str, tok: &Token) -> PResult<Tensor> {
        match self.tensors.get(name) {
            Some(&t) => Ok(t),
            None => self.err_at(tok, format!("undefined buffer `{name}`")),
        }
    }

    fn axis_ref(&self, name: &str, tok: &Token) -> PResult<Axis> {
        match self.axes.get(name) {
            Some(&a) => Ok(a),
            None => self.err_at(tok, format!("undefined induction variable `{name}`")),
        }
    }
}

impl Parser {
    /// Registers the induction variable of every loop header (`loop rD = 0..T (IV = ...`), in
    /// order, so that names resolve wherever they are used.
    fn prescan_loops(&mut self) -> PResult<()> {
        let mut first_seen: HashMap<String, (usize, usize)> = HashMap::new();
        for k in 0..self.toks.len() {
            if !matches!(&self.toks[k].tok, Tok::Ident(w) if w == "loop") {
                continue;
            }
            // `loop rD = 0 .. T ( IV`: the variable is the 8th token.
            let Some(tok) = self.toks.get(k + 7) else {
                continue;
            };
            let open = self.toks.get(k + 6).map(|t| &t.tok);
            let (Some(Tok::Sym("(")), Tok::Ident(name)) = (open, &tok.tok) else {
                continue;
            };
            if let Some((l, c)) = first_seen.get(name) {
                return self.err_at(
                    tok,
                    format!(
                        "duplicate induction variable `{name}` (first declared at line {l}:{c})"
                    ),
                );
            }
            first_seen.insert(name.clone(), (tok.line, tok.col));
            let axis = self.func.axes.push(AxisData {
                iv_name: name.clone(),
                kind: LoopKind::Affine,
                lb: 0,
                ub: 0,
                attrs: AxisAttrs::default(),
                body: Vec::new(),
            });
            self.axes.insert(name.clone(), axis);
        }
        Ok(())
    }

    /// `bir NAME(PARAMS) -> (OUTPUTS) { BUFFER... NODE... }`
    fn kernel(&mut self) -> PResult<()> {
        self.expect_word("bir")?;
        let (name, _) = self.ident("a kernel name")?;
        self.func.name = name;
        self.expect_sym("(")?;
        let params = self.list(")", |p| p.ident("a parameter name"))?;
        self.expect_sym("->")?;
        self.expect_sym("(")?;
        let outputs = self.list(")", |p| p.ident("an output name"))?;
        let open = self.expect_sym("{")?;
        while self.is_word("buffer") {
            self.buffer()?;
        }
        for (name, tok) in params {
            let t = self.tensor_ref(&name, &tok)?;
            self.func.params.push(t);
        }
        for (name, tok) in outputs {
            let t = self.tensor_ref(&name, &tok)?;
            self.func.outputs.push(t);
        }
        let (stmts, nodes) = self.block(&open, "kernel body")?;
        self.func.body = stmts;
        self.bir.body = nodes;
        if !matches!(self.peek().tok, Tok::Eof) {
            return self.expected("end of input after the kernel");
        }
        Ok(())
    }

    /// `buffer NAME: MEMORY DTYPE[SHAPE] KIND [ring[IV: COUNT, ...]]`
    fn buffer(&mut self) -> PResult<()> {
        self.expect_word("buffer")?;
        let (name, name_tok) = self.ident("a buffer name")?;
        if self.tensors.contains_key(&name) {
            return self.err_at(&name_tok, format!("duplicate buffer `{name}`"));
        }
        self.expect_sym(":")?;
        let (mem, tok) = self.ident("a memory (`hbm`, `sbuf` or `psum`)")?;
        let memory = match mem.as_str() {
            "hbm" => Memory::Hbm,
            "sbuf" => Memory::Sbuf,
            "psum" => Memory::Psum,
            _ => {
                return self.err_at(
                    &tok,
                    format!("expected a memory (`hbm`, `sbuf` or `psum`), found `{mem}`"),
                )
            }
        };
        let (dt, tok) = self.ident("a dtype (`f32` or `bf16`)")?;
        let dtype = match dt.as_str() {
            "f32" => DType::F32,
            "bf16" => DType::Bf16,
            _ => {
                return self.err_at(
                    &tok,
                    format!("expected a dtype (`f32` or `bf16`), found `{dt}`"),
                )
            }
        };
        self.expect_sym("[")?;
        let shape = self.list("]", |p| p.u64_lit("a dimension"))?;
        let (k, tok) = self.ident("a buffer kind (`input`, `output` or `local`)")?;
        let kind = match k.as_str() {
            "input" => TensorKind::Input,
            "output" => TensorKind::Output,
            "local" => TensorKind::Local,
            _ => {
                return self.err_at(
                    &tok,
                    format!("expected a buffer kind (`input`, `output` or `local`), found `{k}`"),
                )
            }
        };
        let mut block = Vec::new();
        if self.is_word("ring") {
            self.bump();
            self.expect_sym("[")?;
            block = self.list("]", |p| {
                let (iv, tok) = p.ident("an induction variable")?;
                let axis = p.axis_ref(&iv, &tok)?;
                p.expect_sym(":")?;
                let count = p.u32_lit("a slot count")?;
                Ok(BlockDim { axis, count })
            })?;
        }
        let t = self.func.tensors.push(TensorData {
            name: name.clone(),
            memory,
            dtype,
            shape,
            kind,
            block,
        });
        self.tensors.insert(name, t);
        Ok(())
    }

    /// Loops and instructions up to the `}` closing the block opened by `open`: the Penguin
    /// statements and the BIR nodes.
    fn block(&mut self, open: &Token, what: &str) -> PResult<(Vec<Stmt>, Vec<BNode>)> {
        let (mut stmts, mut nodes) = (Vec::new(), Vec::new());
        loop {
            if self.eat_sym("}") {
                return Ok((stmts, nodes));
            }
            if matches!(self.peek().tok, Tok::Eof) {
                return self.expected(&format!(
                    "`}}` to close the {what} opened at line {}:{}",
                    open.line, open.col
                ));
            }
            if self.is_word("buffer") {
                return self.expected(
                    "a loop, an instruction or `}` (buffers are declared before the first \
                     instruction)",
                );
            }
            let (s, n) = if self.is_word("loop") {
                self.lp()?
            } else {
                self.inst()?
            };
            stmts.push(s);
            nodes.push(n);
        }
    }

    /// `loop rD = 0..TRIP (IV = rD + LB) [pipelined(stages=N, trip=T[, peeled])] { ... }`
    fn lp(&mut self) -> PResult<(Stmt, BNode)> {
        let loop_tok = self.expect_word("loop")?;
        if self.loops.len() >= MAX_TEXT_DEPTH {
            return self.err_at(
                &loop_tok,
                format!("loops nested deeper than {MAX_TEXT_DEPTH}"),
            );
        }
        let (reg, reg_tok) = self.ident("a loop register (`r0`, `r1`, ...)")?;
        let depth = match reg.strip_prefix('r').map(str::parse::<usize>) {
            Some(Ok(d)) => d,
            _ => {
                return self.err_at(
                    &reg_tok,
                    format!("expected a loop register (`r0`, `r1`, ...), found `{reg}`"),
                )
            }
        };
        self.expect_sym("=")?;
        let (zero, zero_tok) = self.uint("`0`")?;
        if zero != 0 {
            return self.err_at(&zero_tok, "a loop register counts from `0`");
        }
        self.expect_sym("..")?;
        let trip = self.u64_lit("a trip count")?;
        let Ok(trip_i64) = i64::try_from(trip) else {
            return self.err_at(&loop_tok, format!("trip count {trip} is too large"));
        };
        self.expect_sym("(")?;
        let (iv, iv_tok) = self.ident("an induction variable")?;
        let axis = self.axis_ref(&iv, &iv_tok)?;
        self.expect_sym("=")?;
        let (reg2, reg2_tok) = self.ident("the loop's register")?;
        if reg2 != reg {
            return self.err_at(
                &reg2_tok,
                format!("expected the loop's register `{reg}`, found `{reg2}`"),
            );
        }
        self.expect_sym("+")?;
        let lb = self.i64_lit("a lower bound")?;
        self.expect_sym(")")?;
        let Some(ub) = lb.checked_add(trip_i64) else {
            return self.err_at(&loop_tok, "the loop's upper bound is out of range");
        };
        let mut pipelined = None;
        if self.is_word("pipelined") {
            self.bump();
            pipelined = Some(self.pipelined_args()?);
        }
        if !self.is_sym("{") {
            return self.expected("`pipelined(stages=N, trip=T)` or `{`");
        }
        let open = self.bump();
        let stmt = self.func.add_loop_stmt(axis);
        let id = self.bir.loops.push(BLoopData {
            axis,
            iv: iv.clone(),
            lb,
            trip,
            depth,
            body: Vec::new(),
        });
        self.loops.push(id);
        let (stmts, nodes) = self.block(&open, "loop body")?;
        self.loops.pop();
        self.bir.loops[id].body = nodes;
        self.func.axes[axis] = AxisData {
            iv_name: iv,
            kind: LoopKind::Affine,
            lb,
            ub,
            attrs: AxisAttrs {
                pipelined,
                ..AxisAttrs::default()
            },
            body: stmts,
        };
        Ok((stmt, BNode::Loop(id)))
    }

    /// `[@(GUARD && ...)] ENGINE.OP[(PARAMS)] DST, SRC, ...  [stage N]`
    fn inst(&mut self) -> PResult<(Stmt, BNode)> {
        let mut guards = Vec::new();
        if self.eat_sym("@") {
            self.expect_sym("(")?;
            loop {
                guards.push(self.predicate()?);
                if self.eat_sym(")") {
                    break;
                }
                if !self.eat_sym("&&") {
                    return self.expected("`&&` or `)`");
                }
            }
        }
        let (word, op_tok) = self.ident("an instruction `ENGINE.OP` or `loop`")?;
        let Some((engine_name, op_name)) = word.split_once('.') else {
            return self.err_at(
                &op_tok,
                format!(
                    "expected an instruction with its engine (`ENGINE.OP`, e.g. `sp.load`), \
                     found `{word}`"
                ),
            );
        };
        let Some(engine) = Engine::from_name(engine_name) else {
            return self.err_at(
                &op_tok,
                format!("unknown engine `{engine_name}` (expected pe, act, dve, pool or sp)"),
            );
        };
        let op_name = op_name.to_string();
        let op = self.op(&op_name, &op_tok)?;
        let dst = self.operand()?;
        let mut srcs = Vec::new();
        while self.eat_sym(",") {
            srcs.push(self.operand()?);
        }
        let mut stage = None;
        if self.is_word("stage") {
            self.bump();
            stage = Some(self.u32_lit("a stage")?);
        }
        let inst = self.func.insts.push(InstData {
            op: op.clone(),
            engine: engine_class(engine),
            dst: dst.clone(),
            srcs: srcs.clone(),
            mask: Vec::new(),
        });
        let stmt = self.func.add_inst_stmt(vec![inst]);
        self.func.stmts[stmt].preds = guards.clone();
        self.func.stage_tags[stmt] = stage;
        let idx = self.bir.insts.push(BInstData {
            engine,
            op,
            dst,
            srcs,
            guards,
            loops: self.loops.clone(),
            stmt,
            stage,
            span: None,
        });
        Ok((stmt, BNode::Inst(idx)))
    }

    /// `EXPR (>= | < | ==) INT`
    fn predicate(&mut self) -> PResult<Predicate> {
        let expr = self.affine()?;
        let cmp = if self.eat_sym(">=") {
            CmpOp::Ge
        } else if self.eat_sym("<") {
            CmpOp::Lt
        } else if self.eat_sym("==") {
            CmpOp::Eq
        } else {
            return self.expected("a comparison (`>=`, `<` or `==`)");
        };
        let bound = self.i64_lit("an integer bound")?;
        Ok(Predicate { expr, cmp, bound })
    }

    /// The operation `op_name` with its parameters, `(key=value, ...)`: every key of its
    /// schema, once, in any order.
    fn op(&mut self, op_name: &str, op_tok: &Token) -> PResult<Op> {
        let schema: &[(&str, ParamTy)] = match op_name {
            "load" | "store" | "transpose" | "copy" => &[],
            "matmul" => &[("accumulate", ParamTy::Bool)],
            "tensor_tensor" => &[("op", ParamTy::Alu)],
            "tensor_scalar" => &[
                ("op", ParamTy::Alu),
                ("imm", ParamTy::Float),
                ("reverse", ParamTy::Bool),
            ],
            "activation" => &[
                ("func", ParamTy::Act),
                ("scale", ParamTy::Scale),
                ("bias", ParamTy::Bool),
            ],
            "reduce" => &[("op", ParamTy::Reduce)],
            "tensor_tensor_scan" => &[("op0", ParamTy::Alu), ("op1", ParamTy::Alu)],
            "bn_stats" | "bn_aggr" | "vector_transpose" | "max8" | "find_index8" => &[],
            "match_replace8" => &[("imm", ParamTy::Float)],
            "memset" => &[("value", ParamTy::Float)],
            "iota" => &[
                ("base", ParamTy::Float),
                ("pstep", ParamTy::Float),
                ("fstep", ParamTy::Float),
            ],
            _ => return self.err_at(op_tok, format!("unknown operation `{op_name}`")),
        };
        let mut vals: Vec<Option<ParamVal>> = vec![None; schema.len()];
        if !schema.is_empty() {
            let open = self.expect_sym("(").or_else(|_| {
                self.expected(&format!(
                    "`(` and the parameters of `{op_name}` (missing `{}`)",
                    schema[0].0
                ))
            })?;
            self.list(")", |p| {
                let (key, tok) = p.ident("a parameter name")?;
                let Some(k) = schema.iter().position(|(n, _)| *n == key) else {
                    let names: Vec<&str> = schema.iter().map(|(n, _)| *n).collect();
                    return p.err_at(
                        &tok,
                        format!(
                            "unknown parameter `{key}` of `{op_name}` (expected {})",
                            names.join(", ")
                        ),
                    );
                };
                if vals[k].is_some() {
                    return p.err_at(&tok, format!("duplicate parameter `{key}`"));
                }
                p.expect_sym("=")?;
                vals[k] = Some(p.param_value(schema[k].1)?);
                Ok(())
            })?;
            if let Some(k) = vals.iter().position(Option::is_none) {
                return self.err_at(
                    &open,
                    format!("missing parameter `{}` of `{op_name}`", schema[k].0),
                );
            }
        }
        let vals: Vec<ParamVal> = vals.into_iter().flatten().collect();
        use ParamVal as V;
        Ok(match (op_name, vals.as_slice()) {
            ("matmul", [V::Bool(accumulate)]) => Op::Matmul {
                accumulate: *accumulate,
            },
            ("tensor_tensor", [V::Alu(op)]) => Op::TensorTensor { op: *op },
            ("tensor_scalar", [V::Alu(op), V::Float(imm), V::Bool(reverse)]) => Op::TensorScalar {
                op: *op,
                imm: *imm,
                reverse: *reverse,
            },
            ("activation", [V::Act(func), V::Scale(scale), V::Bool(bias)]) => Op::Activation {
                func: *func,
                scale: *scale,
                bias: *bias,
            },
            ("reduce", [V::Reduce(op)]) => Op::Reduce { op: *op },
            ("memset", [V::Float(value)]) => Op::Memset { value: *value },
            ("iota", [V::Float(base), V::Float(pstep), V::Float(fstep)]) => Op::Iota {
                base: *base,
                pstep: *pstep,
                fstep: *fstep,
            },
            ("load", []) => Op::Load,
            ("store", []) => Op::Store,
            ("transpose", []) => Op::Transpose,
            ("copy", []) => Op::Copy,
            ("bn_stats", []) => Op::BnStats,
            ("bn_aggr", []) => Op::BnAggr,
            ("vector_transpose", []) => Op::VectorTranspose,
            ("max8", []) => Op::Max8,
            ("find_index8", []) => Op::FindIndex8,
            ("match_replace8", [V::Float(imm)]) => Op::MatchReplace8 { imm: *imm },
            ("tensor_tensor_scan", [V::Alu(op0), V::Alu(op1)]) => Op::TensorTensorScan {
                op0: *op0,
                op1: *op1,
            },
            // Every key was filled above with a value of its schema's type.
            _ => return self.err_at(op_tok, format!("malformed parameters of `{op_name}`")),
        })
    }

    fn param_value(&mut self, ty: ParamTy) -> PResult<ParamVal> {
        match ty {
            ParamTy::Bool => {
                let (w, tok) = self.ident("`true` or `false`")?;
                match w.as_str() {
                    "true" => Ok(ParamVal::Bool(true)),
                    "false" => Ok(ParamVal::Bool(false)),
                    _ => self.err_at(&tok, format!("expected `true` or `false`, found `{w}`")),
                }
            }
            ParamTy::Float => Ok(ParamVal::Float(self.float()?)),
            ParamTy::Scale => {
                if self.is_word("tile") {
                    self.bump();
                    Ok(ParamVal::Scale(Scale::Tile))
                } else {
                    Ok(ParamVal::Scale(Scale::Imm(self.float()?)))
                }
            }
            ParamTy::Alu => {
                let (w, tok) = self.ident("an ALU operation")?;
                match AluOp::ALL.iter().find(|o| o.name() == w) {
                    Some(&o) => Ok(ParamVal::Alu(o)),
                    None => self.err_at(
                        &tok,
                        format!(
                            "unknown ALU operation `{w}` (expected one of {})",
                            names(AluOp::ALL.map(AluOp::name))
                        ),
                    ),
                }
            }
            ParamTy::Act => {
                let (w, tok) = self.ident("an activation function")?;
                match ActFunc::ALL.iter().find(|o| o.name() == w) {
                    Some(&o) => Ok(ParamVal::Act(o)),
                    None => self.err_at(&tok, format!("unknown activation function `{w}`")),
                }
            }
            ParamTy::Reduce => {
                let (w, tok) = self.ident("a reduction")?;
                match ReduceOp::ALL.into_iter().find(|o| o.name() == w) {
                    Some(o) => Ok(ParamVal::Reduce(o)),
                    None => self.err_at(
                        &tok,
                        format!(
                            "unknown reduction `{w}` (expected one of {})",
                            names(ReduceOp::ALL.map(ReduceOp::name))
                        ),
                    ),
                }
            }
        }
    }

    /// `['-'] (NUMBER | inf | NaN | nan:0xBITS)` as an `f32`, bit-exact.
    fn float(&mut self) -> PResult<f32> {
        let neg = self.eat_sym("-");
        let tok = self.peek().clone();
        let v = match &tok.tok {
            Tok::Int(s) | Tok::Float(s) if !s.starts_with("0x") && !s.starts_with("0X") => {
                self.bump();
                match s.parse::<f32>() {
                    Ok(v) => v,
                    Err(_) => return self.err_at(&tok, format!("malformed number `{s}`")),
                }
            }
            Tok::Ident(w) if w == "inf" => {
                self.bump();
                f32::INFINITY
            }
            Tok::Ident(w) if w == "NaN" => {
                self.bump();
                f32::NAN
            }
            Tok::Ident(w) if w == "nan" => {
                self.bump();
                self.expect_sym(":")?;
                let (bits, btok) = self.uint("the bits of a NaN (`nan:0x7fc00001`)")?;
                let v = u32::try_from(bits)
                    .map(f32::from_bits)
                    .ok()
                    .filter(|v| v.is_nan());
                match v {
                    Some(v) => v,
                    None => {
                        return self.err_at(&btok, format!("0x{bits:x} is not the bits of a NaN"))
                    }
                }
            }
            _ => return self.expected("a number"),
        };
        Ok(if neg { -v } else { v })
    }
}

/// The type of an op parameter's value.
#[derive(Clone, Copy)]
enum ParamTy {
    Bool,
    Float,
    /// A float or the word `tile`.
    Scale,
    Alu,
    Act,
    Reduce,
}

#[derive(Clone, Copy)]
enum ParamVal {
    Bool(bool),
    Float(f32),
    Scale(Scale),
    Alu(AluOp),
    Act(ActFunc),
    Reduce(ReduceOp),
}

/// Names for a diagnostic: `a, b, c`.
fn names<const N: usize>(all: [&str; N]) -> String {
    all.join(", ")
}
