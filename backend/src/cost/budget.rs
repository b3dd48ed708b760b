//! The SBUF and PSUM budget of every decision that adds ring slots before allocation.
//!
//! The emergent rings ([`crate::transform::emergent::plan`]), their realisation across a nest ([`crate::transform::emergent::nest`]), the
//! stage rings ([`crate::transform::emergent::stages`], [`crate::transform::emergent::auto`]), unrolling ([`crate::transform::unroll`]) and recurrence
//! expansion ([`crate::codegen::expand`]) all ask "do these slots still fit?", and all answer it here, with
//! one accounting:
//! - an SBUF tensor takes its bytes per partition, all slots together, rounded up to the
//!   allocator's alignment ([`crate::cost::budget::SBUF_ALIGN`]): [`tensor_bytes`], summed over the kernel
//!   by [`sbuf_in_use`]; one more slot of a tensor costs one slot rounded up the same way
//!   ([`slot_bytes`]);
//! - a PSUM tensor takes whole banks, one per slot, since a tile never crosses a bank
//!   ([`psum_slot_banks`], summed by [`psum_banks_in_use`]);
//! - every tensor an instruction of the kernel accesses counts, with all its slots, and nothing
//!   is shared by live range (the allocator may share; no decision counts on it). A tensor no
//!   instruction accesses (one whose values a full unroll renamed, [`crate::transform::flatten`]) takes no
//!   memory: the allocator places only live ranges. [`check_rings`] applies this to a set of
//!   proposed ring sizes at once.
//!
//! The budget is an estimate made on Penguin IR, before BIR exists: the allocator
//! ([`crate::codegen::alloc::allocate`]) rounds every slot of a ring separately, so a ring whose slot is not
//! a multiple of the alignment may take slightly more there than [`tensor_bytes`] counts; the
//! allocator's own check (a diagnostic, never a placement past capacity) is the last word.
//!
//! Invariants: nothing here changes the function; tensor dimensions and block counts are non-zero
//! (checked by the Penguin verifier), so a slot is never empty and every division is exact.

use penguin::ir::{Memory, StmtKind, TensorData};
use penguin::{Function, Tensor};
use runtime_sim::machine::{PSUM_BANKS, PSUM_BANK_BYTES, SBUF_PARTITION_BYTES};
use std::collections::BTreeSet;
use std::fmt;

/// The alignment of every SBUF slot, in bytes per partition (and of every scratch tensor's
/// offset in its arena, in bytes).
pub const SBUF_ALIGN: u64 = 64;

/// `bytes` rounded up to the allocator's SBUF alignment.
pub fn aligned(bytes: u64) -> u64 {
    bytes.div_ceil(SBUF_ALIGN) * SBUF_ALIGN
}

/// The SBUF bytes per partition of all of `td` (every slot), aligned as one buffer.
pub fn tensor_bytes(td: &TensorData) -> u64 {
    aligned(td.bytes_per_partition())
}

/// The SBUF bytes per partition of one slot of `td` when it has `slots` slots, aligned: what one
/// slot more or fewer costs.
pub fn slot_bytes(td: &TensorData, slots: u64) -> u64 {
    aligned(td.bytes_per_partition() / slots)
}

/// The SBUF bytes per partition every SBUF tensor of `func` takes with all its slots
/// ([`tensor_bytes`]; every tensor counted, with no sharing by live range).
pub fn sbuf_in_use(func: &Function) -> u64 {
    let used = accessed(func);
    (func.tensors.iter())
        .filter(|&(t, td)| td.memory == Memory::Sbuf && used.contains(&t))
        .map(|(_, td)| td)
        .map(tensor_bytes)
        .sum()
}

/// The SBUF bytes per partition ([`sbuf_in_use`]) and the PSUM banks ([`psum_banks_in_use`])
/// every tensor of a kernel takes, found together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InUse {
    pub sbuf: u64,
    pub psum_banks: u64,
}

/// [`sbuf_in_use`] and [`psum_banks_in_use`] of `func`, from one walk of it.
pub fn compute_in_use(func: &Function) -> InUse {
    let used = accessed(func);
    let mut in_use = InUse {
        sbuf: 0,
        psum_banks: 0,
    };
    for (_, td) in func.tensors.iter().filter(|(t, _)| used.contains(t)) {
        match td.memory {
            Memory::Sbuf => in_use.sbuf += tensor_bytes(td),
            Memory::Psum => in_use.psum_banks += psum_slot_banks(td) * td.slots(),
            Memory::Hbm => {}
        }
    }
    in_use
}

/// Whether `bytes` per partition fit in SBUF.
pub fn sbuf_fits(bytes: u64) -> bool {
    bytes <= SBUF_PARTITION_BYTES
}

/// The PSUM banks one slot of `td` takes.
pub fn psum_slot_banks(td: &TensorData) -> u64 {
    (td.bytes_per_partition() / td.slots()).div_ceil(PSUM_BANK_BYTES)
}

/// The PSUM banks every PSUM tensor of `func` takes with all its slots.
pub fn psum_banks_in_use(func: &Function) -> u64 {
    let used = accessed(func);
    (func.tensors.iter())
        .filter(|&(t, td)| td.memory == Memory::Psum && used.contains(&t))
        .map(|(_, td)| td)
        .map(|t| psum_slot_banks(t) * t.slots())
        .sum()
}

/// Whether `banks` PSUM banks fit.
pub fn psum_fits(banks: u64) -> bool {
    banks <= PSUM_BANKS
}

/// The tensors some instruction of `func` accesses.
fn accessed(func: &Function) -> BTreeSet<Tensor> {
    let mut used = BTreeSet::new();
    func.walk_stmts(|s, _| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                used.extend(d.srcs.iter().chain([&d.dst]).map(|o| o.tensor));
            }
        }
    });
    used
}

/// Which memory a set of ring sizes overflows ([`check_rings`]), and by how much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// SBUF would need `bytes` per partition.
    Sbuf { bytes: u64 },
    /// PSUM would need `banks` banks.
    Psum { banks: u64 },
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overflow::Sbuf { bytes } => write!(
                f,
                "SBUF would need {bytes} bytes per partition, more than {SBUF_PARTITION_BYTES}"
            ),
            Overflow::Psum { banks } => {
                write!(f, "PSUM would need {banks} banks, more than {PSUM_BANKS}")
            }
        }
    }
}

/// Checks that SBUF and PSUM hold every tensor of `func` once each tensor of `rings` has the
/// given number of slots (the others keep theirs); the error says which memory overflows.
pub fn check_rings(func: &Function, rings: &[(Tensor, u32)]) -> Result<(), Overflow> {
    let count_of = |t: Tensor| -> u64 {
        rings
            .iter()
            .find(|(r, _)| *r == t)
            .map_or(func.tensors[t].slots(), |&(_, c)| u64::from(c))
    };
    let mut sbuf = 0;
    let mut banks = 0;
    let used = accessed(func);
    for (t, td) in func.tensors.iter().filter(|(t, _)| used.contains(t)) {
        match td.memory {
            Memory::Sbuf => sbuf += aligned(td.bytes_per_partition() / td.slots() * count_of(t)),
            Memory::Psum => banks += psum_slot_banks(td) * count_of(t),
            Memory::Hbm => {}
        }
    }
    if !sbuf_fits(sbuf) {
        return Err(Overflow::Sbuf { bytes: sbuf });
    }
    if !psum_fits(banks) {
        return Err(Overflow::Psum { banks });
    }
    Ok(())
}
