//! File-driven tests of the Penguin IR text form and verifier.
//!
//! - `tests/roundtrip/*.pir`: valid functions, written in the canonical form. Each must parse,
//!   verify, print back exactly as written (comment lines and blank lines aside), and survive
//!   `parse(write(f))` with the same entities.
//! - `tests/parse/*.pir`: texts the parser rejects. Header line `# error: MESSAGE` names the
//!   expected message (a fragment of `ParseError`'s Display, `line L:C: ...`).
//! - `tests/verify/*.pir`: texts that parse but that the verifier rejects. Every `# error: ...`
//!   header line names a fragment that some verifier error must contain, and there are exactly as
//!   many errors as header lines.

use penguin::{parse_function, verify_function, write_function, Function};
use std::path::{Path, PathBuf};

fn files(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("reading {}: {e}", root.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "pir"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no .pir files in {}", root.display());
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The `# error: ...` header fragments of a test file.
fn expected_errors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("# error:"))
        .map(|s| s.trim().to_string())
        .collect()
}

/// The text without comment lines and blank lines.
fn strip_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Asserts that two functions hold the same entities (spans aside).
pub fn assert_same_entities(a: &Function, b: &Function) {
    assert_eq!(a.name, b.name);
    assert_eq!(a.tensors.len(), b.tensors.len());
    for ((ta, da), (tb, db)) in a.tensors.iter().zip(b.tensors.iter()) {
        assert_eq!((ta, da), (tb, db));
    }
    assert_eq!(a.axes.len(), b.axes.len());
    for ((xa, da), (xb, db)) in a.axes.iter().zip(b.axes.iter()) {
        assert_eq!((xa, da), (xb, db));
    }
    assert_eq!(a.stmts.len(), b.stmts.len());
    for ((sa, da), (sb, db)) in a.stmts.iter().zip(b.stmts.iter()) {
        assert_eq!((sa, da), (sb, db));
        assert_eq!(a.annots[sa], b.annots[sb], "annotations of {sa}");
        assert_eq!(a.stage_tags[sa], b.stage_tags[sb], "stage tag of {sa}");
    }
    assert_eq!(a.insts.len(), b.insts.len());
    for ((ia, da), (ib, db)) in a.insts.iter().zip(b.insts.iter()) {
        assert_eq!(ia, ib);
        // Compare floats by bits: NaN immediates must survive too.
        assert_eq!(format!("{da:?}"), format!("{db:?}"), "instruction {ia}");
        assert_eq!(op_bits(&da.op), op_bits(&db.op), "immediates of {ia}");
    }
    assert_eq!(a.body, b.body);
    assert_eq!(a.params, b.params);
    assert_eq!(a.outputs, b.outputs);
}

fn op_bits(op: &penguin::Op) -> Vec<u32> {
    use penguin::{Op, Scale};
    match op {
        Op::TensorScalar { imm, .. } => vec![imm.to_bits()],
        Op::Activation {
            scale: Scale::Imm(v),
            ..
        } => vec![v.to_bits()],
        Op::Memset { value } => vec![value.to_bits()],
        _ => vec![],
    }
}

#[test]
fn roundtrip_files() {
    for path in files("roundtrip") {
        let text = read(&path);
        let f = parse_function(&text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", path.display()));
        if let Err(errs) = verify_function(&f) {
            let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            panic!("{}: does not verify:\n{}", path.display(), msgs.join("\n"));
        }
        let written = write_function(&f);
        assert_eq!(
            written,
            strip_comments(&text),
            "{}: the printer's canonical form differs from the file",
            path.display()
        );
        let g = parse_function(&written)
            .unwrap_or_else(|e| panic!("{}: printed text does not parse: {e}", path.display()));
        assert_eq!(write_function(&g), written, "{}", path.display());
        assert_same_entities(&f, &g);
    }
}

#[test]
fn parse_error_files() {
    for path in files("parse") {
        let text = read(&path);
        let expected = expected_errors(&text);
        assert_eq!(
            expected.len(),
            1,
            "{}: needs one `# error:` line",
            path.display()
        );
        match parse_function(&text) {
            Ok(_) => panic!("{}: parsed, expected `{}`", path.display(), expected[0]),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&expected[0]),
                    "{}: error `{msg}` does not contain `{}`",
                    path.display(),
                    expected[0]
                );
            }
        }
    }
}
#[test]
fn verify_error_files() {
    for path in files("verify") {
        let text = read(&path);
        let expected = expected_errors(&text);
        assert!(
            !expected.is_empty(),
            "{}: needs `# error:` lines",
            path.display()
        );
        let f = parse_function(&text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", path.display()));
        let errs = match verify_function(&f) {
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
}
