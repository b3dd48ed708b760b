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
