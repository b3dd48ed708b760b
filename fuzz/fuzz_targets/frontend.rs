//! Fuzzes the whole front end: any UTF-8 text gives diagnostics or IR, never a panic.
//! Run with `cargo fuzz run frontend` from this folder (needs `cargo install cargo-fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = frontend::check_source(text, None);
        let _ = frontend::compile(text, None);
    }
});
