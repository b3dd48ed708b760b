//! The verifier: checks the invariants of [`crate::ir`] on a whole [`Function`].
//!
//! [`verify_function`] returns every violation it finds, not just the first, each as a
//! [`VerifierError`] naming the entity (with tensor and induction-variable names where they help).
//! It runs on functions built by any pass, so it never panics and never trusts a reference: an
//! undefined entity, a statement reached twice or a cyclic tree is reported, not followed.
//!
//! What it checks:
//! - **references and tree shape**: every referenced tensor, axis, statement and instruction exists;
//!   every statement appears exactly once in the tree; every instruction is in exactly one
//!   statement; every axis is the loop of exactly one statement; params are `input` HBM tensors and
//!   outputs `output` HBM tensors, each listed once, and every input (output) tensor is a param
//!   (an output); no instruction writes an input;
//! - **names**: tensor names and induction-variable names are identifiers
//!   (`[A-Za-z_][A-Za-z0-9_.]*`, so the text form can name them) and unique;
//! - **scoping**: access starts, slot expressions and predicates mention only induction variables
//!   of loops that enclose the statement (a loop statement's own predicates are outside its loop);
//!   block dimensions name existing axes;
//! - **tensors**: 2-D with non-zero dimensions; on chip, at most 128 partitions; PSUM tensors are
//!   f32 and one tile (one slot) takes at most 2 KiB per partition (one bank); block counts >= 1;
//! - **accesses**: one start and one size per dimension, one slot expression per block dimension,
//!   no empty size, and the selected range lies inside the tensor for every iteration that runs.
//!   The iterations are the box of the enclosing loops' bounds, tightened by every predicate (of
//!   the statement or of an enclosing loop statement) in a single induction variable, such as the
//!   pipeliner's `i >= s` and `i < ub + s`; predicates in several variables are not used, so the
//!   check is conservative for them. A statement whose box is empty never runs and is not checked;
//!   a dimension that a mask clips is in bounds when its start plus one of the mask's bounds on
//!   that index is (so `a[128*i +: 128]` under `p < 250 - 128*i` reads rows below 250);
//! - **access patterns** ([`crate::ir::Pattern`]): the size is the pattern's bounding box (so
//!   the bounds check above covers every element), a partition axis and 1 to 4 free axes; on
//!   chip the partition axis has step `(1, 0)` (never strided) and the free axes step along the
//!   free dimension only; a written pattern reaches no element twice; no mask on the instruction;
//! - **masks**: only on operations that take one ([`InstData::maskable`]), over a 2-D iteration
//!   space, with bounds that mention only induction variables of enclosing loops;
//! - **ops**: the source count ([`Op::num_srcs`]); the engine can run the op (load/store on DMA,
//!   matmul/transpose on the Tensor engine, activation on Scalar, tensor_tensor/tensor_scalar on
//!   Vector or GpSimd, reduce on Vector, memset on Vector or GpSimd, copy on any but DMA and
//!   Tensor); memories (load HBM→SBUF, store SBUF→HBM, matmul/transpose SBUF→PSUM, other compute
//!   ops read SBUF or PSUM, tensor_tensor/tensor_scalar/activation/reduce/copy/memset write SBUF
//!   or PSUM, the others SBUF, and GpSimd never touches PSUM); shapes, on the access sizes: load/store/copy/tensor_scalar keep the shape, matmul is
//!   `[K,M]ᵀ·[K,N] → [M,N]` with K, M <= 128 and N <= 512, transpose `[P,F] → [F,P]`, tensor_tensor
//!   sources are the destination's shape or `[P,1]`, reduce gives `[P,1]`, activation's scale and
//!   bias tiles are `[P,1]`;
//! - **loops**: `lb <= ub`; `num_stages >= 1`, `multi_buffer >= 1`; a pipelined loop has
//!   `stages >= 1`, `trip >= 0` and runs `trip + stages - 1` iterations, or, peeled, the
//!   `max(0, trip - stages + 1)` of its steady state.
//!
//! All arithmetic on user values is done in `i128`, so huge coefficients cannot overflow.

use crate::affine::{AffineExpr, CmpOp, Predicate};
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{
    EngineClass, Function, InstData, MaskBound, Memory, Op, Operand, Pattern, Scale, StmtKind,
    TensorKind, MAX_PATTERN_ENUMERATION,
};
use crate::write::{iv_name, tensor_name};
use cranelift_entity::SecondaryMap;
use std::collections::HashMap;
use std::fmt;

/// The entity a verifier error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnyEntity {
    Function,
    Tensor(Tensor),
    Axis(Axis),
    Stmt(Stmt),
    Inst(Inst),
}

/// One violated invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    pub entity: AnyEntity,
    /// The entity as the message names it, e.g. ``inst i3 (`tb = exp`, in loop i)``.
    pub location: String,
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for VerifierError {}

/// Checks every invariant of `func`; returns all violations found.
pub fn verify_function(func: &Function) -> Result<(), Vec<VerifierError>> {
    let mut v = Verifier {
        func,
        errors: Vec::new(),
        stmt_seen: SecondaryMap::new(),
        inst_checked: SecondaryMap::new(),
    };
    v.tensors();
    v.params();
    v.axes();
    v.ownership();
    v.tree();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// Whether `name` can be written in the text form.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A short description of an instruction, `dst = op`.
pub fn describe_inst(func: &Function, inst: Inst) -> String {
    let Some(data) = func.insts.get(inst) else {
        return "<undefined>".to_string();
    };
    let op = match &data.op {
        Op::Activation { func, .. } => func.name().to_string(),
        Op::TensorTensor { op } => op.name().to_string(),
        Op::TensorScalar { op, .. } => format!("{} scalar", op.name()),
        Op::Reduce { op } => format!("reduce {}", op.name()),
        Op::Matmul { accumulate: true } => "matmul accumulate".to_string(),
        other => other.name().to_string(),
    };
    format!("{} = {op}", tensor_name(func, data.dst.tensor))
}

/// The largest partition count of an on-chip tensor.
const MAX_PARTITIONS: u64 = 128;
/// The bytes per partition of one PSUM bank.
const PSUM_BANK_BYTES: u64 = 2048;
/// The bytes per partition of the whole PSUM (8 banks): the largest PSUM tensor, whose accesses
/// each stay within one bank.
const PSUM_PARTITION_BYTES: u64 = 8 * PSUM_BANK_BYTES;
/// The largest matmul contraction (K) and stationary (M) dimension.
const MATMUL_MAX_KM: u64 = 128;
/// The largest matmul moving (N) dimension.
const MATMUL_MAX_N: u64 = 512;

struct Verifier<'a> {
    func: &'a Function,
    errors: Vec<VerifierError>,
    stmt_seen: SecondaryMap<Stmt, bool>,
    inst_checked: SecondaryMap<Inst, bool>,
}

/// Where a statement sits: its enclosing loops (outermost first) and the guards that hold there.
struct Ctx {
    loops: Vec<Axis>,
    guards: Vec<Predicate>,
}

impl<'a> Verifier<'a> {
    fn error(&mut self, entity: AnyEntity, message: impl Into<String>) {
        let location = self.location(entity, None);
        self.errors.push(VerifierError {
            entity,
            location,
            message: message.into(),
        });
    }

    fn error_in(&mut self, entity: AnyEntity, loops: &[Axis], message: impl Into<String>) {
        let location = self.location(entity, Some(loops));
        self.errors.push(VerifierError {
            entity,
            location,
            message: message.into(),
        });
    }

    fn location(&self, entity: AnyEntity, loops: Option<&[Axis]>) -> String {
        let f = self.func;
        let place = match loops {
            None => String::new(),
            Some([]) => "at top level".to_string(),
            Some([.., inner]) => format!("in loop {}", iv_name(f, *inner)),
        };
        match entity {
            AnyEntity::Function => format!("kernel `{}`", f.name),
            AnyEntity::Tensor(t) => format!("tensor {t} (`{}`)", tensor_name(f, t)),
            AnyEntity::Axis(a) => format!("loop {a} (`{}`)", iv_name(f, a)),
            AnyEntity::Stmt(s) => {
                let what = match f.stmts.get(s).map(|d| &d.kind) {
                    Some(StmtKind::Loop(a)) => format!("loop {}", iv_name(f, *a)),
                    _ => String::new(),
                };
                match (what.is_empty(), place.is_empty()) {
                    (true, true) => format!("stmt {s}"),
                    (true, false) => format!("stmt {s} ({place})"),
                    (false, true) => format!("stmt {s} ({what})"),
                    (false, false) => format!("stmt {s} ({what}, {place})"),
                }
            }
            AnyEntity::Inst(i) => {
                let d = describe_inst(f, i);
                if place.is_empty() {
                    format!("inst {i} (`{d}`)")
                } else {
                    format!("inst {i} (`{d}`, {place})")
                }
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Tensors, params, axes

    fn tensors(&mut self) {
        let f = self.func;
        let mut names: HashMap<&str, Tensor> = HashMap::new();
        for (t, data) in f.tensors.iter() {
            let e = AnyEntity::Tensor(t);
            if !is_identifier(&data.name) {
                self.error(e, format!("name `{}` is not an identifier", data.name));
            }
            if let Some(first) = names.insert(&data.name, t) {
                self.error(e, format!("duplicate tensor name (also {first})"));
            }
            if data.shape.len() != 2 {
                self.error(
                    e,
                    format!(
                        "has {} dimensions; tensors are 2-D ([rows, columns] in HBM, [partitions, free] on chip)",
                        data.shape.len()
                    ),
                );
            }
            if let Some(d) = data.shape.iter().position(|&n| n == 0) {
                self.error(e, format!("dimension {d} is empty"));
            }
            if data.kind != TensorKind::Local && data.memory != Memory::Hbm {
                self.error(
                    e,
                    format!(
                        "is an {} tensor in {}; inputs and outputs live in HBM",
                        data.kind.name(),
                        mem_name(data.memory)
                    ),
                );
            }
            if data.kind == TensorKind::Const {
                match f.consts.get(&t) {
                    None => self.error(e, "is a constant tensor without values"),
                    Some(v) if v.len() as u64 != data.elems() => self.error(
                        e,
                        format!(
                            "is a constant of {} elements with {} values",
                            data.elems(),
                            v.len()
                        ),
                    ),
                    Some(_) => {}
                }
            }
            if data.memory != Memory::Hbm {
                if let Some(&p) = data.shape.first() {
                    if p > MAX_PARTITIONS {
                        self.error(
                            e,
                            format!(
                                "has {p} partitions; {} holds at most {MAX_PARTITIONS}",
                                mem_name(data.memory)
                            ),
                        );
                    }
                }
            }
            if data.memory == Memory::Psum {
                if data.dtype != crate::ir::DType::F32 {
                    self.error(
                        e,
                        format!("is a PSUM tensor of {}; PSUM holds f32", data.dtype.name()),
                    );
                }
                let free = data
                    .shape
                    .iter()
                    .skip(1)
                    .fold(1u128, |acc, &n| acc.saturating_mul(u128::from(n)));
                let bytes = free.saturating_mul(u128::from(data.dtype.size_bytes()));
                if bytes > u128::from(PSUM_PARTITION_BYTES) {
                    self.error(
                        e,
                        format!(
                            "a PSUM tensor takes {bytes} bytes per partition; the PSUM holds {PSUM_PARTITION_BYTES}"
                        ),
                    );
                }
            }
            for (k, b) in data.block.iter().enumerate() {
                if !f.axes.is_valid(b.axis) {
                    self.error(
                        e,
                        format!("block dimension {k} names undefined axis {}", b.axis),
                    );
                }
                if b.count == 0 {
                    self.error(e, format!("block dimension {k} has count 0"));
                }
            }
        }
    }

    fn params(&mut self) {
        let f = self.func;
        let fe = AnyEntity::Function;
        for (list, kind, what, missing) in [
            (
                &f.params,
                TensorKind::Input,
                "parameter",
                "is an input tensor but not a parameter of the kernel",
            ),
            (
                &f.outputs,
                TensorKind::Output,
                "output",
                "is an output tensor but not among the kernel's outputs",
            ),
        ] {
            let mut seen: Vec<Tensor> = Vec::new();
            for &t in list {
                let Some(data) = f.tensors.get(t) else {
                    self.error(fe, format!("{what} {t} is not a defined tensor"));
                    continue;
                };
                if seen.contains(&t) {
                    self.error(fe, format!("{what} `{}` is listed twice", data.name));
                }
                seen.push(t);
                if data.kind != kind || data.memory != Memory::Hbm {
                    self.error(
                        fe,
                        format!(
                            "{what} `{}` is a{} {} {} tensor, not an {} HBM tensor",
                            data.name,
                            if data.kind == TensorKind::Local {
                                ""
                            } else {
                                "n"
                            },
                            data.kind.name(),
                            mem_name(data.memory),
                            kind.name()
                        ),
                    );
                }
            }
            for (t, data) in f.tensors.iter() {
                if data.kind == kind && !list.contains(&t) {
                    self.error(AnyEntity::Tensor(t), missing);
                }
            }
        }
        for &t in f.consts.keys() {
            if f.tensors.get(t).is_none_or(|d| d.kind != TensorKind::Const) {
                self.error(
                    fe,
                    format!("values are given for {t}, which is not a const tensor"),
                );
            }
        }
        if !is_identifier(&f.name) {
            self.error(fe, "the kernel name is not an identifier");
        }
    }

    fn axes(&mut self) {
        let f = self.func;
        let mut names: HashMap<&str, Axis> = HashMap::new();
        for (a, data) in f.axes.iter() {
            let e = AnyEntity::Axis(a);
            if !is_identifier(&data.iv_name) {
                self.error(
                    e,
                    format!("induction variable `{}` is not an identifier", data.iv_name),
                );
            }
            if let Some(first) = names.insert(&data.iv_name, a) {
                self.error(
                    e,
                    format!("duplicate induction variable name (also {first})"),
                );
            }
            if data.lb > data.ub {
                self.error(
                    e,
                    format!("lower bound {} is above upper bound {}", data.lb, data.ub),
                );
            }
            let at = &data.attrs;
            if at.num_stages == Some(0) {
                self.error(e, "num_stages is 0; it must be at least 1");
            }
            if at.multi_buffer == Some(0) {
                self.error(e, "multi_buffer is 0; it must be at least 1");
            }
            if let Some(p) = at.pipelined {
                if p.num_stages == 0 {
                    self.error(e, "is pipelined with 0 stages");
                } else if p.orig_trip < 0 {
                    self.error(
                        e,
                        format!("is pipelined from a negative trip count {}", p.orig_trip),
                    );
                } else {
                    let want = p.loop_trip();
                    let have = i128::from(data.ub) - i128::from(data.lb);
                    if want != have {
                        let what = if p.peeled { "a steady state of " } else { "" };
                        self.error(
                            e,
                            format!(
                                "is pipelined from {} iterations in {} stages, so it runs {what}{want} iterations, but its bounds {}..{} give {have}",
                                p.orig_trip, p.num_stages, data.lb, data.ub
                            ),
                        );
                    }
                }
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Ownership and tree shape

    /// Counts, over every statement of the function, which instructions and axes it holds.
    fn ownership(&mut self) {
        let f = self.func;
        let mut inst_owners: SecondaryMap<Inst, Vec<Stmt>> = SecondaryMap::new();
        let mut axis_owners: SecondaryMap<Axis, Vec<Stmt>> = SecondaryMap::new();
        for (s, data) in f.stmts.iter() {
            match &data.kind {
                StmtKind::Insts(list) => {
                    for &i in list {
                        if f.insts.is_valid(i) {
                            inst_owners[i].push(s);
                        } else {
                            self.error(
                                AnyEntity::Stmt(s),
                                format!("holds undefined instruction {i}"),
                            );
                        }
                    }
                }
                StmtKind::Loop(a) => {
                    if f.axes.is_valid(*a) {
                        axis_owners[*a].push(s);
                    } else {
                        self.error(AnyEntity::Stmt(s), format!("loops over undefined axis {a}"));
                    }
                }
            }
        }
        for i in f.insts.keys() {
            match inst_owners[i].as_slice() {
                [] => self.error(AnyEntity::Inst(i), "is in no statement"),
                [_] => {}
                many => self.error(
                    AnyEntity::Inst(i),
                    format!("is in {} statements ({})", many.len(), join(many)),
                ),
            }
        }
        for a in f.axes.keys() {
            match axis_owners[a].as_slice() {
                [] => self.error(AnyEntity::Axis(a), "is the loop of no statement"),
                [_] => {}
                many => self.error(
                    AnyEntity::Axis(a),
                    format!("is the loop of {} statements ({})", many.len(), join(many)),
                ),
            }
        }
    }

    fn tree(&mut self) {
        let f = self.func;
        let mut ctx = Ctx {
            loops: Vec::new(),
            guards: Vec::new(),
        };
        self.block(&f.body, None, &mut ctx);
        for s in f.stmts.keys() {
            if !self.stmt_seen[s] {
                self.error(AnyEntity::Stmt(s), "is not in the tree");
            }
        }
    }

    fn block(&mut self, block: &[Stmt], parent: Option<Axis>, ctx: &mut Ctx) {
        let f = self.func;
        for &s in block {
            if !f.stmts.is_valid(s) {
                let owner = match parent {
                    None => AnyEntity::Function,
                    Some(a) => AnyEntity::Axis(a),
                };
                self.error(owner, format!("body holds undefined statement {s}"));
                continue;
            }
            if self.stmt_seen[s] {
                self.error_in(
                    AnyEntity::Stmt(s),
                    &ctx.loops,
                    "appears more than once in the tree",
                );
                continue;
            }
            self.stmt_seen[s] = true;
            let data = &f.stmts[s];
            for (k, p) in data.preds.iter().enumerate() {
                self.scope(
                    AnyEntity::Stmt(s),
                    &ctx.loops,
                    &p.expr,
                    &format!("predicate {k}"),
                );
            }
            let saved = ctx.guards.len();
            ctx.guards.extend(data.preds.iter().cloned());
            match &data.kind {
                StmtKind::Insts(list) => {
                    for &i in list {
                        if f.insts.is_valid(i) && !self.inst_checked[i] {
                            self.inst_checked[i] = true;
                            self.inst(i, ctx);
                        }
                    }
                }
                StmtKind::Loop(a) => {
                    // A loop statement's axis is followed once: the first time it is met, and only
                    // while it is not already open (a cycle).
                    if let Some(ax) = f.axes.get(*a) {
                        if ctx.loops.contains(a) {
                            self.error_in(
                                AnyEntity::Stmt(s),
                                &ctx.loops,
                                format!("loop `{}` is nested in itself", ax.iv_name),
                            );
                        } else {
                            ctx.loops.push(*a);
                            self.block(&ax.body, Some(*a), ctx);
                            ctx.loops.pop();
                        }
                    }
                }
            }
            ctx.guards.truncate(saved);
        }
    }

    /// Reports the variables of `e` that are not induction variables of enclosing loops.
    fn scope(&mut self, entity: AnyEntity, loops: &[Axis], e: &AffineExpr, what: &str) -> bool {
        let mut ok = true;
        for a in e.axes() {
            if !self.func.axes.is_valid(a) {
                self.error_in(entity, loops, format!("{what} uses undefined axis {a}"));
                ok = false;
            } else if !loops.contains(&a) {
                let name = iv_name(self.func, a);
                self.error_in(
                    entity,
                    loops,
                    format!("{what} uses `{name}` outside the loop over `{name}`"),
                );
                ok = false;
            }
        }
        ok
    }

    // -----------------------------------------------------------------------------------------
    // Instructions

    fn inst(&mut self, i: Inst, ctx: &Ctx) {
        let f = self.func;
        let data = &f.insts[i];
        let e = AnyEntity::Inst(i);
        let loops = &ctx.loops;
        let op = &data.op;
        let counts_ok = data.srcs.len() == op.num_srcs();
        if !counts_ok {
            self.error_in(
                e,
                loops,
                format!(
                    "has {} source(s) but `{}` takes {}",
                    data.srcs.len(),
                    op.name(),
                    op.num_srcs()
                ),
            );
        }
        if !engine_runs(data.engine, op) {
            self.error_in(
                e,
                loops,
                format!(
                    "`{}` cannot run on the {} engine",
                    op.name(),
                    engine_label(data.engine)
                ),
            );
        }
        let bx = iteration_box(f, ctx);
        let masked = self.mask(e, loops, data);
        let bx = bx.as_deref();
        let mut shapes_ok = self.operand(e, loops, &data.dst, "destination", true, bx, masked);
        for (k, src) in data.srcs.iter().enumerate() {
            let what = format!("source {k}");
            shapes_ok &= self.operand(e, loops, src, &what, false, bx, masked);
        }
        if let Some(t) = f.tensors.get(data.dst.tensor) {
            if t.kind.is_read_only() {
                let what = t.kind.name();
                self.error_in(e, loops, format!("writes {what} tensor `{}`", t.name));
            }
        }
        self.memories(e, loops, data.engine, op, &data.dst, &data.srcs);
        if counts_ok && shapes_ok {
            self.shapes(e, loops, op, &data.dst, &data.srcs);
        }
    }

    /// Checks an instruction's mask: an operation that takes one, a two-dimensional iteration
    /// space, bounds in scope. Returns the mask and the iteration space's shape when the operands'
    /// bounds checks may rely on it.
    fn mask<'d>(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        data: &'d InstData,
    ) -> Option<(&'d [MaskBound], [u64; 2])> {
        if data.mask.is_empty() {
            return None;
        }
        if !InstData::maskable(&data.op) {
            self.error_in(
                e,
                loops,
                format!("`{}` cannot carry a mask", data.op.name()),
            );
            return None;
        }
        let mut scoped = true;
        for b in &data.mask {
            let what = format!("mask bound on `{}`", b.dim.name());
            scoped &= self.scope(e, loops, &b.bound, &what);
        }
        let shape = data.iter_shape();
        if shape.is_none() {
            self.error_in(
                e,
                loops,
                "a masked instruction's iteration space is not 2-D",
            );
        }
        Some((&data.mask[..], shape?)).filter(|_| scoped)
    }

    /// Checks one operand's access; returns whether its sizes are well-formed 2-D sizes. With
    /// `masked`, a dimension that the mask clips ([`InstData::clipped`]) is in bounds when its
    /// start plus some bound of the mask is.
    #[allow(clippy::too_many_arguments)]
    fn operand(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        o: &Operand,
        what: &str,
        write: bool,
        bx: Option<&[(Axis, i128, i128)]>,
        masked: Option<(&[MaskBound], [u64; 2])>,
    ) -> bool {
        let f = self.func;
        let Some(t) = f.tensors.get(o.tensor) else {
            self.error_in(
                e,
                loops,
                format!("{what} names undefined tensor {}", o.tensor),
            );
            return false;
        };
        let acc = &o.access;
        let rank = t.shape.len();
        let mut ok = true;
        if acc.start.len() != rank || acc.size.len() != rank {
            self.error_in(
                e,
                loops,
                format!(
                    "{what} `{}` has {} start(s) and {} size(s) but `{}` has {rank} dimensions",
                    t.name,
                    acc.start.len(),
                    acc.size.len(),
                    t.name
                ),
            );
            ok = false;
        }
        if acc.slots.len() != t.block.len() {
            self.error_in(
                e,
                loops,
                format!(
                    "{what} `{}` has {} slot expression(s) but `{}` has {} block dimension(s)",
                    t.name,
                    acc.slots.len(),
                    t.name,
                    t.block.len()
                ),
            );
        }
        let mut scoped = true;
        for (d, s) in acc.start.iter().enumerate() {
            scoped &= self.scope(e, loops, s, &format!("{what} (`{}` dim {d})", t.name));
        }
        for (k, s) in acc.slots.iter().enumerate() {
            self.scope(e, loops, s, &format!("{what} (`{}` slot {k})", t.name));
        }
        for (d, &z) in acc.size.iter().enumerate() {
            if z == 0 {
                self.error_in(
                    e,
                    loops,
                    format!("{what} selects nothing of `{}` in dim {d}", t.name),
                );
                ok = false;
            }
        }
        if ok {
            if let Some(pat) = &acc.pattern {
                ok &= self.pattern(e, loops, o, pat, what, write, masked.is_some());
            }
        }
        if ok && rank == 2 && t.memory == Memory::Psum {
            self.psum_bank(e, loops, o, what);
        }
        if ok && scoped {
            if let Some(bx) = bx {
                let verb = if write { "writes" } else { "reads" };
                for (d, (start, &size)) in acc.start.iter().zip(&acc.size).enumerate() {
                    let (lo, hi, lo_at, hi_at) = range(start, bx);
                    let extent = i128::from(t.shape.get(d).copied().unwrap_or(0));
                    let end = hi + i128::from(size);
                    // The mask's bounds on this dimension, when the mask clips it.
                    let clips: Vec<&MaskBound> = match masked {
                        Some((m, shape)) if d < 2 && shape[d] == size => {
                            m.iter().filter(|b| b.dim.index() == d).collect()
                        }
                        _ => Vec::new(),
                    };
                    let held = |lower: bool| {
                        clips.iter().filter(|b| b.lower == lower).any(|b| {
                            let Some(sum) = checked_sum(start, &b.bound) else {
                                return false;
                            };
                            let (blo, bhi, _, _) = range(&sum, bx);
                            if lower {
                                blo >= 0
                            } else {
                                bhi <= extent
                            }
                        })
                    };
                    let bad = if lo < 0 && !held(true) {
                        Some(lo_at)
                    } else if end > extent && !held(false) {
                        Some(hi_at)
                    } else {
                        None
                    };
                    if let Some(at) = bad {
                        let unit = dim_unit(t.memory, d);
                        let when = if at.is_empty() {
                            String::new()
                        } else {
                            let parts: Vec<String> = at
                                .iter()
                                .map(|&(a, v)| format!("{} = {v}", iv_name(f, a)))
                                .collect();
                            format!(" (at {})", parts.join(", "))
                        };
                        self.error_in(
                            e,
                            loops,
                            format!(
                                "{what} {verb} `{}` {unit} {lo}..{end} but `{}` has {extent} {unit}{when}",
                                t.name, t.name
                            ),
                        );
                    }
                }
            }
        }
        ok && rank == 2
    }

    /// An access to a PSUM tensor stays within one bank: it spans at most a bank's bytes, and on
    /// a tensor of several banks its free start is bank-aligned in every loop variable, with its
    /// constant part and size inside one bank.
    fn psum_bank(&mut self, e: AnyEntity, loops: &[Axis], o: &Operand, what: &str) {
        let t = &self.func.tensors[o.tensor];
        let elem = t.dtype.size_bytes();
        let bank = (PSUM_BANK_BYTES / elem) as i64;
        let size = o.access.size[1] as i64;
        let name = t.name.clone();
        if size > bank {
            self.error_in(
                e,
                loops,
                format!(
                    "{what} reaches {} bytes of `{name}` in each partition, more than one PSUM bank ({PSUM_BANK_BYTES})",
                    size as u64 * elem
                ),
            );
            return;
        }
        if t.shape[1] * elem <= PSUM_BANK_BYTES {
            return;
        }
        let start = &o.access.start[1];
        let aligned = start.terms().iter().all(|&(_, c)| c % bank == 0);
        if !aligned || start.constant_term().rem_euclid(bank) + size > bank {
            self.error_in(
                e,
                loops,
                format!("{what} of `{name}` may cross a PSUM bank ({bank} elements each)"),
            );
        }
    }

    fn memories(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        engine: EngineClass,
        op: &Op,
        dst: &Operand,
        srcs: &[Operand],
    ) {
        let f = self.func;
        let (dst_ok, src_ok) = op.memories();
        let operands = std::iter::once(("destination".to_string(), dst, dst_ok, "writes")).chain(
            srcs.iter()
                .enumerate()
                .map(|(k, s)| (format!("source {k}"), s, src_ok, "reads")),
        );
        for (what, o, allowed, verb) in operands {
            let Some(t) = f.tensors.get(o.tensor) else {
                continue;
            };
            if !allowed.is_empty() && !allowed.contains(&t.memory) {
                let names: Vec<&str> = allowed.iter().map(|&m| mem_name(m)).collect();
                self.error_in(
                    e,
                    loops,
                    format!(
                        "{what} `{}` is in {}, but `{}` {verb} {}",
                        t.name,
                        mem_name(t.memory),
                        op.name(),
                        names.join(" or ")
                    ),
                );
            }
            if engine == EngineClass::GpSimd && t.memory == Memory::Psum {
                self.error_in(
                    e,
                    loops,
                    format!(
                        "runs on GpSimd (pool), which cannot access PSUM, but its {what} `{}` is in PSUM",
                        t.name
                    ),
                );
            }
        }
    }

    /// A general access pattern's own rules: its size is its bounding box (whose bounds the
    /// caller checks, so every element is inside the tensor); on chip the partition axis is
    /// axis 0 with unit partition step and no free step, and the free axes (at most 4) never
    /// move across partitions; a written pattern touches no element twice; no mask.
    #[allow(clippy::too_many_arguments)]
    fn pattern(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        o: &Operand,
        pat: &Pattern,
        what: &str,
        write: bool,
        masked: bool,
    ) -> bool {
        let t = &self.func.tensors[o.tensor];
        let rank = t.shape.len();
        let name = t.name.clone();
        let mut errs = Vec::new();
        if pat.bounding_box(rank).as_ref() != Some(&o.access.size) {
            errs.push(format!(
                "{what} `{name}` has an access pattern whose size is not its bounding box (every axis needs a positive count and {rank} non-negative steps)"
            ));
        }
        if pat.axes.is_empty() || pat.axes.len() > 5 {
            errs.push(format!(
                "{what} `{name}` has an access pattern of {} axes; a pattern has a partition axis and 1 to 4 free axes",
                pat.axes.len()
            ));
        }
        if masked {
            errs.push(format!(
                "{what} `{name}` has an access pattern on a masked instruction"
            ));
        }
        if errs.is_empty() && rank == 2 && t.memory != Memory::Hbm {
            if pat.axes[0].step != [1, 0] {
                errs.push(format!(
                    "{what} `{name}` strides its partition axis; on chip the partition axis is never strided (its step must be (1, 0))"
                ));
            }
            if pat.axes[1..].iter().any(|a| a.step[0] != 0) {
                errs.push(format!(
                    "{what} `{name}` has a free axis that moves across partitions; on chip a free axis steps along the free dimension only"
                ));
            }
        }
        if errs.is_empty() && write {
            match pat.reaches_twice(&t.shape) {
                Some(false) => {}
                Some(true) => errs.push(format!(
                    "{what} writes `{name}` through an access pattern that reaches some element twice"
                )),
                None => errs.push(format!(
                    "{what} writes `{name}` through an access pattern whose elements nkc cannot show distinct (its axes do not nest and it has more than {MAX_PATTERN_ENUMERATION} values)"
                )),
            }
        }
        let ok = errs.is_empty();
        for m in errs {
            self.error_in(e, loops, m);
        }
        ok
    }

    /// The shape rules of each op, on the value shapes (all operands 2-D, source count right).
    fn shapes(&mut self, e: AnyEntity, loops: &[Axis], op: &Op, dst: &Operand, srcs: &[Operand]) {
        let vd = dst.access.value_shape();
        let d = [vd[0], vd[1]];
        let s: Vec<[u64; 2]> = srcs
            .iter()
            .map(|o| {
                let v = o.access.value_shape();
                [v[0], v[1]]
            })
            .collect();
        let show = |x: [u64; 2]| format!("[{}, {}]", x[0], x[1]);
        let mut errs: Vec<String> = Vec::new();
        let col = [d[0], 1];
        match op {
            Op::Load | Op::Store => {
                let (hbm, tile) = if *op == Op::Load {
                    (s[0], d)
                } else {
                    (d, s[0])
                };
                if crate::ir::dma_rows_per_partition(hbm, tile).is_none() {
                    errs.push(format!(
                        "source 0 is {} but the destination is {}; `{}` keeps the shape or moves whole runs of HBM rows per partition",
                        show(s[0]),
                        show(d),
                        op.name()
                    ));
                }
            }
            Op::Copy | Op::TensorScalar { .. } => {
                if s[0] != d {
                    errs.push(format!(
                        "source 0 is {} but the destination is {}; `{}` keeps the shape",
                        show(s[0]),
                        show(d),
                        op.name()
                    ));
                }
            }
            Op::Matmul { .. } => {
                let ([k, m], [k2, n]) = (s[0], s[1]);
                if k != k2 {
                    errs.push(format!(
                        "matmul sources disagree on the contraction: source 0 is {} ([K, M]) and source 1 is {} ([K, N])",
                        show(s[0]),
                        show(s[1])
                    ));
                }
                if d != [m, n] {
                    errs.push(format!(
                        "matmul of {} and {} gives [{m}, {n}], but the destination is {}",
                        show(s[0]),
                        show(s[1]),
                        show(d)
                    ));
                }
                if k > MATMUL_MAX_KM || m > MATMUL_MAX_KM {
                    errs.push(format!(
                        "matmul source 0 is {} but K and M are at most {MATMUL_MAX_KM}",
                        show(s[0])
                    ));
                }
                if n > MATMUL_MAX_N {
                    errs.push(format!(
                        "matmul source 1 is {} but N is at most {MATMUL_MAX_N}",
                        show(s[1])
                    ));
                }
            }
            Op::Transpose => {
                if d != [s[0][1], s[0][0]] {
                    errs.push(format!(
                        "transpose of {} gives [{}, {}], but the destination is {}",
                        show(s[0]),
                        s[0][1],
                        s[0][0],
                        show(d)
                    ));
                }
            }
            Op::TensorTensor { .. } => {
                for (k, &x) in s.iter().enumerate() {
                    if x != d && x != col {
                        errs.push(format!(
                            "source {k} is {} but the destination is {}; a source is the destination's shape or [{}, 1]",
                            show(x),
                            show(d),
                            d[0]
                        ));
                    }
                }
            }
            Op::Activation { scale, bias, .. } => {
                if s[0] != d {
                    errs.push(format!(
                        "source 0 is {} but the destination is {}",
                        show(s[0]),
                        show(d)
                    ));
                }
                let mut k = 1;
                if *scale == Scale::Tile {
                    if s[k] != col {
                        errs.push(format!(
                            "the scale (source {k}) is {} but must be [{}, 1]",
                            show(s[k]),
                            d[0]
                        ));
                    }
                    k += 1;
                }
                if *bias && s[k] != col {
                    errs.push(format!(
                        "the bias (source {k}) is {} but must be [{}, 1]",
                        show(s[k]),
                        d[0]
                    ));
                }
            }
            Op::Reduce { .. } => {
                if d != [s[0][0], 1] {
                    errs.push(format!(
                        "reduce of {} gives [{}, 1], but the destination is {}",
                        show(s[0]),
                        s[0][0],
                        show(d)
                    ));
                }
            }
            Op::TensorTensorScan { .. } => {
                for (k, &x) in s.iter().take(2).enumerate() {
                    if x != d {
                        errs.push(format!(
                            "scan source {k} is {} but the destination is {}; a scan keeps the shape",
                            show(x),
                            show(d)
                        ));
                    }
                }
                if s[2] != col {
                    errs.push(format!(
                        "the scan's initial value (source 2) is {} but must be [{}, 1]",
                        show(s[2]),
                        d[0]
                    ));
                }
            }
            Op::VectorTranspose => {
                let max = vocab::machine::DVE_TRANSPOSE_MAX;
                if d != [s[0][1], s[0][0]] {
                    errs.push(format!(
                        "vector_transpose of {} gives [{}, {}], but the destination is {}",
                        show(s[0]),
                        s[0][1],
                        s[0][0],
                        show(d)
                    ));
                }
                if s[0][0] > max || s[0][1] > max {
                    errs.push(format!(
                        "vector_transpose of {}: the Vector engine transposes at most [{max}, {max}]",
                        show(s[0])
                    ));
                }
            }
            Op::BnStats => {
                let want = [s[0][0], vocab::BN_STATS_WIDTH as u64];
                if d != want {
                    errs.push(format!(
                        "bn_stats of {} gives {}, but the destination is {}",
                        show(s[0]),
                        show(want),
                        show(d)
                    ));
                }
                if s[0][1] > vocab::machine::BN_STATS_FMAX {
                    errs.push(format!(
                        "bn_stats reads {} but at most {} elements per partition",
                        show(s[0]),
                        vocab::machine::BN_STATS_FMAX
                    ));
                }
            }
            Op::BnAggr => {
                let want = [s[0][0], vocab::BN_AGGR_WIDTH as u64];
                if d != want {
                    errs.push(format!(
                        "bn_aggr of {} gives {}, but the destination is {}",
                        show(s[0]),
                        show(want),
                        show(d)
                    ));
                }
                if !s[0][1].is_multiple_of(3) {
                    errs.push(format!(
                        "bn_aggr reads {}, whose free size is not a multiple of 3 (count, mean, variance * count)",
                        show(s[0])
                    ));
                }
            }
            Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => {
                let top = vocab::TOP8 as u64;
                let name = op.name();
                if s[0][1] < vocab::TOP8_MIN_FREE as u64 {
                    errs.push(format!(
                        "{name} reads {}, fewer than {} elements per partition",
                        show(s[0]),
                        vocab::TOP8_MIN_FREE
                    ));
                }
                if let Some(v) = s.get(1) {
                    if *v != [s[0][0], top] {
                        errs.push(format!(
                            "the values of {name} (source 1) are {} but must be [{}, {top}]",
                            show(*v),
                            s[0][0]
                        ));
                    }
                }
                let want = match op {
                    Op::MatchReplace8 { .. } => s[0],
                    _ => [s[0][0], top],
                };
                if d != want {
                    errs.push(format!(
                        "{name} of {} gives {}, but the destination is {}",
                        show(s[0]),
                        show(want),
                        show(d)
                    ));
                }
            }
            Op::Memset { .. } | Op::Iota { .. } => {}
        }
        for m in errs {
            self.error_in(e, loops, m);
        }
    }
}

/// Whether `engine` can run `op`.
fn engine_runs(engine: EngineClass, op: &Op) -> bool {
    use EngineClass::*;
    match op {
        Op::Load | Op::Store => engine == Dma,
        Op::Matmul { .. } | Op::Transpose => engine == Tensor,
        Op::Activation { .. } => engine == Scalar,
        Op::TensorTensor { .. } | Op::TensorScalar { .. } | Op::Memset { .. } | Op::Iota { .. } => {
            matches!(engine, Vector | GpSimd)
        }
        // The machine reduces on the Vector engine only (`runtime_sim::validate::engines_of`).
        Op::Reduce { .. } => engine == Vector,
        // Sequential along the free axis: the Vector engine's (MACHINE.md cost table).
        Op::TensorTensorScan { .. } | Op::BnStats | Op::BnAggr | Op::VectorTranspose => {
            engine == Vector
        }
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => engine == Vector,
        Op::Copy => matches!(engine, Any | Vector | Scalar | GpSimd),
    }
}

fn engine_label(engine: EngineClass) -> String {
    let long = match engine {
        EngineClass::Dma => "DMA",
        EngineClass::Tensor => "Tensor",
        EngineClass::Vector => "Vector",
        EngineClass::Scalar => "Scalar",
        EngineClass::GpSimd => "GpSimd",
        EngineClass::Any => "any",
    };
    format!("{long} (`{}`)", engine.name())
}

fn mem_name(m: Memory) -> &'static str {
    match m {
        Memory::Hbm => "HBM",
        Memory::Sbuf => "SBUF",
        Memory::Psum => "PSUM",
    }
}

fn dim_unit(m: Memory, d: usize) -> String {
    match (m, d) {
        (Memory::Hbm, 0) => "rows".to_string(),
        (_, 0) => "partitions".to_string(),
        (_, 1) => "columns".to_string(),
        (_, d) => format!("elements of dim {d}"),
    }
}

fn join(stmts: &[Stmt]) -> String {
    crate::listing::capped_list(stmts, ", ")
}

/// The box of iterations of the enclosing loops, `(axis, min, max)` inclusive, tightened by the
/// single-variable guards; `None` when it is empty (the statement never runs).
fn iteration_box(f: &Function, ctx: &Ctx) -> Option<Vec<(Axis, i128, i128)>> {
    let mut bx: Vec<(Axis, i128, i128)> = ctx
        .loops
        .iter()
        .map(|&a| {
            let d = &f.axes[a];
            (a, i128::from(d.lb), i128::from(d.ub) - 1)
        })
        .collect();
    for p in &ctx.guards {
        let [(a, c)] = p.expr.terms() else {
            continue;
        };
        let Some(entry) = bx.iter_mut().find(|(x, _, _)| x == a) else {
            continue;
        };
        let c = i128::from(*c);
        let rhs = i128::from(p.bound) - i128::from(p.expr.constant_term());
        // Bounds on c·iv, then on iv (dividing by a negative c swaps them).
        let (at_least, at_most) = match p.cmp {
            CmpOp::Ge => (Some(rhs), None),
            CmpOp::Lt => (None, Some(rhs - 1)),
            CmpOp::Eq => (Some(rhs), Some(rhs)),
        };
        if let Some(r) = at_least {
            if c > 0 {
                entry.1 = entry.1.max(div_ceil(r, c));
            } else {
                entry.2 = entry.2.min(div_floor(r, c));
            }
        }
        if let Some(r) = at_most {
            if c > 0 {
                entry.2 = entry.2.min(div_floor(r, c));
            } else {
                entry.1 = entry.1.max(div_ceil(r, c));
            }
        }
    }
    bx.iter().all(|&(_, lo, hi)| lo <= hi).then_some(bx)
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

type Assignment = Vec<(Axis, i128)>;

/// `a + b`, or `None` when a coefficient overflows.
fn checked_sum(a: &AffineExpr, b: &AffineExpr) -> Option<AffineExpr> {
    let mut terms: Vec<(Axis, i64)> = a.terms().to_vec();
    for &(x, c) in b.terms() {
        match terms.iter_mut().find(|(y, _)| *y == x) {
            Some((_, d)) => *d = d.checked_add(c)?,
            None => terms.push((x, c)),
        }
    }
    let constant = a.constant_term().checked_add(b.constant_term())?;
    Some(AffineExpr::from_terms(terms, constant))
}

/// The smallest and largest value of `e` over the box, with the iterations that reach them.
fn range(e: &AffineExpr, bx: &[(Axis, i128, i128)]) -> (i128, i128, Assignment, Assignment) {
    let c0 = i128::from(e.constant_term());
    let (mut lo, mut hi) = (c0, c0);
    let (mut lo_at, mut hi_at) = (Vec::new(), Vec::new());
    for &(a, c) in e.terms() {
        let c = i128::from(c);
        // Scoping was checked before: every variable is in the box.
        let Some(&(_, amin, amax)) = bx.iter().find(|(x, _, _)| *x == a) else {
            continue;
        };
        let (at_min, at_max) = if c >= 0 { (amin, amax) } else { (amax, amin) };
        lo = lo.saturating_add(c * at_min);
        hi = hi.saturating_add(c * at_max);
        lo_at.push((a, at_min));
        hi_at.push((a, at_max));
    }
    (lo, hi, lo_at, hi_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;

    #[test]
    fn floor_and_ceil_division() {
        assert_eq!(div_floor(7, 2), 3);
        assert_eq!(div_floor(-7, 2), -4);
        assert_eq!(div_floor(7, -2), -4);
        assert_eq!(div_ceil(7, 2), 4);
        assert_eq!(div_ceil(-7, 2), -3);
        assert_eq!(div_ceil(-7, -2), 4);
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("t.1"));
        assert!(is_identifier("_x9"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("1t"));
        assert!(!is_identifier("a b"));
    }

    #[test]
    fn a_valid_function_verifies_and_entity_errors_are_found() {
        let text = "kernel k(a) -> () {\n  tensor a: hbm f32[128, 512] input\n  tensor t: sbuf f32[128, 512] local\n  stmt {\n    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]\n  }\n}\n";
        let mut f = crate::parse_function(text).expect("parses");
        assert_eq!(verify_function(&f), Ok(()));
        // A statement listed twice, an instruction in no statement and a dangling reference.
        let s0 = f.body[0];
        f.body.push(s0);
        let orphan = f.insts[Inst::new(0)].clone();
        f.insts.push(orphan);
        f.outputs.push(Tensor::new(9));
        let msgs: Vec<String> = verify_function(&f)
            .expect_err("must fail")
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert!(
            msgs.iter()
                .any(|m| m == "stmt s0 (at top level): appears more than once in the tree"),
            "{msgs:?}"
        );
        assert!(
            msgs.iter()
                .any(|m| m == "inst i1 (`t = load`): is in no statement"),
            "{msgs:?}"
        );
        assert!(
            msgs.iter()
                .any(|m| m == "kernel `k`: output t9 is not a defined tensor"),
            "{msgs:?}"
        );
        assert_eq!(msgs.len(), 3, "{msgs:?}");
    }
}
