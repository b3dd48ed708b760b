//! Penguin IR: the hub of nkc.
//!
//! A kernel is a [`Function`]: a loop tree of statements over tensors, built on cranelift-entity
//! maps. This crate owns the IR and everything that works on it without knowing the kernel
//! language: the IR's data ([`ir`], [`entities`], [`affine`]), its verifier ([`verify`]), its text
//! form ([`write`], [`parse`], over the lexer [`lex`] that BIR's reader shares), the reference
//! interpreter ([`interp`]), the machine's limits on IR read from text ([`verify_limits`]), the
//! static look for unwritten scratch ([`uninit`]), the editing API with which passes copy, name and
//! insert statements ([`edit`]), and the annotated software pipeliner with its ISL legality check
//! ([`pipeline`]) (`../shared/DESIGN.md`, "Penguin
//! IR"). Dtypes, op kinds and arithmetic come from the leaf crate `vocab`, shared with the
//! simulator.
//!
//! Invariant: every pass that changes a [`Function`] leaves one that [`verify_function`] accepts
//! (the driver runs the verifier after each pass).

pub mod affine;
pub mod contract;
pub mod edit;
pub mod entities;
pub mod interp;
pub mod ir;
pub mod lex;
pub mod listing;
pub mod op_text;
pub mod parse;
pub mod pipeline;
pub mod uninit;
pub mod uninit_rect;
pub mod uninit_walk;
pub mod verify;
pub mod verify_limits;
pub mod write;

pub use affine::{AffineExpr, CmpOp, Predicate};
pub use entities::{Axis, Inst, Stmt, Tensor};
pub use ir::*;
pub use parse::{parse_function, ParseError};
pub use verify::{verify_function, VerifierError};
pub use write::write_function;
