//! Penguin IR: the hub of nkc.
//!
//! A kernel is a [`Function`]: a loop tree of statements over tensors, built on cranelift-entity
//! maps. This crate owns the IR and everything that works on it without knowing any syntax: the
//! verifier, the text form, the reference interpreter, the analyses and the annotated software
//! pipeliner with its ISL legality check (`../shared/DESIGN.md`, "Penguin IR").

pub mod affine;
pub mod entities;
pub mod interp;
pub mod ir;
pub mod lex;
pub mod listing;
pub mod parse;
pub mod pipeline;
pub mod uninit;
pub mod verify;
pub mod write;

pub use affine::{AffineExpr, CmpOp, Predicate};
pub use entities::{Axis, Inst, Stmt, Tensor};
pub use ir::*;
pub use parse::{parse_function, ParseError};
pub use verify::{verify_function, VerifierError};
pub use write::write_function;
