//! Compile time independent of the trip count: the synchronisation analysis and the wait pruning
//! run on a trip-clamped copy of the kernel (`backend/src/clamp.rs`). These tests check that the
//! copy decides exactly what the full analysis decides (the emitted programs are identical), on
//! every pipelining path (and with `--peel`), and that long loops compiled this way simulate to the
//! interpreter's bits with zero races.

use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use nkc::run::{self, RunOptions};
use penguin::pipeline::PipelineLog;
use runtime_sim::isa::{Engine, Expr, Op, Reg, Stmt, Term};
use std::path::PathBuf;

const MODES: [PipelineMode; 4] = [
    PipelineMode::Default,
    PipelineMode::Annotated,
    PipelineMode::Emergent,
    PipelineMode::None,
];

/// Kernels over `t` tiles of 128 rows: Mode A (stages), Mode B (stage ids and execution order),
/// and a plain loop (the emergent path).
fn kernels(t: usize, cols: usize) -> Vec<(String, String)> {
    let r = 128 * t;
    vec![
        (
            format!("tensor_add_{t}"),
            format!(
                "def add(a: nl.hbm[nl.float32, {r}, {cols}], b: nl.hbm[nl.float32, {r}, {cols}]):\n    \
                 c = nl.ndarray(({r}, {cols}), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
                 for i in nl.affine_range({t}, num_stages=3):\n        \
                 ta = nl.load(a[i * 128:(i + 1) * 128, :])\n        \
                 tb = nl.load(b[i * 128:(i + 1) * 128, :])\n        \
                 tc = nl.add(ta, tb)\n        \
                 nl.store(c[i * 128:(i + 1) * 128, :], value=tc)\n    return c\n"
            ),
        ),
        (
            format!("exp_stages_{t}"),
            format!(
                "def exp_stages(a: nl.hbm[nl.float32, {r}, {cols}]):\n    \
                 c = nl.ndarray(({r}, {cols}), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
                 for i in nl.affine_range({t}):\n        \
                 ta = nl.load(a[i * 128:(i + 1) * 128, :], stage_id=0, execution_order=2)\n        \
                 tb = nl.exp(ta, stage_id=1, execution_order=1)\n        \
                 nl.store(c[i * 128:(i + 1) * 128, :], value=tb, stage_id=2, execution_order=0)\n    \
                 return c\n"
            ),
        ),
        (
            format!("plain_{t}"),
            format!(
                "def plain(a: nl.hbm[nl.float32, {r}, {cols}]):\n    \
                 c = nl.ndarray(({r}, {cols}), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
                 for i in nl.affine_range({t}):\n        \
                 ta = nl.load(a[i * 128:(i + 1) * 128, :])\n        \
                 tb = nl.exp(ta)\n        \
                 tc = nl.add(tb, ta)\n        \
                 nl.store(c[i * 128:(i + 1) * 128, :], value=tc)\n    return c\n"
            ),
        ),
    ]
}

fn source(name: &str, text: &str) -> Source {
    Source {
        path: PathBuf::from(format!("{name}.nk")),
        text: text.to_string(),
    }
}

fn compile(src: &Source, mode: PipelineMode, clamp: bool) -> backend::Compiled {
    compile_peeled(src, mode, clamp, false)
}

/// [`compile`], with the extended loops peeled first when `peel` (`--peel`).
fn compile_peeled(src: &Source, mode: PipelineMode, clamp: bool, peel: bool) -> backend::Compiled {
    let mut func = nkc::driver::compile(src, None).unwrap();
    let mut log = PipelineLog::default();
    nkc::pipeline::pipeline_path(&mut func, mode, &mut log).unwrap();
    if peel {
        penguin::pipeline::peel::peel_extended_loops(&mut func, &mut log).unwrap();
    }
    nkc::pipeline::prepare_backend(&mut func, mode).unwrap();
    nkc::pipeline::codegen(&func, Some(&src.text), clamp).unwrap()
}

/// The clamped analysis decided what the full one did: the same program, the same waits found
/// redundant.
fn assert_same_decisions(clamped: &backend::Compiled, full: &backend::Compiled, what: &str) {
    assert_eq!(
        format!("{:?}", clamped.program),
        format!("{:?}", full.program),
        "{what}"
    );
    assert_eq!(clamped.redundant_waits, full.redundant_waits, "{what}");
}

/// A peeled loop's prologue and epilogue copies access its rings beside it. The clamped copy
/// keeps the loop's first and last iterations, which are all those copies meet first, so it
/// still decides what the full analysis decides; and ring expansion walks a long peeled loop's
/// first and last iterations only (`expand.rs`), so it decides at 400 iterations what it decides
/// at 64 and 97, where it walks them all. (A clamped loop keeps at least `MAX_DISTANCE + 2 + L`
/// middle iterations, `L` the lcm of the ring depths: `default` rings a transferred tile as deep as
/// its DMA latency wants, 4 and 5 slots here, so `L` = 20 and 37 iterations are too few to clamp.)
#[test]
fn a_peeled_loop_is_clamped_and_decides_as_the_full_analysis() {
    // Per kernel and path: the ring depths at the first trip count.
    let mut rings = std::collections::BTreeMap::new();
    for t in [64, 97, 400] {
        for (name, text) in kernels(t, 128) {
            let src = source(&name, &text);
            for mode in [PipelineMode::Default, PipelineMode::Annotated] {
                if name.starts_with("plain") {
                    continue;
                }
                let clamped = compile_peeled(&src, mode, true, true);
                let full = compile_peeled(&src, mode, false, true);
                assert!(
                    clamped.clamped_loops > 0,
                    "{name} --pipeline {} --peel: the loop was not clamped",
                    mode.name()
                );
                assert_same_decisions(
                    &clamped,
                    &full,
                    &format!("{name} --pipeline {} --peel", mode.name()),
                );
                let depths: Vec<(String, Vec<u32>)> = (clamped.func.tensors.values())
                    .map(|td| (td.name.clone(), td.block.iter().map(|b| b.count).collect()))
                    .collect();
                let kernel = name
                    .rsplit_once('_')
                    .map_or(name.clone(), |(k, _)| k.to_string());
                let first = rings.entry((kernel, mode.name())).or_insert(depths.clone());
                assert_eq!(*first, depths, "{name} --pipeline {} --peel", mode.name());
            }
        }
    }
    assert!(rings
        .values()
        .any(|d| d.iter().any(|(_, c)| c.iter().any(|&n| n > 2))));
}

#[test]
fn the_clamped_analysis_emits_the_full_analysis_program() {
    // At 37 and 50 tiles the annotated loops are long enough to clamp; the emergent path unrolls
    // by up to 4, and its loops clamp at 400 (the bound grows with the lcm of the ring depths).
    for t in [37, 50, 400] {
        for (name, text) in kernels(t, 128) {
            let src = source(&name, &text);
            for mode in MODES {
                if t == 400 && mode == PipelineMode::Annotated {
                    continue;
                }
                let clamped = compile(&src, mode, true);
                let full = compile(&src, mode, false);
                assert_eq!(full.clamped_loops, 0);
                if mode == PipelineMode::Annotated || t == 400 && mode != PipelineMode::None {
                    assert!(
                        clamped.clamped_loops > 0,
                        "{name} --pipeline {}: the loop was not clamped",
                        mode.name()
                    );
                }
                assert_same_decisions(
                    &clamped,
                    &full,
                    &format!("{name} --pipeline {}", mode.name()),
                );
                assert_eq!(clamped.dependences, full.dependences);
            }
        }
    }
}

#[test]
fn long_loops_simulate_to_the_interpreters_bits() {
    for (name, text) in kernels(64, 64) {
        let src = source(&name, &text);
        let peeled = [PipelineMode::Default, PipelineMode::Annotated].map(|m| (m, true));
        for (mode, peel) in MODES.map(|m| (m, false)).into_iter().chain(peeled) {
            if peel && name.starts_with("plain") {
                continue;
            }
            let opts = RunOptions {
                pipeline: mode,
                seed: 3,
                check: true,
                peel,
                ..RunOptions::default()
            };
            let report = run::run(&src, &opts, &mut PipelineLog::default())
                .unwrap_or_else(|f| panic!("{name} --pipeline {}: {f:?}", mode.name()));
            assert!(report.checked);
            let sim = report.sim.expect("the simulator ran");
            assert!(sim.races.is_empty(), "{name}: {:?}", sim.races);
        }
    }
}

/// A statement after a long loop that reads what one iteration wrote waits for the count at the
/// end of that iteration (`backend/src/codegen/sync/slack.rs`): decided on the clamped copy, the
/// instance it names is mapped to the kernel's (the copy's first iterations are the kernel's,
/// its upper half the kernel's last by a shift of the trip count), so the program is the one the
/// full analysis emits. `clamp_first_nested` reads its inner loop's first iterations (the loop is
/// clamped); `clamp_last` reads the last ones of a block that moves with the register (the copy
/// would not shift their addresses, so that loop keeps its trip count).
#[test]
fn a_read_after_a_clamped_loop_waits_for_the_iteration_it_reads_as_the_full_analysis() {
    let path = "tests/good/clamp_last.nk";
    let text = std::fs::read_to_string(path).expect("tests/good/clamp_last.nk is in the tree");
    let src = Source {
        path: PathBuf::from(path),
        text,
    };
    for kernel in ["clamp_first_nested", "clamp_last"] {
        for mode in MODES {
            let build = |clamp: bool| {
                let mut func = nkc::driver::compile(&src, Some(kernel)).unwrap();
                let mut log = PipelineLog::default();
                nkc::pipeline::pipeline_path(&mut func, mode, &mut log).unwrap();
                nkc::pipeline::prepare_backend(&mut func, mode).unwrap();
                nkc::pipeline::codegen(&func, Some(&src.text), clamp).unwrap()
            };
            let (clamped, full) = (build(true), build(false));
            let what = format!("{kernel} --pipeline {}", mode.name());
            // (The other paths ring or unroll the inner loop, which then keeps its trip count.)
            if kernel == "clamp_first_nested" && mode == PipelineMode::None {
                assert!(
                    clamped.clamped_loops > 0,
                    "{what}: the loop was not clamped"
                );
                // The statement after the inner loop reads its first eight columns.
                let want = Expr {
                    terms: vec![Term::Lin {
                        coeff: 120,
                        reg: Reg(0),
                    }],
                    constant: 8,
                };
                assert!(
                    Engine::ALL
                        .iter()
                        .any(|&e| has_wait(clamped.program.stream(e), &want)),
                    "{what}: no wait for count 120*r0 + 8"
                );
            }
            assert_same_decisions(&clamped, &full, &what);
        }
    }
}

/// Whether `stmts` (or a loop in them) hold a wait for `value`.
fn has_wait(stmts: &[Stmt], value: &Expr) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Inst(i) => matches!(&i.op, Op::Wait { value: v, .. } if v == value),
        Stmt::Loop(l) => has_wait(&l.body, value),
    })
}
