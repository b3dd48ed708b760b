//! Every kernel of `examples/` and `tests/good/`, through the front end, verifies and round-trips
//! through the Penguin IR text form: `parse(write(f))` prints the same text, holds as many
//! entities of each kind, and verifies too.

use std::path::PathBuf;

mod common;

use common::nk_files;

fn kernel_files() -> Vec<PathBuf> {
    let mut files = nk_files("examples");
    files.extend(nk_files("tests/good"));
    assert!(files.len() >= 4, "the examples are missing: {files:?}");
    files
}

fn verify(f: &penguin::Function, what: &str) {
    if let Err(errs) = penguin::verify::verify_function(f) {
        let msgs: Vec<String> = errs.iter().map(|e| format!("  {e}")).collect();
        panic!("{what}: the verifier rejects it:\n{}", msgs.join("\n"));
    }
}

#[test]
fn every_kernel_verifies_and_round_trips() {
    let mut kernels = 0;
    for path in kernel_files() {
        let source = std::fs::read_to_string(&path).expect("readable kernel file");
        let (module, errors) = frontend::parse(&source);
        assert!(errors.is_empty(), "{}: syntax errors", path.display());
        for k in &module.kernels {
            let name = &k.name.name;
            let what = format!("{} (kernel `{name}`)", path.display());
            let f = frontend::compile(&source, Some(name))
                .unwrap_or_else(|e| panic!("{what}: does not compile: {e:?}"));
            verify(&f, &what);
            let text = penguin::write::write_function(&f);
            let g = penguin::parse::parse_function(&text)
                .unwrap_or_else(|e| panic!("{what}: the printed IR does not parse: {e}\n{text}"));
            assert_eq!(penguin::write::write_function(&g), text, "{what}");
            verify(&g, &format!("{what}, parsed back"));
            assert_eq!(
                (g.tensors.len(), g.axes.len(), g.stmts.len(), g.insts.len()),
                (f.tensors.len(), f.axes.len(), f.stmts.len(), f.insts.len()),
                "{what}: entity counts"
            );
            assert_eq!((&g.params, &g.outputs), (&f.params, &f.outputs), "{what}");
            kernels += 1;
        }
    }
    assert!(kernels >= 4, "only {kernels} kernels found");
}
