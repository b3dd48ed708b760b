//! Checks of one instruction as a whole: its source count, the engine that runs it, its mask,
//! the memories of its operands; it then checks each operand ([`Verifier::operand`]) and, when
//! those are well formed, the op's shapes ([`Verifier::shapes`]).

use super::bounds::iteration_boxes;
use super::{mem_name, AnyEntity, Ctx, Verifier};
use crate::entities::{Axis, Inst};
use crate::ir::{EngineClass, InstData, MaskBound, Memory, Op, Operand};

impl Verifier<'_> {
    pub(super) fn inst(&mut self, i: Inst, ctx: &Ctx) {
        let f = self.func;
        let data = &f.insts[i];
        let e = AnyEntity::Inst(i);
        let loops = &ctx.loops;
        let op = &data.op;
        let counts_ok = data.srcs.len() == op.num_srcs();
        if !counts_ok {
            self.error_in(
                e,
                loops,
                format!(
                    "has {} source(s) but `{}` takes {}",
                    data.srcs.len(),
                    op.name(),
                    op.num_srcs()
                ),
            );
        }
        if !engine_runs(data.engine, op) {
            self.error_in(
                e,
                loops,
                format!(
                    "`{}` cannot run on the {} engine",
                    op.name(),
                    engine_label(data.engine)
                ),
            );
        }
        let boxes = iteration_boxes(f, ctx);
        let masked = self.mask(e, loops, data);
        let bx = boxes.first().map(Vec::as_slice);
        let before = self.errors.len();
        let mut shapes_ok = self.operand(e, loops, &data.dst, "destination", true, bx, masked);
        for (k, src) in data.srcs.iter().enumerate() {
            let what = format!("source {k}");
            shapes_ok &= self.operand(e, loops, src, &what, false, bx, masked);
        }
        // The other boxes of guards in several variables, until one reports.
        for bx in boxes.iter().skip(1) {
            if self.errors.len() > before {
                break;
            }
            self.operand(e, loops, &data.dst, "destination", true, Some(bx), masked);
            for (k, src) in data.srcs.iter().enumerate() {
                self.operand(
                    e,
                    loops,
                    src,
                    &format!("source {k}"),
                    false,
                    Some(bx),
                    masked,
                );
            }
        }
        if let Some(t) = f.tensors.get(data.dst.tensor) {
            if t.kind.is_read_only() {
                let what = t.kind.name();
                self.error_in(e, loops, format!("writes {what} tensor `{}`", t.name));
            }
        }
        self.memories(e, loops, data.engine, op, &data.dst, &data.srcs);
        if op.is_indirect() && counts_ok {
            self.indirect_memories(e, loops, data);
        }
        if counts_ok && shapes_ok {
            self.shapes(e, loops, op, &data.dst, &data.srcs);
        }
    }

    /// An indirect DMA's sides: the HBM box in HBM (source 0 of a gather, the destination of a
    /// scatter), the index tile (source 1) in SBUF.
    fn indirect_memories(&mut self, e: AnyEntity, loops: &[Axis], data: &InstData) {
        let f = self.func;
        let hbm = match data.op {
            Op::Gather { .. } => &data.srcs[0],
            _ => &data.dst,
        };
        let sides = [
            (hbm, Memory::Hbm, "its HBM side"),
            (&data.srcs[1], Memory::Sbuf, "its index tile (source 1)"),
        ];
        for (o, want, what) in sides {
            if let Some(t) = f.tensors.get(o.tensor) {
                if t.memory != want {
                    let msg = format!(
                        "`{}` takes {what} in {}, but `{}` is in {}",
                        data.op.name(),
                        mem_name(want),
                        t.name,
                        mem_name(t.memory)
                    );
                    self.error_in(e, loops, msg);
                }
            }
        }
    }

    /// Checks an instruction's mask: an operation that takes one, a two-dimensional iteration
    /// space, bounds in scope. Returns the mask and the iteration space's shape when the operands'
    /// bounds checks may rely on it.
    fn mask<'d>(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        data: &'d InstData,
    ) -> Option<(&'d [MaskBound], [u64; 2])> {
        if data.mask.is_empty() {
            return None;
        }
        if let Some(why) = data.mask_refusal() {
            self.error_in(e, loops, why);
            return None;
        }
        let mut scoped = true;
        for b in &data.mask {
            let what = format!("mask bound on `{}`", b.dim.name());
            scoped &= self.scope(e, loops, &b.bound, &what);
        }
        let shape = data.iter_shape();
        if shape.is_none() {
            self.error_in(
                e,
                loops,
                "a masked instruction's iteration space is not 2-D",
            );
        }
        Some((&data.mask[..], shape?)).filter(|_| scoped)
    }

    fn memories(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        engine: EngineClass,
        op: &Op,
        dst: &Operand,
        srcs: &[Operand],
    ) {
        let f = self.func;
        let (dst_ok, src_ok) = op.memories();
        let operands = std::iter::once(("destination".to_string(), dst, dst_ok, "writes")).chain(
            srcs.iter()
                .enumerate()
                .map(|(k, s)| (format!("source {k}"), s, src_ok, "reads")),
        );
        for (what, o, allowed, verb) in operands {
            let Some(t) = f.tensors.get(o.tensor) else {
                continue;
            };
            if !allowed.is_empty() && !allowed.contains(&t.memory) {
                let names: Vec<&str> = allowed.iter().map(|&m| mem_name(m)).collect();
                self.error_in(
                    e,
                    loops,
                    format!(
                        "{what} `{}` is in {}, but `{}` {verb} {}",
                        t.name,
                        mem_name(t.memory),
                        op.name(),
                        names.join(" or ")
                    ),
                );
            }
            if engine == EngineClass::GpSimd && t.memory == Memory::Psum {
                self.error_in(
                    e,
                    loops,
                    format!(
                        "runs on GpSimd (pool), which cannot access PSUM, but its {what} `{}` is in PSUM",
                        t.name
                    ),
                );
            }
        }
    }
}

/// Whether `engine` can run `op`.
fn engine_runs(engine: EngineClass, op: &Op) -> bool {
    use EngineClass::*;
    match op {
        Op::Load | Op::Store | Op::Gather { .. } | Op::Scatter { .. } => engine == Dma,
        Op::Matmul { .. } | Op::Transpose => engine == Tensor,
        Op::Activation { .. } => engine == Scalar,
        Op::TensorTensor { .. } | Op::TensorScalar { .. } | Op::Memset { .. } | Op::Iota { .. } => {
            matches!(engine, Vector | GpSimd)
        }
        // The machine reduces on the Vector engine only (`runtime_sim::validate::engines_of`).
        Op::Reduce { .. } => engine == Vector,
        // Sequential along the free axis: the Vector engine's (MACHINE.md cost table).
        Op::TensorTensorScan { .. } | Op::BnStats | Op::BnAggr | Op::VectorTranspose => {
            engine == Vector
        }
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => engine == Vector,
        Op::Rand { .. } | Op::Dropout { .. } | Op::Shuffle { .. } => engine == Vector,
        Op::LocalGather { .. } | Op::SequenceBounds => engine == GpSimd,
        Op::Copy => matches!(engine, Any | Vector | Scalar | GpSimd),
    }
}

fn engine_label(engine: EngineClass) -> String {
    let long = match engine {
        EngineClass::Dma => "DMA",
        EngineClass::Tensor => "Tensor",
        EngineClass::Vector => "Vector",
        EngineClass::Scalar => "Scalar",
        EngineClass::GpSimd => "GpSimd",
        EngineClass::Any => "any",
    };
    format!("{long} (`{}`)", engine.name())
}
