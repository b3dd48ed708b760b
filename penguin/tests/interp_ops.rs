//! The interpreter's operations, each against an expectation computed independently: naive loops
//! here in the test, f64 references, or hand-computed values.

mod common;

use common::*;
use penguin::interp::{interpret, Array};
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

/// `out = op(a, b)` with either side possibly a `[P, 1]` column.
fn tensor_tensor_kernel(op: AluOp, p: u64, f: u64, a_cols: u64, b_cols: u64) -> Function {
    let mut b = Builder::new("tt");
    let a = b.input("a", p, a_cols);
    let bb = b.input("b", p, b_cols);
    let out = b.output("out", p, f);
    let ta = b.sbuf("ta", p, a_cols);
    let tb = b.sbuf("tb", p, b_cols);
    let tc = b.sbuf("tc", p, f);
    b.inst(Op::Load, b.whole(ta), vec![b.whole(a)]);
    b.inst(Op::Load, b.whole(tb), vec![b.whole(bb)]);
    b.inst(
        Op::TensorTensor { op },
        b.whole(tc),
        vec![b.whole(ta), b.whole(tb)],
    );
    b.inst(Op::Store, b.whole(out), vec![b.whole(tc)]);
    b.f
}

fn reference_alu(op: AluOp, x: f32, y: f32) -> f32 {
    match op {
        AluOp::Add => x + y,
        AluOp::Subtract => x - y,
        AluOp::Multiply => x * y,
        AluOp::Divide => x / y,
        AluOp::Maximum => {
            if x >= y {
                x
            } else {
                y
            }
        }
        AluOp::Minimum => {
            if x <= y {
                x
            } else {
                y
            }
        }
        // Rounded from f64: `alu_agrees` allows one unit in the last place for it.
        AluOp::Power => f64::from(x).powf(f64::from(y)) as f32,
        AluOp::Less => f32::from(u8::from(x < y)),
        AluOp::Greater => f32::from(u8::from(x > y)),
        AluOp::LessEqual => f32::from(u8::from(x <= y)),
        AluOp::GreaterEqual => f32::from(u8::from(x >= y)),
        AluOp::Equal => f32::from(u8::from(x == y)),
        AluOp::NotEqual => f32::from(u8::from(x != y)),
        AluOp::LogicalAnd => f32::from(u8::from(x != 0.0 && y != 0.0)),
        AluOp::LogicalOr => f32::from(u8::from(x != 0.0 || y != 0.0)),
        AluOp::LogicalXor => f32::from(u8::from((x != 0.0) ^ (y != 0.0))),
        AluOp::BitwiseAnd => ((x.trunc() as i64 & y.trunc() as i64) as i32) as f32,
        AluOp::BitwiseOr => ((x.trunc() as i64 | y.trunc() as i64) as i32) as f32,
        AluOp::BitwiseXor => ((x.trunc() as i64 ^ y.trunc() as i64) as i32) as f32,
        AluOp::PassIf => {
            if y == 0.0 {
                -0.0
            } else {
                x
            }
        }
        AluOp::PassUnless => {
            if y != 0.0 {
                -0.0
            } else {
                x
            }
        }
        // The f64 remainders of float32 operands are exact (and so is adding the divisor back
        // to a remainder of the other sign): rounding to f32 changes nothing.
        AluOp::Fmod => (f64::from(x) % f64::from(y)) as f32,
        AluOp::Mod => {
            let (x, y) = (f64::from(x), f64::from(y));
            let r = x.rem_euclid(y);
            (if y < 0.0 && r != 0.0 { r + y } else { r }) as f32
        }
    }
}

/// Bit equality, but for `power`, whose f64 reference may differ from libm's `powf` by one unit
/// in the last place.
fn alu_agrees(op: AluOp, got: f32, want: f32) -> bool {
    if op == AluOp::Power && got.is_finite() && want.is_finite() {
        return got.to_bits().abs_diff(want.to_bits()) <= 1;
    }
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

#[test]
fn every_alu_op_with_and_without_broadcast() {
    let (p, f) = (4usize, 8usize);
    for op in AluOp::ALL {
        for (a_cols, b_cols) in [(f, f), (1, f), (f, 1)] {
            let func = tensor_tensor_kernel(op, p as u64, f as u64, a_cols as u64, b_cols as u64);
            let a = data(p, a_cols, 1);
            let bv = data(p, b_cols, 2);
            let out = &run(&func, &[a.clone(), bv.clone()])[0];
            assert_eq!(out.shape, vec![p, f]);
            for r in 0..p {
                for c in 0..f {
                    let x = a.at(r, if a_cols == 1 { 0 } else { c });
                    let y = bv.at(r, if b_cols == 1 { 0 } else { c });
                    assert!(
                        alu_agrees(op, out.at(r, c), reference_alu(op, x, y)),
                        "{op:?} a_cols={a_cols} b_cols={b_cols} at ({r}, {c})"
                    );
                }
            }
        }
    }
}

#[test]
fn tensor_scalar_in_both_directions() {
    let (p, f) = (3usize, 5usize);
    for op in AluOp::ALL {
        for reverse in [false, true] {
            let imm = 0.375f32;
            let mut b = Builder::new("ts");
            let a = b.input("a", p as u64, f as u64);
            let out = b.output("out", p as u64, f as u64);
            let t = b.sbuf("t", p as u64, f as u64);
            let u = b.sbuf("u", p as u64, f as u64);
            b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
            b.inst(
                Op::TensorScalar { op, imm, reverse },
                b.whole(u),
                vec![b.whole(t)],
            );
            b.inst(Op::Store, b.whole(out), vec![b.whole(u)]);
            let x = data(p, f, 3);
            let got = &run(&b.f, std::slice::from_ref(&x))[0];
            for (i, (&g, &v)) in got.data.iter().zip(&x.data).enumerate() {
                let want = if reverse {
                    reference_alu(op, imm, v)
                } else {
                    reference_alu(op, v, imm)
                };
                assert!(alu_agrees(op, g, want), "{op:?} reverse={reverse} #{i}");
            }
        }
    }
    // Hand-checked: 1 - 0.25 and 0.25 - 1; 1 / 0.25 and 0.25 / 1.
    let mut b = Builder::new("ts2");
    let a = b.input("a", 1, 1);
    let out = b.output("out", 1, 4);
    let t = b.sbuf("t", 1, 1);
    let u = b.sbuf("u", 1, 4);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    let cases = [
        (AluOp::Subtract, false),
        (AluOp::Subtract, true),
        (AluOp::Divide, false),
        (AluOp::Divide, true),
    ];
    for (col, (op, reverse)) in cases.into_iter().enumerate() {
        b.inst(
            Op::TensorScalar {
                op,
                imm: 0.25,
                reverse,
            },
            tile(u, k(0), k(col as i64), 1, 1),
            vec![b.whole(t)],
        );
    }
    b.inst(Op::Store, b.whole(out), vec![b.whole(u)]);
    let got = &run(&b.f, &[Array::new(vec![1, 1], vec![1.0])])[0];
    assert_eq!(got.data, vec![0.75, -0.75, 4.0, 0.25]);
}

fn act_reference_f64(func: ActFunc, x: f64) -> f64 {
    match func {
        ActFunc::Identity => x,
        ActFunc::Exp => x.exp(),
        ActFunc::Log => x.ln(),
        ActFunc::Tanh => x.tanh(),
        ActFunc::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        ActFunc::Relu => x.max(0.0),
        ActFunc::Gelu => {
            0.5 * x
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
        }
        ActFunc::Sqrt => x.sqrt(),
        ActFunc::Rsqrt => 1.0 / x.sqrt(),
        ActFunc::Square => x * x,
        ActFunc::Reciprocal => 1.0 / x,
        ActFunc::Negative => -x,
        ActFunc::Abs => x.abs(),
        ActFunc::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        }
        ActFunc::Ceil => x.ceil(),
        ActFunc::Floor => x.floor(),
        ActFunc::Trunc => x.trunc(),
        ActFunc::Sin => x.sin(),
        ActFunc::Cos => x.cos(),
        ActFunc::Tan => x.tan(),
        ActFunc::Arctan => x.atan(),
        ActFunc::Erf => erf_f64(x),
        ActFunc::ErfDx => 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp(),
        ActFunc::Silu => x / (1.0 + (-x).exp()),
        ActFunc::SiluDx => {
            let s = 1.0 / (1.0 + (-x).exp());
            s * (1.0 + x * (1.0 - s))
        }
        ActFunc::Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        ActFunc::Mish => x * (x.max(0.0) + (-x.abs()).exp().ln_1p()).tanh(),
        ActFunc::GeluApprxTanh => act_reference_f64(ActFunc::Gelu, x),
        ActFunc::Exp2 => x.exp2(),
        ActFunc::LogicalNot => {
            if x == 0.0 {
                1.0
            } else {
                0.0
            }
        }
    }
}

/// `erf` in f64: its Taylor series below 3, its asymptotic series above.
fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let v = if a < 3.0 {
        let (mut term, mut sum) = (a, a);
        for n in 1..80 {
            term *= -a * a / f64::from(n);
            sum += term / f64::from(2 * n + 1);
        }
        2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        let t = 1.0 / (2.0 * a * a);
        let series = 1.0 - t + 3.0 * t * t - 15.0 * t * t * t;
        1.0 - (-a * a).exp() / (a * std::f64::consts::PI.sqrt()) * series
    };
    v.copysign(x)
}

/// `out = func(x * scale + bias)` with scale an immediate or a `[P, 1]` tile, bias optional.
fn activation_kernel(func: ActFunc, p: u64, f: u64, scale: Scale, bias: bool) -> Function {
    let mut b = Builder::new("act");
    let x = b.input("x", p, f);
    let s = b.input("s", p, 1);
    let bi = b.input("bias", p, 1);
    let out = b.output("out", p, f);
    let tx = b.sbuf("tx", p, f);
    let ts = b.sbuf("ts", p, 1);
    let tb = b.sbuf("tb", p, 1);
    let ty = b.sbuf("ty", p, f);
    b.inst(Op::Load, b.whole(tx), vec![b.whole(x)]);
    b.inst(Op::Load, b.whole(ts), vec![b.whole(s)]);
    b.inst(Op::Load, b.whole(tb), vec![b.whole(bi)]);
    let mut srcs = vec![b.whole(tx)];
    if scale == Scale::Tile {
        srcs.push(b.whole(ts));
    }
    if bias {
        srcs.push(b.whole(tb));
    }
    b.inst(Op::Activation { func, scale, bias }, b.whole(ty), srcs);
    b.inst(Op::Store, b.whole(out), vec![b.whole(ty)]);
    b.f
}

#[test]
fn every_activation_function() {
    let (p, f) = (4usize, 16usize);
    // Positive inputs keep log, sqrt and rsqrt in their domain: x in [0.25, 2.25), scale in
    // [0.5, 1.5), bias in [0.25, 0.75).
    let x = Array::new(
        vec![p, f],
        data(p, f, 7).data.iter().map(|v| v + 1.25).collect(),
    );
    let s = Array::new(
        vec![p, 1],
        data(p, 1, 8).data.iter().map(|v| v * 0.5 + 1.0).collect(),
    );
    let bias = Array::new(
        vec![p, 1],
        data(p, 1, 9).data.iter().map(|v| v * 0.25 + 0.5).collect(),
    );
    for func in ActFunc::ALL {
        // The functions added for the NKI API (from `negative` on) round several steps in f32
        // (silu_dx's `1 - s`, erf_dx's `x * x`): a looser bound than the first eleven's.
        let added = ActFunc::ALL.iter().position(|&g| g == func) >= Some(11);
        let tol = if added { 1e-5 } else { 4e-7 };
        for (scale, has_bias) in [
            (Scale::Imm(1.0), false),
            (Scale::Imm(0.75), true),
            (Scale::Tile, false),
            (Scale::Tile, true),
        ] {
            let kernel = activation_kernel(func, p as u64, f as u64, scale, has_bias);
            let got = &run(&kernel, &[x.clone(), s.clone(), bias.clone()])[0];
            for r in 0..p {
                let sc = match scale {
                    Scale::Imm(v) => v,
                    Scale::Tile => s.at(r, 0),
                };
                for c in 0..f {
                    let xv = x.at(r, c);
                    let pre = if has_bias {
                        xv * sc + bias.at(r, 0)
                    } else {
                        xv * sc
                    };
                    let g = got.at(r, c);
                    // Exactly the one definition of the function.
                    assert_eq!(
                        g.to_bits(),
                        func.apply(pre).to_bits(),
                        "{func:?} ({r}, {c})"
                    );
                    // And close to the mathematical function.
                    let want = act_reference_f64(func, pre as f64);
                    let err = (g as f64 - want).abs();
                    assert!(
                        err <= tol * want.abs().max(1e-3),
                        "{func:?}({pre}) = {g}, f64 reference {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn every_reduction() {
    let (p, f) = (5usize, 12usize);
    let x = data(p, f, 11);
    for op in ReduceOp::ALL {
        let mut b = Builder::new("red");
        let a = b.input("a", p as u64, f as u64);
        let out = b.output("out", p as u64, 1);
        let t = b.sbuf("t", p as u64, f as u64);
        let r = b.sbuf("r", p as u64, 1);
        b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
        b.inst(Op::Reduce { op }, b.whole(r), vec![b.whole(t)]);
        b.inst(Op::Store, b.whole(out), vec![b.whole(r)]);
        let got = &run(&b.f, std::slice::from_ref(&x))[0];
        assert_eq!(got.shape, vec![p, 1]);
        for row in 0..p {
            let vals: Vec<f32> = (0..f).map(|c| x.at(row, c)).collect();
            let want = match op {
                ReduceOp::Sum => {
                    let mut s = 0.0f32;
                    for v in &vals {
                        s += v;
                    }
                    s
                }
                ReduceOp::Max => vals.iter().copied().fold(f32::NEG_INFINITY, f32::max),
                ReduceOp::Min => vals.iter().copied().fold(f32::INFINITY, f32::min),
                ReduceOp::Prod => vals.iter().fold(1.0f32, |s, v| s * v),
                ReduceOp::All => f32::from(u8::from(vals.iter().all(|&v| v != 0.0))),
            };
            assert_eq!(got.at(row, 0).to_bits(), want.to_bits(), "{op:?} row {row}");
        }
    }
}

#[test]
fn reduce_sum_is_left_to_right_from_zero() {
    // 1e8 + 1 - 1e8 + 1 left to right in f32 is 1 (the first 1 is absorbed).
    let mut b = Builder::new("red");
    let a = b.input("a", 1, 4);
    let out = b.output("out", 1, 1);
    let t = b.sbuf("t", 1, 4);
    let r = b.sbuf("r", 1, 1);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(
        Op::Reduce { op: ReduceOp::Sum },
        b.whole(r),
        vec![b.whole(t)],
    );
    b.inst(Op::Store, b.whole(out), vec![b.whole(r)]);
    let x = Array::new(vec![1, 4], vec![1e8, 1.0, -1e8, 1.0]);
    assert_eq!(run(&b.f, &[x])[0].data, vec![1.0]);
}

#[test]
fn transpose_through_psum_and_copy_to_sbuf() {
    let (p, f) = (6usize, 4usize);
    let mut b = Builder::new("tr");
    let a = b.input("a", p as u64, f as u64);
    let out = b.output("out", f as u64, p as u64);
    let t = b.sbuf("t", p as u64, f as u64);
    let ps = b.psum("ps", f as u64, p as u64);
    let u = b.sbuf("u", f as u64, p as u64);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(Op::Transpose, b.whole(ps), vec![b.whole(t)]);
    b.inst(Op::Copy, b.whole(u), vec![b.whole(ps)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(u)]);
    let x = data(p, f, 5);
    let got = &run(&b.f, std::slice::from_ref(&x))[0];
    assert_eq!(got.shape, vec![f, p]);
    for r in 0..f {
        for c in 0..p {
            assert_eq!(got.at(r, c), x.at(c, r));
        }
    }
}

/// The naive reference of [`matmul_ir`]: per output element, each k tile summed in increasing k
/// from 0.0, the tile sums added to the accumulator (starting from `init`) in increasing tile order.
fn matmul_reference(s: &MatmulShape, at: &Array, bm: &Array) -> Array {
    let (mm, nn) = ((s.mt * s.tm) as usize, (s.nt * s.tn) as usize);
    Array::from_fn(mm, nn, |i, j| {
        let mut acc = 0.0f32;
        for kt in 0..s.kt as usize {
            let mut part = 0.0f32;
            for kk in 0..s.tk as usize {
                let kr = kt * s.tk as usize + kk;
                part += at.at(kr, i) * bm.at(kr, j);
            }
            acc += part;
        }
        acc
    })
}

#[test]
fn tiled_matmul_accumulates_over_k_from_a_memset() {
    let s = MatmulShape {
        mt: 2,
        nt: 2,
        kt: 3,
        tm: 8,
        tn: 16,
        tk: 12,
    };
    let func = matmul_ir(&s);
    let kk = (s.kt * s.tk) as usize;
    let at = data(kk, (s.mt * s.tm) as usize, 21);
    let bm = data(kk, (s.nt * s.tn) as usize, 22);
    verify_function(&func).expect("the matmul IR verifies");
    let res = interpret(&func, &[at.clone(), bm.clone()]).unwrap();
    let want = matmul_reference(&s, &at, &bm);
    assert_eq!(res.outputs[0], want);
    // And close to the f64 product (a sanity check on the reference itself).
    for i in 0..want.shape[0] {
        for j in 0..want.shape[1] {
            let exact: f64 = (0..kk)
                .map(|r| at.at(r, i) as f64 * bm.at(r, j) as f64)
                .sum();
            assert!((want.at(i, j) as f64 - exact).abs() < 1e-5);
        }
    }
    // Statistics: every instruction counted, per op and per engine.
    let st = &res.stats;
    let tiles = s.mt * s.nt;
    let inner = tiles * s.kt;
    assert_eq!(st.by_op["load"].insts, 2 * inner);
    assert_eq!(st.by_op["matmul"].insts, inner);
    assert_eq!(st.by_op["memset"].insts, tiles);
    assert_eq!(st.by_op["copy"].insts, tiles);
    assert_eq!(st.by_op["store"].insts, tiles);
    assert_eq!(st.total.insts, 3 * inner + 3 * tiles);
    assert_eq!(st.by_engine["dma"].insts, 2 * inner + tiles);
    assert_eq!(st.by_engine["pe"].insts, inner);
    assert_eq!(st.by_engine["dve"].insts, tiles);
    assert_eq!(st.by_engine["any"].insts, tiles);
    assert_eq!(
        st.matmul_macs,
        (s.mt * s.tm) * (s.nt * s.tn) * (s.kt * s.tk)
    );
    assert_eq!(st.by_op["matmul"].elements, inner * s.tm * s.tn);
    assert_eq!(
        st.by_op["load"].elements,
        inner * (s.tk * s.tm + s.tk * s.tn)
    );
}

#[test]
fn matmul_overwrite_then_accumulate_under_guards() {
    // The memset folded into the first matmul: k == 0 overwrites, k >= 1 accumulates.
    let (kt, tk, m, n) = (4i64, 8u64, 4u64, 6u64);
    let mut b = Builder::new("mm");
    let at = b.input("at", kt as u64 * tk, m);
    let bm = b.input("b", kt as u64 * tk, n);
    let out = b.output("c", m, n);
    let acc = b.psum("acc", m, n);
    let lhs = b.sbuf("lhs", tk, m);
    let rhs = b.sbuf("rhs", tk, n);
    let res = b.sbuf("res", m, n);
    let (_, kx) = b.begin_loop("k", 0, kt);
    b.inst(
        Op::Load,
        b.whole(lhs),
        vec![tile(at, lin(kx, tk as i64, 0), k(0), tk, m)],
    );
    b.inst(
        Op::Load,
        b.whole(rhs),
        vec![tile(bm, lin(kx, tk as i64, 0), k(0), tk, n)],
    );
    let first = b.inst(
        Op::Matmul { accumulate: false },
        b.whole(acc),
        vec![b.whole(lhs), b.whole(rhs)],
    );
    b.guard(first, lin(kx, 1, 0), penguin::CmpOp::Eq, 0);
    let rest = b.inst(
        Op::Matmul { accumulate: true },
        b.whole(acc),
        vec![b.whole(lhs), b.whole(rhs)],
    );
    b.guard(rest, lin(kx, 1, 0), penguin::CmpOp::Ge, 1);
    b.end_loop();
    b.inst(Op::Copy, b.whole(res), vec![b.whole(acc)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(res)]);
    let a = data(kt as usize * tk as usize, m as usize, 31);
    let bv = data(kt as usize * tk as usize, n as usize, 32);
    verify_function(&b.f).expect("the kernel verifies");
    let r = interpret(&b.f, &[a.clone(), bv.clone()]).unwrap();
    let want = Array::from_fn(m as usize, n as usize, |i, j| {
        let mut acc = 0.0f32;
        for t in 0..kt as usize {
            let mut part = 0.0f32;
            for kk in 0..tk as usize {
                part += a.at(t * tk as usize + kk, i) * bv.at(t * tk as usize + kk, j);
            }
            acc = if t == 0 { part } else { acc + part };
        }
        acc
    });
    assert_eq!(r.outputs[0], want);
    assert_eq!(r.stats.by_op["matmul"].insts, kt as u64);
    assert_eq!(r.stats.stmts_skipped, kt as u64);
}

#[test]
fn copy_psum_tile_to_part_of_an_sbuf_buffer() {
    // A [2, 3] PSUM tile written by a matmul, copied into columns 3..6 of an SBUF buffer whose
    // columns 0..3 come from a memset: hand-computed values.
    let mut b = Builder::new("cp");
    let x = b.input("x", 1, 2);
    let y = b.input("y", 1, 3);
    let out = b.output("out", 2, 6);
    let tx = b.sbuf("tx", 1, 2);
    let ty = b.sbuf("ty", 1, 3);
    let ps = b.psum("ps", 2, 3);
    let buf = b.sbuf("buf", 2, 6);
    b.inst(Op::Load, b.whole(tx), vec![b.whole(x)]);
    b.inst(Op::Load, b.whole(ty), vec![b.whole(y)]);
    b.inst(
        Op::Matmul { accumulate: false },
        b.whole(ps),
        vec![b.whole(tx), b.whole(ty)],
    );
    b.inst(
        Op::Memset { value: -1.5 },
        tile(buf, k(0), k(0), 2, 3),
        vec![],
    );
    b.inst(Op::Copy, tile(buf, k(0), k(3), 2, 3), vec![b.whole(ps)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(buf)]);
    let got = &run(
        &b.f,
        &[
            Array::new(vec![1, 2], vec![2.0, -3.0]),
            Array::new(vec![1, 3], vec![1.0, 0.5, 4.0]),
        ],
    )[0];
    // Outer product xᵀ·y: [[2, 1, 8], [-3, -1.5, -12]].
    assert_eq!(
        got.data,
        vec![-1.5, -1.5, -1.5, 2.0, 1.0, 8.0, -1.5, -1.5, -1.5, -3.0, -1.5, -12.0]
    );
}
