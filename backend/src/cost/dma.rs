//! The machine cost of one DMA transfer as the Penguin passes and the emitter both see it: which
//! operand is a load's or a store's on-chip tile ([`dma_tile`]), the bytes it moves
//! ([`tile_bytes`]), and how many pieces a lone transfer is split into for its latency
//! ([`dma_pieces`]; the emitter's actual split balances whole loop bodies,
//! `codegen::queues::compute_queue_plan`).

use penguin::ir::{Op, Operand};
use penguin::Function;
use runtime_sim::machine::{self, DMA_QUEUES};

/// The on-chip tile of a load (which writes it) or a store (which reads it); `None` for any other
/// operation.
pub fn dma_tile<'a>(op: &Op, dst: &'a Operand, srcs: &'a [Operand]) -> Option<&'a Operand> {
    match op {
        Op::Load => Some(dst),
        Op::Store => srcs.first(),
        _ => None,
    }
}

/// The bytes a transfer of `tile` moves: its elements times their size.
pub fn tile_bytes(func: &Function, tile: &Operand) -> u64 {
    tile.access.value_shape().iter().product::<u64>() * func.tensors[tile.tensor].dtype.size_bytes()
}

/// How many pieces a lone transfer of `np` partitions and `bytes` would be split into for its
/// latency: a power of two that divides `np`, at most the 16 queues, and no more than keeps each
/// piece's queue time at least twice the `sp` issue cost. The emergent heuristic estimates a
/// tile's DMA time with it; the emitter's actual split balances whole loop bodies
/// ([`crate::codegen::queues::compute_queue_plan`]).
pub fn dma_pieces(np: u64, bytes: u64) -> u64 {
    let want = machine::dma_queue_cycles(bytes) / (2 * machine::dma_issue_cycles());
    let mut k = 1;
    while k * 2 <= DMA_QUEUES as u64 && k * 2 <= want && np.is_multiple_of(k * 2) {
        k *= 2;
    }
    k
}
