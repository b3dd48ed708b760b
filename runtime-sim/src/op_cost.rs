//! The cost of one pseudo-ISA operation on the engine that runs it: the machine description's
//! cost table ([`crate::machine`]) applied to the operation's static shapes ([`crate::isa`]).
//!
//! It sits above both: `machine` owns the numbers and knows nothing of the instruction set, `isa`
//! owns the instructions and knows nothing of their costs. The function is total (it never panics)
//! and monotone in the operands' sizes, as every cost of `machine` is.

use crate::isa::{tile_operands, Ap, Mem, Op};
use crate::machine::*;

/// The cycles `engine` spends on a compute operation (MACHINE.md cost table, access included),
/// from the operation's static shapes. DMA, signal and wait are not compute: a DMA costs `sp`
/// [`dma_issue_cycles`] and its queue [`dma_queue_cycles`] after [`DMA_LATENCY`]; waits and
/// signals cost nothing. `N` is the output's elements per partition (the input's for reduce).
pub fn op_cycles(engine: Engine, op: &Op) -> u64 {
    let n_of = |a: &Ap| a.free_elems();
    if engine == Engine::Pool {
        return match op {
            Op::Dma { .. } | Op::Signal { .. } | Op::Wait { .. } => 0,
            Op::Reduce { src, .. } => pool_cycles(n_of(src)),
            _ => tile_operands(op)
                .first()
                .map_or(0, |dst| pool_cycles(n_of(dst))),
        };
    }
    match op {
        Op::Matmul { a, b, .. } => matmul_cycles(matmul_dtype(a.dtype, b.dtype), n_of(a), n_of(b)),
        Op::Transpose { src, .. } => transpose_cycles(src.np as u64, n_of(src)),
        Op::Activation { dst, .. } => activation_cycles(n_of(dst)),
        Op::Copy { dst, .. } if engine == Engine::Act => activation_cycles(n_of(dst)),
        Op::TensorTensor { dst, a, b, .. } => {
            tensor_tensor_cycles(n_of(dst), a.mem == Mem::Psum || b.mem == Mem::Psum)
        }
        Op::TensorScalar { dst, .. } | Op::Copy { dst, .. } | Op::Memset { dst, .. } => {
            vector_cycles(n_of(dst))
        }
        Op::Iota { dst, .. } => vector_cycles(n_of(dst)),
        Op::Rand { dst, .. } | Op::Dropout { dst, .. } => random_cycles(n_of(dst)),
        // A 32 x 32 block moved through the Vector engine at a copy's rate.
        Op::VectorTranspose { dst, .. } => vector_cycles(n_of(dst)),
        Op::Reduce { src, .. } => reduce_cycles(n_of(src)),
        Op::TensorTensorScan { dst, a, b, .. } => {
            scan_cycles(n_of(dst), a.mem == Mem::Psum || b.mem == Mem::Psum)
        }
        Op::BnStats { src, .. } | Op::BnAggr { src, .. } => bn_cycles(n_of(src)),
        Op::Max8 { src, .. } | Op::FindIndex8 { src, .. } | Op::MatchReplace8 { src, .. } => {
            top8_cycles(n_of(src))
        }
        Op::Shuffle { src, .. } => shuffle_cycles(n_of(src)),
        // GpSimd only (handled above); the pool rate if another engine ever runs them.
        Op::LocalGather { dst, .. } | Op::SequenceBounds { dst, .. } => pool_cycles(n_of(dst)),
        Op::Dma { .. } | Op::Signal { .. } | Op::Wait { .. } => 0,
    }
}
