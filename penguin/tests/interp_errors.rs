//! The interpreter's errors: undefined data stored into HBM, out-of-range accesses, input mismatches,
//! writes to inputs and malformed IR — each an `InterpError` naming what went wrong, never a
//! panic.

mod common;

use common::*;
use penguin::interp::{interpret, Array, InterpError};
use penguin::*;

fn copy_kernel() -> (Builder, Tensor, Tensor) {
    let mut b = Builder::new("copy");
    let a = b.input("a", 8, 4);
    let out = b.output("out", 8, 4);
    (b, a, out)
}

#[test]
fn accumulating_matmul_without_memset_stores_undefined_data() {
    let mut b = Builder::new("mm");
    let x = b.input("x", 2, 3);
    let y = b.input("y", 2, 4);
    let out = b.output("out", 3, 4);
    let tx = b.sbuf("tx", 2, 3);
    let ty = b.sbuf("ty", 2, 4);
    let acc = b.psum("acc", 3, 4);
    let res = b.sbuf("res", 3, 4);
    b.inst(Op::Load, b.whole(tx), vec![b.whole(x)]);
    b.inst(Op::Load, b.whole(ty), vec![b.whole(y)]);
    b.inst(
        Op::Matmul { accumulate: true },
        b.whole(acc),
        vec![b.whole(tx), b.whole(ty)],
    );
    b.inst(Op::Copy, b.whole(res), vec![b.whole(acc)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(res)]);
    let inputs = [data(2, 3, 1), data(2, 4, 2)];
    let err = interpret(&b.f, &inputs).unwrap_err();
    // The matmul adds to undefined PSUM: its result, copied to `res`, is undefined, which is an
    // error where it would reach the output.
    let store = b.f.insts.keys().nth(4).unwrap();
    match &err {
        InterpError::Uninitialised {
            inst,
            op,
            tensor,
            element,
            dest,
            ..
        } => {
            assert_eq!(*inst, store);
            assert_eq!(*op, "store");
            assert_eq!(tensor, "res");
            assert_eq!(dest, "out");
            assert_eq!((element.slot, element.row, element.col), (None, 0, 0));
        }
        other => panic!("expected an undefined store, got {other}"),
    }
    assert_eq!(err.inst(), Some(store));
    assert_eq!(
        err.to_string(),
        "instruction i4 (store) writes element [0, 0] of `res` into HBM tensor `out`, but its value is undefined: that memory was never written, or the value was computed from memory never written"
    );
}

#[test]
fn storing_a_partly_written_tile_names_the_first_undefined_element() {
    let (mut b, a, out) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    // Rows 0..8, columns 0..2 loaded; columns 2..4 never written.
    b.inst(
        Op::Load,
        tile(t, k(0), k(0), 8, 2),
        vec![tile(a, k(0), k(0), 8, 2)],
    );
    let (_, i) = b.begin_loop("i", 0, 2);
    b.inst(
        Op::Store,
        tile(out, lin(i, 4, 0), k(0), 4, 4),
        vec![tile(t, lin(i, 4, 0), k(0), 4, 4)],
    );
    b.end_loop();
    let err = interpret(&b.f, &[data(8, 4, 3)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "instruction i1 (store) writes element [0, 2] of `t` into HBM tensor `out`, but its value is undefined: that memory was never written, or the value was computed from memory never written (at i = 0)"
    );
}

#[test]
fn an_output_read_before_it_is_written_is_undefined() {
    // Reading it is not an error; storing what was read (even back into itself) is.
    let (mut b, _a, out) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    b.inst(Op::Load, b.whole(t), vec![b.whole(out)]);
    assert!(interpret(&b.f, &[data(8, 4, 3)]).is_ok());
    b.inst(Op::Store, b.whole(out), vec![b.whole(t)]);
    let err = interpret(&b.f, &[data(8, 4, 3)]).unwrap_err();
    assert!(
        matches!(&err, InterpError::Uninitialised { tensor, dest, .. } if tensor == "t" && dest == "out"),
        "{err}"
    );
}

#[test]
fn out_of_range_rows_name_the_instruction_tensor_and_index() {
    // for i in 0..3: load a[i*4 .. i*4+4]: at i = 2 rows 8..12 of an 8-row tensor.
    let (mut b, a, _out) = copy_kernel();
    let t = b.sbuf("t", 4, 4);
    let (_, i) = b.begin_loop("i", 0, 3);
    b.inst(
        Op::Load,
        b.whole(t),
        vec![tile(a, lin(i, 4, 0), k(0), 4, 4)],
    );
    b.end_loop();
    let err = interpret(&b.f, &[data(8, 4, 3)]).unwrap_err();
    assert_eq!(
        err,
        InterpError::OutOfRange {
            inst: b.f.insts.keys().next().unwrap(),
            op: "load",
            tensor: "a".into(),
            dim: 0,
            start: 8,
            end: 12,
            extent: 8,
            at: penguin::interp::Iteration(vec![("i".into(), 2)]),
        }
    );
    assert_eq!(
        err.to_string(),
        "instruction i0 (load) accesses `a` out of range: rows 8..12 of 0..8 (at i = 2)"
    );
}

#[test]
fn negative_and_column_out_of_range_starts() {
    let (mut b, a, out) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(
        Op::Store,
        tile(out, k(0), k(-1), 8, 2),
        vec![tile(t, k(0), k(0), 8, 2)],
    );
    let err = interpret(&b.f, &[data(8, 4, 3)]).unwrap_err();
    assert!(
        matches!(
            err,
            InterpError::OutOfRange {
                dim: 1,
                start: -1,
                end: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("columns -1..1 of 0..4"), "{err}");

    let (mut b, a, _) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    b.inst(Op::Load, tile(t, k(0), k(2), 8, 4), vec![b.whole(a)]);
    let err = interpret(&b.f, &[data(8, 4, 3)]).unwrap_err();
    assert!(
        matches!(&err, InterpError::OutOfRange { tensor, dim: 1, start: 2, end: 6, .. } if tensor == "t"),
        "{err}"
    );
}

#[test]
fn input_shape_and_count_mismatches() {
    let (mut b, a, out) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.inst(Op::Store, b.whole(out), vec![b.whole(t)]);
    let err = interpret(&b.f, &[data(4, 8, 1)]).unwrap_err();
    assert_eq!(
        err,
        InterpError::InputShape {
            param: "a".into(),
            expected: vec![8, 4],
            got: vec![4, 8],
        }
    );
    assert_eq!(
        err.to_string(),
        "input for parameter `a` has shape [4, 8], but the parameter has shape [8, 4]"
    );
    let err = interpret(&b.f, &[Array::new(vec![8], vec![0.0; 8])]).unwrap_err();
    assert!(matches!(err, InterpError::InputShape { .. }), "{err}");
    let err = interpret(&b.f, &[Array::new(vec![8, 4], vec![0.0; 31])]).unwrap_err();
    assert!(
        matches!(&err, InterpError::InputData { param, len: 31, .. } if param == "a"),
        "{err}"
    );
    let err = interpret(&b.f, &[]).unwrap_err();
    assert_eq!(
        err,
        InterpError::InputCount {
            expected: 1,
            got: 0
        }
    );
    // And the right input runs.
    let x = data(8, 4, 1);
    assert_eq!(
        interpret(&b.f, std::slice::from_ref(&x)).unwrap().outputs[0],
        x
    );
}

#[test]
fn writing_an_input_is_an_error() {
    let (mut b, a, _) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    b.inst(Op::Memset { value: 1.0 }, b.whole(t), vec![]);
    b.inst(Op::Store, b.whole(a), vec![b.whole(t)]);
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(
        matches!(&err, InterpError::WriteToInput { tensor, op: "store", .. } if tensor == "a"),
        "{err}"
    );
}

#[test]
fn malformed_ir_is_an_error_not_a_panic() {
    // Wrong source count.
    let (mut b, a, _) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a), b.whole(a)]);
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(
        err.to_string().contains("load takes 1 sources, found 2"),
        "{err}"
    );

    // Shape mismatch of a copy.
    let (mut b, a, _) = copy_kernel();
    let t = b.sbuf("t", 4, 4);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(
        matches!(err, InterpError::Malformed { .. }) && err.to_string().contains("[8, 4]"),
        "{err}"
    );

    // A broadcast column on the wrong axis of a tensor_tensor.
    let (mut b, _, _) = copy_kernel();
    let x = b.sbuf("x", 4, 4);
    let row = b.sbuf("row", 1, 4);
    b.inst(Op::Memset { value: 1.0 }, b.whole(x), vec![]);
    b.inst(Op::Memset { value: 1.0 }, b.whole(row), vec![]);
    b.inst(
        Op::TensorTensor { op: AluOp::Add },
        b.whole(x),
        vec![b.whole(x), b.whole(row)],
    );
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(
        err.to_string()
            .contains("source 1 has shape [1, 4], expected [4, 4] or [4, 1]"),
        "{err}"
    );

    // A matmul whose contraction dims differ.
    let (mut b, _, _) = copy_kernel();
    let l = b.sbuf("l", 3, 2);
    let r = b.sbuf("r", 4, 5);
    let ps = b.psum("ps", 2, 5);
    b.inst(Op::Memset { value: 0.0 }, b.whole(l), vec![]);
    b.inst(Op::Memset { value: 0.0 }, b.whole(r), vec![]);
    b.inst(
        Op::Matmul { accumulate: false },
        b.whole(ps),
        vec![b.whole(l), b.whole(r)],
    );
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(matches!(err, InterpError::Malformed { .. }), "{err}");

    // An induction variable used outside its loop.
    let (mut b, a, _) = copy_kernel();
    let t = b.sbuf("t", 4, 4);
    let (_, i) = b.begin_loop("i", 0, 2);
    b.end_loop();
    b.inst(
        Op::Load,
        b.whole(t),
        vec![tile(a, lin(i, 4, 0), k(0), 4, 4)],
    );
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(err.to_string().contains("outside its loop"), "{err}");

    // A slot expression count that does not match the block dims.
    let (mut b, a, _) = copy_kernel();
    let t = b.sbuf("t", 8, 4);
    let (_, i) = b.begin_loop("i", 0, 2);
    b.widen(t, i, 2);
    b.inst(Op::Load, b.whole(t), vec![b.whole(a)]);
    b.end_loop();
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(err.to_string().contains("1 block dimensions"), "{err}");

    // A loop nested inside itself.
    let mut b = Builder::new("self");
    let (stmt, i) = b.begin_loop("i", 0, 2);
    b.end_loop();
    b.f.axes[i].body.push(stmt);
    let err = interpret(&b.f, &[]).unwrap_err();
    assert!(err.to_string().contains("nested inside itself"), "{err}");

    // A block dimension of count 0, and a 3-D tensor.
    let (mut b, a, _) = copy_kernel();
    let (_, i) = b.begin_loop("i", 0, 1);
    b.end_loop();
    b.widen(a, i, 0);
    let err = interpret(&b.f, &[data(8, 4, 1)]).unwrap_err();
    assert!(err.to_string().contains("count 0"), "{err}");
    let mut b = Builder::new("rank");
    let t = b.sbuf("t", 2, 2);
    b.f.tensors[t].shape = vec![2, 2, 2];
    let err = interpret(&b.f, &[]).unwrap_err();
    assert!(err.to_string().contains("rank 3"), "{err}");
}

/// A gather of rows `idx[p]` of `table[0 +: 4]`, and a scatter of them back at the same rows
/// into `out` (with `skip_oob` as given), for the index tests.
fn indirect_kernel(skip_oob: bool) -> Function {
    let text = format!(
        "kernel g(table, idx) -> (out) {{
  tensor table: hbm f32[4, 2] input
  tensor idx: hbm f32[3, 1] input
  tensor out: hbm f32[4, 2] output
  tensor ix: sbuf f32[3, 1] local
  tensor rows: sbuf f32[3, 2] local
  tensor z: sbuf f32[4, 2] local
  stmt {{
    z[0 +: 4, 0 +: 2] = memset.dve(value=0.0)
    out[0 +: 4, 0 +: 2] = store.dma z[0 +: 4, 0 +: 2]
    ix[0 +: 3, 0 +: 1] = load.dma idx[0 +: 3, 0 +: 1]
    rows[0 +: 3, 0 +: 2] = memset.dve(value=-1.0)
    rows[0 +: 3, 0 +: 2] = gather.dma(skip_oob={skip_oob}) table[0 +: 4, 0 +: 2], ix[0 +: 3, 0 +: 1]
    out[0 +: 4, 0 +: 2] = scatter.dma(skip_oob={skip_oob}, accumulate=false) rows[0 +: 3, 0 +: 2], ix[0 +: 3, 0 +: 1]
  }}
}}"
    );
    parse_function(&text).expect("the kernel parses")
}

#[test]
fn gather_and_scatter_move_the_rows_their_indices_name() {
    let f = indirect_kernel(false);
    let table = Array::new(vec![4, 2], (0..8).map(|v| v as f32).collect());
    let idx = Array::new(vec![3, 1], vec![3.0, 0.0, 3.0]);
    let out = interpret(&f, &[table, idx])
        .expect("the indices are rows")
        .outputs;
    // Rows 3 and 0 come back to rows 3 and 0; rows 1 and 2 keep the zeros.
    assert_eq!(out[0].data, vec![0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 6.0, 7.0]);
}

#[test]
fn an_index_outside_the_rows_is_an_error_or_skipped() {
    let table = Array::new(vec![4, 2], (0..8).map(|v| v as f32).collect());
    for bad in [4.0, -1.0, 1.5] {
        let idx = Array::new(vec![3, 1], vec![2.0, bad, 1.0]);
        let err = interpret(&indirect_kernel(false), &[table.clone(), idx]).unwrap_err();
        assert!(
            matches!(
                err,
                InterpError::IndexOutOfRange {
                    partition: 1,
                    rows: 4,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("which is not a row of 0..4"),
            "{err}"
        );
    }
    // With `skip_oob` an out-of-range row moves nothing: rows 2 and 1 only.
    let idx = Array::new(vec![3, 1], vec![2.0, 9.0, 1.0]);
    let out = interpret(&indirect_kernel(true), &[table, idx])
        .expect("skipped")
        .outputs;
    assert_eq!(out[0].data, vec![0.0, 0.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0]);
}
