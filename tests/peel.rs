//! `--peel`: the annotated path with a physical prologue and epilogue
//! (`penguin/src/pipeline/peel.rs`) against the predicated extended loop.
//!
//! - Every annotated example and every `# runs` kernel of `filetests/pipeline` gives the same bits
//!   peeled and predicated, interpreted and simulated (no race), and the bits of the kernel as
//!   written, with each annotated loop's trip count set to 1, 2, stages − 1, stages and 16 (the
//!   HBM arrays grown to what the loop then reaches).
//! - The steady-state loop of a peeled program holds no guard: read off the emitted pseudo-ISA.
//! - The peeled IR prints and reads back, and `nkc compare --peel` reports both variants.

use nkc::pipeline::PipelineMode;

use penguin::interp;
use penguin::ir::Memory;
use penguin::pipeline::{self, PipelineLog, PipelineOptions};
use penguin::{Axis, Function};
use runtime_sim::isa::Stmt as IsaStmt;
use std::path::PathBuf;

mod common;

use common::{nk_files, nkc, stderr, stdout};

/// Every annotated example and every `# runs` kernel of the pipeliner corpus.
fn annotated_kernels() -> Vec<(PathBuf, Function)> {
    let corpus = nk_files("filetests/pipeline").into_iter().filter(|p| {
        std::fs::read_to_string(p).is_ok_and(|s| s.lines().any(|l| l.trim() == "# runs"))
    });
    nk_files("examples")
        .into_iter()
        .chain(corpus)
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).expect("a readable kernel");
            let func =
                frontend::compile(&text, None).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
            let annotated = !pipeline::targets::find_targets(&func).targets.is_empty();
            annotated.then_some((p, func))
        })
        .collect()
}

/// `func` with the trip count of each outermost annotated loop set by `trip` (from its stage
/// count), and every HBM array grown to hold every element the loops then reach (the new
/// elements of an input are random like the others; an output's unwritten elements stay zero on
/// every path). A pipelined loop nested in another (nested pipelining) keeps its trip count: it
/// may index on-chip tiles, which do not grow.
fn with_trips(func: &Function, trip: impl Fn(u32) -> i64) -> Function {
    let mut piped = func.clone();
    pipeline::pipeline_function(&mut piped, &PipelineOptions::default())
        .unwrap_or_else(|e| panic!("`{}` does not pipeline: {e:?}", func.name));
    let found = pipeline::targets::find_targets(func);
    let outermost: Vec<Axis> = (found.targets.iter().zip(&found.depth))
        .filter(|(_, &d)| d == 0)
        .map(|(&a, _)| a)
        .collect();
    let mut out = func.clone();
    for (a, data) in piped.axes.iter() {
        if let Some(p) = data.attrs.pipelined.filter(|_| outermost.contains(&a)) {
            out.axes[a].ub = out.axes[a].lb + trip(p.num_stages);
        }
    }
    let mut grow: Vec<(penguin::Tensor, usize, u64)> = Vec::new();
    out.walk_stmts(|s, loops| {
        let penguin::StmtKind::Insts(insts) = &out.stmts[s].kind else {
            return;
        };
        let bounds = |a: Axis| {
            let d = &out.axes[a];
            (d.lb, (d.ub - 1).max(d.lb))
        };
        if loops.iter().any(|&a| out.axes[a].trip_count() == 0) {
            return;
        }
        for &i in insts {
            let d = &out.insts[i];
            for o in std::iter::once(&d.dst).chain(&d.srcs) {
                if out.tensors[o.tensor].memory != Memory::Hbm {
                    continue;
                }
                for (k, (start, size)) in o.access.start.iter().zip(&o.access.size).enumerate() {
                    let hi = start.range(bounds).1 + *size as i64;
                    grow.push((o.tensor, k, hi as u64));
                }
            }
        }
    });
    for (t, k, hi) in grow {
        let dim = &mut out.tensors[t].shape[k];
        *dim = (*dim).max(hi);
    }
    penguin::verify::verify_function(&out)
        .unwrap_or_else(|e| panic!("`{}` with new trip counts: {e:?}", func.name));
    out
}

fn bits(arrays: &[interp::Array]) -> Vec<Vec<u32>> {
    arrays
        .iter()
        .map(|a| a.data.iter().map(|x| x.to_bits()).collect())
        .collect()
}

fn interpreted(func: &Function, inputs: &[interp::Array]) -> Vec<Vec<u32>> {
    let r = interp::interpret(func, inputs)
        .unwrap_or_else(|e| panic!("`{}` does not interpret: {e}", func.name));
    bits(&r.outputs)
}

/// The backend on `func` (the annotated path's own Penguin passes first), simulated: its
/// outputs' bits; a race fails the test.
fn simulated(func: &Function, inputs: &[interp::Array], what: &str) -> Vec<Vec<u32>> {
    let mut f = func.clone();
    nkc::pipeline::prepare_backend(&mut f, PipelineMode::Annotated)
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    let compiled =
        nkc::pipeline::codegen(&f, None, true).unwrap_or_else(|e| panic!("{what}: {e:?}"));
    let r = runtime_sim::sim::simulate(
        &compiled.program,
        inputs,
        &runtime_sim::sim::Options::default(),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(r.races.is_empty(), "{what}: races {:?}", r.races);
    r.outputs
        .iter()
        .map(|(_, a)| a.data.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// The pipelined function and its peeled copy.
fn pipelined_and_peeled(func: &Function) -> (Function, Function) {
    let mut piped = func.clone();
    pipeline::pipeline_function(&mut piped, &PipelineOptions::default())
        .unwrap_or_else(|e| panic!("`{}` does not pipeline: {e:?}", func.name));
    let mut peeled = piped.clone();
    pipeline::peel::peel_extended_loops(&mut peeled, &mut PipelineLog::default())
        .unwrap_or_else(|e| panic!("`{}` does not peel: {e:?}", func.name));
    penguin::verify::verify_function(&peeled)
        .unwrap_or_else(|e| panic!("peeled `{}` does not verify: {e:?}", func.name));
    (piped, peeled)
}

/// A trip count to try, named, as a function of the loop's stage count.
type TripChoice = (&'static str, fn(u32) -> i64);

#[test]
fn peeled_and_predicated_give_the_same_bits_at_every_trip_count() {
    let kernels = annotated_kernels();
    assert!(kernels.len() >= 20, "{} annotated kernels", kernels.len());
    let choices: [TripChoice; 5] = [
        ("1", |_| 1),
        ("2", |_| 2),
        ("stages - 1", |n| i64::from(n) - 1),
        ("stages", |n| i64::from(n)),
        ("16", |_| 16),
    ];
    let mut runs = 0;
    for (path, func) in &kernels {
        for (name, trip) in &choices {
            let what = format!("{} with trip count {name}", path.display());
            let written = with_trips(func, trip);
            let (piped, peeled) = pipelined_and_peeled(&written);
            let inputs = interp::random_inputs(&written, 5);
            let want = interpreted(&written, &inputs);
            assert!(
                interpreted(&piped, &inputs) == want,
                "{what}: predicated, interpreted"
            );
            assert!(
                interpreted(&peeled, &inputs) == want,
                "{what}: peeled, interpreted\n{}",
                penguin::write_function(&peeled)
            );
            assert!(
                simulated(&piped, &inputs, &what) == want,
                "{what}: predicated, simulated"
            );
            assert!(
                simulated(&peeled, &inputs, &what) == want,
                "{what}: peeled, simulated\n{}",
                penguin::write_function(&peeled)
            );
            runs += 1;
        }
    }
    println!("{runs} kernels × trip counts: the same bits peeled and predicated");
}

/// The peeled loops of `func`: `(iv, stages, trip, loop trip)`.
fn peeled_loops(func: &Function) -> Vec<(String, u32, i64, i64)> {
    func.axes
        .values()
        .filter_map(|a| {
            let p = a.attrs.pipelined.filter(|p| p.peeled)?;
            Some((a.iv_name.clone(), p.num_stages, p.orig_trip, a.trip_count()))
        })
        .collect()
}

#[test]
fn a_peeled_loop_runs_its_steady_state_and_no_guard_on_its_variable() {
    for (path, func) in annotated_kernels() {
        let (_, peeled) = pipelined_and_peeled(&func);
        let loops = peeled_loops(&peeled);
        assert!(!loops.is_empty(), "{}", path.display());
        for (iv, stages, trip, runs) in loops {
            assert_eq!(runs, (trip - i64::from(stages) + 1).max(0), "{iv}");
        }
        // No statement of the steady state is guarded on the loop's own variable.
        for (a, data) in peeled.axes.iter() {
            if !data.attrs.pipelined.is_some_and(|p| p.peeled) {
                continue;
            }
            for &s in &data.body {
                assert!(
                    peeled.stmts[s]
                        .preds
                        .iter()
                        .all(|g| g.expr.axes().all(|x| x != a)),
                    "{}: a guard on `{}` in the steady state",
                    path.display(),
                    data.iv_name
                );
            }
        }
    }
}

/// The instructions directly in the body of every hardware loop of `stmts` that holds an
/// instruction of a pipeline stage (the steady state, or an extended loop), with the loop's trip.
fn staged_loop_bodies(stmts: &[IsaStmt], out: &mut Vec<(u64, Vec<runtime_sim::isa::Inst>)>) {
    for s in stmts {
        if let IsaStmt::Loop(l) = s {
            let insts: Vec<runtime_sim::isa::Inst> = l
                .body
                .iter()
                .filter_map(|b| match b {
                    IsaStmt::Inst(i) => Some(i.clone()),
                    IsaStmt::Loop(_) => None,
                })
                .collect();
            if insts.iter().any(|i| i.meta.stage.is_some()) {
                out.push((l.trip, insts));
            }
            staged_loop_bodies(&l.body, out);
        }
    }
}

/// The staged loop bodies of `nkc compile FILE --emit isa --pipeline annotated [--peel]`.
fn emitted_loops(file: &str, peel: bool) -> Vec<(u64, Vec<runtime_sim::isa::Inst>)> {
    let mut args = vec!["compile", file, "--emit", "isa", "--pipeline", "annotated"];
    if peel {
        args.push("--peel");
    }
    let o = nkc(&args);
    assert!(o.status.success(), "{file}: {}", stderr(&o));
    let program = runtime_sim::text::parse(&stdout(&o))
        .unwrap_or_else(|e| panic!("{file}: the emitted program does not read back: {e:?}"));
    let mut out = Vec::new();
    for stream in &program.streams {
        staged_loop_bodies(stream, &mut out);
    }
    out
}

#[test]
fn the_steady_state_loop_of_a_peeled_program_holds_no_guard() {
    let mut checked = 0;
    for (path, func) in annotated_kernels() {
        let (_, peeled) = pipelined_and_peeled(&func);
        let steady: Vec<u64> = peeled_loops(&peeled)
            .iter()
            .filter(|l| l.3 > 0)
            .map(|l| l.3 as u64)
            .collect();
        let file = path.display().to_string();
        let loops = emitted_loops(&file, true);
        for (trip, insts) in &loops {
            let guarded: Vec<String> = insts
                .iter()
                .filter(|i| !i.pred.is_empty())
                .map(|i| format!("{:?}", i.op))
                .collect();
            assert!(
                guarded.is_empty(),
                "{file}: the peeled loop of trip {trip} holds guarded instructions: {guarded:?}"
            );
        }
        for trip in &steady {
            assert!(
                loops.iter().any(|(t, _)| t == trip),
                "{file}: no staged loop of trip {trip} in the peeled program"
            );
        }
        // The predicated program's extended loop does guard its stages.
        if !steady.is_empty() {
            assert!(
                emitted_loops(&file, false)
                    .iter()
                    .any(|(_, insts)| insts.iter().any(|i| !i.pred.is_empty())),
                "{file}: the predicated program has no guard in its extended loop"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} kernels with a steady state");
}

#[test]
fn a_peeled_function_prints_and_reads_back() {
    for (path, func) in annotated_kernels() {
        let (_, peeled) = pipelined_and_peeled(&func);
        let text = penguin::write_function(&peeled);
        let back = penguin::parse::parse_function(&text)
            .unwrap_or_else(|e| panic!("{}: {e:?}\n{text}", path.display()));
        assert_eq!(penguin::write_function(&back), text, "{}", path.display());
        assert!(text.contains("peeled)"), "{}", path.display());
    }
}

#[test]
fn compare_peel_reports_both_variants() {
    let o = nkc(&["compare", "examples/tensor_add.nk", "--peel", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let (pred, peel) = (&j["annotated"], &j["annotated_peeled"]);
    for v in [pred, peel] {
        assert!(v["cycles"].as_u64().is_some_and(|c| c > 0), "{v}");
        assert!(v["instructions"].as_u64().is_some_and(|c| c > 0), "{v}");
        assert!(v["program_size"].as_u64().is_some_and(|c| c > 0), "{v}");
    }
    assert_eq!(peel["peeled"], true);
    assert_eq!(pred["peeled"], false);
    // Peeled code is longer: the prologue and epilogue are written out.
    assert!(peel["program_size"].as_u64() > pred["program_size"].as_u64());
    // The predicated program runs instances guarded off; the peeled one none.
    let off = |v: &serde_json::Value| -> u64 {
        let engines = v["engines"].as_object().expect("engines");
        engines
            .values()
            .map(|e| e["predicated_off"].as_u64().expect("a count"))
            .sum()
    };
    assert!(off(pred) > 0, "{pred}");
    assert_eq!(off(peel), 0, "{peel}");

    let o = nkc(&["compare", "examples/tensor_add.nk", "--peel"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("| annotated | annotated_peeled |"), "{text}");
    assert!(text.contains("| program size |"), "{text}");
    assert!(
        text.contains("peeled: ") && text.contains(" predicated ("),
        "{text}"
    );

    let o = nkc(&[
        "compare",
        "examples/tensor_add.nk",
        "examples/softmax.nk",
        "--peel",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("predicated against peeled"), "{text}");
    assert!(
        text.contains("| tensor_add |") && text.contains("| softmax |"),
        "{text}"
    );
}

#[test]
fn peel_without_an_annotated_loop_is_a_note() {
    let o = nkc(&[
        "run",
        "examples/tensor_add.nk",
        "--pipeline",
        "emergent",
        "--peel",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing is peeled"), "{}", stderr(&o));
}

#[test]
fn the_backend_deepens_the_rings_of_a_peeled_loop() {
    let o = nkc(&[
        "run",
        "examples/tensor_add.nk",
        "--pipeline",
        "annotated",
        "--peel",
        "--log",
        "backend",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`ta` in loop `i` gets 3 slots (was 2)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_peeled_loop_waits_for_its_prologue_before_it_not_in_every_iteration() {
    let o = nkc(&[
        "compile",
        "examples/tensor_add.nk",
        "--emit",
        "isa",
        "--pipeline",
        "annotated",
        "--peel",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let program = runtime_sim::text::parse(&stdout(&o)).expect("the program reads back");
    let mut loops = 0;
    for stream in &program.streams {
        for s in stream {
            let IsaStmt::Loop(l) = s else { continue };
            loops += 1;
            for b in &l.body {
                let IsaStmt::Inst(i) = b else { continue };
                let runtime_sim::isa::Op::Wait { value, .. } = &i.op else {
                    break;
                };
                assert!(
                    !value.terms.is_empty(),
                    "an opening wait of the steady state does not depend on its iteration: {i:?}"
                );
            }
        }
    }
    assert!(loops >= 2, "{loops} loops");
}

#[test]
fn the_pipeliner_log_says_what_was_peeled() {
    let log = |file: &str| {
        let o = nkc(&[
            "compile",
            file,
            "--emit",
            "pipelined",
            "--peel",
            "--log",
            "pipeliner",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let steady = log("examples/tensor_add.nk");
    assert!(
        steady.contains(
            "loop `i`: peeled: a prologue of 5 statement(s) (iterations [0, 2)), the steady-state \
             loop [2, 16) without guards, an epilogue of 3 statement(s) (iterations [16, 18))"
        ),
        "{steady}"
    );
    let none = log("filetests/pipeline/few_iterations.nk");
    assert!(
        none.contains("loop `i`: peeled: no steady state (2 iteration(s) in 4 stages)"),
        "{none}"
    );
}

#[test]
fn peeling_too_many_copies_is_a_diagnostic() {
    // 400 statements in 400 stages: each side of the steady state copies 399 iterations, about
    // 80,000 instructions, more than `--peel` allows; predicated, the loop copies nothing.
    let n = 400;
    let mut text = String::from(
        "def big(a: nl.hbm[nl.float32, 8192, 8]):\n    c = nl.ndarray((8192, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n",
    );
    text += &format!("    for i in nl.affine_range(1024, num_stages={n}):\n");
    text += "        t0 = nl.load(a[i * 8:(i + 1) * 8, :])\n";
    for k in 1..n - 1 {
        text += &format!("        t{k} = nl.add(t{}, 1.0)\n", k - 1);
    }
    text += &format!(
        "        nl.store(c[i * 8:(i + 1) * 8, :], value=t{})\n    return c\n",
        n - 2
    );
    let dir = common::scratch("peel", "too_many_copies");
    let file = dir.join("big.nk");
    std::fs::write(&file, text).expect("a writable scratch directory");
    let file = file.display().to_string();
    let o = nkc(&["compile", &file, "--emit", "pipelined", "--peel"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[E0440]"), "{}", stderr(&o));
    let o = nkc(&["compile", &file, "--emit", "pipelined"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
