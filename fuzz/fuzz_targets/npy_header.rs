//! Fuzzes the `.npy` reader (`nkc::npy::read_npy`) on arbitrary files: an array or an error of a
//! few hundred bytes, in time linear in the file's length, never a panic
//! (`tests/common/fuzz_checks.rs`). Run with `cargo +nightly fuzz run npy_header` from this folder.
#![no_main]

#[path = "../../tests/common/fuzz_checks.rs"]
mod fuzz_checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fuzz_checks::npy_header(data, &std::env::temp_dir());
});
