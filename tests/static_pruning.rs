//! The static wait pruning (`backend/src/hb.rs`) against its oracle, the race detector: on every
//! example × every `--pipeline` path, the program compiled with the happens-before analysis is
//! the program compiled with the former pruning, which simulated the (trip-clamped) program
//! once per wait and kept a wait removed when the simulation reported no race.

use backend::codegen::emit::Emitted;
use backend::codegen::sync::Sync;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use penguin::pipeline::PipelineLog;
use runtime_sim::isa::{Program, Stmt, TensorDecl};
use runtime_sim::sim::{simulate, Options};
use std::path::{Path, PathBuf};

const MODES: [PipelineMode; 4] = [
    PipelineMode::Default,
    PipelineMode::Annotated,
    PipelineMode::Emergent,
    PipelineMode::None,
];

/// The most simulated instructions the oracle spends (instances times waits); past it it keeps
/// every wait.
const ORACLE_BUDGET: u64 = 200_000_000;

/// The former `prune_waits`: one at a time, a wait is removed when the program without it still
/// simulates (timing only) with no race.
fn prune_by_simulation(em: &Emitted, sync: &mut Sync, tensors: &[TensorDecl]) -> usize {
    let opts = Options {
        numerics: false,
        races: true,
        trace: false,
        max_races: 1,
        ..Options::default()
    };
    let races = |sync: &Sync| -> bool {
        let (prog, _) = backend::build_program(em, sync, tensors.to_vec());
        simulate(&prog, &[], &opts).map_or(true, |r| !r.races.is_empty())
    };
    let dynamic: u64 = em
        .nodes
        .values()
        .map(|n| n.loops.iter().map(|&l| em.loops[l].0).product::<u64>())
        .sum();
    let waits: u64 = sync.waits.values().map(|w| w.len() as u64).sum();
    if dynamic.saturating_mul(waits) > ORACLE_BUDGET || races(sync) {
        return 0;
    }
    let mut pruned = 0;
    for yi in em.nodes.keys() {
        let mut k = 0;
        while k < sync.waits[yi].len() {
            let w = sync.waits[yi].remove(k);
            if races(sync) {
                sync.waits[yi].insert(k, w);
                k += 1;
            } else {
                pruned += 1;
            }
        }
    }
    pruned
}

/// The `.nk` files of a folder, sorted; with `runs_only`, those marked `# runs`.
fn files(dir: &str, runs_only: bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "nk"))
        .filter(|p| !runs_only || std::fs::read_to_string(p).is_ok_and(|t| t.contains("# runs")))
        .collect();
    v.sort();
    v
}

/// The waits of a program, per engine, as text.
fn waits(p: &Program) -> Vec<String> {
    fn walk(p: &Program, stmts: &[Stmt], out: &mut Vec<String>) {
        for s in stmts {
            match s {
                Stmt::Inst(i) if matches!(i.op, runtime_sim::isa::Op::Wait { .. }) => {
                    out.push(runtime_sim::text::inst_to_string(p, i))
                }
                Stmt::Inst(_) => {}
                Stmt::Loop(l) => walk(p, &l.body, out),
            }
        }
    }
    let mut out = Vec::new();
    for (e, s) in p.streams.iter().enumerate() {
        out.push(format!("-- {}", runtime_sim::isa::Engine::ALL[e].name()));
        walk(p, s, &mut out);
    }
    out
}

/// Compiles every kernel of `file` on every path with both prunings and compares the programs;
/// returns (programs compared, waits in them). A kernel a path rejects with a diagnostic is
/// skipped.
fn compare_file(file: &Path) -> (usize, usize) {
    let src = Source::read(file).unwrap();
    let (module, _) = frontend::parse(&src.text);
    let (mut compared, mut total_waits) = (0, 0);
    for k in &module.kernels {
        for mode in MODES {
            let label = format!(
                "{} {} --pipeline {}",
                file.display(),
                k.name.name,
                mode.name()
            );
            let Ok(mut func) = nkc::driver::compile(&src, Some(&k.name.name)) else {
                continue;
            };
            let prepared =
                nkc::pipeline::pipeline_path(&mut func, mode, &mut PipelineLog::default())
                    .and_then(|()| nkc::pipeline::prepare_backend(&mut func, mode));
            if prepared.is_err() {
                continue;
            }
            let fast = backend::compile(&func, Some(&src.text));
            let oracle =
                backend::compile_with_pruner(&func, Some(&src.text), true, &prune_by_simulation);
            let (fast, oracle) = match (fast, oracle) {
                (Ok(f), Ok(o)) => (f, o),
                // A backend diagnostic (SBUF overflow, ...) comes before the pruning.
                (Err(f), Err(o)) if f.to_string() == o.to_string() => continue,
                (f, o) => panic!("{label}: {:?} vs {:?}", f.err(), o.err()),
            };
            let (a, b) = (waits(&fast.program), waits(&oracle.program));
            assert_eq!(
                a, b,
                "{label}: the static pruning's waits (left) differ from the oracle's"
            );
            assert!(
                fast.program == oracle.program,
                "{label}: the programs differ beyond their waits"
            );
            assert_eq!(fast.redundant_waits, oracle.redundant_waits, "{label}");
            compared += 1;
            total_waits += a.len() - 5;
        }
    }
    (compared, total_waits)
}

#[test]
fn the_static_pruning_keeps_exactly_the_waits_the_race_detector_needs() {
    let (mut compared, mut total_waits) = (0, 0);
    for f in files("examples", false) {
        let (c, w) = compare_file(&f);
        assert_eq!(c, 4, "{}: every path compiles", f.display());
        compared += c;
        total_waits += w;
    }
    println!("examples: {compared} programs compared, {total_waits} waits, identical");
    assert!(compared >= 4 * 17);
}

/// The same on the corpora's good kernels (`tests/good`, the pipeliner's `# runs` kernels),
/// which include HBM scratch shared by two tensors of one arena.
#[test]
fn the_static_pruning_agrees_with_the_race_detector_on_the_corpora() {
    let (mut compared, mut total_waits) = (0, 0);
    for f in files("tests/good", false)
        .into_iter()
        .chain(files("filetests/pipeline", true))
    {
        let (c, w) = compare_file(&f);
        compared += c;
        total_waits += w;
    }
    println!("corpora: {compared} programs compared, {total_waits} waits, identical");
    assert!(compared > 50);
}
