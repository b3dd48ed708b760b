//! The interpreter's control and storage semantics: loops, carried buffers, predicates, modulo
//! slots of widened tensors, bfloat16 storage, and seeded random inputs.

mod common;

use common::*;
use penguin::interp::{interpret, random_inputs, round_bf16, Array};
use penguin::*;

/// Verifies `f` (these kernels are well formed) and interprets it.
fn run(f: &Function, inputs: &[Array]) -> Vec<Array> {
    if let Err(errors) = verify_function(f) {
        panic!("{} does not verify: {errors:?}", f.name);
    }
    interpret(f, inputs)
        .unwrap_or_else(|e| panic!("interpretation failed: {e}"))
        .outputs
}

#[test]
fn carried_sbuf_accumulator_across_iterations() {
    // acc = 0; for i in 0..5: acc = acc + a[i*3 .. i*3+3, :] * 0.5; out = acc.
    let (n, p, f) = (5usize, 3usize, 4usize);
    let mut b = Builder::new("carry");
    let a = b.input("a", (n * p) as u64, f as u64);
    let out = b.output("out", p as u64, f as u64);
    let acc = b.sbuf("acc", p as u64, f as u64);
    let t = b.sbuf("t", p as u64, f as u64);
    let h = b.sbuf("h", p as u64, f as u64);
    b.inst(Op::Memset { value: 0.0 }, b.whole(acc), vec![]);
    let (_, i) = b.begin_loop("i", 0, n as i64);
    b.inst(
        Op::Load,
        b.whole(t),
        vec![tile(a, lin(i, p as i64, 0), k(0), p as u64, f as u64)],
    );
    b.inst(
        Op::TensorScalar {
            op: AluOp::Multiply,
            imm: 0.5,
            reverse: false,
        },
        b.whole(h),
        vec![b.whole(t)],
    );
    b.inst(
        Op::TensorTensor { op: AluOp::Add },
        b.whole(acc),
        vec![b.whole(acc), b.whole(h)],
    );
    b.end_loop();
    b.inst(Op::Store, b.whole(out), vec![b.whole(acc)]);
    let x = data(n * p, f, 4);
    let got = &run(&b.f, std::slice::from_ref(&x))[0];
    let want = Array::from_fn(p, f, |r, c| {
        let mut s = 0.0f32;
        for it in 0..n {
            s += x.at(it * p + r, c) * 0.5;
        }
        s
    });
    assert_eq!(got, &want);
}

#[test]
fn predicates_skip_some_iterations() {
    // for i in 0..6: if 2 <= i < 5: out[i] = a[i] + 1. Rows never stored read back as 0.
    let (n, f) = (6usize, 3usize);
    let mut b = Builder::new("guard");
    let a = b.input("a", n as u64, f as u64);
    let out = b.output("out", n as u64, f as u64);
    let t = b.sbuf("t", 1, f as u64);
    let (_, i) = b.begin_loop("i", 0, n as i64);
    let ld = b.inst(
        Op::Load,
        b.whole(t),
        vec![tile(a, lin(i, 1, 0), k(0), 1, f as u64)],
    );
    let add = b.inst(
        Op::TensorScalar {
            op: AluOp::Add,
            imm: 1.0,
            reverse: false,
        },
        b.whole(t),
        vec![b.whole(t)],
    );
    let st = b.inst(
        Op::Store,
        tile(out, lin(i, 1, 0), k(0), 1, f as u64),
        vec![b.whole(t)],
    );
    for s in [ld, add, st] {
        b.guard(s, lin(i, 1, 0), CmpOp::Ge, 2);
        b.guard(s, lin(i, 1, 0), CmpOp::Lt, 5);
    }
    b.end_loop();
    let x = data(n, f, 9);
    verify_function(&b.f).expect("the kernel verifies");
    let r = interpret(&b.f, std::slice::from_ref(&x)).unwrap();
    let want = Array::from_fn(n, f, |row, c| {
        if (2..5).contains(&row) {
            x.at(row, c) + 1.0
        } else {
            0.0
        }
    });
    assert_eq!(r.outputs[0], want);
    assert_eq!(r.stats.total.insts, 9);
    assert_eq!(r.stats.stmts_skipped, 9);
}

#[test]
fn a_guard_on_a_loop_statement_skips_the_whole_loop() {
    // for i in 0..3: if i == 1: for j in 0..2: out[i, j] = 7 (memset). Only row 1 is written.
    let mut b = Builder::new("nested");
    let out = b.output("out", 3, 2);
    let t = b.sbuf("t", 1, 1);
    let (_, i) = b.begin_loop("i", 0, 3);
    let (inner, j) = b.begin_loop("j", 0, 2);
    b.inst(Op::Memset { value: 7.0 }, b.whole(t), vec![]);
    b.inst(
        Op::Store,
        tile(out, lin(i, 1, 0), lin(j, 1, 0), 1, 1),
        vec![b.whole(t)],
    );
    b.end_loop();
    b.end_loop();
    b.guard(inner, lin(i, 1, 0), CmpOp::Eq, 1);
    verify_function(&b.f).expect("the kernel verifies");
    let r = interpret(&b.f, &[]).unwrap();
    assert_eq!(r.outputs[0].data, vec![0.0, 0.0, 7.0, 7.0, 0.0, 0.0]);
    assert_eq!(r.stats.total.insts, 4);
    assert_eq!(r.stats.stmts_skipped, 2);
}

/// The plain loop: `for i in 0..n: t = load(a[i]); u = exp(t); store(out[i], u)`.
fn plain_loop(n: i64, f: u64) -> Function {
    let mut b = Builder::new("plain");
    let a = b.input("a", n as u64, f);
    let out = b.output("out", n as u64, f);
    let t = b.sbuf("t", 1, f);
    let u = b.sbuf("u", 1, f);
    let (_, i) = b.begin_loop("i", 0, n);
    b.inst(
        Op::Load,
        b.whole(t),
        vec![tile(a, lin(i, 1, 0), k(0), 1, f)],
    );
    b.inst(
        Op::Activation {
            func: ActFunc::Exp,
            scale: Scale::Imm(1.0),
            bias: false,
        },
        b.whole(u),
        vec![b.whole(t)],
    );
    b.inst(
        Op::Store,
        tile(out, lin(i, 1, 0), k(0), 1, f),
        vec![b.whole(u)],
    );
    b.end_loop();
    b.f
}

/// The same loop pipelined by hand in 2 stages (load | exp, store), as the pipeliner would: the
/// loop runs `n + 1` times, stage s is guarded by `i >= s` and `i < n + s` and uses `i - s`, and
/// `t`, live across the stages, has `buffers` slots selected by `(i - s) mod buffers`. Stage 0 runs
/// first in the body, so one buffer is not enough.
fn pipelined_loop(n: i64, f: u64, buffers: u32, guard_stage1: bool) -> Function {
    pipelined_loop_guarding(n, f, buffers, guard_stage1, guard_stage1)
}

/// [`pipelined_loop`] with stage 1's exp and store guarded separately.
fn pipelined_loop_guarding(
    n: i64,
    f: u64,
    buffers: u32,
    guard_exp: bool,
    guard_store: bool,
) -> Function {
    let mut b = Builder::new("pipelined");
    let a = b.input("a", n as u64, f);
    let out = b.output("out", n as u64, f);
    let t = b.sbuf("t", 1, f);
    let u = b.sbuf("u", 1, f);
    let (_, i) = b.begin_loop("i", 0, n + 1);
    b.widen(t, i, buffers);
    let ld = b.inst(
        Op::Load,
        slotted(b.whole(t), vec![lin(i, 1, 0)]),
        vec![tile(a, lin(i, 1, 0), k(0), 1, f)],
    );
    b.guard(ld, lin(i, 1, 0), CmpOp::Ge, 0);
    b.guard(ld, lin(i, 1, 0), CmpOp::Lt, n);
    let ex = b.inst(
        Op::Activation {
            func: ActFunc::Exp,
            scale: Scale::Imm(1.0),
            bias: false,
        },
        b.whole(u),
        vec![slotted(b.whole(t), vec![lin(i, 1, -1)])],
    );
    let st = b.inst(
        Op::Store,
        tile(out, lin(i, 1, -1), k(0), 1, f),
        vec![b.whole(u)],
    );
    for (s, guarded) in [(ex, guard_exp), (st, guard_store)] {
        if guarded {
            b.guard(s, lin(i, 1, 0), CmpOp::Ge, 1);
            b.guard(s, lin(i, 1, 0), CmpOp::Lt, n + 1);
        }
    }
    b.end_loop();
    b.f
}

#[test]
fn modulo_slots_of_a_widened_tensor_match_the_plain_loop() {
    let (n, f) = (5i64, 4u64);
    let x = data(n as usize, f as usize, 13);
    let plain = run(&plain_loop(n, f), std::slice::from_ref(&x));
    // Independent expectation for the plain loop.
    let want = Array::from_fn(n as usize, f as usize, |r, c| x.at(r, c).exp());
    assert_eq!(plain[0], want);
    let piped = run(&pipelined_loop(n, f, 2, true), std::slice::from_ref(&x));
    assert_eq!(piped, plain);
    // With a single buffer stage 0 overwrites t before stage 1 reads it: row r gets exp(a[r + 1]).
    let single = run(&pipelined_loop(n, f, 1, true), std::slice::from_ref(&x));
    assert_ne!(single, plain);
    assert_eq!(single[0].at(0, 0), x.at(1, 0).exp());
}

#[test]
fn an_unguarded_stage_computes_garbage_that_no_output_sees() {
    // Without its guards, stage 1's exp runs at i = 0 on slot (0 - 1) mod 2 = 1, never written:
    // `u` holds undefined values, but the guarded store skips them and the next exp overwrites
    // them, so the run succeeds and equals the plain loop.
    let (n, f) = (3i64, 2u64);
    let x = data(n as usize, f as usize, 1);
    let plain = run(&plain_loop(n, f), std::slice::from_ref(&x));
    let loose = run(
        &pipelined_loop_guarding(n, f, 2, false, true),
        std::slice::from_ref(&x),
    );
    assert_eq!(loose, plain);
}

#[test]
fn garbage_from_an_unwritten_slot_is_an_error_at_the_store() {
    // One buffer too few, with a store that writes every iteration's exp into row i of a
    // widened output: at i = 0 the exp of never-written slot 1 reaches HBM.
    let (n, f) = (2i64, 2u64);
    let mut b = Builder::new("early");
    let a = b.input("a", n as u64, f);
    let out = b.output("out", n as u64 + 1, f);
    let t = b.sbuf("t", 1, f);
    let u = b.sbuf("u", 1, f);
    let (_, i) = b.begin_loop("i", 0, n + 1);
    b.widen(t, i, 2);
    let ld = b.inst(
        Op::Load,
        slotted(b.whole(t), vec![lin(i, 1, 0)]),
        vec![tile(a, lin(i, 1, 0), k(0), 1, f)],
    );
    b.guard(ld, lin(i, 1, 0), CmpOp::Lt, n);
    b.inst(
        Op::Activation {
            func: ActFunc::Exp,
            scale: Scale::Imm(1.0),
            bias: false,
        },
        b.whole(u),
        vec![slotted(b.whole(t), vec![lin(i, 1, -1)])],
    );
    b.inst(
        Op::Store,
        tile(out, lin(i, 1, 0), k(0), 1, f),
        vec![b.whole(u)],
    );
    b.end_loop();
    let err = interpret(&b.f, &[data(n as usize, f as usize, 1)]).unwrap_err();
    match &err {
        penguin::interp::InterpError::Uninitialised {
            op,
            tensor,
            element,
            dest,
            at,
            ..
        } => {
            assert_eq!(*op, "store");
            assert_eq!(tensor, "u");
            assert_eq!(dest, "out");
            assert_eq!((element.slot, element.row, element.col), (None, 0, 0));
            assert_eq!(at.0, vec![("i".to_string(), 0)]);
        }
        other => panic!("expected an undefined store, got {other}"),
    }
    assert!(err.to_string().contains("(at i = 0)"), "{err}");
}

#[test]
fn two_block_dims_combine_row_major() {
    // t has block dims (i: 2) and (j: 3); slot = (i mod 2) * 3 + (j mod 3). Each (i, j) writes its
    // own slot with the value 10 i + j, and a second loop reads them back into out[i, j].
    let mut b = Builder::new("blocks");
    let out = b.output("out", 2, 3);
    let t = b.sbuf("t", 1, 1);
    let (_, i) = b.begin_loop("i", 0, 2);
    let (_, j) = b.begin_loop("j", 0, 3);
    b.widen(t, i, 2);
    b.widen(t, j, 3);
    // memset can only write constants, so write 0 then add 10 i + j through ALU ops on a tile
    // of constants: simpler to store distinct memsets per (i, j) via guards.
    for ii in 0..2 {
        for jj in 0..3 {
            let s = b.inst(
                Op::Memset {
                    value: (10 * ii + jj) as f32,
                },
                slotted(b.whole(t), vec![lin(i, 1, 0), lin(j, 1, 0)]),
                vec![],
            );
            b.guard(s, lin(i, 1, 0), CmpOp::Eq, ii);
            b.guard(s, lin(j, 1, 0), CmpOp::Eq, jj);
        }
    }
    b.end_loop();
    b.end_loop();
    let (_, i2) = b.begin_loop("i2", 0, 2);
    let (_, j2) = b.begin_loop("j2", 0, 3);
    // Reading slot (i2 + 2, j2 + 3): the same slot, by the modulo.
    b.inst(
        Op::Store,
        tile(out, lin(i2, 1, 0), lin(j2, 1, 0), 1, 1),
        vec![slotted(b.whole(t), vec![lin(i2, 1, 2), lin(j2, 1, 3)])],
    );
    b.end_loop();
    b.end_loop();
    let got = &run(&b.f, &[])[0];
    assert_eq!(got.data, vec![0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
}

#[test]
fn bf16_storage_rounds_on_store_and_on_entry() {
    let eps = |e: i32| 2f32.powi(e);
    let raw = vec![
        1.0 + eps(-9),               // below half an ulp: 1.0
        1.0 + eps(-8),               // tie, even below: 1.0
        1.0 + eps(-7) + eps(-8),     // tie, odd below: 1 + 2^-6
        1.0 + eps(-8) + eps(-16),    // above half an ulp: 1 + 2^-7
        -(3.0 + eps(-7) + eps(-16)), // spacing 2^-6 at 3, just above the tie: -(3 + 2^-6)
        -(3.0 + eps(-7)),            // the tie below the odd 3 + 2^-6: to the even -3
        1.5,                         // exact
    ];
    let rounded = vec![
        1.0,
        1.0,
        1.0 + eps(-6),
        1.0 + eps(-7),
        -(3.0 + eps(-6)),
        -3.0,
        1.5,
    ];
    for (r, w) in raw.iter().zip(&rounded) {
        assert_eq!(round_bf16(*r), *w, "round_bf16({r})");
    }
    let n = raw.len() as u64;

    // f32 input -> bf16 SBUF tile -> f32 output: rounded on the store into the tile.
    let mut b = Builder::new("bf16_sbuf");
    let a = b.input("a", 1, n);
    let out = b.output("out", 1, n);
    let t = b.tensor("t", Memory::Sbuf, DType::Bf16, TensorKind::Local, 1, n);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(t)]);
    let x = Array::new(vec![1, n as usize], raw.clone());
    assert_eq!(run(&b.f, std::slice::from_ref(&x))[0].data, rounded);

    // bf16 input parameter: rounded on entry.
    let mut b = Builder::new("bf16_in");
    let a = b.tensor("a", Memory::Hbm, DType::Bf16, TensorKind::Input, 1, n);
    let out = b.output("out", 1, n);
    let t = b.sbuf("t", 1, n);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(t)]);
    assert_eq!(run(&b.f, std::slice::from_ref(&x))[0].data, rounded);

    // Arithmetic stays f32 (1 + 2^-9 + 1 + 2^-9 = 2 + 2^-8 exactly in an f32 tile), and a bf16
    // HBM output rounds on store (2 + 2^-8 is below half of bf16's 2^-6 spacing at 2: 2).
    let mut b = Builder::new("bf16_out");
    let a = b.input("a", 1, 1);
    let out32 = b.output("out32", 1, 1);
    let out16 = b.tensor("out16", Memory::Hbm, DType::Bf16, TensorKind::Output, 1, 1);
    let t = b.sbuf("t", 1, 1);
    let u = b.sbuf("u", 1, 1);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(
        Op::TensorTensor { op: AluOp::Add },
        b.whole(u),
        vec![b.whole(t), b.whole(t)],
    );
    b.inst(Op::Store, b.whole(out32), vec![b.whole(u)]);
    b.inst(Op::Store, b.whole(out16), vec![b.whole(u)]);
    let got = run(&b.f, &[Array::new(vec![1, 1], vec![1.0 + eps(-9)])]);
    assert_eq!(got[0].data, vec![2.0 + eps(-8)]);
    assert_eq!(got[1].data, vec![2.0]);
}

#[test]
fn random_inputs_are_deterministic_and_in_range() {
    let mut b = Builder::new("rand");
    b.input("a", 3, 5);
    b.tensor("h", Memory::Hbm, DType::Bf16, TensorKind::Input, 2, 4);
    b.output("out", 1, 1);
    let x = random_inputs(&b.f, 42);
    assert_eq!(x.len(), 2);
    assert_eq!(x[0].shape, vec![3, 5]);
    assert_eq!(x[1].shape, vec![2, 4]);
    assert_eq!(x[0].data.len(), 15);
    assert_eq!(x[1].data.len(), 8);
    for v in x.iter().flat_map(|a| &a.data) {
        assert!((-1.0..1.0).contains(v), "{v}");
    }
    for v in &x[1].data {
        assert_eq!(round_bf16(*v), *v, "bf16 parameter values are bf16");
    }
    assert_eq!(random_inputs(&b.f, 42), x);
    assert_ne!(random_inputs(&b.f, 43), x);
    // Values are spread: not all equal, both signs.
    assert!(x[0].data.iter().any(|&v| v < 0.0) && x[0].data.iter().any(|&v| v > 0.0));
    let first = x[0].data[0];
    assert!(x[0].data.iter().any(|&v| v != first));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// The hand-pipelined loop with 2 or more buffers gives the plain loop's outputs for any
    /// trip count, including fewer iterations than stages, and any data.
    #[test]
    fn pipelined_equals_plain_for_any_trip_count(
        n in 1i64..9,
        f in 1u64..6,
        buffers in 2u32..5,
        seed in 0u32..1000,
    ) {
        let x = data(n as usize, f as usize, seed);
        let plain = run(&plain_loop(n, f), std::slice::from_ref(&x));
        let piped = run(&pipelined_loop(n, f, buffers, true), std::slice::from_ref(&x));
        proptest::prop_assert_eq!(piped, plain);
    }
}
