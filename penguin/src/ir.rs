//! The data of Penguin IR: a kernel as a loop tree of statements over tensors.
//!
//! A [`Function`] owns four primary maps (tensors, axes, statements, instructions) and side tables
//! (source spans, source annotations, stage tags). Its `body` is the ordered list of top-level
//! statements; a statement is either a group of instructions or a loop ([`Axis`]) whose own `body`
//! is again an ordered list of statements.
//!
//! The accesses ([`access`]), operations ([`op`]) and masks ([`mask`]) of instructions have files
//! of their own; this file holds the tensors, loops, statements, instructions and the
//! [`Function`] that owns them.
//!
//! Invariants (checked by [`crate::verify`], not by construction):
//! - every statement appears exactly once in the tree, every instruction in exactly one statement,
//!   and every axis is the loop of exactly one statement;
//! - every access names one start expression and one size per tensor dimension, and one slot
//!   expression per block dimension of its tensor; the tile it selects lies inside the tensor for
//!   every iteration of the enclosing loops;
//! - affine expressions (starts, slots, predicates, mask bounds) mention only the induction
//!   variables of loops that enclose the statement;
//! - a mask ([`InstData::mask`]) is only on an operation [`InstData::maskable`] allows, and an
//!   access may leave its tensor only where the mask drops it;
//! - an operation's operand count, memories and shapes are those [`Op`] documents.

mod access;
mod mask;
mod op;

pub use access::{
    dma_rows_per_partition, Access, Operand, PatAxis, Pattern, MAX_PATTERN_ENUMERATION,
};
pub use mask::{mask_box, ActiveBox, MaskBound, TileDim};
pub use op::{EngineClass, Op, Scale};

use crate::affine::{AffineExpr, Predicate};
use crate::entities::{Axis, Inst, Stmt, Tensor};
use cranelift_entity::{PrimaryMap, SecondaryMap};
use std::fmt;

// The element types and the engines' operations are the shared vocabulary's.
pub use vocab::{canonical_nan, maximum, minimum, ActFunc, AluOp, DType, ReduceOp};

/// A byte range in the kernel's source file, kept beside the IR for diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SrcSpan {
    pub start: u32,
    pub end: u32,
}

impl SrcSpan {
    pub fn new(range: std::ops::Range<usize>) -> Self {
        SrcSpan {
            start: range.start as u32,
            end: range.end as u32,
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Memory {
    Hbm,
    Sbuf,
    Psum,
}

impl Memory {
    pub fn name(self) -> &'static str {
        match self {
            Memory::Hbm => "hbm",
            Memory::Sbuf => "sbuf",
            Memory::Psum => "psum",
        }
    }
}

/// The most elements a constant tensor ([`TensorKind::Const`]) holds.
pub const MAX_CONST_VALUES: usize = 1 << 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    /// A kernel parameter (HBM, read-only).
    Input,
    /// An HBM array named by `return`.
    Output,
    /// Everything else: on-chip tiles and buffers, and HBM scratch.
    Local,
    /// A constant array (`nl.shared_constant`): HBM, read-only, its values computed when the
    /// kernel was traced and held in [`Function::consts`]; the program's loader fills it, as
    /// it fills the parameters, but no caller gives it.
    Const,
}

impl TensorKind {
    pub fn name(self) -> &'static str {
        match self {
            TensorKind::Input => "input",
            TensorKind::Output => "output",
            TensorKind::Local => "local",
            TensorKind::Const => "const",
        }
    }

    /// Whether the tensor is initialised on entry and never written: a parameter or a constant.
    pub fn is_read_only(self) -> bool {
        matches!(self, TensorKind::Input | TensorKind::Const)
    }
}

/// One dimension of a tensor's allocated block: the tensor holds `count` copies of its shape,
/// selected along `axis` by the slot expressions of its accesses (taken modulo `count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockDim {
    pub axis: Axis,
    pub count: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    /// The source name, made unique within the function (`t`, `t.1`, ...).
    pub name: String,
    pub memory: Memory,
    pub dtype: DType,
    /// `[rows, cols]` for HBM, `[partitions, free]` on chip.
    pub shape: Vec<u64>,
    pub kind: TensorKind,
    /// The allocated block shape beyond one copy: empty for an ordinary tensor. The pipeliner and
    /// `multi_buffer` add a dimension along the pipelined axis. On an SBUF tensor it widens the
    /// allocation; on a PSUM tensor it is the depth of the ring of banks that the backend's PSUM
    /// rotation realises (the interpreter gives each slot its own storage, as the ring gives each
    /// its own bank).
    pub block: Vec<BlockDim>,
}

impl TensorData {
    /// Elements in one copy of the shape (saturating: a size past `u64` is past every limit).
    pub fn elems(&self) -> u64 {
        self.shape.iter().fold(1, |a, &n| a.saturating_mul(n))
    }

    /// Copies held: the product of the block dimensions (saturating).
    pub fn slots(&self) -> u64 {
        (self.block.iter()).fold(1, |a, b| a.saturating_mul(u64::from(b.count)))
    }

    /// Bytes per partition of the whole allocation (all slots), for on-chip tensors (saturating).
    pub fn bytes_per_partition(&self) -> u64 {
        let free = self
            .shape
            .iter()
            .skip(1)
            .fold(1, |a: u64, &n| a.saturating_mul(n));
        free.saturating_mul(self.dtype.size_bytes())
            .saturating_mul(self.slots())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// `nl.affine_range`: iterations are independent but for declared carried buffers.
    Affine,
    /// `nl.sequential_range`.
    Sequential,
    /// Python `range`.
    Range,
}

impl LoopKind {
    pub fn name(self) -> &'static str {
        match self {
            LoopKind::Affine => "affine",
            LoopKind::Sequential => "sequential",
            LoopKind::Range => "range",
        }
    }
}

/// What the pipeliner did to a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pipelined {
    pub num_stages: u32,
    /// The trip count before the loop was extended to `trip + num_stages - 1`.
    pub orig_trip: i64,
    /// The extended loop was peeled ([`crate::pipeline::peel`]): the loop is only its steady
    /// state, the `max(0, trip - num_stages + 1)` extended iterations from `lb + num_stages - 1`
    /// where every stage runs, and its prologue and epilogue are copies beside it.
    pub peeled: bool,
}

impl Pipelined {
    /// The iterations the loop runs: the extended loop's `trip + num_stages - 1`, or, peeled,
    /// its steady state's `max(0, trip - num_stages + 1)`.
    pub fn loop_trip(&self) -> i128 {
        let extended = i128::from(self.orig_trip) + i128::from(self.num_stages) - 1;
        if self.peeled {
            (extended - 2 * (i128::from(self.num_stages) - 1)).max(0)
        } else {
            extended
        }
    }
}

/// The text form's loop attribute: `pipelined(stages=N, trip=T)`, with `, peeled` when peeled.
impl fmt::Display for Pipelined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pipelined(stages={}, trip={}",
            self.num_stages, self.orig_trip
        )?;
        if self.peeled {
            f.write_str(", peeled")?;
        }
        f.write_str(")")
    }
}

/// Loop attributes, from the keywords of the range call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AxisAttrs {
    pub num_stages: Option<u32>,
    /// `num_stages="auto"`: the compiler chooses the stages. The driver's stage chooser replaces
    /// it by `stage_id` annotations on the body (Mode B) before the pipeliner runs; the pipeliner
    /// reports one that is left beside the user's own `stage_id`s.
    pub auto_stages: bool,
    pub disable_auto_buffer: bool,
    pub disable_execution_order_check: bool,
    pub multi_buffer: Option<u32>,
    /// Set by the pipeliner on the loop it extended.
    pub pipelined: Option<Pipelined>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AxisData {
    /// The induction variable's source name, unique within the function.
    pub iv_name: String,
    pub kind: LoopKind,
    /// The induction variable runs `lb, lb + 1, ..., ub - 1`.
    pub lb: i64,
    pub ub: i64,
    pub attrs: AxisAttrs,
    pub body: Vec<Stmt>,
}

impl AxisData {
    pub fn trip_count(&self) -> i64 {
        (self.ub - self.lb).max(0)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// One source statement: its nested calls first, in evaluation order, then the outer call.
    Insts(Vec<Inst>),
    /// A nested loop.
    Loop(Axis),
}

#[derive(Clone, Debug, PartialEq)]
pub struct StmtData {
    pub kind: StmtKind,
    /// Guards that must all hold for the statement to run in an iteration. They are empty before
    /// pipelining; the pipeliner adds the per-stage prologue and epilogue guards.
    pub preds: Vec<Predicate>,
}

/// The `stage_id` and `execution_order` keywords written on a statement in the source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StmtAnnot {
    pub stage_id: Option<u32>,
    pub execution_order: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct InstData {
    pub op: Op,
    pub engine: EngineClass,
    pub dst: Operand,
    pub srcs: Vec<Operand>,
    /// The mask (a conjunction; empty: every element): the instruction reads and writes only the
    /// elements of its iteration space ([`InstData::iter_shape`]) where every bound holds; the
    /// destination's other elements keep their values. Never on `matmul`, `transpose` or `iota`.
    pub mask: Vec<MaskBound>,
}

impl InstData {
    /// An unmasked instruction.
    pub fn new(op: Op, engine: EngineClass, dst: Operand, srcs: Vec<Operand>) -> Self {
        InstData {
            op,
            engine,
            dst,
            srcs,
            mask: Vec::new(),
        }
    }

    /// The `[P, F]` space a mask's indices range over: the source's shape for the operations
    /// that reduce the free axis to a fixed width (`reduce`, `bn_stats`: the mask selects the
    /// elements reduced), the destination's otherwise. `None` when the access is not
    /// two-dimensional.
    pub fn iter_shape(&self) -> Option<[u64; 2]> {
        let acc = match self.op {
            Op::Reduce { .. } | Op::BnStats | Op::Scatter { .. } => &self.srcs.first()?.access,
            _ => &self.dst.access,
        };
        // A pattern's value, not its bounding box, is what the instruction iterates over.
        let shape = match &acc.pattern {
            Some(p) => p.value_shape(),
            None => acc.size.clone(),
        };
        match shape.as_slice() {
            &[p, f] => Some([p, f]),
            _ => None,
        }
    }

    /// Whether the instruction writes the whole of a destination tensor of shape `shape` in
    /// every execution: it reaches every element (a whole box, or a pattern that reaches each
    /// element once, [`Access::covers_whole`]) and carries no mask.
    pub fn writes_whole(&self, shape: &[u64]) -> bool {
        self.mask.is_empty() && !self.op.is_indirect() && self.dst.access.covers_whole(shape)
    }

    /// The sources whose access is exactly what the instruction reads: all but a gather's HBM
    /// box, which only bounds the rows its indices name (analyses that must not over-approximate
    /// reads, such as the unwritten-read looks, skip it).
    pub fn exact_srcs(&self) -> impl Iterator<Item = &Operand> {
        let gather = matches!(self.op, Op::Gather { .. });
        (self.srcs.iter().enumerate())
            .filter(move |(k, _)| !(gather && *k == 0))
            .map(|(_, o)| o)
    }

    /// Whether an operation may carry a mask (its elements map one to one, or by row, onto the
    /// iteration space).
    pub fn maskable(op: &Op) -> bool {
        // A random value depends on the element's position in the tile, which a clip would move.
        !matches!(
            op,
            Op::Matmul { .. }
                | Op::Transpose
                | Op::VectorTranspose
                | Op::Iota { .. }
                | Op::Rand { .. }
                | Op::Dropout { .. }
                | Op::Shuffle { .. }
                | Op::LocalGather { .. }
                | Op::SequenceBounds
        )
    }

    /// Whether a mask of a maskable operation may bound the free index: not for the operations
    /// whose free elements are a fixed-width result of the whole row (`bn_aggr`'s triples, the
    /// eight values of `max8`, `nc_find_index8` and `nc_match_replace8`), where dropping free
    /// elements has no meaning.
    pub fn free_maskable(op: &Op) -> bool {
        !matches!(
            op,
            Op::BnAggr | Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. }
        )
    }

    /// Why this instruction may not carry its mask: an operation that takes none, or a bound on
    /// the free index of one whose free elements cannot be dropped ([`InstData::free_maskable`]).
    /// `None` when the mask is empty or allowed.
    pub fn mask_refusal(&self) -> Option<String> {
        if self.mask.is_empty() {
            return None;
        }
        if !InstData::maskable(&self.op) {
            return Some(format!("`{}` cannot carry a mask", self.op.name()));
        }
        let free_bound = self.mask.iter().any(|b| b.dim == TileDim::Free);
        (free_bound && !InstData::free_maskable(&self.op)).then(|| {
            format!(
                "`{}` cannot carry a mask on the free index (its free elements are a \
                 fixed-width result of the whole row)",
                self.op.name()
            )
        })
    }

    /// Every affine expression of the instruction: operand starts and slots, then mask bounds.
    pub fn exprs_mut(&mut self) -> impl Iterator<Item = &mut AffineExpr> {
        let operands = std::iter::once(&mut self.dst).chain(self.srcs.iter_mut());
        operands
            .flat_map(|o| o.access.start.iter_mut().chain(o.access.slots.iter_mut()))
            .chain(self.mask.iter_mut().map(|b| &mut b.bound))
    }

    /// The unmasked instruction that does what this one does where `active` is its active box
    /// (of [`InstData::iter_shape`] `shape`): each operand dimension as long as the iteration
    /// space's is cut to the box, a broadcast (length-1) dimension kept.
    pub fn clipped(&self, shape: [u64; 2], active: ActiveBox) -> InstData {
        // An indirect DMA's HBM box is every row an index may name, not the iteration space's
        // partitions: only its free axis is cut (the index tile's rows are).
        let (gather, scatter) = (
            matches!(self.op, Op::Gather { .. }),
            matches!(self.op, Op::Scatter { .. }),
        );
        let clip = |o: &Operand, is_hbm: bool| {
            let mut o = o.clone();
            if let Some(p) = &o.access.pattern {
                let value = p.value_shape();
                let mut p = p.clone();
                for d in 0..2 {
                    if value[d] == shape[d] && active[d] != (0, shape[d]) {
                        p.clip_index(d, active[d], &mut o.access.start);
                    }
                }
                if let Some(size) = p.bounding_box(o.access.start.len()) {
                    o.access.size = size;
                }
                o.access.pattern = Some(p);
                return o;
            }
            for d in 0..2 {
                if (d == 1 || !is_hbm) && o.access.size.get(d) == Some(&shape[d]) {
                    let (lo, hi) = active[d];
                    if let Some(e) = o.access.start.get_mut(d) {
                        // Saturating: a start this large is out of range anyway, and reported.
                        let c = e.constant_term().saturating_add(lo as i64);
                        *e = AffineExpr::from_terms(e.terms().iter().copied(), c);
                    }
                    o.access.size[d] = hi - lo;
                }
            }
            o
        };
        InstData {
            op: self.op.clone(),
            engine: self.engine,
            dst: clip(&self.dst, scatter),
            srcs: (self.srcs.iter().enumerate())
                .map(|(k, o)| clip(o, k == 0 && gather))
                .collect(),
            mask: Vec::new(),
        }
    }
}

/// One kernel in Penguin IR.
#[derive(Clone, Debug, Default)]
pub struct Function {
    pub name: String,
    pub tensors: PrimaryMap<Tensor, TensorData>,
    pub axes: PrimaryMap<Axis, AxisData>,
    pub stmts: PrimaryMap<Stmt, StmtData>,
    pub insts: PrimaryMap<Inst, InstData>,
    /// The top-level statements, in program order.
    pub body: Vec<Stmt>,
    /// The kernel's parameters, in signature order (all `TensorKind::Input`).
    pub params: Vec<Tensor>,
    /// The returned arrays, in `return` order (all `TensorKind::Output`).
    pub outputs: Vec<Tensor>,
    /// The values of every `TensorKind::Const` tensor (and of no other), row-major, one per
    /// element, each exactly representable in the tensor's dtype.
    pub consts: std::collections::BTreeMap<Tensor, Vec<f32>>,

    /// Source annotations of statements (`stage_id`, `execution_order`).
    pub annots: SecondaryMap<Stmt, StmtAnnot>,
    /// The pipeline stage a statement was placed in, set by the pipeliner.
    pub stage_tags: SecondaryMap<Stmt, Option<u32>>,

    pub tensor_spans: SecondaryMap<Tensor, Option<SrcSpan>>,
    pub axis_spans: SecondaryMap<Axis, Option<SrcSpan>>,
    pub stmt_spans: SecondaryMap<Stmt, Option<SrcSpan>>,
    pub inst_spans: SecondaryMap<Inst, Option<SrcSpan>>,

    /// The names logs and diagnostics show, where the IR name is one the user never wrote: a
    /// temporary's (`_tensor_scalar.1`) is the variable it was assigned to or its operation and
    /// source position (`nl.multiply@12:9`); a name lowering made unique (`t.1`) is the source
    /// name and position (`t@14:5`). Not part of the IR: the text form neither prints nor reads
    /// it, and a pass that copies a tensor (or loop) copies its display name.
    pub tensor_display: SecondaryMap<Tensor, Option<String>>,
    pub axis_display: SecondaryMap<Axis, Option<String>>,
    /// Notes the front end has for the user that are not diagnostics (a kernel's hand-placed
    /// buffers are allocated by nkc); not part of the IR either.
    pub notes: Vec<String>,
    /// Parameters whose input arrays have another shape than their stored one (a 1-D vector
    /// the kernel views as rows of 64): the input's shape, of the same elements row-major.
    pub input_dims: std::collections::BTreeMap<Tensor, Vec<u64>>,
    /// HBM arrays declared with an integer dtype (`nl.uint32`, `np.int8`, ...), whose values
    /// every stage holds as float32: NKI's name of the dtype, which a run's output file has.
    /// Not part of the IR.
    pub int_dtypes: std::collections::BTreeMap<Tensor, &'static str>,
}

impl Function {
    pub fn new(name: impl Into<String>) -> Self {
        Function {
            name: name.into(),
            ..Function::default()
        }
    }

    /// Adds an instruction statement (not yet placed in the tree).
    pub fn add_inst_stmt(&mut self, insts: Vec<Inst>) -> Stmt {
        self.stmts.push(StmtData {
            kind: StmtKind::Insts(insts),
            preds: Vec::new(),
        })
    }

    /// Adds a loop statement for `axis` (not yet placed in the tree).
    pub fn add_loop_stmt(&mut self, axis: Axis) -> Stmt {
        self.stmts.push(StmtData {
            kind: StmtKind::Loop(axis),
            preds: Vec::new(),
        })
    }

    /// The statement list that holds `parent`'s children: the function body for `None`.
    pub fn block(&self, parent: Option<Axis>) -> &[Stmt] {
        match parent {
            None => &self.body,
            Some(axis) => &self.axes[axis].body,
        }
    }

    pub fn block_mut(&mut self, parent: Option<Axis>) -> &mut Vec<Stmt> {
        match parent {
            None => &mut self.body,
            Some(axis) => &mut self.axes[axis].body,
        }
    }

    /// Calls `f(stmt, enclosing loops, outermost first)` for every statement, in program order.
    pub fn walk_stmts(&self, mut f: impl FnMut(Stmt, &[Axis])) {
        fn go(
            func: &Function,
            block: &[Stmt],
            loops: &mut Vec<Axis>,
            f: &mut dyn FnMut(Stmt, &[Axis]),
        ) {
            for &stmt in block {
                f(stmt, loops);
                if let StmtKind::Loop(axis) = func.stmts[stmt].kind {
                    loops.push(axis);
                    go(func, &func.axes[axis].body, loops, f);
                    loops.pop();
                }
            }
        }
        go(self, &self.body, &mut Vec::new(), &mut f);
    }

    /// Applies `f` to every affine expression of statement `s` and of everything nested in it:
    /// predicates, tile starts, slot selectors and mask bounds.
    pub fn map_exprs(&mut self, s: Stmt, f: &dyn Fn(&AffineExpr) -> AffineExpr) {
        for g in &mut self.stmts[s].preds {
            g.expr = f(&g.expr);
        }
        match self.stmts[s].kind.clone() {
            StmtKind::Insts(insts) => {
                for i in insts {
                    for e in self.insts[i].exprs_mut() {
                        *e = f(e);
                    }
                }
            }
            StmtKind::Loop(inner) => {
                for c in self.axes[inner].body.clone() {
                    self.map_exprs(c, f);
                }
            }
        }
    }

    /// The name of `t` for the user: its display name ([`Function::tensor_display`]), else its
    /// IR name.
    pub fn display_name(&self, t: Tensor) -> &str {
        self.tensor_display
            .get(t)
            .and_then(|d| d.as_deref())
            .unwrap_or(&self.tensors[t].name)
    }

    /// The name of `a`'s induction variable for the user, as [`Function::display_name`].
    pub fn display_iv(&self, a: Axis) -> &str {
        self.axis_display
            .get(a)
            .and_then(|d| d.as_deref())
            .unwrap_or(&self.axes[a].iv_name)
    }

    /// A display name for an axis: its induction variable.
    pub fn axis_name(&self, axis: Axis) -> &str {
        self.axes
            .get(axis)
            .map_or("<undefined axis>", |a| a.iv_name.as_str())
    }

    /// Formats an affine expression with induction-variable names.
    pub fn display_affine<'a>(&'a self, e: &'a AffineExpr) -> impl fmt::Display + 'a {
        struct D<'a>(&'a Function, &'a AffineExpr);
        impl fmt::Display for D<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.1.fmt_with(f, &|a| self.0.axis_name(a).to_string())
            }
        }
        D(self, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(x: f32) -> u32 {
        x.to_bits()
    }

    #[test]
    fn maximum_and_minimum_leave_nothing_to_the_optimiser() {
        assert_eq!(bits(maximum(-0.0, 0.0)), bits(0.0));
        assert_eq!(bits(maximum(0.0, -0.0)), bits(0.0));
        assert_eq!(bits(minimum(0.0, -0.0)), bits(-0.0));
        assert_eq!(bits(minimum(-0.0, 0.0)), bits(-0.0));
        assert!(maximum(f32::NAN, 1.0).is_nan() && maximum(1.0, f32::NAN).is_nan());
        assert!(minimum(f32::NAN, 1.0).is_nan() && minimum(1.0, f32::NAN).is_nan());
        assert_eq!(maximum(2.0, -3.0), 2.0);
        assert_eq!(minimum(2.0, -3.0), -3.0);
        assert_eq!(bits(ActFunc::Relu.apply(-0.0)), bits(0.0));
        assert_eq!(ActFunc::Relu.apply(-5.0), 0.0);
        assert!(ActFunc::Relu.apply(f32::NAN).is_nan());
    }

    #[test]
    fn a_masked_pattern_clips_its_partition_axis_or_its_one_free_axis() {
        let ax = |count, step: [i64; 2]| PatAxis {
            count,
            step: step.to_vec(),
        };
        // Overlapping windows of rows: [128 rows, 3 window rows, 32 columns].
        let mut p = Pattern {
            axes: vec![ax(128, [1, 0]), ax(3, [1, 0]), ax(32, [0, 1])],
        };
        assert!(p.clips(0) && !p.clips(1));
        let mut start = vec![AffineExpr::constant(128), AffineExpr::constant(0)];
        p.clip_index(0, (0, 70), &mut start);
        assert_eq!(p.axes[0].count, 70);
        assert_eq!(p.bounding_box(2), Some(vec![72, 32]));
        assert_eq!(start[0].as_constant(), Some(128));
        // One free axis of step 2, cut to its elements 3..7.
        let mut q = Pattern {
            axes: vec![ax(8, [1, 0]), ax(1, [0, 5]), ax(10, [0, 2])],
        };
        assert!(q.clips(1));
        let mut start = vec![AffineExpr::constant(0), AffineExpr::constant(1)];
        q.clip_index(1, (3, 7), &mut start);
        assert_eq!(q.axes[2].count, 4);
        assert_eq!(start[1].as_constant(), Some(7));
    }

    #[test]
    fn every_nan_is_stored_as_the_canonical_one() {
        let odd = f32::from_bits(0xffc0_1234);
        assert!(odd.is_nan());
        assert_eq!(bits(canonical_nan(odd)), bits(f32::NAN));
        assert_eq!(bits(canonical_nan(-0.0)), bits(-0.0));
    }
}
