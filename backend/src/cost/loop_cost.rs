//! The emergent heuristic's cost of a loop, from the shared machine description
//! (`runtime_sim::machine`, never a copy): the compute engines' cycles of one pass over a body
//! ([`body_compute`]), `sp`'s cycles issuing its transfers ([`issue_cycles`]), and how many ring
//! slots a tile's transfer wants against the compute ([`wanted_depth`]; the rings are built at
//! most [`MAX_DEPTH`] deep). A transfer is split into pieces as the emitter splits it
//! ([`crate::cost::dma::dma_pieces`]).
//!
//! The ring choice ([`crate::transform::emergent::plan`]), the nest realisation ([`crate::transform::emergent::nest`]), `num_stages="auto"`
//! ([`crate::transform::emergent::auto`]) and unrolling ([`crate::transform::unroll`]) read these; nothing here changes the
//! function. A guarded statement counts in proportion to how often its guards hold
//! ([`crate::cost::guards::guard_fraction`]); a nested loop counts its trip count times its body.

use crate::cost::dma::dma_pieces;
use penguin::ir::{Op, Pipelined, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};
use runtime_sim::machine;

/// The deepest ring the heuristic counts on: a tile whose transfer wants more slots
/// ([`wanted_depth`]) makes its loop bound by DMA latency for the decisions that read it (no
/// compute stages, `num_stages="auto"`, unrolling for latency), and the deepest ring
/// `transform::ring_slots` deepens a tile no DMA moves to.
pub const MAX_DEPTH: u32 = 4;

/// The deepest ring of a transferred tile ([`crate::transform::emergent::plan`], and the slots
/// `transform::ring_slots` adds on any path, `default`'s user-staged loops included): a tile whose
/// transfer wants more than [`MAX_DEPTH`] slots still gets as many as it wants up to this (and
/// the loop's trip count), SBUF permitting, so that its loads are issued further ahead (measured:
/// `tests/good`'s dma_chains:reload_row_blocks 17,784 -> 15,304 cycles, sched_transpose:
/// transpose_band on `emergent` 8,268 -> 6,176; the decisions above keep [`MAX_DEPTH`]: raising it
/// instead made narrow_stores:narrow_two, which unrolls for latency, 31% slower).
pub const MAX_RING_DEPTH: u32 = 8;

/// A tile's transfer against its loop's compute ([`wanted_depth`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaFit {
    /// The slots a ring of the tile wants: `1 + ceil(dma / compute)`.
    pub wanted: u64,
    /// The transfer's cycles (latency, queue time, issue).
    pub dma: u64,
    /// The compute cycles of one iteration of the loop's body (at least 1).
    pub compute: u64,
    /// How the emitter splits the transfer: pieces of `bytes / pieces`.
    pub pieces: u64,
    pub bytes: u64,
}

/// The heuristic: how many slots a ring of tile `t` wants in loop `l`, `1 + ceil(DMA time /
/// compute time)` per iteration (the tile's transfer split as the emitter splits it; the compute
/// engines' cost of the loop's body).
pub fn wanted_depth(func: &Function, t: Tensor, l: Axis) -> DmaFit {
    let td = &func.tensors[t];
    let bytes = td.shape.iter().product::<u64>() * td.dtype.size_bytes();
    let pieces = dma_pieces(td.shape[0], bytes);
    let dma = machine::DMA_LATENCY
        + machine::dma_queue_cycles(bytes / pieces)
        + pieces * machine::dma_issue_cycles();
    let compute = body_compute(func, &func.axes[l].body).max(1);
    DmaFit {
        wanted: 1 + dma.div_ceil(compute),
        dma,
        compute,
        pieces,
        bytes,
    }
}

/// The compute engines' cycles for one pass over `body` (nested loops times their trips), a
/// guarded statement weighted by how often its guards hold (the first-iteration and later copies
/// of a folded accumulation count once together).
pub fn body_compute(func: &Function, body: &[Stmt]) -> u64 {
    let mut total = 0;
    for &s in body {
        let (on, all) = crate::cost::guards::guard_fraction(func, &func.stmts[s].preds);
        let before = total;
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => {
                for &i in insts {
                    let d = &func.insts[i];
                    let n = d.dst.access.size.iter().skip(1).product::<u64>().max(1);
                    total += match &d.op {
                        Op::Load | Op::Store => 0,
                        Op::Matmul { .. } => {
                            let m = d.srcs[0].access.size.get(1).copied().unwrap_or(1);
                            machine::matmul_cycles(runtime_sim::isa::DType::F32, m, n)
                        }
                        Op::Transpose => machine::transpose_cycles(128, n),
                        Op::Activation { .. } => machine::activation_cycles(n),
                        Op::TensorTensor { .. } => machine::tensor_tensor_cycles(n, false),
                        _ => machine::vector_cycles(n),
                    };
                }
            }
            StmtKind::Loop(a) => {
                let ad = &func.axes[*a];
                total += ad.trip_count().max(0) as u64 * body_compute(func, &ad.body);
            }
        }
        total = before + ((total - before) * on).div_ceil(all);
    }
    total
}

/// The `sp` cycles spent issuing the transfers of one pass over `body` (pieces as the emitter
/// splits them; nested loops times their trips).
pub fn issue_cycles(func: &Function, body: &[Stmt]) -> u64 {
    let mut total = 0;
    for &s in body {
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => {
                for &i in insts {
                    let d = &func.insts[i];
                    let tile = match d.op {
                        Op::Load => &d.dst,
                        Op::Store => &d.srcs[0],
                        _ => continue,
                    };
                    let np = tile.access.size.first().copied().unwrap_or(1);
                    let bytes = tile.access.size.iter().product::<u64>()
                        * func.tensors[tile.tensor].dtype.size_bytes();
                    total += dma_pieces(np, bytes) * machine::dma_issue_cycles();
                }
            }
            StmtKind::Loop(a) => {
                let ad = &func.axes[*a];
                total += ad.trip_count().max(0) as u64 * issue_cycles(func, &ad.body);
            }
        }
    }
    total
}

/// `sp`'s issue cycles and the compute engines' cycles per iteration of the steady state of the
/// extended loop `e` (pipelined as `pipe`): a predicated body's compute spread over its original
/// trip, a peeled body (its steady state, unguarded) as it stands. The loop is issue-bound when
/// the first is at least the second: its drain leaves `sp` no idle time
/// ([`crate::transform::emergent::carry`]), and it unrolls into more, shorter-issued transfers ([`crate::transform::flatten`]).
pub fn steady_issue_and_compute(func: &Function, e: Axis, pipe: &Pipelined) -> (u64, u64) {
    let body = &func.axes[e].body;
    let compute = match pipe.peeled {
        true => body_compute(func, body),
        false => {
            let ext = func.axes[e].trip_count().max(1) as u64;
            (body_compute(func, body) * ext).div_ceil(pipe.orig_trip.max(1) as u64)
        }
    };
    (issue_cycles(func, body), compute)
}
