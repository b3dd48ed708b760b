//! End-to-end tests of `nkc sim`: outputs through `.npy` files, `--json`, `--trace`,
//! `--no-numerics`, and exit code 1 with a clear message for every kind of bad input.

mod common;

use common::{nkc, scratch, stderr};

use nkc::npy::{read_npy, write_npy};
use penguin::interp::Array;
use std::process::Output;

const ADD: &str = "runtime-sim/tests/programs/add.s";

fn array(shape: &[usize], f: impl Fn(usize) -> f32) -> Array {
    Array {
        shape: shape.to_vec(),
        data: (0..shape.iter().product()).map(f).collect(),
    }
}

#[test]
fn sim_adds_given_inputs_and_writes_outputs() {
    let dir = scratch("sim", "add");
    let a = array(&[128, 512], |i| i as f32 * 0.001 - 7.0);
    let b = array(&[128, 512], |i| (i % 97) as f32);
    write_npy(&dir.join("a.npy"), &a).unwrap();
    write_npy(&dir.join("b.npy"), &b).unwrap();
    let out = dir.join("out");
    let o = nkc(&[
        "sim",
        ADD,
        "--input",
        &format!("a={}", dir.join("a.npy").display()),
        "--input",
        &format!("b={}", dir.join("b.npy").display()),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("32512 cycles"), "{text}");
    let c = read_npy(&out.join("out.npy")).unwrap();
    let want: Vec<u32> = a
        .data
        .iter()
        .zip(&b.data)
        .map(|(x, y)| (x + y).to_bits())
        .collect();
    assert_eq!(c.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want);
}

#[test]
fn sim_json_and_trace() {
    let dir = scratch("sim", "json");
    let trace = dir.join("t.json");
    let o = nkc(&[
        "sim",
        ADD,
        "--json",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["cycles"], 32512);
    assert_eq!(v["bound"], 2588);
    assert_eq!(v["engines"]["dve"]["busy"], 1084);
    assert_eq!(v["queues"][1]["transfers"], 1);
    assert_eq!(v["outputs"]["out"], serde_json::json!([128, 512]));
    assert_eq!(v["races"], serde_json::json!([]));
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(t["traceEvents"].as_array().unwrap().len() > 21);
    // The seed decides the inputs; the same seed gives the same outputs.
    let again = nkc(&["sim", ADD, "--json", "--seed", "3"]);
    let other = nkc(&["sim", ADD, "--json", "--seed", "4"]);
    let sum = |o: &Output| {
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["checksums"]["out"].clone()
    };
    assert_eq!(sum(&o), sum(&again));
    assert_ne!(sum(&o), sum(&other));
    // Timing only: the same cycles, no values.
    let n = nkc(&["sim", ADD, "--json", "--no-numerics"]);
    let nv: serde_json::Value = serde_json::from_slice(&n.stdout).unwrap();
    assert_eq!(nv["cycles"], 32512);
    assert_eq!(nv["numerics"], false);
    assert_eq!(nv["checksums"]["out"], 0.0);
}

#[test]
fn sim_bad_inputs_exit_1_with_a_message() {
    let dir = scratch("sim", "bad");
    let bad = dir.join("bad.s");
    std::fs::write(
        &bad,
        "engine dve {\n  memset sbuf.f32[0, 4; 0; 4:1] 0.0\n}\n",
    )
    .unwrap();
    let o = nkc(&["sim", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.s:2:33: expected `,`"),
        "{}",
        stderr(&o)
    );

    std::fs::write(&bad, "semaphore s\nengine act {\n  wait s >= 1\n}\n").unwrap();
    let o = nkc(&["sim", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("deadlock"), "{}", stderr(&o));

    std::fs::write(
        &bad,
        "engine pool {\n  copy psum.f32[0, 4; 0; 4:1], sbuf.f32[0, 4; 0; 4:1]\n}\n",
    )
    .unwrap();
    let o = nkc(&["sim", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot access PSUM"), "{}", stderr(&o));

    let o = nkc(&["sim", ADD, "--input", "zz=/no/such.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("`zz` is not an input tensor"),
        "{}",
        stderr(&o)
    );

    let small = dir.join("a.npy");
    write_npy(&small, &array(&[2, 2], |i| i as f32)).unwrap();
    let o = nkc(&["sim", ADD, "--input", &format!("a={}", small.display())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("has shape [2, 2]"), "{}", stderr(&o));

    // HBM scratch starts undefined: reading it is not an error (the values are undefined), but
    // writing an undefined value back into HBM is, naming the element.
    std::fs::write(
        &bad,
        "tensor tmp: f32[64] scratch\nengine sp {\n  dma q0 sbuf.f32[0, 4; 0; 4:1], hbm tmp[8; 4:4, 4:1]\n}\n",
    )
    .unwrap();
    let o = nkc(&["sim", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::write(
        &bad,
        "tensor tmp: f32[64] scratch\nengine sp {\n  dma q0 sbuf.f32[0, 4; 0; 4:1], hbm tmp[8; 4:4, 4:1]\n  dma q1 hbm tmp[32; 4:4, 4:1], sbuf.f32[0, 4; 0; 4:1]\n}\n",
    )
    .unwrap();
    let o = nkc(&["sim", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("writes element 32 of HBM tensor `tmp` with an undefined value"),
        "{}",
        stderr(&o)
    );

    let o = nkc(&["sim", "/no/such/program.s"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn sim_reports_races_and_exits_1() {
    let dir = scratch("sim", "race");
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/runtime-sim/tests/programs/add.s"
    ))
    .unwrap();
    let racy: String = src
        .lines()
        .filter(|l| !l.contains("wait lb >= 1"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = dir.join("racy.s");
    std::fs::write(&p, racy).unwrap();
    let o = nkc(&["sim", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("1 data race") && e.contains("dma q1") && e.contains("tensor_tensor add"),
        "{e}"
    );
}
