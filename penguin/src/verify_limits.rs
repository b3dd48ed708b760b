//! The machine's limits on a function read from text: what [`crate::verify`] checks of every
//! function, and, for Penguin IR that a user wrote (a `.pir` file), that every tensor fits the
//! memory it lives in.
//!
//! A function built from a kernel gets these limits from the front end (an SBUF tile fits a
//! partition), the pipeliner (widened SBUF and PSUM fit) and the backend's allocator (all buffers
//! together, a diagnostic naming them); the passes between may build rings the allocator then
//! refuses with a diagnostic, so these limits are no invariant of [`crate::verify_function`].
//! Text read from a user skips the front end: [`verify_input`] checks, on top of the verifier,
//! that each tensor alone, with all its slots, fits:
//! - an SBUF tensor takes at most [`SBUF_PARTITION_BYTES`] bytes per partition;
//! - a PSUM tensor takes at most [`PSUM_BANKS`] banks (each slot a whole bank, as the backend's
//!   PSUM rotation places it);
//! - an HBM tensor holds at most [`MAX_HBM_ELEMS`] elements (with all its slots).
//!
//! Every size is computed in `u128` from `u64` dimensions and `u32` slot counts, so nothing wraps;
//! past these limits, the sizes other passes compute in `u64` cannot wrap either.

use crate::ir::{Function, Memory, TensorData};
use crate::verify::{verify_function, AnyEntity, VerifierError};
use vocab::machine::{PSUM_BANKS, PSUM_BANK_BYTES, SBUF_PARTITION_BYTES};

/// The most elements an HBM tensor of a `.pir` file holds (all slots): 2^32, what a 32-bit
/// element index reaches (the interpreter's bound on one tensor).
pub const MAX_HBM_ELEMS: u128 = 1 << 32;

/// [`verify_function`], then the machine's limits (module doc): every violation of either.
pub fn verify_input(func: &Function) -> Result<(), Vec<VerifierError>> {
    let mut errors = verify_function(func).err().unwrap_or_default();
    errors.extend(machine_limits(func));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The tensors of `func` past the machine's limits, one error each.
pub fn machine_limits(func: &Function) -> Vec<VerifierError> {
    let mut errors = Vec::new();
    for (t, td) in func.tensors.iter() {
        if let Some(message) = past_limit(td) {
            errors.push(VerifierError {
                entity: AnyEntity::Tensor(t),
                location: format!("tensor {t} (`{}`)", td.name),
                message,
            });
        }
    }
    errors
}

/// Why `td` does not fit the memory it lives in, or `None` when it does.
fn past_limit(td: &TensorData) -> Option<String> {
    let slots: u128 = td.block.iter().map(|b| u128::from(b.count)).product();
    let free: u128 = (td.shape.iter().skip(1)).fold(1u128, |a, &n| a.saturating_mul(u128::from(n)));
    let elem = u128::from(td.dtype.size_bytes());
    let slot_note = |what: &str| match slots {
        1 => String::new(),
        _ => format!(" ({slots} {what})"),
    };
    match td.memory {
        Memory::Sbuf => {
            let bytes = free.saturating_mul(elem).saturating_mul(slots);
            (bytes > u128::from(SBUF_PARTITION_BYTES)).then(|| {
                format!(
                    "takes {bytes} bytes per partition{}; a partition of SBUF holds {SBUF_PARTITION_BYTES}",
                    slot_note("slots")
                )
            })
        }
        Memory::Psum => {
            let per_slot = free
                .saturating_mul(elem)
                .div_ceil(u128::from(PSUM_BANK_BYTES))
                .max(1);
            let banks = per_slot.saturating_mul(slots);
            (banks > u128::from(PSUM_BANKS)).then(|| {
                format!(
                    "takes {banks} PSUM banks{}; PSUM has {PSUM_BANKS}",
                    slot_note("slots of a bank or more")
                )
            })
        }
        Memory::Hbm => {
            let elems = (td.shape.iter())
                .fold(1u128, |a, &n| a.saturating_mul(u128::from(n)))
                .saturating_mul(slots);
            (elems > MAX_HBM_ELEMS).then(|| {
                format!(
                    "holds {elems} elements{}; an HBM tensor holds at most {MAX_HBM_ELEMS}",
                    slot_note("slots")
                )
            })
        }
    }
}
