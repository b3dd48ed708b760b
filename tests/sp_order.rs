//! `sp`'s stream order is the scheduler's (issue 32, item 1): a load is not held behind a store
//! whose data is not ready. Across the boundary of an inner loop, the store after it is issued
//! in the next iteration of the nest, after that iteration's loads
//! (`backend::transform::delay_stores`); in a body the list scheduler orders, a ready load goes
//! before a store whose data is still being computed (`backend::codegen::schedule`). Every run
//! is checked against the interpreter bit for bit, with no race, and measured against the
//! program order it replaces, compiled from the same kernel without the move.

use backend::transform::remark::Remark;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use nkc::run::{self, Engine, RunOptions, RunReport};
use penguin::pipeline::PipelineLog;
use penguin::Function;
use runtime_sim::isa::{Engine as HwEngine, Stmt as IsaStmt};
use runtime_sim::sim::{simulate, Options, SimResult, Track};
use std::path::Path;

const FILE: &str = "tests/good/sched_sp_order.nk";

/// A checked run of `kernel` of `file` on `mode`: bit-exact and free of races.
fn checked(file: &str, kernel: &str, mode: PipelineMode) -> RunReport {
    let src = Source::read(Path::new(file)).unwrap();
    let opts = RunOptions {
        kernel: Some(kernel.to_string()),
        engine: Engine::Sim,
        pipeline: mode,
        seed: 5,
        check: true,
        ..RunOptions::default()
    };
    let r = run::run(&src, &opts, &mut PipelineLog::default())
        .unwrap_or_else(|f| panic!("{file} `{kernel}` --pipeline {}: {f:?}", mode.name()));
    assert!(r.checked, "{file} `{kernel}`: not compared");
    let sim = r.sim.as_ref().expect("engine sim");
    assert!(sim.races.is_empty(), "{file} `{kernel}`: {:?}", sim.races);
    r
}

/// The kernel as `prepare_backend` leaves it on `default` just before the stores are delayed:
/// lowered, pipelined as annotated, zeroing folded, flattened, unrolled, emergent-pipelined and
/// retimed.
fn before_delay(src: &Source, kernel: &str) -> Function {
    let mut func = nkc::driver::compile(src, Some(kernel)).unwrap();
    nkc::pipeline::pipeline_path(
        &mut func,
        PipelineMode::Default,
        &mut PipelineLog::default(),
    )
    .unwrap();
    backend::transform::fold_zeros::fold_psum_zeros(&mut func);
    backend::transform::flatten::flatten_short_pipelines(&mut func);
    backend::transform::unroll::unroll_loops(&mut func);
    backend::transform::emergent::pipeline_emergent(&mut func);
    backend::retime::retime_stores(&mut func);
    func
}

/// Compiled and simulated (timing only, with the race detector and the timeline).
fn simulated(src: &Source, func: &Function) -> SimResult {
    let compiled = nkc::pipeline::codegen(func, Some(&src.text), true).unwrap();
    let opts = Options {
        numerics: false,
        races: true,
        trace: true,
        max_races: 1,
        ..Options::default()
    };
    let r = simulate(&compiled.program, &[], &opts).unwrap();
    assert!(r.races.is_empty(), "{:?}", r.races);
    r
}

/// How many of `sp`'s transfer pieces of loads issue before its first store's: a transfer
/// (`dma qN DST, SRC`, after its guard) is a store when its destination is HBM.
fn loads_before_first_store(r: &SimResult) -> usize {
    let transfer = |inst: &str| -> Option<bool> {
        let op = match inst.strip_prefix("@(") {
            Some(rest) => rest.split_once(") ")?.1,
            None => inst,
        };
        let mut words = op.split_whitespace();
        (words.next() == Some("dma")).then(|| words.nth(1) == Some("hbm"))
    };
    let mut sp: Vec<(u64, bool)> = (r.trace.iter())
        .filter(|s| s.track == Track::Engine(HwEngine::Sp))
        .filter_map(|s| transfer(&s.inst).map(|store| (s.start, store)))
        .collect();
    sp.sort_unstable();
    sp.iter().take_while(|&&(_, store)| !store).count()
}

/// The stores moved on `default` for `kernel`.
fn delayed(r: &RunReport) -> Vec<&str> {
    (r.remarks.iter())
        .filter_map(|x| match x {
            Remark::StoreDelayed { tile, .. } => Some(tile.as_str()),
            _ => None,
        })
        .collect()
}

/// A store after an inner loop (a row block's scaled sum; a store three loops deep) goes after
/// the next iteration's loads: more of `sp`'s loads issue before its first store than in the
/// program order it replaces, and the run is faster. `annotated` keeps the user's order.
#[test]
fn a_store_after_an_inner_loop_is_issued_after_the_next_loads() {
    let src = Source::read(Path::new(FILE)).unwrap();
    for kernel in ["row_block_sums", "two_level_nest"] {
        let default = checked(FILE, kernel, PipelineMode::Default);
        assert_eq!(delayed(&default).len(), 1, "{:#?}", default.remarks);
        let annotated = checked(FILE, kernel, PipelineMode::Annotated);
        assert!(delayed(&annotated).is_empty(), "{:#?}", annotated.remarks);
        checked(FILE, kernel, PipelineMode::Emergent);

        let old = before_delay(&src, kernel);
        let mut new = old.clone();
        let log = backend::transform::delay_stores::delay_stores(&mut new);
        assert_eq!(log.len(), 1, "{kernel}: {log:?}");
        nkc::driver::verify(&new, "delaying stores").unwrap();
        let (a, b) = (simulated(&src, &old), simulated(&src, &new));
        let (la, lb) = (loads_before_first_store(&a), loads_before_first_store(&b));
        assert!(
            lb > la,
            "{kernel}: {lb} loads before the first store, {la} before"
        );
        let (ca, cb) = (a.stats.cycles, b.stats.cycles);
        assert!(
            cb < ca,
            "{kernel}: {cb} cycles against {ca} in program order"
        );
        // The delayed run is what `default` runs.
        let sim = default.sim.as_ref().expect("engine sim");
        assert_eq!(sim.stats.cycles, cb, "{kernel}");
    }
}

/// The examples whose store followed an inner loop (matmul_blocked: `pe` idled waiting for an
/// `rhs` load queued behind `store(res)`): the move applies, bit for bit, and `default` is faster
/// than the same kernel in program order.
#[test]
fn blocked_matmuls_no_longer_hold_their_loads() {
    for (file, kernel) in [
        ("examples/matmul_blocked.nk", "matmul_blocked"),
        ("tests/good/sched_nested.nk", "nested_matmul_store"),
        ("tests/good/nested_stages.nk", "nested"),
    ] {
        let src = Source::read(Path::new(file)).unwrap();
        let default = checked(file, kernel, PipelineMode::Default);
        assert!(
            !delayed(&default).is_empty(),
            "{file}: {:#?}",
            default.remarks
        );
        let old = before_delay(&src, kernel);
        let cycles = default.sim.as_ref().expect("engine sim").stats.cycles;
        let before = simulated(&src, &old).stats.cycles;
        assert!(
            cycles * 100 < before * 95,
            "{file}: {cycles} cycles against {before} in program order"
        );
    }
}

/// A body the list scheduler orders (no loop): the loads written after a store whose value is
/// computed late go before it on `sp`, and the run beats the order that issues the store first.
#[test]
fn a_ready_load_goes_before_a_late_store_in_a_list_scheduled_body() {
    let kernel = "store_then_loads";
    let src = Source::read(Path::new(FILE)).unwrap();
    let r = checked(FILE, kernel, PipelineMode::Default);
    let mut func = nkc::driver::compile(&src, Some(kernel)).unwrap();
    nkc::pipeline::prepare_backend(&mut func, PipelineMode::Default).unwrap();
    let compiled = nkc::pipeline::codegen(&func, Some(&src.text), true).unwrap();
    // In `sp`'s stream, both loads written after the wide store come before it.
    let sp: Vec<&str> = (compiled.program.stream(HwEngine::Sp).iter())
        .filter_map(|s| match s {
            IsaStmt::Inst(i) => i.meta.stmt.as_deref(),
            IsaStmt::Loop(_) => None,
        })
        .collect();
    let first = |needle: &str| sp.iter().position(|s| s.contains(needle)).unwrap();
    assert!(first("nl.load(y") < first("nl.store(a"), "{sp:?}");
    assert!(first("nl.load(z") < first("nl.store(a"), "{sp:?}");
    // Against the program order (the store first): the loads no longer wait for the exponential.
    let cycles = r.sim.as_ref().expect("engine sim").stats.cycles;
    let written = simulated_in_program_order(&src, &func);
    assert!(
        cycles < written,
        "{cycles} cycles against {written} in program order"
    );
}

/// A body the list scheduler orders holding a loop that stores: a load written after the loop
/// (one the loop does not touch), or a loop that only loads, goes before it on `sp`, instead of
/// waiting behind the loop's last store, and the run beats the program order where that issues
/// the loop first. Without the rule (`schedule::list_order`'s nested loop that stores), the loop
/// comes first and both checks fail; with it for load instructions only, they fail on
/// `stores_then_loading_loop`. (In `two_loops_and_a_bias` the program order already issues one loop, the short one,
/// before the load; the critical path orders the two loops the other way, 40 cycles slower, and
/// was 2,430 cycles slower still with the load behind both.)
#[test]
fn a_ready_load_goes_before_a_loop_that_stores() {
    let file = "tests/good/loads_after_loops.nk";
    let src = Source::read(Path::new(file)).unwrap();
    for (kernel, load, first_in_program) in [
        ("blocks_then_column_max", "nl.load(w", true),
        ("two_loops_and_a_bias", "nl.load(c", false),
        ("stores_then_loading_loop", "nl.load(w", true),
    ] {
        let r = checked(file, kernel, PipelineMode::Default);
        checked(file, kernel, PipelineMode::Emergent);
        checked(file, kernel, PipelineMode::Annotated);
        let mut func = nkc::driver::compile(&src, Some(kernel)).unwrap();
        nkc::pipeline::prepare_backend(&mut func, PipelineMode::Default).unwrap();
        let compiled = nkc::pipeline::codegen(&func, Some(&src.text), true).unwrap();
        // `sp`'s top-level stream: the load's pieces (or the loop that holds them) come before
        // the first loop that stores.
        let sp = compiled.program.stream(HwEngine::Sp);
        let first_storing_loop = (sp.iter())
            .position(|s| matches!(s, IsaStmt::Loop(_)) && holds(s, "nl.store("))
            .expect("a loop that stores on sp");
        let first_load = (sp.iter())
            .position(|s| holds(s, load))
            .expect("the load on sp");
        assert!(
            first_load < first_storing_loop,
            "{kernel}: the load at {first_load} in sp's stream, the loop that stores at \
             {first_storing_loop}"
        );
        let cycles = r.sim.as_ref().expect("engine sim").stats.cycles;
        let written = simulated_in_program_order(&src, &func);
        let bound = match first_in_program {
            true => written * 90,
            false => written * 101,
        };
        assert!(
            cycles * 100 < bound,
            "{kernel}: {cycles} cycles against {written} in program order"
        );
    }
}

/// Whether `s` is, or holds, an instruction of a statement whose text contains `needle`.
fn holds(s: &IsaStmt, needle: &str) -> bool {
    match s {
        IsaStmt::Inst(i) => i.meta.stmt.as_deref().is_some_and(|t| t.contains(needle)),
        IsaStmt::Loop(l) => l.body.iter().any(|s| holds(s, needle)),
    }
}

/// The cycles of `func` compiled with every body in program order: the backend's passes in
/// their table's order, the list scheduler's order replaced by the one `lower-bir` built.
fn simulated_in_program_order(src: &Source, func: &Function) -> u64 {
    use backend::passes::{Flow, PASSES};
    let mut instrument = backend::instrument::Instrument::default();
    let prune = |em: &backend::codegen::emit::Emitted,
                 sync: &mut backend::codegen::sync::Sync,
                 _: &[runtime_sim::isa::TensorDecl]| {
        backend::codegen::hb::compute_pruned_waits(em, sync)
    };
    let opts = backend::context::Options::default();
    let mut cx = backend::Context::new(func, Some(&src.text), opts, &prune, &mut instrument);
    let mut lowered = None;
    let mut i = 0;
    while let Some(pass) = PASSES.get(i) {
        let flow = (pass.run)(&mut cx).unwrap();
        match pass.name {
            "lower-bir" => lowered = Some(cx.bir.clone()),
            "schedule" => cx.bir = lowered.clone().expect("lower-bir runs first"),
            _ => {}
        }
        i = match flow {
            Flow::Goto(to) | Flow::Skip(Some(to)) => {
                PASSES.iter().position(|p| p.name == to).unwrap()
            }
            _ => i + 1,
        };
    }
    let program = cx.program.take().expect("assemble ran");
    let opts = Options {
        numerics: false,
        races: true,
        max_races: 1,
        ..Options::default()
    };
    let r = simulate(&program, &[], &opts).unwrap();
    assert!(r.races.is_empty(), "{:?}", r.races);
    r.stats.cycles
}
