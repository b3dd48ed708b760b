//! Throughput of the reference interpreter on the IR of `examples/matmul.nk`: `C = ATᵀ · B` with
//! AT 512×512 and B 512×1024, tiled as the example is (loops m 0..4, n 0..2, k 0..4; a memset and
//! four accumulating 128×128 · 128×512 matmuls into one 128×512 PSUM tile, a copy and a store).
//!
//! Throughput is in elements = matmul multiply-adds (512 · 512 · 1024 per run).

#[path = "../tests/common/mod.rs"]
mod common;

use common::{matmul_ir, MatmulShape};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use penguin::interp::{interpret, random_inputs};
use std::hint::black_box;

fn bench_matmul(c: &mut Criterion) {
    let shape = MatmulShape {
        mt: 4,
        nt: 2,
        kt: 4,
        tm: 128,
        tn: 512,
        tk: 128,
    };
    let func = matmul_ir(&shape);
    let inputs = random_inputs(&func, 1);
    let macs = interpret(&func, &inputs)
        .expect("the matmul IR interprets")
        .stats
        .matmul_macs;
    assert_eq!(macs, 512 * 512 * 1024);

    let mut group = c.benchmark_group("interp");
    group.sample_size(10);
    group.throughput(Throughput::Elements(macs));
    group.bench_function("matmul_512x512x1024", |b| {
        b.iter(|| interpret(black_box(&func), black_box(&inputs)))
    });
    group.finish();
}

criterion_group!(benches, bench_matmul);
criterion_main!(benches);
