//! Unit tests of the verifier.

use super::bounds::{div_ceil, div_floor};
use super::*;
use cranelift_entity::EntityRef;

#[test]
fn floor_and_ceil_division() {
    assert_eq!(div_floor(7, 2), 3);
    assert_eq!(div_floor(-7, 2), -4);
    assert_eq!(div_floor(7, -2), -4);
    assert_eq!(div_ceil(7, 2), 4);
    assert_eq!(div_ceil(-7, 2), -3);
    assert_eq!(div_ceil(-7, -2), 4);
}

#[test]
fn identifiers() {
    assert!(is_identifier("t.1"));
    assert!(is_identifier("_x9"));
    assert!(!is_identifier(""));
    assert!(!is_identifier("1t"));
    assert!(!is_identifier("a b"));
}

#[test]
fn a_valid_function_verifies_and_entity_errors_are_found() {
    let text = "kernel k(a) -> () {\n  tensor a: hbm f32[128, 512] input\n  tensor t: sbuf f32[128, 512] local\n  stmt {\n    t[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]\n  }\n}\n";
    let mut f = crate::parse_function(text).expect("parses");
    assert_eq!(verify_function(&f), Ok(()));
    // A statement listed twice, an instruction in no statement and a dangling reference.
    let s0 = f.body[0];
    f.body.push(s0);
    let orphan = f.insts[Inst::new(0)].clone();
    f.insts.push(orphan);
    f.outputs.push(Tensor::new(9));
    let msgs: Vec<String> = verify_function(&f)
        .expect_err("must fail")
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m == "stmt s0 (at top level): appears more than once in the tree"),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m == "inst i1 (`t = load`): is in no statement"),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m == "kernel `k`: output t9 is not a defined tensor"),
        "{msgs:?}"
    );
    assert_eq!(msgs.len(), 3, "{msgs:?}");
}

/// A guard in several variables (`2*i + g < 3`, a mask on loop indices alone) keeps the
/// iterations where an access would leave the tensor out of the bounds check; without it, or
/// with a guard that keeps such an iteration, the access is reported at that iteration.
#[test]
fn guards_in_several_variables_bound_the_iterations_checked() {
    let text = |guard: &str| {
        format!(
            "kernel k(a) -> () {{\n  tensor a: hbm f32[384, 64] input\n  tensor t: sbuf f32[128, 64] local\n  loop i in 0..2 affine {{\n    loop g in 0..2 affine {{\n      stmt{guard} {{\n        t[0 +: 128, 0 +: 64] = load.dma a[256*i + 128*g +: 128, 0 +: 64]\n      }}\n    }}\n  }}\n}}\n"
        )
    };
    let f = crate::parse_function(&text(" if 2*i + g < 3")).expect("parses");
    assert_eq!(verify_function(&f), Ok(()));
    for guard in ["", " if 2*i + g < 4"] {
        let f = crate::parse_function(&text(guard)).expect("parses");
        let msgs: Vec<String> = verify_function(&f)
            .expect_err("reads past the end")
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert!(
            msgs.iter()
                .any(|m| m.contains("384 rows") && m.contains("i = 1, g = 1")),
            "{msgs:?}"
        );
    }
}
