//! The entity references of Penguin IR.
//!
//! Each is a `u32` newtype made by `cranelift_entity::entity_impl!`, indexing a `PrimaryMap` of the
//! [`crate::Function`] that owns it. An entity is only meaningful together with that function; the
//! verifier checks that every reference in a function points at a defined entity.
//!
//! Display prefixes (used in debug output and verifier messages, not in the text form, which names
//! entities by their source names): `t` tensor, `ax` axis, `s` statement, `i` instruction.

use cranelift_entity::entity_impl;

/// A tensor: an HBM array, or a tile or buffer in SBUF or PSUM.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tensor(u32);
entity_impl!(Tensor, "t");

/// A loop, and with it its induction variable.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Axis(u32);
entity_impl!(Axis, "ax");

/// A statement: the unit that carries stage and order annotations and predicates. It is either a
/// group of instructions (one source statement with its nested calls) or a nested loop.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stmt(u32);
entity_impl!(Stmt, "s");

/// One operation on one engine.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Inst(u32);
entity_impl!(Inst, "i");
