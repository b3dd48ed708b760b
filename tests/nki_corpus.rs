//! The NKI corpus: `tests/nki/*.nk` are kernels written the way the public NKI tutorials and
//! samples write them (`@nki.jit`, imports, docstrings, untyped parameters, `x.shape`, ...), each
//! nkc's own version of a kernel family. Every kernel runs as written: its inputs are made here,
//! written as `.npy` files and given with `--input` (so the kernel is specialised for their
//! shapes), it runs on the simulator with `--check` (the simulator's outputs equal the
//! interpreter's bit for bit), and its outputs are compared with a reference computed here in
//! plain f64 loops, independent of nkc, within a tolerance.
//!
//! `tests/nki/rejected/*.nk` are kernels of the same families that use what nkc does not have
//! (tiles of more than 2 dimensions, a launch grid): each states its diagnostics
//! (`# expect: CODE @ LINE`) and its input shapes (`# shape: NAME=ROWSxCOLS`); every diagnostic
//! must say what to write instead (a `help:`), and the rendered text is snapshotted.

mod common;

use nkc::driver::Source;
use nkc::run::{self, Engine, PipelineMode, RunOptions};
use penguin::interp::Array;
use penguin::pipeline::PipelineLog;
use std::path::{Path, PathBuf};

/// A row-major matrix of f64, the references' currency.
#[derive(Clone, Debug)]
struct Mat {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Mat {
    fn zeros(rows: usize, cols: usize) -> Mat {
        Mat {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    fn at(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.cols + c]
    }

    fn set(&mut self, r: usize, c: usize, v: f64) {
        self.data[r * self.cols + c] = v;
    }

    fn map(&self, f: impl Fn(f64) -> f64) -> Mat {
        Mat {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|&v| f(v)).collect(),
        }
    }

    fn transpose(&self) -> Mat {
        let mut t = Mat::zeros(self.cols, self.rows);
        for r in 0..self.rows {
            for c in 0..self.cols {
                t.set(c, r, self.at(r, c));
            }
        }
        t
    }

    /// `self @ other`.
    fn matmul(&self, other: &Mat) -> Mat {
        assert_eq!(self.cols, other.rows);
        let mut out = Mat::zeros(self.rows, other.cols);
        for r in 0..self.rows {
            for k in 0..self.cols {
                let a = self.at(r, k);
                for c in 0..other.cols {
                    out.data[r * other.cols + c] += a * other.at(k, c);
                }
            }
        }
        out
    }

    /// Applies `f` to each row (as a slice), writing the row it returns.
    fn rows_map(&self, f: impl Fn(&[f64]) -> Vec<f64>) -> Mat {
        let mut data = Vec::with_capacity(self.data.len());
        for r in 0..self.rows {
            let out = f(&self.data[r * self.cols..(r + 1) * self.cols]);
            data.extend(out);
        }
        let cols = data.len() / self.rows;
        Mat {
            rows: self.rows,
            cols,
            data,
        }
    }
}

fn softmax_row(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// `tests/nki/py_classes.nk`: tile `k` (128 rows) times `2 (k + 1)`, plus `0.25 + (k + 1)` (the
/// dataclass's scale and shift, the counter's value after its `k + 1`-th bump).
fn py_classes_ref(x: &Mat) -> Mat {
    let mut y = x.clone();
    for r in 0..y.rows {
        let k = (r / 128) as f64;
        for c in 0..y.cols {
            let v = &mut y.data[r * y.cols + c];
            *v = *v * (2.0 * (k + 1.0)) + (0.25 + (k + 1.0));
        }
    }
    y
}

/// `tests/nki/direct_alloc.nk`: `a - b` of two vectors, as the `[n / 64, 64]` array the output is
/// stored as.
fn direct_alloc_ref(a: &Mat, b: &Mat) -> Mat {
    let data: Vec<f64> = a.data.iter().zip(&b.data).map(|(x, y)| x - y).collect();
    Mat {
        rows: data.len() / 64,
        cols: 64,
        data,
    }
}

/// `tests/nki/py_partial_scope.nk`: `2x + 0.5` on the first 128 rows, `2x + 6` on the others.
fn py_partial_scope_ref(x: &Mat) -> Mat {
    let mut y = x.clone();
    for r in 0..y.rows {
        let shift = if r < 128 { 0.5 } else { 6.0 };
        for c in 0..y.cols {
            let v = &mut y.data[r * y.cols + c];
            *v = 2.0 * *v + shift;
        }
    }
    y
}

/// `a + b`, elementwise.
/// `tests/nki/py_unrolled.nk`: tile `k` (128 rows) scaled by `k + 1` and offset by 0.5 (even
/// `k`) or -1.0 (odd `k`).
fn py_unrolled_ref(x: &Mat) -> Mat {
    let mut y = x.clone();
    for r in 0..y.rows {
        let k = r / 128;
        let off = if k % 2 == 0 { 0.5 } else { -1.0 };
        for c in 0..y.cols {
            let v = &mut y.data[r * y.cols + c];
            *v = *v * (k + 1) as f64 + off;
        }
    }
    y
}

fn sum(a: &Mat, b: &Mat) -> Mat {
    let mut c = a.clone();
    for (x, y) in c.data.iter_mut().zip(&b.data) {
        *x += y;
    }
    c
}

/// `row / sqrt(mean(row²) + eps)`, times the weight `g` when given.
fn rms_norm(row: &[f64], eps: f64, g: Option<&[f64]>) -> Vec<f64> {
    let ms = row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64;
    let s = 1.0 / (ms + eps).sqrt();
    row.iter()
        .enumerate()
        .map(|(i, v)| v * s * g.map_or(1.0, |g| g[i]))
        .collect()
}

fn mean(row: &[f64]) -> f64 {
    row.iter().sum::<f64>() / row.len() as f64
}

/// The inputs' values: a SplitMix64 stream mapped to [-1, 1), independent of nkc's generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    fn mat(&mut self, rows: usize, cols: usize) -> Mat {
        let data = (0..rows * cols)
            .map(|_| f64::from(self.next() as f32))
            .collect();
        Mat { rows, cols, data }
    }
}

/// One corpus kernel: its file, its inputs (name and shape), and its reference.
struct Case {
    file: &'static str,
    /// Each input's name and shape (1 to 4 dimensions; the reference sees it as the 2-D array
    /// nkc stores, `[product of the leading dimensions, last]`).
    inputs: &'static [(&'static str, &'static [usize])],
    reference: fn(&[Mat]) -> Vec<Mat>,
    /// Error allowed: `abs + rel * |want|`.
    tol: (f64, f64),
}

/// Runs one case: inputs as `.npy` files, `run --check` on the simulator, then the reference.
fn run_case(case: &Case) {
    run_case_on(case, PipelineMode::Default, false);
}

/// [`run_case`] on one pipelining path, with the annotated loops peeled or not.
fn run_case_on(case: &Case, pipeline: PipelineMode, peel: bool) {
    let dir = common::scratch("nki", case.file.trim_end_matches(".nk"));
    let mut rng = Rng(0x5EED ^ case.file.len() as u64);
    let mut mats = Vec::new();
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for (name, shape) in case.inputs {
        let (&c, leading) = shape.split_last().expect("an input has a dimension");
        let m = rng.mat(leading.iter().product(), c);
        let path = dir.join(format!("{name}.npy"));
        let array = Array {
            shape: shape.to_vec(),
            data: m.data.iter().map(|&v| v as f32).collect(),
        };
        nkc::npy::write_npy(&path, &array).expect("the scratch directory is writable");
        inputs.push((name.to_string(), path));
        mats.push(m);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/nki")
        .join(case.file);
    let src = Source::read(&path).expect("the corpus file reads");
    // `# grid: AxB`: the launch grid the kernel is run with (`--grid AxB`).
    let grid = src
        .text
        .lines()
        .find_map(|l| l.strip_prefix("# grid:"))
        .map(|g| nkc::driver::parse_grid(g.trim()).expect("a grid AxB").0);
    let mut opts = RunOptions {
        engine: Engine::Sim,
        pipeline,
        peel,
        inputs,
        check: true,
        ..RunOptions::default()
    };
    opts.specialise.grid = grid;
    // `# arg: NAME=VALUE`: a scalar argument of the run (`--arg NAME=VALUE`).
    for a in src.text.lines().filter_map(|l| l.strip_prefix("# arg:")) {
        let (name, value) = a.trim().split_once('=').expect("an argument NAME=VALUE");
        (opts.specialise.args).push((name.trim().to_string(), value.trim().to_string()));
    }
    let report = run::run(&src, &opts, &mut PipelineLog::default()).unwrap_or_else(|f| {
        let text = match &f {
            nkc::driver::Failure::Diagnostics(errors) => {
                frontend::diagnostic::render_plain(case.file, &src.text, errors)
            }
            other => format!("{other:?}"),
        };
        panic!(
            "{} ({pipeline:?}, peel {peel}) is not accepted as written:\n{text}",
            case.file
        )
    });
    assert!(report.checked, "{}: --check did not run", case.file);
    // No path beats the lower bound of the kernel as written (`backend::dep_bound`).
    let sim = report
        .sim
        .as_ref()
        .expect("the simulator reports its figures");
    assert!(
        sim.lower_bound() <= sim.stats.cycles,
        "{} ({pipeline:?}, peel {peel}): lower bound {} above {} cycles",
        case.file,
        sim.lower_bound(),
        sim.stats.cycles
    );
    let want = (case.reference)(&mats);
    assert_eq!(
        report.outputs.len(),
        want.len(),
        "{}: number of outputs",
        case.file
    );
    for (out, w) in report.outputs.iter().zip(&want) {
        assert_eq!(
            out.array.shape,
            vec![w.rows, w.cols],
            "{}: shape of `{}`",
            case.file,
            out.name
        );
        for (i, (&g, &wv)) in out.array.data.iter().zip(&w.data).enumerate() {
            let err = (f64::from(g) - wv).abs();
            assert!(
                err <= case.tol.0 + case.tol.1 * wv.abs(),
                "{}: `{}`[{}, {}] is {g}, the reference says {wv}",
                case.file,
                out.name,
                i / w.cols,
                i % w.cols
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const EXACT: (f64, f64) = (1e-6, 1e-6);
const SUMS: (f64, f64) = (1e-4, 1e-4);
/// Sums of thousands of float32 terms (a row of 6400): the rounding of the partial sums.
const LONG_SUMS: (f64, f64) = (2e-3, 1e-4);
const TRANSCENDENTAL: (f64, f64) = (1e-4, 1e-3);

const CASES: &[Case] = &[
    // ---- trace: the kernel's Python evaluated at compile time ----
    Case {
        file: "py_classes.nk",
        inputs: &[("x", &[256, 64])],
        reference: |m| vec![py_classes_ref(&m[0])],
        tol: EXACT,
    },
    Case {
        file: "direct_alloc.nk",
        inputs: &[("a", &[16384]), ("b", &[16384])],
        reference: |m| vec![direct_alloc_ref(&m[0], &m[1])],
        tol: EXACT,
    },
    Case {
        file: "py_partial_scope.nk",
        inputs: &[("x", &[384, 64])],
        reference: |m| vec![py_partial_scope_ref(&m[0])],
        tol: EXACT,
    },
    Case {
        file: "py_host_module.nk",
        inputs: &[("x", &[256, 256])],
        reference: |m| vec![m[0].map(|x| 3.0 * x)],
        tol: EXACT,
    },
    Case {
        file: "fn_args.nk",
        inputs: &[("x", &[256, 64])],
        // op0=nl.add with 1.0, then op1=np.multiply with 2.0.
        reference: |m| vec![m[0].map(|x| (x + 1.0) * 2.0)],
        tol: EXACT,
    },
    Case {
        file: "ds_named.nk",
        inputs: &[("x", &[128, 512])],
        reference: |m| vec![m[0].map(|x| 2.0 * x + 1.0)],
        tol: EXACT,
    },
    Case {
        file: "return_in_loop.nk",
        inputs: &[("x", &[250, 96])],
        reference: |m| vec![m[0].map(|x| x * x + 0.5)],
        tol: EXACT,
    },
    Case {
        file: "dma_hbm_copy.nk",
        inputs: &[("x", &[300, 64])],
        // `halves` is `x` with its two halves of rows swapped.
        reference: |m| {
            let mut halves = Mat::zeros(300, 64);
            for r in 0..300 {
                for c in 0..64 {
                    halves.set(r, c, m[0].at((r + 150) % 300, c));
                }
            }
            vec![m[0].clone(), halves]
        },
        tol: EXACT,
    },
    Case {
        file: "dtype_limits.nk",
        inputs: &[("x", &[256, 128])],
        // Clipped to float32's range (no change), plus int8's max (127).
        reference: |m| vec![m[0].map(|x| x + 127.0)],
        tol: EXACT,
    },
    Case {
        file: "py_helpers.nk",
        inputs: &[("a_tensor", &[256, 512]), ("b_tensor", &[256, 512])],
        // scale_add(a, b, beta=0.5): alpha (1.0) * a + 0.5 * b.
        reference: |m| vec![sum(&m[0], &m[1].map(|x| 0.5 * x))],
        tol: EXACT,
    },
    Case {
        file: "py_scalars.nk",
        inputs: &[("x", &[256, 512])],
        // The defaults: use_exp=False picks square; scale = 2.0 * sqrt(4) / 2 = 2; eps = 1e-5.
        reference: |m| vec![m[0].map(|x| (2.0 * x) * (2.0 * x) + 1e-5)],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "py_unrolled.nk",
        inputs: &[("x", &[512, 512])],
        // Tile k of 128 rows: x * (k + 1), plus 0.5 for even k and -1.0 for odd k.
        reference: |m| vec![py_unrolled_ref(&m[0])],
        tol: EXACT,
    },
    Case {
        file: "tensor_add.nk",
        inputs: &[("a_input", &[256, 1024]), ("b_input", &[256, 1024])],
        reference: |m| vec![sum(&m[0], &m[1])],
        tol: EXACT,
    },
    Case {
        file: "matmul_tiled.nk",
        inputs: &[("lhsT", &[256, 256]), ("rhs", &[256, 1024])],
        reference: |m| vec![m[0].transpose().matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "transpose.nk",
        inputs: &[("in_tensor", &[256, 384])],
        reference: |m| vec![m[0].transpose()],
        tol: EXACT,
    },
    Case {
        file: "softmax.nk",
        inputs: &[("in_tensor", &[256, 512])],
        reference: |m| vec![m[0].rows_map(softmax_row)],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "rmsnorm.nk",
        inputs: &[("a_tensor", &[256, 512])],
        reference: |m| vec![m[0].rows_map(|r| rms_norm(r, 1e-6, None))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "layernorm.nk",
        inputs: &[("input_tensor", &[256, 512])],
        reference: |m| {
            vec![m[0].rows_map(|r| {
                let mu = mean(r);
                let var = r.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / r.len() as f64;
                let s = 1.0 / (var + 1e-5).sqrt();
                r.iter().map(|v| (v - mu) * s).collect()
            })]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "rmsnorm_arange.nk",
        inputs: &[("a_tensor", &[256, 512])],
        reference: |m| vec![m[0].rows_map(|r| rms_norm(r, 0.0, None))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "tensor_add_mgrid.nk",
        inputs: &[("a_input", &[256, 1024]), ("b_input", &[256, 1024])],
        reference: |m| vec![sum(&m[0], &m[1])],
        tol: EXACT,
    },
    Case {
        file: "attention.nk",
        inputs: &[
            ("q_t", &[128, 512]),
            ("k_t", &[128, 512]),
            ("v", &[512, 128]),
        ],
        reference: attention,
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "avgpool.nk",
        inputs: &[("in_tensor", &[256, 64])],
        reference: |m| vec![m[0].rows_map(|r| r.chunks(4).map(mean).collect())],
        tol: SUMS,
    },
    Case {
        file: "matmul_basic.nk",
        inputs: &[("lhsT", &[64, 128]), ("rhs", &[64, 512])],
        reference: |m| vec![m[0].transpose().matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "scaled_exp.nk",
        inputs: &[("in_tensor", &[256, 512])],
        reference: |m| vec![m[0].map(|x| 1.0 / (x * 0.5 + 2.0))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "row_stats.nk",
        inputs: &[("in_tensor", &[256, 512])],
        reference: |m| {
            let mx = m[0].rows_map(|r| vec![r.iter().cloned().fold(f64::MIN, f64::max)]);
            let sm = m[0].rows_map(|r| vec![r.iter().sum()]);
            vec![mx, sm]
        },
        tol: SUMS,
    },
    Case {
        file: "relu_bias.nk",
        inputs: &[("x_t", &[256, 256]), ("w", &[256, 512])],
        reference: |m| {
            let y = m[0].transpose().matmul(&m[1]);
            vec![y.map(|v| (v + f64::from(0.1f32)).max(0.0))]
        },
        tol: SUMS,
    },
    Case {
        file: "flash_attention.nk",
        inputs: &[
            ("q_t", &[128, 512]),
            ("k_t", &[128, 512]),
            ("v", &[512, 128]),
        ],
        reference: attention,
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "log_softmax.nk",
        inputs: &[("x", &[256, 512])],
        reference: |m| vec![m[0].rows_map(|r| softmax_row(r).iter().map(|p| p.ln()).collect())],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "matmul_blocked.nk",
        inputs: &[("lhsT", &[256, 256]), ("rhs", &[256, 1024])],
        reference: |m| vec![m[0].transpose().matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "silu.nk",
        inputs: &[("in_tensor", &[256, 1024])],
        reference: |m| vec![m[0].map(|x| x / (1.0 + (-x).exp()))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "add_rmsnorm.nk",
        inputs: &[("hidden", &[256, 512]), ("residual", &[256, 512])],
        reference: |m| {
            let s = sum(&m[0], &m[1]);
            let normed = s.rows_map(|r| rms_norm(r, 1e-5, None));
            vec![s, normed]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "gelu_bf16.nk",
        inputs: &[("in_tensor", &[256, 512])],
        reference: |m| {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            vec![m[0].map(|x| 0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh()))]
        },
        // Stored as bfloat16: 8 significant bits.
        tol: (1e-3, 8e-3),
    },
    Case {
        file: "transpose_matmul.nk",
        inputs: &[("a", &[256, 256]), ("b", &[256, 512])],
        reference: |m| vec![m[0].matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "softmax_reciprocal.nk",
        inputs: &[("x", &[256, 512])],
        reference: |m| vec![m[0].rows_map(softmax_row)],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "rmsnorm_weight.nk",
        inputs: &[("a_tensor", &[256, 512]), ("g_tensor", &[1, 512])],
        reference: |m| vec![m[0].rows_map(|r| rms_norm(r, 0.0, Some(&m[1].data)))],
        tol: TRANSCENDENTAL,
    },
    Case {
        // 100 rows: one tile, 28 of its partitions garbage that never reaches the output.
        file: "rmsnorm_short_rows.nk",
        inputs: &[("x", &[100, 256]), ("weight", &[1, 256])],
        reference: |m| vec![m[0].rows_map(|r| rms_norm(r, 1e-6, Some(&m[1].data)))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "transpose_load.nk",
        inputs: &[("in_tensor", &[256, 384])],
        reference: |m| vec![m[0].transpose()],
        tol: EXACT,
    },
    Case {
        file: "tensor_add_dst.nk",
        inputs: &[("a_input", &[256, 512]), ("b_input", &[256, 512])],
        reference: |m| vec![sum(&m[0], &m[1])],
        tol: EXACT,
    },
    Case {
        file: "layernorm_batched.nk",
        inputs: &[("x", &[2, 256, 512]), ("gamma", &[512]), ("beta", &[512])],
        reference: |m| {
            let (g, b) = (&m[1].data, &m[2].data);
            vec![m[0].rows_map(|r| {
                let mu = mean(r);
                let var = r.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / r.len() as f64;
                let s = 1.0 / (var + 1e-5).sqrt();
                r.iter()
                    .enumerate()
                    .map(|(i, v)| (v - mu) * s * g[i] + b[i])
                    .collect()
            })]
        },
        tol: TRANSCENDENTAL,
    },
    // Rows of 8192 f32: the tiles of one iteration of its flat loop fit SBUF only when each
    // temporary shares memory with the ones not live at the same time (the allocator's last
    // resort), and the weights' broadcast fits PSUM only once planned within its banks.
    Case {
        file: "layernorm_wide_rows.nk",
        inputs: &[
            ("input_tensor", &[256, 8192]),
            ("gamma_vector", &[8192]),
            ("beta_vector", &[8192]),
        ],
        reference: |m| {
            let (g, b) = (&m[1].data, &m[2].data);
            vec![m[0].rows_map(|r| {
                let mu = mean(r);
                let var = r.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / r.len() as f64;
                let s = 1.0 / (var + 1e-5).sqrt();
                r.iter()
                    .enumerate()
                    .map(|(i, v)| (v - mu) * s * g[i] + b[i])
                    .collect()
            })]
        },
        tol: TRANSCENDENTAL,
    },
    // ---- tile_nd: multi-dimensional tiles, HBM reshape, broadcasting, tall load_transpose2d ----
    Case {
        file: "nd_matmul_hoist.nk",
        inputs: &[("lhsT", &[256, 128]), ("rhs", &[256, 512])],
        reference: |m| vec![m[0].transpose().matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "matmul_psum_ndarray.nk",
        inputs: &[("lhsT", &[384, 256]), ("rhs", &[384, 1024])],
        reference: |m| vec![m[0].transpose().matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "py_tile_lists.nk",
        inputs: &[("lhsT", &[384, 256]), ("rhs", &[384, 512])],
        reference: |m| vec![m[0].transpose().matmul(&m[1])],
        tol: SUMS,
    },
    Case {
        file: "nd_free_dims.nk",
        inputs: &[("x", &[128, 512]), ("w", &[128, 512])],
        reference: |m| {
            let first = Mat {
                rows: 128,
                cols: 128,
                data: (0..128 * 128).map(|i| m[0].at(i / 128, i % 128)).collect(),
            };
            vec![m[0].map(f64::exp), first.transpose().matmul(&m[1])]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "nd_reshape.nk",
        inputs: &[
            ("a_tensor", &[256, 1024]),
            ("g_tensor", &[1024]),
            ("x3", &[2, 128, 256]),
        ],
        reference: |m| {
            let g = &m[1].data;
            let scaled = m[0].rows_map(|r| r.iter().zip(g).map(|(a, g)| a * g).collect());
            vec![scaled, m[2].map(|x| x + 1.0)]
        },
        tol: EXACT,
    },
    Case {
        file: "nd_partition_major.nk",
        inputs: &[
            ("x", &[128, 2, 64]),
            ("y", &[2, 128, 8, 16]),
            ("colsum", &[1, 2, 64]),
        ],
        reference: |m| {
            // x is stored as [128·2, 64]: element [p, a, b] at row p·2 + a.
            let mut colsum = Mat::zeros(2, 64);
            for p in 0..128 {
                for a in 0..2 {
                    for b in 0..64 {
                        let v = colsum.at(a, b) + m[0].at(p * 2 + a, b);
                        colsum.set(a, b, v);
                    }
                }
            }
            vec![m[0].map(f64::exp), m[1].map(|v| 2.0 * v), colsum]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "py_numpy_arrays.nk",
        inputs: &[("x", &[128, 60])],
        reference: |m| {
            // Window j of 7 over 60 columns: [j·60 / 7, ceil((j + 1)·60 / 7)).
            let out = m[0].rows_map(|r| {
                (0usize..7)
                    .map(|j| {
                        let (s, e) = (j * 60 / 7, ((j + 1) * 60).div_ceil(7));
                        r[s..e].iter().sum::<f64>() / (e - s) as f64
                    })
                    .collect()
            });
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "matmul_pe_tiles.nk",
        inputs: &[("a", &[8, 64, 64]), ("b", &[8, 64, 256])],
        reference: |m| {
            // a and b are stored [8·64, cols]: batch i is rows i·64 .. i·64 + 64.
            let mut out = Mat::zeros(8 * 64, 256);
            for i in 0..8 {
                for mm in 0..64 {
                    for k in 0..64 {
                        let a = m[0].at(i * 64 + k, mm);
                        for c in 0..256 {
                            let v = out.at(i * 64 + mm, c) + a * m[1].at(i * 64 + k, c);
                            out.set(i * 64 + mm, c, v);
                        }
                    }
                }
            }
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "iota_loop_base.nk",
        inputs: &[("x", &[384, 64])],
        reference: |m| {
            let mut out = m[0].clone();
            for r in 0..out.rows {
                for c in 0..out.cols {
                    out.set(r, c, m[0].at(r, c) + r as f64);
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
    Case {
        file: "nd_broadcast.nk",
        inputs: &[
            ("a_tensor", &[128, 1024]),
            ("b_tensor", &[1, 1024]),
            ("c_tensor", &[1, 1]),
        ],
        reference: |m| {
            let (b, c) = (&m[1].data, m[2].data[0]);
            let out = m[0].rows_map(|r| r.iter().zip(b).map(|(a, b)| (a + b) * c).collect());
            vec![out, m[0].map(|_| c)]
        },
        tol: EXACT,
    },
    Case {
        file: "nd_load_transpose.nk",
        inputs: &[("in_tensor", &[512, 128])],
        reference: |m| vec![m[0].transpose()],
        tol: EXACT,
    },
    Case {
        file: "nd_rmsnorm_1d_weight.nk",
        inputs: &[("a_tensor", &[256, 512]), ("g_tensor", &[512])],
        reference: |m| vec![m[0].rows_map(|r| rms_norm(r, 0.0, Some(&m[1].data)))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "nd_subview_blocks.nk",
        inputs: &[
            ("x", &[256, 64]),
            ("table", &[1, 256, 64]),
            ("wide", &[128, 256]),
        ],
        reference: |m| {
            let mut prod = Mat::zeros(512, 64);
            for r in 0..256 {
                for c in 0..64 {
                    prod.set(r, c, m[0].at(r, c) * m[1].at(r, c));
                    prod.set(256 + r, c, m[0].at(r, c) - m[1].at(r, c));
                }
            }
            let mut sums = Mat::zeros(1, 256);
            for c in 0..256 {
                sums.set(0, c, (0..128).map(|r| m[2].at(r, c)).sum());
            }
            vec![prod, sums]
        },
        tol: SUMS,
    },
    // ---- end tile_nd ----
];

/// Access patterns: strided slices, a transposed view, a window, `.ap` (issue 29).
const PATTERN_CASES: &[Case] = &[
    Case {
        file: "strided_split.nk",
        inputs: &[("in_tensor", &[256, 10])],
        reference: |m| {
            let even = m[0].rows_map(|r| r.iter().step_by(2).copied().collect());
            let odd = m[0].rows_map(|r| r.iter().skip(1).step_by(2).map(|x| 2.0 * x).collect());
            vec![even, odd]
        },
        tol: EXACT,
    },
    Case {
        file: "transpose_view.nk",
        inputs: &[("in_tensor", &[256, 32])],
        // Row r holds a row-major [4, 8]: the output holds its [8, 4] transpose.
        reference: |m| vec![m[0].rows_map(|r| (0..32).map(|k| r[(k % 4) * 8 + k / 4]).collect())],
        tol: EXACT,
    },
    Case {
        file: "window_maxpool.nk",
        inputs: &[("in_tensor", &[128, 64])],
        reference: |m| vec![m[0].rows_map(|r| r.chunks(2).map(|w| w[0].max(w[1])).collect())],
        tol: EXACT,
    },
    Case {
        file: "ap_avgpool.nk",
        inputs: &[("in_tensor", &[128, 128])],
        // Each row is an [8, 16] image: the mean of each 2 x 2 window, [4, 8] row-major.
        reference: |m| {
            vec![m[0].rows_map(|r| {
                let mut out = Vec::new();
                for h in 0..4 {
                    for w in 0..8 {
                        let at = |dh: usize, dw: usize| r[(2 * h + dh) * 16 + 2 * w + dw];
                        out.push((at(0, 0) + at(0, 1) + at(1, 0) + at(1, 1)) / 4.0);
                    }
                }
                out
            })]
        },
        tol: SUMS,
    },
    Case {
        file: "window_partition_load.nk",
        inputs: &[("in_tensor", &[200, 32])],
        // The max of each 3 x 3 window at stride 1: [198, 30].
        reference: |m| {
            let mut out = Mat::zeros(198, 30);
            for h in 0..198 {
                for w in 0..30 {
                    let mut v = f64::NEG_INFINITY;
                    for kh in 0..3 {
                        for kw in 0..3 {
                            v = v.max(m[0].at(h + kh, w + kw));
                        }
                    }
                    out.set(h, w, v);
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
    Case {
        file: "pattern_reverse.nk",
        inputs: &[("in_tensor", &[256, 32])],
        // Each block of 8 backwards; each pair exchanged, times 3, plus the element itself.
        reference: |m| {
            let rev = m[0].rows_map(|r| (0..32).map(|k| r[(k / 8) * 8 + 7 - k % 8]).collect());
            let swp = m[0].rows_map(|r| (0..32).map(|k| 3.0 * r[k ^ 1] + r[k]).collect());
            vec![rev, swp]
        },
        tol: SUMS,
    },
    Case {
        file: "pattern_many_axes.nk",
        inputs: &[("in_tensor", &[128, 4, 4, 4])],
        // Output voxel (2y + x) per axis: v[y + x] + 0.5 v[y + 1 - x] along depth.
        reference: |m| {
            let v = |c: usize, d: usize, h: usize, w: usize| m[0].at(c * 16 + d * 4 + h, w);
            let mut out = Mat::zeros(128, 216);
            for c in 0..128 {
                for d in 0..6 {
                    for h in 0..6 {
                        for w in 0..6 {
                            let (dy, dx, hy, hx, wy, wx) =
                                (d / 2, d % 2, h / 2, h % 2, w / 2, w % 2);
                            let x = v(c, dy + dx, hy + hx, wy + wx)
                                + 0.5 * v(c, dy + 1 - dx, hy + hx, wy + wx);
                            out.set(c, d * 36 + h * 6 + w, x);
                        }
                    }
                }
            }
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "nd_broadcast_ranks.nk",
        inputs: &[("in_tensor", &[256, 48])],
        // Windows of 6 elements: each minus its window's max; each times its window's sum.
        reference: |m| {
            let per = |f: fn(&[f64], f64) -> f64, red: fn(&[f64]) -> f64| {
                m[0].rows_map(|r| {
                    r.chunks(6)
                        .flat_map(|w| {
                            let k = red(w);
                            w.iter().map(move |&x| f(&[x], k)).collect::<Vec<f64>>()
                        })
                        .collect()
                })
            };
            let centered = per(
                |x, k| x[0] - k,
                |w| w.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            let scaled = per(|x, k| x[0] * k, |w| w.iter().sum());
            vec![centered, scaled]
        },
        tol: SUMS,
    },
    Case {
        file: "pattern_nd_pool.nk",
        inputs: &[("in_tensor", &[128, 8, 16]), ("rows", &[128, 10])],
        // [C, 8, 16] images: the max and the mean of each 2 x 2 window ([C, 4, 8], stored as
        // [C * 4, 8]), and the even columns of `rows`.
        reference: |m| {
            let x = |c: usize, h: usize, w: usize| m[0].at(c * 8 + h, w);
            let pool = |f: fn(&[f64]) -> f64| {
                let mut data = Vec::new();
                for c in 0..128 {
                    for h in 0..4 {
                        for w in 0..8 {
                            let win = [
                                x(c, 2 * h, 2 * w),
                                x(c, 2 * h, 2 * w + 1),
                                x(c, 2 * h + 1, 2 * w),
                                x(c, 2 * h + 1, 2 * w + 1),
                            ];
                            data.push(f(&win));
                        }
                    }
                }
                Mat {
                    rows: 512,
                    cols: 8,
                    data,
                }
            };
            let max = pool(|v| v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            let mean = pool(|v| v.iter().sum::<f64>() / 4.0);
            let even = m[1].rows_map(|r| r.iter().step_by(2).copied().collect());
            vec![max, mean, even]
        },
        tol: SUMS,
    },
    Case {
        file: "pattern_hbm.nk",
        inputs: &[("x", &[128, 16, 8]), ("w", &[1, 64, 128])],
        // Rows 4..12 of each [16, 8] image, doubled, flattened per image; the same transposed;
        // w's [64, 128] matrix transposed.
        reference: |m| {
            let mut data = Vec::new();
            for n in 0..128 {
                for h in 4..12 {
                    for c in 0..8 {
                        data.push(2.0 * m[0].at(n * 16 + h, c));
                    }
                }
            }
            let band = Mat {
                rows: 128,
                cols: 64,
                data,
            };
            let band_t = band.transpose();
            vec![band, band_t, m[1].transpose()]
        },
        tol: EXACT,
    },
];

#[test]
fn pattern_kernels_run_as_written_and_match_their_references() {
    for case in PATTERN_CASES {
        run_case(case);
    }
}

/// softmax(q @ k.T / sqrt(d)) @ v, with q and k given transposed.
/// The uniform value docs/machine.md defines for `nl.rand` / `nisa.dropout`: two rounds of the
/// SplitMix64 output function over the seed and stream, then the position, top 24 bits over 2^24.
fn rand_unit(stream: u64, p: u64, f: u64) -> f64 {
    fn mix(z: u64) -> u64 {
        let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    let key = mix(0x6E6B_635F_7261_6E64 ^ stream);
    (mix(key ^ (p << 40) ^ f) >> 40) as f64 / (1u64 << 24) as f64
}

fn attention(m: &[Mat]) -> Vec<Mat> {
    let scale = 1.0 / (m[0].rows as f64).sqrt();
    let scores = m[0].transpose().matmul(&m[1]).map(|x| x * scale);
    vec![scores.rows_map(softmax_row).matmul(&m[2])]
}

#[test]
fn corpus_kernels_run_as_written_and_match_their_references() {
    let files = common::nk_files("tests/nki");
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).expect("UTF-8 name");
        assert!(
            CASES
                .iter()
                .chain(OPS_CASES)
                .chain(INDEX_CASES)
                .chain(GRID_CASES)
                .chain(MASK_CASES)
                .chain(PSUM_CASES)
                .chain(PATTERN_CASES)
                .chain(PUBLIC_CASES)
                .any(|c| c.file == name),
            "tests/nki/{name} has no case in tests/nki_corpus.rs"
        );
    }
    for case in CASES {
        run_case(case);
    }
}

#[test]
fn rejected_kernels_say_what_to_change() {
    let files = common::nk_files("tests/nki/rejected");
    assert!(!files.is_empty());
    for path in &files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("UTF-8 file name");
        let src = std::fs::read_to_string(path).expect("the corpus file reads");
        let mut specs = frontend::Specs::new();
        for line in src.lines().filter_map(|l| l.strip_prefix("# shape:")) {
            let (param, shape) = nkc::driver::parse_shape(line.trim()).expect("NAME=RxC");
            let spec = frontend::ParamSpec {
                dtype: penguin::DType::F32,
                shape,
            };
            specs.insert(param, spec);
        }
        let errors = frontend::check_source_with(&src, None, &specs);
        let mut got: Vec<(String, usize)> = errors
            .iter()
            .map(|e| (e.code.to_string(), common::line_of(&src, e.span.start)))
            .collect();
        let mut want = common::expectations(&src);
        got.sort();
        want.sort();
        assert!(!want.is_empty(), "{name} states no `# expect:` line");
        assert_eq!(got, want, "tests/nki/rejected/{name}.nk");
        for e in &errors {
            assert!(
                e.notes.iter().any(|n| n.starts_with("help:")),
                "{name}: `{}` does not say what to change",
                e.message
            );
        }
        let file = format!("tests/nki/rejected/{name}.nk");
        let text = frontend::diagnostic::render_plain(&file, &src, &errors);
        insta::assert_snapshot!(format!("nki_rejected_{name}"), text);
    }
}

#[test]
fn the_command_line_specialises_untyped_parameters() {
    let file = "tests/nki/tensor_add.nk";
    // `--shape` for each untyped parameter: seeded random inputs of that shape.
    let o = common::nkc(&[
        "run",
        file,
        "--check",
        "--json",
        "--shape",
        "a_input=128x512",
        "--shape",
        "b_input=128x512",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&common::stdout(&o)).expect("JSON");
    assert_eq!(json["outputs"]["c_output"], serde_json::json!([128, 512]));
    // Without a shape: E0205 names both ways to give one.
    let o = common::nkc(&["run", file, "--shape", "a_input=128x512"]);
    assert_eq!(o.status.code(), Some(1));
    let err = common::stderr(&o);
    assert!(
        err.contains("error[E0205]: parameter `b_input` has no type"),
        "{err}"
    );
    assert!(err.contains("--shape b_input=ROWSxCOLS"), "{err}");
    // `check` takes the shapes too, and then judges the kernel whole.
    let o = common::nkc(&[
        "check",
        file,
        "--shape",
        "a_input=256x512",
        "--shape",
        "b_input=256x512",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    // The kernel's own assert sees the shapes it is specialised for.
    let o = common::nkc(&[
        "check",
        file,
        "--shape",
        "a_input=256x512",
        "--shape",
        "b_input=128x512",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(common::stderr(&o).contains("error[E0203]: assertion failed"));
    // A shape and an input for one name, and a malformed shape, are errors.
    let dir = common::scratch("nki", "cli");
    let path = dir.join("a.npy");
    let array = Array {
        shape: vec![128, 512],
        data: vec![0.5; 128 * 512],
    };
    nkc::npy::write_npy(&path, &array).expect("the scratch directory is writable");
    let input = format!("a_input={}", path.display());
    let fails = |args: &[&str], needle: &str| {
        let o = common::nkc(args);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: no `{needle}` in {err}");
    };
    let both = ["--shape", "a_input=128x512", "--shape", "b_input=128x512"];
    fails(
        &[&["run", file, "--input", &input][..], &both[..]].concat(),
        "has both `--shape` and `--input`",
    );
    fails(
        &[
            "run",
            file,
            "--input",
            &input,
            "--shape",
            "b_input=1x1x1x128x512",
        ],
        "assertion failed",
    );
    let o = common::nkc(&["run", file, "--shape", "b_input=12xq"]);
    assert_eq!(o.status.code(), Some(2), "clap rejects the value");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_reference_helpers_are_right() {
    let a = Mat {
        rows: 2,
        cols: 2,
        data: vec![1.0, 2.0, 3.0, 4.0],
    };
    assert_eq!(a.matmul(&a).data, vec![7.0, 10.0, 15.0, 22.0]);
    assert_eq!(a.transpose().data, vec![1.0, 3.0, 2.0, 4.0]);
    let s = softmax_row(&[0.0, 0.0]);
    assert_eq!(s, vec![0.5, 0.5]);
}

// ---- The NKI operations added for issue 29 (`tests/nki/ops_*.nk`), kept apart from the cases
// above: each reference is plain f64 arithmetic on the kernel's inputs. ----

/// 1.0 where `c` holds, 0.0 elsewhere: NKI's boolean results as nkc stores them.
fn truth(c: bool) -> f64 {
    if c {
        1.0
    } else {
        0.0
    }
}

/// The elementwise `f(a, b)` of two matrices of one shape.
fn zip_map(a: &Mat, b: &Mat, f: impl Fn(f64, f64) -> f64) -> Mat {
    Mat {
        rows: a.rows,
        cols: a.cols,
        data: a.data.iter().zip(&b.data).map(|(&x, &y)| f(x, y)).collect(),
    }
}

/// `erf(x)` in f64 by its Taylor series, for the |x| <= 2 of the kernels (60 terms leave an
/// error far below the tolerance).
fn erf(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..60 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// The `[rows, cols]` block of `m` from column 0.
fn left_cols(m: &Mat, cols: usize) -> Mat {
    let mut out = Mat::zeros(m.rows, cols);
    for r in 0..m.rows {
        for c in 0..cols {
            out.set(r, c, m.at(r, c));
        }
    }
    out
}

// ---- grid: launch grids, outputs as parameters, matmul forms, NKI's keyword names ----
const GRID_CASES: &[Case] = &[
    Case {
        file: "grid_rows.nk",
        inputs: &[("x", &[512, 256])],
        reference: |m| vec![m[0].map(|v| v * 3.0 - 1.5)],
        tol: EXACT,
    },
    Case {
        file: "grid_blocks_2d.nk",
        inputs: &[("a", &[256, 768]), ("b", &[256, 768])],
        // Program (i, j) owns columns [256 j, 256 j + 256) in two halves of 128.
        reference: |m| {
            let p = zip_map(&m[0], &m[1], |x, y| x * y);
            let s = p.rows_map(|r| r.chunks(128).map(|c| c.iter().sum()).collect());
            vec![p, s]
        },
        tol: SUMS,
    },
    Case {
        file: "out_params.nk",
        inputs: &[
            ("x", &[256, 384]),
            ("row_max", &[256, 1]),
            ("shifted", &[256, 384]),
        ],
        reference: |m| {
            let mx = m[0].rows_map(|r| vec![r.iter().cloned().fold(f64::MIN, f64::max)]);
            let sh = m[0].rows_map(|r| {
                let top = r.iter().cloned().fold(f64::MIN, f64::max);
                r.iter().map(|v| v - top).collect()
            });
            vec![mx, sh]
        },
        tol: EXACT,
    },
    Case {
        file: "matmul_untransposed.nk",
        inputs: &[("x", &[128, 256]), ("y", &[256, 512])],
        reference: |m| {
            let full = m[0].matmul(&m[1]);
            let mut x64 = Mat::zeros(64, 128);
            let mut y128 = Mat::zeros(128, 512);
            for r in 0..64 {
                for c in 0..128 {
                    x64.set(r, c, m[0].at(r, c));
                }
            }
            for r in 0..128 {
                for c in 0..512 {
                    y128.set(r, c, m[1].at(r, c));
                }
            }
            vec![full, x64.matmul(&y128)]
        },
        tol: SUMS,
    },
    Case {
        file: "nki_keywords.nk",
        inputs: &[("x", &[128, 128])],
        reference: |m| {
            let neg = m[0].rows_map(|r| vec![-r.iter().sum::<f64>()]);
            let inv = m[0].rows_map(|r| {
                let s: f64 = r.iter().sum();
                r.iter().map(|v| -s / v).collect()
            });
            vec![neg, inv, m[0].transpose()]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "psum_bank_tiles.nk",
        inputs: &[("v", &[128, 1024])],
        reference: |m| vec![m[0].transpose()],
        tol: EXACT,
    },
    Case {
        file: "psum_banks.nk",
        inputs: &[("q_t", &[128, 128]), ("k_t", &[128, 1024])],
        reference: |m| {
            let s = m[0].transpose().matmul(&m[1]);
            let mx = s.rows_map(|r| {
                r.chunks(512)
                    .map(|c| c.iter().cloned().fold(f64::MIN, f64::max))
                    .collect()
            });
            vec![s.map(|v| 0.5 * v), mx]
        },
        tol: SUMS,
    },
    Case {
        file: "psum_block_lifetime.nk",
        inputs: &[("q_t", &[256, 256]), ("k_t", &[256, 4096])],
        reference: |m| {
            let s = m[0].transpose().matmul(&m[1]);
            let mx = s.rows_map(|r| {
                r.chunks(512)
                    .map(|c| c.iter().cloned().fold(f64::MIN, f64::max))
                    .collect()
            });
            let first = s.rows_map(|r| r[..512].to_vec());
            vec![s.map(|v| 0.5 * v), mx, first]
        },
        tol: SUMS,
    },
    Case {
        file: "sbuf_block_lifetime.nk",
        inputs: &[("x", &[1024, 6400])],
        reference: |m| {
            let sums = m[0].rows_map(|r| vec![r.iter().sum::<f64>()]);
            vec![m[0].map(|v| 2.0 * v), sums]
        },
        tol: LONG_SUMS,
    },
];

#[test]
fn grid_kernels_run_as_written_and_match_their_references() {
    for case in GRID_CASES {
        run_case(case);
    }
}

const OPS_CASES: &[Case] = &[
    Case {
        file: "ops_activation_reduce_kw.nk",
        inputs: &[("x_in", &[256, 512])],
        reference: |m| {
            let x = &m[0];
            let ex = x.map(|v| (0.5 * v).exp());
            let ex_sum = ex.rows_map(|r| vec![r.iter().sum()]);
            let sq_max =
                x.rows_map(|r| vec![r.iter().map(|v| v * v).fold(f64::NEG_INFINITY, f64::max)]);
            vec![ex, ex_sum, sq_max]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_bit_invert.nk",
        inputs: &[("x_in", &[128, 512])],
        reference: |m| {
            let x = &m[0];
            let mut kept = x.clone();
            for r in 0..x.rows {
                for c in 14..x.cols {
                    kept.set(r, c, 0.0);
                }
            }
            vec![x.map(|v| truth(v <= 0.0)), kept]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_unary_math.nk",
        inputs: &[("x_in", &[256, 512])],
        reference: |m| {
            let y = m[0].map(|x| 4.0 * x);
            let sign = |v: f64| truth(v > 0.0) - truth(v < 0.0);
            vec![
                y.map(|v| -v),
                y.map(f64::abs),
                y.map(sign),
                y.map(f64::ceil),
                y.map(f64::floor),
                y.map(f64::trunc),
                y.map(|v| truth(v.trunc() == 0.0)),
            ]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_unary_transcendental.nk",
        inputs: &[("x_in", &[256, 512])],
        reference: |m| {
            let x = &m[0];
            vec![
                x.map(f64::sin),
                x.map(f64::cos),
                x.map(f64::tan),
                x.map(|v| (8.0 * v).atan()),
                x.map(|v| erf(2.0 * v)),
                x.map(f64::exp2),
                x.map(|v| (2.0 * v).sin()),
            ]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "ops_activations.nk",
        inputs: &[("x_in", &[256, 512])],
        reference: |m| {
            let y = m[0].map(|x| 4.0 * x);
            let c = (2.0 / std::f64::consts::PI).sqrt();
            vec![
                y.map(|v| v * sigmoid(v)),
                y.map(softplus),
                y.map(|v| v * softplus(v).tanh()),
                y.map(|v| 0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh())),
                y.map(|v| {
                    let s = sigmoid(v);
                    s * (1.0 + v * (1.0 - s))
                }),
                m[0].map(|v| 2.0 / std::f64::consts::PI.sqrt() * (-v * v).exp()),
            ]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "ops_compare.nk",
        inputs: &[("a_in", &[256, 512]), ("b_in", &[256, 512])],
        reference: |m| {
            let (a, b) = (&m[0], &m[1]);
            let fa = a.map(|v| (4.0 * v).floor());
            let fb = b.map(|v| (4.0 * v).floor());
            vec![
                zip_map(a, b, |x, y| truth(x < y)),
                a.map(|x| truth(x > 0.25)),
                zip_map(&fa, &fb, |x, y| truth(x <= y)),
                b.map(|y| truth(0.0 >= y)),
                zip_map(&fa, &fb, |x, y| truth(x == y)),
                fa.map(|x| truth(x != 1.0)),
            ]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_logical.nk",
        inputs: &[("a_in", &[256, 512]), ("b_in", &[256, 512])],
        reference: |m| {
            let (a, b) = (&m[0], &m[1]);
            let both =
                |f: fn(bool, bool) -> bool| zip_map(a, b, move |x, y| truth(f(x > 0.0, y < 0.5)));
            let ints = |f: fn(i64, i64) -> i64| {
                zip_map(a, b, move |x, y| {
                    f((8.0 * x).floor() as i64, (8.0 * y).floor() as i64) as f64
                })
            };
            vec![
                both(|p, q| p && q),
                both(|p, q| p || q),
                both(|p, q| p != q),
                a.map(|x| truth(x <= 0.0)),
                ints(|p, q| p & q),
                ints(|p, q| p | q),
                ints(|p, q| p ^ q),
                zip_map(a, b, |x, y| (x.abs() + 0.5).powf(3.0 * y)),
            ]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "ops_select_reduce.nk",
        inputs: &[("a_in", &[256, 512]), ("b_in", &[256, 512])],
        reference: |m| {
            let (a, b) = (&m[0], &m[1]);
            let var = |r: &[f64]| {
                let mu = mean(r);
                vec![r.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / r.len() as f64]
            };
            vec![
                zip_map(a, b, |x, y| if x > y { x } else { y }),
                a.map(|x| if x < 0.0 { -1.0 } else { x }),
                a.rows_map(softmax_row),
                a.rows_map(var),
                left_cols(a, 8).rows_map(|r| vec![r.iter().map(|v| v + 1.0).product()]),
                left_cols(b, 4).rows_map(|r| vec![truth(r.iter().all(|&v| v > -0.5))]),
            ]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_top8.nk",
        inputs: &[("x_in", &[256, 64])],
        reference: |m| {
            let x = &m[0];
            // Positions of each row's values in descending order (the inputs are distinct).
            let order = |row: &[f64]| {
                let mut idx: Vec<usize> = (0..row.len()).collect();
                idx.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
                idx
            };
            let top = x.rows_map(|r| order(r)[..16].iter().map(|&i| r[i]).collect());
            let first = x.rows_map(|r| order(r)[..8].iter().map(|&i| i as f64).collect());
            let second = x.rows_map(|r| order(r)[8..16].iter().map(|&i| i as f64).collect());
            let rest = x.rows_map(|r| {
                let mut out = r.to_vec();
                for &i in &order(r)[..8] {
                    out[i] = -10.0;
                }
                out
            });
            vec![top, first, second, rest]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_random.nk",
        inputs: &[("x_in", &[256, 64]), ("prob_in", &[256, 1])],
        reference: |m| {
            let (x, prob) = (&m[0], &m[1]);
            // docs/machine.md's generator: stream `s` (the kernel's random calls in order: the
            // noise 0, nisa.dropout 1, nl.dropout 2), partition `p`, element `f` of the tile.
            let u = |s: u64, p: usize, f: usize| rand_unit(s, p as u64, f as u64);
            let mut dropped = Mat::zeros(x.rows, x.cols);
            let mut rescaled = Mat::zeros(x.rows, x.cols);
            let mut noisy = Mat::zeros(x.rows, x.cols);
            for r in 0..x.rows {
                for c in 0..x.cols {
                    let (v, p) = (x.at(r, c), r % 128);
                    let keep = u(1, p, c) >= prob.at(r, 0);
                    dropped.set(r, c, if keep { v } else { 0.0 });
                    let keep = u(2, p, c) >= 0.25;
                    rescaled.set(r, c, if keep { v / 0.75 } else { 0.0 });
                    noisy.set(r, c, v + u(0, p, c));
                }
            }
            vec![dropped, rescaled, noisy]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_shared_constant.nk",
        inputs: &[("x_in", &[256, 128])],
        reference: |m| {
            let x = &m[0];
            let mut t = Mat::zeros(128, x.rows);
            let mut low = Mat::zeros(x.rows, 128);
            for r in 0..x.rows {
                for c in 0..128 {
                    t.set(c, r, x.at(r, c));
                    // np.tri(128, 128, k=1): ones where the column is at most one past the row.
                    if c <= r % 128 + 1 {
                        low.set(r, c, x.at(r, c));
                    }
                }
            }
            vec![t, low]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_tensor_scalar_reduce.nk",
        inputs: &[("x_in", &[256, 96]), ("scale_in", &[256, 1])],
        reference: |m| {
            let (x, s) = (&m[0], &m[1]);
            let mut y = Mat::zeros(x.rows, x.cols);
            let mut stats = Mat::zeros(x.rows, 2);
            for r in 0..x.rows {
                let row: Vec<f64> = (0..x.cols).map(|c| x.at(r, c) * s.at(r, 0)).collect();
                for (c, v) in row.iter().enumerate() {
                    y.set(r, c, *v);
                }
                stats.set(r, 0, row.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                stats.set(r, 1, row.iter().map(|v| 0.5 - v).sum());
            }
            vec![y, stats]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_predicated.nk",
        inputs: &[("a_in", &[256, 64]), ("b_in", &[256, 64])],
        reference: |m| {
            let (a, b) = (&m[0], &m[1]);
            let sel = zip_map(a, b, |x, y| if x > y { x } else { -1.0 });
            let best = sel.rows_map(|r| vec![r.iter().copied().fold(f64::NEG_INFINITY, f64::max)]);
            let low = zip_map(a, b, f64::min);
            let run = a.rows_map(|r| {
                let mut acc = 1.0;
                r.iter()
                    .map(|v| {
                        acc += 0.5 * v;
                        acc
                    })
                    .collect()
            });
            let peak = a.rows_map(|r| {
                let mut acc = f64::NEG_INFINITY;
                r.iter()
                    .map(|&v| {
                        acc = acc.max(v);
                        acc
                    })
                    .collect()
            });
            vec![sel, best, low, run, peak]
        },
        tol: SUMS,
    },
    Case {
        file: "matmul_dst.nk",
        inputs: &[("lhsT", &[256, 128]), ("rhs", &[256, 1024])],
        reference: |m| {
            let c = m[0].transpose().matmul(&m[1]);
            let relu = c.map(|v| v.max(0.0));
            vec![c, relu]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_fill.nk",
        inputs: &[("x_in", &[256, 512])],
        reference: |m| vec![m[0].map(|x| 2.0 * x + 0.5)],
        tol: EXACT,
    },
    Case {
        file: "ops_nisa.nk",
        inputs: &[("x_in", &[256, 512]), ("y_in", &[256, 512])],
        reference: |m| {
            let (x, y) = (&m[0], &m[1]);
            let blocks = x.rows / 128;
            let mut col_sum = Mat::zeros(blocks, 128);
            let mut xt = Mat::zeros(blocks * 128, 128);
            for i in 0..blocks {
                for j in 0..128 {
                    let mut s = 0.0;
                    for p in 0..128 {
                        s += x.at(i * 128 + p, j);
                        xt.set(i * 128 + j, p, x.at(i * 128 + p, j));
                    }
                    col_sum.set(i, j, s);
                }
            }
            let ex = x.map(|v| (0.5 * v).exp());
            let ex_sum = ex.rows_map(|r| vec![r.iter().sum()]);
            vec![
                col_sum,
                ex,
                ex_sum,
                zip_map(x, y, |p, q| 2.0 * p + q),
                zip_map(x, y, |p, q| (p - q).max(0.0)),
                xt,
            ]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_iota.nk",
        inputs: &[("x_in", &[256, 128])],
        reference: |m| {
            let x = &m[0];
            let mut tri = x.clone();
            let mut idx = x.clone();
            for r in 0..x.rows {
                for c in 0..x.cols {
                    let p = r % 128;
                    if p < c {
                        tri.set(r, c, -9984.0);
                    }
                    idx.set(r, c, (p * 128 + c) as f64 - 5.0 + x.at(r, c));
                }
            }
            vec![tri, idx]
        },
        tol: EXACT,
    },
    Case {
        file: "if_handle.nk",
        inputs: &[("x_in", &[256, 32]), ("bias", &[256, 32])],
        reference: |m| vec![sum(&m[0], &m[1])],
        tol: EXACT,
    },
    Case {
        file: "ops_gather.nk",
        inputs: &[("x_in", &[256, 64])],
        reference: |m| {
            let x = &m[0];
            let u = x.map(|v| v.abs() % 1.0);
            let (n, w) = (x.rows, x.cols);
            let mut rot = x.clone();
            let mut runs = Mat::zeros(n, 2 * w);
            let mut gathered = Mat::zeros(n, 128);
            for r in 0..n {
                // Row r of each quadrant takes row r - 1 of the same quadrant.
                let src = r - r % 32 + (r % 32 + 31) % 32;
                for c in 0..w {
                    rot.set(r, c, x.at(src, c));
                }
                let id = |c: usize| {
                    let v = u.at(r, c);
                    f64::from(u8::from(v > 0.25) + u8::from(v > 0.75))
                };
                for c in 0..w {
                    let start = if id(c) == 0.0 {
                        w
                    } else {
                        (0..=c)
                            .rev()
                            .take_while(|&k| id(k) == id(c))
                            .last()
                            .unwrap_or(c)
                    };
                    let end = if id(c) == 0.0 {
                        -1.0
                    } else {
                        ((c..w).take_while(|&k| id(k) == id(c)).last().unwrap_or(c) + 1) as f64
                    };
                    runs.set(r, c, start as f64);
                    runs.set(r, w + c, end);
                }
                // The k-th index of row r: row g0 + k % 16, column k / 16 of the group's indices.
                let g0 = r - r % 16;
                for k in 0..32 {
                    let at = 4.0 * (16.0 * u.at(g0 + k % 16, k / 16)).floor();
                    for e in 0..4 {
                        gathered.set(r, 4 * k + e, x.at(r, at as usize + e));
                    }
                }
            }
            let picked = Mat {
                rows: n,
                cols: 8,
                data: (0..n)
                    .flat_map(|r| {
                        let u = &u;
                        (0..8).map(move |c| x.at(r, (64.0 * u.at(r, c)).floor() as usize))
                    })
                    .collect(),
            };
            vec![rot, picked, runs, gathered, x.transpose()]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_scan.nk",
        inputs: &[("decay", &[256, 64]), ("inp", &[256, 64])],
        reference: |m| {
            let (a, b) = (&m[0], &m[1]);
            let mut h = Mat::zeros(a.rows, a.cols);
            let mut leak = Mat::zeros(a.rows, a.cols);
            for r in 0..a.rows {
                let (mut acc, mut run) = (0.0, -1.0f64);
                for c in 0..a.cols {
                    acc = a.at(r, c) * acc + b.at(r, c);
                    h.set(r, c, acc);
                    run = b.at(r, c).max(run) - a.at(r, c);
                    leak.set(r, c, run);
                }
            }
            vec![h, leak]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_bn_stats.nk",
        inputs: &[("x_in", &[256, 1024])],
        reference: |m| {
            let x = &m[0];
            let mean = x.rows_map(|row| vec![row.iter().sum::<f64>() / row.len() as f64]);
            let var = x.rows_map(|row| {
                let mu = row.iter().sum::<f64>() / row.len() as f64;
                vec![row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / row.len() as f64]
            });
            let y = x.rows_map(|row| {
                let mu = row.iter().sum::<f64>() / row.len() as f64;
                let v = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / row.len() as f64;
                row.iter().map(|x| (x - mu) / (v + 1e-5).sqrt()).collect()
            });
            vec![mean, var, y]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_loop_reduce.nk",
        inputs: &[
            ("a_t", &[256, 128]),
            ("b", &[256, 512]),
            ("x_in", &[384, 64]),
        ],
        reference: |m| {
            let (a_t, b, x) = (&m[0], &m[1], &m[2]);
            let c = a_t.transpose().matmul(b);
            let mut mx = Mat::zeros(128, x.cols);
            for r in 0..128 {
                for col in 0..x.cols {
                    let v = (0..x.rows / 128)
                        .map(|t| x.at(t * 128 + r, col))
                        .fold(-1e30, f64::max);
                    mx.set(r, col, v);
                }
            }
            let mut top = Mat::zeros(128, x.cols);
            for r in 0..128 {
                for col in 0..x.cols {
                    top.set(r, col, x.at(r, col));
                }
            }
            vec![c, mx, top.transpose()]
        },
        tol: SUMS,
    },
    Case {
        file: "ops_nisa_names.nk",
        inputs: &[("x_in", &[256, 64])],
        reference: |m| {
            let x = &m[0];
            let neg_max = x.rows_map(|row| vec![-row.iter().cloned().fold(f64::MIN, f64::max)]);
            vec![x.clone(), neg_max, x.map(|v| 1.0 / (v.abs() + 1.0))]
        },
        tol: EXACT,
    },
    Case {
        file: "py_bitwise.nk",
        inputs: &[("x_in", &[384, 64])],
        reference: |m| {
            // Tile s is scaled by ((1 << (s + 1)) >> 1) ^ (s & 1): 1, 3, 4.
            let x = &m[0];
            let mut out = Mat::zeros(x.rows, x.cols);
            for r in 0..x.rows {
                let s = (r / 128) as i64;
                let scale = (((1i64 << (s + 1)) >> 1) ^ (s & 1)) as f32;
                for c in 0..x.cols {
                    out.set(r, c, f64::from(x.at(r, c) as f32 * scale));
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
    Case {
        file: "ops_mod.nk",
        inputs: &[("x_in", &[128, 512]), ("y_in", &[128, 512])],
        reference: |m| {
            // In float32 as the kernel computes the operands; the remainders of float32 values
            // are exact in f64.
            let x = m[0].map(|v| f64::from(v as f32 * 8.0));
            let div = m[1].map(|v| {
                let v = v as f32;
                f64::from((v.abs() * 2.0 + 1.0) * v.signum())
            });
            let py_mod = |a: f64, b: f64| {
                let r = a % b;
                if r != 0.0 && (r < 0.0) != (b < 0.0) {
                    r + b
                } else {
                    r
                }
            };
            let by = |f: &dyn Fn(f64, f64) -> f64| {
                let mut out = Mat::zeros(x.rows, x.cols);
                for r in 0..x.rows {
                    for c in 0..x.cols {
                        out.set(r, c, f(x.at(r, c), div.at(r, c)));
                    }
                }
                out
            };
            vec![
                x.map(|a| py_mod(a, 3.0)),
                x.map(|a| py_mod(a, -2.5)),
                by(&py_mod),
                by(&|a, b| a % b),
            ]
        },
        tol: EXACT,
    },
];

/// The kernels of the Vector engine's scan and statistics instructions, the loop reduction and
/// the DMA transpose, on every pipeline path: `ops_scan.nk`'s loop is annotated
/// (`num_stages=2`), so `default` and `annotated` pipeline it as written, `auto` chooses, and
/// `emergent` / `none` ignore the annotation; each run is `--check`ed against the interpreter
/// and compared with the reference.
#[test]
fn scan_and_statistics_kernels_run_on_every_pipeline_path() {
    for file in ["ops_scan.nk", "ops_bn_stats.nk", "ops_loop_reduce.nk"] {
        let case = OPS_CASES
            .iter()
            .find(|c| c.file == file)
            .expect("the kernel is an ops case");
        for mode in [
            PipelineMode::Default,
            PipelineMode::Annotated,
            PipelineMode::Emergent,
            PipelineMode::None,
            PipelineMode::Auto,
        ] {
            run_case_on(case, mode, false);
        }
    }
}

/// Every corpus kernel on every pipeline path: bit-exact, equal to its reference, and never below
/// its lower bound (issue 32, item 4; [`run_case_on`] asserts the bound on every run). `default`
/// runs in the tests of each group above; this adds the two fastest paths (`emergent`, `auto`:
/// the likeliest to show a bound that counts too much), and under `NKC_BOUND_SWEEP=all`
/// (`make test-long`, release) every path and `default --peel`.
#[test]
fn every_corpus_kernel_on_every_path_stays_above_its_lower_bound() {
    use PipelineMode::*;
    let all = std::env::var("NKC_BOUND_SWEEP").is_ok_and(|v| v == "all");
    // The mask cases run on every path in their own test.
    let masks: &[Case] = if all { MASK_CASES } else { &[] };
    let cases = (CASES.iter())
        .chain(OPS_CASES)
        .chain(INDEX_CASES)
        .chain(GRID_CASES)
        .chain(masks);
    for case in cases {
        for mode in [Default, Annotated, Emergent, None, Auto] {
            if all || matches!(mode, Emergent | Auto) {
                run_case_on(case, mode, false);
            }
        }
        if all {
            run_case_on(case, Default, true);
        }
    }
}

#[test]
fn ops_kernels_run_as_written_and_match_their_references() {
    for case in OPS_CASES {
        run_case(case);
    }
}

#[test]
fn the_ops_reference_helpers_are_right() {
    assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 1e-12);
    assert!((erf(-1.5) + 0.966_105_146_475_310_7).abs() < 1e-12);
    assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-15);
    assert_eq!(left_cols(&Mat::zeros(2, 3), 1).cols, 1);
}

/// The index-vector forms: `nl.mgrid` as one value, vectors with a step, predicates of
/// `nisa.affine_select` over vectors, vectors of three axes.
const INDEX_CASES: &[Case] = &[
    Case {
        file: "gather_scatter.nk",
        inputs: &[("table", &[256, 64]), ("keys", &[64, 1])],
        // Row `p` of `gathered` (and of `copied`) is row floor((keys[p] + 1) * 128) of
        // `table` (that sum and product in f32, as the kernel computes them); `scattered` is
        // `table` with row 2p + 1 replaced by twice row `p` of `gathered`.
        reference: |m| {
            let (table, keys) = (&m[0], &m[1]);
            let mut gathered = Mat::zeros(64, 64);
            for p in 0..64 {
                let row = (((keys.at(p, 0) as f32) + 1.0f32) * 128.0f32).floor() as usize;
                for c in 0..64 {
                    gathered.set(p, c, table.at(row, c));
                }
            }
            let mut scattered = table.clone();
            for p in 0..64 {
                for c in 0..64 {
                    scattered.set(2 * p + 1, c, 2.0 * gathered.at(p, c));
                }
            }
            vec![gathered.clone(), gathered, scattered]
        },
        tol: EXACT,
    },
    Case {
        file: "index_mgrid_fields.nk",
        inputs: &[("a_in", &[256, 256]), ("b_in", &[256, 256])],
        reference: |m| {
            let out = zip_map(&m[0], &m[1], |a, b| 2.0 * a + b);
            let mut head = Mat::zeros(128, m[1].cols);
            for r in 0..128 {
                for c in 0..m[1].cols {
                    head.set(r, c, m[1].at(r, c) + 1.0);
                }
            }
            vec![out, head]
        },
        tol: EXACT,
    },
    Case {
        file: "index_iota_steps.nk",
        inputs: &[("x_in", &[128, 64])],
        reference: |m| {
            let x = &m[0];
            let f = x.cols as f64;
            let mut up_down = x.clone();
            let mut backwards = x.clone();
            for r in 0..x.rows {
                for c in 0..x.cols {
                    let (rf, cf) = (r as f64, c as f64);
                    up_down.set(r, c, x.at(r, c) + (1.0 + 2.0 * rf - cf));
                    backwards.set(r, c, x.at(r, c) + (3.0 * (f - 1.0 - cf) - rf));
                }
            }
            vec![up_down, backwards]
        },
        tol: EXACT,
    },
    Case {
        file: "index_affine_select.nk",
        inputs: &[("a_tensor", &[128, 128])],
        reference: |m| {
            let a = &m[0];
            let mut lower = a.clone();
            let mut band = a.clone();
            for r in 0..a.rows {
                for c in 0..a.cols {
                    if c >= r {
                        lower.set(r, c, -1000.0);
                    }
                    if 2 * r < c {
                        band.set(r, c, 0.0);
                    }
                }
            }
            vec![lower, band]
        },
        tol: EXACT,
    },
    Case {
        file: "index_grid_3d.nk",
        inputs: &[("x_in", &[2, 6, 6])],
        reference: |m| vec![m[0].map(|v| v * 3.0 - 1.0)],
        tol: EXACT,
    },
];

#[test]
fn index_vector_kernels_run_as_written_and_match_their_references() {
    for case in INDEX_CASES {
        run_case(case);
    }
}

// ---- Masks that drop elements: partial tiles (docs/language.md, "Masks: partial tiles") ----

/// The row maxima subtracted, times 0.5.
fn shifted_half(row: &[f64]) -> Vec<f64> {
    let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    row.iter().map(|v| (v - m) * 0.5).collect()
}

/// Rounds to bfloat16 (nearest even), as the reference of a bf16 store.
fn bf16(x: f64) -> f64 {
    let b = (x as f32).to_bits();
    let r = b.wrapping_add(0x7fff + ((b >> 16) & 1)) & 0xffff_0000;
    f64::from(f32::from_bits(r))
}

const MASK_CASES: &[Case] = &[
    Case {
        file: "mask_bn_stats.nk",
        // 700 columns: bn_stats blocks of 512 and 188 columns (the second masked).
        inputs: &[("x_in", &[256, 700]), ("gamma", &[1, 700])],
        reference: |m| {
            let (x, g) = (&m[0], &m[1]);
            let mut y = Mat::zeros(x.rows, x.cols);
            for r in 0..x.rows {
                let row: Vec<f64> = (0..x.cols).map(|c| x.at(r, c)).collect();
                let mu = row.iter().sum::<f64>() / row.len() as f64;
                let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / row.len() as f64;
                for (c, v) in row.iter().enumerate() {
                    y.set(r, c, (v - mu) / (var + 1e-5).sqrt() * g.at(0, c));
                }
            }
            vec![y]
        },
        tol: SUMS,
    },
    Case {
        file: "mask_rows.nk",
        // 300 rows: tiles of 128, 128 and 44 rows.
        inputs: &[("x_tensor", &[300, 256])],
        reference: |m| vec![m[0].rows_map(shifted_half)],
        tol: EXACT,
    },
    Case {
        file: "mask_cols.nk",
        // 1000 columns: tiles of 512 and 488 columns.
        inputs: &[("a_tensor", &[256, 1000])],
        reference: |m| vec![m[0].map(|x| x.exp() + 1.0)],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "mask_named.nk",
        // 200 rows (128 + 72) and 600 columns (256 + 256 + 88).
        inputs: &[("a_tensor", &[200, 600])],
        reference: |m| {
            let mut out = Mat::zeros(m[0].rows, 1);
            for r in 0..m[0].rows {
                let s = (0..m[0].cols).map(|c| m[0].at(r, c).powi(2)).sum::<f64>();
                out.set(r, 0, s);
            }
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "mask_pipelined.nk",
        // 5 tiles, the last of 10 rows, through a 3-stage pipeline.
        inputs: &[("x_tensor", &[522, 128])],
        reference: |m| vec![m[0].map(|x| x * sigmoid(x))],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "mask_flat_offset.nk",
        // 384 x 256 = 98,304 elements, of which the first 70,000 are added: the third tile
        // stops at row 17, column 112.
        inputs: &[("a_ptr", &[384, 256]), ("b_ptr", &[384, 256])],
        reference: |m| {
            let mut out = Mat::zeros(384, 256);
            for r in 0..384 {
                for c in 0..256 {
                    if r * 256 + c < 70000 {
                        out.set(r, c, f64::from((m[0].at(r, c) + m[1].at(r, c)) as f32));
                    }
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
    Case {
        file: "mask_loop_predicate.nk",
        // 3 row tiles in pairs: the second tile of the second pair is skipped whole.
        inputs: &[("lhsT", &[64, 384]), ("rhs", &[64, 96])],
        reference: |m| vec![m[0].transpose().matmul(&m[1]).map(f64::exp)],
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "mask_causal.nk",
        // 4 row tiles: tile i is the sum of tiles 0..=i.
        inputs: &[("x_tensor", &[512, 64])],
        reference: |m| {
            let mut out = Mat::zeros(512, 64);
            for r in 0..512 {
                for c in 0..64 {
                    let v: f64 = (0..=r / 128).map(|j| m[0].at(j * 128 + r % 128, c)).sum();
                    out.set(r, c, v);
                }
            }
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "if_loop_guard.nk",
        // 4 row tiles: tile i adds tiles 1..=i and half of each other tile, negated; the last
        // tile doubled.
        inputs: &[("x_tensor", &[512, 64])],
        reference: |m| {
            let mut out = Mat::zeros(512, 64);
            for r in 0..512 {
                for c in 0..64 {
                    let v: f64 = (0..4)
                        .map(|j| {
                            let x = m[0].at(j * 128 + r % 128, c);
                            if j >= 1 && j <= r / 128 {
                                x
                            } else {
                                -0.5 * x
                            }
                        })
                        .sum();
                    out.set(r, c, if r / 128 == 3 { 2.0 * v } else { v });
                }
            }
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "mask_nd_free.nk",
        // [128, 8, 8] in blocks of [128, 4, 8]: rows 0..5 and columns 0..6 of each plane.
        inputs: &[("x_tensor", &[128, 8, 8])],
        reference: |m| {
            let mut out = Mat::zeros(128 * 8, 8);
            for r in 0..128 * 8 {
                for c in 0..8 {
                    if r % 8 < 5 && c < 6 {
                        out.set(r, c, m[0].at(r, c).exp());
                    }
                }
            }
            vec![out]
        },
        tol: TRANSCENDENTAL,
    },
    Case {
        file: "mask_bf16.nk",
        inputs: &[("a_tensor", &[130, 64]), ("b_tensor", &[130, 64])],
        // The product is rounded to bfloat16, then the sum.
        reference: |m| vec![zip_map(&m[0], &m[1], |a, b| bf16(bf16(a * b) + a))],
        tol: (1e-2, 1e-2),
    },
];

/// PSUM written by the Vector engine (a split reduction's `+=` and `*=` into a PSUM tile) and
/// Tensor-engine results assigned into SBUF (an implicit copy from a PSUM temporary).
const PSUM_CASES: &[Case] = &[
    Case {
        file: "psum_split_reduce.nk",
        // 600 columns: chunks of 256, 256 and 88.
        inputs: &[("a_tensor", &[256, 600])],
        reference: |m| {
            let mut out = Mat::zeros(m[0].rows, 1);
            for r in 0..m[0].rows {
                let s = (0..m[0].cols).map(|c| m[0].at(r, c).powi(2)).sum::<f64>();
                out.set(r, 0, 0.5 * s);
            }
            vec![out]
        },
        tol: SUMS,
    },
    Case {
        file: "transpose_into_sbuf.nk",
        inputs: &[("x_tensor", &[128, 512])],
        reference: |m| {
            let mut out = Mat::zeros(128, 512);
            for p in 0..128 {
                for j in 0..4 {
                    for f in 0..128 {
                        out.set(p, j * 128 + f, 2.0 * bf16(m[0].at(f, j * 128 + p)));
                    }
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
    Case {
        file: "psum_back_off.nk",
        inputs: &[
            ("x_tensor", &[2048, 128]),
            ("g_tensor", &[16, 64, 64]),
            ("h_tensor", &[16, 64, 512]),
        ],
        reference: |m| {
            let mut prod = Mat::zeros(16 * 64, 512);
            for b in 0..16 {
                for r in 0..64 {
                    for c in 0..512 {
                        let s: f64 = (0..64)
                            .map(|k| m[1].at(b * 64 + k, r) * m[2].at(b * 64 + k, c))
                            .sum();
                        prod.set(b * 64 + r, c, s);
                    }
                }
            }
            vec![m[0].transpose(), prod]
        },
        tol: SUMS,
    },
    Case {
        file: "psum_phases.nk",
        inputs: &[
            ("x_t", &[128, 256]),
            ("w", &[128, 4096]),
            ("u", &[128, 128]),
        ],
        reference: |m| {
            let h = m[0].transpose().matmul(&m[1]);
            let head = h.rows_map(|r| {
                let mu = mean(r);
                r[..128].iter().map(|v| v - mu).collect()
            });
            vec![head.matmul(&m[2].transpose())]
        },
        // Sums of 128 products of values near 6: absolute errors near 1e-4.
        tol: (1e-3, 1e-4),
    },
];

#[test]
fn psum_kernels_run_on_every_path_and_match_their_references() {
    use PipelineMode::*;
    for case in PSUM_CASES {
        for mode in [Default, Annotated, Emergent, None, Auto] {
            run_case_on(case, mode, false);
        }
    }
}

#[test]
fn mask_kernels_run_on_every_path_and_match_their_references() {
    use PipelineMode::*;
    for case in MASK_CASES {
        for mode in [Default, Annotated, Emergent, None, Auto] {
            run_case_on(case, mode, false);
        }
        run_case_on(case, Default, true);
        run_case_on(case, Annotated, true);
    }
}

/// `psum_phases.nk`: a block loop whose first PSUM tile takes all eight banks and is consumed
/// before the block's two other PSUM tiles are written. It fits only with the allocator's exact
/// live ranges (the widened ones need 10 banks at once); every path, peeled or not, is bit-exact.
#[test]
fn a_psum_tile_consumed_per_iteration_shares_banks_on_every_path() {
    use PipelineMode::*;
    let case = PSUM_CASES
        .iter()
        .find(|c| c.file == "psum_phases.nk")
        .expect("the kernel is a PSUM case");
    for mode in [Default, Annotated, Emergent, None, Auto] {
        for peel in [false, true] {
            run_case_on(case, mode, peel);
        }
    }
}

// ---- What public NKI kernels write that nkc once refused (issue 32): a scalar stored into HBM,
// numpy scalar constructors inside operations, an optional tensor parameter given an array. ----
const PUBLIC_CASES: &[Case] = &[
    Case {
        // Row block b (128 rows): the input plus one when b is even, 7 when it is odd.
        file: "store_scalar.nk",
        inputs: &[("in_tensor", &[512, 96])],
        reference: |m| {
            let mut out = m[0].map(|v| v + 1.0);
            for r in 0..out.rows {
                if (r / 128) % 2 == 1 {
                    for c in 0..out.cols {
                        out.set(r, c, 7.0);
                    }
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
    Case {
        file: "np_scalar_ctor.nk",
        inputs: &[("x", &[256, 40])],
        reference: |m| vec![m[0].map(|v| (0.5 * v + 1.25).max(-1.0))],
        tol: EXACT,
    },
    Case {
        file: "optional_tensor.nk",
        inputs: &[("x", &[128, 24]), ("bias", &[128, 1])],
        reference: |m| {
            let (x, b) = (&m[0], &m[1]);
            let mut out = x.map(|v| 2.0 * v);
            for r in 0..out.rows {
                for c in 0..out.cols {
                    out.set(r, c, out.at(r, c) + b.at(r, 0));
                }
            }
            vec![out]
        },
        tol: EXACT,
    },
];

#[test]
fn public_constructs_run_as_written_and_match_their_references() {
    for case in PUBLIC_CASES {
        run_case(case);
    }
}
