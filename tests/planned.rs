//! The backend's plan handed on (`backend::planned`, issue 32 item 5: compile ÷ check): the
//! plan `retime` and `prefetch` leave is that of the kernel they leave, the backend adopts the
//! plan it is handed instead of planning the kernel again, and plans again when a pass of the
//! plan is printed.

use backend::planned::{compute_planned, Planned};
use nkc::driver::Source;
use nkc::pipeline::{CompileOptions, Context, PipelineMode};
use penguin::pipeline::PipelineLog;
use penguin::Function;
use std::path::PathBuf;

/// Every `.nk` file of `dir` (relative to the repository), sorted.
fn files(dir: &str) -> Vec<Source> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the directory is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "nk"))
        .collect();
    paths.sort();
    (paths.into_iter())
        .map(|path| Source {
            text: std::fs::read_to_string(&path).expect("the kernel is readable"),
            path,
        })
        .collect()
}

/// The kernel of `src` (its first when it has several) after the path `mode` and the
/// backend's transformations, with the plan the context kept for it.
fn prepared(src: &Source, mode: PipelineMode) -> (Function, Option<Planned>) {
    let mut log = PipelineLog::default();
    let mut cx = Context::new(CompileOptions::for_mode(mode), &mut log);
    let specs = frontend::Specs::new();
    let kernel = nkc::driver::parse(src)
        .expect("the kernel parses")
        .kernels
        .first()
        .map(|k| k.name.name.clone());
    let mut func = cx
        .lower(src, kernel.as_deref(), &specs)
        .expect("the kernel lowers");
    cx.pipeline(&mut func).expect("the path applies");
    cx.prepare_backend(&mut func)
        .expect("the transformations apply");
    let planned = cx.planned.take();
    (func, planned)
}

/// What tells two plans apart: the BIR (its text, which shows the order and the ring slots),
/// the passes run, the slots added and every loop's predicted period.
fn fingerprint(p: &Planned) -> (String, Vec<&'static str>, usize, Vec<u64>) {
    (
        backend::codegen::bir::write_bir(&p.func, &p.bir),
        p.passes.clone(),
        p.expansions.len(),
        p.schedules.iter().map(|s| s.predicted).collect(),
    )
}

/// On every example and `tests/good` kernel, on the paths that retime: the plan the context
/// keeps is the one the backend would compute from the kernel as left (a transformation that
/// changed the kernel after planning it, such as `delay_stores`, dropped it).
#[test]
fn the_plan_kept_is_that_of_the_kernel_left() {
    let mut kept = 0;
    for src in files("examples").iter().chain(&files("tests/good")) {
        for mode in [
            PipelineMode::Default,
            PipelineMode::Emergent,
            PipelineMode::Auto,
        ] {
            let (func, planned) = prepared(src, mode);
            let Some(planned) = planned else {
                continue;
            };
            kept += 1;
            let fresh = compute_planned(&func).expect("a planned kernel lowers");
            assert_eq!(
                fingerprint(&planned),
                fingerprint(&fresh),
                "{} on {}: the plan kept is not the kernel's",
                src.path.display(),
                mode.name()
            );
        }
    }
    assert!(kept > 50, "only {kept} kernels kept a plan");
}

/// The compiled kernel of `func` (input kernel), handed `planned`, printing after `print`; with
/// the passes recorded.
fn compile_handed(
    func: &Function,
    planned: Planned,
    print: Option<&str>,
) -> (backend::Compiled, Vec<String>) {
    let mut instrument = backend::instrument::Instrument::new(
        match print {
            Some(p) => backend::instrument::PrintAfter::Passes(vec![p.to_string()]),
            None => backend::instrument::PrintAfter::Nothing,
        },
        false,
    );
    let opts = backend::context::Options {
        clamp_trips: true,
        verify: false,
    };
    let prune: backend::Pruner<'_> =
        &|em, sync, _| backend::codegen::hb::compute_pruned_waits(em, sync);
    let compiled = backend::context::Context::new(func, None, opts, prune, &mut instrument)
        .with_planned(Some(planned))
        .run()
        .expect("the kernel compiles");
    let passes = instrument.times.into_iter().map(|t| t.pass).collect();
    (compiled, passes)
}

/// The backend adopts the plan it is handed: given the plan of another kernel, it compiles
/// that one (what it would never be given, which shows that it planned nothing itself), and
/// records the passes the plan ran. (Fails with the adoption removed from `Context::run`: the
/// kernel compiled is the input's.)
#[test]
fn the_backend_adopts_the_plan_it_is_handed() {
    let (a, _) = prepared(&files("examples")[0], PipelineMode::Default);
    let (mut b, _) = prepared(&files("tests/good")[0], PipelineMode::Default);
    b.name = "another_kernel".to_string();
    let planned = compute_planned(&b).expect("it lowers");
    let passes = planned.passes.clone();
    let (compiled, recorded) = compile_handed(&a, planned, None);
    assert_eq!(compiled.func.name, "another_kernel");
    assert_ne!(a.name, "another_kernel");
    assert!(passes.starts_with(&["lower-bir", "schedule", "modulo"]));
    assert_eq!(recorded[..passes.len()], passes[..]);
    assert_eq!(recorded[passes.len()], "alloc");
}

/// A plan is not adopted when one of its passes is printed (the plan keeps only its last
/// round's IR): the backend plans its input again.
#[test]
fn a_printed_pass_is_planned_again() {
    let (a, _) = prepared(&files("examples")[0], PipelineMode::Default);
    let (mut b, _) = prepared(&files("tests/good")[0], PipelineMode::Default);
    b.name = "another_kernel".to_string();
    let planned = compute_planned(&b).expect("it lowers");
    let (compiled, _) = compile_handed(&a, planned, Some("schedule"));
    assert_eq!(compiled.func.name, a.name);
}

/// The kernel of `file` as `retime` gets it on `default`: lowered, pipelined as annotated,
/// zeroing folded, flattened, unrolled and emergent-pipelined.
fn before_retime(file: &str) -> Function {
    let src = Source::read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file))
        .expect("the kernel is readable");
    let mut func = nkc::driver::compile(&src, None).expect("the kernel lowers");
    nkc::pipeline::pipeline_path(
        &mut func,
        PipelineMode::Default,
        &mut PipelineLog::default(),
    )
    .expect("the path applies");
    backend::transform::fold_zeros::fold_psum_zeros(&mut func);
    backend::transform::flatten::flatten_short_pipelines(&mut func);
    backend::transform::unroll::unroll_loops(&mut func);
    backend::transform::emergent::pipeline_emergent(&mut func);
    func
}

/// `retime` plans only a kernel with a store it may move: where every store follows an inner
/// loop (matmul's, `retime_unplanned_nest`) it plans nothing and leaves the kernel as it was;
/// where a flat loop stores its own tile (`tensor_add`), or writes back the rows its own
/// iteration loaded (`retime_unplanned_rmw`: the next iteration's load reads other rows, so the
/// store may pass it) it plans the kernel. (Fails with the early return of
/// `retime_stores_planned` removed: the first two are planned too.)
#[test]
fn retime_plans_only_a_kernel_with_a_store_it_may_move() {
    for file in ["examples/matmul.nk", "tests/good/retime_unplanned_nest.nk"] {
        let mut func = before_retime(file);
        let before = penguin::write_function(&func);
        let (log, planned) = backend::retime::retime_stores_planned(&mut func);
        assert!(log.is_empty(), "{file}: {log:?}");
        assert!(planned.is_none(), "{file}: planned");
        assert_eq!(penguin::write_function(&func), before, "{file}: changed");
    }
    for file in [
        "examples/tensor_add.nk",
        "tests/good/retime_unplanned_rmw.nk",
    ] {
        let mut func = before_retime(file);
        let (_, planned) = backend::retime::retime_stores_planned(&mut func);
        assert!(planned.is_some(), "{file}: not planned");
    }
}
