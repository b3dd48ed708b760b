//! The interpreter on IR stated in the text form (`penguin::parse_function`): a pipelined loop
//! against its plain original, a softmax chaining several ops, and a matmul with a bf16 operand,
//! each against naive loops computed here.

mod common;

use common::data;
use penguin::interp::{interpret, round_bf16, Array};
use penguin::{parse_function, verify_function, Function};

fn parse(text: &str) -> Function {
    let f = parse_function(text).unwrap_or_else(|e| panic!("parse error: {e:?}"));
    if let Err(errors) = verify_function(&f) {
        panic!("{} does not verify: {errors:?}", f.name);
    }
    f
}

fn run(f: &Function, inputs: &[Array]) -> Vec<Array> {
    interpret(f, inputs)
        .unwrap_or_else(|e| panic!("interpretation failed: {e}"))
        .outputs
}

const TENSOR_ADD: &str = "
kernel tensor_add(a, b) -> (c) {
  tensor a: hbm f32[32, 8] input
  tensor b: hbm f32[32, 8] input
  tensor c: hbm f32[32, 8] output
  tensor ta: sbuf f32[8, 8] local
  tensor tb: sbuf f32[8, 8] local
  tensor tc: sbuf f32[8, 8] local
  loop i in 0..4 affine {
    stmt {
      ta[0 +: 8, 0 +: 8] = load.dma a[8*i +: 8, 0 +: 8]
    }
    stmt {
      tb[0 +: 8, 0 +: 8] = load.dma b[8*i +: 8, 0 +: 8]
    }
    stmt {
      tc[0 +: 8, 0 +: 8] = tensor_tensor.dve(op=add) ta[0 +: 8, 0 +: 8], tb[0 +: 8, 0 +: 8]
    }
    stmt {
      c[8*i +: 8, 0 +: 8] = store.dma tc[0 +: 8, 0 +: 8]
    }
  }
}
";

/// The same kernel after a 3-stage pipeliner: the loop extended to 4 + 3 - 1 = 6 iterations,
/// stage s guarded by `s <= i < 4 + s` and indexed by `i - s`, and every tile double-buffered.
const TENSOR_ADD_PIPELINED: &str = "
kernel tensor_add(a, b) -> (c) {
  tensor a: hbm f32[32, 8] input
  tensor b: hbm f32[32, 8] input
  tensor c: hbm f32[32, 8] output
  tensor ta: sbuf f32[8, 8] local block[i: 2]
  tensor tb: sbuf f32[8, 8] local block[i: 2]
  tensor tc: sbuf f32[8, 8] local block[i: 2]
  loop i in 0..6 affine num_stages=3 pipelined(stages=3, trip=4) {
    stmt stage=0 if i >= 0 && i < 4 {
      ta{i}[0 +: 8, 0 +: 8] = load.dma a[8*i +: 8, 0 +: 8]
    }
    stmt stage=0 if i >= 0 && i < 4 {
      tb{i}[0 +: 8, 0 +: 8] = load.dma b[8*i +: 8, 0 +: 8]
    }
    stmt stage=1 if i >= 1 && i < 5 {
      tc{i - 1}[0 +: 8, 0 +: 8] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 8, 0 +: 8], tb{i - 1}[0 +: 8, 0 +: 8]
    }
    stmt stage=2 if i >= 2 && i < 6 {
      c[8*i - 16 +: 8, 0 +: 8] = store.dma tc{i - 2}[0 +: 8, 0 +: 8]
    }
  }
}
";

#[test]
fn pipelined_tensor_add_matches_the_plain_loop() {
    let (a, b) = (data(32, 8, 1), data(32, 8, 2));
    let inputs = [a.clone(), b.clone()];
    let plain = run(&parse(TENSOR_ADD), &inputs);
    let want = Array::from_fn(32, 8, |r, c| a.at(r, c) + b.at(r, c));
    assert_eq!(plain[0], want);
    let piped = interpret(&parse(TENSOR_ADD_PIPELINED), &inputs).unwrap();
    assert_eq!(piped.outputs, plain);
    // 6 iterations of 4 statements, 4 of each run: 8 skipped.
    assert_eq!(piped.stats.total.insts, 16);
    assert_eq!(piped.stats.stmts_skipped, 8);
}

#[test]
fn a_stage_reading_the_slot_its_producer_overwrote_differs() {
    // Stage 1 reading ta{i} instead of ta{i - 1} sees the next iteration's tile, which the
    // interpreter must not hide.
    let wrong = TENSOR_ADD_PIPELINED.replace(
        "tensor_tensor.dve(op=add) ta{i - 1}",
        "tensor_tensor.dve(op=add) ta{i}",
    );
    let (a, b) = (data(32, 8, 1), data(32, 8, 2));
    let got = run(&parse(&wrong), &[a.clone(), b.clone()]);
    // Row r of tile t gets a[tile t + 1] + b[tile t] (for t < 3).
    assert_eq!(got[0].at(0, 0), a.at(8, 0) + b.at(0, 0));
}

const SOFTMAX: &str = "
kernel softmax(x) -> (y) {
  tensor x: hbm f32[16, 32] input
  tensor y: hbm f32[16, 32] output
  tensor t: sbuf f32[8, 32] local
  tensor mx: sbuf f32[8, 1] local
  tensor nmx: sbuf f32[8, 1] local
  tensor e: sbuf f32[8, 32] local
  tensor s: sbuf f32[8, 1] local
  tensor rs: sbuf f32[8, 1] local
  tensor r: sbuf f32[8, 32] local
  loop i in 0..2 affine {
    stmt {
      t[0 +: 8, 0 +: 32] = load.dma x[8*i +: 8, 0 +: 32]
    }
    stmt {
      mx[0 +: 8, 0 +: 1] = reduce.dve(op=max) t[0 +: 8, 0 +: 32]
      nmx[0 +: 8, 0 +: 1] = tensor_scalar.dve(op=multiply, imm=-1.0, reverse=false) mx[0 +: 8, 0 +: 1]
      e[0 +: 8, 0 +: 32] = activation.act(func=exp, scale=1.0, bias=true) t[0 +: 8, 0 +: 32], nmx[0 +: 8, 0 +: 1]
      s[0 +: 8, 0 +: 1] = reduce.dve(op=sum) e[0 +: 8, 0 +: 32]
      rs[0 +: 8, 0 +: 1] = activation.act(func=reciprocal, scale=1.0, bias=false) s[0 +: 8, 0 +: 1]
      r[0 +: 8, 0 +: 32] = tensor_tensor.dve(op=multiply) e[0 +: 8, 0 +: 32], rs[0 +: 8, 0 +: 1]
    }
    stmt {
      y[8*i +: 8, 0 +: 32] = store.dma r[0 +: 8, 0 +: 32]
    }
  }
}
";

#[test]
fn softmax_chains_reduce_activation_and_broadcast() {
    let x = data(16, 32, 5);
    let got = &run(&parse(SOFTMAX), std::slice::from_ref(&x))[0];
    for row in 0..16 {
        let vals: Vec<f32> = (0..32).map(|c| x.at(row, c)).collect();
        let mut mx = vals[0];
        for &v in &vals[1..] {
            mx = mx.max(v);
        }
        // `mx * -1.0`, which is exactly `-mx`.
        let nmx = -mx;
        let e: Vec<f32> = vals.iter().map(|&v| (v * 1.0 + nmx).exp()).collect();
        let mut s = 0.0f32;
        for &v in &e {
            s += v;
        }
        let rs = 1.0 / (s * 1.0);
        for (c, &ec) in e.iter().enumerate() {
            assert_eq!(
                got.at(row, c).to_bits(),
                (ec * rs).to_bits(),
                "({row}, {c})"
            );
        }
        let total: f32 = (0..32).map(|c| got.at(row, c)).sum();
        assert!((total - 1.0).abs() < 1e-5);
    }
}

const MATMUL_BF16: &str = "
kernel matmul(at, b) -> (c) {
  tensor at: hbm f32[32, 8] input
  tensor b: hbm f32[32, 16] input
  tensor c: hbm f32[8, 16] output
  tensor acc: psum f32[8, 16] local
  tensor lhs: sbuf f32[16, 8] local
  tensor rhs: sbuf bf16[16, 16] local
  tensor res: sbuf f32[8, 16] local
  stmt {
    acc[0 +: 8, 0 +: 16] = memset.dve(value=0.0)
  }
  loop k in 0..2 affine {
    stmt {
      lhs[0 +: 16, 0 +: 8] = load.dma at[16*k +: 16, 0 +: 8]
    }
    stmt {
      rhs[0 +: 16, 0 +: 16] = load.dma b[16*k +: 16, 0 +: 16]
    }
    stmt {
      acc[0 +: 8, 0 +: 16] = matmul.pe(accumulate=true) lhs[0 +: 16, 0 +: 8], rhs[0 +: 16, 0 +: 16]
    }
  }
  stmt {
    res[0 +: 8, 0 +: 16] = copy.any acc[0 +: 8, 0 +: 16]
  }
  stmt {
    c[0 +: 8, 0 +: 16] = store.dma res[0 +: 8, 0 +: 16]
  }
}
";

#[test]
fn matmul_with_a_bf16_operand_rounds_it_on_load_and_accumulates_in_f32() {
    let (at, b) = (data(32, 8, 7), data(32, 16, 8));
    let got = &run(&parse(MATMUL_BF16), &[at.clone(), b.clone()])[0];
    let want = Array::from_fn(8, 16, |m, n| {
        let mut acc = 0.0f32;
        for kt in 0..2 {
            let mut part = 0.0f32;
            for kk in 0..16 {
                let kr = kt * 16 + kk;
                part += at.at(kr, m) * round_bf16(b.at(kr, n));
            }
            acc += part;
        }
        acc
    });
    assert_eq!(got, &want);
    // Without the rounding the result differs (the data is not bf16-exact).
    let f32_text = MATMUL_BF16.replace("rhs: sbuf bf16", "rhs: sbuf f32");
    let unrounded = &run(&parse(&f32_text), &[at, b])[0];
    assert_ne!(unrounded, got);
}
