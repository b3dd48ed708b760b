//! The Penguin → Penguin passes of the backend, run before any BIR exists (by the driver's
//! compile context): [`fold_zeros`], [`flatten`], [`unroll`], [`emergent`] (with
//! `num_stages="auto"`, [`emergent::auto`]), [`delay_stores`] (a store after an inner loop issued
//! after the next iteration's loads; `crate::retime` does it for flat loops, measuring with the
//! modulo scheduler), and the rule every pass that deepens a ring keeps
//! ([`ring_reads`]); [`decline`] types why a pass leaves a loop as it is.
//!
//! Invariant: nothing here imports [`crate::codegen`] (`backend/tests/no_import_cycles.rs`);
//! the machine costs these passes weigh come from [`crate::cost`].

pub mod decline;
pub mod delay_stores;
pub mod emergent;
pub mod flatten;
pub mod fold_zeros;
pub mod remark;
pub mod ring_reads;
pub mod ring_slots;
pub mod unroll;
