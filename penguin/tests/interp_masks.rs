//! Masked instructions in the interpreter (the oracle): a ragged last row tile that reaches past
//! the end of its arrays, the destination keeping its old values where the mask drops elements,
//! a reduce masked on its source's free axis, an element a mask never wrote staying undefined
//! (an error only once it would be stored), and undefined values moving through row operations,
//! transposes and matmuls.

use penguin::interp::{interpret, Array, InterpError};
use penguin::{parse_function, verify_function, Function};

fn parse(text: &str) -> Function {
    let f = parse_function(text).unwrap_or_else(|e| panic!("parse error: {e:?}"));
    if let Err(errors) = verify_function(&f) {
        panic!("{} does not verify: {errors:?}", f.name);
    }
    assert_eq!(
        penguin::write_function(&f),
        penguin::write_function(&parse_function(&penguin::write_function(&f)).unwrap())
    );
    f
}

fn input(rows: usize, cols: usize) -> Array {
    Array {
        shape: vec![rows, cols],
        data: (0..rows * cols).map(|k| k as f32).collect(),
    }
}

/// 10 rows in tiles of 4: the last tile has 2 rows, and its load and store reach rows 10..12 of
/// 10-row arrays, dropped by the mask. Each tile is `x + 1` where columns `>= 3` are first set to
/// -1 (a memset masked on the free axis), then the row sums of columns `< 2` are added.
const RAGGED: &str = "
kernel ragged(x) -> (y) {
  tensor x: hbm f32[10, 4] input
  tensor y: hbm f32[10, 4] output
  tensor t: sbuf f32[4, 4] local
  tensor s: sbuf f32[4, 1] local
  loop i in 0..3 affine {
    stmt {
      t[0 +: 4, 0 +: 4] = load.dma x[4*i +: 4, 0 +: 4] mask(p < -4*i + 10)
      t[0 +: 4, 0 +: 4] = tensor_scalar.dve(op=add, imm=1.0, reverse=false) t[0 +: 4, 0 +: 4] mask(p < -4*i + 10)
      t[0 +: 4, 0 +: 4] = memset.dve(value=-1.0) mask(f >= 3, p < -4*i + 10)
      s[0 +: 4, 0 +: 1] = reduce.dve(op=sum) t[0 +: 4, 0 +: 4] mask(f < 2, p < -4*i + 10)
      t[0 +: 4, 0 +: 4] = tensor_tensor.dve(op=add) t[0 +: 4, 0 +: 4], s[0 +: 4, 0 +: 1] mask(p < -4*i + 10)
      y[4*i +: 4, 0 +: 4] = store.dma t[0 +: 4, 0 +: 4] mask(p < -4*i + 10)
    }
  }
}
";

#[test]
fn a_ragged_last_tile_reads_and_writes_only_its_rows() {
    let f = parse(RAGGED);
    let x = input(10, 4);
    let r = interpret(&f, std::slice::from_ref(&x)).unwrap_or_else(|e| panic!("{e}"));
    let y = &r.outputs[0];
    for row in 0..10 {
        let v: Vec<f32> = (0..4).map(|c| x.data[row * 4 + c] + 1.0).collect();
        let s = v[0] + v[1];
        let want = [v[0] + s, v[1] + s, v[2] + s, -1.0 + s];
        assert_eq!(&y.data[row * 4..row * 4 + 4], &want, "row {row}");
    }
}

/// A tile whose rows 2..4 only the first iteration writes: the second iteration's masked write
/// leaves them as they were, and the unmasked store shows the first iteration's values there.
const KEEPS_OLD: &str = "
kernel keeps(x) -> (y) {
  tensor x: hbm f32[8, 2] input
  tensor y: hbm f32[8, 2] output
  tensor t: sbuf f32[4, 2] local
  loop i in 0..2 affine {
    stmt {
      t[0 +: 4, 0 +: 2] = load.dma x[4*i +: 4, 0 +: 2] mask(p < -2*i + 4)
      y[4*i +: 4, 0 +: 2] = store.dma t[0 +: 4, 0 +: 2]
    }
  }
}
";

#[test]
fn masked_out_elements_keep_their_old_values() {
    let f = parse(KEEPS_OLD);
    let x = input(8, 2);
    let r = interpret(&f, std::slice::from_ref(&x)).unwrap_or_else(|e| panic!("{e}"));
    let y = &r.outputs[0].data;
    // Rows 4, 5 from x; rows 6, 7 are the tile's rows 2, 3 of the first iteration (x rows 2, 3).
    assert_eq!(&y[..8], &x.data[..8]);
    assert_eq!(&y[8..12], &x.data[8..12]);
    assert_eq!(&y[12..16], &x.data[4..8]);
}

#[test]
fn an_element_no_mask_let_through_is_uninitialised() {
    // One iteration only: rows 2, 3 of the tile are never written, and the store reads them.
    let text = KEEPS_OLD
        .replace("0..2 affine", "0..1 affine")
        .replace("-2*i + 4", "-2*i + 2");
    let f = parse(&text);
    let Err(e) = interpret(&f, &[input(8, 2)]) else {
        panic!("reading rows no instruction wrote succeeded");
    };
    match e {
        InterpError::Uninitialised {
            tensor, element, ..
        } => {
            assert_eq!(tensor, "t");
            assert_eq!((element.row, element.col), (2, 0));
        }
        other => panic!("expected an uninitialised read, got {other}"),
    }
}

#[test]
fn a_mask_that_keeps_nothing_runs_nothing() {
    // `p < -4*i + 4` keeps nothing at i = 1: the load would read past the end of `x` unmasked.
    let text = "
kernel k(x) -> (y) {
  tensor x: hbm f32[4, 2] input
  tensor y: hbm f32[4, 2] output
  tensor t: sbuf f32[4, 2] local
  loop i in 0..2 affine {
    stmt {
      t[0 +: 4, 0 +: 2] = load.dma x[4*i +: 4, 0 +: 2] mask(p < -4*i + 4)
    }
  }
  stmt {
    y[0 +: 4, 0 +: 2] = store.dma t[0 +: 4, 0 +: 2]
  }
}
";
    let f = parse(text);
    let x = input(4, 2);
    let r = interpret(&f, std::slice::from_ref(&x)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs[0].data, x.data);
    assert_eq!(r.stats.masked_off, 1);
}

/// An rmsnorm-like tile with 3 valid rows of 4: the load is masked to the rows, the square,
/// row sum and scaling run on the whole tile (rows 3 hold garbage: undefined values), the store
/// is masked again. `STORE_MASK` is replaced by the store's mask.
const MASKED_ROWS: &str = "
kernel rows(x) -> (y) {
  tensor x: hbm f32[3, 2] input
  tensor y: hbm f32[3, 2] output
  tensor t: sbuf f32[4, 2] local
  tensor q: sbuf f32[4, 2] local
  tensor s: sbuf f32[4, 1] local
  stmt {
    t[0 +: 4, 0 +: 2] = load.dma x[0 +: 4, 0 +: 2] mask(p < 3)
    q[0 +: 4, 0 +: 2] = tensor_tensor.dve(op=multiply) t[0 +: 4, 0 +: 2], t[0 +: 4, 0 +: 2]
    s[0 +: 4, 0 +: 1] = reduce.dve(op=sum) q[0 +: 4, 0 +: 2]
    q[0 +: 4, 0 +: 2] = tensor_tensor.dve(op=multiply) t[0 +: 4, 0 +: 2], s[0 +: 4, 0 +: 1]
    y[0 +: 4, 0 +: 2] = store.dma q[0 +: 4, 0 +: 2] STORE_MASK
  }
}
";

#[test]
fn garbage_in_rows_a_mask_skipped_runs_when_no_output_sees_it() {
    let f = parse(&MASKED_ROWS.replace("STORE_MASK", "mask(p < 3)"));
    let x = input(3, 2);
    let r = interpret(&f, std::slice::from_ref(&x)).unwrap_or_else(|e| panic!("{e}"));
    for row in 0..3 {
        let (a, b) = (x.data[row * 2], x.data[row * 2 + 1]);
        let s = a * a + b * b;
        assert_eq!(&r.outputs[0].data[row * 2..row * 2 + 2], &[a * s, b * s]);
    }
}

#[test]
fn garbage_that_reaches_an_output_is_an_error_at_the_store() {
    // The store's mask lets row 3 through, but the output has only 3 rows: widen it to 4.
    let text = MASKED_ROWS
        .replace("STORE_MASK", "")
        .replace("y: hbm f32[3, 2]", "y: hbm f32[4, 2]");
    let f = parse(&text);
    let Err(e) = interpret(&f, &[input(3, 2)]) else {
        panic!("storing the garbage rows succeeded");
    };
    assert!(
        e.to_string()
            .starts_with("instruction i4 (store) writes element [3, 0] of `q` into HBM tensor `y`"),
        "{e}"
    );
}

/// `t` has a defined `[3, 4]` top and an undefined row 3 (a load masked to rows); `w` has
/// defined columns 0..2 and undefined columns 2..4 (a load masked on the free axis).
/// Transposed, `t`'s row 3 becomes column 3 of `u`. In `acc = tᵀ·w` over the 3 defined rows of
/// `t`, `acc[m, n]` is undefined exactly where column `n` of `w` is. Only the defined parts are
/// stored; `STORE` adds one more store.
const PROPAGATES: &str = "
kernel prop(x) -> (y, z) {
  tensor x: hbm f32[3, 4] input
  tensor y: hbm f32[4, 4] output
  tensor z: hbm f32[4, 4] output
  tensor t: sbuf f32[4, 4] local
  tensor w: sbuf f32[3, 4] local
  tensor tp: psum f32[4, 4] local
  tensor u: sbuf f32[4, 4] local
  tensor acc: psum f32[4, 4] local
  tensor v: sbuf f32[4, 4] local
  stmt {
    t[0 +: 4, 0 +: 4] = load.dma x[0 +: 4, 0 +: 4] mask(p < 3)
    w[0 +: 3, 0 +: 4] = load.dma x[0 +: 3, 0 +: 4] mask(f < 2)
    tp[0 +: 4, 0 +: 4] = transpose.pe t[0 +: 4, 0 +: 4]
    u[0 +: 4, 0 +: 4] = copy.act tp[0 +: 4, 0 +: 4]
    y[0 +: 4, 0 +: 3] = store.dma u[0 +: 4, 0 +: 3]
    acc[0 +: 4, 0 +: 4] = matmul.pe(accumulate=false) t[0 +: 3, 0 +: 4], w[0 +: 3, 0 +: 4]
    v[0 +: 4, 0 +: 4] = copy.act acc[0 +: 4, 0 +: 4]
    z[0 +: 4, 0 +: 2] = store.dma v[0 +: 4, 0 +: 2]
    STORE
  }
}
";

#[test]
fn transposes_and_matmuls_move_undefined_values_by_row_and_column() {
    let run = |store: &str| {
        interpret(&parse(&PROPAGATES.replace("STORE", store)), &[input(3, 4)])
            .map_err(|e| e.to_string())
    };
    // The defined parts reach the outputs: columns 0..3 of the transpose, columns 0..2 of the
    // product.
    let r = run("").unwrap_or_else(|e| panic!("{e}"));
    let x = input(3, 4);
    for i in 0..4 {
        for j in 0..3 {
            assert_eq!(r.outputs[0].data[i * 4 + j], x.data[j * 4 + i]);
        }
        for j in 0..2 {
            let want = (0..3).fold(0.0f32, |s, k| s + x.data[k * 4 + i] * x.data[k * 4 + j]);
            assert_eq!(r.outputs[1].data[i * 4 + j], want);
        }
    }
    // Column 3 of the transpose is row 3 of `t`: undefined.
    let e = run("y[0 +: 4, 3 +: 1] = store.dma u[0 +: 4, 3 +: 1]").unwrap_err();
    assert!(
        e.to_string()
            .contains("writes element [0, 3] of `u` into HBM tensor `y`"),
        "{e}"
    );
    // Column 2 of the product meets column 2 of `w`, undefined, in every row.
    let e = run("z[1 +: 3, 2 +: 1] = store.dma v[1 +: 3, 2 +: 1]").unwrap_err();
    assert!(
        e.to_string()
            .contains("writes element [1, 2] of `v` into HBM tensor `z`"),
        "{e}"
    );
}
