//! Fuzzes `nkc suggest --write` in-process: the input picks a random kernel of
//! `tests/common/random_kernel.rs` (its first 8 bytes are the seed); the suggestion is written
//! over a copy with `nkc::write_file::write_atomically`, which then holds exactly it, with no
//! temporary file left, and runs bit-exact on the annotated path (`tests/common/fuzz_checks.rs`).
//! Run with `cargo +nightly fuzz run suggest_write` from this folder.
#![no_main]

#[path = "../../tests/common/fuzz_checks.rs"]
mod fuzz_checks;
#[path = "../../tests/common/random_kernel.rs"]
mod random_kernel;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = [0u8; 8];
    for (b, d) in bytes.iter_mut().zip(data) {
        *b = *d;
    }
    let seed = u64::from_le_bytes(bytes);
    let dir = std::env::temp_dir().join(format!("nkc-fuzz-suggest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    fuzz_checks::suggest_write(&random_kernel::random_kernel(seed), &dir);
});
