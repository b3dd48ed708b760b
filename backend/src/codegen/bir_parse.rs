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
use penguin::ir::{AxisAttrs, AxisData, EngineClass, InstData, LoopKind};
use penguin::lex::{Tok, Token, TokenCursor};
use penguin::op_text::OpReader;
use penguin::parse::{DeclWords, OperandReader, Reading};
use penguin::{Function, Stmt};
use runtime_sim::isa::Engine;

/// A syntax error in BIR text: Penguin's, since the two readers share the lexer, the token
/// cursor and the reading of declarations and operands.
pub type BirParseError = penguin::ParseError;

/// BIR's spelling of a tensor declaration: `buffer NAME: ... ring[IV: COUNT]`.
const BUFFER_DECL: DeclWords = DeclWords {
    keyword: "buffer",
    noun: "buffer",
    block: "ring",
    count: "a slot count",
};

/// Reads the text form of one kernel's BIR, with the Penguin Function it references.
pub fn parse_bir(text: &str) -> Result<(Function, Bir), BirParseError> {
    let toks = lex(text)?;
    let mut p = Parser {
        r: Reading::new(toks),
        bir: Bir::default(),
        loops: Vec::new(),
    };
    p.prescan_loops(iv_of_loop)?;
    p.kernel()?;
    Ok((p.r.decl.func, p.bir))
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

/// The shared lexer ([`penguin::lex`]) with BIR's symbols.
fn lex(text: &str) -> Result<Vec<Token>, BirParseError> {
    penguin::lex::lex(text, &SYMBOLS)
}

type PResult<T> = Result<T, BirParseError>;

struct Parser {
    r: Reading,
    bir: Bir,
    /// The BIR loops enclosing the current position, outermost first.
    loops: Vec<BirLoop>,
}

impl OperandReader for Parser {
    const OPERAND: &'static str = "a buffer operand";
    const NOUN: &'static str = "buffer";

    fn reading(&self) -> &Reading {
        &self.r
    }

    fn reading_mut(&mut self) -> &mut Reading {
        &mut self.r
    }
}

/// The induction variable's name in a BIR loop header at token `k`: `loop rD = 0 .. T ( IV`,
/// the 8th token.
fn iv_of_loop(toks: &[Token], k: usize) -> Option<usize> {
    let tok = |at: usize| toks.get(at).map(|t| &t.tok);
    let header = matches!(tok(k), Some(Tok::Ident(w)) if w == "loop");
    let named = matches!(
        (tok(k + 6), tok(k + 7)),
        (Some(Tok::Sym("(")), Some(Tok::Ident(_)))
    );
    (header && named).then_some(k + 7)
}

impl Parser {
    /// `bir NAME(PARAMS) -> (OUTPUTS) { BUFFER... NODE... }`
    fn kernel(&mut self) -> PResult<()> {
        let open = self.kernel_header("bir", &BUFFER_DECL)?;
        let (stmts, nodes) = self.block(&open, "kernel body")?;
        self.r.decl.func.body = stmts;
        self.bir.body = nodes;
        if !matches!(self.peek().tok, Tok::Eof) {
            return self.expected("end of input after the kernel");
        }
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
        let stmt = self.r.decl.func.add_loop_stmt(axis);
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
        self.r.decl.func.axes[axis] = AxisData {
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
        let inst = self.r.decl.func.insts.push(InstData {
            op: op.clone(),
            engine: engine_class(engine),
            dst: dst.clone(),
            srcs: srcs.clone(),
            mask: Vec::new(),
        });
        let stmt = self.r.decl.func.add_inst_stmt(vec![inst]);
        self.r.decl.func.stmts[stmt].preds = guards.clone();
        self.r.decl.func.stage_tags[stmt] = stage;
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
}
