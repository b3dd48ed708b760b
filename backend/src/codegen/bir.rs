//! BIR: the kernel as per-engine instructions on logical buffers, lowered from Penguin IR.
//!
//! [`lower_function`] walks the Penguin loop tree (pipelined or not) and keeps its shape: every
//! Penguin loop becomes one BIR loop, so an annotated loop that the pipeliner extended stays **one**
//! hardware loop. A statement's predicates, and those of every enclosing loop statement, become the
//! guards of each of its instructions: nothing is peeled. A masked instruction becomes one
//! instruction per version of constant extent, each under its own guards ([`crate::codegen::masks`]). Each instruction gets its engine here;
//! an operation that several engines can run (`copy`, `.any`) gets the one
//! [`crate::cost::engine_choice`] chose by the work of the loop body it runs in.
//!
//! Instructions and loops are entities ([`BirInst`], [`BirLoop`]: `u32` newtypes made by
//! `cranelift_entity::entity_impl!`, written `inst3` and `loop1`) that index the `PrimaryMap`s
//! [`Bir::insts`] and [`Bir::loops`]; a pass keeps a per-instruction or per-loop side table in a
//! `SecondaryMap` over them. A `usize` never stands for either: where one appears beside them it
//! is a position (in a loop body, in a dependence graph, in emission order). The ids are
//! allocated once, by lowering (or the text reader); later passes reorder bodies but never add,
//! remove or renumber instructions and loops.
//!
//! Invariants: every instruction and every loop is in exactly one body (the kernel's or a loop's),
//! and the loops form a tree under the kernel's body; `insts[i].loops` lists the enclosing loops
//! outermost first, and each loop's `depth` is its index in that list; operands still name
//! Penguin tensors and accesses (logical buffers, slots not yet rotated); a `Copy` touching PSUM
//! is never on `pool`. The verifier ([`crate::codegen::bir_verify`]) checks them.

use crate::codegen::masks;
pub use crate::cost::dma::{dma_tile, tile_bytes, transfer_bytes};
use crate::cost::engine_choice::{compute_engine_choice, EngineChoiceData};
pub use crate::cost::estimate::estimate;
use crate::error::BackendError;
use cranelift_entity::{entity_impl, PrimaryMap};
use penguin::affine::Predicate;
use penguin::ir::{EngineClass, InstData, Memory, Op, Operand, StmtKind};
use penguin::{Axis, Function, SrcSpan, Stmt};
use runtime_sim::isa::Engine;
use std::fmt::{self, Write as _};

/// A BIR instruction: one operation on one engine.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BirInst(u32);
entity_impl!(BirInst, "inst");

/// A BIR loop: one hardware loop, on one iteration register.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BirLoop(u32);
entity_impl!(BirLoop, "loop");

/// A hardware loop of BIR.
#[derive(Clone, Debug)]
pub struct BLoopData {
    pub axis: Axis,
    pub iv: String,
    /// The Penguin induction variable is `lb + r` for the loop's register `r` in `0..trip`.
    pub lb: i64,
    pub trip: u64,
    pub depth: usize,
    pub body: Vec<BNode>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BNode {
    Inst(BirInst),
    Loop(BirLoop),
}

/// One instruction on one engine, on logical buffers.
#[derive(Clone, Debug)]
pub struct BInstData {
    pub engine: Engine,
    pub op: Op,
    pub dst: Operand,
    pub srcs: Vec<Operand>,
    /// A conjunction (from the statement and its enclosing loop statements).
    pub guards: Vec<Predicate>,
    /// The enclosing loops, outermost first.
    pub loops: Vec<BirLoop>,
    pub stmt: Stmt,
    pub stage: Option<u32>,
    pub span: Option<SrcSpan>,
}

/// A lowered kernel.
#[derive(Clone, Debug, Default)]
pub struct Bir {
    pub loops: PrimaryMap<BirLoop, BLoopData>,
    pub insts: PrimaryMap<BirInst, BInstData>,
    /// The kernel's top level.
    pub body: Vec<BNode>,
}

impl Bir {
    /// The total number of times instruction `i` is reached (its loops' trip product).
    pub fn instances(&self, i: BirInst) -> u64 {
        self.insts[i]
            .loops
            .iter()
            .map(|&l| self.loops[l].trip)
            .product()
    }
}

/// Lowers `func` to BIR.
pub fn lower_function(func: &Function) -> Result<Bir, BackendError> {
    let mut cx = Lower {
        func,
        bir: Bir::default(),
        choice: compute_engine_choice(func),
    };
    let body = cx.block(&func.body, &mut Vec::new(), &mut Vec::new())?;
    cx.bir.body = body;
    Ok(cx.bir)
}

struct Lower<'f> {
    func: &'f Function,
    bir: Bir,
    /// The engine of every `.any` instruction.
    choice: EngineChoiceData,
}

impl Lower<'_> {
    fn block(
        &mut self,
        stmts: &[Stmt],
        loops: &mut Vec<BirLoop>,
        guards: &mut Vec<Predicate>,
    ) -> Result<Vec<BNode>, BackendError> {
        let mut out = Vec::new();
        for &s in stmts {
            let sd = &self.func.stmts[s];
            let n_guards = guards.len();
            guards.extend(sd.preds.iter().cloned());
            match &sd.kind {
                StmtKind::Insts(insts) => {
                    for &i in insts {
                        let span = self.func.inst_spans.get(i).copied().flatten();
                        let versions =
                            masks::compute_mask_versions(self.func, &self.func.insts[i], span)?;
                        for v in versions {
                            let n = guards.len();
                            guards.extend(v.guards);
                            let idx = self.inst(s, i, &v.inst, loops, guards)?;
                            guards.truncate(n);
                            out.push(BNode::Inst(idx));
                        }
                    }
                }
                StmtKind::Loop(axis) => {
                    let ad = &self.func.axes[*axis];
                    let names_slots = (self.func.tensors.values())
                        .any(|t| t.block.iter().any(|b| b.axis == *axis));
                    if ad.body.is_empty() && !names_slots {
                        // An empty loop runs nothing (a fully unrolled loop stays behind its
                        // copies in Penguin IR, `crate::transform::unroll`, `crate::transform::flatten`); one that a
                        // ring's slots are named along stays (a peeled loop whose steady state
                        // is empty).
                        guards.truncate(n_guards);
                        continue;
                    }
                    let id = self.bir.loops.push(BLoopData {
                        axis: *axis,
                        iv: ad.iv_name.clone(),
                        lb: ad.lb,
                        trip: ad.trip_count() as u64,
                        depth: loops.len(),
                        body: Vec::new(),
                    });
                    if loops.len() >= runtime_sim::isa::MAX_REGS {
                        return Err(BackendError::TooDeep {
                            limit: runtime_sim::isa::MAX_REGS,
                            at: self.func.axis_spans.get(*axis).copied().flatten(),
                        });
                    }
                    loops.push(id);
                    let body = self.block(&ad.body, loops, guards)?;
                    loops.pop();
                    self.bir.loops[id].body = body;
                    out.push(BNode::Loop(id));
                }
            }
            guards.truncate(n_guards);
        }
        Ok(out)
    }

    /// Lowers `d`, instruction `i` of statement `s` or one version of it when it is masked
    /// ([`masks::compute_mask_versions`]).
    fn inst(
        &mut self,
        s: Stmt,
        i: penguin::Inst,
        d: &InstData,
        loops: &[BirLoop],
        guards: &[Predicate],
    ) -> Result<BirInst, BackendError> {
        let span = self.func.inst_spans.get(i).copied().flatten();
        let touches_psum = std::iter::once(&d.dst)
            .chain(d.srcs.iter())
            .any(|o| self.func.tensors[o.tensor].memory == Memory::Psum);
        let engine = match d.engine {
            EngineClass::Dma => Engine::Sp,
            EngineClass::Tensor => Engine::Pe,
            EngineClass::Vector => Engine::Dve,
            EngineClass::Scalar => Engine::Act,
            EngineClass::GpSimd if touches_psum => {
                return Err(BackendError::GpSimdPsum { at: span })
            }
            EngineClass::GpSimd => Engine::Pool,
            // Chosen for every `.any` instruction of the function, never `pool` when it
            // touches PSUM (`compute_engine_choice`); `dve`, which runs every copy, otherwise.
            EngineClass::Any => self.choice[i].unwrap_or(Engine::Dve),
        };
        let idx = self.bir.insts.push(BInstData {
            engine,
            op: d.op.clone(),
            dst: d.dst.clone(),
            srcs: d.srcs.clone(),
            guards: guards.to_vec(),
            loops: loops.to_vec(),
            stmt: s,
            stage: self.func.stage_tags.get(s).copied().flatten(),
            span,
        });
        Ok(idx)
    }
}

/// The deepest loop nesting the text form writes and reads (a loop that contains itself, which
/// the verifier rejects, would otherwise print forever).
pub const MAX_TEXT_DEPTH: usize = 64;

/// The text form of BIR (`nkc compile --emit bir`), which [`crate::codegen::bir_parse::parse_bir`] reads
/// back:
///
/// ```text
/// bir ring(x, w) -> (y) {
///   buffer x: hbm f32[256, 64] input
///   buffer p: psum f32[64, 64] local ring[i: 2]
///   loop r0 = 0..9 (i = r0 + 0) pipelined(stages=2, trip=8) {
///     @(i < 8) pe.matmul(accumulate=false) p{i}[0 +: 64, 0 +: 64], tx[0 +: 32, 0 +: 64], w[0 +: 32, 0 +: 64]  stage 0
///   }
/// }
/// ```
///
/// - `bir NAME(PARAMS) -> (OUTPUTS)`: the kernel's parameters and outputs, in order;
/// - `buffer NAME: MEMORY DTYPE[SHAPE] KIND [ring[IV: COUNT, ...]]`, one per tensor, in entity
///   order (`KIND` is `input`, `output` or `local`; the ring is the tensor's block dimensions);
/// - `loop rD = 0..TRIP (IV = rD + LB) [pipelined(stages=N, trip=T[, peeled])] { ... }`: a hardware loop on
///   register `rD` (`D` its depth) whose induction variable is `IV`; `pipelined` marks a loop the
///   annotated pipeliner extended;
/// - an instruction `[@(GUARD && ...)] ENGINE.OP[(PARAMS)] DST, SRC, ...  [stage N]`, with the op
///   parameters of Penguin's text form (`matmul(accumulate=B)`, `tensor_tensor(op=ALU)`,
///   `tensor_scalar(op=ALU, imm=F, reverse=B)`, `activation(func=F, scale=F|tile, bias=B)`,
///   `reduce(op=R)`, `memset(value=F)`; floats bit-exact) and Penguin's operands
///   (`TENSOR{SLOT, ...}[START +: SIZE, ...]`).
pub fn write_bir(func: &Function, bir: &Bir) -> String {
    let names = |ts: &[penguin::Tensor]| -> String {
        ts.iter()
            .map(|&t| penguin::write::tensor_name(func, t))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "bir {}({}) -> ({}) {{\n",
        func.name,
        names(&func.params),
        names(&func.outputs)
    );
    for (id, t) in func.tensors.iter() {
        let block: Vec<String> = t
            .block
            .iter()
            .map(|b| format!("{}: {}", func.axis_name(b.axis), b.count))
            .collect();
        let _ = write!(
            out,
            "  buffer {}: {} {}{:?} {}{}",
            t.name,
            t.memory.name(),
            t.dtype.name(),
            t.shape,
            t.kind.name(),
            if block.is_empty() {
                String::new()
            } else {
                format!(" ring[{}]", block.join(", "))
            }
        );
        if let Some(values) = func.consts.get(&id) {
            let _ = penguin::write::write_const_values(&mut out, values);
        }
        out.push('\n');
    }
    write_block(&mut out, func, bir, &bir.body, 1);
    out.push_str("}\n");
    out
}

fn write_block(out: &mut String, func: &Function, bir: &Bir, nodes: &[BNode], depth: usize) {
    let pad = "  ".repeat(depth);
    for &n in nodes {
        match n {
            BNode::Loop(l) => {
                let Some(lp) = bir.loops.get(l) else {
                    let _ = writeln!(out, "{pad}# <undefined {l}>");
                    continue;
                };
                let _ = write!(
                    out,
                    "{pad}loop r{} = 0..{} ({} = r{} + {})",
                    lp.depth, lp.trip, lp.iv, lp.depth, lp.lb
                );
                if let Some(p) = func.axes.get(lp.axis).and_then(|a| a.attrs.pipelined) {
                    let _ = write!(out, " {p}");
                }
                out.push_str(" {\n");
                // A loop in its own body would recurse forever; the verifier reports it.
                if depth <= MAX_TEXT_DEPTH {
                    write_block(out, func, bir, &lp.body, depth + 1);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            BNode::Inst(i) => {
                let Some(bi) = bir.insts.get(i) else {
                    let _ = writeln!(out, "{pad}# <undefined {i}>");
                    continue;
                };
                let mut line = pad.clone();
                if !bi.guards.is_empty() {
                    line.push_str("@(");
                    for (k, p) in bi.guards.iter().enumerate() {
                        if k > 0 {
                            line.push_str(" && ");
                        }
                        let _ = penguin::write::write_predicate(&mut line, func, p);
                    }
                    line.push_str(") ");
                }
                let _ = write!(line, "{}.{}", bi.engine.name(), bi.op.name());
                let _ = penguin::write::write_op_params(&mut line, &bi.op);
                line.push(' ');
                let _ = penguin::write::write_operand(&mut line, func, &bi.dst);
                for s in &bi.srcs {
                    line.push_str(", ");
                    let _ = penguin::write::write_operand(&mut line, func, s);
                }
                if let Some(st) = bi.stage {
                    let _ = write!(line, "  stage {st}");
                }
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
}

impl fmt::Display for BNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BNode::Inst(i) => write!(f, "{i}"),
            BNode::Loop(l) => write!(f, "{l}"),
        }
    }
}
