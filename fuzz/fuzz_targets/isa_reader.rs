//! Fuzzes the pseudo-ISA reader: any UTF-8 text is a program or a `ParseError` naming a line and a
//! column, never a panic; a program it reads prints to text that reads back to the same program.
//! Run with `cargo fuzz run isa_reader` from this folder (needs `cargo install cargo-fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match runtime_sim::text::parse(text) {
            Ok(p) => {
                let printed = runtime_sim::text::print(&p);
                let again = runtime_sim::text::parse(&printed).expect("printed programs read back");
                // NaN immediates never compare equal; compare the text instead.
                assert_eq!(runtime_sim::text::print(&again), printed);
                let _ = runtime_sim::validate::validate(&p);
            }
            Err(e) => assert!(e.line >= 1 && e.col >= 1),
        }
    }
});
