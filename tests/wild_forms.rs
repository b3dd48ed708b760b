//! Forms of NKI that public kernels from other repositories write (`tests/good/wild_forms.nk`),
//! judged against references computed here from the kernels' inputs: Python's `min` of an
//! `nl.affine_range` index and a list item assigned at one (the loop traced once per index,
//! `check/eval_expr.rs` `needs_value`, `check/py_access.rs` `setitem`; its index name taken
//! again by a device loop, `check/hw_loops.rs`), `.ap(pattern=...,
//! offset=...)` of an HBM tensor over its flat elements with a loop-dependent offset
//! (`frontend/src/check/hbm_ap.rs`), a bound window of a 4-D HBM tensor subscripted again
//! (`check/hbm_view.rs`), `dst=nl.ndarray(...)` written inline (`check/dst.rs`) and a tile of
//! one dimension (`check/memory_ops.rs` `shape_of`). Each kernel
//! is refused by nkc before these (checked with main's binary). That the simulator
//! reproduces the interpreter's bits on every path is `tests/backend.rs`'s corpus test.

mod common;

use common::{interpret_good as run, near};

#[test]
fn a_ragged_tile_sized_by_min_of_the_loop_index_covers_every_row() {
    let (inp, out) = run("wild_forms.nk", "ragged_rows_min", 5);
    let x = &inp[0];
    for r in 0..300 {
        let mut sum = 0.0f64;
        for c in 0..48 {
            let u = x.data[r * 48 + c] * 2.0 + 1.0;
            near(out[0].data[r * 48 + c], u as f64, &format!("y[{r}, {c}]"));
            sum += u as f64;
        }
        near(out[1].data[r], sum, &format!("sums[{r}]"));
    }
}

#[test]
fn an_hbm_ap_at_a_loop_offset_reads_flat_elements_onto_partitions() {
    let (inp, out) = run("wild_forms.nk", "flat_rows_ap", 6);
    let x = &inp[0];
    for h in 0..6 {
        for p in 0..128 {
            let want = x.data[h * 128 + p] * 3.0;
            near(
                out[0].data[h * 128 + p],
                want as f64,
                &format!("cols[{h}, {p}]"),
            );
        }
    }
    for h in 0..5 {
        for p in 0..128 {
            let want = x.data[h * 128 + p] as f64 + x.data[(h + 1) * 128 + p] as f64;
            near(out[1].data[h * 128 + p], want, &format!("pairs[{h}, {p}]"));
        }
    }
}

#[test]
fn a_bound_window_of_a_4d_tensor_is_subscripted_along_its_own_dimensions() {
    let (inp, out) = run("wild_forms.nk", "window_of_window", 7);
    let x = &inp[0];
    let at = |b: usize, c: usize, h: usize, w: usize| x.data[((b * 256 + c) * 10 + h) * 12 + w];
    for b in 0..2 {
        for c in 0..256 {
            for r in 0..8 {
                for w in 0..10 {
                    let want = at(b, c, 1 + r, 2 + w) + 1.0;
                    let got = out[0].data[((b * 256 + c) * 8 + r) * 10 + w];
                    near(got, want as f64, &format!("out[{b}, {c}, {r}, {w}]"));
                }
            }
            for w in 0..10 {
                let got = out[1].data[(b * 256 + c) * 10 + w];
                near(
                    got,
                    at(b, c, 6, 2 + w) as f64,
                    &format!("row5[{b}, {c}, {w}]"),
                );
            }
        }
    }
}

#[test]
fn an_inline_ndarray_destination_is_a_fresh_tile() {
    let (inp, out) = run("wild_forms.nk", "sum_squares_inline_dst", 8);
    let x = &inp[0];
    for r in 0..384 {
        let want: f64 = (0..96).map(|c| (x.data[r * 96 + c] as f64).powi(2)).sum();
        let got = out[0].data[r] as f64;
        assert!(
            (got - want).abs() <= 1e-4 * want.max(1.0),
            "sums[{r}]: {got} against {want}"
        );
    }
}

#[test]
fn list_items_assigned_in_a_device_loop_hold_one_tile_each() {
    let (inp, out) = run("wild_forms.nk", "listed_columns", 9);
    let x = &inp[0];
    for k in 0..4 {
        for p in 0..128 {
            let want = x.data[k * 128 + p] as f64 + x.data[(3 - k) * 128 + p] as f64;
            near(out[0].data[k * 128 + p], want, &format!("out[{k}, {p}]"));
            let want = x.data[k * 128 + p] as f64 * 2.0;
            near(out[1].data[k * 128 + p], want, &format!("twice[{k}, {p}]"));
        }
    }
}

#[test]
fn a_one_dimensional_tile_holds_one_element_per_partition() {
    let (inp, out) = run("wild_forms.nk", "bias_rows_1d", 10);
    let (x, b) = (&inp[0], &inp[1]);
    for r in 0..256 {
        for c in 0..64 {
            let want = x.data[r * 64 + c] + b.data[r];
            near(
                out[0].data[r * 64 + c],
                want as f64,
                &format!("out[{r}, {c}]"),
            );
        }
    }
}
