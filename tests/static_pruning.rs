//! The static wait pruning (`backend/src/hb.rs`) against its oracle, the race detector: on every
//! example × every `--pipeline` path, the program compiled with the happens-before analysis is
//! the program compiled with the former pruning, which simulated the (trip-clamped) program
//! once per wait and kept a wait removed when the simulation reported no race.

use backend::emit::Emitted;
use backend::sync::Sync;
use nkc::driver::Source;
use nkc::run::{self, PipelineMode};
use penguin::pipeline::PipelineLog;
use runtime_sim::isa::{Program, Stmt, TensorDecl};
use runtime_sim::sim::{simulate, Options};
use std::path::Path;

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
    };
    let races = |sync: &Sync| -> bool {
        let (prog, _) = backend::assemble(em, sync, tensors.to_vec());
        simulate(&prog, &[], &opts).map_or(true, |r| !r.races.is_empty())
    };
    let dynamic: u64 = em
        .nodes
        .iter()
        .map(|n| n.loops.iter().map(|&l| em.loops[l].0).product::<u64>())
        .sum();
    let waits: u64 = sync.waits.iter().map(|w| w.len() as u64).sum();
    if dynamic.saturating_mul(waits) > ORACLE_BUDGET || races(sync) {
        return 0;
    }
    let mut pruned = 0;
    for yi in 0..sync.waits.len() {
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

/// Every kernel of `examples/`, sorted.
fn all_examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("examples")
        .expect("examples/ is readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "nk"))
        .map(|p| p.display().to_string())
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

#[test]
fn the_static_pruning_keeps_exactly_the_waits_the_race_detector_needs() {
    let mut compared = 0;
    let mut total_waits = 0;
    for ex in all_examples() {
        let src = Source::read(Path::new(&ex)).unwrap();
        for mode in MODES {
            let mut func = nkc::driver::compile(&src, None).unwrap();
            run::prepare(
                &mut func,
                mode,
                true,
                &mut PipelineLog::default(),
                &mut Vec::new(),
            )
            .unwrap();
            run::apply_emergent(&mut func, mode).unwrap();
            let fast = backend::compile(&func, Some(&src.text)).unwrap();
            let oracle =
                backend::compile_with_pruner(&func, Some(&src.text), true, &prune_by_simulation)
                    .unwrap();
            let (a, b) = (waits(&fast.program), waits(&oracle.program));
            assert_eq!(
                a,
                b,
                "{ex} --pipeline {}: the static pruning's waits (left) differ from the oracle's",
                mode.name()
            );
            assert!(
                fast.program == oracle.program,
                "{ex} --pipeline {}: the programs differ beyond their waits",
                mode.name()
            );
            assert_eq!(fast.redundant_waits, oracle.redundant_waits);
            compared += 1;
            total_waits += a.len() - 5;
        }
    }
    println!("{compared} programs compared, {total_waits} waits, identical");
}
