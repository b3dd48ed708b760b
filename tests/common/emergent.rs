//! Helpers shared by the tests of emergent pipelining across loop nests (`tests/nest.rs`,
//! `tests/nest_stages.rs`): a `tests/good` kernel, the function the emergent path gets, a run of
//! emergent pipelining under given options measured on the simulator, a checked run's emergent
//! remarks, and a loop's trip.

use backend::transform::emergent::{EmergentOptions, EmergentRemark};
use backend::transform::remark::Remark;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use nkc::run::{self, RunOptions};
use penguin::pipeline::PipelineLog;
use penguin::Function;
use runtime_sim::sim::{simulate, Options};
use std::path::PathBuf;

/// The kernel `tests/good/NAME`.
pub fn good(name: &str) -> Source {
    Source::read(&PathBuf::from("tests/good").join(name)).unwrap()
}

/// The kernel as the emergent path gets it (annotations stripped).
pub fn lowered(src: &Source) -> Function {
    let mut func = nkc::driver::compile(src, None).unwrap();
    nkc::pipeline::pipeline_path(
        &mut func,
        PipelineMode::Emergent,
        &mut PipelineLog::default(),
    )
    .unwrap();
    func
}

/// Emergent pipelining under `opts`: (cycles, the function after emergent pipelining, its log).
/// The program must simulate with no race.
pub fn emergent_cycles(
    src: &Source,
    opts: &EmergentOptions,
) -> (u64, Function, Vec<EmergentRemark>) {
    let mut func = lowered(src);
    let log = backend::transform::emergent::pipeline_emergent_with(&mut func, opts);
    nkc::driver::verify(&func, "emergent pipelining").unwrap();
    let cycles = race_free_cycles(&func, src);
    (cycles, func, log)
}

/// The simulated cycles of `func` compiled (timing only, no numerics), asserting no race.
pub fn race_free_cycles(func: &Function, src: &Source) -> u64 {
    let compiled = nkc::pipeline::codegen(func, Some(&src.text), true).unwrap();
    let opts = Options {
        numerics: false,
        races: true,
        trace: false,
        max_races: 1,
        ..Options::default()
    };
    let r = simulate(&compiled.program, &[], &opts).unwrap();
    assert!(r.races.is_empty(), "{}: {:?}", src.path.display(), r.races);
    r.stats.cycles
}

/// A checked run (`--check`: bit-exact against the interpreter, inputs from `seed`) on `mode`,
/// with no race; its emergent remarks.
pub fn checked_remarks(src: &Source, mode: PipelineMode, seed: u64) -> Vec<EmergentRemark> {
    let opts = RunOptions {
        pipeline: mode,
        seed,
        check: true,
        peel: false,
        ..RunOptions::default()
    };
    let report = run::run(src, &opts, &mut PipelineLog::default())
        .unwrap_or_else(|f| panic!("{} --pipeline {}: {f:?}", src.path.display(), mode.name()));
    assert!(report.checked, "--check compared the outputs");
    let sim = report
        .sim
        .expect("engine sim reports the simulator's figures");
    assert!(sim.races.is_empty(), "{:?}", sim.races);
    report
        .remarks
        .into_iter()
        .filter_map(|r| match r {
            Remark::Emergent(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// The trip count of the loop with induction variable `iv`.
pub fn trip(func: &Function, iv: &str) -> i64 {
    let a = func.axes.values().find(|a| a.iv_name == iv).unwrap();
    a.trip_count()
}
