//! Emission of pseudo-ISA instructions from BIR: addresses, address rotation and DMA splitting.
//!
//! [`emit_nodes`] turns every BIR instruction into one pseudo-ISA instruction (a DMA into several:
//! it is split by partitions over the DMA queues as [`crate::codegen::queues`] planned, so that a loop
//! body's transfers move at the core's bandwidth rather than one queue's, and `sp`'s issue slots
//! do not become the bottleneck) with:
//! - addresses as expressions in the iteration registers (loop at depth `d` has register `rd`;
//!   the Penguin induction variable is `lb + rd`);
//! - **address rotation**: a tensor with block dimensions is a ring of physical slots, and an
//!   access with slot selector `iv + c` along a block of `N` slots addresses
//!   `base + ((rd + lb + c) mod N) * slot_bytes`, a modulo term of the program (PSUM slots are
//!   whole banks, so a PSUM ring rotates banks); the selector's coefficients are first reduced
//!   modulo `N`, so a multi-iv selector whose other coefficients are multiples of `N` (the flat
//!   iteration of a nest, [`crate::transform::emergent::nest`]) is one register's modulo term;
//! - its guard, from the BIR guards;
//! - its **footprints**: the rectangles (partitions × bytes, or HBM rows × columns) it reads and
//!   writes, as expressions, for the synchronisation analysis.
//!
//! Semaphores and waits are not emitted here (see `sync`). Invariant: nodes are in program order
//! (the sequential order of the kernel), which every engine's stream preserves.

use crate::codegen::alloc::{Allocation, Place};
use crate::codegen::bir::{BNode, Bir, BirInst, BirLoop};
pub use crate::codegen::entities::Node;
use crate::codegen::queues::QueuePlan;
pub use crate::cost::dma::dma_pieces;
use crate::error::{BackendError, EmitBug};
use cranelift_entity::{PrimaryMap, SecondaryMap};
use penguin::affine::{AffineExpr, CmpOp as PCmp};
use penguin::ir::{self as pir, Memory, Operand};
use penguin::{Axis, Function, Tensor};
use runtime_sim::isa::{
    self, Ap, Cmp, CmpOp, Dim, DmaMode, DmaSide, Engine, Expr, HbmAp, Inst, Meta, Op, Reg, Term,
};
use runtime_sim::sim::race::shape::{placed_meet, Placed, Shape};
use std::collections::HashMap;
use std::sync::Arc;

/// Where a footprint lies: the simulator's own spaces (SBUF, PSUM, an HBM tensor by index).
pub use runtime_sim::sim::memory::Space;

/// A rectangle an instruction touches: rows `[r0, r0 + nr)` (partitions, or HBM rows) and columns
/// `[c0, c0 + nc)` (bytes of each partition, or HBM elements of each row).
#[derive(Clone, Debug)]
pub struct Foot {
    pub space: Space,
    /// The logical buffer.
    pub tensor: Tensor,
    /// The bytes of every partition the buffer may occupy (all slots; HBM: everything; HBM
    /// scratch: its elements of the arena). Buffers may share memory (the allocator colours by
    /// live ranges), so conflicts are physical.
    pub region: (u64, u64),
    pub r0: Expr,
    pub nr: u64,
    pub c0: Expr,
    pub nc: u64,
    /// What it touches exactly, when the rectangle says more ([`Exact`]); `None`: the whole
    /// rectangle.
    pub exact: Option<Exact>,
    pub write: bool,
}

/// The exact bytes of a footprint whose rectangle over-approximates them, as the race detector's
/// canonical runs ([`Shape`]): two pieces of one tile that interleave (a reversed block, every
/// other column), or two transfers of one HBM tensor whose patterns interleave (a partition axis
/// in the middle of an N-D tensor, one pixel per row), are disjoint by it although their
/// rectangles overlap.
#[derive(Clone, Debug)]
pub enum Exact {
    /// A tile: the bytes of each partition within `[c0, c0 + nc)` that its strided pattern
    /// touches, from `c0`.
    Cols(Arc<Shape>),
    /// An HBM transfer: the elements of the row-major tensor (or scratch arena) from `start`,
    /// its pattern's flat start: a strided shape, or one interval of `len` elements. `sparse`:
    /// they are fewer than the rectangle's (otherwise the rectangle is exact, and two
    /// rectangles' overlap is the answer without it).
    Flat {
        start: Expr,
        shape: Option<Arc<Shape>>,
        len: u64,
        sparse: bool,
    },
}

impl Exact {
    /// The HBM side of a transfer: its flat pattern, started at `start`; `boxed` is how many
    /// elements its rectangle holds.
    pub fn flat(h: &HbmAp, boxed: u64) -> Exact {
        let dims: Vec<(u64, i64)> = h.dims.iter().map(|d| (d.size, d.stride)).collect();
        let len = 1
            + (dims.iter())
                .map(|&(n, s)| n.saturating_sub(1) * s.unsigned_abs())
                .sum::<u64>();
        let shape = Shape::strided(&dims, 1).map(Arc::new);
        let size = shape.as_ref().map_or(len, |s| s.size());
        Exact::Flat {
            start: h.start.clone(),
            shape,
            len,
            sparse: size < boxed,
        }
    }
}

/// Whether two footprints that may meet (one memory; rectangles overlapping at these
/// instances) touch a common byte, from their exact parts: `cols` are the two column starts,
/// `flat` evaluates an [`Exact::Flat`] start at the instance. Without an exact part on both
/// sides of one kind, the rectangles decide (`true`).
pub fn exact_meet(
    (a, ac): (&Foot, i128),
    (b, bc): (&Foot, i128),
    flat: impl Fn(&Expr, bool) -> i128,
) -> bool {
    /// A tile's columns: strided ([`Exact::Cols`]) or the whole `[c0, c0 + nc)`.
    fn cols(f: &Foot, at: i128) -> Placed<'_> {
        let shape = match &f.exact {
            Some(Exact::Cols(s)) => Some(&**s),
            _ => None,
        };
        Placed {
            shape,
            len: f.nc,
            at,
        }
    }
    match (&a.exact, &b.exact) {
        (
            Some(Exact::Flat {
                start: sa,
                shape: ha,
                len: la,
                ..
            }),
            Some(Exact::Flat {
                start: sb,
                shape: hb,
                len: lb,
                ..
            }),
        ) => placed_meet(
            Placed {
                shape: ha.as_deref(),
                len: *la,
                at: flat(sa, true),
            },
            Placed {
                shape: hb.as_deref(),
                len: *lb,
                at: flat(sb, false),
            },
        ),
        (Some(Exact::Flat { .. }), _) | (_, Some(Exact::Flat { .. })) => true,
        _ => placed_meet(cols(a, ac), cols(b, bc)),
    }
}

/// One emitted instruction in its loop nest.
#[derive(Clone, Debug)]
pub struct NodeData {
    pub engine: Engine,
    pub inst: Inst,
    /// Enclosing BIR loops, outermost first (loop at index `d` has register `rd`).
    pub loops: Vec<BirLoop>,
    pub foot: Vec<Foot>,
    /// The BIR instruction it comes from.
    pub bir: BirInst,
}

impl NodeData {
    pub fn queue(&self) -> Option<u8> {
        match self.inst.op {
            Op::Dma { queue, .. } => Some(queue),
            _ => None,
        }
    }
}

/// The emitted kernel before synchronisation.
#[derive(Clone, Debug)]
pub struct Emitted {
    /// The emitted instructions in program order (a BIR instruction may give several: a DMA's
    /// pieces): a [`Node`] is one, and comparing nodes compares their program order.
    pub nodes: PrimaryMap<Node, NodeData>,
    /// The loop tree over node indices.
    pub tree: Vec<ENode>,
    /// `(trip, depth)` per BIR loop.
    pub loops: SecondaryMap<BirLoop, (u64, usize)>,
}

impl Emitted {
    /// Which instance of node `i` runs when its enclosing loops' registers hold `regs`
    /// (outermost first): the iteration numbers, row-major over the loops' trip counts.
    pub fn instance_of(&self, i: Node, regs: &[i64]) -> i64 {
        self.nodes[i]
            .loops
            .iter()
            .enumerate()
            .fold(0i64, |acc, (d, &l)| acc * self.loops[l].0 as i64 + regs[d])
    }
}

/// The loop tree of the emitted kernel: emitted nodes by index, and BIR loops.
#[derive(Clone, Debug)]
pub enum ENode {
    Inst(Node),
    Loop(BirLoop, Vec<ENode>),
}

/// The 1-based line of byte `offset` of `text` (the last line past its end).
pub fn line_of(text: &str, offset: u32) -> u32 {
    let start = (offset as usize).min(text.len());
    text.get(..start).unwrap_or(text).matches('\n').count() as u32 + 1
}

/// The byte offsets of the newlines of `text`, in order: the line of an offset is one more than
/// the number of them before it ([`line_of`] by binary search, so that emitting a kernel costs
/// its size, not its size times its lines).
fn newlines(text: &str) -> Vec<u32> {
    (text.bytes().enumerate())
        .filter(|&(_, b)| b == b'\n')
        .map(|(k, _)| k as u32)
        .collect()
}

/// Source text, for the trace's metadata.
pub struct SourceInfo<'a> {
    pub text: &'a str,
}

/// Emits every BIR instruction.
pub fn emit_nodes(
    func: &Function,
    bir: &Bir,
    alloc: &Allocation,
    queues: &QueuePlan,
    src: Option<&SourceInfo<'_>>,
) -> Result<Emitted, BackendError> {
    let mut regs: HashMap<Axis, (Reg, i64)> = HashMap::new();
    for l in bir.loops.values() {
        regs.insert(l.axis, (Reg(l.depth as u8), l.lb));
    }
    let mut cx = Emit {
        func,
        bir,
        alloc,
        src,
        regs,
        nodes: PrimaryMap::new(),
        queues,
        newlines: src.map(|s| newlines(s.text)).unwrap_or_default(),
    };
    let tree = cx.block(&bir.body)?;
    Ok(Emitted {
        nodes: cx.nodes,
        tree,
        loops: bir
            .loops
            .iter()
            .map(|(k, l)| (k, (l.trip, l.depth)))
            .collect(),
    })
}

struct Emit<'a> {
    func: &'a Function,
    bir: &'a Bir,
    alloc: &'a Allocation,
    src: Option<&'a SourceInfo<'a>>,
    regs: HashMap<Axis, (Reg, i64)>,
    nodes: PrimaryMap<Node, NodeData>,
    /// The queue plan the modulo scheduler costed ([`crate::codegen::queues::compute_queue_plan`],
    /// computed once per plan of the kernel, in the `modulo` pass).
    queues: &'a QueuePlan,
    /// The newlines of the source text ([`newlines`]).
    newlines: Vec<u32>,
}

/// A tile operand resolved to an access pattern and a footprint.
struct Tile {
    ap: Ap,
    foot: Foot,
}

impl Emit<'_> {
    fn block(&mut self, nodes: &[BNode]) -> Result<Vec<ENode>, BackendError> {
        let mut out = Vec::new();
        for &n in nodes {
            match n {
                BNode::Loop(l) => {
                    let body = self.block(&self.bir.loops[l].body)?;
                    out.push(ENode::Loop(l, body));
                }
                BNode::Inst(i) => {
                    for idx in self.inst(i)? {
                        out.push(ENode::Inst(idx));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The span of instruction `i`.
    fn at(&self, i: BirInst) -> Option<penguin::SrcSpan> {
        self.bir.insts[i].span
    }

    /// `e` over the registers.
    fn expr(&self, e: &AffineExpr) -> Expr {
        let mut out = Expr::constant(e.constant_term());
        for &(axis, c) in e.terms() {
            match self.regs.get(&axis) {
                Some(&(reg, lb)) => {
                    out.terms.push(Term::Lin { coeff: c, reg });
                    out.constant += c * lb;
                }
                // The verifier guarantees that only enclosing loops' variables appear.
                None => unreachable!("an affine expression names a loop that does not enclose it"),
            }
        }
        out
    }

    fn meta(&self, i: BirInst) -> Meta {
        let bi = &self.bir.insts[i];
        let mut m = Meta {
            line: None,
            stage: bi.stage,
            stmt: None,
        };
        if let (Some(src), Some(span)) = (self.src, bi.span) {
            let start = (span.start as usize).min(src.text.len());
            // (`line_of`, by binary search: the newlines before `start`.)
            m.line = Some(self.newlines.partition_point(|&k| (k as usize) < start) as u32 + 1);
            let end = (span.end as usize).clamp(start, src.text.len());
            let text = src.text.get(start..end).unwrap_or("");
            let first = text.lines().next().unwrap_or("").trim();
            if !first.is_empty() {
                m.stmt = Some(first.replace('"', "'"));
            }
        }
        m
    }

    fn guard(&self, i: BirInst) -> Vec<Cmp> {
        self.bir.insts[i]
            .guards
            .iter()
            .map(|p| Cmp {
                lhs: self.expr(&p.expr),
                op: match p.cmp {
                    PCmp::Ge => CmpOp::Ge,
                    PCmp::Lt => CmpOp::Lt,
                    PCmp::Eq => CmpOp::Eq,
                },
                rhs: Expr::constant(p.bound),
            })
            .collect()
    }

    fn tile(&self, i: BirInst, o: &Operand, write: bool) -> Result<Tile, BackendError> {
        let t = &self.func.tensors[o.tensor];
        let dtype = t.dtype;
        let esize = t.dtype.size_bytes() as i64;
        let (mem, space, base, slot_bytes) = match self.alloc.places.get(&o.tensor) {
            Some(&Place::Sbuf { base, slot_bytes }) => {
                (isa::Mem::Sbuf, Space::Sbuf, base, slot_bytes)
            }
            Some(&Place::Psum { base, slot_bytes }) => {
                (isa::Mem::Psum, Space::Psum, base, slot_bytes)
            }
            _ => {
                return Err(BackendError::Emission(EmitBug::NoPlace {
                    tensor: t.name.clone(),
                }))
            }
        };
        if o.access.start.len() != 2 {
            return Err(BackendError::OperandDims {
                tensor: t.name.clone(),
                at: self.at(i),
            });
        }
        let p0 = self.expr(&o.access.start[0]);
        let np = o.access.size[0];
        let nf = o.access.size[1];
        // A box is one unit-stride free dimension; an access pattern's free axes are the
        // dimensions (the verifier keeps them on the free axis, the partition axis unstrided).
        let dims = match &o.access.pattern {
            None => vec![Dim {
                size: nf,
                stride: 1,
            }],
            Some(p) => p.axes[1..]
                .iter()
                .map(|a| Dim {
                    size: a.count,
                    stride: a.step[1],
                })
                .collect(),
        };
        if dims.len() > isa::MAX_DIMS {
            return Err(BackendError::Emission(EmitBug::TileAxes {
                tensor: t.name.clone(),
                axes: dims.len(),
                max: isa::MAX_DIMS,
            }));
        }
        let mut start = self.expr(&o.access.start[1].scale(esize));
        start.constant += base as i64;
        self.rotate_slots(i, o, slot_bytes, &mut start)?;
        let slots: u64 = t.block.iter().map(|b| u64::from(b.count)).product();
        let pattern: Vec<(u64, i64)> = dims.iter().map(|d| (d.size, d.stride)).collect();
        let cols = Shape::strided(&pattern, esize as u64).map(Arc::new);
        debug_assert!(
            cols.as_ref()
                .is_none_or(|c| c.extent() == nf * esize as u64),
            "a pattern's bounding box is its extent (Access::size)"
        );
        let foot = Foot {
            space,
            tensor: o.tensor,
            region: (base, base + slots * slot_bytes),
            r0: p0.clone(),
            nr: np,
            c0: start.clone(),
            nc: nf * esize as u64,
            exact: cols.map(Exact::Cols),
            write,
        };
        Ok(Tile {
            ap: Ap {
                mem,
                dtype,
                p0,
                np: np as u32,
                start,
                dims,
            },
            foot,
        })
    }

    /// Adds to `start` the address rotation of operand `o` of instruction `i` (slots of
    /// `slot_bytes`): slot k of block dimension d is `(selector mod count)`, and the slots are
    /// laid out with the last block dimension fastest.
    fn rotate_slots(
        &self,
        i: BirInst,
        o: &Operand,
        slot_bytes: u64,
        start: &mut Expr,
    ) -> Result<(), BackendError> {
        let t = &self.func.tensors[o.tensor];
        let mut stride = slot_bytes as i64;
        for (sel, b) in o.access.slots.iter().zip(&t.block).rev() {
            let n = i64::from(b.count);
            let sel = &reduce_slot(sel, n);
            match (sel.as_constant(), sel.terms()) {
                (Some(c), _) => start.constant += c.rem_euclid(n) * stride,
                (None, [(axis, 1)]) => {
                    let Some(&(reg, lb)) = self.regs.get(axis) else {
                        unreachable!("a slot selector names a loop that does not enclose it")
                    };
                    start.terms.push(Term::Mod {
                        coeff: stride,
                        reg,
                        offset: lb + sel.constant_term(),
                        modulus: n,
                    });
                }
                _ => {
                    return Err(BackendError::RingSelector {
                        selector: self.func.display_affine(sel).to_string(),
                        tensor: t.name.clone(),
                        at: self.at(i),
                    })
                }
            }
            stride *= n;
        }
        Ok(())
    }

    fn hbm(&self, i: BirInst, o: &Operand, write: bool) -> Result<(HbmAp, Foot), BackendError> {
        let t = &self.func.tensors[o.tensor];
        // A scratch tensor is elements `[offset, offset + elems)` of its arena (`alloc`).
        let (index, offset, region) = match self.alloc.places.get(&o.tensor) {
            Some(&Place::Hbm { index }) => (index, 0, (0, u64::MAX)),
            Some(&Place::Scratch {
                index,
                offset,
                elems,
            }) => (index, offset, (offset, offset + elems)),
            _ => {
                return Err(BackendError::Emission(EmitBug::NoHbmTensor {
                    tensor: t.name.clone(),
                }))
            }
        };
        let cols = t.shape.get(1).copied().unwrap_or(1) as i64;
        let r0 = self.expr(&o.access.start[0]);
        let c0 = o
            .access
            .start
            .get(1)
            .map_or(Expr::constant(0), |e| self.expr(e));
        let flat = match o.access.start.get(1) {
            Some(c) => o.access.start[0].scale(cols).add(c),
            None => o.access.start[0].scale(cols),
        };
        let mut start = self.expr(&flat);
        start.constant += offset as i64;
        // A ring of scratch: slot k is `k` slots further in the arena, and `k` slots of rows
        // further in the tensor's own coordinates of the footprint.
        let mut r0 = r0;
        if !t.block.is_empty() {
            if let Some(Place::Scratch { .. }) = self.alloc.places.get(&o.tensor) {
                let slot = crate::codegen::alloc::scratch_slot_elems(t);
                self.rotate_slots(i, o, slot, &mut start)?;
                self.rotate_slots(i, o, t.shape[0], &mut r0)?;
            }
        }
        let nr = o.access.size[0];
        let nc = o.access.size.get(1).copied().unwrap_or(1);
        // A box is rows × columns; an access pattern's axes step `step[0]·cols + step[1]`
        // elements of the row-major tensor, its partition axis first (the footprint stays its
        // bounding box).
        let dims = match &o.access.pattern {
            None => vec![
                Dim {
                    size: nr,
                    stride: cols,
                },
                Dim {
                    size: nc,
                    stride: 1,
                },
            ],
            Some(p) => p
                .axes
                .iter()
                .map(|a| Dim {
                    size: a.count,
                    stride: a.step[0] * cols + a.step.get(1).copied().unwrap_or(0),
                })
                .collect(),
        };
        if dims.len() > isa::MAX_DIMS {
            return Err(BackendError::Emission(EmitBug::HbmAxes {
                tensor: t.name.clone(),
                axes: dims.len(),
                max: isa::MAX_DIMS,
            }));
        }
        Ok((
            HbmAp {
                tensor: index,
                start,
                dims,
            },
            Foot {
                space: Space::Hbm(index),
                tensor: o.tensor,
                region,
                r0,
                nr,
                c0,
                nc,
                exact: None,
                write,
            },
        ))
    }

    fn push(&mut self, i: BirInst, engine: Engine, op: Op, foot: Vec<Foot>) -> Node {
        let mut inst = Inst::new(op);
        inst.pred = self.guard(i);
        inst.meta = self.meta(i);
        self.nodes.push(NodeData {
            engine,
            inst,
            loops: self.bir.insts[i].loops.clone(),
            foot,
            bir: i,
        })
    }

    fn inst(&mut self, i: BirInst) -> Result<Vec<Node>, BackendError> {
        let bi = &self.bir.insts[i];
        let engine = bi.engine;
        let op = match &bi.op {
            pir::Op::Load | pir::Op::Store => return self.dma(i),
            pir::Op::Gather { .. } | pir::Op::Scatter { .. } => return self.dma(i),
            pir::Op::Matmul { accumulate } => self.operands(i, |dst, [a, b]| Op::Matmul {
                dst,
                a,
                b,
                acc: *accumulate,
            })?,
            pir::Op::Transpose => self.operands(i, |dst, [src]| Op::Transpose { dst, src })?,
            pir::Op::TensorTensor { op } => {
                self.operands(i, |dst, [a, b]| Op::TensorTensor { op: *op, dst, a, b })?
            }
            pir::Op::TensorScalar { op, imm, reverse } => {
                self.operands(i, |dst, [src]| Op::TensorScalar {
                    op: *op,
                    dst,
                    src,
                    imm: *imm,
                    reverse: *reverse,
                })?
            }
            pir::Op::Activation { func, scale, bias } => {
                self.activation(i, *func, *scale, *bias)?
            }
            pir::Op::Reduce { op } => {
                self.operands(i, |dst, [src]| Op::Reduce { op: *op, dst, src })?
            }
            pir::Op::TensorTensorScan { op0, op1 } => {
                self.operands(i, |dst, [a, b, init]| Op::TensorTensorScan {
                    op0: *op0,
                    op1: *op1,
                    dst,
                    a,
                    b,
                    init,
                })?
            }
            pir::Op::VectorTranspose => {
                self.operands(i, |dst, [src]| Op::VectorTranspose { dst, src })?
            }
            pir::Op::Max8 => self.operands(i, |dst, [src]| Op::Max8 { dst, src })?,
            pir::Op::FindIndex8 => {
                self.operands(i, |dst, [src, vals]| Op::FindIndex8 { dst, src, vals })?
            }
            pir::Op::MatchReplace8 { imm } => {
                self.operands(i, |dst, [src, vals]| Op::MatchReplace8 {
                    dst,
                    src,
                    vals,
                    imm: *imm,
                })?
            }
            pir::Op::Rand { stream } => self.operands(i, |dst, []| Op::Rand {
                dst,
                stream: *stream,
            })?,
            pir::Op::Dropout { stream } => self.operands(i, |dst, [src, prob]| Op::Dropout {
                dst,
                src,
                prob,
                stream: *stream,
            })?,
            // The kept rows' source is the destination itself: the machine leaves them as they
            // are, so the instruction names only the moved source.
            pir::Op::Shuffle { mask } => self.operands(i, |dst, [src]| Op::Shuffle {
                dst,
                src,
                mask: *mask,
            })?,
            pir::Op::LocalGather { group, elems, .. } => {
                self.operands(i, |dst, [src, index]| Op::LocalGather {
                    dst,
                    src,
                    index,
                    group: *group,
                    elems: *elems,
                })?
            }
            pir::Op::SequenceBounds => {
                self.operands(i, |dst, [src]| Op::SequenceBounds { dst, src })?
            }
            pir::Op::BnStats => self.operands(i, |dst, [src]| Op::BnStats { dst, src })?,
            pir::Op::BnAggr => self.operands(i, |dst, [src]| Op::BnAggr { dst, src })?,
            pir::Op::Copy => self.operands(i, |dst, [src]| Op::Copy { dst, src })?,
            pir::Op::Memset { value } => {
                self.operands(i, |dst, []| Op::Memset { dst, value: *value })?
            }
            pir::Op::Iota { base, pstep, fstep } => self.operands(i, |dst, []| Op::Iota {
                dst,
                base: *base,
                pstep: *pstep,
                fstep: *fstep,
            })?,
        };
        Ok(vec![self.push(i, engine, op.0, op.1)])
    }

    /// Compute instruction `i` on its destination and its first `N` sources: `make` of their
    /// access patterns, and their footprints, the destination's first, then the sources' in order
    /// (resolved in that order: the first operand that fails gives the error).
    fn operands<const N: usize>(
        &self,
        i: BirInst,
        make: impl FnOnce(Ap, [Ap; N]) -> Op,
    ) -> Result<(Op, Vec<Foot>), BackendError> {
        let bi = &self.bir.insts[i];
        let d = self.tile(i, &bi.dst, true)?;
        let mut srcs = Vec::with_capacity(N);
        for s in &bi.srcs[..N] {
            srcs.push(self.tile(i, s, false)?);
        }
        let op = make(d.ap, std::array::from_fn(|k| srcs[k].ap.clone()));
        let foot = std::iter::once(d.foot)
            .chain(srcs.into_iter().map(|s| s.foot))
            .collect();
        Ok((op, foot))
    }

    /// Activation `i`: its operation and the footprints of its destination, its source, then
    /// its scale tile (with `Scale::Tile`) and its bias (with `bias`), the sources in that order.
    fn activation(
        &mut self,
        i: BirInst,
        func: isa::ActFunc,
        scale: pir::Scale,
        bias: bool,
    ) -> Result<(Op, Vec<Foot>), BackendError> {
        let bi = &self.bir.insts[i];
        let d = self.tile(i, &bi.dst, true)?;
        let s = self.tile(i, &bi.srcs[0], false)?;
        let mut foot = vec![d.foot, s.foot];
        let mut next = 1;
        let scale = match scale {
            pir::Scale::Imm(x) => isa::Scale::Imm(x),
            pir::Scale::Tile => {
                let t = self.tile(i, &bi.srcs[next], false)?;
                next += 1;
                foot.push(t.foot);
                isa::Scale::Tile(t.ap)
            }
        };
        let bias = if bias {
            let t = self.tile(i, &bi.srcs[next], false)?;
            foot.push(t.foot);
            Some(t.ap)
        } else {
            None
        };
        Ok((
            Op::Activation {
                func,
                dst: d.ap,
                src: s.ap,
                scale,
                bias,
            },
            foot,
        ))
    }

    /// A load or store (or a gather or scatter), split by partitions into pieces on successive
    /// queues.
    fn dma(&mut self, i: BirInst) -> Result<Vec<Node>, BackendError> {
        let bi = &self.bir.insts[i];
        let load = matches!(bi.op, pir::Op::Load | pir::Op::Gather { .. });
        // An indirect DMA: its index tile (source 1), read by every piece for its partitions;
        // the HBM side stays the whole box of rows an index may name (`isa::Op::Dma`).
        let (index, mode) = match bi.op {
            pir::Op::Gather { skip_oob } => {
                let mode = DmaMode {
                    skip_oob,
                    accumulate: false,
                };
                (Some(self.tile(i, &bi.srcs[1], false)?), mode)
            }
            pir::Op::Scatter {
                skip_oob,
                accumulate,
            } => {
                let mode = DmaMode {
                    skip_oob,
                    accumulate,
                };
                (Some(self.tile(i, &bi.srcs[1], false)?), mode)
            }
            _ => (None, DmaMode::default()),
        };
        let (tile_op, hbm_op) = if load {
            (&bi.dst, &bi.srcs[0])
        } else {
            (&bi.srcs[0], &bi.dst)
        };
        if self.func.tensors[tile_op.tensor].memory != Memory::Sbuf {
            return Err(BackendError::DmaNotSbuf { at: self.at(i) });
        }
        let tile = self.tile(i, tile_op, load)?;
        let (mut hbm, hfoot) = self.hbm(i, hbm_op, !load)?;
        let np = u64::from(tile.ap.np);
        // A partition-major transfer (`pir::dma_rows_per_partition`): partition `p` moves the
        // `rows` HBM rows `p·rows ..`, so the HBM side is `np` runs of `rows` rows.
        let rows = if index.is_some() {
            1
        } else {
            hbm.dims[0].size / np.max(1)
        };
        if rows > 1 {
            split_into_runs(&mut hbm, np, rows)?;
        }
        let split = self
            .queues
            .split(i)
            .cloned()
            .expect("compute_queue_plan plans every load and store");
        let pieces = split.pieces();
        let pp = np / pieces;
        // The HBM side's outermost dimension pairs with the tile's partitions; a piece of `pp`
        // partitions starts `pp` of its steps further. Its footprint is the bounding box of its
        // elements: for a box, the band of its rows (`rows` per partition); for an access
        // pattern (every step non-negative, `size` its bounding box), the whole box with the
        // partition axis's extent cut from `np` to `pp` steps, along rows and columns alike.
        // The other axes' extents stay: a pattern whose other axes step rows (a partition in the
        // middle of an N-D tensor, `y[b, p, f]`) reaches rows far past its first `pp`.
        let pstride = hbm.dims[0].stride;
        let pstep = hbm_op.access.pattern.as_ref().map(|p| {
            let step = &p.axes[0].step;
            (
                step.first().copied().unwrap_or(0),
                step.get(1).copied().unwrap_or(0),
            )
        });
        let mut out = Vec::new();
        for k in 0..pieces {
            let off = (k * pp) as i64;
            let mut ap = tile.ap.clone();
            ap.p0.constant += off;
            ap.np = pp as u32;
            let mut h = hbm.clone();
            let mut tf = tile.foot.clone();
            tf.r0.constant += off;
            tf.nr = pp;
            let mut hf = hfoot.clone();
            let mut feet = Vec::new();
            let idx = index.as_ref().map(|x| {
                let mut ap = x.ap.clone();
                ap.p0.constant += off;
                ap.np = pp as u32;
                let mut f = x.foot.clone();
                f.r0.constant += off;
                f.nr = pp;
                feet.push(f);
                ap
            });
            if index.is_none() {
                h.start.constant += off * pstride;
                h.dims[0].size = pp;
            }
            match (pstep, index.as_ref()) {
                (None, None) => {
                    // `rows` HBM rows per partition (1 but for a partition-major transfer).
                    let rows = rows.max(1);
                    hf.r0.constant += off * rows as i64;
                    hf.nr = pp * rows;
                }
                (Some((sr, sc)), None) => {
                    let cut = np - pp;
                    hf.r0.constant += off * sr;
                    hf.nr = hf.nr.saturating_sub(cut * sr as u64).max(1);
                    hf.c0.constant += off * sc;
                    hf.nc = hf.nc.saturating_sub(cut * sc as u64).max(1);
                }
                // An indirect DMA: the rows an index may name, whole.
                (_, Some(_)) => {}
            }
            if index.is_none() {
                hf.exact = Some(Exact::flat(&h, hf.nr.saturating_mul(hf.nc)));
            }
            let queue = split.queues[k as usize];
            let (dst, src) = if load {
                (DmaSide::Tile(ap), DmaSide::Hbm(h))
            } else {
                (DmaSide::Hbm(h), DmaSide::Tile(ap))
            };
            feet.splice(0..0, [tf, hf]);
            let op = Op::Dma {
                queue,
                dst,
                src,
                index: idx,
                mode,
            };
            out.push(self.push(i, Engine::Sp, op, feet));
        }
        Ok(out)
    }
}

/// Splits the outermost dimension of a partition-major transfer's HBM side (`np · rows` rows)
/// into `np` runs of `rows` rows: partition `p` moves rows `p·rows ..`.
fn split_into_runs(hbm: &mut HbmAp, np: u64, rows: u64) -> Result<(), BackendError> {
    let row = hbm.dims[0];
    let run = row
        .stride
        .checked_mul(rows as i64)
        .ok_or(BackendError::Emission(EmitBug::RunOverflow))?;
    hbm.dims[0] = Dim {
        size: np,
        stride: run,
    };
    hbm.dims.insert(
        1,
        Dim {
            size: rows,
            stride: row.stride,
        },
    );
    Ok(())
}

/// A slot selector reduced modulo the ring size `n`: every coefficient taken modulo `n`, so a
/// term whose coefficient `n` divides disappears (the emergent prefetch across a nest selects
/// slot `flat iteration mod n`, whose outer coefficients are multiples of `n`). The reduced
/// selector selects the same slot for every iteration.
fn reduce_slot(sel: &AffineExpr, n: i64) -> AffineExpr {
    AffineExpr::from_terms(
        sel.terms().iter().map(|&(a, c)| (a, c.rem_euclid(n))),
        sel.constant_term(),
    )
}
