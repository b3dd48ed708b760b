//! Unit tests of the parser: the examples, the shape and spans of the tree, and recovery.

use super::parse;
use crate::ast::*;

/// Reads a file of the workspace, relative to the workspace root.
fn workspace_file(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

#[test]
fn every_example_parses_without_errors() {
    for (file, kernel) in [
        ("examples/tensor_add.nk", "tensor_add"),
        ("examples/matmul.nk", "matmul"),
        ("examples/softmax.nk", "softmax"),
        ("examples/exp_stages.nk", "exp_stages"),
    ] {
        let source = workspace_file(file);
        let (module, errors) = parse(&source);
        assert!(errors.is_empty(), "{file}: {errors:#?}");
        assert_eq!(module.kernels.len(), 1, "{file}");
        assert_eq!(module.kernels[0].name.name, kernel);
        assert!(module.items.is_empty(), "{file}");
    }
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_crash() {
    // 64 nested brackets are accepted.
    let ok = format!("x = {}1{}\n", "(".repeat(64), ")".repeat(64));
    let (module, errors) = parse(&ok);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(module.items.len(), 1);
    let ok = format!("x = a{}\n", "[1".repeat(64) + &"]".repeat(64));
    let (_, errors) = parse(&ok);
    assert!(errors.is_empty(), "{errors:#?}");
    // More is one diagnostic, and the lines around it still parse.
    for n in [65, 1000, 100_000] {
        let src = format!("y = 1\nx = {}1{}\nz = 2\n", "(".repeat(n), ")".repeat(n));
        let (module, errors) = parse(&src);
        assert_eq!(errors.len(), 1, "{n}: {errors:#?}");
        assert_eq!(errors[0].code, crate::codes::TOO_DEEP);
        assert_eq!(module.items.len(), 3);
        assert_eq!(module.items[1].kind, StmtKind::Error);
    }
    // Long operator chains and unary chains.
    for src in [
        format!("x = {}1\n", "-".repeat(100_000)),
        format!("x = 1{}\n", " + 1".repeat(100_000)),
        format!("x = {}\n", "a.".repeat(100_000) + "b"),
    ] {
        let (_, errors) = parse(&src);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert_eq!(errors[0].code, crate::codes::TOO_DEEP);
    }
    // Blocks nested too deeply.
    let mut src = String::from("def k(a: t):\n");
    for depth in 1..100 {
        src += &format!("{}for i in r:\n", "    ".repeat(depth));
    }
    src += &format!("{}pass\n", "    ".repeat(100));
    let (_, errors) = parse(&src);
    assert!(!errors.is_empty());
    assert!(errors.iter().any(|e| e.code == crate::codes::TOO_DEEP));
}
