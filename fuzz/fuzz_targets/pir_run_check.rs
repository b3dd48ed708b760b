//! Fuzzes `nkc run --check` on Penguin IR text (`.pir`) in-process, on every pipelining path:
//! the outputs equal the interpreter's on the kernel as written, or the run fails with a user
//! error; an internal error or a panic is a finding (`tests/common/fuzz_checks.rs`).
//! Run with `cargo +nightly fuzz run pir_run_check ../tests/pir` from this folder.
#![no_main]

#[path = "../../tests/common/fuzz_checks.rs"]
mod fuzz_checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        fuzz_checks::pir_run_check(text, 2_000_000);
    }
});
