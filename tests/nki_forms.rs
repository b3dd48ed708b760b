//! Forms of NKI that public kernels use, judged against references computed here from the
//! kernels' inputs (`tests/good`): vectors moved as NKI's tiles of them
//! (`frontend/src/check/vector_column.rs`), NKI's positional `nisa.dma_copy(dst, src)` /
//! `nisa.memset(t, v)` (`frontend/src/check/dst.rs`), reshaped on-chip tiles
//! (`frontend/src/check/tile_reshape.rs`) reduced over some of their axes, a compile-time int
//! rebound in a device loop (traced once), a one-line `if ...: break` and a contraction split
//! over two loops into one PSUM tile (`frontend/src/check/hw_loops.rs`). The interpreter is
//! judged here; that the simulator reproduces its bits on every path is `tests/backend.rs`'s
//! corpus test.

mod common;

use common::{interpret_good as run, near};

#[test]
fn a_loaded_vector_slice_puts_one_element_on_each_partition() {
    let (inp, out) = run("vector_columns.nk", "bias_scale_rows", 3);
    let (x, bias, scale) = (&inp[0], &inp[1], &inp[2]);
    for r in 0..288 {
        let mut sum = 0.0f64;
        for c in 0..40 {
            let u = (x.data[r * 40 + c] + bias.data[r]) * scale.data[r];
            near(out[0].data[r * 40 + c], u as f64, &format!("y[{r}, {c}]"));
            sum += u as f64;
        }
        // The row sum of row r lands at element r of the vector `sums`.
        near(out[1].data[r], sum, &format!("sums[{r}]"));
    }
}

#[test]
fn a_whole_vector_copies_into_a_column_and_a_row_alike() {
    let (inp, out) = run("vector_columns.nk", "whole_vector_column", 4);
    let v = &inp[0];
    for i in 0..64 {
        assert_eq!(out[0].data[i], 2.0 * v.data[i], "out[{i}]");
        assert_eq!(out[1].data[i], v.data[i], "row_out[0, {i}]");
    }
}

#[test]
fn positional_dma_copy_and_memset_take_the_destination_first() {
    let (inp, out) = run("positional_dst.nk", "blocked_positional", 5);
    let (lhs_t, rhs) = (&inp[0], &inp[1]);
    for m in 0..192 {
        for n in 0..320 {
            let want = product(&lhs_t.data, &rhs.data, 256, m, n, 192, 320);
            let got = out[0].data[m * 320 + n];
            assert!(
                (got as f64 - want).abs() <= 1e-3,
                "out[{m}, {n}]: {got} against {want}"
            );
        }
    }
}

#[test]
fn a_reshaped_tile_pools_over_its_window_axes_and_reduces_one_axis_alone() {
    let (inp, out) = run("tile_reshapes.nk", "pool_blocks", 6);
    let (x, bias) = (&inp[0], &inp[1]);
    for p in 0..96 {
        for k in 0..4 {
            for i in 0..6 {
                let mut row = f32::NEG_INFINITY;
                for j in 0..5 {
                    let mut m = f32::NEG_INFINITY;
                    for (di, dj) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        m = m.max(x.data[p * 480 + k * 120 + (2 * i + di) * 10 + 2 * j + dj]);
                    }
                    let want = m + bias.data[p];
                    assert_eq!(
                        out[0].data[p * 120 + k * 30 + i * 5 + j],
                        want,
                        "pooled[{p}, {k}, {i}, {j}]"
                    );
                    row = row.max(want);
                }
                // `axis=-1` of the (96, 6, 5) view: the maximum of one row of 5, not of all 30.
                assert_eq!(
                    out[1].data[p * 24 + k * 6 + i],
                    row,
                    "rowmax[{p}, {k}, {i}]"
                );
            }
        }
    }
}

#[test]
fn a_reshaped_psum_product_sums_rows_and_a_rebound_int_is_traced_once() {
    let (inp, out) = run("tile_reshapes.nk", "psum_rows", 7);
    let (a, b) = (&inp[0], &inp[1]);
    // `rows = rows // 2` runs once (4 to 2): each block stores 2 * 2 = 4 columns.
    for h in 0..2 {
        for m in 0..32 {
            for r in 0..4 {
                let want: f64 = (r * 32..(r + 1) * 32)
                    .map(|n| {
                        (0..128)
                            .map(|k| {
                                a.data[k * 64 + h * 32 + m] as f64 * b.data[k * 256 + n] as f64
                            })
                            .sum::<f64>()
                    })
                    .sum();
                let got = out[0].data[(h * 32 + m) * 4 + r];
                assert!(
                    (got as f64 - want).abs() <= 1e-3,
                    "out[{}, {r}]: {got} against {want}",
                    h * 32 + m
                );
            }
        }
    }
}

/// `out[m, n] = sum_k lhs_t[k, m] * rhs[k, n]` over `k < kk`, with the row lengths given.
fn product(lhs_t: &[f32], rhs: &[f32], kk: usize, m: usize, n: usize, ms: usize, ns: usize) -> f64 {
    (0..kk)
        .map(|k| lhs_t[k * ms + m] as f64 * rhs[k * ns + n] as f64)
        .sum()
}

#[test]
fn a_contraction_split_over_two_loops_sums_over_both() {
    // Before the accumulation group spanned the loops around the matmuls, `acc` was zeroed
    // before the inner loop, in every iteration of `k1`: the result was the last k1's half.
    for (kernel, seed, kk, m, n) in [
        ("split_contraction", 7, 384, 96, 400),
        ("split_blocks", 8, 256, 32, 1024),
    ] {
        let (inp, out) = run("psum_split_groups.nk", kernel, seed);
        let (lhs_t, rhs) = (&inp[0].data, &inp[1].data);
        for i in 0..m {
            for j in 0..n {
                let want = product(lhs_t, rhs, kk, i, j, m, n);
                let got = out[0].data[i * n + j];
                assert!(
                    (got as f64 - want).abs() <= 1e-3,
                    "{kernel}: out[{i}, {j}]: {got} against {want}"
                );
            }
        }
    }
}
