//! The lower bound of a run (`max(resource, dependence, fill)`, `nkc run --json`'s
//! `lower_bound`) never exceeds the cycles any path achieves: every example and every
//! `tests/good` kernel on every path (`auto` included), with and without `--peel`, and random
//! kernels (`tests/common/random_kernel.rs`) on every path (the `tests/nki` corpus, with its
//! inputs, in `tests/nki_corpus.rs`). The bound is
//! computed on the kernel as written (`backend::cost::dep_bound`); a path that beat it would show the
//! bound counting something the program does not wait for (a transfer as a whole where the
//! program waits for it piece by piece, `tests/good/hbm_chain.nk`; a latency after a transfer
//! that the next one is queued behind, `tests/good/dma_chains.nk`). The order of HBM accesses
//! (`tests/good/hbm_reuse.nk`) and column blocks that wait for a whole load
//! (`tests/good/column_blocks.nk`) are in the corpus, so a constraint the bound counts that some
//! path does not obey shows here.

#[path = "common/random_kernel.rs"]
mod random_kernel;

use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use nkc::run::{self, RunOptions};
use penguin::pipeline::PipelineLog;

const PATHS: [PipelineMode; 5] = [
    PipelineMode::Default,
    PipelineMode::Annotated,
    PipelineMode::Emergent,
    PipelineMode::None,
    PipelineMode::Auto,
];

/// Runs `kernel` of `src` on `mode` (without the interpreter's check: the bits are other tests'
/// business) and returns `(cycles, lower bound)`, or `None` when the path refuses the kernel
/// (a pipelining annotation the annotated path rejects, E04xx).
fn cycles_and_bound(
    src: &Source,
    kernel: Option<String>,
    mode: PipelineMode,
    peel: bool,
) -> Option<(u64, u64)> {
    let opts = RunOptions {
        kernel,
        pipeline: mode,
        peel,
        check: false,
        ..RunOptions::default()
    };
    match run::run(src, &opts, &mut PipelineLog::default()) {
        Ok(r) => {
            let sim = r.sim.expect("engine sim reports the simulator's figures");
            assert!(
                sim.races.is_empty(),
                "{}: {:?}",
                src.path.display(),
                sim.races
            );
            Some((sim.stats.cycles, sim.lower_bound()))
        }
        Err(nkc::driver::Failure::Diagnostics(d))
            if d.iter().all(|e| e.code.starts_with("E04")) =>
        {
            None
        }
        Err(e) => panic!("{} --pipeline {}: {e:?}", src.path.display(), mode.name()),
    }
}

#[test]
fn no_path_beats_the_lower_bound_on_the_examples_and_the_good_corpus() {
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for dir in ["examples", "tests/good"] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "nk") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("hbm_chain.nk")),
        "the chain through HBM is in the corpus"
    );
    let (mut runs, mut tight) = (0, 0);
    for f in &files {
        let src = Source::read(f).unwrap();
        let (module, _) = frontend::parse(&src.text);
        for k in &module.kernels {
            for mode in PATHS {
                for peel in [false, true] {
                    let Some((cycles, bound)) =
                        cycles_and_bound(&src, Some(k.name.name.clone()), mode, peel)
                    else {
                        continue;
                    };
                    assert!(
                        bound <= cycles,
                        "{} `{}` --pipeline {}{}: lower bound {bound} above {cycles} cycles",
                        f.display(),
                        k.name.name,
                        mode.name(),
                        if peel { " --peel" } else { "" }
                    );
                    runs += 1;
                    tight += usize::from(cycles * 100 <= bound * 105);
                }
            }
        }
    }
    println!("{runs} runs, {tight} within 1.05x of the lower bound");
    assert!(runs > 300, "{runs} runs");
}

#[test]
fn no_path_beats_the_lower_bound_on_random_kernels() {
    let mut runs = 0;
    for seed in 0..24u64 {
        let src = Source {
            path: std::path::PathBuf::from(format!("random{seed}.nk")),
            text: random_kernel::random_case(seed),
        };
        for mode in PATHS {
            if let Some((cycles, bound)) = cycles_and_bound(&src, None, mode, false) {
                assert!(
                    bound <= cycles,
                    "seed {seed} --pipeline {}: lower bound {bound} above {cycles} cycles\n{}",
                    mode.name(),
                    src.text
                );
                runs += 1;
            }
        }
    }
    // Every seed on every path but `annotated`, which refuses some random annotations (E04xx).
    assert!(runs >= 4 * 24, "{runs} runs");
}
