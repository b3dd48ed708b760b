//! The dependence bound: the longest chain of flow dependences of a kernel as written, with
//! unlimited resources, in cycles of the machine model.
//!
//! [`compute_dependence_bound`] runs the kernel's instructions (Penguin IR, before any pipelining)
//! in program order, instance by instance, without data: each instance starts when the values it
//! reads are ready and takes its **minimal latency** ([`min_latency`]); the values it writes are
//! ready when it ends. No engine, queue or buffer is shared, so the result is the critical path of
//! the flow dependences, and no schedule of the kernel (on any pipelining path) can end sooner:
//! every path keeps each value's producer before its readers. The bound is
//! `max(resource bound, dependence bound)`.
//!
//! Readiness is tracked per tensor as rectangles (one per dimension, in elements, and the slot a
//! write filled) with the time their last write ends; a read waits for every rectangle it
//! overlaps. A write replaces the rectangles it covers; one it only partly covers stays (a later
//! write of the same element is ordered after it on every path, so waiting for it is still a
//! lower bound). Tensors that no instruction reads are not tracked.
//!
//! Minimal latencies (MACHINE.md's cost table): a compute instruction costs its engine's cycles
//! (an operation several engines can run, the cheapest; a `tensor_tensor` with an input in PSUM
//! the PSUM rate); a DMA its issue on `sp` for each piece, the fixed latency and its bytes on one
//! queue per piece, with the split (1, 2, 4, 8 or 16 pieces dividing its partitions) that ends
//! first. Past [`MAX_INSTANCES`] instances the bound is not computed (`None`).

use penguin::affine::AffineExpr;
use penguin::ir::{EngineClass, Memory, Op, Operand, StmtKind};
use penguin::{Axis, Function, Stmt, Tensor};
use runtime_sim::isa::DType;
use runtime_sim::machine;
use std::collections::BTreeMap;

/// The most instruction instances and loop iterations the bound walks.
pub const MAX_INSTANCES: u64 = 2_000_000;

/// A rectangle of a tensor: per dimension `[start, start + size)`, and its ring slot.
#[derive(Clone, Debug)]
struct Rect {
    lo: Vec<i64>,
    hi: Vec<i64>,
    slot: i64,
    ready: u64,
}

/// The dependence bound of `func` (as written) in cycles, or `None` past [`MAX_INSTANCES`].
pub fn compute_dependence_bound(func: &Function) -> Option<u64> {
    let mut instances = 0u64;
    count(func, &func.body, 1, &mut instances);
    if instances > MAX_INSTANCES {
        return None;
    }
    // Only what some instruction reads needs its readiness tracked.
    let mut read = std::collections::BTreeSet::new();
    for (_, d) in func.insts.iter() {
        read.extend(d.srcs.iter().map(|o| o.tensor));
        if matches!(d.op, Op::Matmul { accumulate: true }) {
            read.insert(d.dst.tensor);
        }
    }
    let mut cx = Walk {
        func,
        ivs: cranelift_entity::SecondaryMap::new(),
        ready: BTreeMap::new(),
        read,
        end: 0,
    };
    cx.block(&func.body);
    Some(cx.end)
}

fn count(func: &Function, block: &[Stmt], reps: u64, out: &mut u64) {
    for &s in block {
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => *out = out.saturating_add(reps * insts.len() as u64),
            StmtKind::Loop(a) => {
                // Every iteration is a step of the walk, even of a loop with nothing to run.
                let reps = reps.saturating_mul(func.axes[*a].trip_count().max(0) as u64);
                *out = out.saturating_add(reps);
                count(func, &func.axes[*a].body, reps, out);
            }
        }
    }
}

struct Walk<'f> {
    func: &'f Function,
    ivs: cranelift_entity::SecondaryMap<Axis, i64>,
    ready: BTreeMap<Tensor, Vec<Rect>>,
    /// The tensors some instruction reads.
    read: std::collections::BTreeSet<Tensor>,
    end: u64,
}

impl Walk<'_> {
    fn block(&mut self, block: &[Stmt]) {
        for &s in block {
            let sd = &self.func.stmts[s];
            if !sd.preds.iter().all(|p| p.holds(&self.ivs)) {
                continue;
            }
            match &sd.kind {
                StmtKind::Insts(insts) => {
                    for &i in insts {
                        self.inst(i);
                    }
                }
                StmtKind::Loop(a) => {
                    let ad = &self.func.axes[*a];
                    for v in ad.lb..ad.ub {
                        self.ivs[*a] = v;
                        self.block(&ad.body);
                    }
                }
            }
        }
    }

    fn rect(&self, o: &Operand) -> Rect {
        let eval = |e: &AffineExpr| e.eval(&self.ivs);
        let lo: Vec<i64> = o.access.start.iter().map(eval).collect();
        let hi = lo
            .iter()
            .zip(&o.access.size)
            .map(|(&l, &n)| l + n as i64)
            .collect();
        let t = &self.func.tensors[o.tensor];
        // The slots, flattened (last block dimension fastest).
        let mut slot = 0i64;
        for (sel, b) in o.access.slots.iter().zip(&t.block) {
            slot = slot * i64::from(b.count) + eval(sel).rem_euclid(i64::from(b.count));
        }
        Rect {
            lo,
            hi,
            slot,
            ready: 0,
        }
    }

    fn inst(&mut self, i: penguin::Inst) {
        let d = &self.func.insts[i];
        let mut reads: Vec<&Operand> = d.srcs.iter().collect();
        if matches!(d.op, Op::Matmul { accumulate: true }) {
            reads.push(&d.dst);
        }
        let mut start = 0u64;
        for o in reads {
            let r = self.rect(o);
            if let Some(rects) = self.ready.get(&o.tensor) {
                for w in rects.iter().filter(|w| overlaps(w, &r)) {
                    start = start.max(w.ready);
                }
            }
        }
        let end = start + min_latency(self.func, i);
        self.end = self.end.max(end);
        if self.read.contains(&d.dst.tensor) {
            let mut w = self.rect(&d.dst);
            w.ready = end;
            let rects = self.ready.entry(d.dst.tensor).or_default();
            rects.retain(|old| !covers(&w, old));
            rects.push(w);
        }
    }
}

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.slot == b.slot
        && a.lo
            .iter()
            .zip(&a.hi)
            .zip(b.lo.iter().zip(&b.hi))
            .all(|((&al, &ah), (&bl, &bh))| al < bh && bl < ah)
}

fn covers(a: &Rect, b: &Rect) -> bool {
    a.slot == b.slot
        && a.lo
            .iter()
            .zip(&a.hi)
            .zip(b.lo.iter().zip(&b.hi))
            .all(|((&al, &ah), (&bl, &bh))| al <= bl && bh <= ah)
}

fn free(o: &Operand) -> u64 {
    o.access.size.iter().skip(1).product::<u64>().max(1)
}

fn dtype(func: &Function, o: &Operand) -> DType {
    match func.tensors[o.tensor].dtype {
        penguin::DType::F32 => DType::F32,
        penguin::DType::Bf16 => DType::Bf16,
    }
}

/// The least time instruction `i` can take from its start to its effect (module doc).
pub fn min_latency(func: &Function, i: penguin::Inst) -> u64 {
    let d = &func.insts[i];
    if let Some(tile) = crate::bir::dma_tile(&d.op, &d.dst, &d.srcs) {
        let partitions = tile.access.size.first().copied().unwrap_or(1).max(1);
        let bytes = crate::bir::tile_bytes(func, tile);
        return [1u64, 2, 4, 8, 16]
            .into_iter()
            .filter(|p| partitions.is_multiple_of(*p))
            .map(|p| p * machine::dma_issue_cycles() + machine::dma_transfer(bytes.div_ceil(p)))
            .min()
            .unwrap_or(machine::dma_issue_cycles() + machine::dma_transfer(bytes));
    }
    let psum_input = d
        .srcs
        .iter()
        .any(|o| func.tensors[o.tensor].memory == Memory::Psum);
    let n = match d.op {
        Op::Reduce { .. } => d.srcs.first().map_or(1, free),
        _ => free(&d.dst),
    };
    let vector = match d.op {
        Op::TensorTensor { .. } => machine::tensor_tensor_cycles(n, psum_input),
        Op::Reduce { .. } => machine::reduce_cycles(n),
        _ => machine::vector_cycles(n),
    };
    match d.engine {
        EngineClass::Tensor => match d.op {
            Op::Transpose => {
                let src = d.srcs.first().unwrap_or(&d.dst);
                machine::transpose_cycles(src.access.size.first().copied().unwrap_or(1), free(src))
            }
            _ => {
                let m = d.srcs.first().map_or(128, free);
                // The simulator's rate: bf16 only when both operands are bf16 (a bf16 operand
                // beside an f32 one is widened).
                let operand = |k: usize| d.srcs.get(k).map_or(DType::Bf16, |o| dtype(func, o));
                machine::matmul_cycles(machine::matmul_dtype(operand(0), operand(1)), m, n)
            }
        },
        EngineClass::Scalar => machine::activation_cycles(n),
        EngineClass::Vector => vector,
        EngineClass::GpSimd => machine::pool_cycles(n),
        EngineClass::Any | EngineClass::Dma => vector
            .min(machine::activation_cycles(n))
            .min(machine::pool_cycles(n)),
    }
}
