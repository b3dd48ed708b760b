//! Kernels made by factories (`tests/factory/factories.py`), named by the run as the factory's
//! call: `--kernel 'make_masked_scale(256, 3.0)[0]'` (`frontend/src/check/factory.rs`). The
//! factory runs at compile time as host code runs it, the jitted closure it returns is the
//! kernel, and its body sees what it closes over: `np.tril` / `np.triu` constants made by the
//! factory, its arguments. A wrapper the factory returns may launch the kernel over a grid
//! (`_blocks[2](x)`, `check/grid.rs` `call_launch`). Each result is judged against a reference
//! computed here from the inputs, and the simulator against the interpreter bit for bit on every
//! path. Before these, nkc refused each `--kernel` expression (E0197), `np.tril` (E0110) and a
//! subscripted function (E0210).

mod common;

use common::{near, nkc, stderr};
use std::path::Path;

const FILE: &str = "tests/factory/factories.py";

/// Compiles `kernel` of the factories' file with `shape` for its one parameter `x`, and
/// interprets it on inputs from `seed`: (inputs, outputs).
fn interpret(
    kernel: &str,
    shape: &[usize],
    seed: u64,
) -> (Vec<penguin::interp::Array>, Vec<penguin::interp::Array>) {
    let src = nkc::driver::Source::read(Path::new(FILE)).expect("the file reads");
    let mut specs = frontend::Specs::new();
    let shape = shape.iter().map(|&d| d as u64).collect();
    let spec = frontend::ParamSpec {
        dtype: penguin::DType::F32,
        shape,
    };
    specs.insert("x".to_string(), spec);
    let func = nkc::driver::compile_with(&src, Some(kernel), &specs)
        .unwrap_or_else(|f| panic!("{kernel}: {f:?}"));
    let inputs = penguin::interp::random_inputs(&func, seed);
    let out = penguin::interp::interpret(&func, &inputs)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"))
        .outputs;
    (inputs, out)
}

#[test]
fn a_closure_a_factory_returns_in_a_tuple_is_the_kernel() {
    let (inp, out) = interpret("make_masked_scale(256, 3.0)[0]", &[256, 128], 3);
    let x = &inp[0];
    for r in 0..256 {
        for c in 0..128 {
            let v = x.data[r * 128 + c] as f64;
            let want = if c <= r % 128 { v * 3.0 } else { v };
            near(out[0].data[r * 128 + c], want, &format!("out[{r}, {c}]"));
        }
    }
}

#[test]
fn a_wrapper_launches_the_kernel_over_a_grid_of_programs() {
    let (inp, out) = interpret("get_block_kernel(3, 64)", &[384, 64], 4);
    let x = &inp[0];
    for r in 0..384 {
        for c in 0..64 {
            // Program `b` writes block `b` from block `2 - b`, doubled.
            let from = (2 - r / 128) * 128 + r % 128;
            let want = x.data[from * 64 + c] as f64 * 2.0;
            near(out[0].data[r * 64 + c], want, &format!("out[{r}, {c}]"));
        }
    }
}

#[test]
fn factory_kernels_run_bit_exact_on_every_path() {
    for (kernel, shape) in [
        ("make_masked_scale(256, 3.0)[0]", "x=256x128"),
        ("get_block_kernel(3, 64)", "x=384x64"),
    ] {
        for path in ["default", "emergent", "none"] {
            let o = nkc(&[
                "run",
                FILE,
                "--kernel",
                kernel,
                "--shape",
                shape,
                "--check",
                "--json",
                "--pipeline",
                path,
            ]);
            assert!(o.status.success(), "{kernel} {path}: {}", stderr(&o));
            let v: serde_json::Value =
                serde_json::from_slice(&o.stdout).expect("run --json prints JSON");
            assert_eq!(v["checked"], true, "{kernel} {path}");
            let (cycles, bound) = (v["cycles"].as_u64(), v["lower_bound"].as_u64());
            assert!(
                cycles >= bound,
                "{kernel} {path}: {cycles:?} below {bound:?}"
            );
        }
    }
}

#[test]
fn a_factory_call_that_gives_no_function_is_e0197_with_a_help() {
    let o = nkc(&[
        "check",
        FILE,
        "--kernel",
        "make_number(4)",
        "--shape",
        "x=128x128",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("error[E0197]"), "{err}");
    assert!(
        err.contains("is a `int`, not a function to compile"),
        "{err}"
    );
    assert!(err.contains("help: "), "{err}");
    // Not an expression at all.
    let o = nkc(&[
        "check",
        FILE,
        "--kernel",
        "make_number(",
        "--shape",
        "x=128x128",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("neither a kernel's name nor a Python expression"),
        "{err}"
    );
}

#[test]
fn a_python_error_in_the_factory_is_placed_in_the_factory() {
    // The factory's call lacks an argument: a Python error, reported without a place in the
    // file (the expression is the run's), saying where it came from.
    let o = nkc(&[
        "check",
        FILE,
        "--kernel",
        "make_masked_scale(256)[0]",
        "--shape",
        "x=256x128",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("missing the argument `scale`"), "{err}");
    assert!(
        err.contains("while evaluating `--kernel make_masked_scale(256)[0]`"),
        "{err}"
    );
}

#[test]
fn a_shape_for_no_parameter_of_the_made_kernel_is_an_error() {
    let o = nkc(&[
        "check",
        FILE,
        "--kernel",
        "make_masked_scale(256, 3.0)[0]",
        "--shape",
        "y=256x128",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("`y`"), "{err}");
}
