//! Interpreter throughput on `examples/matmul.nk` (C[512,1024] = AT[512,512]ᵀ · B[512,1024]),
//! compiled by the real front end. Throughput is reported in elements per second, counting one
//! element per multiply-add of the matmuls (512 · 512 · 1024 of them per run).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

fn matmul_example(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/matmul.nk");
    let text = std::fs::read_to_string(path).expect("examples/matmul.nk is readable");
    let func = frontend::compile(&text, None).expect("examples/matmul.nk compiles");
    let inputs = penguin::interp::random_inputs(&func, 1);

    let mut group = c.benchmark_group("interp");
    group.sample_size(10);
    group.throughput(Throughput::Elements(512 * 512 * 1024));
    group.bench_function("matmul.nk", |b| {
        b.iter(|| penguin::interp::interpret(black_box(&func), black_box(&inputs)).expect("runs"))
    });
    group.finish();
}

criterion_group!(benches, matmul_example);
criterion_main!(benches);
