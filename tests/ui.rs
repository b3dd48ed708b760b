//! The UI corpus: every `tests/ui/*.nk` is a kernel with mistakes. Its header lines state the
//! diagnostics it must produce, one per line, as `# expect: E0123 @ 7` (code and the 1-based line
//! of the primary span). The test runs `frontend::check_source` on each file, asserts that the
//! multiset of (code, line) pairs equals the header exactly (and is not empty), and snapshots the
//! plain rendered diagnostics with insta, so that wording changes are reviewed.

mod common;

use common::{expectations, line_of, nk_files};

#[test]
fn ui_corpus() {
    // The checker recurses over the kernel's expressions; the test harness's 2 MiB thread stack
    // is less than the 8 MiB main thread `nkc` runs on, so run the corpus on a thread of that size.
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(ui_corpus_on_this_thread)
        .expect("a test thread starts")
        .join()
        .expect("the ui corpus passes");
}

fn ui_corpus_on_this_thread() {
    let files = nk_files("tests/ui");
    assert!(files.len() >= 30, "the corpus has {} files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("UTF-8 file name")
            .to_string();
        let source = std::fs::read_to_string(path).expect("readable file");
        let mut expected = expectations(&source);
        assert!(
            !expected.is_empty(),
            "tests/ui/{name}.nk states no `# expect:` line"
        );
        let errors = frontend::check_source(&source, None);
        let mut actual: Vec<(String, usize)> = errors
            .iter()
            .map(|e| (e.code.to_string(), line_of(&source, e.span.start)))
            .collect();
        expected.sort();
        actual.sort();
        let file = format!("tests/ui/{name}.nk");
        let text = frontend::diagnostic::render_plain(&file, &source, &errors);
        if expected != actual {
            failures.push(format!(
                "{file}:\n  expected {expected:?}\n  actual   {actual:?}\n{text}"
            ));
            continue;
        }
        insta::assert_snapshot!(name, text);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn expectations_are_parsed() {
    let src = "# expect: E0100 @ 3\n# expect: E0133 @ 12\ndef k():\n";
    assert_eq!(
        expectations(src),
        vec![("E0100".to_string(), 3), ("E0133".to_string(), 12)]
    );
    assert_eq!(line_of("a\nb\nc", 2), 2);
}
