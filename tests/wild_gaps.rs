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
//!   `check/reshape.rs` `reshape_computed`), and the diagnostic for a part of an HBM tensor.
//!
//! That the simulator reproduces the interpreter's bits on every path is `tests/backend.rs`'s
//! corpus test.

mod common;

use common::{interpret_good as run, near, nkc, scratch_kernel, stderr};

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
