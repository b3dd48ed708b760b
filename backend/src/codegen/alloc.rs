//! The colouring allocators for SBUF, PSUM and HBM scratch: buffers whose live ranges overlap
//! never share memory; the others may.
//!
//! [`allocate`] numbers the BIR instructions in program order and gives every on-chip buffer a
//! **live range**: from its first to its last access, widened to the whole span of every loop
//! that contains one of its accesses (so a value carried from one iteration to the next, or a ring
//! whose slots are reused across iterations, stays live for the whole loop). Two buffers
//! **interfere** when their live ranges overlap (the interference graph is implicit: each buffer
//! tests its live range against those of the buffers already placed).
//! Buffers are then placed largest first, each at the lowest offset that overlaps no interfering
//! buffer already placed (first fit; SBUF in bytes of every partition, 64-byte aligned, all ring
//! slots together; PSUM in whole banks, one per slot, so that a tile never crosses a bank and a
//! PSUM ring rotates banks). Sharing is safe because the synchronisation analysis works on
//! physical footprints: a buffer's first write waits for the last access of whatever held its
//! bytes before. Running out of SBUF or of PSUM banks is a diagnostic that names the buffers and
//! their bytes; nothing is ever placed past capacity. HBM inputs and outputs become the program's
//! tensors.
//!
//! **HBM scratch** (a local HBM tensor: `nl.ndarray(..., buffer=nl.shared_hbm)` not returned) is
//! coloured the same way into one **arena** per dtype, a program tensor of role `scratch`
//! ([`Allocation::arenas`], after the inputs and outputs): each scratch tensor gets an element
//! offset in its arena (64-byte aligned), disjoint from every scratch tensor live at the same
//! time, shared otherwise ([`Place::Scratch`]). The arena's size is the highest end. Accesses
//! become offsets into the arena (`emit`); their footprints keep the tensor's own rows and
//! columns, and two different tensors of one arena conflict exactly when their element ranges
//! overlap (`sync`), so reuse is ordered like SBUF reuse. A multi-buffered HBM scratch tensor is
//! not lowered (E0504).
//!
//! The phases of [`allocate`]: the HBM inputs and outputs, the live ranges
//! ([`compute_live_ranges`]), the buffers to place by memory (or the error of a tensor the backend
//! does not lower), the scratch arenas, the SBUF and PSUM colouring (`colour`), then the
//! capacity checks.
//!
//! Invariants of an [`Allocation`]: every tensor BIR uses has a place; two on-chip buffers or two
//! scratch tensors of one arena share bytes only when their live ranges are disjoint; every SBUF
//! slot starts at a multiple of [`SBUF_ALIGN`] and every PSUM slot at a bank; nothing is placed
//! past the SBUF or the PSUM's banks (that is an error instead).

use crate::codegen::bir::{BNode, Bir};
pub use crate::cost::budget::SBUF_ALIGN;
use crate::error::BackendError;
use penguin::ir::{Memory, TensorKind};
use penguin::listing::capped_list;
use penguin::{Function, Tensor};
use runtime_sim::isa::{Role, TensorDecl};
use runtime_sim::machine::{PSUM_BANKS, PSUM_BANK_BYTES, SBUF_PARTITION_BYTES};
use std::collections::BTreeMap;

/// Where a logical buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The program's tensor of that index.
    Hbm { index: usize },
    /// Elements `[offset, offset + elems)` of the scratch arena that is program tensor `index`.
    Scratch {
        index: usize,
        offset: u64,
        elems: u64,
    },
    /// Bytes `[base, base + slots * slot_bytes)` of every partition.
    Sbuf { base: u64, slot_bytes: u64 },
    /// Banks from `base / PSUM_BANK_BYTES`, whole banks per slot (`slot_bytes` = one bank, or
    /// several for a PSUM array of several banks).
    Psum { base: u64, slot_bytes: u64 },
}

impl Place {
    /// The bytes of every partition the buffer may touch (all slots), for on-chip places.
    pub fn region(&self, slots: u64) -> Option<(u64, u64)> {
        match *self {
            Place::Sbuf { base, slot_bytes } | Place::Psum { base, slot_bytes } => {
                Some((base, base.saturating_add(slots.saturating_mul(slot_bytes))))
            }
            Place::Hbm { .. } | Place::Scratch { .. } => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Allocation {
    pub places: BTreeMap<Tensor, Place>,
    /// The HBM tensors of the program, in order: parameters, then outputs, then constants.
    pub hbm: Vec<Tensor>,
    /// The scratch arenas, one per dtype used by HBM scratch: program tensors `hbm.len()..`.
    pub arenas: Vec<TensorDecl>,
    /// SBUF bytes per partition in use (the highest end of any buffer).
    pub sbuf_bytes: u64,
    /// PSUM banks in use (the highest bank used, plus one).
    pub psum_banks: u64,
    /// Live ranges `[first, last]` in program positions, per on-chip buffer.
    pub live: BTreeMap<Tensor, (usize, usize)>,
}

/// The live range of every buffer `bir` uses.
pub fn compute_live_ranges(bir: &Bir) -> BTreeMap<Tensor, (usize, usize)> {
    fn walk(
        bir: &Bir,
        nodes: &[BNode],
        pos: &mut usize,
        live: &mut BTreeMap<Tensor, (usize, usize)>,
    ) {
        for &n in nodes {
            match n {
                BNode::Inst(i) => {
                    let bi = &bir.insts[i];
                    for o in std::iter::once(&bi.dst).chain(bi.srcs.iter()) {
                        let r = live.entry(o.tensor).or_insert((*pos, *pos));
                        r.0 = r.0.min(*pos);
                        r.1 = r.1.max(*pos);
                    }
                    *pos += 1;
                }
                BNode::Loop(l) => {
                    let start = *pos;
                    let mut inner = BTreeMap::new();
                    walk(bir, &bir.loops[l].body, pos, &mut inner);
                    let end = pos.saturating_sub(1).max(start);
                    // Accessed in the loop: live for all of it.
                    for (t, _) in inner {
                        let r = live.entry(t).or_insert((start, end));
                        r.0 = r.0.min(start);
                        r.1 = r.1.max(end);
                    }
                }
            }
        }
    }
    let mut live = BTreeMap::new();
    walk(bir, &bir.body, &mut 0, &mut live);
    live
}

/// A buffer to place: (tensor, size in units, unit): SBUF in bytes (the unit: one slot),
/// PSUM in banks (the unit: one slot's bytes, whole banks), HBM scratch in elements rounded up
/// to 64 bytes (unit 1).
type Buffer = (Tensor, u64, u64);

/// The buffers to place, by memory.
#[derive(Default)]
struct Buffers {
    sbuf: Vec<Buffer>,
    psum: Vec<Buffer>,
    /// Per dtype name.
    scratch: BTreeMap<&'static str, Vec<Buffer>>,
}

/// Places every buffer `bir` uses.
pub fn allocate(func: &Function, bir: &Bir) -> Result<Allocation, BackendError> {
    let mut a = Allocation::default();
    let consts = func.consts.keys();
    for &t in func.params.iter().chain(func.outputs.iter()).chain(consts) {
        a.places.insert(t, Place::Hbm { index: a.hbm.len() });
        a.hbm.push(t);
    }
    let live = compute_live_ranges(bir);
    let bufs = collect_buffers(func, &live, &a)?;
    for scratch in bufs.scratch.values() {
        place_arena(func, scratch, &live, &mut a);
    }
    let sb = colour(&bufs.sbuf, &live);
    let ps = colour(&bufs.psum, &live);
    for (&(t, size, slot_bytes), &off) in bufs.sbuf.iter().zip(&sb) {
        a.places.insert(
            t,
            Place::Sbuf {
                base: off,
                slot_bytes,
            },
        );
        a.sbuf_bytes = a.sbuf_bytes.max(off.saturating_add(size));
    }
    for (&(t, banks, slot_bytes), &off) in bufs.psum.iter().zip(&ps) {
        a.places.insert(
            t,
            Place::Psum {
                base: off * PSUM_BANK_BYTES,
                slot_bytes,
            },
        );
        a.psum_banks = a.psum_banks.max(off.saturating_add(banks));
    }
    a.live = live;
    check_sbuf(func, &bufs.sbuf, a.sbuf_bytes)?;
    check_psum(func, &bufs.psum, a.psum_banks)?;
    Ok(a)
}

/// The buffers of every tensor live in `bir` but the kernel's HBM inputs and outputs (already
/// placed in `a`), or the error of a tensor the backend does not lower.
fn collect_buffers(
    func: &Function,
    live: &BTreeMap<Tensor, (usize, usize)>,
    a: &Allocation,
) -> Result<Buffers, BackendError> {
    let mut bufs = Buffers::default();
    for &t in live.keys() {
        let d = &func.tensors[t];
        let span = func.tensor_spans.get(t).copied().flatten();
        match d.memory {
            Memory::Hbm => {
                if d.kind == TensorKind::Local && !a.places.contains_key(&t) {
                    if d.slots() != 1 {
                        return Err(BackendError::MultiBufferedScratch {
                            tensor: d.name.clone(),
                            at: span,
                        });
                    }
                    let align = SBUF_ALIGN / d.dtype.size_bytes();
                    let elems = d.elems().div_ceil(align).saturating_mul(align);
                    bufs.scratch
                        .entry(d.dtype.name())
                        .or_default()
                        .push((t, elems, 1));
                }
            }
            Memory::Sbuf | Memory::Psum => {
                if d.shape.len() != 2 {
                    return Err(BackendError::TileDims {
                        tensor: d.name.clone(),
                        dims: d.shape.len(),
                        at: span,
                    });
                }
                let copy = d.shape[1].saturating_mul(d.dtype.size_bytes());
                if d.memory == Memory::Sbuf {
                    let slot_bytes = copy.div_ceil(SBUF_ALIGN).saturating_mul(SBUF_ALIGN);
                    bufs.sbuf
                        .push((t, slot_bytes.saturating_mul(d.slots()), slot_bytes));
                } else {
                    // A PSUM array of several banks (each access within one bank, checked by
                    // the front end and the simulator) takes whole contiguous banks per slot.
                    let banks = copy.div_ceil(PSUM_BANK_BYTES).max(1);
                    if banks > PSUM_BANKS {
                        return Err(BackendError::PsumTileTooLarge {
                            tensor: d.name.clone(),
                            bytes: copy,
                            bank: PSUM_BANK_BYTES,
                            at: span,
                        });
                    }
                    bufs.psum
                        .push((t, banks.saturating_mul(d.slots()), banks * PSUM_BANK_BYTES));
                }
            }
        }
    }
    Ok(bufs)
}

/// Colours the HBM scratch tensors of one dtype into one arena, a new program tensor of `a`
/// (named `scratch_<dtype>`, with underscores before it while the name is a kernel tensor's).
fn place_arena(
    func: &Function,
    bufs: &[Buffer],
    live: &BTreeMap<Tensor, (usize, usize)>,
    a: &mut Allocation,
) {
    let index = a.hbm.len() + a.arenas.len();
    let offs = colour(bufs, live);
    let mut size = 0;
    for (&(t, elems, _), &offset) in bufs.iter().zip(&offs) {
        a.places.insert(
            t,
            Place::Scratch {
                index,
                offset,
                elems,
            },
        );
        size = size.max(offset.saturating_add(elems));
    }
    let dtype = func.tensors[bufs[0].0].dtype;
    let taken = |n: &str| a.hbm.iter().any(|&t| func.tensors[t].name == n);
    let mut name = format!("scratch_{}", dtype.name());
    while taken(&name) {
        name.insert(0, '_');
    }
    a.arenas.push(TensorDecl {
        name,
        dtype,
        shape: vec![size],
        role: Role::Scratch,
        values: Vec::new(),
    });
}

/// The SBUF overflow error when the placed SBUF buffers end past the SBUF (`used` bytes per
/// partition), naming the buffers.
fn check_sbuf(func: &Function, sbuf: &[Buffer], used: u64) -> Result<(), BackendError> {
    if used <= SBUF_PARTITION_BYTES {
        return Ok(());
    }
    let list = capped_list(
        sbuf.iter()
            .map(|&(t, b, _)| format!("`{}` {b} bytes", func.display_name(t))),
        ", ",
    );
    let big = sbuf.iter().max_by_key(|x| x.1).map(|x| x.0);
    Err(BackendError::SbufOverflow {
        bytes: used,
        limit: SBUF_PARTITION_BYTES,
        buffers: list,
        at: big.and_then(|t| func.tensor_spans.get(t).copied().flatten()),
    })
}

/// The PSUM overflow error when the placed PSUM buffers use more than the PSUM's banks (`used`),
/// naming the buffers.
fn check_psum(func: &Function, psum: &[Buffer], used: u64) -> Result<(), BackendError> {
    if used <= PSUM_BANKS {
        return Ok(());
    }
    let list = capped_list(
        psum.iter().map(|&(t, b, _)| {
            format!(
                "`{}` {b} bank{} ({} bytes)",
                func.display_name(t),
                if b == 1 { "" } else { "s" },
                b * PSUM_BANK_BYTES
            )
        }),
        ", ",
    );
    let big = psum.iter().max_by_key(|x| x.1).map(|x| x.0);
    Err(BackendError::PsumOverflow {
        banks: used,
        limit: PSUM_BANKS,
        buffers: list,
        at: big.and_then(|t| func.tensor_spans.get(t).copied().flatten()),
    })
}

/// First-fit colouring of the interference graph, largest buffer first (ties by the start of
/// the live range): the offset of each buffer (in its units), in the order of `bufs`.
fn colour(bufs: &[Buffer], live: &BTreeMap<Tensor, (usize, usize)>) -> Vec<u64> {
    let ranges: Vec<(usize, usize)> = (bufs.iter())
        .map(|b| live.get(&b.0).copied().unwrap_or((0, 0)))
        .collect();
    // Two buffers interfere when their live ranges overlap.
    let interfere = |i: usize, j: usize| {
        let (a, b) = (ranges[i], ranges[j]);
        a.0 <= b.1 && b.0 <= a.1
    };
    let mut order: Vec<usize> = (0..bufs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(bufs[i].1), ranges[i].0));
    let mut off: Vec<Option<u64>> = vec![None; bufs.len()];
    // The buffers placed so far, by their placed interval `(offset, end)`: the first fit of the
    // next buffer walks its interfering ones in that order, and stops at the first gap it fits.
    let mut placed: Vec<(u64, u64, usize)> = Vec::with_capacity(bufs.len());
    for i in order {
        let mut at: u64 = 0;
        for &(s, e, _) in placed.iter().filter(|p| interfere(i, p.2)) {
            if at.saturating_add(bufs[i].1) <= s {
                break;
            }
            at = at.max(e);
        }
        off[i] = Some(at);
        let p = (at, at.saturating_add(bufs[i].1), i);
        let k = placed.partition_point(|q| (q.0, q.1) <= (p.0, p.1));
        placed.insert(k, p);
    }
    // Every buffer was given an offset by the loop above.
    off.into_iter().map(|o| o.unwrap_or(0)).collect()
}
