//! CPython as a second judge: every good kernel of the project must be syntactically valid Python
//! (`LANGUAGE.md`: "Every `.nk` file is syntactically valid Python 3"). Skipped, with a message, when
//! `python3` is not on the machine.

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
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not on this machine, so CPython cannot judge the kernels");
        return;
    }
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
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not on this machine");
        return;
    }
    let out = Command::new("python3")
        .arg("-c")
        .arg("import ast; ast.parse('def k(:\\n    pass\\n')")
        .output()
        .expect("python3 ran a moment ago");
    assert!(!out.status.success());
}
