//! Forms of NKI that public kernels from other repositories write and nkc refused before
//! (checked with main's binary), judged against references computed here from the kernels'
//! inputs (`tests/good/traced_index.nk`, `tests/good/computed_reshape.nk`):
//! - a compile-time int bound before a loop and rebound in its body from the loop indices
//!   (`idx = r * 6 + c` after `idx = 0`, `check/stmts.rs` `may_bind`): NKI traces the body once,
//!   so it is a name of the body; after the loop the name is unbound (`check/hw_loops.rs`);
//! - an HBM-to-HBM `nisa.dma_copy` whose source is a reshaped view of a parameter
//!   (`check/dst.rs` `names_hbm`);
//! - a reduction over the last axis of an on-chip array allocated with 3 dimensions
//!   (`check/patterns_nd.rs` `shaped_as_pattern`);
//! - `.reshape(...)` of a value that is not a name (`nl.max(g, axis=2).reshape(...)`,
//!   `check/reshape.rs` `reshape_computed`), and the diagnostic for a part of an HBM tensor;
//! - `nisa.dma_transpose(dst, src)` from SBUF to SBUF (`check/ops.rs`,
//!   `tests/good/sbuf_transposes.nk`);
//! - Python of a kernel file: a helper `def` given again (the last one is the name's,
//!   `check/mod.rs`), a kernel's `**kwargs` bound from `--arg` (`check/signature.rs`), a
//!   subscript by a tuple value holding `slice(None)` and `None` (`check/residualise.rs`), and a
//!   nested tuple given to `--arg` (`frontend/src/lib.rs` `ScalarArg::parse`).
//!
//! That the simulator reproduces the interpreter's bits on every path is `tests/backend.rs`'s
//! corpus test.

mod common;

use common::{interpret_good as run, near, nkc, scratch, scratch_kernel, stderr};

#[test]
fn an_index_rebound_in_a_loop_body_takes_each_iterations_value() {
    let (inp, out) = run("traced_index.nk", "gathered_columns", 7);
    let (x, b) = (&inp[0], &inp[1]);
    for p in 0..96 {
        for r in 0..4 {
            for c in 0..6 {
                let want = 2.0 * x.data[p * 40 + r * 9 + c + 3] as f64;
                near(
                    out[0].data[p * 24 + r * 6 + c],
                    want,
                    &format!("y[{p}, {}]", r * 6 + c),
                );
            }
        }
    }
    // The reshaped view's item 1 is the rows 2 and 3 of the parameter.
    for i in 0..2 * 48 {
        near(
            out[1].data[i],
            b.data[2 * 48 + i] as f64,
            &format!("rows[{i}]"),
        );
    }
}

#[test]
fn a_reduction_over_the_last_axis_of_a_3d_array_reshaped_as_a_value() {
    let (inp, out) = run("computed_reshape.nk", "pooled_triples", 8);
    let x = &inp[0];
    for row in 0..224 {
        for k in 0..20 {
            let want = (0..3)
                .map(|j| x.data[row * 60 + 3 * k + j])
                .fold(f32::NEG_INFINITY, f32::max);
            near(
                out[0].data[row * 20 + k],
                want as f64,
                &format!("out[{row}, {k}]"),
            );
        }
    }
}

#[test]
fn an_index_rebound_in_a_loop_body_is_unbound_after_the_loop() {
    let f = scratch_kernel(
        "wild_gaps",
        "after_loop",
        "\
def k(x: nl.hbm[nl.float32, 128, 64]):
    o = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    idx = 0
    for i in nl.affine_range(4):
        idx = i * 16
    nl.store(o, value=nl.copy(t[:, idx]))
    return o
",
    );
    let o = nkc(&["check", &f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E0101") && err.contains("`idx`") && err.contains("7:"),
        "{err}"
    );
}

#[test]
fn a_reshape_of_a_part_of_an_hbm_tensor_is_refused_with_a_span() {
    let f = scratch_kernel(
        "wild_gaps",
        "hbm_part",
        "\
def k(x: nl.hbm[nl.float32, 256, 64]):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    v = x.reshape((2, 128, 64))
    for b in nl.affine_range(2):
        w = v[b].reshape((64, 128))
        nl.store(o, value=nl.load(w))
    return o
",
    );
    let o = nkc(&["check", &f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E0233") && err.contains("a part of `x`") && err.contains("5:"),
        "{err}"
    );
}

const PADDED_COPY: &str = "\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

def widen(n, d):
    return n

@nki.jit
def padded_copy(x, **kwargs):
    lo, hi = kwargs['padding'][1]
    rows, cols = x.shape
    width = widen(cols, lo + hi)
    out = nl.ndarray((rows, width), dtype=x.dtype, buffer=nl.shared_hbm)
    access = [slice(None, None, None), None]
    i_p = nl.arange(rows)[tuple(access)]
    i_f = nl.arange(cols)[None, :]
    t = nl.load(x[i_p, i_f])
    z = nl.zeros((rows, width), dtype=x.dtype, buffer=nl.sbuf)
    z[i_p, lo + i_f] = nl.multiply(t, 3.0)
    nl.store(out, value=z)
    return out

def widen(n, d):
    return n + d
";

#[test]
fn kwargs_a_tuple_subscript_and_a_helper_defined_again_follow_python() {
    let f = scratch_kernel("wild_gaps", "padded_copy", PADDED_COPY);
    let dir = scratch("wild_gaps", "padded_copy_io");
    let (x_path, out_dir) = (dir.join("x.npy"), dir.join("out"));
    let data = (0..96 * 40).map(|i| (i % 97) as f32 - 48.0).collect();
    let x = penguin::interp::Array::new(vec![96, 40], data);
    nkc::npy::write_npy(&x_path, &x).expect("the scratch directory is writable");
    let input = format!("x={}", x_path.display());
    let o = nkc(&[
        "run",
        &f,
        "--kernel",
        "padded_copy",
        "--input",
        &input,
        "--arg",
        "padding=((0, 0), (1, 2))",
        "--check",
        "--output",
        out_dir.to_str().expect("UTF-8 temporary path"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = nkc::npy::read_npy(&out_dir.join("out.npy")).expect("nkc wrote the output");
    // The second `widen` (n + d): 40 + 1 + 2 columns, the input at column 1, zeros around it.
    assert_eq!(out.shape, vec![96, 43]);
    for r in 0..96 {
        for c in 0..43 {
            let want = if (1..41).contains(&c) {
                3.0 * x.data[r * 40 + c - 1] as f64
            } else {
                0.0
            };
            near(out.data[r * 43 + c], want, &format!("out[{r}, {c}]"));
        }
    }
}

#[test]
fn a_dma_transpose_between_sbuf_tiles_transposes_each_block() {
    let (inp, out) = run("sbuf_transposes.nk", "block_transposes", 9);
    let x = &inp[0];
    for j in 0..3 {
        for p in 0..96 {
            for q in 0..96 {
                let want = x.data[q * 288 + j * 96 + p] as f64;
                near(
                    out[0].data[p * 288 + j * 96 + q],
                    want,
                    &format!("o[{p}, {}]", j * 96 + q),
                );
            }
        }
    }
}
