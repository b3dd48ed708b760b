//! The modes of an indirect DMA (`nisa.dma_copy`'s `oob_mode=` and `dst_rmw_op=`;
//! `frontend/src/check/dma_modes.rs`), judged against naive references computed here from the
//! kernels' inputs: a gather or scatter with `oob_mode.skip` moves nothing for an index outside
//! the rows (negative ones included), an accumulating scatter adds each row to the row it names,
//! equal indices adding up in partition order. The interpreter is judged here; that the simulator
//! reproduces its bits on every path is `tests/backend.rs`'s corpus test.

mod common;

use common::interpret_good as run;
use nkc::driver::{self, Source};
use penguin::interp::Array;

fn row(a: &Array, r: usize) -> &[f32] {
    let c = a.shape[1];
    &a.data[r * c..(r + 1) * c]
}

#[test]
fn a_skipping_gather_leaves_the_rows_of_out_of_range_indices() {
    let (inp, out) = run("indirect_skip.nk", "gather_skip_rows", 5);
    let (table, keys) = (&inp[0], &inp[1]);
    let (mut skipped, mut negative) = (0, 0);
    for p in 0..120 {
        let idx = (keys.data[p] * 160.0).floor() as i64;
        let got = row(&out[0], p);
        if (0..150).contains(&idx) {
            let want: Vec<f32> = row(table, idx as usize).iter().map(|v| v * 3.0).collect();
            assert_eq!(got, &want[..], "row {p} gathers row {idx}");
        } else {
            assert!(got.iter().all(|&v| v == -6.0), "row {p} (index {idx}) kept");
            skipped += 1;
            negative += usize::from(idx < 0);
        }
    }
    assert!(
        skipped > 10 && negative > 0,
        "{skipped} skipped, {negative} negative"
    );
}

#[test]
fn a_skipping_scatter_writes_only_the_rows_in_range() {
    let (inp, out) = run("indirect_skip.nk", "scatter_skip_rows", 6);
    let (x, base) = (&inp[0], &inp[1]);
    for r in 0..70 {
        let got = row(&out[0], r);
        // Row 3p - 20 for p in 7..30; the other rows are `base`'s.
        if r % 3 == 1 {
            let p = (r + 20) / 3;
            let want: Vec<f32> = row(x, p).iter().map(|v| v.exp()).collect();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-6 * w.abs(), "row {r}: {g} against {w}");
            }
        } else {
            assert_eq!(got, row(base, r), "row {r} is not written");
        }
    }
}

#[test]
fn an_accumulating_scatter_adds_equal_indices_in_partition_order() {
    let (inp, out) = run("indirect_add.nk", "scatter_add_pairs", 7);
    let (x, keys, acc) = (&inp[0], &inp[1], &inp[2]);
    let mut want = acc.data.clone();
    let mut hits = [0usize; 40];
    for p in 0..128 {
        let idx = ((keys.data[p] + 1.0) * 20.0).floor() as usize;
        hits[idx] += 1;
        for c in 0..56 {
            want[idx * 56 + c] += x.data[p * 56 + c];
        }
    }
    assert!(
        hits.iter().any(|&h| h > 2),
        "some row takes several additions"
    );
    assert_eq!(out[0].data, want);
}

#[test]
fn an_accumulating_scatter_rounds_each_sum_to_bf16() {
    let (inp, out) = run("indirect_add.nk", "scatter_add_bf16", 8);
    let x = &inp[0];
    let bf16 = |v: f32| {
        let b = v.to_bits();
        f32::from_bits(((b + 0x7fff + ((b >> 16) & 1)) >> 16) << 16)
    };
    for r in 0..128 {
        let got = row(&out[0], r);
        if r % 4 == 3 {
            let p = r / 4;
            let want: Vec<f32> = row(x, p).iter().map(|&v| bf16(1.0 + v * 0.01)).collect();
            assert_eq!(got, &want[..], "row {r}");
        } else {
            assert!(got.iter().all(|&v| v == 1.0), "row {r} keeps its ones");
        }
    }
}

/// `reduce_cmd=nisa.reduce_cmd.reduce` (`frontend/src/check/acc_register.rs`): a scan continues
/// from the last value of the scan just before, here over three 40-column pieces; the running
/// sum of `0.5 x` over all 120 columns, in float32 left to right. (Before, the call was refused.)
#[test]
fn a_continued_scan_starts_from_the_last_value_of_the_one_before() {
    let (inp, out) = run("scan_continued.nk", "running_sum_three_pieces", 9);
    let x = &inp[0];
    for p in 0..96 {
        let mut acc = 0f32;
        for c in 0..120 {
            acc += x.data[p * 120 + c] * 0.5;
            assert_eq!(out[0].data[p * 120 + c], acc, "[{p}, {c}]");
        }
    }
}

/// A continuation inside a loop body: a running maximum from a loaded start over the first half
/// of each block, continued over the second half.
#[test]
fn a_continued_scan_in_a_loop_continues_within_the_iteration() {
    let (inp, out) = run("scan_continued.nk", "running_max_blocks", 10);
    let (x, start) = (&inp[0], &inp[1]);
    for b in 0..4 {
        for p in 0..64 {
            let mut m = start.data[p];
            for c in 0..200 {
                let r = b * 64 + p;
                m = m.max(x.data[r * 200 + c]);
                assert_eq!(out[0].data[r * 200 + c], m, "block {b} [{p}, {c}]");
            }
        }
    }
}

/// A scan under a condition of loop indices runs only in some iterations: the registers after
/// it are not known, so a continuation after the branch is refused (E0199), not guessed.
#[test]
fn a_continuation_after_a_guarded_scan_is_refused() {
    let dir = std::env::temp_dir().join(format!("nkc-acc-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("k.nk");
    std::fs::write(
        &f,
        "def k(x: nl.hbm[nl.float32, 256, 64]):\n\
         \x20   out = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   for i in nl.affine_range(2):\n\
         \x20       t = nl.load(x[i * 128:(i + 1) * 128, :])\n\
         \x20       s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)\n\
         \x20       nisa.memset(dst=s, value=0.0)\n\
         \x20       if i < 1:\n\
         \x20           nisa.tensor_scalar_cumulative(dst=s[:, 0:32], src=t[:, 0:32], op0=nl.add, op1=nl.add, imm0=0.0)\n\
         \x20       nisa.tensor_scalar_cumulative(dst=s[:, 32:64], src=t[:, 32:64], op0=nl.add, op1=nl.add, imm0=0.0, reduce_cmd=nisa.reduce_cmd.reduce)\n\
         \x20       nl.store(out[i * 128:(i + 1) * 128, :], value=s)\n\
         \x20   return out\n",
    )
    .unwrap();
    let src = Source::read(&f).unwrap();
    match driver::compile(&src, Some("k")) {
        Err(nkc::driver::Failure::Diagnostics(d)) => {
            assert!(d.iter().any(|e| e.code == "E0199"), "{d:?}")
        }
        other => panic!("expected E0199, got {:?}", other.map(|_| ())),
    }
}
