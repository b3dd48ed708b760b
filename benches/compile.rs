//! Compile time, front end to pseudo-ISA (parse, checks, lowering, the annotated pipeliner with
//! its ISL legality check, emergent pipelining, the backend), as the loop body grows (a chain of
//! N elementwise statements in a 3-stage loop) and as the trip count grows (tensor add over
//! 128 · T rows of 4 columns in 128-row tiles, on the default and the emergent path). The trip
//! count does not matter: nothing is unrolled (one hardware loop), the backend's synchronisation
//! analysis and wait pruning run on a copy whose long loops are clamped to a bound independent
//! of T (`backend/src/clamp.rs`), and the modulo scheduler and the queue plan count guarded
//! iterations in closed form (`backend/src/guards.rs`), so the curve over T = 16 … 65536 is
//! flat. Shapes from the hardening campaign follow (the
//! growth with `n` should stay about linear): `n` straight-line statements, `n` sequential small
//! loops, three nested loops of `n` iterations around a trivial body, and the README's matmul
//! scaled to `n`³ on every path. Issue 32's shapes: `n` sequential loops whose tiles share their
//! addresses (`compile/seq`: 256 under 1 s is the target), bodies of 256 and 1,024 statements
//! (`compile/body`: 1,024 within 5x of 256; `compile/chain`: the same for a chain of tiles that
//! overflow SBUF over the loop, so that the allocator colours them by exact live ranges), and
//! `n` reloads of one tile in one body
//! (`compile/reload`), and `n` loads into tiles of their own in one body (`compile/loads`). Compile ÷ check per example is `benches/compile_ratio.py`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use penguin::pipeline::PipelineLog;
use std::hint::black_box;
use std::path::PathBuf;

#[path = "../tests/common/body_kernel.rs"]
mod body;

/// A kernel whose pipelined loop body holds `n` statements besides its load and store, in the
/// user's 3 stages ([`body::body_kernel`], shared with the linear-time tests).
fn body_kernel(n: usize) -> String {
    body::body_kernel(n, Some(3))
}

/// A loop whose body is a chain of `n` multiplies of 128 x 512 tiles: past a few hundred, the
/// tiles no longer fit SBUF for the whole loop, so the allocator colours them by their exact
/// live ranges (each lives from one statement to the next), and many tiles share one address
/// (the footprint sweep of the trip clamping, the per-loop index of the live ranges).
fn chain_kernel(n: usize) -> String {
    let mut s = String::from(
        "def chain(a: nl.hbm[nl.float32, 1024, 512]):\n    \
         c = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for i in nl.affine_range(8):\n        \
         t = nl.load(a[i * 128:(i + 1) * 128, :])\n",
    );
    for _ in 0..n {
        s += "        t = nl.multiply(t, 1.0001)\n";
    }
    s += "        nl.store(c[i * 128:(i + 1) * 128, :], value=t)\n    return c\n";
    s
}

/// `n` straight-line elementwise statements (no loop): the synchronisation analyses' worst case
/// before their pruning skipped the waits `assemble` drops anyway.
fn straight_kernel(n: usize) -> String {
    let mut s = String::from(
        "def straight(a: nl.hbm[nl.float32, 128, 512]):\n    \
         c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         t0 = nl.load(a[:, :])\n",
    );
    for k in 1..=n {
        s += &format!("    t{k} = nl.add(t{}, 1.0)\n", k - 1);
    }
    s += &format!("    nl.store(c[:, :], value=t{n})\n    return c\n");
    s
}

/// `n` sequential loops of 4 iterations, each a load, an add and a store.
fn loops_kernel(n: usize) -> String {
    let mut s = String::from(
        "def seq(a: nl.hbm[nl.float32, 512, 512]):\n    \
         c = nl.ndarray((512, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n",
    );
    for k in 0..n {
        s += &format!(
            "    for i{k} in nl.affine_range(4):\n        \
             t{k} = nl.load(a[i{k} * 128:(i{k} + 1) * 128, :])\n        \
             u{k} = nl.add(t{k}, 1.0)\n        \
             nl.store(c[i{k} * 128:(i{k} + 1) * 128, :], value=u{k})\n"
        );
    }
    s += "    return c\n";
    s
}

/// `n` sequential loops of 2 iterations, each a load, an exp and a store, whose tiles share
/// their SBUF addresses from loop to loop (so every loop's accesses conflict with every other
/// loop's): the synchronisation's pairs stay linear in `n` only because a producer dominates
/// the earlier ones of its thread (`backend/src/sync.rs`).
fn seq_kernel(n: usize) -> String {
    let mut s = format!(
        "def seq(a: nl.hbm[nl.float32, 128, 512]):\n    \
         c = nl.ndarray(({}, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n",
        128 * n
    );
    for k in 0..n {
        s += &format!(
            "    for i{k} in nl.affine_range(2):\n        \
             t{k} = nl.load(a[0:128, i{k} * 256:(i{k} + 1) * 256])\n        \
             u{k} = nl.exp(t{k})\n        \
             nl.store(c[{r0}:{r1}, i{k} * 256:(i{k} + 1) * 256], value=u{k})\n",
            r0 = 128 * k,
            r1 = 128 * (k + 1)
        );
    }
    s += "    return c\n";
    s
}

/// `n` loads of one tile in one loop body, each stored back (every load rewrites the tile the
/// previous one's store reads).
fn reload_kernel(n: usize) -> String {
    let mut s = format!(
        "def reload(a: nl.hbm[nl.float32, 512, 64]):\n    \
         c = nl.ndarray(({}, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for i in nl.affine_range(4):\n",
        512 * n
    );
    for k in 0..n {
        s += &format!(
            "        t = nl.load(a[i * 128:(i + 1) * 128, :])\n        \
             nl.store(c[{r} + i * 128:{r} + (i + 1) * 128, :], value=t)\n",
            r = 512 * k
        );
    }
    s += "    return c\n";
    s
}

/// `n` loads of one column each, into tiles of their own, beside a load of a whole row block
/// that is stored back, in a loop of two iterations: `n` transfers spread over the DMA queues in
/// one body (issue 32: 5,000 of them reached the wait pruning's budget).
fn loads_kernel(n: usize) -> String {
    let mut s = String::from(
        "def loads(a: nl.hbm[nl.float32, 128, 512]):\n    \
         c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for i in nl.affine_range(2):\n        \
         acc = nl.load(a[:, 0:512])\n",
    );
    for k in 0..n {
        let j = k % 512;
        s += &format!("        t{k} = nl.load(a[:, {j}:{}])\n", j + 1);
    }
    s += "        nl.store(c[:, 0:512], value=acc)\n    return c\n";
    s
}

/// Tensor add over `128 · t` rows of 4 columns: narrow enough that the three arrays stay within
/// the 2^27 HBM elements a kernel may have (E0173) up to `t = 65536`.
fn trip_kernel(t: usize) -> String {
    format!(
        "def add(a: nl.hbm[nl.float32, {r}, 4], b: nl.hbm[nl.float32, {r}, 4]):\n    \
         c = nl.ndarray(({r}, 4), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for i in nl.affine_range({t}, num_stages=3):\n        \
         ta = nl.load(a[i * 128:(i + 1) * 128, :])\n        \
         tb = nl.load(b[i * 128:(i + 1) * 128, :])\n        \
         tc = nl.add(ta, tb)\n        \
         nl.store(c[i * 128:(i + 1) * 128, :], value=tc)\n    return c\n",
        r = 128 * t
    )
}

/// Three nested loops of `n` iterations around a load and a store of one fixed tile (the
/// hardening campaign's "trivial body": over 60 s at n = 100 before the synchronisation analysis
/// decided fixed footprints once).
fn nest_kernel(n: usize) -> String {
    format!(
        "def nest(a: nl.hbm[nl.float32, 128, 64]):\n    \
         c = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for i in nl.affine_range({n}):\n        \
         for j in nl.affine_range({n}):\n            \
         for k in nl.affine_range({n}):\n                \
         t = nl.load(a[:, :])\n                \
         nl.store(c[:, :], value=t)\n    return c\n"
    )
}

/// The README's matmul (`examples/matmul.nk`) scaled to `n` x `n` x `n`.
fn matmul_kernel(n: usize) -> String {
    let (m, k) = (n / 128, n / 128);
    let nn = n / 512;
    format!(
        "def matmul(at: nl.hbm[nl.float32, {n}, {n}], b: nl.hbm[nl.float32, {n}, {n}]):\n    \
         c = nl.ndarray(({n}, {n}), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for m in nl.affine_range({m}):\n        \
         for n in nl.affine_range({nn}, num_stages=3):\n            \
         acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)\n            \
         for k in nl.affine_range({k}):\n                \
         lhs = nl.load(at[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])\n                \
         rhs = nl.load(b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])\n                \
         acc += nl.matmul(lhs, rhs, transpose_x=True)\n            \
         res = nl.copy(acc)\n            \
         nl.store(c[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)\n    return c\n"
    )
}

/// Front end to pseudo-ISA on the default path.
fn compile(src: &Source) -> usize {
    compile_on(src, PipelineMode::Default)
}

/// Front end to pseudo-ISA on path `mode`.
fn compile_on(src: &Source, mode: PipelineMode) -> usize {
    let mut func = nkc::driver::compile(src, None).expect("the bench kernel compiles");
    nkc::pipeline::pipeline_path(&mut func, mode, &mut PipelineLog::default())
        .expect("the bench kernel pipelines");
    nkc::pipeline::prepare_backend(&mut func, mode).expect("emergent pipelining");
    let compiled =
        nkc::pipeline::codegen(&func, Some(&src.text), true).expect("the backend compiles it");
    compiled.program.streams.len()
}

fn source(text: String) -> Source {
    Source {
        path: PathBuf::from("bench.nk"),
        text,
    }
}

/// Times the whole compile of `kernel(n)` for every `n` of `sizes`, as one criterion group.
fn family(c: &mut Criterion, name: &str, sizes: &[usize], kernel: fn(usize) -> String) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for &n in sizes {
        let src = source(kernel(n));
        compile(&src);
        group.bench_with_input(BenchmarkId::from_parameter(n), &src, |b, src| {
            b.iter(|| compile(black_box(src)))
        });
    }
    group.finish();
}

fn compile_time(c: &mut Criterion) {
    family(c, "compile/body", &[4, 16, 64, 256, 1024], body_kernel);
    // Issue 32: 1,024 statements within 5x of 256, also when the tiles overflow SBUF.
    family(c, "compile/chain", &[64, 256, 1024], chain_kernel);
    let mut group = c.benchmark_group("compile/trip");
    group.sample_size(10);
    for mode in [PipelineMode::Default, PipelineMode::Emergent] {
        for t in [16, 256, 4096, 65536] {
            let src = source(trip_kernel(t));
            compile_on(&src, mode);
            group.bench_with_input(BenchmarkId::new(mode.name(), t), &src, |b, src| {
                b.iter(|| compile_on(black_box(src), mode))
            });
        }
    }
    group.finish();
    // Shapes from the hardening campaign (issue 14): straight-line code and sequential loops.
    family(
        c,
        "compile/straight",
        &[50, 100, 200, 400, 800],
        straight_kernel,
    );
    family(c, "compile/loops", &[2, 4, 8, 16], loops_kernel);
    // Issue 32: sequential loops whose tiles share addresses, and reloads of one tile.
    family(c, "compile/seq", &[16, 64, 256], seq_kernel);
    family(c, "compile/reload", &[30, 300], reload_kernel);
    family(c, "compile/loads", &[300, 1000], loads_kernel);
    family(c, "compile/nest", &[10, 30, 100], nest_kernel);
    // The README's matmul scaled up, on every path (the emergent one prefetches across the nest).
    let mut group = c.benchmark_group("compile/matmul");
    group.sample_size(10);
    for n in [512, 1024, 2048, 4096] {
        let src = source(matmul_kernel(n));
        for mode in [
            PipelineMode::Default,
            PipelineMode::Annotated,
            PipelineMode::Emergent,
            PipelineMode::None,
        ] {
            compile_on(&src, mode);
            group.bench_with_input(
                BenchmarkId::new(mode.name(), n),
                &(src.clone(), mode),
                |b, (src, mode)| b.iter(|| compile_on(black_box(src), *mode)),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, compile_time);
criterion_main!(benches);
