//! The machine description: every capacity and every cost of the Neuron-like core, in one place.
//!
//! This module owns the numbers of `../shared/MACHINE.md` (which takes them from AWS's public
//! Neuron architecture guides for the trn1 generation NeuronCore-v2, and from the per-instruction
//! cost notes of the NKI ISA documentation). The simulator takes its timing from here, and the
//! backend its cost model (list and modulo schedulers, queue plan, emergent pipelining heuristics,
//! dependence bound); nothing else may copy a number.
//!
//! Units: cycles of one 1.4 GHz clock; sizes in bytes unless a name says otherwise. Every cost
//! function is total (it never panics) and monotone in its size arguments.

/// Clock frequency in cycles per microsecond (1.4 GHz; MACHINE.md "Units").
pub const CYCLES_PER_US: f64 = 1400.0;

// The storage limits are shared with the front end, the pipeliner and the backend.
pub use vocab::machine::{
    PARTITIONS, PSUM_BANKS, PSUM_BANK_BYTES, PSUM_PARTITION_BYTES, SBUF_PARTITION_BYTES,
};

/// Number of DMA queues the `sp` engine issues onto (MACHINE.md "Engines").
pub const DMA_QUEUES: usize = 16;
/// Fixed latency of one DMA transfer, overlapping with other transfers in flight: about 1.3 µs
/// (MACHINE.md cost table).
pub const DMA_LATENCY: u64 = 1820;
/// DMA queue bandwidth in bytes per cycle: about 27 GB/s per queue at 1.4 GHz (MACHINE.md).
pub const DMA_BYTES_PER_CYCLE: u64 = 19;

/// The minimum initiation interval of an instruction (MACHINE.md "Cost model": `MIN_II` = 64).
pub const MIN_II: u64 = 64;
/// The fixed cost every compute instruction pays for its SBUF/PSUM access (MACHINE.md).
pub const ACCESS_FIXED: u64 = 60;
/// The fixed part of a Tensor-engine instruction (matmul, transpose) (MACHINE.md).
pub const PE_FIXED: u64 = 64;
/// The fixed part of any GpSimd instruction (MACHINE.md: `150 + N`).
pub const POOL_FIXED: u64 = 150;
/// The Tensor engine's stationary-operand width beyond which M stops mattering (MACHINE.md: the
/// `min(64, M)` of the matmul cost).
pub const PE_ROWS_FREE: u64 = 64;
/// The f32 matmul slowdown: the PE array runs float32 at a quarter of the bf16 rate (MACHINE.md).
pub const PE_F32_FACTOR: u64 = 4;
/// Issuing one DMA transfer costs the `sp` engine `MIN_II` cycles (MACHINE.md).
pub const DMA_ISSUE: u64 = MIN_II;

/// The element types of the machine (the shared vocabulary's).
pub use vocab::DType;

/// The engines, each with its own in-order stream (MACHINE.md "Engines").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// Tensor engine: matmul and transpose into PSUM.
    Pe,
    /// Scalar engine: activation and copy.
    Act,
    /// Vector engine: tensor_tensor, tensor_scalar, reduce, copy, memset.
    Dve,
    /// GpSimd engine: copy, memset, iota, elementwise; never PSUM.
    Pool,
    /// Sync engine: issues DMA transfers.
    Sp,
}

impl Engine {
    pub const ALL: [Engine; 5] = [
        Engine::Pe,
        Engine::Act,
        Engine::Dve,
        Engine::Pool,
        Engine::Sp,
    ];
    /// The engines that compute (every engine but `sp`); the resource bound takes the busiest.
    pub const COMPUTE: [Engine; 4] = [Engine::Pe, Engine::Act, Engine::Dve, Engine::Pool];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Pe => "pe",
            Engine::Act => "act",
            Engine::Dve => "dve",
            Engine::Pool => "pool",
            Engine::Sp => "sp",
        }
    }

    pub fn from_name(s: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == s)
    }

    /// Whether the engine may read or write PSUM (GpSimd cannot; `sp`'s DMAs reach SBUF only).
    pub fn can_access_psum(self) -> bool {
        matches!(self, Engine::Pe | Engine::Act | Engine::Dve)
    }
}

/// The dtype a matmul of operands `a` and `b` runs at: bf16 only when both are bf16. A bf16
/// operand beside an f32 one is widened to f32 (exactly: every bf16 value is an f32 value), so
/// the product is the f32 one and takes the f32 rate.
pub fn matmul_dtype(a: DType, b: DType) -> DType {
    match (a, b) {
        (DType::Bf16, DType::Bf16) => DType::Bf16,
        _ => DType::F32,
    }
}

/// `matmul` on the Tensor engine: `dst[M, N] = a[K, M]ᵀ · b[K, N]` with operands of `dtype`
/// ([`matmul_dtype`] of the two operands'): `4 * max(min(64, M), N)` for f32, `max(min(64, M), N)`
/// for bf16, plus 64 fixed, plus the access.
pub fn matmul_cycles(dtype: DType, m: u64, n: u64) -> u64 {
    let base = m.min(PE_ROWS_FREE).max(n);
    let factor = match dtype {
        DType::F32 => PE_F32_FACTOR,
        DType::Bf16 => 1,
    };
    base.saturating_mul(factor)
        .saturating_add(PE_FIXED + ACCESS_FIXED)
}

/// `transpose` of a `[P, F]` tile on the Tensor engine: `max(P, min(64, F))` plus 64 fixed, plus
/// the access.
pub fn transpose_cycles(p: u64, f: u64) -> u64 {
    p.max(f.min(PE_ROWS_FREE))
        .saturating_add(PE_FIXED + ACCESS_FIXED)
}

/// `activation` (or copy) on the Scalar engine over `n` output elements per partition.
pub fn activation_cycles(n: u64) -> u64 {
    n.max(MIN_II).saturating_add(ACCESS_FIXED)
}

/// `tensor_tensor` on the Vector engine over `n` output elements per partition: `max(MIN_II, 2N)`,
/// or `max(MIN_II, N)` when one input is in PSUM.
pub fn tensor_tensor_cycles(n: u64, one_input_in_psum: bool) -> u64 {
    let work = if one_input_in_psum {
        n
    } else {
        n.saturating_mul(2)
    };
    work.max(MIN_II).saturating_add(ACCESS_FIXED)
}

/// `tensor_scalar`, `copy`, `memset` on the Vector engine over `n` output elements per partition.
pub fn vector_cycles(n: u64) -> u64 {
    n.max(MIN_II).saturating_add(ACCESS_FIXED)
}

/// `reduce` on the Vector engine over `n` input elements per partition.
pub fn reduce_cycles(n: u64) -> u64 {
    n.max(MIN_II).saturating_add(ACCESS_FIXED)
}

/// `tensor_tensor_scan` on the Vector engine over `n` elements per partition: the rate of a
/// `tensor_tensor` (two inputs streamed once; the running value stays in the ALU), so
/// `max(MIN_II, 2N)`, or `max(MIN_II, N)` when one input is in PSUM.
pub fn scan_cycles(n: u64, one_input_in_psum: bool) -> u64 {
    tensor_tensor_cycles(n, one_input_in_psum)
}

/// `bn_stats` / `bn_aggr` on the Vector engine over `n` input elements per partition: one pass
/// over the input like a reduction, `max(MIN_II, N)`.
pub fn bn_cycles(n: u64) -> u64 {
    reduce_cycles(n)
}

/// `max8` / `find_index8` / `match_replace8` on the Vector engine over `n` data elements per
/// partition: one pass over the data like a reduction, `max(MIN_II, N)` (NKI documents `N`
/// engine cycles for `nc_find_index8`).
pub fn top8_cycles(n: u64) -> u64 {
    reduce_cycles(n)
}

/// `shuffle` (`nisa.nc_stream_shuffle`) on the Vector engine over `n` elements per partition of
/// its source: NKI's `max(MIN_II, N)`, a copy's rate (each row streams through once).
pub fn shuffle_cycles(n: u64) -> u64 {
    vector_cycles(n)
}

/// `rand` / `dropout` on the Vector engine over `n` output elements per partition: one element
/// per cycle as a copy, `max(MIN_II, N)` (one hash per element, like one ALU operation).
pub fn random_cycles(n: u64) -> u64 {
    vector_cycles(n)
}

/// Any GpSimd instruction over `n` output elements per partition: `150 + N`, plus the access.
pub fn pool_cycles(n: u64) -> u64 {
    n.saturating_add(POOL_FIXED + ACCESS_FIXED)
}

/// The cycles `sp` spends issuing one DMA transfer.
pub fn dma_issue_cycles() -> u64 {
    DMA_ISSUE
}

/// The cycles a transfer of `bytes` occupies its queue, after its latency: `ceil(bytes / 19)`.
pub fn dma_queue_cycles(bytes: u64) -> u64 {
    bytes.div_ceil(DMA_BYTES_PER_CYCLE)
}

/// The whole time of one transfer of `bytes` on an idle queue: latency plus queue occupancy.
pub fn dma_transfer(bytes: u64) -> u64 {
    DMA_LATENCY.saturating_add(dma_queue_cycles(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_match_machine_md() {
        assert_eq!(PARTITIONS as u64 * SBUF_PARTITION_BYTES, 24 << 20);
        assert_eq!(PARTITIONS as u64 * PSUM_PARTITION_BYTES, 2 << 20);
        assert_eq!(PSUM_BANK_BYTES / DType::F32.size_bytes(), 512);
    }

    #[test]
    fn costs_follow_the_table() {
        // 4 * max(min(64, 128), 512) + 64 + 60
        assert_eq!(matmul_cycles(DType::F32, 128, 512), 4 * 512 + 124);
        // max(min(64, 128), 32) + 64 + 60 = 64 + 124
        assert_eq!(matmul_cycles(DType::Bf16, 128, 32), 64 + 124);
        // A bf16 operand beside an f32 one is widened: the f32 rate.
        assert_eq!(matmul_dtype(DType::Bf16, DType::F32), DType::F32);
        assert_eq!(matmul_dtype(DType::F32, DType::Bf16), DType::F32);
        assert_eq!(matmul_dtype(DType::Bf16, DType::Bf16), DType::Bf16);
        assert_eq!(transpose_cycles(128, 32), 128 + 124);
        assert_eq!(transpose_cycles(16, 200), 64 + 124);
        assert_eq!(activation_cycles(10), 64 + 60);
        assert_eq!(tensor_tensor_cycles(100, false), 200 + 60);
        assert_eq!(tensor_tensor_cycles(100, true), 100 + 60);
        assert_eq!(pool_cycles(512), 150 + 512 + 60);
        assert_eq!(dma_queue_cycles(19), 1);
        assert_eq!(dma_queue_cycles(20), 2);
        // 262144 bytes / 19 = 13797.05, rounded up
        assert_eq!(dma_transfer(128 * 512 * 4), 1820 + 13798);
    }
}
