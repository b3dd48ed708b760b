//! PSUM arrays that do not fit as declared, fitted by lifetime after lowering.
//!
//! A kernel may declare a PSUM array of more blocks than the PSUM holds,
//! `nl.ndarray((Q, K, nl.par_dim(128), 512), buffer=nl.psum)`, when each block lives only within
//! one iteration of the loops that index it: NKI allocates by lifetime, not by the declared block
//! count. The checker records every PSUM array of several blocks, with the diagnostic (E0141) of
//! one declared larger than the PSUM ([`crate::check::CheckedKernel::arrays`]). When the kernel's
//! PSUM tensors as declared do not fit the PSUM together, [`fit_arrays`] gives each such array,
//! once the kernel is lowered, one block per live iteration where the flow of values through it
//! allows ([`penguin::contract::contract_array`] and its ISL check); an array that still does not
//! fit alone gets its diagnostic. The backend's rings then give a contracted block as many slots
//! as its pipeline needs, as for a tile declared in the loop body, and its allocator reports
//! arrays that still do not fit together (E0502).
//!
//! The same holds for SBUF: an `nl.ndarray` SBUF array of several blocks declared larger than a
//! partition (E0174 at its declaration before) is contracted the same way, and diagnosed only if it
//! still does not fit. (SBUF arrays that fit alone are left to the allocator.)
//!
//! Invariant: a kernel whose PSUM tensors fit as declared and whose SBUF arrays each fit a
//! partition is never touched here, so it lowers exactly as before.

use crate::check::CheckedKernel;
use crate::diagnostic::Error;
use penguin::contract::contract_array;
use penguin::{Function, Memory};
use vocab::machine::{PSUM_BANK_BYTES, PSUM_PARTITION_BYTES, SBUF_PARTITION_BYTES};

/// Whether `k`'s PSUM tensors, as declared, need more than the PSUM (each a whole number of
/// banks), so that its PSUM arrays are fitted by lifetime.
pub fn needs_fit(k: &CheckedKernel) -> bool {
    psum_over(k) || sbuf_over(k)
}

/// Whether an SBUF array of `k` is declared larger than a partition.
fn sbuf_over(k: &CheckedKernel) -> bool {
    (k.arrays.iter())
        .any(|(t, d)| d.is_some() && k.tensors[t.as_u32() as usize].memory == Memory::Sbuf)
}

/// Whether `k`'s PSUM tensors, as declared, need more than the PSUM.
fn psum_over(k: &CheckedKernel) -> bool {
    let banks: u64 = (k.tensors.iter())
        .filter(|t| t.memory == Memory::Psum)
        .map(|t| {
            (t.shape[1].saturating_mul(t.dtype.size_bytes()))
                .div_ceil(PSUM_BANK_BYTES)
                .max(1)
        })
        .fold(0, u64::saturating_add);
    let psum_arrays =
        (k.arrays.iter()).any(|(t, _)| k.tensors[t.as_u32() as usize].memory == Memory::Psum);
    psum_arrays && banks.saturating_mul(PSUM_BANK_BYTES) > PSUM_PARTITION_BYTES
}

/// Contracts the PSUM arrays of `k` in its lowered form `func` when they do not fit as declared
/// ([`needs_fit`]): the diagnostics of those that still do not fit alone (empty: all fit).
pub fn fit_arrays(k: &CheckedKernel, func: &mut Function) -> Vec<Error> {
    let psum = psum_over(k);
    let mut errors = Vec::new();
    for (t, diagnostic) in &k.arrays {
        let (fit, limit) = match func.tensors[*t].memory {
            Memory::Psum => (psum, PSUM_PARTITION_BYTES),
            _ => (diagnostic.is_some(), SBUF_PARTITION_BYTES),
        };
        if !fit {
            continue;
        }
        contract_array(func, *t);
        if let Some(d) = diagnostic {
            if func.tensors[*t].bytes_per_partition() > limit {
                errors.push(d.clone());
            }
        }
    }
    errors
}
