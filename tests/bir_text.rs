//! BIR's text form on real kernels: for every example on every pipelining path, the compiled
//! BIR (`nkc compile --emit bir`'s text) reads back ([`backend::codegen::bir_parse::parse_bir`]),
//! verifies, and prints back identically.

use backend::codegen::bir::write_bir;
use backend::codegen::bir_parse::parse_bir;
use backend::codegen::bir_verify::verify_bir;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use penguin::pipeline::PipelineLog;
use std::path::Path;

const MODES: [PipelineMode; 4] = [
    PipelineMode::Default,
    PipelineMode::Annotated,
    PipelineMode::Emergent,
    PipelineMode::None,
];

#[test]
fn compiled_bir_of_every_example_reads_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples exist")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "nk"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    for path in paths {
        let src = Source {
            text: std::fs::read_to_string(&path).expect("readable example"),
            path: path.clone(),
        };
        for mode in MODES {
            let mut func = nkc::driver::compile(&src, None).expect("the example compiles");
            nkc::pipeline::pipeline_path(&mut func, mode, &mut PipelineLog::default())
                .expect("the example pipelines");
            nkc::pipeline::prepare_backend(&mut func, mode).expect("the emergent path applies");
            let compiled =
                nkc::pipeline::codegen(&func, Some(&src.text), true).expect("the example compiles");
            let text = write_bir(&compiled.func, &compiled.bir);
            let what = format!("{} ({})", path.display(), mode.name());
            let (f, b) = parse_bir(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
            if let Err(errs) = verify_bir(&f, &b) {
                let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                panic!("{what}: does not verify:\n{}\n{text}", msgs.join("\n"));
            }
            assert_eq!(write_bir(&f, &b), text, "{what}: does not print back");
        }
    }
}
