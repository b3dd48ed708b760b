//! The simple allocator: one fixed region per logical buffer, for the whole kernel.
//!
//! [`allocate`] gives every on-chip tensor that an instruction names its own region, never shared
//! with another tensor (so no two live buffers can overlap, whatever their live ranges): SBUF
//! tensors a byte range of every partition (`slots × bytes of one copy`, 64-byte aligned), PSUM
//! tensors whole banks, one per slot, so that a tile never crosses a bank and a PSUM ring rotates
//! banks. HBM inputs and outputs become the program's tensors. Running out of SBUF or of PSUM banks
//! is a diagnostic that names every buffer with its bytes; nothing is ever placed past capacity.
//!
//! Not done: colouring by live ranges (buffers whose live ranges are disjoint could share space),
//! and HBM scratch (a local HBM tensor is reported as unsupported).

use crate::bir::Bir;
use crate::error::{BackendError, PSUM_OVERFLOW, PSUM_TILE_TOO_LARGE, SBUF_OVERFLOW, UNSUPPORTED};
use penguin::ir::{Memory, TensorKind};
use penguin::{Function, Tensor};
use runtime_sim::machine::{PSUM_BANKS, PSUM_BANK_BYTES, SBUF_PARTITION_BYTES};
use std::collections::BTreeMap;

/// Where a logical buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The program's tensor of that index.
    Hbm { index: usize },
    /// Bytes `[base, base + slots * slot_bytes)` of every partition.
    Sbuf { base: u64, slot_bytes: u64 },
    /// Banks from `base / PSUM_BANK_BYTES`, one per slot (`slot_bytes` = one bank).
    Psum { base: u64, slot_bytes: u64 },
}

#[derive(Clone, Debug, Default)]
pub struct Allocation {
    pub places: BTreeMap<Tensor, Place>,
    /// The HBM tensors of the program, in order: parameters, then outputs.
    pub hbm: Vec<Tensor>,
    /// SBUF bytes per partition in use.
    pub sbuf_bytes: u64,
    /// PSUM banks in use.
    pub psum_banks: u64,
}

const SBUF_ALIGN: u64 = 64;

/// Places every buffer `bir` uses.
pub fn allocate(func: &Function, bir: &Bir) -> Result<Allocation, BackendError> {
    let mut used: Vec<Tensor> = Vec::new();
    for bi in &bir.insts {
        for o in std::iter::once(&bi.dst).chain(bi.srcs.iter()) {
            if !used.contains(&o.tensor) {
                used.push(o.tensor);
            }
        }
    }
    used.sort();
    let mut a = Allocation::default();
    for &t in func.params.iter().chain(func.outputs.iter()) {
        a.places.insert(t, Place::Hbm { index: a.hbm.len() });
        a.hbm.push(t);
    }
    let mut sbuf: Vec<(Tensor, u64)> = Vec::new();
    let mut psum: Vec<(Tensor, u64)> = Vec::new();
    for &t in &used {
        let d = &func.tensors[t];
        let span = func.tensor_spans.get(t).copied().flatten();
        match d.memory {
            Memory::Hbm => {
                if d.kind == TensorKind::Local && !a.places.contains_key(&t) {
                    return Err(BackendError::new(
                        UNSUPPORTED,
                        format!(
                            "`{}` is HBM scratch, which the backend does not allocate yet",
                            d.name
                        ),
                        span,
                    )
                    .with_label("a local HBM tensor"));
                }
            }
            Memory::Sbuf | Memory::Psum => {
                if d.shape.len() != 2 {
                    return Err(BackendError::new(
                        UNSUPPORTED,
                        format!("on-chip tensor `{}` has {} dimensions; the backend lowers [partitions, free] tiles", d.name, d.shape.len()),
                        span,
                    ));
                }
                let copy = d.shape[1] * d.dtype.size_bytes();
                if d.memory == Memory::Sbuf {
                    let slot_bytes = copy.div_ceil(SBUF_ALIGN) * SBUF_ALIGN;
                    let base = a.sbuf_bytes;
                    a.sbuf_bytes += slot_bytes * d.slots();
                    a.places.insert(t, Place::Sbuf { base, slot_bytes });
                    sbuf.push((t, slot_bytes * d.slots()));
                } else {
                    if copy > PSUM_BANK_BYTES {
                        return Err(BackendError::new(
                            PSUM_TILE_TOO_LARGE,
                            format!(
                                "PSUM tensor `{}` needs {copy} bytes per partition, more than one {PSUM_BANK_BYTES}-byte bank",
                                d.name
                            ),
                            span,
                        )
                        .with_label("a PSUM tile never crosses a bank")
                        .with_note(format!("a PSUM bank holds {} float32 per partition", PSUM_BANK_BYTES / 4)));
                    }
                    let base = a.psum_banks * PSUM_BANK_BYTES;
                    a.psum_banks += d.slots();
                    a.places.insert(
                        t,
                        Place::Psum {
                            base,
                            slot_bytes: PSUM_BANK_BYTES,
                        },
                    );
                    psum.push((t, d.slots()));
                }
            }
        }
    }
    if a.sbuf_bytes > SBUF_PARTITION_BYTES {
        let list: Vec<String> = sbuf
            .iter()
            .map(|&(t, b)| format!("`{}` {b} bytes", func.tensors[t].name))
            .collect();
        let big = sbuf.iter().max_by_key(|x| x.1).map(|x| x.0);
        return Err(BackendError::new(
            SBUF_OVERFLOW,
            format!(
                "the kernel's SBUF buffers need {} bytes per partition, more than the {SBUF_PARTITION_BYTES} SBUF has",
                a.sbuf_bytes
            ),
            big.and_then(|t| func.tensor_spans.get(t).copied().flatten()),
        )
        .with_label("the largest buffer")
        .with_note(format!("buffers (bytes per partition, all ring slots): {}", list.join(", "))));
    }
    if a.psum_banks > PSUM_BANKS {
        let list: Vec<String> = psum
            .iter()
            .map(|&(t, b)| {
                format!(
                    "`{}` {b} bank{} ({} bytes)",
                    func.tensors[t].name,
                    if b == 1 { "" } else { "s" },
                    b * PSUM_BANK_BYTES
                )
            })
            .collect();
        let big = psum.iter().max_by_key(|x| x.1).map(|x| x.0);
        return Err(BackendError::new(
            PSUM_OVERFLOW,
            format!(
                "the kernel's PSUM buffers need {} banks at once, more than the {PSUM_BANKS} PSUM has",
                a.psum_banks
            ),
            big.and_then(|t| func.tensor_spans.get(t).copied().flatten()),
        )
        .with_label("the largest PSUM ring")
        .with_note(format!("PSUM buffers: {}", list.join(", "))));
    }
    Ok(a)
}
