//! Hand-written programs: outputs and cycle counts, the cycle counts derived by hand from the
//! cost table (MACHINE.md) in each test.

use runtime_sim::isa::Engine;
use runtime_sim::sim::{self, Array, Options, SimError, SimResult};
use runtime_sim::text;

fn program(name: &str) -> String {
    let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("the test program exists")
}

fn run_text(src: &str, inputs: &[Array]) -> Result<SimResult, SimError> {
    let p = text::parse(src).unwrap_or_else(|e| panic!("parse: {e}"));
    sim::simulate(&p, inputs, &Options::default())
}

fn arr(shape: &[usize], f: impl Fn(usize, usize) -> f32) -> Array {
    let (r, c) = (shape[0], shape[1]);
    Array {
        shape: shape.to_vec(),
        data: (0..r * c).map(|i| f(i / c, i % c)).collect(),
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `ceil(bytes / 19)`: the queue occupancy of a transfer.
fn q(bytes: u64) -> u64 {
    bytes.div_ceil(19)
}

#[test]
fn add_on_two_queues() {
    let a = arr(&[128, 512], |p, f| p as f32 - f as f32 * 0.5);
    let b = arr(&[128, 512], |p, f| (p * f) as f32 * 0.125);
    let r = run_text(&program("add.s"), &[a.clone(), b.clone()]).unwrap();
    let want: Vec<f32> = a.data.iter().zip(&b.data).map(|(x, y)| x + y).collect();
    assert_eq!(bits(&r.outputs[0].1.data), bits(&want));
    // Loads: issued at 0 and 64 (64 cycles each), 1820 latency, 262144 bytes on their queues.
    let la = 64 + 1820 + q(262_144);
    let lb = 128 + 1820 + q(262_144);
    assert_eq!(la, 15_682);
    // The add waits for both: 2N = 1024 > 64, plus 60.
    let added = la.max(lb) + 1024 + 60;
    // The store is issued when the add is done.
    let total = added + 64 + 1820 + q(262_144);
    assert_eq!(r.stats.cycles, total);
    assert_eq!(r.stats.cycles, 32_512);
    let dve = &r.stats.engines[Engine::Dve.index()];
    assert_eq!(dve.busy, 1084);
    assert_eq!(dve.instructions, 3);
    assert_eq!(r.stats.queue_busy[0..3], [q(262_144); 3]);
    assert_eq!(r.stats.sbuf_high_water, 6144);
    // Bound: the DMA figure 3 * 13798 / 16 = 2587.1 -> 2588 beats the dve's 1084.
    assert_eq!(r.stats.bound(), (3 * q(262_144)).div_ceil(16));
    assert!(r.races.is_empty(), "{:?}", r.races);
}

#[test]
fn pipelined_loop_with_rotation_and_predicates() {
    let x = arr(&[4, 256], |p, f| (p * 256 + f) as f32 * 0.01 - 3.0);
    let r = run_text(&program("loop.s"), std::slice::from_ref(&x)).unwrap();
    let want: Vec<f32> = x.data.iter().map(|v| v + 1.0).collect();
    assert_eq!(bits(&r.outputs[0].1.data), bits(&want));
    // Transfers of [4, 64] f32 = 1024 bytes: 54 cycles on the queue. The add: max(64, 64) + 60.
    let (t, add) = (q(1024), 124);
    let ld0 = 64 + 1820 + t; // issued [0, 64)
    let ld1 = 128 + 1820 + t; // [64, 128)
    let done0 = ld0 + add; // dve starts at the first load
    let done1 = done0.max(ld1) + add;
    let st0 = done0 + 64 + 1820 + t; // sp waited for done0, then issued the store
                                     // r0 = 2: sp issues load 2 right after store 0 (done >= 1 holds), then waits done >= 2.
    let ld2 = done0 + 64 + 64 + 1820 + t;
    let st1 = done1.max(done0 + 128) + 64 + 1820 + t;
    // r0 = 3: load 3 issued after store 1.
    let ld3 = done1.max(done0 + 128) + 64 + 64 + 1820 + t;
    let done2 = ld2.max(st0).max(done1) + add;
    let st2 = done2 + 64 + 1820 + t;
    let done3 = ld3.max(st1).max(done2) + add;
    let st3 = (done3 + 64 + 1820).max(st2) + t;
    assert_eq!((ld0, done0, st0, done3), (1938, 2062, 4000, 4316));
    assert_eq!(r.stats.cycles, st3);
    assert_eq!(r.stats.cycles, 6254);
    let dve = &r.stats.engines[Engine::Dve.index()];
    assert_eq!(dve.busy, 4 * add);
    // 4 adds + 4 load waits + 2 store waits on; the 2 store waits of r0 < 2 off.
    assert_eq!((dve.instructions, dve.predicated_off), (10, 2));
    assert_eq!(r.stats.queue_transfers[0..2], [4, 4]);
    assert!(r.races.is_empty(), "{:?}", r.races);
}

#[test]
fn sixteen_queues_in_parallel_beat_one() {
    let a = arr(&[128, 512], |p, f| (p as f32).sin() + f as f32);
    let src = program("queues.s");
    let r = run_text(&src, std::slice::from_ref(&a)).unwrap();
    assert_eq!(bits(&r.outputs[0].1.data), bits(&a.data));
    // 16 transfers of 8 x 512 x 4 = 16384 bytes (863 cycles each), issued 64 cycles apart; the
    // latencies overlap, each on its own queue: the last is issued at [960, 1024).
    let loaded = 1024 + 1820 + q(16_384);
    assert_eq!(loaded, 3707);
    let copied = loaded + 150 + 512 + 60; // pool: 150 + N, plus the access
    let total = copied + 64 + 1820 + q(262_144);
    assert_eq!(r.stats.cycles, total);
    assert!(r.races.is_empty(), "{:?}", r.races);

    // The same transfers on one queue: each waits for the previous one's bytes.
    let one = regex_free_queue_zero(&src);
    let r1 = run_text(&one, &[a]).unwrap();
    let loaded1 = 64 + 1820 + 16 * q(16_384);
    let total1 = loaded1 + 150 + 512 + 60 + 64 + 1820 + q(262_144);
    assert_eq!(r1.stats.cycles, total1);
    assert!(r1.stats.cycles > r.stats.cycles + 10_000);
    // Piling onto one queue does not flatter the bound: the DMA figure is the same.
    assert_eq!(r1.stats.dma_bound(), r.stats.dma_bound());
}

fn regex_free_queue_zero(src: &str) -> String {
    let mut out = String::new();
    for line in src.lines() {
        match line.find("dma q") {
            Some(i) => {
                let rest = &line[i + 5..];
                let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
                out.push_str(&line[..i]);
                out.push_str("dma q0");
                out.push_str(&rest[digits..]);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A program around one computation: `x` and `z` ([4, 8] f32) are loaded to SBUF bytes 0 and
/// 64 on queues 0 and 1, the `streams` run after `wait loaded >= 2` on their engine, the last
/// of them signals `done`, and `sp` stores `[rows, cols]` f32 from SBUF byte 4096 to `y`.
fn around(streams: &[(&str, &str)], rows: usize, cols: usize) -> String {
    let mut s = format!(
        "tensor x: f32[4, 8] input\ntensor z: f32[4, 8] input\ntensor y: f32[{rows}, {cols}] output\n\
         semaphore loaded\nsemaphore mid\nsemaphore done\n\
         engine sp {{\n  dma q0 sbuf.f32[0, 4; 0; 8:1], hbm x[0; 4:8, 8:1] -> loaded\n  \
         dma q1 sbuf.f32[0, 4; 64; 8:1], hbm z[0; 4:8, 8:1] -> loaded\n  wait done >= 1\n  \
         dma q2 hbm y[0; {rows}:{cols}, {cols}:1], sbuf.f32[0, {rows}; 4096; {cols}:1]\n}}\n"
    );
    for (engine, body) in streams {
        s.push_str(&format!(
            "engine {engine} {{\n  wait loaded >= 2\n{body}\n}}\n"
        ));
    }
    s
}

/// Loads finish at 1955: the second is issued at [64, 128), then 1820 + ceil(128 / 19) = 7.
const LOADED: u64 = 128 + 1820 + 7;

fn total(compute: u64, rows: usize, cols: usize) -> u64 {
    LOADED + compute + 64 + 1820 + q((rows * cols * 4) as u64)
}

fn xz() -> (Array, Array) {
    (
        arr(&[4, 8], |p, f| (p * 8 + f) as f32 * 0.25 - 3.0),
        arr(&[4, 8], |p, f| 1.0 + 0.5 * f as f32 - p as f32),
    )
}

fn check_op(
    streams: &[(&str, &str)],
    rows: usize,
    cols: usize,
    compute: u64,
    want: impl Fn(&Array, &Array, usize, usize) -> f32,
) {
    let (x, z) = xz();
    let src = around(streams, rows, cols);
    let r = run_text(&src, &[x.clone(), z.clone()]).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let want = arr(&[rows, cols], |p, f| want(&x, &z, p, f));
    assert_eq!(
        bits(&r.outputs[0].1.data),
        bits(&want.data),
        "{src}\n{:?}",
        r.outputs[0].1.data
    );
    assert_eq!(r.stats.cycles, total(compute, rows, cols), "{src}");
    assert!(r.races.is_empty(), "{src}\n{:?}", r.races);
}

fn g(a: &Array, p: usize, f: usize) -> f32 {
    a.data[p * a.shape[1] + f]
}

const X: &str = "sbuf.f32[0, 4; 0; 8:1]";
const Z: &str = "sbuf.f32[0, 4; 64; 8:1]";
const Z0: &str = "sbuf.f32[0, 4; 64; 1:1]";
const Y: &str = "sbuf.f32[0, 4; 4096; 8:1]";

#[test]
fn tensor_tensor_on_dve_and_pool() {
    // dve: max(64, 2 * 8) + 60 = 124; pool: 150 + 8 + 60 = 218.
    let body = format!("  tensor_tensor subtract {Y}, {X}, {Z} -> done");
    check_op(&[("dve", &body)], 4, 8, 124, |x, z, p, f| {
        g(x, p, f) - g(z, p, f)
    });
    let body = format!("  tensor_tensor multiply {Y}, {X}, {Z0} -> done");
    check_op(&[("dve", &body)], 4, 8, 124, |x, z, p, f| {
        g(x, p, f) * g(z, p, 0)
    });
    let body = format!("  tensor_tensor maximum {Y}, {Z0}, {X} -> done");
    check_op(&[("pool", &body)], 4, 8, 218, |x, z, p, f| {
        g(z, p, 0).max(g(x, p, f))
    });
}

#[test]
fn tensor_scalar_with_reverse() {
    let body = format!("  tensor_scalar divide {Y}, {X}, 2.0 reverse -> done");
    check_op(&[("dve", &body)], 4, 8, 124, |x, _, p, f| 2.0 / g(x, p, f));
    let body = format!("  tensor_scalar subtract {Y}, {X}, 0.5 -> done");
    check_op(&[("pool", &body)], 4, 8, 218, |x, _, p, f| g(x, p, f) - 0.5);
}

#[test]
fn reduce_copy_memset_iota() {
    let y1 = "sbuf.f32[0, 4; 4096; 1:1]";
    for (op, f) in [("sum", 0), ("max", 1), ("min", 2)] {
        let body = format!("  reduce {op} {y1}, {X} -> done");
        // max(64, 8) + 60
        check_op(&[("dve", &body)], 4, 1, 124, move |x, _, p, _| {
            let row = &x.data[p * 8..p * 8 + 8];
            match f {
                0 => row.iter().fold(0.0f32, |s, &v| s + v),
                1 => row.iter().skip(1).fold(row[0], |m, &v| m.max(v)),
                _ => row.iter().skip(1).fold(row[0], |m, &v| m.min(v)),
            }
        });
    }
    for (engine, cost) in [("act", 124), ("dve", 124), ("pool", 218)] {
        let body = format!("  copy {Y}, {Z} -> done");
        check_op(&[(engine, &body)], 4, 8, cost, |_, z, p, f| g(z, p, f));
    }
    for (engine, cost) in [("dve", 124), ("pool", 218)] {
        let body = format!("  memset {Y}, -7.5 -> done");
        check_op(&[(engine, &body)], 4, 8, cost, |_, _, _, _| -7.5);
    }
    let body = format!("  iota {Y}, 1.0, 10.0, 0.5 -> done");
    check_op(&[("pool", &body)], 4, 8, 218, |_, _, p, f| {
        1.0 + p as f32 * 10.0 + f as f32 * 0.5
    });
}

#[test]
fn activation_with_scale_and_bias() {
    // max(64, 8) + 60 = 124.
    let body = format!("  activation exp {Y}, {X}, scale=0.5, bias={Z0} -> done");
    check_op(&[("act", &body)], 4, 8, 124, |x, z, p, f| {
        (g(x, p, f) * 0.5 + g(z, p, 0)).exp()
    });
    let body = format!("  activation tanh {Y}, {X}, scale={Z0} -> done");
    check_op(&[("act", &body)], 4, 8, 124, |x, z, p, f| {
        (g(x, p, f) * g(z, p, 0)).tanh()
    });
}

#[test]
fn matmul_f32_then_copy_out_of_psum() {
    // y[8, 8] = xᵀ · z (K = 4, M = 8, N = 8). pe: 4 * max(min(64, 8), 8) + 64 + 60 = 156; the dve
    // copy out of PSUM: max(64, 8) + 60 = 124.
    let pe =
        "  matmul psum.f32[0, 8; 0; 8:1], sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 64; 8:1] -> mid";
    let dve = "  wait mid >= 1\n  copy sbuf.f32[0, 8; 4096; 8:1], psum.f32[0, 8; 0; 8:1] -> done";
    check_op(
        &[("pe", pe), ("dve", dve)],
        8,
        8,
        156 + 124,
        |x, z, m, n| (0..4).fold(0.0f32, |s, k| s + g(x, k, m) * g(z, k, n)),
    );
}

#[test]
fn matmul_bf16_accumulates() {
    // act casts x to bf16 (124), pe multiplies twice into the same PSUM tile, the second
    // accumulating (max(min(64, 8), 8) + 64 + 60 = 132 each), dve copies out (124).
    let act = "  copy sbuf.bf16[0, 4; 1024; 8:1], sbuf.f32[0, 4; 0; 8:1] -> mid";
    let pe = "  wait mid >= 1\n  matmul psum.f32[0, 8; 2048; 8:1], sbuf.bf16[0, 4; 1024; 8:1], sbuf.bf16[0, 4; 1024; 8:1]\n  \
              matmul psum.f32[0, 8; 2048; 8:1], sbuf.bf16[0, 4; 1024; 8:1], sbuf.bf16[0, 4; 1024; 8:1] acc -> mid";
    let dve =
        "  wait mid >= 2\n  copy sbuf.f32[0, 8; 4096; 8:1], psum.f32[0, 8; 2048; 8:1] -> done";
    check_op(
        &[("act", act), ("pe", pe), ("dve", dve)],
        8,
        8,
        124 + 2 * 132 + 124,
        |x, _, m, n| {
            let b = |v: f32| runtime_sim::numerics::round_bf16(v);
            let s = (0..4).fold(0.0f32, |s, k| s + b(g(x, k, m)) * b(g(x, k, n)));
            s + s
        },
    );
}

#[test]
fn transpose_through_psum() {
    // pe: max(P = 4, min(64, F = 8)) + 64 + 60 = 132; dve copy of [8, 4]: 124.
    let pe = "  transpose psum.f32[0, 8; 0; 4:1], sbuf.f32[0, 4; 0; 8:1] -> mid";
    let dve = "  wait mid >= 1\n  copy sbuf.f32[0, 8; 4096; 4:1], psum.f32[0, 8; 0; 4:1] -> done";
    check_op(
        &[("pe", pe), ("dve", dve)],
        8,
        4,
        132 + 124,
        |x, _, f, p| g(x, p, f),
    );
}

#[test]
fn bf16_store_rounds() {
    // A copy into a bf16 tile rounds to nearest even; reading it back widens exactly.
    let body = format!(
        "  copy sbuf.bf16[0, 4; 1024; 8:1], {X}\n  copy {Y}, sbuf.bf16[0, 4; 1024; 8:1] -> done"
    );
    check_op(&[("dve", &body)], 4, 8, 248, |x, _, p, f| {
        runtime_sim::numerics::round_bf16(g(x, p, f) * 1.0)
    });
}

#[test]
fn text_round_trips_every_program() {
    for name in ["add.s", "loop.s", "queues.s"] {
        let p = text::parse(&program(name)).unwrap();
        let printed = text::print(&p);
        let q = text::parse(&printed).unwrap();
        assert_eq!(p, q, "{name}");
        assert_eq!(text::print(&q), printed, "{name}");
    }
}

#[test]
fn a_wait_is_released_by_the_earliest_signal_whoever_sends_it() {
    // dve's memset (1000 elements: 1000 + 60 = 1060 cycles) and pool's memset (8 elements:
    // 150 + 8 + 60 = 218) both signal `s`. The simulator processes dve first (engine order at
    // cycle 0), so it learns of the signal at 1060 before the one at 218; act's wait must still
    // be released at 218, and its copy (max(64, 8) + 60 = 124) end at 342.
    let src = "semaphore s\n\
        engine act {\n  wait s >= 1\n  copy sbuf.f32[0, 4; 8192; 8:1], sbuf.f32[0, 4; 0; 8:1]\n}\n\
        engine dve {\n  memset sbuf.f32[0, 4; 4096; 1000:1], 1.0 -> s\n}\n\
        engine pool {\n  memset sbuf.f32[0, 4; 0; 8:1], 2.0 -> s\n}\n";
    let r = run_text(src, &[]).unwrap();
    assert_eq!(r.stats.engines[Engine::Pool.index()].finish, 218);
    assert_eq!(r.stats.engines[Engine::Dve.index()].finish, 1060);
    assert_eq!(r.stats.engines[Engine::Act.index()].finish, 218 + 124);
    assert_eq!(r.stats.engines[Engine::Act.index()].busy, 124);
    assert_eq!(r.stats.cycles, 1060);
    assert!(r.races.is_empty(), "{:?}", r.races);
    // A wait for both signals is released by the later one.
    let both = src.replace("wait s >= 1", "wait s >= 2");
    let r = run_text(&both, &[]).unwrap();
    assert_eq!(r.stats.engines[Engine::Act.index()].finish, 1060 + 124);
    // The wait joins only the clock of the signal it consumed (pool's): reading what dve writes
    // is a race, since dve's memset is still running at 218.
    let racy = src.replace(
        "sbuf.f32[0, 4; 0; 8:1]\n}\nengine dve",
        "sbuf.f32[0, 4; 4096; 8:1]\n}\nengine dve",
    );
    assert_ne!(racy, src);
    let r = run_text(&racy, &[]).unwrap();
    assert_eq!(r.races.len(), 1, "{:?}", r.races);
    assert_eq!(r.races[0].first.engine, Engine::Dve);
    assert_eq!(r.races[0].second.engine, Engine::Act);
}

/// `sp` loads a `[4, 64]` tile on q0 signalling `ld`, then issues a predicated-off transfer on
/// q0 signalling `mk`; act waits for `mk` and copies the loaded tile.
fn marker_program() -> String {
    "tensor x: f32[4, 64] input\nsemaphore ld\nsemaphore mk\n\
     engine sp {\n  loop r0 = 0..1 {\n    dma q0 sbuf.f32[0, 4; 0; 64:1], hbm x[0; 4:64, 64:1] -> ld\n    \
     @(r0 >= 1) dma q0 sbuf.f32[0, 4; 1024; 64:1], hbm x[0; 4:64, 64:1] -> mk\n  }\n}\n\
     engine act {\n  wait mk >= 1\n  copy sbuf.f32[0, 4; 2048; 64:1], sbuf.f32[0, 4; 0; 64:1]\n}\n"
        .to_string()
}

/// One `dma` instruction loads a tile on its first instance and is predicated off on its second,
/// both signalling `mk`; act waits for both signals and copies the tile.
fn instances_program() -> String {
    "tensor x: f32[4, 64] input\nsemaphore mk\n\
     engine sp {\n  loop r0 = 0..2 {\n    @(r0 < 1) dma q0 sbuf.f32[0, 4; 0; 64:1], hbm x[0; 4:64, 64:1] -> mk\n  }\n}\n\
     engine act {\n  wait mk >= 2\n  copy sbuf.f32[0, 4; 2048; 64:1], sbuf.f32[0, 4; 0; 64:1]\n}\n"
        .to_string()
}

#[test]
fn a_predicated_off_transfer_signals_after_its_semaphores_earlier_signals() {
    let x = arr(&[4, 64], |p, f| (p * 64 + f) as f32);
    // The off instance's signal is counted after the on instance's (issued [0, 64), 1820
    // latency, 1024 bytes), and the wait consuming both joins the load's clock: no race.
    let r = run_text(&instances_program(), std::slice::from_ref(&x)).unwrap();
    let loaded = 64 + 1820 + q(1024);
    let act = &r.stats.engines[Engine::Act.index()];
    assert!(act.busy > 0);
    assert_eq!(act.finish, loaded + act.busy);
    assert!(r.races.is_empty(), "{:?}", r.races);
    // It moved nothing and took no time: one transfer, `sp` done after one issue.
    assert_eq!(r.stats.queue_transfers[0], 1);
    assert_eq!(r.stats.engines[Engine::Sp.index()].finish, 64);
    assert_eq!(r.stats.engines[Engine::Sp.index()].predicated_off, 1);
    // Its own semaphore's order only, not its queue's: behind another instruction's transfer on
    // the same queue, the off transfer still signals at once (cycle 64, when `sp` reaches it); it
    // orders nothing about that transfer, and the race detector reports act's read of the tile.
    let r = run_text(&marker_program(), std::slice::from_ref(&x)).unwrap();
    let act = &r.stats.engines[Engine::Act.index()];
    assert_eq!(act.finish, 64 + act.busy);
    assert_eq!(r.races.len(), 1, "{:?}", r.races);
    assert!(
        r.races[0].first.text.starts_with("dma q0"),
        "{}",
        r.races[0]
    );
}

/// `sp` stores a loaded `[4, 64]` tile to scratch (when `store`) and loads it back into another
/// tile; the output is that tile stored.
fn scratch_program(store: bool) -> String {
    let mut s = String::from(
        "tensor x: f32[4, 64] input\ntensor y: f32[4, 64] output\ntensor tmp: f32[512] scratch\n\
         semaphore ld\nsemaphore st\nsemaphore back\nengine sp {\n  \
         dma q0 sbuf.f32[0, 4; 0; 64:1], hbm x[0; 4:64, 64:1] -> ld\n  wait ld >= 1\n",
    );
    if store {
        s += "  dma q1 hbm tmp[128; 4:64, 64:1], sbuf.f32[0, 4; 0; 64:1] -> st\n  wait st >= 1\n";
    }
    s += "  dma q2 sbuf.f32[0, 4; 1024; 64:1], hbm tmp[128; 4:64, 64:1] -> back\n  \
          wait back >= 1\n  dma q3 hbm y[0; 4:64, 64:1], sbuf.f32[0, 4; 1024; 64:1]\n}\n";
    s
}

#[test]
fn scratch_tensors_round_trip_and_start_undefined() {
    let x = arr(&[4, 64], |p, f| p as f32 * 0.5 - f as f32);
    let r = run_text(&scratch_program(true), std::slice::from_ref(&x)).unwrap();
    // Only the input is given and only the output returned.
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(bits(&r.outputs[0].1.data), bits(&x.data));
    assert!(r.races.is_empty(), "{:?}", r.races);
    let p = text::parse(&scratch_program(true)).unwrap();
    assert_eq!(text::parse(&text::print(&p)).unwrap(), p);
    assert!(text::print(&p).contains("tensor tmp: f32[512] scratch"));
    // Without the store, the load reads elements nothing wrote: that is undefined data, not yet
    // an error; storing it into the output is, naming the store and the first output element.
    let err = run_text(&scratch_program(false), std::slice::from_ref(&x)).unwrap_err();
    let SimError::Uninitialised {
        inst,
        tensor,
        element,
    } = &err
    else {
        panic!("{err}")
    };
    assert!(inst.text.starts_with("dma q3 hbm y[0"), "{err}");
    assert_eq!((tensor.as_str(), *element), ("y", 0), "{err}");
    assert!(
        err.to_string()
            .contains("writes element 0 of HBM tensor `y` with an undefined value"),
        "{err}"
    );
    // Timing only, nothing is read: no error.
    let timing = Options {
        numerics: false,
        ..Options::default()
    };
    let p = text::parse(&scratch_program(false)).unwrap();
    assert!(sim::simulate(&p, &[], &timing).is_ok());
}

/// `t` (bytes 0..16) holds rows 0..3 of `x`, its partition 3 undefined; `w` (bytes 64..80) holds
/// columns 0..2 of `x`, its columns 2..4 undefined. `u = tᵀ` (via PSUM) has column 3 undefined;
/// `v = t[0..3]ᵀ · w` has columns 2..4 undefined (column `n` of the moving operand). Only the
/// defined parts are stored, then `EXTRA`.
const UNDEFINED_FLOW: &str = "tensor x: f32[3, 4] input
tensor y: f32[4, 4] output
tensor z: f32[4, 4] output
semaphore ld
semaphore pe_done
semaphore cp
engine sp {
  dma q0 sbuf.f32[0, 3; 0; 4:1], hbm x[0; 3:4, 4:1] -> ld
  dma q1 sbuf.f32[0, 3; 64; 2:1], hbm x[0; 3:4, 2:1] -> ld
  wait cp >= 2
  dma q2 hbm y[0; 4:4, 3:1], sbuf.f32[0, 4; 128; 3:1]
  dma q3 hbm z[0; 4:4, 2:1], sbuf.f32[0, 4; 256; 2:1]
EXTRA}
engine pe {
  wait ld >= 2
  transpose psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1] -> pe_done
  matmul psum.f32[0, 4; 2048; 4:1], sbuf.f32[0, 3; 0; 4:1], sbuf.f32[0, 3; 64; 4:1] -> pe_done
}
engine act {
  wait pe_done >= 2
  copy sbuf.f32[0, 4; 128; 4:1], psum.f32[0, 4; 0; 4:1] -> cp
  copy sbuf.f32[0, 4; 256; 4:1], psum.f32[0, 4; 2048; 4:1] -> cp
}
";

#[test]
fn undefined_values_flow_by_row_and_column_and_fail_only_when_stored() {
    let x = arr(&[3, 4], |p, f| p as f32 * 0.75 - f as f32 * 0.5 + 0.25);
    let run = |extra: &str| {
        run_text(
            &UNDEFINED_FLOW.replace("EXTRA", extra),
            std::slice::from_ref(&x),
        )
    };
    let r = run("").unwrap_or_else(|e| panic!("{e}"));
    let (y, z) = (&r.outputs[0].1.data, &r.outputs[1].1.data);
    for i in 0..4 {
        for j in 0..3 {
            assert_eq!(
                y[i * 4 + j].to_bits(),
                x.data[j * 4 + i].to_bits(),
                "y[{i}, {j}]"
            );
        }
        for j in 0..2 {
            let mut s = 0.0f32;
            for k in 0..3 {
                s += x.data[k * 4 + i] * x.data[k * 4 + j];
            }
            assert_eq!(z[i * 4 + j].to_bits(), s.to_bits(), "z[{i}, {j}]");
        }
    }
    // Column 3 of the transpose is partition 3 of `t`; column 2 of the product meets column 2
    // of `w`: storing either is the error, at the store, naming the output element.
    for (extra, tensor, element) in [
        (
            "  dma q2 hbm y[3; 4:4, 1:1], sbuf.f32[0, 4; 140; 1:1]\n",
            "y",
            3,
        ),
        (
            "  dma q3 hbm z[6; 3:4, 1:1], sbuf.f32[1, 3; 264; 1:1]\n",
            "z",
            6,
        ),
    ] {
        let err = run(extra).unwrap_err();
        let SimError::Uninitialised {
            inst,
            tensor: t,
            element: e,
        } = &err
        else {
            panic!("{err}")
        };
        assert!(inst.text.starts_with(extra.trim()), "{err}");
        assert_eq!((t.as_str(), *e), (tensor, element), "{err}");
    }
}
