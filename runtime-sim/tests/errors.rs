//! The race detector on programs with one missing wait, deadlocks, and every bad-input error.

use runtime_sim::isa::Reg;
use runtime_sim::sim::{self, Options, SimError};
use runtime_sim::text;
use runtime_sim::validate::{Shape, Violation};

fn program(name: &str) -> String {
    let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("the test program exists")
}

fn run(src: &str) -> Result<sim::SimResult, SimError> {
    let p = text::parse(src).unwrap_or_else(|e| panic!("parse: {e}\n{src}"));
    let inputs = sim::random_inputs(&p, 7);
    sim::simulate(&p, &inputs, &Options::default())
}

/// `src` run for timing only (no values): a racy store of a tile not yet computed would stop a
/// run with values at the store ([`SimError::Uninitialised`]) before the races are reported.
fn run_timing(src: &str) -> Result<sim::SimResult, SimError> {
    let p = text::parse(src).unwrap_or_else(|e| panic!("parse: {e}\n{src}"));
    let opts = Options {
        numerics: false,
        ..Options::default()
    };
    sim::simulate(&p, &[], &opts)
}

/// `src` with the one line containing `needle` removed (exactly one must match).
fn without(src: &str, needle: &str) -> String {
    assert_eq!(
        src.lines().filter(|l| l.contains(needle)).count(),
        1,
        "{needle}"
    );
    src.lines()
        .filter(|l| !l.contains(needle))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn correct_programs_have_no_race() {
    for name in ["add.s", "loop.s", "queues.s"] {
        let r = run(&program(name)).unwrap();
        assert!(r.races.is_empty(), "{name}: {:?}", r.races);
    }
}

#[test]
fn a_missing_wait_before_a_read_is_a_race() {
    // dve adds before the load of `b` is known to be complete.
    let src = without(&program("add.s"), "wait lb >= 1");
    let r = run(&src).unwrap();
    assert_eq!(r.races.len(), 1, "{:?}", r.races);
    let race = &r.races[0];
    assert!(race.first.text.starts_with("dma q1"), "{race}");
    assert!(race.first_writes);
    assert!(race.second.text.starts_with("tensor_tensor add"), "{race}");
    assert!(!race.second_writes);
    assert_eq!(race.memory, "sbuf");
    assert_eq!(race.partitions, (0, 128));
    assert_eq!(race.bytes, (2048, 4096));
}

#[test]
fn a_missing_wait_before_a_store_is_a_race() {
    // sp stores the sum without waiting for the add.
    let src = without(&program("add.s"), "wait added >= 1");
    // With values, the store reads the sum's tile before anything wrote it: undefined data bound
    // for the output, which stops the run at the store.
    match run(&src) {
        Err(SimError::Uninitialised { inst, tensor, .. }) => {
            assert!(inst.text.starts_with("dma q2"), "{inst}");
            assert_eq!(tensor, "out");
        }
        other => panic!(
            "expected an undefined store, got {:?}",
            other.map(|r| r.races)
        ),
    }
    let r = run_timing(&src).unwrap();
    assert_eq!(r.races.len(), 1, "{:?}", r.races);
    // Without the wait, sp issues the store (at cycle 128) before the add runs, so the store is
    // the first access found.
    let race = &r.races[0];
    assert!(
        race.first.text.starts_with("dma q2") && !race.first_writes,
        "{race}"
    );
    assert!(
        race.second.text.starts_with("tensor_tensor") && race.second_writes,
        "{race}"
    );
    assert_eq!(race.bytes, (4096, 6144));
}

#[test]
fn missing_waits_in_the_pipelined_loop_are_races() {
    let src = program("loop.s");
    // The consumer does not wait for the load (read after write).
    let r = run_timing(&without(&src, "wait ld >= r0 + 1")).unwrap();
    assert!(!r.races.is_empty());
    for x in &r.races {
        let texts = [&x.first.text, &x.second.text];
        assert!(
            texts.iter().any(|t| t.starts_with("@(r0 < 4) dma q0")),
            "{x}"
        );
        assert!(texts.iter().any(|t| t.starts_with("tensor_scalar")), "{x}");
    }
    // The store does not wait for the add (write then read).
    let r = run_timing(&without(&src, "@(r0 >= 1) wait done >= r0")).unwrap();
    assert!(!r.races.is_empty());
    let race = &r.races[0];
    assert!(
        race.first.text.starts_with("@(r0 >= 1) dma q1") && !race.first_writes,
        "{race}"
    );
    assert!(
        race.second.text.starts_with("tensor_scalar") && race.second_writes,
        "{race}"
    );
    // The add overwrites an output buffer the store of two tiles ago may still read (write after
    // read): the report names both instructions with their iterations.
    let r = run_timing(&without(&src, "wait stored >= r0")).unwrap();
    assert!(!r.races.is_empty());
    let race = &r.races[0];
    assert!(
        race.first.text.contains("dma q1") && !race.first_writes,
        "{race}"
    );
    assert!(
        race.second.text.starts_with("tensor_scalar") && race.second_writes,
        "{race}"
    );
    assert_eq!(race.second.iters, vec![(0, 2)]);
    assert_eq!(race.bytes, (1024, 1280));
    let msg = race.to_string();
    assert!(
        msg.contains("r0=2") && msg.contains("no semaphore"),
        "{msg}"
    );
}

#[test]
fn a_race_through_psum_and_between_compute_engines() {
    // dve copies out of PSUM while pe may still be writing: no semaphore between them.
    let src = "tensor y: f32[4, 4] output\nsemaphore s\n\
        engine pe {\n  matmul psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 64; 4:1] -> s\n}\n\
        engine dve {\n  copy sbuf.f32[0, 4; 128; 4:1], psum.f32[0, 4; 0; 4:1]\n}\n";
    let r = run(src).unwrap();
    assert_eq!(r.races.len(), 1);
    assert_eq!(r.races[0].memory, "psum");
    let fixed = src.replace("engine dve {\n", "engine dve {\n  wait s >= 1\n");
    assert!(run(&fixed).unwrap().races.is_empty());
}

#[test]
fn deadlock_names_every_blocked_engine() {
    let src = "semaphore a\nsemaphore b\n\
        engine act {\n  wait a >= 1\n  signal b\n}\n\
        engine dve {\n  loop r0 = 0..3 {\n    wait b >= r0 + 1\n    signal a\n  }\n}\n";
    let err = run(src).unwrap_err();
    let SimError::Deadlock { blocked, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(blocked.len(), 2);
    assert_eq!(blocked[0].semaphore, "a");
    assert_eq!((blocked[0].needs, blocked[0].has), (1, 0));
    assert_eq!(blocked[1].semaphore, "b");
    assert_eq!(blocked[1].inst.iters, vec![(0, 0)]);
    let msg = err.to_string();
    assert!(
        msg.contains("deadlock") && msg.contains("act line 4") && msg.contains("dve line 9"),
        "{msg}"
    );
}

#[test]
fn a_wait_for_more_signals_than_ever_come_deadlocks() {
    let src = "semaphore s\nengine pool {\n  signal s\n  wait s >= 2\n}\n";
    let err = run(src).unwrap_err();
    assert!(
        matches!(&err, SimError::Deadlock { blocked, .. } if blocked[0].has == 1),
        "{err}"
    );
}

fn access_error(src: &str) -> String {
    match run(src) {
        Err(SimError::Access { error, .. }) => error.to_string(),
        other => panic!("expected an access error, got {other:?}"),
    }
}

fn invalid(src: &str) -> String {
    match run(src) {
        Err(SimError::Invalid(e)) => e.to_string(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn access_outside_sbuf() {
    // 192 KiB per partition: 196608 - 8 + 4 * 4 runs past the end.
    let m = access_error("engine dve {\n  memset sbuf.f32[0, 4; 196600; 4:1], 0.0\n}\n");
    assert!(m.contains("outside sbuf"), "{m}");
    // Partitions 120..136.
    let m = access_error("engine dve {\n  memset sbuf.f32[120, 16; 0; 4:1], 0.0\n}\n");
    assert!(m.contains("partitions 120..136"), "{m}");
    // A register-dependent address that goes negative on the second iteration.
    let m = access_error("engine dve {\n  loop r0 = 0..2 {\n    memset sbuf.f32[0, 4; 64 - 128*r0; 4:1], 0.0\n  }\n}\n");
    assert!(m.contains("bytes -64..-48"), "{m}");
}

#[test]
fn access_outside_psum_and_across_a_bank() {
    let m = access_error("engine dve {\n  memset psum.f32[0, 4; 16384; 1:1], 0.0\n}\n");
    assert!(m.contains("outside psum"), "{m}");
    // 512 f32 from byte 1024 end at 3072: bank 0 into bank 1.
    let m = access_error("engine dve {\n  memset psum.f32[0, 4; 1024; 512:1], 0.0\n}\n");
    assert!(m.contains("crossing from bank 0 into bank 1"), "{m}");
    // The same size at a bank boundary is fine.
    assert!(run("engine dve {\n  memset psum.f32[0, 4; 2048; 512:1], 0.0\n}\n").is_ok());
}

#[test]
fn access_outside_a_tensor() {
    let src = "tensor a: f32[4, 8] input\nengine sp {\n  dma q0 sbuf.f32[0, 4; 0; 8:1], hbm a[8; 4:8, 8:1]\n}\n";
    let err = run(src).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("elements 8..40 are outside tensor `a` (32 elements)"),
        "{msg}"
    );
    assert!(msg.contains("sp line 3"), "{msg}");
}

#[test]
fn gpsimd_cannot_touch_psum() {
    let m = invalid("engine pool {\n  memset psum.f32[0, 4; 0; 4:1], 0.0\n}\n");
    assert!(m.contains("GpSimd (pool) cannot access PSUM"), "{m}");
    assert!(m.contains("line 2"), "{m}");
}

#[test]
fn static_rules() {
    let cases = [
        ("engine dve {\n  matmul psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1]\n}\n", "runs on pe"),
        ("engine pe {\n  matmul psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 0; 4:1]\n}\n", "shapes disagree"),
        ("engine pe {\n  transpose psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 8:1]\n}\n", "gives [8, 4]"),
        ("engine dve {\n  tensor_tensor add sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 0; 2:1], sbuf.f32[0, 4; 0; 8:1]\n}\n", "first source"),
        ("engine dve {\n  reduce sum sbuf.f32[0, 4; 0; 2:1], sbuf.f32[0, 4; 0; 8:1]\n}\n", "reduce of [4, 8]"),
        ("tensor a: f32[4, 8] input\nengine sp {\n  dma q0 psum.f32[0, 4; 0; 8:1], hbm a[0; 4:8, 8:1]\n}\n", "sp cannot access PSUM"),
        ("tensor a: f32[4, 8] input\nengine sp {\n  dma q0 sbuf.f32[0, 4; 0; 4:1], hbm a[0; 4:8, 8:1]\n}\n", "moves 16 elements but the HBM side 32"),
        ("engine act {\n  activation exp sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 0; 8:1], scale=1.0, bias=sbuf.f32[0, 4; 0; 2:1]\n}\n", "bias is [4, 2]"),
    ];
    for (src, want) in cases {
        let m = invalid(src);
        assert!(m.contains(want), "{m}\n{src}");
    }
}

/// A broken static rule is a typed `Violation` carrying what it found; its text is the message
/// users read, word for word.
#[test]
fn violations_carry_their_values_and_read_as_messages() {
    let violation = |src: &str| match run(src) {
        Err(SimError::Invalid(e)) => e.violation,
        other => panic!("expected a validation error, got {other:?}"),
    };
    let v =
        violation("engine pe {\n  transpose psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 8:1]\n}\n");
    assert_eq!(
        v.to_string(),
        "transpose of [4, 8] gives [8, 4], but the destination is [4, 4]"
    );
    assert!(
        matches!(
            v,
            Violation::OutputShape {
                op: "transpose",
                want: Shape { p: 8, f: 4 },
                ..
            }
        ),
        "{v:?}"
    );
    let cases = [
        ("engine dve {\n  matmul psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1]\n}\n",
         "`matmul` does not run on dve; it runs on pe"),
        ("engine pe {\n  matmul psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 0; 4:1]\n}\n",
         "matmul shapes disagree: dst [4, 4] = a [4, 8]ᵀ · b [4, 4] needs a [K, M], b [K, N], dst [M, N]"),
        ("engine dve {\n  tensor_tensor add sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 0; 2:1], sbuf.f32[0, 4; 0; 8:1]\n}\n",
         "the first source has shape [4, 2], but the destination is [4, 8] (a source is [P, F] or a [P, 1] column)"),
        ("engine dve {\n  reduce sum sbuf.f32[0, 4; 0; 2:1], sbuf.f32[0, 4; 0; 8:1]\n}\n",
         "reduce of [4, 8] gives [4, 1], but the destination is [4, 2]"),
        ("engine pool {\n  memset psum.f32[0, 4; 0; 4:1], 0.0\n}\n", "GpSimd (pool) cannot access PSUM"),
        ("tensor a: f32[4, 8] input\nengine sp {\n  dma q0 psum.f32[0, 4; 0; 8:1], hbm a[0; 4:8, 8:1]\n}\n",
         "sp cannot access PSUM"),
        ("tensor a: f32[4, 8] input\nengine sp {\n  dma q0 sbuf.f32[0, 4; 0; 4:1], hbm a[0; 4:8, 8:1]\n}\n",
         "the SBUF side moves 16 elements but the HBM side 32"),
        ("engine act {\n  activation exp sbuf.f32[0, 4; 0; 8:1], sbuf.f32[0, 4; 0; 8:1], scale=1.0, bias=sbuf.f32[0, 4; 0; 2:1]\n}\n",
         "the bias is [4, 2], not a [4, 1] column"),
    ];
    for (src, want) in cases {
        assert_eq!(violation(src).to_string(), want, "{src}");
    }
    assert_eq!(
        Violation::TooManyDims.to_string(),
        "an access pattern has at most 4 dimensions"
    );
    assert_eq!(
        Violation::PartitionCount.to_string(),
        "a partition count must be 1..=128"
    );
    assert_eq!(
        Violation::UnboundRegister { reg: Reg(3) }.to_string(),
        "register r3 is not bound by an enclosing loop"
    );
}

#[test]
fn wrong_inputs_are_errors() {
    let p = text::parse("tensor a: f32[4, 8] input\n").unwrap();
    let err = sim::simulate(&p, &[], &Options::default()).unwrap_err();
    assert!(
        err.to_string().contains("1 input tensors but 0 inputs"),
        "{err}"
    );
    let bad = sim::Array {
        shape: vec![8, 4],
        data: vec![0.0; 32],
    };
    let err = sim::simulate(&p, &[bad], &Options::default()).unwrap_err();
    assert!(err.to_string().contains("has shape [8, 4]"), "{err}");
}

#[test]
fn malformed_programs_name_line_and_column() {
    let cases = [
        ("engine dve {\n  memset sbuf.f32[0, 4; 0; 4:1] 0.0\n}\n", 2, 33, "expected `,`"),
        ("engine dve {\n  frobnicate\n}\n", 2, 3, "unknown instruction `frobnicate`"),
        ("engine dve {\n  memset sbuf.f32[0, 4; r0; 4:1], 0.0\n}\n", 2, 25, "not bound"),
        ("engine dve {\n  loop r0 = 0..2 {\n    loop r0 = 0..2 {\n    }\n  }\n}\n", 3, 10, "already bound"),
        ("engine gpu {\n}\n", 1, 8, "unknown engine"),
        ("tensor a: f64[4] input\n", 1, 11, "unknown dtype"),
        ("engine dve {\n  memset sbuf.f32[0, 4; (r0 mod 0); 4:1], 0.0\n}\n", 2, 26, "not bound"),
        ("engine dve {\n  loop r0 = 0..2 {\n    memset sbuf.f32[0, 4; (r0 mod 0); 4:1], 0.0\n  }\n}\n", 3, 35, "modulus must be positive"),
        ("engine sp {\n  wait s >= 1\n}\n", 2, 8, "unknown semaphore `s`"),
        ("semaphore r3\n", 1, 11, "reserved for a register"),
        ("engine dve {\n  memset sbuf.f32[0, 129; 0; 4:1], 0.0\n}\n", 2, 22, "partition count"),
        ("engine dve {\n  memset sbuf.f32[0, 4; 0; 1:1, 1:1, 1:1, 1:1, 1:1], 0.0\n}\n", 2, 48, "at most 4"),
        ("engine dve {\n  memset sbuf.f32[0, 4; 0; 4:1], 0.0\n", 3, 1, "expected `}`"),
        ("engine sp {\n  dma q16 sbuf.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1]\n}\n", 2, 7, "DMA queue"),
        ("engine dve {\n  memset sbuf.f32[0, 4; 0; 4:1], 0.0 stmt \"open\n}\n", 2, 43, "string"),
        ("engine dve {\n  memset sbuf.f32[0, 4; 0; 4:1], 0.0 $\n}\n", 2, 38, "unexpected character"),
    ];
    for (src, line, col, want) in cases {
        let e = text::parse(src).unwrap_err();
        assert!(e.message.contains(want), "{e}\n{src}");
        assert_eq!((e.line, e.col), (line, col), "{e}\n{src}");
    }
}

/// `loop.s` over 512 tiles instead of 4: long enough for the detector to drop records that every
/// engine has seen, which must not hide a race.
fn long_loop() -> String {
    program("loop.s")
        .replace("f32[4, 256]", "f32[4, 32768]")
        .replace("4:256", "4:32768")
        .replace("0..5", "0..513")
        .replace("0..4", "0..512")
        .replace("r0 < 4", "r0 < 512")
}

#[test]
fn races_are_found_after_old_records_are_dropped() {
    let src = long_loop();
    let r = run(&src).unwrap();
    assert!(r.races.is_empty(), "{:?}", r.races);
    assert_eq!(r.stats.queue_transfers[0], 512);
    assert!(r.stats.race_prunes > 0);
    // Only the last iteration misses its wait: the add of tile 511 does not wait for its load.
    let racy = src.replace(
        "    wait ld >= r0 + 1\n",
        "    @(r0 < 511) wait ld >= r0 + 1\n",
    );
    let r = run(&racy).unwrap();
    assert!(r.stats.race_prunes > 0);
    assert!(!r.races.is_empty());
    for race in &r.races {
        let iters = [&race.first.iters, &race.second.iters];
        assert!(iters.iter().all(|i| *i == &vec![(0, 511)]), "{race}");
    }
}
