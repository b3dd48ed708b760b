//! The cost of the ISL legality check (`compute_violations`), and of the whole pipeliner pass
//! (`pipeline_function`: targets, stage context, buffer counts, widening, the legality check, the
//! extended loop, reordering and the verifier) on the same kernels:
//! (1) a fixed 3-stage body as the trip count grows from 16 to 1,000,000 (it must stay flat);
//! (2) a body of S statements chained through 128×512 tiles, stages spread over 3, S = 4 … 256
//!     (DESIGN.md's yardstick: islpy takes 8, 24, 89 and 434 ms for S = 4, 16, 64, 256).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use penguin::pipeline::{
    compute_violations_with, pipeline_function, LegalityOptions, PipelineOptions, PipelinePlan,
};
use penguin::{parse_function, Function, Tensor};
use std::fmt::Write;
use std::hint::black_box;

/// A loop of `s` statements over `trip` iterations: a load, `s - 2` exponentials each reading the
/// tile the previous one wrote, and a store; statement `k` in stage `3k / s`, every tile buffered
/// by its stage distance plus one.
fn chain(s: usize, trip: u64) -> (Function, PipelinePlan) {
    assert!(s >= 2);
    let rows = 128 * trip;
    let mut text = String::new();
    writeln!(text, "kernel chain(a) -> (c) {{").unwrap();
    writeln!(text, "  tensor a: hbm f32[{rows}, 512] input").unwrap();
    writeln!(text, "  tensor c: hbm f32[{rows}, 512] output").unwrap();
    for k in 0..s - 1 {
        writeln!(text, "  tensor t{k}: sbuf f32[128, 512] local").unwrap();
    }
    writeln!(text, "  loop i in 0..{trip} affine {{").unwrap();
    writeln!(
        text,
        "    stmt {{ t0[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512] }}"
    )
    .unwrap();
    for k in 1..s - 1 {
        writeln!(
            text,
            "    stmt {{ t{k}[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) t{}[0 +: 128, 0 +: 512] }}",
            k - 1
        )
        .unwrap();
    }
    writeln!(
        text,
        "    stmt {{ c[128*i +: 128, 0 +: 512] = store.dma t{}[0 +: 128, 0 +: 512] }}",
        s - 2
    )
    .unwrap();
    writeln!(text, "  }}\n}}").unwrap();
    let f = parse_function(&text).expect("the benchmark kernel parses");
    let axis = f.axes.keys().next().expect("one loop");
    let stages: Vec<u32> = (0..s).map(|k| (3 * k / s) as u32).collect();
    let buffers: Vec<(Tensor, u32)> = (0..s - 1)
        .filter_map(|k| {
            let n = stages[k + 1] - stages[k] + 1;
            (n > 1).then(|| (f.tensors.keys().nth(2 + k).expect("tile"), n))
        })
        .collect();
    let plan = PipelinePlan {
        axis,
        num_stages: 3,
        stages,
        order: (0..s).collect(),
        buffers,
    };
    (f, plan)
}

/// The two ways to run the check: with the fast path, and with ISL on every tensor.
const MODES: [(&str, LegalityOptions); 2] = [
    ("prefilter", LegalityOptions { prefilter: true }),
    ("all_isl", LegalityOptions { prefilter: false }),
];

fn trip_count(c: &mut Criterion) {
    for (mode, options) in MODES {
        let mut g = c.benchmark_group(format!("legality_trip_count_{mode}"));
        for trip in [16u64, 256, 4096, 65536, 1_000_000] {
            let (f, plan) = chain(3, trip);
            let r = compute_violations_with(&f, &plan, &options).expect("the check runs");
            assert!(r.violations.is_empty(), "the chain is legal");
            g.bench_with_input(BenchmarkId::from_parameter(trip), &trip, |b, _| {
                b.iter(|| compute_violations_with(black_box(&f), black_box(&plan), &options))
            });
        }
        g.finish();
    }
}

fn body_size(c: &mut Criterion) {
    for (mode, options) in MODES {
        let mut g = c.benchmark_group(format!("legality_body_size_{mode}"));
        g.sample_size(10);
        for s in [4usize, 16, 64, 256] {
            let (f, plan) = chain(s, 16);
            let r = compute_violations_with(&f, &plan, &options).expect("the check runs");
            assert!(r.violations.is_empty(), "the chain is legal");
            g.bench_with_input(BenchmarkId::from_parameter(s), &s, |b, _| {
                b.iter(|| compute_violations_with(black_box(&f), black_box(&plan), &options))
            });
        }
        g.finish();
    }
}

/// The chain annotated for the pipeliner itself: each statement's `stage_id` from the plan (Mode B).
fn annotated(f: &Function, plan: &PipelinePlan) -> Function {
    let mut f = f.clone();
    let body = f.axes[plan.axis].body.clone();
    for (&stmt, &stage) in body.iter().zip(&plan.stages) {
        f.annots[stmt].stage_id = Some(stage);
    }
    f
}

fn whole_pass(c: &mut Criterion) {
    let opts = PipelineOptions::default();
    let mut g = c.benchmark_group("pipeliner_trip_count");
    for trip in [16u64, 256, 4096, 65536, 1_000_000] {
        let (f, plan) = chain(3, trip);
        let f = annotated(&f, &plan);
        pipeline_function(&mut f.clone(), &opts).expect("the chain pipelines");
        g.bench_with_input(BenchmarkId::from_parameter(trip), &trip, |b, _| {
            b.iter_batched(
                || f.clone(),
                |mut f| pipeline_function(black_box(&mut f), &opts),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
    let mut g = c.benchmark_group("pipeliner_body_size");
    g.sample_size(10);
    // Not 256: the 255 tiles of 128×512 floats need 526 KB per partition once two of them are
    // double-buffered, and the pass rightly refuses that (E0421, SBUF overflow after widening).
    for s in [4usize, 16, 64] {
        let (f, plan) = chain(s, 16);
        let f = annotated(&f, &plan);
        pipeline_function(&mut f.clone(), &opts).expect("the chain pipelines");
        g.bench_with_input(BenchmarkId::from_parameter(s), &s, |b, _| {
            b.iter_batched(
                || f.clone(),
                |mut f| pipeline_function(black_box(&mut f), &opts),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, trip_count, body_size, whole_pass);
criterion_main!(benches);
