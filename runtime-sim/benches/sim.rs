//! Simulated instructions per second, with numerics and timing only (`--no-numerics`), with the
//! race detector on (the default) and off.
//!
//! The workload is a software-pipelined elementwise kernel generated as text: 64 tiles of
//! [128, 512] f32 loaded on 8 queues, `exp` on act, `add` on dve, `copy` on pool, stored on 8
//! other queues, triple-buffered with modulo addresses and predicates; about 2,000 dynamic
//! instructions per run, each touching 64 Ki elements.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use runtime_sim::isa::Program;
use runtime_sim::sim::{self, Options};
use std::hint::black_box;

const TILES: u64 = 64;
// x holds TILES + 3 tiles of 128 rows: 67 * 128 = 8576.

/// The pipelined program: stage 0 load (sp), 1 exp (act), 2 add (dve), 3 copy (pool), 4 store (sp).
fn program() -> String {
    let mut s = String::from(
        "tensor x: f32[8576, 512] input\ntensor y: f32[8192, 512] output\n\
         semaphore ld\nsemaphore ex\nsemaphore ad\nsemaphore cp\nsemaphore st\n",
    );
    // Buffers: in (3 x 2048 bytes from 0), e (from 8192), a (from 16384), c (from 24576).
    let buf = |base: u32| format!("sbuf.f32[0, 128; {base} + (r0 mod 3)*2048; 512:1]");
    let t = TILES;
    // sp: load tile r0 once the add of r0 - 3 (the last reader of its buffer) is done, store tile
    // r0 - 3 once pool copied it. Loads are never predicated off (x has 3 spare tiles): a
    // predicated-off load signals `ld` in its own queue's order only, while `ld` counts the
    // transfers of 8 queues together.
    s += &format!("engine sp {{\n  loop r0 = 0..{} {{\n", t + 3);
    s += "    @(r0 >= 3) wait ad >= r0 - 2\n";
    for q in 0..8 {
        s += &format!(
            "    dma q{q} sbuf.f32[{p}, 16; (r0 mod 3)*2048; 512:1], hbm x[65536*r0 + {o}; 16:512, 512:1] -> ld stage 0\n",
            p = q * 16,
            o = q * 16 * 512
        );
    }
    s += "    @(r0 >= 3) wait cp >= 8*r0 - 16\n";
    for q in 0..8 {
        s += &format!(
            "    @(r0 >= 3) dma q{} hbm y[65536*r0 - 196608 + {o}; 16:512, 512:1], sbuf.f32[{p}, 16; 24576 + (r0 mod 3)*2048; 512:1] -> st stage 4\n",
            q + 8,
            p = q * 16,
            o = q * 16 * 512
        );
    }
    s += "  }\n}\n";
    // act: exp of tile r0 once loaded (8 transfers per tile), and once dve has consumed e of r0-3.
    s += &format!(
        "engine act {{\n  loop r0 = 0..{t} {{\n    wait ld >= 8*r0 + 8\n    @(r0 >= 3) wait ad >= r0 - 2\n    \
         activation exp {}, {}, scale=1.0 -> ex stage 1\n  }}\n}}\n",
        buf(8192),
        buf(0)
    );
    s += &format!(
        "engine dve {{\n  loop r0 = 0..{t} {{\n    wait ex >= r0 + 1\n    @(r0 >= 3) wait cp >= 8*r0 - 16\n    \
         tensor_tensor add {}, {}, {} -> ad stage 2\n  }}\n}}\n",
        buf(16384),
        buf(8192),
        buf(0)
    );
    // pool copies a -> c, then signals cp 8 times (one per store queue's worth); before writing
    // c of r0 it waits for the 8 stores of tile r0 - 3: `st` also counts the 24 predicated-off
    // stores of r0 < 3, so that is 24 + 8 * (r0 - 2).
    s += &format!(
        "engine pool {{\n  loop r0 = 0..{t} {{\n    wait ad >= r0 + 1\n    @(r0 >= 3) wait st >= 8*r0 + 8\n    \
         copy {}, {}\n    loop r1 = 0..8 {{\n      signal cp\n    }}\n  }}\n}}\n",
        buf(24576),
        buf(16384)
    );
    s
}

fn bench(c: &mut Criterion) {
    let text = program();
    let prog: Program = runtime_sim::text::parse(&text).expect("the benchmark program parses");
    let inputs = sim::random_inputs(&prog, 1);
    let run =
        |opts: &Options| sim::simulate(&prog, &inputs, opts).expect("the benchmark program runs");
    let probe = run(&Options::default());
    assert!(probe.races.is_empty(), "{:?}", probe.races);
    let insts = probe.stats.instructions();
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(insts));
    for (name, numerics, races) in [
        ("numerics+races", true, true),
        ("numerics", true, false),
        ("timing+races", false, true),
        ("timing", false, false),
    ] {
        let opts = Options {
            numerics,
            races,
            ..Options::default()
        };
        g.bench_function(name, |b| b.iter(|| run(black_box(&opts))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
