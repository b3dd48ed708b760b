//! The cost of one instruction on one engine for load balancing and scheduling, from the machine
//! description ([`estimate`]): the engine choice of `.any` instructions
//! ([`crate::cost::engine_choice`]), the list and modulo schedulers and the queue plan weigh the
//! same figure.
//!
//! Invariant: a pure function of the instruction's op and operand shapes and its engine.

use penguin::ir::{Op, Operand};
use runtime_sim::isa::Engine;
use runtime_sim::machine;

/// The cost of an instruction for load balancing and scheduling, from the machine description:
/// `N` is the output's free size, the input's for a reduce (MACHINE.md), and a matmul's `M` is its
/// stationary operand's free size. (The exact cost is computed on the emitted instruction; this
/// one does not know whether a tensor_tensor input sits in PSUM, so it charges the SBUF rate.)
pub fn estimate(engine: Engine, op: &Op, dst: &Operand, srcs: &[Operand]) -> u64 {
    let free = |o: &Operand| o.access.value_free();
    let n = match op {
        Op::Reduce { .. } | Op::BnStats | Op::BnAggr => srcs.first().map_or(1, free),
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => srcs.first().map_or(1, free),
        _ => free(dst),
    };
    match (engine, op) {
        (Engine::Sp, _) => machine::dma_issue_cycles(),
        (Engine::Pool, _) => machine::pool_cycles(n),
        (Engine::Act, _) => machine::activation_cycles(n),
        (Engine::Pe, Op::Transpose) => {
            let p = srcs.first().map_or(128, |o| o.access.size[0]);
            machine::transpose_cycles(p, free(srcs.first().unwrap_or(dst)))
        }
        (Engine::Pe, _) => {
            let m = srcs.first().map_or(128, free);
            machine::matmul_cycles(runtime_sim::isa::DType::F32, m, n)
        }
        (_, Op::TensorTensor { .. }) => machine::tensor_tensor_cycles(n, false),
        (_, Op::TensorTensorScan { .. }) => machine::scan_cycles(n, false),
        (_, Op::BnStats | Op::BnAggr) => machine::bn_cycles(n),
        (_, Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. }) => machine::top8_cycles(n),
        (_, Op::Rand { .. } | Op::Dropout { .. }) => machine::random_cycles(n),
        _ => machine::vector_cycles(n),
    }
}
