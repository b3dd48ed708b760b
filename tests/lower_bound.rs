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

mod common;

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

/// The `--peel` settings the sweeps run: both under `NKC_BOUND_SWEEP=all` (`make test-long`),
/// else only the kernel as written.
fn peel_settings() -> &'static [bool] {
    if std::env::var("NKC_BOUND_SWEEP").is_ok_and(|v| v == "all") {
        &[false, true]
    } else {
        &[false]
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
                for &peel in peel_settings() {
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
    assert!(runs > 150 * peel_settings().len(), "{runs} runs");
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

/// A 128 × 512 tile of which a mask keeps a 64 × 256 corner (rows and columns), loaded, scaled
/// and stored.
const CORNER: &str = "def corner(a: nl.hbm[nl.float32, 128, 512]):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(128)[:, None]
    iy = nl.arange(512)[None, :]
    m = (ix < 64) & (iy < 256)
    t = nl.load(a[ix, iy], mask=m)
    nl.store(out[ix, iy], value=nl.multiply(t, 3.0, mask=m), mask=m)
    return out
";

/// Masked kernels: the bound counts, per iteration, what each mask keeps (`dep_bound`), so it
/// stays below every run — a mask that drops most rows (`few_rows`), a corner of rows and
/// columns, ragged last tiles in one and two dimensions — and close to the best one: a bound
/// that counted a masked instruction as one element would be far below runs whose masks keep
/// nearly every row (`queues_rest.nk`'s were 2.0–2.5x below their best run).
#[test]
fn masked_kernels_are_bounded_by_what_their_masks_keep() {
    let corner = Source {
        path: std::path::PathBuf::from("corner.nk"),
        text: CORNER.to_string(),
    };
    let mut cases: Vec<(Source, String)> = vec![(corner, "corner".to_string())];
    for (file, kernels) in [
        (
            "tests/good/masked_tiles.nk",
            &["ragged_rows_cols", "nested_rest", "half_rows", "few_rows"][..],
        ),
        (
            "tests/good/queues_rest.nk",
            &["rows_and_rest", "rows_rest_weights", "three_and_rest"][..],
        ),
    ] {
        for k in kernels {
            cases.push((
                Source::read(std::path::Path::new(file)).unwrap(),
                k.to_string(),
            ));
        }
    }
    for (src, k) in &cases {
        let mut best = u64::MAX;
        let mut lb = 0;
        for mode in PATHS {
            let Some((cycles, bound)) = cycles_and_bound(src, Some(k.clone()), mode, false) else {
                continue;
            };
            assert!(
                bound <= cycles,
                "{k} --pipeline {}: lower bound {bound} above {cycles} cycles",
                mode.name()
            );
            best = best.min(cycles);
            lb = bound;
        }
        assert!(
            best * 2 <= lb * 3,
            "{k}: the best run {best} is more than 1.5x the bound {lb}"
        );
    }
}

/// A scatter moves as one piece (`codegen::queues`): its pieces may write the same rows, so split
/// on several queues each waited for the one before, a whole latency each. Every path runs the
/// scatters of `tests/good/indirect_add.nk` and of `tests/dependence_bound.rs`'s kernel (whose
/// bound counts the scatter's pieces one after the other) within 1.10x of the bound; split in
/// four pieces they ran at 2.0–2.3x. In a loop, a scatter follows its previous iteration on its
/// queue without a latency (`queues::chain`): `scatter_add_narrow`'s four scatters ran in 7,174
/// cycles (1.31x) when the loop's dependence graph weighed that link a whole latency, 5,782
/// without, on the paths that pipeline the loop (`none` and `annotated`, which leave this
/// un-annotated loop as written, run its iterations one after the other: 11,824).
#[test]
fn a_scatter_runs_near_its_bound() {
    let scatter = Source {
        path: std::path::PathBuf::from("scatter.nk"),
        text: common::SCATTER_ROWS.to_string(),
    };
    let add = Source::read(std::path::Path::new("tests/good/indirect_add.nk")).unwrap();
    let pieces = Source::read(std::path::Path::new("tests/good/scatter_pieces.nk")).unwrap();
    let pipelined = [
        PipelineMode::Default,
        PipelineMode::Emergent,
        PipelineMode::Auto,
    ];
    for (src, k, paths) in [
        (&scatter, "scatter_rows", &PATHS[..]),
        (&add, "scatter_add_bf16", &PATHS[..]),
        (&pieces, "scatter_add_narrow", &pipelined[..]),
    ] {
        for &mode in paths {
            let Some((cycles, bound)) = cycles_and_bound(src, Some(k.to_string()), mode, false)
            else {
                continue;
            };
            assert!(
                cycles * 100 <= bound * 110,
                "{k} --pipeline {}: {cycles} cycles against a bound of {bound}",
                mode.name()
            );
        }
    }
}
