//! Fuzzes `nkc run --check` in-process: the input picks a random kernel of
//! `tests/common/random_kernel.rs` (its first 8 bytes are the seed), a pipelining path (the
//! 9th) and whether to peel (`--peel`, the 10th); the kernel compiles and simulates to the
//! interpreter's bits with no race on that path, or the legality check refuses its schedule
//! (E04xx). Anything else, or a panic, is a finding.
//! Run with `cargo fuzz run run_check` from this folder (needs `cargo install cargo-fuzz`).
#![no_main]

#[path = "../../tests/common/random_kernel.rs"]
mod random_kernel;

use libfuzzer_sys::fuzz_target;
use nkc::run::PipelineMode;

fuzz_target!(|data: &[u8]| {
    let mut bytes = [0u8; 8];
    for (b, d) in bytes.iter_mut().zip(data) {
        *b = *d;
    }
    let seed = u64::from_le_bytes(bytes);
    let mode = match data.get(8).copied().unwrap_or(0) % 4 {
        0 => PipelineMode::Default,
        1 => PipelineMode::Annotated,
        2 => PipelineMode::Emergent,
        _ => PipelineMode::None,
    };
    let peel = data.get(9).is_some_and(|b| b & 1 == 1);
    random_kernel::run_checked_peeled(seed, mode, peel);
});
