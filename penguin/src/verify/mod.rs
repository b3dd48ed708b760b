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
//! - **masks**: only on operations that take one ([`crate::ir::InstData::maskable`]), over a 2-D iteration
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
//! Layout: this module holds the error type, the [`Verifier`] state and the location text of an
//! error; each family of checks has its own file: [`declarations`] (tensors, params, axes and
//! their loop annotations), [`tree`] (ownership, tree shape, scoping), [`inst`] (per instruction:
//! source count, engine, mask, memories), [`operand`] (one access: arity, sizes, access pattern,
//! PSUM bank), [`bounds`] (the iteration box and the in-bounds check of an access) and
//! [`shapes`] (the shape rules of each op).
//!
//! All arithmetic on user values is done in `i128`, so huge coefficients cannot overflow.

use crate::affine::Predicate;
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Function, Memory, Op, StmtKind};
use crate::write::{iv_name, tensor_name};
use cranelift_entity::SecondaryMap;
use std::fmt;

mod bounds;
mod declarations;
mod inst;
mod operand;
mod shapes;
#[cfg(test)]
mod tests;
mod tree;

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
}

fn mem_name(m: Memory) -> &'static str {
    match m {
        Memory::Hbm => "HBM",
        Memory::Sbuf => "SBUF",
        Memory::Psum => "PSUM",
    }
}
