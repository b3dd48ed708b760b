//! Values of more than 2 axes as public conv + maxpool kernels write them
//! (`tests/good/nd_values.nk`), judged against references computed here from the kernels'
//! inputs:
//! - `nl.broadcast_to` of a `[P, 1, 1]` column, and of a `[1, 1]` tile, to a 3-D shape
//!   (`check/broadcast_to_nd.rs`);
//! - a window of a 5-axis index grid whose pool axes have one element (`(j_1 + j_3) * 20` with
//!   `j_3 = nl.arange(1)[None, None, :, None, None]`): the value keeps that axis, so
//!   `axis=[2, 4]` names the axes the kernel means (`check/patterns.rs` `pattern_tile`);
//! - a comparison of two index expressions bound to a name, given to `nisa.affine_select`
//!   (`check/deferred_preds.rs`; main: E0206 at the binding, then E0199 at the call), and the
//!   same name given as `mask=`: E0206 at its comparison;
//! - `.shape` of the result of `nisa.tensor_scalar` on a declared 3-D tile: its 3 axes
//!   (`check/py_access.rs`, `keep_shape`).
//!
//! Each kernel is refused by main's binary (`nkc-m14`: E0172 "this shape has 3", E0125
//! "axis 4 is not a free axis of this 3-axis value", E0199 "3 names to unpack, but the value
//! has 2"). That the simulator reproduces the interpreter's bits on every path is
//! `tests/backend.rs`'s corpus test.

mod common;

use common::{interpret_good as run, near, nkc, scratch_kernel, stderr};

#[test]
fn a_bias_column_broadcast_to_3d_is_added_to_a_pooled_window() {
    let (inp, out) = run("nd_values.nk", "bias_pool_blocks", 11);
    let (x, b) = (&inp[0], &inp[1]);
    let at = |p: usize, i: usize| x.data[p * 240 + i] as f64;
    for p in 0..96 {
        for h in 0..2 {
            for a in 0..3 {
                for c in 0..10 {
                    let mut m = f64::NEG_INFINITY;
                    for dy in 0..2 {
                        for dx in 0..2 {
                            m = m.max(at(p, h * 120 + (a * 2 + dy) * 20 + c * 2 + dx));
                        }
                    }
                    let got = out[0].data[((p * 2 + h) * 3 + a) * 10 + c];
                    near(
                        got,
                        m + b.data[p] as f64,
                        &format!("pooled[{p}, {h}, {a}, {c}]"),
                    );
                }
            }
        }
    }
}

#[test]
fn a_window_axis_of_one_element_keeps_its_place_in_the_reduced_axes() {
    let (inp, out) = run("nd_values.nk", "bias_pool_blocks", 12);
    let x = &inp[0];
    let at = |p: usize, i: usize| x.data[p * 240 + i] as f64;
    for p in 0..96 {
        for h in 0..2 {
            for r in 0..6 {
                for c in 0..10 {
                    let i = h * 120 + r * 20 + 2 * c;
                    let got = out[1].data[((p * 2 + h) * 6 + r) * 10 + c];
                    near(
                        got,
                        at(p, i).max(at(p, i + 1)),
                        &format!("pairs[{p}, {h}, {r}, {c}]"),
                    );
                }
            }
        }
    }
}

#[test]
fn the_shape_of_a_computed_3d_tile_sizes_its_windows() {
    let (inp, out) = run("nd_values.nk", "shaped_scalar_pool", 13);
    let (x, b, r) = (&inp[0], &inp[1], &inp[2]);
    for n in 0..3 {
        for p in 0..64 {
            let t = |k: usize, w: usize| x.data[(n * 64 + p) * 72 + k * 18 + w] + b.data[p];
            for a in 0..2 {
                for c in 0..6 {
                    let mut m = f32::NEG_INFINITY;
                    for i in 0..2 {
                        for j in 0..3 {
                            m = m.max(t(2 * a + i, 3 * c + j));
                        }
                    }
                    let want = m as f64 * r.data[0] as f64;
                    let got = out[0].data[(n * 64 + p) * 12 + a * 6 + c];
                    near(got, want, &format!("out[{n}, {p}, {}]", a * 6 + c));
                }
            }
        }
    }
}

#[test]
fn a_named_triangle_predicate_selects_in_affine_select() {
    let (inp, out) = run("nd_values.nk", "named_triangle", 14);
    let x = &inp[0];
    for i in 0..3 {
        for p in 0..128 {
            for f in 0..96 {
                let r = i * 128 + p;
                let kept = if p + 16 >= 2 * f {
                    x.data[r * 96 + f]
                } else {
                    -5.0
                };
                let want = kept as f64 * (i + 1) as f64;
                near(out[0].data[r * 96 + f], want, &format!("out[{r}, {f}]"));
            }
        }
    }
}

/// A named triangle given as `mask=` is the triangle mask nkc refuses, reported at the
/// comparison (its binding), as when it is written in the call.
#[test]
fn a_named_triangle_as_a_mask_is_refused_at_its_comparison() {
    let f = scratch_kernel(
        "nd_values",
        "triangle_mask",
        "\
def k(x: nl.hbm[nl.float32, 128, 64]):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    below = i_p >= i_f
    t = nl.load(x)
    nl.store(o, value=nl.exp(t, mask=below))
    return o
",
    );
    let o = nkc(&["check", &f]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("error[E0206]"), "{err}");
    assert!(
        err.contains("compares index vectors against each other"),
        "{err}"
    );
    assert!(err.contains(":4:13"), "the comparison's span: {err}");
}
