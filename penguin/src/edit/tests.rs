//! The edit API as text in, text out: each test reads a kernel in Penguin IR's text form, edits
//! it, and compares the printed result with the expected text (which must also verify).

use super::*;
use crate::affine::AffineExpr;
use crate::entities::{Axis, Stmt, Tensor};
use crate::ir::{Function, SrcSpan, StmtKind};
use crate::{parse_function, verify_function, write_function};

/// `i` in stage 1 of nothing in particular: a loop `j` nested in `i`, a guarded statement with
/// annotations and a stage tag, a tile blocked along `i`.
const INPUT: &str = "kernel k(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 128] local block[i: 2]
  loop i in 0..8 affine {
    loop j in 0..4 affine stage_id=1 stage=1 {
      stmt execution_order=2 stage=0 if j < 3 {
        t{i}[0 +: 128, 0 +: 128] = load.dma a[128*i +: 128, 128*j +: 128]
      }
      stmt {
        c[128*i +: 128, 128*j +: 128] = store.dma t{i}[0 +: 128, 0 +: 128]
      }
    }
  }
}
";

fn parse(text: &str) -> Function {
    parse_function(text).expect("the fixture parses")
}

fn axis(f: &Function, iv: &str) -> Axis {
    f.axes
        .keys()
        .find(|&a| f.axes[a].iv_name == iv)
        .expect("the fixture has the loop")
}

fn tensor(f: &Function, name: &str) -> Tensor {
    f.tensors
        .keys()
        .find(|&t| f.tensors[t].name == name)
        .expect("the fixture has the tensor")
}

fn loop_stmt(f: &Function, a: Axis) -> Stmt {
    let (parent, at) = locate_loop(f, a).expect("the loop is in the tree");
    f.block(parent)[at]
}

/// `f` printed, after checking that it verifies.
fn written(f: &Function) -> String {
    if let Err(e) = verify_function(f) {
        panic!("the edited function verifies: {e:?}\n{}", write_function(f));
    }
    write_function(f)
}

#[test]
fn a_loop_copied_for_one_iteration_and_inserted_before_its_original() {
    let mut f = parse(INPUT);
    let (i, j) = (axis(&f, "i"), axis(&f, "j"));
    let js = loop_stmt(&f, j);
    let copy = copy_stmt(
        &mut f,
        js,
        &Subst::new().axis(i, AffineExpr::constant(0)),
        "i0",
    );
    let mut cur = Cursor::at_loop(&mut f, j).expect("the loop is in the tree");
    cur.insert_before([copy]);
    assert_eq!(cur.current(), Some(js));
    let want = "kernel k(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 128] local block[i: 2]
  loop i in 0..8 affine {
    loop j.i0 in 0..4 affine stage_id=1 stage=1 {
      stmt execution_order=2 stage=0 if j.i0 < 3 {
        t{0}[0 +: 128, 0 +: 128] = load.dma a[0 +: 128, 128*j.i0 +: 128]
      }
      stmt {
        c[0 +: 128, 128*j.i0 +: 128] = store.dma t{0}[0 +: 128, 0 +: 128]
      }
    }
    loop j in 0..4 affine stage_id=1 stage=1 {
      stmt execution_order=2 stage=0 if j < 3 {
        t{i}[0 +: 128, 0 +: 128] = load.dma a[128*i +: 128, 128*j +: 128]
      }
      stmt {
        c[128*i +: 128, 128*j +: 128] = store.dma t{i}[0 +: 128, 0 +: 128]
      }
    }
  }
}
";
    assert_eq!(written(&f), want);
}

#[test]
fn a_copy_keeps_the_side_tables_of_every_entity() {
    let mut f = parse(INPUT);
    let j = axis(&f, "j");
    let js = loop_stmt(&f, j);
    // Spans are not in the text: give every entity one to follow.
    let span = |n: u32| {
        Some(SrcSpan {
            start: n,
            end: n + 1,
        })
    };
    f.axis_spans[j] = span(1);
    f.axis_display[j] = Some("j@3:5".to_string());
    f.stmt_spans[js] = span(2);
    let inner = f.axes[j].body.clone();
    for (n, &s) in inner.iter().enumerate() {
        f.stmt_spans[s] = span(10 + n as u32);
        let StmtKind::Insts(insts) = f.stmts[s].kind.clone() else {
            unreachable!("the fixture's inner statements are instructions")
        };
        for i in insts {
            f.inst_spans[i] = span(20 + n as u32);
        }
    }
    let copy = copy_stmt(&mut f, js, &Subst::new(), "x");
    let StmtKind::Loop(cj) = f.stmts[copy].kind else {
        panic!("a copy of a loop is a loop")
    };
    assert_ne!(cj, j);
    assert_eq!(f.axes[cj].iv_name, "j.x");
    assert_eq!(f.axis_spans[cj], span(1));
    assert_eq!(f.display_iv(cj), "j@3:5");
    assert_eq!(f.stmt_spans[copy], span(2));
    assert_eq!(f.annots[copy], f.annots[js]);
    assert_eq!(f.stage_tags[copy], Some(1));
    let copied = f.axes[cj].body.clone();
    for (n, (&s, &c)) in inner.iter().zip(&copied).enumerate() {
        assert_ne!(s, c);
        assert_eq!(f.stmt_spans[c], span(10 + n as u32));
        assert_eq!(f.annots[c], f.annots[s]);
        assert_eq!(f.stage_tags[c], f.stage_tags[s]);
        for i in subtree_insts(&f, c) {
            assert_eq!(f.inst_spans[i], span(20 + n as u32));
        }
    }
    assert!(subtree_insts(&f, copy)
        .iter()
        .all(|i| !subtree_insts(&f, js).contains(i)));
}

#[test]
fn an_unrolled_copy_with_a_renamed_tile_goes_after_its_original() {
    let mut f = parse(INPUT);
    let j = axis(&f, "j");
    let t = tensor(&f, "t");
    let u = copy_tensor(&mut f, t, &tag("u", 1));
    let body = f.axes[j].body.clone();
    let sub = Subst::new()
        .axis(j, AffineExpr::from_terms([(j, 2)], 1))
        .tensor(t, u);
    let copies: Vec<Stmt> = body
        .iter()
        .map(|&s| copy_stmt(&mut f, s, &sub, ""))
        .collect();
    // Copy 0 is the original with `j -> 2j`; the loop runs half as many iterations.
    let js = loop_stmt(&f, j);
    Subst::new()
        .axis(j, AffineExpr::from_terms([(j, 2)], 0))
        .apply(&mut f, js);
    f.axes[j].ub = 2;
    let mut cur = Cursor::at_stmt(&mut f, body[1]).expect("in the tree");
    cur.insert_after(copies);
    let want = "kernel k(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor t: sbuf f32[128, 128] local block[i: 2]
  tensor t.u1: sbuf f32[128, 128] local block[i: 2]
  loop i in 0..8 affine {
    loop j in 0..2 affine stage_id=1 stage=1 {
      stmt execution_order=2 stage=0 if 2*j < 3 {
        t{i}[0 +: 128, 0 +: 128] = load.dma a[128*i +: 128, 256*j +: 128]
      }
      stmt {
        c[128*i +: 128, 256*j +: 128] = store.dma t{i}[0 +: 128, 0 +: 128]
      }
      stmt execution_order=2 stage=0 if 2*j + 1 < 3 {
        t.u1{i}[0 +: 128, 0 +: 128] = load.dma a[128*i +: 128, 256*j + 128 +: 128]
      }
      stmt {
        c[128*i +: 128, 256*j + 128 +: 128] = store.dma t.u1{i}[0 +: 128, 0 +: 128]
      }
    }
  }
}
";
    assert_eq!(written(&f), want);
}

#[test]
fn a_cursor_replaces_a_statement_by_several() {
    let mut f = parse(INPUT);
    let (i, j) = (axis(&f, "i"), axis(&f, "j"));
    let js = loop_stmt(&f, j);
    let copies: Vec<Stmt> = (0..2)
        .map(|k| {
            let sub = Subst::new().axis(i, AffineExpr::constant(k));
            copy_stmt(&mut f, js, &sub, &tag("i", k))
        })
        .collect();
    let mut cur = Cursor::at_stmt(&mut f, js).expect("in the tree");
    assert_eq!(cur.place(), (Some(i), 0));
    assert_eq!(cur.replace(copies.clone()), js);
    assert_eq!(cur.current(), Some(copies[0]));
    // The old loop is out of the tree: put it back after the copies.
    let mut end = Cursor::at(cur.func, (Some(i), 2));
    assert_eq!(end.current(), None);
    end.insert_before([js]);
    assert_eq!(locate(&f, js), Some((Some(i), 2)));
    let text = written(&f);
    assert!(text.contains("loop j.i0 in 0..4 affine"), "{text}");
    assert!(text.contains("loop j.i1 in 0..4 affine"), "{text}");
    assert!(text.contains("c[128 +: 128, 128*j.i1 +: 128]"), "{text}");
    let order: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("loop "))
        .collect();
    assert_eq!(order.len(), 4, "{text}");
    assert!(order[1].starts_with("j.i0 ") && order[2].starts_with("j.i1 "));
    assert!(order[3].starts_with("j "));
}
