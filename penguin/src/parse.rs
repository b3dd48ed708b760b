//! The parser of Penguin IR's text form (the grammar is documented in [`crate::write`]).
//!
//! [`parse_function`] reads the text [`crate::write::write_function`] writes, and text written by
//! hand in tests: a recursive-descent parser over the tokens of [`crate::lex`] (the lexer it
//! shares with the backend's BIR reader).
//!
//! Entity numbering is canonical: tensors in declaration order, axes in the order their `loop`
//! headers appear, statements in pre-order (a loop statement before the statements of its body),
//! instructions in order of appearance. A parsed function has no source spans.
//!
//! Names are resolved for the whole function, not by scope: an induction variable may be mentioned
//! anywhere once some `loop` declares it (before or after the mention), so that a variable used
//! outside its loop parses and the verifier reports it. Tensors must be declared before the first
//! statement. Duplicate tensor or induction-variable names are parse errors.
//!
//! An instruction's first source must start on the line of its operation: that is what tells a
//! `memset` (no source) from the instruction on the next line. Further sources follow commas.
//!
//! Invariants: the parser never panics, whatever the input; every error names a line and column
//! (1-based, columns in characters) and says what was expected. Integers out of range are errors,
//! and affine arithmetic is checked, so huge coefficients are errors, not overflows.

use crate::affine::{AffineExpr, CmpOp, Predicate};
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::MAX_CONST_VALUES;
use crate::ir::{
    Access, AxisAttrs, AxisData, BlockDim, DType, EngineClass, Function, InstData, LoopKind,
    MaskBound, Memory, Operand, PatAxis, Pattern, StmtAnnot, StmtKind, TensorData, TensorKind,
    TileDim,
};
pub use crate::lex::ParseError;
use crate::lex::{lex, Tok, Token, TokenCursor, SYMBOLS};
use crate::op_text::OpReader;
use std::collections::HashMap;

/// Parses the text form of one function.
pub fn parse_function(text: &str) -> Result<Function, ParseError> {
    parse_function_located(text).map(|(func, _)| func)
}

/// [`parse_function`], with where each instruction starts: the 1-based line and column of its
/// destination, indexed by the instruction's number (so that a driver can point a diagnostic at
/// it; the function itself keeps no source spans).
pub fn parse_function_located(text: &str) -> Result<(Function, Vec<(usize, usize)>), ParseError> {
    let toks = lex(text, SYMBOLS)?;
    let mut p = Parser {
        r: Reading::new(toks),
        depth: 0,
        inst_at: Vec::new(),
    };
    p.prescan_loops(iv_of_loop)?;
    p.function()?;
    Ok((p.r.decl.func, p.inst_at))
}

/// The induction variable's name in a Penguin loop header at token `k`, `loop NAME in`.
fn iv_of_loop(toks: &[Token], k: usize) -> Option<usize> {
    let word = |at: usize, w: &str| matches!(toks.get(at), Some(t) if matches!(&t.tok, Tok::Ident(x) if x == w));
    let name = matches!(toks.get(k + 1), Some(t) if matches!(t.tok, Tok::Ident(_)));
    (word(k, "loop") && name && word(k + 2, "in")).then_some(k + 1)
}

/// The deepest loop nesting the parser accepts. It recurses once per level, and this keeps it far
/// from the end of a 2 MiB thread stack even in unoptimised builds; kernels nest a few levels.
const MAX_DEPTH: usize = 64;

// ---------------------------------------------------------------------------------------------
// Lexer

// ---------------------------------------------------------------------------------------------
// Parser

struct Parser {
    r: Reading,
    depth: usize,
    /// The line and column of each instruction's destination, in order of appearance.
    inst_at: Vec<(usize, usize)>,
}

type PResult<T> = Result<T, ParseError>;

/// What a reader has declared so far: the Function being read and its tensors and induction
/// variables by name.
#[derive(Default)]
pub struct Declared {
    pub func: Function,
    pub tensors: HashMap<String, Tensor>,
    pub axes: HashMap<String, Axis>,
}

/// What both IR readers keep while they read: the tokens, the position in them, and what has
/// been declared so far.
pub struct Reading {
    /// The tokens, ending with [`Tok::Eof`].
    pub toks: Vec<Token>,
    /// The next token's index; never past the `Eof`.
    pub pos: usize,
    pub decl: Declared,
}

impl Reading {
    /// Reading `toks` (as [`lex`] returns them) from the start, nothing declared.
    pub fn new(toks: Vec<Token>) -> Reading {
        Reading {
            toks,
            pos: 0,
            decl: Declared::default(),
        }
    }
}

/// Every operand reader is a token cursor over its [`Reading`].
impl<R: OperandReader> TokenCursor for R {
    type Error = ParseError;

    fn toks(&self) -> &[Token] {
        &self.reading().toks
    }

    fn pos(&self) -> usize {
        self.reading().pos
    }

    fn set_pos(&mut self, pos: usize) {
        self.reading_mut().pos = pos;
    }
}

/// The reading of declarations, affine expressions and operands, shared by the Penguin reader
/// and the BIR reader: a reader holds a [`Reading`] (and is a [`TokenCursor`] over it) and
/// resolves names to its tensors and induction variables.
pub trait OperandReader: Sized {
    /// What an operand is called in errors (`a tensor operand`).
    const OPERAND: &'static str;
    /// What a declared tensor is called in errors (`tensor`).
    const NOUN: &'static str;

    /// The reader's tokens, position and declarations.
    fn reading(&self) -> &Reading;
    /// [`OperandReader::reading`], to move on and declare.
    fn reading_mut(&mut self) -> &mut Reading;

    /// The Function being read and the reader's tensors and induction variables by name.
    fn declared(&mut self) -> &mut Declared {
        &mut self.reading_mut().decl
    }

    /// [`OperandReader::declared`], read-only.
    fn declared_ref(&self) -> &Declared {
        &self.reading().decl
    }

    /// The tensor declared as `name` (mentioned at `tok`).
    fn tensor_ref(&self, name: &str, tok: &Token) -> Result<Tensor, ParseError> {
        match self.declared_ref().tensors.get(name) {
            Some(&t) => Ok(t),
            None => self.err_at(tok, format!("undefined {} `{name}`", Self::NOUN)),
        }
    }

    /// The induction variable declared as `name` (mentioned at `tok`).
    fn axis_ref(&self, name: &str, tok: &Token) -> Result<Axis, ParseError> {
        match self.declared_ref().axes.get(name) {
            Some(&a) => Ok(a),
            None => self.err_at(tok, format!("undefined induction variable `{name}`")),
        }
    }

    /// Registers every induction variable, in order, so that names resolve wherever they are
    /// used: `iv_at(toks, k)` is the index of the name of the induction variable declared by a
    /// loop header at token `k`, if one starts there (the two texts spell headers differently).
    fn prescan_loops(
        &mut self,
        iv_at: fn(&[Token], usize) -> Option<usize>,
    ) -> Result<(), ParseError> {
        let mut first_seen = HashMap::new();
        for k in 0..self.reading().toks.len() {
            let Some(tok) =
                iv_at(&self.reading().toks, k).map(|at| self.reading().toks[at].clone())
            else {
                continue;
            };
            if let Tok::Ident(name) = &tok.tok {
                self.declare_iv(name, &tok, &mut first_seen)?;
            }
        }
        Ok(())
    }

    /// Declares `name` (at `tok`) as the induction variable of an affine loop whose bounds and
    /// body the loop's own reading fills in; `first_seen` holds where each earlier one was
    /// declared, for a duplicate's error.
    fn declare_iv(
        &mut self,
        name: &str,
        tok: &Token,
        first_seen: &mut HashMap<String, (usize, usize)>,
    ) -> Result<(), ParseError> {
        if let Some((l, c)) = first_seen.get(name) {
            return self.err_at(
                tok,
                format!("duplicate induction variable `{name}` (first declared at line {l}:{c})"),
            );
        }
        first_seen.insert(name.to_string(), (tok.line, tok.col));
        let d = self.declared();
        let axis = d.func.axes.push(AxisData {
            iv_name: name.to_string(),
            kind: LoopKind::Affine,
            lb: 0,
            ub: 0,
            attrs: AxisAttrs::default(),
            body: Vec::new(),
        });
        d.axes.insert(name.to_string(), axis);
        Ok(())
    }

    /// A tensor declaration spelled with `words` ([`OperandReader::declaration`]), added to the
    /// Function under its name unless the name is taken.
    fn declare_tensor(&mut self, words: &DeclWords) -> Result<(), ParseError> {
        let (name, name_tok, data) = self.declaration(words)?;
        let values = if data.kind == TensorKind::Const {
            Some(self.const_values()?)
        } else {
            None
        };
        let d = self.declared();
        if d.tensors.contains_key(&name) {
            return self.err_at(&name_tok, format!("duplicate {} `{name}`", words.noun));
        }
        let t = d.func.tensors.push(data);
        d.tensors.insert(name, t);
        if let Some(values) = values {
            d.func.consts.insert(t, values);
        }
        Ok(())
    }

    /// `= [RUN, ...]`, the values of a constant tensor, row-major; a run is `VALUE` or
    /// `VALUE*COUNT` (that many copies).
    fn const_values(&mut self) -> Result<Vec<f32>, ParseError> {
        self.expect_sym("=")?;
        self.expect_sym("[")?;
        let runs = self.list("]", |p| {
            let v = OpReader::float(p)?;
            let n = if p.eat_sym("*") {
                p.u64_lit("a repeat count")?
            } else {
                1
            };
            Ok((v, n))
        })?;
        let mut out = Vec::new();
        for (v, n) in runs {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if out.len().saturating_add(n) > MAX_CONST_VALUES {
                let tok = self.peek().clone();
                return self.err_at(
                    &tok,
                    format!("a constant of more than {MAX_CONST_VALUES} values"),
                );
            }
            out.extend(std::iter::repeat_n(v, n));
        }
        Ok(out)
    }

    /// `KEYWORD NAME(PARAMS) -> (OUTPUTS) {` and the tensor declarations spelled with `words`
    /// that follow it: names the Function, resolves its parameters and outputs, and returns
    /// the `{` token that opens the body.
    fn kernel_header(&mut self, keyword: &str, words: &DeclWords) -> Result<Token, ParseError> {
        self.expect_word(keyword)?;
        let (name, _) = self.ident("a kernel name")?;
        self.declared().func.name = name;
        self.expect_sym("(")?;
        let params = self.list(")", |p| p.ident("a parameter name"))?;
        self.expect_sym("->")?;
        self.expect_sym("(")?;
        let outputs = self.list(")", |p| p.ident("an output name"))?;
        let open = self.expect_sym("{")?;
        while self.is_word(words.keyword) {
            self.declare_tensor(words)?;
        }
        for (name, tok) in params {
            let t = self.tensor_ref(&name, &tok)?;
            self.declared().func.params.push(t);
        }
        for (name, tok) in outputs {
            let t = self.tensor_ref(&name, &tok)?;
            self.declared().func.outputs.push(t);
        }
        Ok(open)
    }

    /// A guard's comparison, `EXPR (>= | < | ==) INT`.
    fn predicate(&mut self) -> Result<Predicate, ParseError> {
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

    /// `['-'] TERM (('+' | '-') TERM)*` with `TERM = INT ['*' IV] | IV`.
    fn affine(&mut self) -> Result<AffineExpr, ParseError> {
        let start = self.peek().clone();
        let mut terms: Vec<(Axis, i128)> = Vec::new();
        let mut constant: i128 = 0;
        let mut neg = self.eat_sym("-");
        loop {
            let sign: i128 = if neg { -1 } else { 1 };
            match self.peek().tok.clone() {
                Tok::Int(_) => {
                    let (v, _) = self.uint("an integer")?;
                    let v = i128::try_from(v).unwrap_or(i128::MAX).saturating_mul(sign);
                    if self.eat_sym("*") {
                        let (iv, tok) = self.ident("an induction variable after `*`")?;
                        let axis = self.axis_ref(&iv, &tok)?;
                        match terms.iter_mut().find(|(a, _)| *a == axis) {
                            Some((_, c)) => *c = c.saturating_add(v),
                            None => terms.push((axis, v)),
                        }
                    } else {
                        constant = constant.saturating_add(v);
                    }
                }
                Tok::Ident(iv) => {
                    let tok = self.bump();
                    let axis = self.axis_ref(&iv, &tok)?;
                    match terms.iter_mut().find(|(a, _)| *a == axis) {
                        Some((_, c)) => *c = c.saturating_add(sign),
                        None => terms.push((axis, sign)),
                    }
                }
                _ => {
                    return self
                        .expected("an affine expression (an integer or an induction variable)")
                }
            }
            if self.eat_sym("+") {
                neg = false;
            } else if self.eat_sym("-") {
                neg = true;
            } else {
                break;
            }
        }
        let fits = |v: i128| i64::try_from(v).is_ok();
        if !fits(constant) || terms.iter().any(|&(_, c)| !fits(c)) {
            return self.err_at(
                &start,
                "affine expression has a coefficient out of the 64-bit range",
            );
        }
        Ok(AffineExpr::from_terms(
            terms.into_iter().map(|(a, c)| (a, c as i64)),
            constant as i64,
        ))
    }

    /// `NAME[{SLOT, ...}][START +: SIZE, ...]`
    fn operand(&mut self) -> Result<Operand, ParseError> {
        let (name, tok) = self.ident(Self::OPERAND)?;
        let tensor = self.tensor_ref(&name, &tok)?;
        let mut slots = Vec::new();
        if self.eat_sym("{") {
            slots = self.list("}", |p| p.affine())?;
        }
        self.expect_sym("[")?;
        if self.eat_sym("]") {
            return Ok(Operand {
                tensor,
                access: Access::boxed(Vec::new(), Vec::new(), slots),
            });
        }
        let first = self.affine()?;
        if !self.eat_sym("+:") {
            return self.pattern_rest(tensor, first, slots);
        }
        let mut start = vec![first];
        let mut size = vec![self.u64_lit("a size")?];
        while !self.eat_sym("]") {
            self.expect_sym(",")?;
            start.push(self.affine()?);
            self.expect_sym("+:")?;
            size.push(self.u64_lit("a size")?);
        }
        Ok(Operand {
            tensor,
            access: Access::boxed(start, size, slots),
        })
    }

    /// The rest of a general access pattern operand after its first start:
    /// `, START ... : (COUNT: STEP, ...), ...]`. The size is the pattern's bounding box.
    fn pattern_rest(
        &mut self,
        tensor: Tensor,
        first: AffineExpr,
        slots: Vec<AffineExpr>,
    ) -> Result<Operand, ParseError> {
        let mut start = vec![first];
        while self.eat_sym(",") {
            start.push(self.affine()?);
        }
        let at = self.peek().clone();
        self.expect_sym(":")?;
        let axes = self.list("]", |p| {
            p.expect_sym("(")?;
            let count = p.u64_lit("a count")?;
            p.expect_sym(":")?;
            let mut step = vec![p.i64_lit("a step")?];
            while !p.eat_sym(")") {
                p.expect_sym(",")?;
                step.push(p.i64_lit("a step")?);
            }
            Ok(PatAxis { count, step })
        })?;
        let pattern = Pattern { axes };
        let Some(size) = pattern.bounding_box(start.len()) else {
            return self.err_at(
                &at,
                "an access pattern needs a positive count, one non-negative step per tensor dimension on every axis, and a bounding box that fits in 64 bits",
            );
        };
        Ok(Operand {
            tensor,
            access: Access {
                start,
                size,
                slots,
                pattern: Some(pattern),
            },
        })
    }

    /// `KEYWORD NAME: MEMORY DTYPE[SHAPE] KIND [BLOCK[IV: COUNT, ...]]`, a tensor declaration
    /// with the words of `words`: the name, its token (for a duplicate's error) and the data.
    fn declaration(
        &mut self,
        words: &DeclWords,
    ) -> Result<(String, Token, TensorData), ParseError> {
        self.expect_word(words.keyword)?;
        let (name, name_tok) = self.ident(&format!("a {} name", words.noun))?;
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
        let what = format!(
            "a {} kind (`input`, `output`, `local` or `const`)",
            words.noun
        );
        let (k, tok) = self.ident(&what)?;
        let kind = match k.as_str() {
            "input" => TensorKind::Input,
            "output" => TensorKind::Output,
            "local" => TensorKind::Local,
            "const" => TensorKind::Const,
            _ => return self.err_at(&tok, format!("expected {what}, found `{k}`")),
        };
        let mut block = Vec::new();
        if self.is_word(words.block) {
            self.bump();
            self.expect_sym("[")?;
            block = self.list("]", |p| {
                let (iv, tok) = p.ident("an induction variable")?;
                let axis = p.axis_ref(&iv, &tok)?;
                p.expect_sym(":")?;
                let count = p.u32_lit(words.count)?;
                Ok(BlockDim { axis, count })
            })?;
        }
        let data = TensorData {
            name: name.clone(),
            memory,
            dtype,
            shape,
            kind,
            block,
        };
        Ok((name, name_tok, data))
    }
}

/// The words of a tensor declaration, which the two IR texts spell differently.
pub struct DeclWords {
    /// The word that opens it (`tensor`, `buffer`).
    pub keyword: &'static str,
    /// What it declares, in errors.
    pub noun: &'static str,
    /// The word of its block dimensions (`block`, `ring`).
    pub block: &'static str,
    /// What a block dimension's count is, in errors.
    pub count: &'static str,
}

/// Penguin's spelling: `tensor NAME: ... block[IV: COUNT]`.
const TENSOR_DECL: DeclWords = DeclWords {
    keyword: "tensor",
    noun: "tensor",
    block: "block",
    count: "a block count",
};

impl OperandReader for Parser {
    const OPERAND: &'static str = "a tensor operand";
    const NOUN: &'static str = "tensor";

    fn reading(&self) -> &Reading {
        &self.r
    }

    fn reading_mut(&mut self) -> &mut Reading {
        &mut self.r
    }
}

impl Parser {
    // The token cursor (`peek`, `bump`, `expect_sym`, literals, lists) is [`TokenCursor`]'s.

    fn function(&mut self) -> PResult<()> {
        let open = self.kernel_header("kernel", &TENSOR_DECL)?;
        let body = self.stmts(&open, "kernel body")?;
        self.r.decl.func.body = body;
        if !matches!(self.peek().tok, Tok::Eof) {
            return self.expected("end of input after the kernel");
        }
        Ok(())
    }

    /// Statements up to the `}` closing the block opened by `open`.
    fn stmts(&mut self, open: &Token, what: &str) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            if self.eat_sym("}") {
                return Ok(out);
            }
            if matches!(self.peek().tok, Tok::Eof) {
                return self.expected(&format!(
                    "`}}` to close the {what} opened at line {}:{}",
                    open.line, open.col
                ));
            }
            if self.is_word("stmt") {
                out.push(self.inst_stmt()?);
            } else if self.is_word("loop") {
                out.push(self.loop_stmt()?);
            } else if self.is_word("tensor") {
                return self.expected(
                    "`stmt`, `loop` or `}` (tensors are declared before the first statement)",
                );
            } else {
                return self.expected("`stmt`, `loop` or `}`");
            }
        }
    }

    fn inst_stmt(&mut self) -> PResult<Stmt> {
        self.expect_word("stmt")?;
        let stmt = self.r.decl.func.add_inst_stmt(Vec::new());
        let mut seen = Vec::new();
        while self.stmt_attr(stmt, &mut seen)? {}
        let open = self.open_body(stmt, "`stage_id=N`, `execution_order=N`, `stage=N`")?;
        let mut insts = Vec::new();
        loop {
            if self.eat_sym("}") {
                break;
            }
            if matches!(self.peek().tok, Tok::Eof) {
                return self.expected(&format!(
                    "`}}` to close the statement opened at line {}:{}",
                    open.line, open.col
                ));
            }
            insts.push(self.inst()?);
        }
        self.r.decl.func.stmts[stmt].kind = StmtKind::Insts(insts);
        Ok(stmt)
    }

    fn loop_stmt(&mut self) -> PResult<Stmt> {
        let loop_tok = self.expect_word("loop")?;
        if self.depth >= MAX_DEPTH {
            return self.err_at(&loop_tok, format!("loops nested deeper than {MAX_DEPTH}"));
        }
        let (iv, iv_tok) = self.ident("an induction variable")?;
        let axis = self.axis_ref(&iv, &iv_tok)?;
        self.expect_word("in")?;
        let lb = self.i64_lit("a lower bound")?;
        self.expect_sym("..")?;
        let ub = self.i64_lit("an upper bound")?;
        let (k, tok) = self.ident("a loop kind (`affine`, `sequential` or `range`)")?;
        let kind = match k.as_str() {
            "affine" => LoopKind::Affine,
            "sequential" => LoopKind::Sequential,
            "range" => LoopKind::Range,
            _ => {
                return self.err_at(
                    &tok,
                    format!(
                        "expected a loop kind (`affine`, `sequential` or `range`), found `{k}`"
                    ),
                )
            }
        };
        let stmt = self.r.decl.func.add_loop_stmt(axis);
        let mut attrs = AxisAttrs::default();
        let mut seen: Vec<String> = Vec::new();
        while let Tok::Ident(word) = self.peek().tok.clone() {
            let tok = self.peek().clone();
            let is_loop_attr = matches!(
                word.as_str(),
                "num_stages"
                    | "multi_buffer"
                    | "disable_auto_buffer"
                    | "disable_execution_order_check"
                    | "pipelined"
            );
            if !is_loop_attr {
                if self.stmt_attr(stmt, &mut seen)? {
                    continue;
                }
                break;
            }
            if seen.contains(&word) {
                return self.err_at(&tok, format!("duplicate attribute `{word}`"));
            }
            seen.push(word.clone());
            self.bump();
            match word.as_str() {
                "num_stages" => {
                    self.expect_sym("=")?;
                    if matches!(&self.peek().tok, Tok::Ident(w) if w == "auto") {
                        self.bump();
                        attrs.auto_stages = true;
                    } else {
                        attrs.num_stages = Some(self.u32_lit("a stage count")?);
                    }
                }
                "multi_buffer" => {
                    self.expect_sym("=")?;
                    attrs.multi_buffer = Some(self.u32_lit("a buffer count")?);
                }
                "disable_auto_buffer" => attrs.disable_auto_buffer = true,
                "disable_execution_order_check" => attrs.disable_execution_order_check = true,
                _ => attrs.pipelined = Some(self.pipelined_args()?),
            }
        }
        let open = self.open_body(
            stmt,
            "a loop attribute (`num_stages=N`, `num_stages=auto`, `multi_buffer=N`, `disable_auto_buffer`, \
             `disable_execution_order_check`, `pipelined(stages=N, trip=T[, peeled])`), `stage_id=N`, \
             `execution_order=N`, `stage=N`",
        )?;
        self.depth += 1;
        let body = self.stmts(&open, "loop body")?;
        self.depth -= 1;
        self.r.decl.func.axes[axis] = AxisData {
            iv_name: iv,
            kind,
            lb,
            ub,
            attrs,
            body,
        };
        Ok(stmt)
    }

    /// One statement attribute (`stage_id=N`, `execution_order=N`, `stage=N`), if the next word is
    /// one. `seen` catches duplicates.
    fn stmt_attr(&mut self, stmt: Stmt, seen: &mut Vec<String>) -> PResult<bool> {
        let Tok::Ident(word) = self.peek().tok.clone() else {
            return Ok(false);
        };
        if !matches!(word.as_str(), "stage_id" | "execution_order" | "stage") {
            return Ok(false);
        }
        if seen.contains(&word) {
            let tok = self.peek().clone();
            return self.err_at(&tok, format!("duplicate attribute `{word}`"));
        }
        seen.push(word.clone());
        self.bump();
        self.expect_sym("=")?;
        let v = self.u32_lit(&format!("a value for `{word}`"))?;
        let annot: &mut StmtAnnot = &mut self.r.decl.func.annots[stmt];
        match word.as_str() {
            "stage_id" => annot.stage_id = Some(v),
            "execution_order" => annot.execution_order = Some(v),
            _ => self.r.decl.func.stage_tags[stmt] = Some(v),
        }
        Ok(true)
    }

    /// The predicates and the `{` that end a statement header; `attrs` lists the attributes that
    /// the header could still take, for the error message.
    fn open_body(&mut self, stmt: Stmt, attrs: &str) -> PResult<Token> {
        if self.is_word("if") {
            self.preds(stmt)?;
            if !self.is_sym("{") {
                return self.expected("`&&` or `{`");
            }
        }
        if !self.is_sym("{") {
            return self.expected(&format!("{attrs}, `if` or `{{`"));
        }
        Ok(self.bump())
    }

    /// `if PRED && PRED ...`
    fn preds(&mut self, stmt: Stmt) -> PResult<()> {
        if !self.is_word("if") {
            return Ok(());
        }
        self.bump();
        loop {
            let pred = self.predicate()?;
            self.r.decl.func.stmts[stmt].preds.push(pred);
            if !self.eat_sym("&&") {
                return Ok(());
            }
        }
    }

    /// `DST = OP.ENGINE[(PARAMS)] [SRC, SRC ...]`
    fn inst(&mut self) -> PResult<Inst> {
        let nested = matches!(&self.peek().tok,
            Tok::Ident(w) if (w == "stmt" || w == "loop") && !self.r.decl.tensors.contains_key(w));
        if nested {
            return self.expected(
                "an instruction (statements do not nest inside `stmt { }`; use a `loop`)",
            );
        }
        let at = (self.peek().line, self.peek().col);
        let dst = self.operand()?;
        self.expect_sym("=")?;
        let (word, op_tok) = self.ident("an operation `OP.ENGINE`")?;
        let Some((op_name, engine_name)) = word.rsplit_once('.') else {
            return self.err_at(
                &op_tok,
                format!("expected an operation with its engine (`OP.ENGINE`, e.g. `load.dma`), found `{word}`"),
            );
        };
        let engine = match engine_name {
            "dma" => EngineClass::Dma,
            "pe" => EngineClass::Tensor,
            "dve" => EngineClass::Vector,
            "act" => EngineClass::Scalar,
            "pool" => EngineClass::GpSimd,
            "any" => EngineClass::Any,
            _ => {
                return self.err_at(
                    &op_tok,
                    format!(
                        "unknown engine `{engine_name}` (expected dma, pe, dve, act, pool or any)"
                    ),
                )
            }
        };
        let op = self.op(op_name, &op_tok)?;
        let mut srcs = Vec::new();
        let same_line = |p: &Self| p.peek().line == op_tok.line;
        if matches!(self.peek().tok, Tok::Ident(_)) && same_line(self) && !self.at_mask() {
            srcs.push(self.operand()?);
            while self.eat_sym(",") {
                srcs.push(self.operand()?);
            }
        }
        let mut mask = Vec::new();
        if same_line(self) && self.at_mask() {
            self.bump();
            self.expect_sym("(")?;
            mask = self.list(")", |p| p.mask_bound())?;
        }
        self.inst_at.push(at);
        Ok(self.r.decl.func.insts.push(InstData {
            op,
            engine,
            dst,
            srcs,
            mask,
        }))
    }

    /// Whether the next tokens are `mask (`: a tensor named `mask` is followed by `[` or `{`.
    fn at_mask(&mut self) -> bool {
        if !self.is_word("mask") {
            return false;
        }
        let pos = self.pos();
        self.bump();
        let open = self.is_sym("(");
        self.set_pos(pos);
        open
    }

    /// One bound of a mask: `p >= EXPR`, `p < EXPR`, `f >= EXPR` or `f < EXPR`.
    fn mask_bound(&mut self) -> PResult<MaskBound> {
        let (word, tok) = self.ident("a mask index (`p` or `f`)")?;
        let dim = match word.as_str() {
            "p" => TileDim::Partition,
            "f" => TileDim::Free,
            _ => {
                return self.err_at(
                    &tok,
                    format!("expected `p` or `f` in a mask, found `{word}`"),
                )
            }
        };
        let lower = if self.eat_sym(">=") {
            true
        } else if self.eat_sym("<") {
            false
        } else {
            return self.expected("`>=` or `<` in a mask bound");
        };
        let bound = self.affine()?;
        Ok(MaskBound { dim, lower, bound })
    }
}
