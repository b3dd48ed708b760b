//! The nkc backend.
//!
//! It will own BIR (per-engine instructions on logical buffers lowered from Penguin IR), emergent
//! pipelining of un-annotated loops, the colouring allocators, address rotation (SBUF modulo slots
//! and PSUM rings), the list scheduler, synchronisation and pseudo-ISA emission
//! (`../shared/DESIGN.md`, "Backend").
//!
//! Nothing here is implemented yet: the crate exists so that the workspace has the shape of the
//! design, and so that the dependency direction `backend → penguin, runtime-sim` is fixed from the
//! start. The driver does not call into it.
