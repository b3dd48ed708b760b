//! NKI features that public kernels use and nkc lacked: a `mask=` on the free index of the
//! row operations (`max8`, `nc_find_index8`, `nc_match_replace8`), integer output dtypes
//! written as such, names bound by a loop nkc unrolls rebound by a later loop, and the
//! `(P, F)` view of an on-chip tile of several free dimensions. Each is checked against the same
//! computation written without the feature (same signature, so the same seeded inputs), bit for
//! bit, or against the file's bytes.

mod common;

use common::{checked_run, nkc, scratch, scratch_kernel, stderr};
use nkc::pipeline::PipelineMode;

/// The outputs of `kernel` of `file` on the default path (checked, race-free), by name.
fn outputs(file: &str, kernel: &str) -> Vec<(String, Vec<f32>)> {
    let r = checked_run(file, Some(kernel), PipelineMode::Default, 3);
    (r.outputs.into_iter())
        .map(|o| (o.name, o.array.data))
        .collect()
}

/// Asserts that two runs give the same arrays, bit for bit, and that they are not constant.
fn assert_same(a: &[(String, Vec<f32>)], b: &[(String, Vec<f32>)]) {
    assert_eq!(a.len(), b.len());
    for ((na, va), (nb, vb)) in a.iter().zip(b) {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(va), bits(vb), "{na} vs {nb}");
        assert!(va.iter().any(|&x| x != va[0]), "{na} is constant");
    }
}

const ROW_MASKS: &str = "\
def masked(x: nl.hbm[nl.float32, 128, 320]):
    v = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    k = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.ndarray((128, 200), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    ix, iy = nl.mgrid[0:128, 0:320]
    m = nisa.max8(src=t[ix, iy], mask=(iy < 200))
    nl.store(v, value=m)
    nl.store(k, value=nisa.nc_find_index8(data=t[ix, iy], vals=m, mask=(iy < 200)))
    nl.store(w, value=nisa.max8(src=t[ix, iy], mask=(iy >= 40) & (iy < 300)))
    rr = nisa.nc_match_replace8(data=t[ix, iy], vals=m, imm=0.0, mask=(iy < 200))
    nl.store(r, value=rr[:, 0:200])
    return v, k, w, r

def sliced(x: nl.hbm[nl.float32, 128, 320]):
    v = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    k = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.ndarray((128, 200), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nisa.max8(src=t[:, 0:200])
    nl.store(v, value=m)
    nl.store(k, value=nisa.nc_find_index8(data=t[:, 0:200], vals=m))
    nl.store(w, value=nisa.max8(src=t[:, 40:300]))
    nl.store(r, value=nisa.nc_match_replace8(data=t[:, 0:200], vals=m, imm=0.0))
    return v, k, w, r
";

#[test]
fn a_free_mask_on_a_row_operation_reads_only_the_kept_columns() {
    let f = scratch_kernel("public_gaps", "row_masks", ROW_MASKS);
    assert_same(&outputs(&f, "masked"), &outputs(&f, "sliced"));
}

#[test]
fn a_row_mask_that_drops_the_first_columns_of_a_position_is_refused() {
    let f = scratch_kernel(
        "public_gaps",
        "window_index",
        "\
def k(x: nl.hbm[nl.float32, 128, 64]):
    o = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    ix, iy = nl.mgrid[0:128, 0:64]
    m = nisa.max8(src=t[ix, iy], mask=(iy >= 8))
    nl.store(o, value=nisa.nc_find_index8(data=t[ix, iy], vals=m, mask=(iy >= 8)))
    return o
",
    );
    let o = nkc(&["check", &f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E0206") && err.contains("numbers positions"),
        "{err}"
    );
    assert!(
        err.contains(":6:"),
        "the span is the find_index8 call: {err}"
    );
}

/// The dtype string and the data bytes of a version-1 `.npy` file.
fn npy_parts(bytes: &[u8]) -> (String, &[u8]) {
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + len]).into_owned();
    (header, &bytes[10 + len..])
}

#[test]
fn an_integer_output_is_written_in_its_declared_dtype() {
    let dir = scratch("public_gaps", "uint32");
    let out = dir.join("out");
    let o = nkc(&[
        "run",
        "tests/good/row_mask_top8.nk",
        "--kernel",
        "top8_prefix",
        "--output",
        out.to_str().expect("UTF-8 temporary path"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let idx = std::fs::read(out.join("idx.npy")).expect("idx.npy written");
    let (header, data) = npy_parts(&idx);
    assert!(header.contains("'descr': '<u4'"), "{header}");
    assert_eq!(data.len(), 256 * 8 * 4);
    let values: Vec<u32> = (data.chunks(4))
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert!(values.iter().all(|&v| v < 200), "a position past the mask");
    assert!(values
        .chunks(8)
        .all(|row| row.iter().collect::<std::collections::HashSet<_>>().len() == 8));
    let vals = std::fs::read(out.join("vals.npy")).expect("vals.npy written");
    assert!(npy_parts(&vals).0.contains("'descr': '<f4'"));
}

const PLAIN_ACCUMULATE: &str = "\
def plain(x: nl.hbm[nl.float32, 256, 384]):
    out = nl.ndarray((256, 384), dtype=nl.float32, buffer=nl.shared_hbm)
    for b in nl.affine_range(2):
        t = nl.load(x[b * 128:(b + 1) * 128, :])
        acc = nl.zeros((128, 384), dtype=nl.float32, buffer=nl.sbuf)
        for r in nl.sequential_range(4):
            acc[...] = nl.add(acc, t)
        nl.store(out[b * 128:(b + 1) * 128, :], value=acc)
    return out
";

#[test]
fn a_name_an_unrolled_loop_bound_is_rebound_by_a_later_loop() {
    let plain = scratch_kernel("public_gaps", "plain", PLAIN_ACCUMULATE);
    assert_same(
        &outputs("tests/good/unrolled_rebind.nk", "blocks_accumulate"),
        &outputs(&plain, "plain"),
    );
}

#[test]
fn an_on_chip_reshape_that_changes_the_partitions_is_refused() {
    let f = scratch_kernel(
        "public_gaps",
        "reshape_tile",
        "\
def k(x: nl.hbm[nl.float32, 128, 64]):
    o = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 2, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    v = t.reshape((64, 128))
    nl.store(o, value=v)
    return o
",
    );
    let o = nkc(&["check", &f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E0233") && err.contains("keeps its 128 partitions"),
        "{err}"
    );
}

/// A deterministic `[rows, cols]` array of `f(row, col)`.
fn array(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f32) -> penguin::interp::Array {
    let data = (0..rows * cols).map(|i| f(i / cols, i % cols)).collect();
    penguin::interp::Array::new(vec![rows, cols], data)
}

#[test]
fn range_select_selects_by_column_index_and_carries_the_register() {
    let dir = scratch("public_gaps", "range_select");
    let x = array(192, 300, |r, c| {
        let h = ((r * 300 + c) as u32).wrapping_mul(2_654_435_761);
        ((h >> 8) % 2001) as f32 / 1000.0 - 1.0
    });
    let lo = array(192, 1, |r, _| 80.0 + ((r * 7) % 200) as f32);
    let hi = array(192, 1, |r, _| {
        80.0 + ((r * 7) % 200) as f32 + 60.0 + (r % 5) as f32 * 20.0
    });
    let mut args = vec![
        "run".to_string(),
        "tests/good/range_select_blocks.nk".to_string(),
        "--check".to_string(),
    ];
    for (name, a) in [("x", &x), ("lo", &lo), ("hi", &hi)] {
        let p = dir.join(format!("{name}.npy"));
        nkc::npy::write_npy(&p, a).expect("the input is written");
        args.push("--input".to_string());
        args.push(format!("{name}={}", p.display()));
    }
    let out = dir.join("out");
    args.push("--output".to_string());
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = nkc(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let sel = nkc::npy::read_npy(&out.join("sel.npy")).expect("sel.npy");
    let mx = nkc::npy::read_npy(&out.join("mx.npy")).expect("mx.npy");
    let mut kept = 0;
    for r in 0..192 {
        let (l, h) = (lo.data[r], hi.data[r]);
        let mut reg = f32::MIN;
        for c in 0..300 {
            let v = x.data[r * 300 + c];
            let k = (100 + c) as f32;
            let want = if k >= l && k < h { v } else { -1.0 };
            kept += usize::from(k >= l && k < h);
            assert_eq!(
                sel.data[r * 300 + c].to_bits(),
                want.to_bits(),
                "sel[{r}, {c}]"
            );
            reg = reg.max(want);
        }
        for c in 0..300 {
            let k = (250 + c) as f32;
            let v = x.data[r * 300 + c] * 2.0;
            reg = reg.max(if k > l && k <= h { v } else { -1.0 });
        }
        assert_eq!(mx.data[r].to_bits(), reg.to_bits(), "mx[{r}]");
    }
    assert!(kept > 1000 && kept < 192 * 300 / 2, "{kept} elements kept");
}

#[test]
fn range_select_continuing_a_register_set_outside_the_loop_is_refused() {
    let f = scratch_kernel(
        "public_gaps",
        "range_register",
        "\
def k(x: nl.hbm[nl.float32, 128, 64], b: nl.hbm[nl.float32, 128, 1]):
    o = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    l = nl.load(b)
    m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    r = nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less, bound0=l, bound1=l, reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=np.max)
    for i in nl.affine_range(2):
        r2 = nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less, bound0=l, bound1=l, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=m, reduce_op=np.max)
    nl.store(o, value=m)
    return o
",
    );
    let o = nkc(&["check", &f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not known here") && err.contains(":8:"),
        "{err}"
    );
}
