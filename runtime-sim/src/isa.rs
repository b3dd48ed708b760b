//! The pseudo-ISA: the types of a program for the Neuron-like core.
//!
//! A [`Program`] holds the HBM tensors, the semaphores and one instruction stream per engine.
//! Streams nest hardware [`Loop`]s whose iteration registers appear in address expressions
//! ([`Expr`], affine plus modulo terms), in predicates ([`Cmp`]) and in semaphore wait values.
//!
//! Invariants of a program built by [`crate::text::parse`] (and checked by [`crate::validate`]):
//! every register used is bound by an enclosing loop of its stream and no loop rebinds a register
//! of an enclosing loop; every tensor and semaphore index is in range; moduli are positive. The
//! simulator relies on these.
//!
//! Addresses: a tile access pattern ([`Ap`]) names a partition range `[p0, p0 + np)`, a start
//! **in bytes** on the free axis, and up to 4 `(size, stride)` dimensions with strides in
//! **elements** of its dtype; the same bytes are touched in every partition of the range. An HBM
//! access pattern ([`HbmAp`]) names a tensor, a start in elements of its row-major storage and up
//! to 4 dimensions.

pub use crate::machine::{DType, Engine};

/// Most free-axis (and HBM) dimensions an access pattern may have.
pub const MAX_DIMS: usize = 4;

/// Most elements per partition one access pattern may cover (a stride-0 dimension can repeat
/// elements, so this is not implied by the memory's size).
pub const MAX_FREE_ELEMS: u64 = 1 << 20;

/// An iteration register `rK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u8);

/// The highest register number (`r0` .. `r31`).
pub const MAX_REGS: usize = 32;

/// One term of an address expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    /// `coeff * rK`.
    Lin { coeff: i64, reg: Reg },
    /// `((rK + offset) mod modulus) * coeff`, `modulus > 0` (address rotation; the offset lets a
    /// pipeline stage that works on iteration `rK - s` name its ring slot).
    Mod {
        coeff: i64,
        reg: Reg,
        offset: i64,
        modulus: i64,
    },
}

/// `constant + Σ terms`: affine in the iteration registers plus modulo terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Expr {
    pub terms: Vec<Term>,
    pub constant: i64,
}

impl Expr {
    pub fn constant(c: i64) -> Expr {
        Expr {
            terms: Vec::new(),
            constant: c,
        }
    }

    /// The value for register values `regs` (indexed by register number), in i128 so no
    /// program can overflow it.
    pub fn eval(&self, regs: &[i64; MAX_REGS]) -> i128 {
        let mut v = self.constant as i128;
        for t in &self.terms {
            let term = match *t {
                Term::Lin { coeff, reg } => {
                    (coeff as i128).saturating_mul(regs[reg.0 as usize] as i128)
                }
                Term::Mod {
                    coeff,
                    reg,
                    offset,
                    modulus,
                } => {
                    // In i64 when the sum fits (i128 division is a library call).
                    let m = modulus.max(1);
                    let slot = match regs[reg.0 as usize].checked_add(offset) {
                        Some(x) => x.rem_euclid(m) as i128,
                        None => {
                            (regs[reg.0 as usize] as i128 + offset as i128).rem_euclid(m as i128)
                        }
                    };
                    (coeff as i128).saturating_mul(slot)
                }
            };
            v = v.saturating_add(term);
        }
        v
    }

    /// The registers the expression reads.
    pub fn regs(&self) -> impl Iterator<Item = Reg> + '_ {
        self.terms.iter().map(|t| match *t {
            Term::Lin { reg, .. } | Term::Mod { reg, .. } => reg,
        })
    }
}

/// A comparison operator of a predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }

    pub fn holds(self, a: i128, b: i128) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// One affine comparison `lhs op rhs` of a predicate.
///
/// A predicate is a conjunction of comparisons guarding one instruction. A predicated-off
/// instruction does nothing and takes no time, but still performs its signal, so that semaphore
/// counts stay affine in the iteration registers: at once, except for a `dma`, whose signal is
/// counted once every signal issued earlier to the same semaphore has been (a semaphore's
/// increments stay in issue order). A semaphore signalled by one `dma` instruction therefore
/// always counts its completed instances, on or off.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cmp {
    pub lhs: Expr,
    pub op: CmpOp,
    pub rhs: Expr,
}

/// The on-chip memories an access pattern may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mem {
    Sbuf,
    Psum,
}

impl Mem {
    pub fn name(self) -> &'static str {
        match self {
            Mem::Sbuf => "sbuf",
            Mem::Psum => "psum",
        }
    }
}

/// A tile access pattern: partitions `[p0, p0 + np)`, a start in bytes and up to 4 free-axis
/// `(size, stride)` dimensions (stride in elements), outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ap {
    pub mem: Mem,
    pub dtype: DType,
    pub p0: Expr,
    pub np: u32,
    pub start: Expr,
    pub dims: Vec<Dim>,
}

/// One dimension of an access pattern: `size` elements `stride` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    pub size: u64,
    pub stride: i64,
}

impl Ap {
    /// Elements per partition (the product of the dimension sizes; 1 with no dimension).
    pub fn free_elems(&self) -> u64 {
        self.dims.iter().fold(1u64, |a, d| a.saturating_mul(d.size))
    }
}

/// An HBM access pattern: a tensor, a start in elements and up to 4 dimensions, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HbmAp {
    /// Index into [`Program::tensors`].
    pub tensor: usize,
    pub start: Expr,
    pub dims: Vec<Dim>,
}

impl HbmAp {
    pub fn elems(&self) -> u64 {
        self.dims.iter().fold(1u64, |a, d| a.saturating_mul(d.size))
    }
}

/// What a DMA does beside moving its elements (text: `skip_oob`, `add` after the operands).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DmaMode {
    /// An indirect transfer skips the partitions whose index is out of range.
    pub skip_oob: bool,
    /// The transfer adds to its (HBM) destination: a read-modify-write.
    pub accumulate: bool,
}

/// One side of a DMA transfer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DmaSide {
    Hbm(HbmAp),
    Tile(Ap),
}

// The operations are the shared vocabulary's (one definition for Penguin and the machine).
pub use vocab::{ActFunc, AluOp, ReduceOp};

/// The scale of an activation: an immediate or a `[P, 1]` tile.
#[derive(Clone, Debug, PartialEq)]
pub enum Scale {
    Imm(f32),
    Tile(Ap),
}

/// An operation with its operands. `[P, F]` is a tile of `P` partitions and `F` elements per
/// partition; a `[P, 1]` source of an elementwise operation broadcasts along the free axis.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `dst[M, N] (PSUM) = a[K, M]ᵀ · b[K, N]` (SBUF), added to `dst` when `acc` (pe).
    Matmul { dst: Ap, a: Ap, b: Ap, acc: bool },
    /// `dst[F, P] (PSUM) = src[P, F]ᵀ` (pe).
    Transpose { dst: Ap, src: Ap },
    /// `dst = func(src * scale + bias)` (act).
    Activation {
        func: ActFunc,
        dst: Ap,
        src: Ap,
        scale: Scale,
        bias: Option<Ap>,
    },
    /// `dst = a op b` (dve, pool).
    TensorTensor { op: AluOp, dst: Ap, a: Ap, b: Ap },
    /// `dst = src op imm`, or `imm op src` when `reverse` (dve, pool).
    TensorScalar {
        op: AluOp,
        dst: Ap,
        src: Ap,
        imm: f32,
        reverse: bool,
    },
    /// `dst[P, 1] = reduce(src[P, F])` (dve).
    Reduce { op: ReduceOp, dst: Ap, src: Ap },
    /// `dst = src` (act, dve, pool).
    Copy { dst: Ap, src: Ap },
    /// `dst = value` (dve, pool).
    Memset { dst: Ap, value: f32 },
    /// `dst[p][f] = base + p * pstep + f * fstep` with `f` the flat free index (pool).
    Iota {
        dst: Ap,
        base: f32,
        pstep: f32,
        fstep: f32,
    },
    /// `dst[P, F] = scan(a[P, F], b[P, F], init[P, 1])` along the free axis (dve):
    /// `dst[p][i] = op1(op0(a[p][i], prev), b[p][i])` with `prev` the previous result, `init[p]`
    /// before the first ([`vocab::tensor_tensor_scan`]).
    TensorTensorScan {
        op0: AluOp,
        op1: AluOp,
        dst: Ap,
        a: Ap,
        b: Ap,
        init: Ap,
    },
    /// `dst[P, 6] = bn_stats(src[P, F])` (dve; [`vocab::bn_stats`]).
    BnStats { dst: Ap, src: Ap },
    /// `dst[P, 2] = bn_aggr(src[P, 3k])`: mean and variance (dve; [`vocab::bn_aggr`]).
    BnAggr { dst: Ap, src: Ap },
    /// `dst[F, P] (SBUF) = src[P, F]ᵀ` with `P` and `F` at most 32 (dve).
    VectorTranspose { dst: Ap, src: Ap },
    /// `dst[P, 8] = max8(src[P, F])`: each partition's 8 largest values, descending (dve;
    /// [`vocab::max8`]).
    Max8 { dst: Ap, src: Ap },
    /// `dst[P, 8] = find_index8(src[P, F], vals[P, 8])`: where each value is (dve;
    /// [`vocab::find_index8`]).
    FindIndex8 { dst: Ap, src: Ap, vals: Ap },
    /// `dst[P, F] = match_replace8(src[P, F], vals[P, 8], imm)` (dve;
    /// [`vocab::match_replace8`]).
    MatchReplace8 {
        dst: Ap,
        src: Ap,
        vals: Ap,
        imm: f32,
    },
    /// `dst[p][f] = rand_at(stream, p, f)` with `f` the flat free index: uniform values in
    /// `[0, 1)` (dve; [`vocab::rand_at`]).
    Rand { dst: Ap, stream: u32 },
    /// `dst[p][f] = dropout(stream, p, f, src[p][f], prob[p])`: `src` with the elements whose
    /// random value is below the partition's probability zeroed (dve; [`vocab::dropout`]).
    Dropout {
        dst: Ap,
        src: Ap,
        prob: Ap,
        stream: u32,
    },
    /// Within each quadrant of 32 partitions, row `i` of `dst[Pd, F]` takes row `mask[i]` of
    /// `src[Ps, F]`, or keeps its value where `mask[i]` is [`vocab::SHUFFLE_KEEP`] (dve;
    /// [`vocab::shuffle_source`]).
    Shuffle { dst: Ap, src: Ap, mask: [u8; 32] },
    /// `dst[P, count * elems]`: runs of `elems` elements of each row of `src[P, F]` at the
    /// indices of its group of `group` rows of `index[P, K]`, read column by column (pool;
    /// [`vocab::gather_index_at`], [`vocab::gather_starts`]). An index that is not an integer
    /// whose run fits in the row is a run-time error.
    LocalGather {
        dst: Ap,
        src: Ap,
        index: Ap,
        group: u32,
        elems: u32,
    },
    /// `dst[P, 2n] = sequence_bounds(src[P, n])` (pool; [`vocab::sequence_bounds`]).
    SequenceBounds { dst: Ap, src: Ap },
    /// A DMA transfer on `queue` between HBM and SBUF (sp). Elements pair up in row-major order of
    /// both sides (partition outermost on the tile side). Transfers of one queue complete in
    /// issue order; predicated off, it moves nothing but signals in that order (see [`Cmp`]).
    ///
    /// With `index` (an indirect DMA, NKI's gather or scatter: text `dma qN DST, SRC index IDX`)
    /// the HBM side's outermost dimension `(B, stride)` is the rows an index may name: partition
    /// `p` of the tile side pairs with HBM index `idx[p]` (the first element of partition `p` of
    /// the `[np, 1]` SBUF tile `index`, read when the transfer issues) along it, instead of `p`,
    /// and the inner dimensions as usual. An index that is not an integer in `0..B` is a run-time
    /// error, or, with `mode.skip_oob`, moves nothing for that partition (an integer index
    /// outside `0..B`, negative ones included). The queue moves one descriptor per row (each
    /// row's bytes rounded up separately).
    ///
    /// With `mode.accumulate` (text `add`; HBM destination) each element is added to the one it
    /// lands on instead of overwriting it, in the transfer's element order (equal rows of an
    /// indirect transfer add up), each sum rounded to the destination's dtype.
    Dma {
        queue: u8,
        dst: DmaSide,
        src: DmaSide,
        index: Option<Ap>,
        mode: DmaMode,
    },
    /// Add one to a semaphore.
    Signal { sem: usize },
    /// Block the engine until the semaphore's count is at least `value`.
    Wait { sem: usize, value: Expr },
}

impl Op {
    /// The opcode's name in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Matmul { .. } => "matmul",
            Op::Transpose { .. } => "transpose",
            Op::Activation { .. } => "activation",
            Op::TensorTensor { .. } => "tensor_tensor",
            Op::TensorScalar { .. } => "tensor_scalar",
            Op::Reduce { .. } => "reduce",
            Op::Copy { .. } => "copy",
            Op::Memset { .. } => "memset",
            Op::Iota { .. } => "iota",
            Op::TensorTensorScan { .. } => "tensor_tensor_scan",
            Op::BnStats { .. } => "bn_stats",
            Op::BnAggr { .. } => "bn_aggr",
            Op::VectorTranspose { .. } => "vector_transpose",
            Op::Max8 { .. } => "max8",
            Op::FindIndex8 { .. } => "find_index8",
            Op::MatchReplace8 { .. } => "match_replace8",
            Op::Rand { .. } => "rand",
            Op::Dropout { .. } => "dropout",
            Op::Shuffle { .. } => "shuffle",
            Op::LocalGather { .. } => "local_gather",
            Op::SequenceBounds { .. } => "sequence_bounds",
            Op::Dma { .. } => "dma",
            Op::Signal { .. } => "signal",
            Op::Wait { .. } => "wait",
        }
    }
}

/// Where an instruction came from, for the trace.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Meta {
    /// The source line of the kernel statement.
    pub line: Option<u32>,
    /// The pipeline stage.
    pub stage: Option<u32>,
    /// The kernel statement's text.
    pub stmt: Option<String>,
}

/// An instruction: an optional guard, the operation, an optional semaphore signalled when it
/// completes (for a DMA: when its transfer completes; predicated off, see [`Cmp`]), and metadata.
/// Equality ignores `pos`.
#[derive(Clone, Debug)]
pub struct Inst {
    /// A conjunction; empty means always on.
    pub pred: Vec<Cmp>,
    pub op: Op,
    pub signal: Option<usize>,
    pub meta: Meta,
    /// The line of the program text (1-based; 0 when built in code). Not part of the text form.
    pub pos: u32,
}

impl PartialEq for Inst {
    fn eq(&self, other: &Inst) -> bool {
        self.pred == other.pred
            && self.op == other.op
            && self.signal == other.signal
            && self.meta == other.meta
    }
}

impl Inst {
    pub fn new(op: Op) -> Inst {
        Inst {
            pred: Vec::new(),
            op,
            signal: None,
            meta: Meta::default(),
            pos: 0,
        }
    }
}

/// A hardware loop: `loop rK = 0..trip { body }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub reg: Reg,
    pub trip: u64,
    pub body: Vec<Stmt>,
}

/// An element of a stream. Instructions are stored inline (they are most of a stream, and the
/// simulator walks them in its inner loop), so the enum is as large as an instruction.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Stmt {
    Inst(Inst),
    Loop(Loop),
}

/// Whether a tensor is read or written by the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Given by the caller.
    Input,
    /// Returned to the caller (starts as zeros).
    Output,
    /// Working memory of the program (HBM scratch): starts undefined (an element the program has
    /// not written reads as poison, and writing poison into it is a run-time error); neither
    /// given nor returned.
    Scratch,
    /// A constant (NKI's `nl.shared_constant`): its values are part of the program
    /// ([`TensorDecl::values`]), filled in HBM by the loader before the program starts; never
    /// written.
    Const,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Input, Role::Output, Role::Scratch, Role::Const];

    /// The role's name in the program text.
    pub fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
            Role::Scratch => "scratch",
            Role::Const => "const",
        }
    }
}

/// An HBM tensor: a row-major array.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub role: Role,
    /// The values of a [`Role::Const`] tensor, row-major, one per element (empty for the other
    /// roles).
    pub values: Vec<f32>,
}

impl TensorDecl {
    pub fn elems(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }
}

/// A whole program.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub tensors: Vec<TensorDecl>,
    pub semaphores: Vec<String>,
    /// One stream per engine, indexed by [`Engine::index`].
    pub streams: [Vec<Stmt>; 5],
}

impl Program {
    pub fn stream(&self, e: Engine) -> &[Stmt] {
        &self.streams[e.index()]
    }

    pub fn tensor_index(&self, name: &str) -> Option<usize> {
        self.tensors.iter().position(|t| t.name == name)
    }

    pub fn semaphore_index(&self, name: &str) -> Option<usize> {
        self.semaphores.iter().position(|s| s == name)
    }
}

/// The tile operands of an operation, destination first (DMA tile sides included).
pub fn tile_operands(op: &Op) -> Vec<&Ap> {
    match op {
        Op::Matmul { dst, a, b, .. } => vec![dst, a, b],
        Op::Transpose { dst, src }
        | Op::Copy { dst, src }
        | Op::Reduce { dst, src, .. }
        | Op::BnStats { dst, src }
        | Op::BnAggr { dst, src }
        | Op::VectorTranspose { dst, src }
        | Op::Max8 { dst, src }
        | Op::Shuffle { dst, src, .. }
        | Op::SequenceBounds { dst, src } => vec![dst, src],
        Op::LocalGather {
            dst, src, index, ..
        } => vec![dst, src, index],
        Op::FindIndex8 { dst, src, vals } | Op::MatchReplace8 { dst, src, vals, .. } => {
            vec![dst, src, vals]
        }
        Op::Dropout { dst, src, prob, .. } => vec![dst, src, prob],
        Op::TensorTensorScan {
            dst, a, b, init, ..
        } => vec![dst, a, b, init],
        Op::Activation {
            dst,
            src,
            scale,
            bias,
            ..
        } => {
            let mut v = vec![dst, src];
            if let Scale::Tile(t) = scale {
                v.push(t);
            }
            if let Some(b) = bias {
                v.push(b);
            }
            v
        }
        Op::TensorTensor { dst, a, b, .. } => vec![dst, a, b],
        Op::TensorScalar { dst, src, .. } => vec![dst, src],
        Op::Memset { dst, .. } | Op::Iota { dst, .. } | Op::Rand { dst, .. } => vec![dst],
        Op::Dma {
            dst, src, index, ..
        } => [dst, src]
            .into_iter()
            .filter_map(|s| match s {
                DmaSide::Tile(a) => Some(a),
                DmaSide::Hbm(_) => None,
            })
            .chain(index)
            .collect(),
        Op::Signal { .. } | Op::Wait { .. } => vec![],
    }
}
