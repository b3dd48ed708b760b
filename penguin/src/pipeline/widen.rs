//! Step 4: allocation widening — giving multi-buffered tensors their slots.
//!
//! [`compute_widening`] decides, for one target loop, which tensors get how many buffers, and
//! checks the result against the machine; [`widen_allocations`] applies the decision by adding a
//! block dimension `BlockDim { axis, count }` to each tensor (the accesses get their slot
//! expressions when the loop is extended, `extend.rs`).
//!
//! - Automatic buffering (unless `disable_auto_buffer=True`): every tensor local to the loop with
//!   a buffer count above 1 gets that count.
//! - `multi_buffer=K`: every tensor local to the loop gets `K` buffers by hand. Combined with
//!   automatic buffering of a tile that needs more than one buffer, it would widen that tile twice:
//!   an error ([`codes::MANUAL_AND_AUTO_BUFFER`]). With `disable_auto_buffer=True` it is the only
//!   buffering, and the legality check catches a `K` that is too small.
//! - SBUF tensors are widened as allocations. After widening, the SBUF tensors the loop touches
//!   must fit in 192 KiB per partition, else [`codes::SBUF_OVERFLOW`] names them with their bytes.
//! - PSUM tensors are not widened as allocations: their count is the depth of a ring of PSUM
//!   banks that the backend's PSUM rotation realises. It is recorded the same way — a block
//!   dimension on the tensor — so that the pipelined IR stays executable by the interpreter, which
//!   gives each slot its own storage exactly as the ring gives each its own bank. The banks in
//!   flight in the loop (every PSUM tensor it touches, times its ring depth, times the banks one
//!   tile takes) must be at most 8, else [`codes::PSUM_BANKS`].

use super::buffers::BufferCount;
use super::error::{axis_span, tensor_span, PipelineError, SbufTile};
use crate::entities::{Axis, Tensor};
use crate::ir::{BlockDim, Function, Memory};

/// The machine's SBUF and PSUM limits, under the names the pipeliner has always used.
pub use vocab::machine::{
    PSUM_BANKS, PSUM_BANK_BYTES, SBUF_PARTITION_BYTES as SBUF_BYTES_PER_PARTITION,
};

/// Where a tensor's buffer count came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferSource {
    Auto,
    Manual,
}

/// One multi-buffered tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Widening {
    pub tensor: Tensor,
    pub count: u32,
    pub source: BufferSource,
}

/// Decides the buffers of target loop `axis` from the buffer counts, and checks SBUF and PSUM.
pub fn compute_widening(
    func: &Function,
    axis: Axis,
    counts: &[(Tensor, BufferCount)],
) -> Result<Vec<Widening>, Vec<PipelineError>> {
    let attrs = func.axes[axis].attrs;
    let iv = func.display_iv(axis);
    let auto = !attrs.disable_auto_buffer;
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for &(t, ref c) in counts {
        let BufferCount::Counted {
            count,
            def_min,
            use_max,
        } = *c
        else {
            continue;
        };
        match attrs.multi_buffer {
            Some(k) if auto && count > 1 => errors.push(PipelineError::ManualAndAutoBuffer {
                tensor: func.display_name(t).to_string(),
                iv: iv.to_string(),
                auto: count,
                manual: k,
                def_stage: def_min,
                use_stage: use_max,
                header: axis_span(func, axis),
                tensor_at: tensor_span(func, t),
            }),
            Some(k) if k > 1 => out.push(Widening {
                tensor: t,
                count: k,
                source: BufferSource::Manual,
            }),
            _ if auto && count > 1 => out.push(Widening {
                tensor: t,
                count,
                source: BufferSource::Auto,
            }),
            _ => {}
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    check_capacity(func, axis, &out)?;
    Ok(out)
}

/// The slots a tensor has after `widened`.
fn slots_after(func: &Function, t: Tensor, widened: &[Widening]) -> u64 {
    let extra = widened
        .iter()
        .find(|w| w.tensor == t)
        .map_or(1, |w| u64::from(w.count));
    func.tensors[t].slots() * extra
}

/// The on-chip tensors the body of `axis` touches, in tensor order.
pub fn tensors_in_loop(func: &Function, axis: Axis) -> Vec<Tensor> {
    let mut insts = Vec::new();
    super::collect_insts(func, &func.axes[axis].body, &mut insts);
    let mut ts: Vec<Tensor> = insts
        .iter()
        .flat_map(|&i| {
            let d = &func.insts[i];
            std::iter::once(d.dst.tensor).chain(d.srcs.iter().map(|o| o.tensor))
        })
        .collect();
    ts.sort();
    ts.dedup();
    ts
}

fn check_capacity(
    func: &Function,
    axis: Axis,
    widened: &[Widening],
) -> Result<(), Vec<PipelineError>> {
    let iv = func.display_iv(axis);
    let tensors = tensors_in_loop(func, axis);
    let mut errors = Vec::new();

    // SBUF: every tile the loop touches, with its slots.
    let sbuf: Vec<(Tensor, u64, u64)> = tensors
        .iter()
        .filter(|&&t| func.tensors[t].memory == Memory::Sbuf)
        .map(|&t| {
            let slots = slots_after(func, t, widened);
            let one = func.tensors[t].bytes_per_partition() / func.tensors[t].slots().max(1);
            (t, slots, one * slots)
        })
        .collect();
    let total: u64 = sbuf.iter().map(|&(_, _, b)| b).sum();
    if total > SBUF_BYTES_PER_PARTITION && !widened.is_empty() {
        errors.push(PipelineError::SbufOverflow {
            iv: iv.to_string(),
            total,
            limit: SBUF_BYTES_PER_PARTITION,
            tiles: sbuf
                .iter()
                .map(|&(t, slots, bytes)| SbufTile {
                    name: func.display_name(t).to_string(),
                    slots,
                    bytes,
                    at: tensor_span(func, t),
                })
                .collect(),
            header: axis_span(func, axis),
        });
    }

    // PSUM: banks in flight.
    let psum: Vec<(Tensor, u64)> = tensors
        .iter()
        .filter(|&&t| func.tensors[t].memory == Memory::Psum)
        .map(|&t| {
            let one = func.tensors[t].bytes_per_partition() / func.tensors[t].slots().max(1);
            let banks_per_tile = one.div_ceil(PSUM_BANK_BYTES).max(1);
            (t, banks_per_tile * slots_after(func, t, widened))
        })
        .collect();
    let banks: u64 = psum.iter().map(|&(_, b)| b).sum();
    if banks > PSUM_BANKS {
        errors.push(PipelineError::PsumBanks {
            iv: iv.to_string(),
            banks,
            limit: PSUM_BANKS,
            tiles: psum
                .iter()
                .map(|&(t, b)| (func.display_name(t).to_string(), b, tensor_span(func, t)))
                .collect(),
            header: axis_span(func, axis),
        });
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Adds the block dimension of each widening along `axis`.
pub fn widen_allocations(func: &mut Function, axis: Axis, widened: &[Widening]) {
    for w in widened {
        func.tensors[w.tensor].block.push(BlockDim {
            axis,
            count: w.count,
        });
    }
}
