//! Compile time as a multiple of check time, per example and pipelining path, measured in one
//! run (issue 32: at most 3x on every example). For each `examples/*.nk`, criterion times
//! `check` (the front end, the annotated pipeliner and its legality check:
//! `nkc::pipeline::check`, what `nkc check FILE` runs) and, on every `--pipeline` path, the whole
//! compile down to the pseudo-ISA (`Context::compile`, what `nkc compile FILE --emit isa` runs),
//! in-process, so that process start-up counts on neither side. The samples are taken in this run
//! (`iter_custom` records each one's time per iteration).
//!
//! **What is timed is CPU time, not wall time**: each sample is the process's CPU time
//! (`CLOCK_PROCESS_CPUTIME_ID`, every thread of the compiler) over its iterations, which is
//! what criterion reports and analyses too (`iter_custom` takes any duration). On a shared
//! machine wall time counts the other tenants' work whenever the scheduler runs them instead; CPU
//! time counts only the compiler's own (what noise remains, cache and frequency effects, only
//! adds time). At the end the bench prints a Markdown table of the medians, compile ÷ check per
//! path, the largest ratio, and the largest ratio of the minimums (the samples closest to each
//! command's own work). `cargo bench --bench compile_ratio` (add `-- attention` to time the
//! examples whose name contains `attention`).
//! `benches/compile_ratio.py` measures the same on whole processes of the release binary.

use criterion::{criterion_group, criterion_main, Criterion};
use nkc::driver::Source;
use nkc::pipeline::{CompileOptions, Context, PipelineMode};
use penguin::pipeline::{PipelineLog, PipelineOptions};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

const MODES: [PipelineMode; 5] = [
    PipelineMode::Default,
    PipelineMode::Annotated,
    PipelineMode::Emergent,
    PipelineMode::None,
    PipelineMode::Auto,
];

/// Per example, per command (`check` or a path's name), the time per iteration of every sample.
type Samples = BTreeMap<String, BTreeMap<&'static str, Vec<Duration>>>;

thread_local! {
    static SAMPLES: RefCell<Samples> = const { RefCell::new(BTreeMap::new()) };
}

fn check(src: &Source) {
    let specs = frontend::Specs::new();
    nkc::pipeline::check(
        src,
        None,
        &specs,
        &PipelineOptions::default(),
        &mut PipelineLog::default(),
    )
    .expect("every example checks");
}

fn compile(src: &Source, mode: PipelineMode) -> usize {
    let specs = frontend::Specs::new();
    let mut log = PipelineLog::default();
    let compiled = Context::new(CompileOptions::for_mode(mode), &mut log)
        .compile(src, None, &specs)
        .expect("every example compiles on every path");
    compiled.program.streams.len()
}

/// The CPU time the process has used so far, every thread counted.
fn cpu_now() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable `timespec`; the clock exists on every Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "the process CPU-time clock is readable");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Times `f` per iteration as criterion asks (CPU time), recording each sample under
/// `example`, `what`.
fn timed(example: &str, what: &'static str, iters: u64, mut f: impl FnMut()) -> Duration {
    let t = cpu_now();
    for _ in 0..iters {
        f();
    }
    let took = cpu_now().saturating_sub(t);
    SAMPLES.with(|s| {
        s.borrow_mut()
            .entry(example.to_string())
            .or_default()
            .entry(what)
            .or_default()
            .push(took / iters.max(1) as u32)
    });
    took
}

fn median(v: &[Duration]) -> f64 {
    let mut v: Vec<f64> = v.iter().map(Duration::as_secs_f64).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn minimum(v: &[Duration]) -> f64 {
    v.iter()
        .map(Duration::as_secs_f64)
        .fold(f64::INFINITY, f64::min)
}

fn compile_ratio(c: &mut Criterion) {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the examples directory is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "nk"))
        .collect();
    files.sort();
    for path in files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("example names are UTF-8")
            .to_string();
        let src = Source {
            text: std::fs::read_to_string(&path).expect("the example is readable"),
            path,
        };
        let mut group = c.benchmark_group(format!("compile_ratio/{name}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(1));
        group.bench_function("check", |b| {
            b.iter_custom(|iters| timed(&name, "check", iters, || check(black_box(&src))))
        });
        for mode in MODES {
            group.bench_function(mode.name(), |b| {
                b.iter_custom(|iters| {
                    timed(&name, mode.name(), iters, || {
                        black_box(compile(black_box(&src), mode));
                    })
                })
            });
        }
        group.finish();
    }
    report();
}

/// The table of medians and ratios of this run's samples.
fn report() {
    SAMPLES.with(|s| {
        let s = s.borrow();
        if s.is_empty() {
            return;
        }
        println!("\n## compile ÷ check, medians of this run's samples (CPU time)\n");
        print!("| example | check (ms) |");
        for mode in MODES {
            print!(" {} (ms, ×check) |", mode.name());
        }
        print!("\n| --- | ---: |");
        for _ in MODES {
            print!(" ---: |");
        }
        println!();
        let mut worst = (0.0f64, String::new());
        let mut worst_min = (0.0f64, String::new());
        for (example, by) in s.iter() {
            let Some(check) = by.get("check").map(|v| median(v)) else {
                continue;
            };
            let check_min = by.get("check").map_or(f64::INFINITY, |v| minimum(v));
            print!("| {example} | {:.2} |", 1e3 * check);
            for mode in MODES {
                match by.get(mode.name()) {
                    Some(v) => {
                        let m = median(v);
                        let r = m / check;
                        let rm = minimum(v) / check_min;
                        if rm > worst_min.0 {
                            worst_min = (rm, format!("{example} --pipeline {}", mode.name()));
                        }
                        print!(" {:.2} ({r:.2}×) |", 1e3 * m);
                        if r > worst.0 {
                            worst = (r, format!("{example} --pipeline {}", mode.name()));
                        }
                    }
                    None => print!(" |"),
                }
            }
            println!();
        }
        println!("\nlargest ratio: {:.2}× ({})", worst.0, worst.1);
        println!(
            "largest ratio of the minimums: {:.2}× ({})",
            worst_min.0, worst_min.1
        );
    });
}

criterion_group!(benches, compile_ratio);
criterion_main!(benches);
