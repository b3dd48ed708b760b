//! Operations: what an instruction computes ([`Op`]), with the memories, operand count and engine
//! of each, and the engines ([`EngineClass`]).
//!
//! Invariant: every operation has exactly one destination; its sources' count is
//! [`Op::num_srcs`] and their memories [`Op::memories`] (the verifier checks both).

use super::{ActFunc, AluOp, Memory, ReduceOp};

/// The scale of an activation: an immediate, or a `[P, 1]` tile given as an extra source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Imm(f32),
    Tile,
}

/// An operation, with the meaning of its destination and sources. Every operation has exactly one
/// destination. `[P, 1]` "broadcasts" means the value of partition `p` is used for every element of
/// row `p`.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `dst (SBUF) = src0 (HBM)`, same shape, or partition-major ([`super::dma_rows_per_partition`]).
    Load,
    /// `dst (HBM) = src0 (SBUF)`, same shape, or partition-major ([`super::dma_rows_per_partition`]).
    Store,
    /// Indirect load (NKI's gather): `dst[P, F] (SBUF)`, row `p` of it is row `idx[p]` of the
    /// HBM box `src0[B, F]`, with `src1[P, 1]` (SBUF, an integer dtype) the index tile. The HBM
    /// box is every row an index may name (`0 <= idx[p] < B`), so every analysis that reasons
    /// about boxes sees a superset of the rows read. An index outside `0..B` (or not an
    /// integer) is a run-time error, or, with `skip_oob`, leaves row `p` of `dst` as it was.
    Gather { skip_oob: bool },
    /// Indirect store (NKI's scatter): row `p` of `src0[P, F]` (SBUF) goes to row `idx[p]` of
    /// the HBM box `dst[B, F]`, with `src1[P, 1]` the index tile, partitions in increasing order
    /// (the last of equal indices wins). The destination box is a superset of the rows written:
    /// a scatter never counts as writing all of it. Out-of-range indices as for `Gather`.
    /// With `accumulate` (NKI's `dst_rmw_op=np.add`) each row is added to the HBM row it names
    /// instead of overwriting it, partitions in increasing order (equal indices add up), each
    /// sum rounded to the destination's dtype; it reads the rows it names.
    Scatter { skip_oob: bool, accumulate: bool },
    /// `dst[M, N] (PSUM) = src0[K, M]ᵀ · src1[K, N]` (both SBUF), added to `dst` when `accumulate`.
    Matmul { accumulate: bool },
    /// `dst[F, P] (PSUM) = src0[P, F]ᵀ`.
    Transpose,
    /// `dst = src0 op src1` elementwise; either source may be `[P, 1]` and broadcasts.
    TensorTensor { op: AluOp },
    /// `dst = src0 op imm`, or `imm op src0` when `reverse`.
    TensorScalar { op: AluOp, imm: f32, reverse: bool },
    /// `dst = func(src0 * scale + bias)`. With `Scale::Tile` the next source is the `[P, 1]` scale;
    /// with `bias` the last source is the `[P, 1]` bias.
    Activation {
        func: ActFunc,
        scale: Scale,
        bias: bool,
    },
    /// `dst[P, 1] = reduce(src0[P, F])` along the free axis.
    Reduce { op: ReduceOp },
    /// `dst = src0`, same shape (also PSUM to SBUF).
    Copy,
    /// `dst = value` everywhere; no source.
    Memset { value: f32 },
    /// `dst[p][f] = base + p * pstep + f * fstep` ([`vocab::iota`]); no source. SBUF only (it
    /// runs on GpSimd by default, which cannot reach PSUM).
    Iota { base: f32, pstep: f32, fstep: f32 },
    /// `dst[P, F] = scan(src0[P, F], src1[P, F], src2[P, 1])` along the free axis
    /// ([`vocab::tensor_tensor_scan`]): `dst[p][0] = op1(op0(src0[p][0], src2[p]), src1[p][0])`,
    /// then `dst[p][i] = op1(op0(src0[p][i], dst[p][i - 1]), src1[p][i])`. Vector engine only.
    TensorTensorScan { op0: AluOp, op1: AluOp },
    /// `dst[P, 6] = bn_stats(src0[P, F])` ([`vocab::bn_stats`]), `F` at most 512. Vector engine.
    BnStats,
    /// `dst[P, 2] = bn_aggr(src0[P, 3k])` ([`vocab::bn_aggr`]): the mean and the variance.
    /// Vector engine.
    BnAggr,
    /// `dst[F, P] (SBUF) = src0[P, F]ᵀ` on the Vector engine, both sides at most
    /// [`vocab::machine::DVE_TRANSPOSE_MAX`] (one 32 × 32 block; `nisa.nc_transpose(...,
    /// engine=nisa.vector_engine)`).
    VectorTranspose,
    /// `dst[P, 8] = max8(src0[P, F])` ([`vocab::max8`]): each partition's 8 largest values in
    /// descending order, `F` at least [`vocab::TOP8_MIN_FREE`]. Vector engine.
    Max8,
    /// `dst[P, 8] = find_index8(src0[P, F], src1[P, 8])` ([`vocab::find_index8`]): where each of
    /// the 8 values of `src1` is in the row of `src0`. Vector engine.
    FindIndex8,
    /// `dst[P, F] = match_replace8(src0[P, F], src1[P, 8], imm)` ([`vocab::match_replace8`]):
    /// `src0` with each of the 8 values of `src1` replaced by `imm`. Vector engine.
    MatchReplace8 { imm: f32 },
    /// `dst[p][f] = rand_at(stream, p, f)` ([`vocab::rand_at`]): uniform values in `[0, 1)`,
    /// a pure function of the stream and the element's position; no source (`nl.rand`). Vector
    /// engine, SBUF only.
    Rand { stream: u32 },
    /// `dst[p][f] = dropout(stream, p, f, src0[p][f], src1[p])` ([`vocab::dropout`]): `src0` with
    /// the elements whose random value is below the `[P, 1]` probability `src1` zeroed
    /// (`nisa.dropout`). Vector engine, SBUF only.
    Dropout { stream: u32 },
    /// Cross-partition movement within quadrants of [`vocab::SHUFFLE_QUADRANT`] partitions
    /// (`nisa.nc_stream_shuffle`, [`vocab::shuffle_source`]): row `q * 32 + i` of `dst[Pd, F]`
    /// is row `q * 32 + mask[i]` of `src0[Ps, F]`, or, where `mask[i]` is
    /// [`vocab::SHUFFLE_KEEP`], row `q * 32 + i` of `src1`, the destination's previous value
    /// (that source is present iff the mask keeps a row). Vector engine.
    Shuffle { mask: [u8; 32] },
    /// Gather within groups of `group` partitions (`nisa.local_gather` with 16,
    /// `nl.gather_flattened` with 1; [`vocab::local_gather`]): `dst[P, count * elems]`, whose
    /// element `k * elems + e` of row `p` is element `idx + e` of row `p` of `src0[P, F]`, where
    /// `idx` is the `k`-th index of `p`'s group of rows of `src1[P, K]` read column by column.
    /// An index that is not an integer in range is a run-time error. GpSimd, SBUF only.
    LocalGather { group: u32, elems: u32, count: u32 },
    /// `dst[P, 2n] = sequence_bounds(src0[P, n])` ([`vocab::sequence_bounds`]): per element, the
    /// start then (at `n + j`) the end of its run of equal segment ids; id 0 is padding
    /// (`n`, `-1`). GpSimd, SBUF only.
    SequenceBounds,
}

impl Op {
    /// The name used in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Load => "load",
            Op::Store => "store",
            Op::Gather { .. } => "gather",
            Op::Scatter { .. } => "scatter",
            Op::Matmul { .. } => "matmul",
            Op::Transpose => "transpose",
            Op::TensorTensor { .. } => "tensor_tensor",
            Op::TensorScalar { .. } => "tensor_scalar",
            Op::Activation { .. } => "activation",
            Op::Reduce { .. } => "reduce",
            Op::Copy => "copy",
            Op::Memset { .. } => "memset",
            Op::Iota { .. } => "iota",
            Op::TensorTensorScan { .. } => "tensor_tensor_scan",
            Op::BnStats => "bn_stats",
            Op::BnAggr => "bn_aggr",
            Op::VectorTranspose => "vector_transpose",
            Op::Max8 => "max8",
            Op::FindIndex8 => "find_index8",
            Op::MatchReplace8 { .. } => "match_replace8",
            Op::Rand { .. } => "rand",
            Op::Dropout { .. } => "dropout",
            Op::Shuffle { .. } => "shuffle",
            Op::LocalGather { .. } => "local_gather",
            Op::SequenceBounds => "sequence_bounds",
        }
    }

    /// The memories this operation may write (its destination) and read (its sources): the
    /// machine's data paths, which both IR verifiers check.
    pub fn memories(&self) -> (&'static [Memory], &'static [Memory]) {
        use Memory::{Hbm, Psum, Sbuf};
        match self {
            Op::Load => (&[Sbuf], &[Hbm]),
            Op::Store => (&[Hbm], &[Sbuf]),
            // The second source is the index tile.
            Op::Gather { .. } => (&[Sbuf], &[Hbm, Sbuf]),
            Op::Scatter { .. } => (&[Hbm], &[Sbuf]),
            Op::Matmul { .. } | Op::Transpose => (&[Psum], &[Sbuf]),
            Op::Memset { .. } => (&[Sbuf, Psum], &[]),
            Op::Iota { .. } | Op::Rand { .. } => (&[Sbuf], &[]),
            Op::TensorTensor { .. }
            | Op::TensorScalar { .. }
            | Op::Activation { .. }
            | Op::Reduce { .. }
            | Op::Copy => (&[Sbuf, Psum], &[Sbuf, Psum]),
            Op::TensorTensorScan { .. }
            | Op::BnStats
            | Op::BnAggr
            | Op::VectorTranspose
            | Op::Max8
            | Op::FindIndex8
            | Op::MatchReplace8 { .. }
            | Op::Dropout { .. } => (&[Sbuf], &[Sbuf, Psum]),
            Op::Shuffle { .. } => (&[Sbuf, Psum], &[Sbuf, Psum]),
            Op::LocalGather { .. } | Op::SequenceBounds => (&[Sbuf], &[Sbuf]),
        }
    }

    /// The number of sources this operation takes.
    pub fn num_srcs(&self) -> usize {
        match self {
            Op::Memset { .. } | Op::Iota { .. } | Op::Rand { .. } => 0,
            Op::Load | Op::Store | Op::Transpose | Op::Copy => 1,
            Op::TensorScalar { .. } | Op::Reduce { .. } | Op::BnStats | Op::BnAggr => 1,
            Op::VectorTranspose | Op::Max8 => 1,
            Op::Matmul { .. } | Op::TensorTensor { .. } => 2,
            Op::Gather { .. } | Op::Scatter { .. } => 2,
            Op::FindIndex8 | Op::MatchReplace8 { .. } | Op::Dropout { .. } => 2,
            Op::TensorTensorScan { .. } => 3,
            Op::Shuffle { mask } => 1 + usize::from(mask.contains(&vocab::SHUFFLE_KEEP)),
            Op::LocalGather { .. } => 2,
            Op::SequenceBounds => 1,
            Op::Activation { scale, bias, .. } => {
                1 + usize::from(*scale == Scale::Tile) + usize::from(*bias)
            }
        }
    }

    /// Whether the operation is an indirect DMA (`Gather`, `Scatter`): its HBM operand is the box
    /// of every row an index may name, and its second source is the index tile.
    pub fn is_indirect(&self) -> bool {
        matches!(self, Op::Gather { .. } | Op::Scatter { .. })
    }

    /// The engine class an operation runs on unless something decides otherwise.
    pub fn default_engine(&self) -> EngineClass {
        match self {
            Op::Load | Op::Store | Op::Gather { .. } | Op::Scatter { .. } => EngineClass::Dma,
            Op::Matmul { .. } | Op::Transpose => EngineClass::Tensor,
            Op::TensorTensor { .. }
            | Op::TensorScalar { .. }
            | Op::Reduce { .. }
            | Op::Memset { .. }
            | Op::TensorTensorScan { .. }
            | Op::BnStats
            | Op::BnAggr
            | Op::VectorTranspose
            | Op::Max8
            | Op::FindIndex8
            | Op::MatchReplace8 { .. }
            | Op::Rand { .. }
            | Op::Dropout { .. }
            | Op::Shuffle { .. } => EngineClass::Vector,
            Op::Activation { .. } => EngineClass::Scalar,
            Op::Iota { .. } | Op::LocalGather { .. } | Op::SequenceBounds => EngineClass::GpSimd,
            Op::Copy => EngineClass::Any,
        }
    }
}

/// Which engine runs an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineClass {
    Dma,
    /// `pe`
    Tensor,
    /// `dve`
    Vector,
    /// `act`
    Scalar,
    /// `pool`
    GpSimd,
    /// The backend chooses (copy).
    Any,
}

impl EngineClass {
    pub fn name(self) -> &'static str {
        match self {
            EngineClass::Dma => "dma",
            EngineClass::Tensor => "pe",
            EngineClass::Vector => "dve",
            EngineClass::Scalar => "act",
            EngineClass::GpSimd => "pool",
            EngineClass::Any => "any",
        }
    }
}
