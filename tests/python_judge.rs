//! CPython as a second judge: every good kernel of the project must be syntactically valid Python
//! (`LANGUAGE.md`: "Every `.nk` file is syntactically valid Python 3"), and where CPython rejects a
//! file whose tokens are all fine (a NUL byte, a final line continuation), nkc must reject it too.
//! The judge must be present: with `python3` missing (or without numpy, which
//! `tests/numerics_agree.rs` uses) these tests fail, naming `make setup` (`scripts/setup.sh`),
//! which installs both.

use std::path::PathBuf;
use std::process::Command;

mod common;

use common::nk_files;

/// Every kernel that must compile: the examples and the good test kernels.
fn good_kernels() -> Vec<PathBuf> {
    let mut files = nk_files("examples");
    files.extend(nk_files("tests/good"));
    files
}

#[test]
fn every_good_kernel_is_valid_python() {
    common::require_python();
    let files = good_kernels();
    assert!(files.len() >= 4, "expected the examples, found {files:?}");
    let script = "import ast, sys\nfor f in sys.argv[1:]:\n    ast.parse(open(f).read(), f)\n";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(&files)
        .output()
        .expect("python3 ran a moment ago");
    assert!(
        out.status.success(),
        "CPython rejects a good kernel:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cpython_rejects_what_is_not_python() {
    // The judge must be able to say no, or the test above proves nothing.
    common::require_python();
    let out = Command::new("python3")
        .arg("-c")
        .arg("import ast; ast.parse('def k(:\\n    pass\\n')")
        .output()
        .expect("python3 ran a moment ago");
    assert!(!out.status.success());
}

/// A good kernel, to which each parity case appends its tail.
const KERNEL: &str = "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a[0:128, :])\n    nl.store(c[0:128, :], value=t)\n    return c\n";

#[test]
fn cpython_and_nkc_agree_on_nul_bytes_and_final_continuations() {
    // Files that are not Python although every token is fine, and their near misses that are:
    // nkc must say no exactly where CPython says no.
    common::require_python();
    let cases: [(&str, &str); 8] = [
        ("NUL in a comment", "# a\0b\n"),
        ("NUL at the end", "\0"),
        ("backslash-newline at the end", "\\\n"),
        ("backslash-CRLF at the end", "\\\r\n"),
        ("indented backslash-newline at the end", "    \\\n"),
        ("continuation followed by spaces", "\\\n   "),
        ("continuation followed by a blank line", "\\\n\n"),
        ("backslash at the end of a comment", "# a \\\n"),
    ];
    let dir = common::scratch("python-judge", "parity");
    let mut disagreements = Vec::new();
    for (k, (what, tail)) in cases.iter().enumerate() {
        let text = format!("{KERNEL}{tail}");
        let path = dir.join(format!("case{k}.nk"));
        std::fs::write(&path, &text).expect("the scratch directory is writable");
        let cpython_accepts = Command::new("python3")
            .arg("-c")
            // The judge of LANGUAGE.md: text mode, so `\r\n` reads as `\n`.
            .arg("import ast, sys\nast.parse(open(sys.argv[1]).read())")
            .arg(&path)
            .output()
            .expect("python3 ran a moment ago")
            .status
            .success();
        let errors = frontend::check_source(&text, None);
        if cpython_accepts != errors.is_empty() {
            disagreements.push(format!(
                "{what}: CPython {}, nkc {errors:?}",
                if cpython_accepts {
                    "accepts"
                } else {
                    "rejects"
                }
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
