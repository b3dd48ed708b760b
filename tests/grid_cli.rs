//! The launch grid on the command line (`--grid AxB`) and the kernels that need one: every
//! command that compiles a kernel takes it, a malformed grid is a usage error (exit 2) that
//! says what to write, a kernel asking for `nl.program_id` without a grid is a diagnostic naming
//! `--grid` (human and JSON forms), and `--grid 1` compiles a kernel exactly as no grid does.

mod common;

use common::{nkc, stderr, stdout};

/// The SPMD tutorial's shape of kernel (nkc's own copy): one [128, 512] tile per program.
const SPMD: &str = "tests/nki/rejected/spmd_tensor_add.nk";
const SHAPES: [&str; 4] = ["--shape", "a_input=256x1024", "--shape", "b_input=256x1024"];

fn with_shapes<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(SHAPES);
    v
}

#[test]
fn a_grid_kernel_runs_on_every_command_with_grid() {
    let o = nkc(&with_shapes(&["check", SPMD, "--grid", "2x2"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (v, _) = common::run_checked_json(SPMD, &with_shapes(&["--grid", "2x2"]));
    assert_eq!(
        v["outputs"]["c_output"],
        serde_json::json!([256, 1024]),
        "{v}"
    );
    let o = nkc(&with_shapes(&[
        "run", SPMD, "--grid", "2x2", "--engine", "interp",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The grid is two affine loops around the body, indexed by the program ids.
    let o = nkc(&with_shapes(&["compile", SPMD, "--grid", "2x2"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ir = stdout(&o);
    assert!(
        ir.contains("program_id0") && ir.contains("program_id1"),
        "{ir}"
    );
    let o = nkc(&with_shapes(&["compare", SPMD, "--grid", "2x2"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_grid_kernel_without_grid_names_the_option() {
    let o = nkc(&with_shapes(&["check", SPMD]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("error[E0260]"), "{err}");
    assert!(
        err.contains("--grid 2x4"),
        "the help names the option: {err}"
    );
    assert_eq!(
        err.matches("error[").count(),
        1,
        "one diagnostic, not one per program_id: {err}"
    );
    let o = nkc(&with_shapes(&["check", SPMD, "--message-format", "json"]));
    assert_eq!(o.status.code(), Some(1));
    let d: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap_or("")).expect("a JSON line");
    assert_eq!(d["code"], "E0260", "{d}");
    let o = nkc(&with_shapes(&["run", SPMD, "--json"]));
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!(v["diagnostics"][0]["code"], "E0260", "{v}");
}

#[test]
fn an_axis_outside_the_grid_is_a_diagnostic() {
    let o = nkc(&with_shapes(&["check", SPMD, "--grid", "2"]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("error[E0261]"), "{err}");
    assert!(err.contains("axis 1"), "{err}");
}

#[test]
fn malformed_grids_are_usage_errors_that_say_what_to_write() {
    for (grid, says) in [
        ("2,2", "did you mean `--grid 2x2`?"),
        ("[2, 2]", "did you mean `--grid 2x2`?"),
        ("(4,)", "did you mean `--grid 4`?"),
        ("0x2", "at least one program"),
        ("2x2x2x2x2", "at most 4 axes"),
        ("65536x2", "at most 65536"),
        ("two", "such as `2x4`"),
        ("", "such as `2x4`"),
    ] {
        let o = nkc(&with_shapes(&["check", SPMD, "--grid", grid]));
        assert_eq!(o.status.code(), Some(2), "--grid {grid:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(says), "--grid {grid:?}: {err}");
    }
    let o = nkc(&with_shapes(&[
        "check", SPMD, "--grid", "2x2", "--grid", "2x2",
    ]));
    assert_eq!(o.status.code(), Some(2), "given twice: {}", stderr(&o));
}

#[test]
fn a_grid_of_one_program_compiles_as_no_grid() {
    let file = "tests/nki/tensor_add.nk";
    let shapes = ["--shape", "a_input=256x1024", "--shape", "b_input=256x1024"];
    let mut plain = vec!["compile", file, "--emit", "isa"];
    plain.extend(shapes);
    let mut one = plain.clone();
    one.extend(["--grid", "1x1"]);
    let (a, b) = (nkc(&plain), nkc(&one));
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert_eq!(b.status.code(), Some(0), "{}", stderr(&b));
    assert_eq!(stdout(&a), stdout(&b));
}
