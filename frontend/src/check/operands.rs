//! The vocabulary of the operation checks: what an operation is ([`OpKind`]), what it takes
//! ([`Arg`]), where it writes ([`Dest`]), what it produces ([`Res`]), and the statement whose
//! instructions it adds to ([`StmtCtx`]).
//!
//! These types sit below the operation families (`elementwise_ops`, `random_ops`,
//! `scan_stats_ops`, `top8_ops`, `patterns`, `tile_nd`, ...) and the dispatcher `ops` that
//! resolves a call to one of them, so that each family names them without importing `ops`.
//! Invariant: only data here, no checks.

use super::{CInst, TileVal};
use crate::ast::Span;
use penguin::{ActFunc, AluOp, DType, Memory, ReduceOp, StmtAnnot};

/// Where the outermost instruction of an expression writes.
#[derive(Clone, Debug)]
pub(super) enum Dest {
    /// A new tensor bound to `name` (`span` is the binding).
    New { name: String, span: Span },
    /// A fresh temporary (a nested call).
    Temp,
    /// Part of an existing tensor; `accumulate` for `acc += matmul(...)`.
    Into { target: TileVal, accumulate: bool },
}

/// The instructions and annotations of the statement being checked.
#[derive(Debug, Default)]
pub(super) struct StmtCtx {
    pub insts: Vec<CInst>,
    pub annot: StmtAnnot,
    /// The statement is directly in a loop body.
    pub in_loop_body: bool,
}

/// An operand of an elementwise operation.
#[derive(Clone, Debug)]
pub(super) enum Arg {
    Tile(TileVal, Span),
    Scalar(f32),
}

/// The result an operation produces.
pub(super) struct Res {
    pub shape: [u64; 2],
    pub memory: Memory,
    pub dtype: DType,
}

impl Res {
    pub(super) fn sbuf(shape: [u64; 2]) -> Self {
        Res {
            shape,
            memory: Memory::Sbuf,
            dtype: DType::F32,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum OpKind {
    Load,
    Store,
    Matmul,
    NcMatmul,
    NcTranspose,
    Activation,
    Alu(AluOp),
    Act(ActFunc),
    Reduce(ReduceOp),
    /// `nl.mean`: a sum, then a division by the count.
    Mean,
    Copy,
    Zeros,
    /// `nl.full(shape, fill_value, dtype, buffer)`.
    Full,
    Ndarray,
    /// `nl.shared_constant(np_array, dtype)` (`np_consts`).
    SharedConstant,
    /// `nl.broadcast_to(x, shape)` and `x.broadcast_to(shape)` (`check/nisa.rs`).
    BroadcastTo,
    /// `nl.load_transpose2d(src)`: a load, then a transpose on the Tensor engine.
    LoadTranspose,
    /// `nisa.tensor_scalar`, `nisa.tensor_tensor`, `nisa.tensor_reduce` (`check/nisa.rs`).
    TensorScalar,
    TensorTensor,
    TensorReduce,
    Range,
    // The operations of `check/elementwise_ops.rs`.
    /// `nl.where(condition, x, y)`.
    Where,
    /// `nl.softmax(x, axis)`.
    Softmax,
    /// `nl.var(x, axis)`.
    Var,
    /// `nl.zeros_like`, `nl.ones_like`, `nl.empty_like`.
    Like(Fill),
    /// `nl.ones(shape, dtype, buffer)`.
    Ones,
    /// `nisa.memset(shape, value, dtype)`.
    NisaMemset,
    /// `nisa.tensor_partition_reduce(op, data)`.
    PartitionReduce,
    /// `nisa.activation_reduce(op, data, reduce_op, reduce_res, bias, scale)`.
    ActivationReduce,
    /// `nisa.tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, reverse0)`.
    TensorScalarReduce,
    /// `nisa.iota(expr, dtype)`.
    Iota,
    /// `nisa.affine_select(pred, on_true_tile, on_false_value)`.
    AffineSelect,
    // The operations of `check/scan_stats_ops.rs`.
    /// `nisa.tensor_tensor_scan(data0, data1, initial, op0, op1)`.
    TensorTensorScan,
    /// `nisa.bn_stats(data)`.
    BnStats,
    /// `nisa.bn_aggr(data)`.
    BnAggr,
    /// `nl.loop_reduce(x, op, loop_indices)`.
    LoopReduce,
    /// `nisa.nc_transpose(x, engine=nisa.vector_engine)`.
    VectorTranspose,
    // The operations of `check/top8_ops.rs`.
    /// `nisa.max8(src)`.
    Max8,
    /// `nisa.nc_find_index8(data, vals)`.
    FindIndex8,
    /// `nisa.nc_match_replace8(data, vals, imm, dst_idx)`.
    MatchReplace8,
    /// `nisa.range_select(on_true_tile, comp_op0, comp_op1, bound0, bound1, ...)`
    /// (`check/range_select.rs`).
    RangeSelect,
    // The operations of `check/random_ops.rs`.
    /// `nl.rand(shape, dtype)`.
    Rand,
    /// `nisa.dropout(data, prob)`, `nl.dropout(x, rate)`.
    Dropout,
    // The operations of `check/gather_ops.rs`.
    /// `nisa.nc_stream_shuffle(src, shuffle_mask)`.
    StreamShuffle,
    /// `nisa.local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices)`.
    LocalGather,
    /// `nl.gather_flattened(data, indices)`.
    GatherFlattened,
    /// `nisa.sequence_bounds(segment_ids)`.
    SequenceBounds,
    /// `nl.shared_identity_matrix(n, dtype)`.
    SharedIdentity,
}

/// What a `*_like` creation fills its tile with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Fill {
    Zeros,
    Ones,
    /// `nl.empty_like`: a buffer without an instruction.
    Empty,
}

/// The activation function named `nl.<name>` (`identity` only as `op=` of `nisa.activation`).
pub(super) fn act_func(name: &str) -> Option<ActFunc> {
    ActFunc::ALL.into_iter().find(|f| f.name() == name)
}
