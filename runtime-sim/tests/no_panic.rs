//! No input makes the reader or the simulator panic: random programs built from the ISA's types
//! (printed, read back and run), and valid programs mutated character by character.

use proptest::prelude::*;
use runtime_sim::isa::*;
use runtime_sim::sim::{self, Options};
use runtime_sim::text;

/// Instructions a program may execute, at most (loops multiply).
fn dynamic_insts(stmts: &[Stmt]) -> u64 {
    stmts.iter().fold(0u64, |n, s| {
        n.saturating_add(match s {
            Stmt::Inst(_) => 1,
            Stmt::Loop(l) => l.trip.saturating_mul(dynamic_insts(&l.body).max(1)),
        })
    })
}

/// Runs a program when it is small enough to run quickly; never panics.
fn try_run(p: &Program) {
    let work: u64 = p
        .streams
        .iter()
        .map(|s| dynamic_insts(s))
        .fold(0, u64::saturating_add);
    let elems: u64 = p
        .tensors
        .iter()
        .map(|t| t.elems())
        .fold(0, u64::saturating_add);
    if work > 20_000 || elems > 1 << 22 {
        return;
    }
    let inputs = sim::random_inputs(p, 1);
    let opts = Options {
        trace: true,
        ..Options::default()
    };
    match sim::simulate(p, &inputs, &opts) {
        Ok(r) => {
            let _ = sim::trace::to_chrome_json(&r.trace);
            for race in &r.races {
                let _ = race.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fn expr(regs: Vec<Reg>) -> impl Strategy<Value = Expr> {
    let n = regs.len();
    let term =
        (0..n.max(1), -300i64..300, 1i64..5, any::<bool>()).prop_map(move |(i, c, m, md)| {
            let reg = regs.get(i).copied().unwrap_or(Reg(0));
            if md {
                Term::Mod {
                    coeff: c,
                    reg,
                    offset: c.rem_euclid(7) - 3,
                    modulus: m,
                }
            } else {
                Term::Lin { coeff: c, reg }
            }
        });
    (
        proptest::collection::vec(term, 0..if n == 0 { 1 } else { 3 }),
        -64i64..4096,
    )
        .prop_map(move |(terms, constant)| Expr {
            terms: if n == 0 { Vec::new() } else { terms },
            constant,
        })
}

fn ap(regs: Vec<Reg>) -> impl Strategy<Value = Ap> {
    (
        any::<bool>(),
        any::<bool>(),
        expr(regs.clone()),
        prop_oneof![Just(1u32), Just(8), Just(8), Just(128)],
        expr(regs),
        prop_oneof![
            Just(vec![]),
            Just(vec![(8u64, 1i64)]),
            Just(vec![(2, 4), (4, 1)]),
            Just(vec![(8, -1)]),
            proptest::collection::vec((1u64..9, -2i64..10), 0..3),
        ],
    )
        .prop_map(|(psum, bf, p0, np, start, dims)| Ap {
            mem: if psum { Mem::Psum } else { Mem::Sbuf },
            dtype: if bf { DType::Bf16 } else { DType::F32 },
            p0: Expr {
                terms: p0.terms,
                constant: if p0.constant % 2 == 0 {
                    0
                } else {
                    p0.constant.rem_euclid(130)
                },
            },
            np,
            start,
            dims: dims
                .into_iter()
                .map(|(size, stride)| Dim { size, stride })
                .collect(),
        })
}

fn op(regs: Vec<Reg>, sems: usize) -> impl Strategy<Value = Op> {
    let a = || ap(regs.clone());
    let f = prop_oneof![
        Just(0.0f32),
        Just(-1.5),
        Just(f32::INFINITY),
        any::<f32>().prop_filter("no NaN", |x| !x.is_nan())
    ];
    prop_oneof![
        (a(), a(), a(), any::<bool>()).prop_map(|(dst, a, b, acc)| Op::Matmul { dst, a, b, acc }),
        (a(), a()).prop_map(|(dst, src)| Op::Transpose { dst, src }),
        (0..11usize, a(), a(), f.clone(), proptest::option::of(a())).prop_map(
            |(fi, dst, src, s, bias)| Op::Activation {
                func: ActFunc::ALL[fi],
                dst,
                src,
                scale: Scale::Imm(s),
                bias,
            }
        ),
        (0..6usize, a(), a(), a()).prop_map(|(o, dst, a, b)| Op::TensorTensor {
            op: AluOp::ALL[o],
            dst,
            a,
            b
        }),
        (0..6usize, a(), a(), f.clone(), any::<bool>()).prop_map(|(o, dst, src, imm, reverse)| {
            Op::TensorScalar {
                op: AluOp::ALL[o],
                dst,
                src,
                imm,
                reverse,
            }
        }),
        (0..3usize, a(), a()).prop_map(|(o, dst, src)| Op::Reduce {
            op: ReduceOp::ALL[o],
            dst,
            src
        }),
        (a(), a()).prop_map(|(dst, src)| Op::Copy { dst, src }),
        (0..6usize, 0..6usize, a(), a(), a(), a()).prop_map(|(o0, o1, dst, a, b, init)| {
            Op::TensorTensorScan {
                op0: AluOp::ALL[o0],
                op1: AluOp::ALL[o1],
                dst,
                a,
                b,
                init,
            }
        }),
        (a(), a()).prop_map(|(dst, src)| Op::BnStats { dst, src }),
        (a(), a()).prop_map(|(dst, src)| Op::BnAggr { dst, src }),
        (a(), a()).prop_map(|(dst, src)| Op::VectorTranspose { dst, src }),
        (a(), a()).prop_map(|(dst, src)| Op::Max8 { dst, src }),
        (a(), a(), a()).prop_map(|(dst, src, vals)| Op::FindIndex8 { dst, src, vals }),
        (a(), a(), a(), f.clone()).prop_map(|(dst, src, vals, imm)| Op::MatchReplace8 {
            dst,
            src,
            vals,
            imm
        }),
        (a(), a(), 0usize..32, 0u8..32).prop_map(|(dst, src, k, m)| {
            let mut mask = [0u8; 32];
            mask[k] = m;
            Op::Shuffle { dst, src, mask }
        }),
        (a(), a(), a(), 1u32..17, 1u32..5).prop_map(|(dst, src, index, group, elems)| {
            Op::LocalGather {
                dst,
                src,
                index,
                group,
                elems,
            }
        }),
        (a(), a()).prop_map(|(dst, src)| Op::SequenceBounds { dst, src }),
        (a(), f.clone()).prop_map(|(dst, value)| Op::Memset { dst, value }),
        (a(), 0u32..9).prop_map(|(dst, stream)| Op::Rand { dst, stream }),
        (a(), a(), a(), 0u32..9).prop_map(|(dst, src, prob, stream)| Op::Dropout {
            dst,
            src,
            prob,
            stream
        }),
        (a(), f.clone(), f.clone(), f).prop_map(|(dst, base, pstep, fstep)| Op::Iota {
            dst,
            base,
            pstep,
            fstep
        }),
        (
            0u8..16,
            a(),
            expr(regs.clone()),
            proptest::collection::vec((1u64..9, 0i64..40), 1..3),
            any::<bool>()
        )
            .prop_map(|(queue, tile, start, dims, load)| {
                let hbm = DmaSide::Hbm(HbmAp {
                    tensor: 0,
                    start,
                    dims: dims
                        .into_iter()
                        .map(|(size, stride)| Dim { size, stride })
                        .collect(),
                });
                let tile = DmaSide::Tile(tile);
                if load {
                    Op::Dma {
                        queue,
                        dst: tile,
                        src: hbm,
                        index: None,
                        mode: Default::default(),
                    }
                } else {
                    Op::Dma {
                        queue,
                        dst: hbm,
                        src: tile,
                        index: None,
                        mode: Default::default(),
                    }
                }
            }),
        (0..sems).prop_map(|sem| Op::Signal { sem }),
        (0..sems, expr(regs)).prop_map(|(sem, value)| Op::Wait { sem, value }),
    ]
}

fn inst(regs: Vec<Reg>, sems: usize) -> impl Strategy<Value = Inst> {
    (
        op(regs.clone(), sems),
        proptest::collection::vec((expr(regs.clone()), expr(regs)), 0..2),
        proptest::option::of(0..sems),
        proptest::option::of(0u32..50),
    )
        .prop_map(|(op, pred, signal, stage)| {
            let mut i = Inst::new(op);
            i.pred = pred
                .into_iter()
                .map(|(lhs, rhs)| Cmp {
                    lhs,
                    op: CmpOp::Lt,
                    rhs,
                })
                .collect();
            i.signal = signal;
            i.meta.stage = stage;
            i
        })
}

/// The instructions of a stream, each moved to a legal engine when it can be (most of them), so
/// that most programs pass validation and run.
#[allow(clippy::match_like_matches_macro)] // one arm per engine reads best
fn legalise(e: Engine, stmts: &mut [Stmt]) {
    for s in stmts {
        match s {
            Stmt::Loop(l) => legalise(e, &mut l.body),
            Stmt::Inst(i) => {
                let ok = match (&i.op, e) {
                    (Op::Signal { .. } | Op::Wait { .. }, _) => true,
                    (Op::Matmul { .. } | Op::Transpose { .. }, Engine::Pe) => true,
                    (Op::Activation { .. } | Op::Copy { .. }, Engine::Act) => true,
                    (Op::Dma { .. }, Engine::Sp) => true,
                    (
                        Op::Iota { .. }
                        | Op::Copy { .. }
                        | Op::Memset { .. }
                        | Op::TensorTensor { .. }
                        | Op::TensorScalar { .. }
                        | Op::LocalGather { .. }
                        | Op::SequenceBounds { .. },
                        Engine::Pool,
                    ) => true,
                    (
                        Op::Copy { .. }
                        | Op::Memset { .. }
                        | Op::TensorTensor { .. }
                        | Op::TensorScalar { .. }
                        | Op::Reduce { .. }
                        | Op::TensorTensorScan { .. }
                        | Op::BnStats { .. }
                        | Op::BnAggr { .. }
                        | Op::VectorTranspose { .. }
                        | Op::Max8 { .. }
                        | Op::FindIndex8 { .. }
                        | Op::MatchReplace8 { .. }
                        | Op::Rand { .. }
                        | Op::Dropout { .. }
                        | Op::Shuffle { .. },
                        Engine::Dve,
                    ) => true,
                    _ => false,
                };
                if !ok {
                    i.op = Op::Signal { sem: 0 };
                }
            }
        }
    }
}

fn stream(sems: usize) -> impl Strategy<Value = Vec<Stmt>> {
    let inner =
        proptest::collection::vec(inst(vec![Reg(0), Reg(1)], sems).prop_map(Stmt::Inst), 0..3);
    let body = (0u64..4, inner).prop_map(|(trip, body)| {
        Stmt::Loop(Loop {
            reg: Reg(1),
            trip,
            body,
        })
    });
    let outer_body = proptest::collection::vec(
        prop_oneof![inst(vec![Reg(0)], sems).prop_map(Stmt::Inst), body],
        0..3,
    );
    let lp = (0u64..5, outer_body).prop_map(|(trip, body)| {
        Stmt::Loop(Loop {
            reg: Reg(0),
            trip,
            body,
        })
    });
    proptest::collection::vec(
        prop_oneof![inst(vec![], sems).prop_map(Stmt::Inst), lp],
        0..4,
    )
}

fn program() -> impl Strategy<Value = Program> {
    (
        proptest::collection::vec(stream(2), 5),
        1u64..40,
        1u64..40,
        any::<bool>(),
    )
        .prop_map(|(streams, r, c, bf)| {
            let mut p = Program {
                tensors: vec![
                    TensorDecl {
                        name: "x".into(),
                        dtype: if bf { DType::Bf16 } else { DType::F32 },
                        shape: vec![r, c],
                        role: Role::Input,
                        values: Vec::new(),
                    },
                    TensorDecl {
                        name: "y".into(),
                        dtype: DType::F32,
                        shape: vec![r, c],
                        role: Role::Output,
                        values: Vec::new(),
                    },
                ],
                semaphores: vec!["s0".into(), "s1".into()],
                ..Program::default()
            };
            for (i, mut s) in streams.into_iter().enumerate() {
                legalise(Engine::ALL[i], &mut s);
                p.streams[i] = s;
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_round_trip_and_never_panic(p in program()) {
        let printed = text::print(&p);
        let q = text::parse(&printed).map_err(|e| TestCaseError::fail(format!("{e}\n{printed}")))?;
        prop_assert_eq!(&q, &p);
        prop_assert!(p.streams.iter().all(|s| s.len() < 1000));
        try_run(&q);
    }

    #[test]
    fn mutated_programs_never_panic(
        which in 0usize..3,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, prop::sample::select(
            vec!['0', '9', '-', ',', ';', ':', '[', ']', '{', '}', '(', ')', '@', '>', '=', '.', ' ', '\n', 'r', 'q', '"', '#', 'e']
        )), 1..6),
    ) {
        let name = ["add.s", "loop.s", "queues.s"][which];
        let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
        let mut chars: Vec<char> = std::fs::read_to_string(path).unwrap().chars().collect();
        for (at, kind, c) in edits {
            let i = at.index(chars.len().max(1)).min(chars.len());
            match kind {
                0 if i < chars.len() => { chars.remove(i); }
                1 => chars.insert(i, c),
                2 if i < chars.len() => chars[i] = c,
                _ => {
                    // Swap two lines' worth: duplicate the character run up to the next newline.
                    let end = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |k| i + k);
                    let run: Vec<char> = chars[i..end].to_vec();
                    chars.splice(i..i, run);
                }
            }
        }
        let src: String = chars.into_iter().collect();
        if let Ok(p) = text::parse(&src) {
            try_run(&p);
        }
    }
}

/// The generator is not vacuous: a good share of its programs validate and run to the end.
#[test]
fn random_programs_often_run() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut ran, mut insts) = (0, 0u64);
    for _ in 0..300 {
        let p = program().new_tree(&mut runner).unwrap().current();
        if let Ok(r) = sim::simulate(&p, &sim::random_inputs(&p, 0), &Options::default()) {
            ran += 1;
            insts += r.stats.instructions();
        }
    }
    assert!(
        ran >= 30 && insts > 100,
        "only {ran} of 300 random programs ran ({insts} instructions)"
    );
}
