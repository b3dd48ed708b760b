//! The BIR → ISA half of the backend: lowering to BIR ([`bir`], [`masks`], its text form
//! [`bir_parse`] and verifier [`bir_verify`]), scheduling ([`schedule`], [`queues`], [`ldg`],
//! [`modulo`], [`expand`]), allocation ([`alloc`]), emission ([`emit`], [`footprints`]), the
//! synchronisation ([`clamp`], [`sync`], [`hb`], [`redundant`] and its index [`targets`]; their
//! [`entities`]) and the program ([`assemble`], [`hoist`]).
//!
//! Invariant: the passes here run on BIR and the emitted kernel; the Penguin function is read
//! (for its tensors and loops), never rewritten: [`expand`] decides a ring slot and
//! `crate::transform::ring_slots` realises it.

pub mod alloc;
pub mod assemble;
pub mod bir;
pub mod bir_parse;
pub mod bir_verify;
pub mod clamp;
pub mod emit;
pub mod entities;
pub mod expand;
pub mod footprints;
pub mod hb;
pub mod hoist;
pub mod layout;
pub mod ldg;
pub mod masks;
pub mod modulo;
pub mod queues;
pub mod redundant;
pub mod schedule;
pub mod schedule_summary;
pub mod sync;
pub mod targets;
