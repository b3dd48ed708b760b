//! Folding a PSUM accumulator's zeroing into its first matmul: the folded kernel gives the
//! original's bits on the interpreter, signed zeros included, and the simulator agrees.

use backend::transform::remark::Remark;
use penguin::interp::{interpret, Array};

const KERNEL: &str = r#"kernel acc(x, y) -> (z) {
  tensor x: hbm f32[256, 128] input
  tensor y: hbm f32[256, 512] input
  tensor z: hbm f32[128, 512] output
  tensor acc: psum f32[128, 512] local
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf f32[128, 512] local
  tensor res: sbuf f32[128, 512] local
  stmt {
    acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
  }
  loop k in 0..2 affine {
    stmt {
      lhs[0 +: 128, 0 +: 128] = load.dma x[128*k +: 128, 0 +: 128]
    }
    stmt {
      rhs[0 +: 128, 0 +: 512] = load.dma y[128*k +: 128, 0 +: 512]
    }
    stmt {
      acc[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 0 +: 128], rhs[0 +: 128, 0 +: 512]
    }
  }
  stmt {
    res[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 0 +: 512]
  }
  stmt {
    z[0 +: 128, 0 +: 512] = store.dma res[0 +: 128, 0 +: 512]
  }
}
"#;

/// Inputs full of zeros of both signs (and some ones), so that products and sums are `-0.0`
/// wherever the order of additions could show it.
fn inputs() -> Vec<Array> {
    let signed = |n: usize, salt: usize| -> Vec<f32> {
        (0..n)
            .map(|i| match (i * 7 + salt) % 5 {
                0 => -0.0,
                1 => 0.0,
                2 => -1.0,
                3 => 1.0,
                _ => -0.0,
            })
            .collect()
    };
    vec![
        Array {
            shape: vec![256, 128],
            data: signed(256 * 128, 1),
        },
        Array {
            shape: vec![256, 512],
            data: signed(256 * 512, 3),
        },
    ]
}

fn bits(a: &Array) -> Vec<u32> {
    a.data.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn the_folded_accumulation_keeps_every_bit() {
    let original = penguin::parse_function(KERNEL).expect("the test kernel parses");
    let mut folded = original.clone();
    let log = backend::transform::fold_zeros::fold_psum_zeros(&mut folded);
    assert_eq!(log.len(), 1, "{log:?}");
    // The remark names the tile and the loop whose first iteration overwrites it.
    let (tile, iv) = match &log[0] {
        Remark::ZeroingFolded { tile, iv, lb: 0 } => (tile.clone(), iv.clone()),
        other => panic!("expected a folded zeroing, got {other:?}"),
    };
    assert_eq!(iv, "k", "{log:?}");
    assert!(KERNEL.contains(&format!("{tile}[")), "{tile}");
    assert!(
        log[0].to_string().contains(&format!("PSUM tile `{tile}`")),
        "{log:?}"
    );
    penguin::verify_function(&folded).expect("the folded kernel verifies");
    let text = penguin::write_function(&folded);
    assert!(!text.contains("memset"), "{text}");
    assert!(text.contains("if k == 0"), "{text}");
    assert!(text.contains("matmul.pe(accumulate=false)"), "{text}");
    let want = interpret(&original, &inputs()).unwrap();
    let got = interpret(&folded, &inputs()).unwrap();
    assert_eq!(bits(&got.outputs[0]), bits(&want.outputs[0]));
    // Some outputs are zeros: the case the fold must not turn into `-0.0` or back.
    assert!(want.outputs[0].data.contains(&0.0));
    // The simulator runs the folded program to the same bits, without the Vector engine's memset.
    let compiled = backend::compile(&folded, None).unwrap();
    let sim_inputs: Vec<_> = inputs()
        .into_iter()
        .map(|a| runtime_sim::sim::Array {
            shape: a.shape,
            data: a.data,
        })
        .collect();
    let r =
        runtime_sim::sim::simulate(&compiled.program, &sim_inputs, &Default::default()).unwrap();
    assert!(r.races.is_empty(), "{:?}", r.races);
    let sim: Vec<u32> = r.outputs[0].1.data.iter().map(|v| v.to_bits()).collect();
    assert_eq!(sim, bits(&want.outputs[0]));
    assert_eq!(r.stats.opcodes.get("memset"), None);
}

#[test]
fn a_zeroing_that_another_statement_reads_first_is_left_alone() {
    // The copy reads `acc` between the zeroing and the loop: nothing to fold.
    let text = KERNEL.replacen(
        "  loop k in 0..2 affine {",
        "  stmt {\n    res[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 0 +: 512]\n  }\n  loop k in 0..2 affine {",
        1,
    );
    let mut f = penguin::parse_function(&text).expect("the variant parses");
    assert!(backend::transform::fold_zeros::fold_psum_zeros(&mut f).is_empty());
}
