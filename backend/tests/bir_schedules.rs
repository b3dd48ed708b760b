//! Filetests of the backend's scheduling passes, BIR in: each `tests/bir_schedules/*.bir` file is
//! BIR text (`backend::bir::write_bir`'s form, as lowering leaves it) followed by the schedule it
//! must get, as `#` comment lines after the marker `# schedule:`. The test reads the BIR
//! ([`backend::bir_parse::parse_bir`]), verifies it, runs the list scheduler, the queue plan, the
//! dependence graph and the modulo scheduler, verifying BIR after each pass, and compares the
//! rendering `tests/schedules.rs` compares (`common::render_schedules`).
//!
//! Most inputs were generated from `tests/schedules/*.pir` (lowering + `write_bir`:
//! `cargo test -p backend --test bir_schedules -- --ignored` regenerates those, keeping their
//! expectations for the bless step); the `hand_*` files are written by hand, each for one pattern
//! of the dependence graph. `NKC_BLESS=1 cargo test -p backend --test bir_schedules` rewrites the
//! expectations (review the diff).

mod common;

use backend::bir::{lower_function, write_bir};
use backend::bir_parse::parse_bir;
use std::path::Path;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bir_schedules")
}

fn render(text: &str) -> String {
    let (func, bir) = parse_bir(text).unwrap_or_else(|e| panic!("the filetest's BIR reads: {e}"));
    common::render_schedules(&func, bir)
}

#[test]
fn bir_schedules_match_their_files() {
    let n = common::run_schedule_filetests(&dir(), "bir", render);
    assert!(n >= 20, "at least 20 BIR schedule filetests, found {n}");
}

/// Every input generated from a `.pir` filetest is still what lowering that IR writes (so the
/// two harnesses test the same BIR), and both get the same schedule.
#[test]
fn generated_inputs_match_their_penguin_ir() {
    let pir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schedules");
    for path in common::files(&pir, "pir") {
        let stem = path.file_stem().expect("a file name");
        let bir_path = dir().join(stem).with_extension("bir");
        let Ok(text) = std::fs::read_to_string(&bir_path) else {
            continue;
        };
        let ir = std::fs::read_to_string(&path).expect("readable filetest");
        let func = penguin::parse_function(&ir).expect("the filetest's IR parses");
        let bir = lower_function(&func).expect("the filetest's IR lowers");
        let input: String = text
            .split(common::MARKER)
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            write_bir(&func, &bir),
            input,
            "{}: not what lowering {} writes (regenerate with --ignored)",
            bir_path.display(),
            path.display()
        );
        let schedule = |t: &str| t.split(common::MARKER).nth(1).map(str::to_string);
        assert_eq!(
            schedule(&text),
            schedule(&ir),
            "{}: its schedule differs from {}'s",
            bir_path.display(),
            path.display()
        );
    }
}

/// Writes `tests/bir_schedules/NAME.bir` for every `tests/schedules/NAME.pir`: the lowered BIR
/// and the `.pir` file's expectation.
#[test]
#[ignore]
fn regenerate_inputs_from_penguin_ir() {
    let pir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schedules");
    std::fs::create_dir_all(dir()).expect("creatable directory");
    for path in common::files(&pir, "pir") {
        let ir = std::fs::read_to_string(&path).expect("readable filetest");
        let func = penguin::parse_function(&ir).expect("the filetest's IR parses");
        let bir = lower_function(&func).expect("the filetest's IR lowers");
        let expectation = ir.split(common::MARKER).nth(1).unwrap_or("");
        let mut text = format!(
            "# Generated from tests/schedules/{} (lowering + write_bir).\n",
            path.file_name().expect("a file name").to_string_lossy()
        );
        text.push_str(&write_bir(&func, &bir));
        text.push('\n');
        text.push_str(common::MARKER);
        text.push_str(expectation);
        let stem = path.file_stem().expect("a file name");
        std::fs::write(dir().join(stem).with_extension("bir"), text).expect("writable filetest");
    }
}
