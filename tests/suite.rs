//! The sample suite against naive references: every variant (un-annotated, Mode A, Mode B) of each
//! sample kernel runs on the reference interpreter — after the annotated pipeliner, so the
//! pipelined IR is judged too — and its outputs are compared with a naive f64 computation written
//! here, within a tolerance. (That the simulator reproduces the interpreter's bits on every path is
//! `tests/backend.rs`'s business.)

use nkc::driver::{self, Source};
use nkc::pipeline::PipelineMode;
use penguin::interp::{self, Array};
use penguin::pipeline::PipelineLog;
use std::path::Path;

/// Runs `examples/NAME.nk` on the interpreter (annotated path) with seeded random inputs.
fn run(name: &str, seed: u64) -> (Vec<Array>, Vec<Array>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{name}.nk"));
    let src = Source::read(&path).unwrap();
    let mut func = driver::compile(&src, None).unwrap_or_else(|f| panic!("{name}: {f:?}"));
    nkc::pipeline::pipeline_path(
        &mut func,
        PipelineMode::Annotated,
        &mut PipelineLog::default(),
    )
    .unwrap_or_else(|f| panic!("{name}: {f:?}"));
    let inputs = interp::random_inputs(&func, seed);
    let out = interp::interpret(&func, &inputs)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .outputs;
    (inputs, out)
}

fn at(a: &Array, r: usize, c: usize) -> f64 {
    f64::from(a.data[r * a.shape[1] + c])
}

/// Every element within `abs + rel * |want|`.
fn assert_close(name: &str, got: &Array, want: &[f64], shape: [usize; 2], abs: f64, rel: f64) {
    assert_eq!(got.shape, shape, "{name}: shape");
    let mut worst = 0f64;
    for (i, (&g, &w)) in got.data.iter().zip(want).enumerate() {
        let err = (f64::from(g) - w).abs();
        assert!(
            err <= abs + rel * w.abs(),
            "{name}: element [{}, {}] is {g}, want {w}",
            i / shape[1],
            i % shape[1]
        );
        worst = worst.max(err);
    }
    println!("{name}: max abs error {worst:.3e}");
}

const VARIANTS: [&str; 3] = ["", "_stages", "_mode_b"];

#[test]
fn rmsnorm_matches_a_naive_rmsnorm() {
    for v in VARIANTS {
        let name = format!("rmsnorm{v}");
        let (inp, out) = run(&name, 11);
        let (x, g) = (&inp[0], &inp[1]);
        let mut want = vec![0f64; 1024 * 512];
        for r in 0..1024 {
            let ms = (0..512).map(|c| at(x, r, c).powi(2)).sum::<f64>() / 512.0;
            let inv = 1.0 / (ms + 1e-6).sqrt();
            for c in 0..512 {
                want[r * 512 + c] = at(x, r, c) * inv * at(g, r % 128, c);
            }
        }
        assert_close(&name, &out[0], &want, [1024, 512], 1e-5, 1e-4);
    }
}

#[test]
fn layernorm_matches_a_naive_layernorm() {
    for v in VARIANTS {
        let name = format!("layernorm{v}");
        let (inp, out) = run(&name, 12);
        let (x, gamma, beta) = (&inp[0], &inp[1], &inp[2]);
        let mut want = vec![0f64; 1024 * 512];
        for r in 0..1024 {
            let mean = (0..512).map(|c| at(x, r, c)).sum::<f64>() / 512.0;
            let var = (0..512).map(|c| (at(x, r, c) - mean).powi(2)).sum::<f64>() / 512.0;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for c in 0..512 {
                want[r * 512 + c] =
                    (at(x, r, c) - mean) * inv * at(gamma, r % 128, c) + at(beta, r % 128, c);
            }
        }
        assert_close(&name, &out[0], &want, [1024, 512], 1e-5, 1e-4);
    }
}

#[test]
fn transpose_matches_the_transpose() {
    for v in VARIANTS {
        let name = format!("transpose{v}");
        let (inp, out) = run(&name, 13);
        let x = &inp[0];
        let mut want = vec![0f64; 512 * 512];
        for r in 0..512 {
            for c in 0..512 {
                want[c * 512 + r] = at(x, r, c);
            }
        }
        // A transpose moves values: exactly.
        assert_close(&name, &out[0], &want, [512, 512], 0.0, 0.0);
    }
}

#[test]
fn every_matmul_matches_a_naive_product() {
    for name in [
        "matmul_plain",
        "matmul_mode_b",
        "matmul_blocked",
        "matmul_blocked_stages",
    ] {
        let (inp, out) = run(name, 14);
        let (a_t, b) = (&inp[0], &inp[1]);
        let mut want = vec![0f64; 512 * 1024];
        for m in 0..512 {
            for k in 0..512 {
                let a = at(a_t, k, m);
                let row = &b.data[k * 1024..(k + 1) * 1024];
                for (n, &bv) in row.iter().enumerate() {
                    want[m * 1024 + n] += a * f64::from(bv);
                }
            }
        }
        assert_close(name, &out[0], &want, [512, 1024], 1e-4, 1e-4);
    }
}

#[test]
fn attention_matches_a_naive_attention() {
    for v in ["", "_stages", "_mode_b", "_nested"] {
        let name = format!("attention{v}");
        let (inp, out) = run(&name, 15);
        let (qt, kt, vv) = (&inp[0], &inp[1], &inp[2]);
        let mut want = vec![0f64; 512 * 128];
        for q in 0..512 {
            let s: Vec<f64> = (0..512)
                .map(|k| (0..128).map(|d| at(qt, d, q) * at(kt, d, k)).sum())
                .collect();
            let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let l: f64 = p.iter().sum();
            for d in 0..128 {
                want[q * 128 + d] = (0..512).map(|k| p[k] * at(vv, k, d)).sum::<f64>() / l;
            }
        }
        assert_close(&name, &out[0], &want, [512, 128], 1e-5, 1e-4);
    }
}

/// `matmul_nested.nk`: C[128, 4096] = AT^T @ B, the inner `k` loop and the outer `n` loop each a
/// 2-stage pipeline.
#[test]
fn matmul_nested_matches_a_naive_product() {
    let name = "matmul_nested";
    let (inp, out) = run(name, 18);
    let (a_t, b) = (&inp[0], &inp[1]);
    assert_eq!(
        (a_t.shape.as_slice(), b.shape.as_slice()),
        (&[512, 128][..], &[512, 4096][..])
    );
    let mut want = vec![0f64; 128 * 4096];
    for m in 0..128 {
        for k in 0..512 {
            let a = at(a_t, k, m);
            let row = &b.data[k * 4096..(k + 1) * 4096];
            for (n, &bv) in row.iter().enumerate() {
                want[m * 4096 + n] += a * f64::from(bv);
            }
        }
    }
    assert_close(name, &out[0], &want, [128, 4096], 1e-4, 1e-4);
}

/// The examples whose outputs a test of this file checks against a naive reference.
const REFERENCED_HERE: [&str; 22] = [
    "rmsnorm",
    "rmsnorm_stages",
    "rmsnorm_mode_b",
    "layernorm",
    "layernorm_stages",
    "layernorm_mode_b",
    "transpose",
    "transpose_stages",
    "transpose_mode_b",
    "matmul_plain",
    "matmul_mode_b",
    "matmul_blocked",
    "matmul_blocked_stages",
    "matmul_nested",
    "attention",
    "attention_stages",
    "attention_mode_b",
    "attention_nested",
    "tensor_add_plain",
    "tensor_add_mode_b",
    "softmax_plain",
    "softmax_stages",
];

/// The examples `tests/cli.rs` runs through the binary against a reference computed there.
const REFERENCED_IN_CLI: [&str; 4] = ["tensor_add", "matmul", "softmax", "exp_stages"];

/// Every kernel of `examples/` has a numerical reference: a new example without one fails here.
#[test]
fn every_example_has_a_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut missing = Vec::new();
    for e in std::fs::read_dir(&dir).expect("examples/ is readable") {
        let p = e.expect("a readable directory entry").path();
        if p.extension().is_some_and(|x| x == "nk") {
            let stem = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            if !REFERENCED_HERE.contains(&stem.as_str())
                && !REFERENCED_IN_CLI.contains(&stem.as_str())
            {
                missing.push(stem);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "examples with no reference: {missing:?}"
    );
}

#[test]
fn tensor_add_variants_add_exactly() {
    for name in ["tensor_add_plain", "tensor_add_mode_b"] {
        let (inp, out) = run(name, 16);
        let want: Vec<f64> = inp[0]
            .data
            .iter()
            .zip(&inp[1].data)
            .map(|(&a, &b)| f64::from(a + b))
            .collect();
        assert_close(name, &out[0], &want, [2048, 512], 0.0, 0.0);
    }
}

#[test]
fn softmax_variants_match_a_naive_softmax() {
    for name in ["softmax_plain", "softmax_stages"] {
        let (inp, out) = run(name, 17);
        let x = &inp[0];
        let mut want = vec![0f64; 1024 * 512];
        for r in 0..1024 {
            let mx = (0..512)
                .map(|c| at(x, r, c))
                .fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = (0..512).map(|c| (at(x, r, c) - mx).exp()).collect();
            let sum: f64 = e.iter().sum();
            for c in 0..512 {
                want[r * 512 + c] = e[c] / sum;
            }
        }
        assert_close(name, &out[0], &want, [1024, 512], 1e-7, 1e-5);
    }
}
