//! The vocabulary every nkc crate shares, defined once: the element types ([`DType`]), the
//! operations of the engines ([`AluOp`], [`ActFunc`], [`ReduceOp`]) with their float32 meaning,
//! the rounding of stored values ([`round_bf16`], [`round_to`], [`canonical_nan`]), the arrays
//! of kernel inputs and outputs ([`Array`]) and the seeded random numbers they are drawn from
//! ([`SplitMix64`]) and the run-time random numbers of `nl.rand` / `nisa.dropout` ([`rand_at`]),
//! the machine's limits ([`machine`]) and the [`Diagnostic`] every stage reports
//! problems in.
//!
//! It is a leaf: it depends on no other crate. The front end, Penguin (and its interpreter) and
//! the simulator all use these definitions, so the interpreter stays an independent oracle of
//! *programs* (what runs in which order, on which bytes) while both sides agree on arithmetic by
//! construction; the hidden numpy checks judge the arithmetic itself.
//!
//! Invariants: every operation's float32 result is a pure function of its operands, with no
//! fused multiply-add and a fixed order; every NaN stored is the one canonical quiet NaN.

mod array;
pub mod diagnostic;
mod dtype;
pub mod gather_ops;
pub mod machine;
mod ops;
pub mod poison;
pub mod random_ops;
mod rng;
pub mod scan_stats;
pub mod top8;
mod value_runs;

pub use array::Array;
pub use diagnostic::Diagnostic;
pub use dtype::{canonical_nan, round_bf16, round_to, DType};
pub use gather_ops::{
    gather_index_at, gather_row, gather_starts, sequence_bounds, shuffle_source, SHUFFLE_KEEP,
    SHUFFLE_QUADRANT,
};
pub use ops::{iota, matmul, maximum, minimum, ActFunc, AluOp, ReduceOp};
pub use random_ops::{dropout, rand_at, RAND_SEED};
pub use rng::SplitMix64;
pub use scan_stats::{bn_aggr, bn_stats, tensor_tensor_scan, BN_AGGR_WIDTH, BN_STATS_WIDTH};
pub use top8::{find_index8, match_replace8, max8, TOP8, TOP8_MIN_FREE, TOP8_NOT_FOUND};
pub use value_runs::write_value_runs;
