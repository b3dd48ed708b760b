//! The storage limits of the Neuron-like core that every stage checks against: the front end
//! (tile shapes), the pipeliner (SBUF and PSUM after widening), the backend (allocation) and the
//! simulator. The numbers are those of `../shared/MACHINE.md` "Storage"; the simulator's timing
//! and the backend's costs stay in `runtime_sim::machine`, which re-exports these.
//!
//! Invariants: `PSUM_BANK_BYTES * PSUM_BANKS == PSUM_PARTITION_BYTES`; the Tensor engine's limits
//! are those of NKI's `nl.tile_size` and follow from the storage limits.

/// Number of SBUF and PSUM partitions (MACHINE.md "Storage"; Neuron architecture guide: 128 lanes).
pub const PARTITIONS: u32 = 128;
/// SBUF bytes per partition: 24 MiB over 128 partitions = 192 KiB (MACHINE.md "Storage").
pub const SBUF_PARTITION_BYTES: u64 = 192 * 1024;
/// PSUM bytes per partition: 2 MiB over 128 partitions = 16 KiB (MACHINE.md "Storage").
pub const PSUM_PARTITION_BYTES: u64 = 16 * 1024;
/// PSUM banks per partition (MACHINE.md "Storage": 8 banks of 2 KiB).
pub const PSUM_BANKS: u64 = 8;
/// PSUM bytes per bank per partition: 2 KiB = 512 float32 (MACHINE.md "Storage").
pub const PSUM_BANK_BYTES: u64 = PSUM_PARTITION_BYTES / PSUM_BANKS;

/// The most partitions of a tile (`nl.tile_size.pmax`).
pub const PMAX: u64 = PARTITIONS as u64;
/// The most float32 columns of a PSUM tile: one bank (`nl.tile_size.psum_fmax`).
pub const PSUM_FMAX: u64 = PSUM_BANK_BYTES / 4;
/// The most columns of the Tensor engine's stationary operand (`nl.tile_size.gemm_stationary_fmax`).
pub const GEMM_STATIONARY_FMAX: u64 = PARTITIONS as u64;
/// The most columns of the Tensor engine's moving operand (`nl.tile_size.gemm_moving_fmax`).
pub const GEMM_MOVING_FMAX: u64 = PSUM_FMAX;
/// The most elements per partition one `bn_stats` reads (`nl.tile_size.bn_stats_fmax`, NKI's
/// documented hardware limit).
pub const BN_STATS_FMAX: u64 = 512;
/// The largest side of a transpose on the Vector engine: one 32 × 32 block (NKI's
/// `nc_transpose` on `nisa.vector_engine`).
pub const DVE_TRANSPOSE_MAX: u64 = 32;
