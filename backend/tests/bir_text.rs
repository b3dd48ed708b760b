//! BIR's text form and its verifier, on the files of `tests/bir/`:
//! - a file without `# error:` lines is a **round-trip** file: it reads, verifies, prints back
//!   exactly as written (comment and blank lines aside), and lowering the Penguin Function the
//!   reader built gives the same BIR again (the Function is a faithful view of the text);
//! - a file with `# error: MESSAGE` lines is a **verifier-rejection** file: it reads, and the
//!   verifier reports exactly as many errors, each containing one of the listed messages.
//!
//! Syntax errors (line, column, message) are tested inline below; `bir_parse_fuzz.rs` checks
//! that no text makes the reader panic.

use backend::bir::{lower_function, write_bir};
use backend::bir_parse::parse_bir;
use backend::bir_verify::verify_bir;
use std::path::{Path, PathBuf};

fn files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bir");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/bir exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bir"))
        .collect();
    out.sort();
    out
}

fn expected_errors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# error: "))
        .map(str::to_string)
        .collect()
}

fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn round_trip_files() {
    let mut n = 0;
    for path in files() {
        let text = std::fs::read_to_string(&path).expect("readable file");
        if !expected_errors(&text).is_empty() {
            continue;
        }
        n += 1;
        let (func, bir) =
            parse_bir(&text).unwrap_or_else(|e| panic!("{}: does not read: {e}", path.display()));
        if let Err(errs) = verify_bir(&func, &bir) {
            let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            panic!("{}: does not verify:\n{}", path.display(), msgs.join("\n"));
        }
        let written = write_bir(&func, &bir);
        assert_eq!(
            written,
            without_comments(&text),
            "{}: does not print back as written",
            path.display()
        );
        let (func2, bir2) = parse_bir(&written).expect("printed BIR reads back");
        assert_eq!(write_bir(&func2, &bir2), written, "{}", path.display());
        let lowered = lower_function(&func).expect("the reader's Function lowers");
        assert_eq!(
            write_bir(&func, &lowered),
            written,
            "{}: lowering the reader's Function gives other BIR",
            path.display()
        );
    }
    assert!(n >= 2, "at least two round-trip files");
}

/// Every schedule filetest's input also round-trips (they are `write_bir`'s output).
#[test]
fn schedule_inputs_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bir_schedules");
    for entry in std::fs::read_dir(&dir).expect("tests/bir_schedules exists") {
        let path = entry.expect("directory entry").path();
        let text = std::fs::read_to_string(&path).expect("readable file");
        let (func, bir) =
            parse_bir(&text).unwrap_or_else(|e| panic!("{}: does not read: {e}", path.display()));
        assert_eq!(
            write_bir(&func, &bir),
            without_comments(&text),
            "{}",
            path.display()
        );
    }
}

#[test]
fn verifier_rejection_files() {
    let mut n = 0;
    for path in files() {
        let text = std::fs::read_to_string(&path).expect("readable file");
        let expected = expected_errors(&text);
        if expected.is_empty() {
            continue;
        }
        n += 1;
        let (func, bir) =
            parse_bir(&text).unwrap_or_else(|e| panic!("{}: does not read: {e}", path.display()));
        let errs = match verify_bir(&func, &bir) {
            Ok(()) => panic!("{}: verified, expected `{}`", path.display(), expected[0]),
            Err(errs) => errs,
        };
        let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        for want in &expected {
            assert!(
                msgs.iter().any(|m| m.contains(want.as_str())),
                "{}: no error contains `{want}`; errors:\n{}",
                path.display(),
                msgs.join("\n")
            );
        }
        assert_eq!(
            msgs.len(),
            expected.len(),
            "{}: expected exactly the listed errors; got:\n{}",
            path.display(),
            msgs.join("\n")
        );
    }
    assert!(n >= 5, "at least five verifier-rejection files");
}

#[test]
fn syntax_errors_name_line_and_column() {
    let head = "bir k(x) -> () {\n  buffer x: hbm f32[128, 64] input\n  buffer t: sbuf f32[128, 64] local\n";
    let cases: &[(&str, &str)] = &[
        ("  dve.frobnicate t[0 +: 128, 0 +: 64]\n}\n", "4:3: unknown operation `frobnicate`"),
        ("  gpu.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]\n}\n", "4:3: unknown engine `gpu`"),
        ("  sp.load t[0 +: 128, 0 +: 64], z[0 +: 128, 0 +: 64]\n}\n", "4:33: undefined buffer `z`"),
        ("  dve.memset t[0 +: 128, 0 +: 64]\n}\n", "4:14: expected `(` and the parameters of `memset` (missing `value`)"),
        ("  pe.matmul(accumulate=maybe) t[0 +: 128]\n}\n", "4:24: expected `true` or `false`, found `maybe`"),
        ("  loop q0 = 0..4 (i = q0 + 0) {\n  }\n}\n", "4:8: expected a loop register"),
        ("  loop r0 = 1..4 (i = r0 + 0) {\n  }\n}\n", "4:13: a loop register counts from `0`"),
        ("  loop r0 = 0..4 (i = r1 + 0) {\n  }\n}\n", "4:23: expected the loop's register `r0`, found `r1`"),
        ("  @(k < 2) dve.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]\n}\n", "4:5: undefined induction variable `k`"),
        ("  dve.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]\n", "5:1: expected `}` to close the kernel body opened at line 1:16"),
        ("  dve.copy t[0 +: 128, 0 +: 64], t[99999999999999999999 +: 128, 0 +: 64]\n}\n", "affine expression has a coefficient out of the 64-bit range"),
        ("  dve.memset(value=0.0) t[0 +: 128, 0 +: 64]\n  buffer u: sbuf f32[1] local\n}\n", "5:3: expected a loop, an instruction or `}` (buffers are declared before the first instruction)"),
        ("  loop r0 = 0..4 (i = r0 + 0) {\n  }\n  loop r0 = 0..4 (i = r0 + 0) {\n  }\n}\n", "6:19: duplicate induction variable `i` (first declared at line 4:19)"),
        ("}\nextra\n", "5:1: expected end of input after the kernel"),
        ("  dve.copy t[0 +: 128, 0 +: 64] $\n}\n", "4:33: unexpected character `$`"),
    ];
    for (body, want) in cases {
        let text = format!("{head}{body}");
        match parse_bir(&text) {
            Ok(_) => panic!("reads, expected `{want}`:\n{text}"),
            Err(e) => {
                let got = e.to_string();
                assert!(
                    got.contains(want),
                    "got `{got}`, expected `{want}`:\n{text}"
                );
            }
        }
    }
}
