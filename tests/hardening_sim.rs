//! Hardening of the simulator side of nkc (issue 14): inputs that used to panic, abort, flood
//! memory or hang `nkc run` / `nkc sim` now give a clear error with exit code 1 (or, for mixed
//! precision matmuls, simply work). One test per item, each end to end through the `nkc` binary
//! under the 2 GiB address-space cap of [`common::nkc_capped`], so an unbounded allocation shows
//! as an abort, never as exit code 1.

mod common;

use common::{nkc_capped, scratch, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Writes `text` as `name` in a fresh scratch directory of the test `tag`.
fn file(tag: &str, name: &str, text: &str) -> PathBuf {
    let path = scratch("hardening-sim", tag).join(name);
    std::fs::write(&path, text).expect("the scratch directory is writable");
    path
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("scratch paths are UTF-8")
}

/// Asserts exit code 1 (not 101, not a signal) and that the first line of stderr holds `first`.
fn assert_user_error(o: &Output, first: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "status {:?}: {err}", o.status);
    let head = err.lines().next().unwrap_or_default();
    assert!(
        head.contains(first),
        "first line `{head}`, want `{first}`:\n{err}"
    );
}

/// Item 4: a matmul of a bf16 and an f32 operand (either way round) compiles, simulates and
/// agrees bit for bit with the interpreter on every pipelining path.
#[test]
fn mixed_precision_matmul_runs_on_every_path() {
    let example = std::fs::read_to_string("examples/matmul.nk").expect("the example is readable");
    let kernels = [
        example.replace("at: nl.hbm[nl.float32", "at: nl.hbm[nl.bfloat16"),
        example.replace("b: nl.hbm[nl.float32", "b: nl.hbm[nl.bfloat16"),
    ];
    for (k, text) in kernels.iter().enumerate() {
        assert!(text.contains("bfloat16"), "the example changed: {text}");
        let path = file("mixed", &format!("mixed{k}.nk"), text);
        for pipeline in ["default", "annotated", "emergent", "none"] {
            let o = nkc_capped(&["run", arg(&path), "--check", "--pipeline", pipeline]);
            assert_eq!(o.status.code(), Some(0), "{pipeline}: {}", stderr(&o));
            assert!(
                stdout(&o).contains("--check: outputs equal the kernel's as written"),
                "{pipeline}: {}",
                stdout(&o)
            );
        }
    }
}

/// Item 5: storing what a load of HBM scratch that nothing stored read is E0900 at the store on
/// the simulator path (as on the interpreter), and `nkc check` sees the read without running the
/// kernel (at the load: reading HBM scratch that certainly holds nothing is reported statically).
#[test]
fn unwritten_hbm_scratch_is_e0900_on_every_command() {
    let path = file(
        "scratch",
        "scratch.nk",
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n    s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(s[:, 0:256], value=t[:, 0:256])\n    v = nl.load(s)\n    nl.store(c, value=v)\n    return c\n",
    );
    let runs: [&[&str]; 3] = [
        &["run", arg(&path)],
        &["run", arg(&path), "--check", "--pipeline", "emergent"],
        &["run", arg(&path), "--engine", "interp"],
    ];
    for args in runs {
        let o = nkc_capped(args);
        assert_user_error(
            &o,
            "error[E0900]: this stores undefined values of `v` into `c`",
        );
        assert!(
            stderr(&o).contains("scratch.nk:7:5"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let o = nkc_capped(&["check", arg(&path)]);
    assert_user_error(
        &o,
        "error[E0900]: this reads part of `s` that was never written",
    );
    assert!(stderr(&o).contains("scratch.nk:6:9"), "{}", stderr(&o));
}

/// Item 6: `nkc sim` on a program declaring a huge input tensor (40 GB, or a shape whose element
/// count overflows) is E0901 before anything is allocated, with or without `--no-numerics`.
#[test]
fn huge_sim_input_is_e0901_before_allocating() {
    for (k, shape) in ["100000, 100000", "4294967296, 4294967296"]
        .iter()
        .enumerate()
    {
        let program = format!(
            "tensor a: f32[{shape}] input\ntensor out: f32[128, 512] output\nengine sp {{\n}}\n"
        );
        let path = file("huge-input", &format!("huge{k}.s"), &program);
        for extra in [&[][..], &["--no-numerics"][..]] {
            let mut args = vec!["sim", arg(&path)];
            args.extend_from_slice(extra);
            let o = nkc_capped(&args);
            assert_user_error(&o, "error[E0901]");
            assert!(
                stderr(&o).contains("more than the simulator's limit"),
                "{}",
                stderr(&o)
            );
        }
    }
}

/// Item 10: a parameter of 10^12 elements: `nkc run` (either engine) and `nkc compare` stop at the
/// parameter before making any input (the front end's E0173; `nkc sim`'s E0901 is tested below).
#[test]
fn huge_kernel_parameter_is_an_error_before_allocating() {
    let path = file(
        "huge-param",
        "huge.nk",
        "def k(a: nl.hbm[nl.float32, 1000000, 1000000]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a[0:128, 0:512])\n    nl.store(c, value=t)\n    return c\n",
    );
    let runs: [&[&str]; 3] = [
        &["run", arg(&path)],
        &["run", arg(&path), "--engine", "interp"],
        &["compare", arg(&path)],
    ];
    for args in runs {
        let o = nkc_capped(args);
        // The front end sees it first (E0173, `check` reports it too); the driver's own limit
        // (E0901, before any allocation) backs it for IR that does not come from a `.nk` file.
        assert_user_error(
            &o,
            "error[E0173]: the HBM arrays of this kernel hold 1000000000000 elements in all",
        );
        assert!(
            stderr(&o).contains("huge.nk:1:7"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// A `.npy` file: `version` 1 or 2, the dict `header` padded as NumPy pads it, `claimed` (when
/// given) in place of the header's true length, then `data`.
fn npy_bytes(version: u8, header: &str, claimed: Option<u32>, data: &[f32]) -> Vec<u8> {
    let pre = if version == 1 { 10 } else { 12 };
    let mut text = header.to_string();
    while (pre + text.len() + 1) % 64 != 0 {
        text.push(' ');
    }
    text.push('\n');
    let len = claimed.unwrap_or(text.len() as u32);
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(text.as_bytes());
    for x in data {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Item 11: a version 2 `.npy` header claiming 0xFFFFFFF0 bytes is a clear error before anything
/// is allocated for it (as is a shape the data does not hold); a float32 dtype written without a
/// byte order (`'f4'`) is valid NumPy and reads.
#[test]
fn npy_header_sizes_are_checked_and_bare_f4_reads() {
    let kernel = file(
        "npy",
        "copy.nk",
        "def k(a: nl.hbm[nl.float32, 2, 2]):\n    c = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(c, value=t)\n    return c\n",
    );
    let dir = kernel
        .parent()
        .expect("the kernel is in a directory")
        .to_path_buf();
    let data = [1.5f32, -2.0, 3.25, 4.0];
    let header = |descr: &str, shape: &str| {
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
    };
    let bad = [
        (
            "huge_header.npy",
            npy_bytes(2, &header("<f4", "(2, 2)"), Some(0xFFFF_FFF0), &data),
            "its header claims 4294967280 bytes",
        ),
        (
            "huge_shape.npy",
            npy_bytes(1, &header("<f4", "(100000, 100000)"), None, &data),
            "claims shape [100000, 100000], more than",
        ),
        (
            "short.npy",
            npy_bytes(1, &header("<f4", "(3, 2)"), None, &data),
            "but 16 bytes follow its header",
        ),
    ];
    for (name, bytes, why) in bad {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("the scratch directory is writable");
        let input = format!("a={}", path.display());
        for engine in ["sim", "interp"] {
            let o = nkc_capped(&["run", arg(&kernel), "--engine", engine, "--input", &input]);
            assert_user_error(&o, why);
        }
    }
    let bare = dir.join("bare.npy");
    std::fs::write(&bare, npy_bytes(1, &header("f4", "(2, 2)"), None, &data))
        .expect("the scratch directory is writable");
    let out = dir.join("out");
    let o = nkc_capped(&[
        "run",
        arg(&kernel),
        "--check",
        "--input",
        &format!("a={}", bare.display()),
        "--output",
        arg(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = nkc::npy::read_npy(&out.join("c.npy")).expect("nkc writes its outputs");
    assert_eq!(c.shape, [2, 2]);
    assert_eq!(c.data, data);
}

/// Item 12: the simulator keeps a bounded window of each semaphore's signals, not the history of
/// every one (about 170 bytes a signal: 10^7 signals were 1.7 GB). Two engines hand a semaphore
/// back and forth 2 × 10^6 times, race detector on; the window never holds more than a few dozen.
#[test]
fn semaphore_history_stays_bounded() {
    let n = 1_000_000;
    let program = format!(
        "tensor out: f32[1, 1] output\nsemaphore s\nsemaphore t\n\
         engine dve {{\n  loop r0 = 0..{n} {{\n    wait t >= 1*r0\n    memset sbuf.f32[0, 1; 0; 1:1], 0.0 -> s\n  }}\n}}\n\
         engine act {{\n  loop r0 = 0..{n} {{\n    wait s >= 1*r0 + 1\n    copy sbuf.f32[0, 1; 64; 1:1], sbuf.f32[0, 1; 0; 1:1] -> t\n  }}\n}}\n"
    );
    let path = file("sem-window", "pingpong.s", &program);
    // 4 × 10^6 instructions over some 1.4 × 10^8 cycles: past the default limit.
    let o = nkc_capped(&["sim", arg(&path), "--json", "--max-cycles", "1000000000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("--json prints JSON");
    assert_eq!(j["instructions"], 4 * n);
    assert_eq!(j["races"].as_array().map(Vec::len), Some(0), "{j}");
    let peak = j["sem_window_peak"].as_u64().expect("the peak is reported");
    assert!(peak <= 128, "a semaphore kept {peak} signals at once");
    // Standard error is a pipe here: no progress bar, however long the run.
    assert_eq!(stderr(&o), "");
}

/// Item 13: a loop of 10^12 signals (no cycles at all) stops at `--max-cycles` with E0902 instead
/// of running forever; a kernel of 2^48 iterations stops there on the simulator, and the
/// interpreter refuses it by its instruction count at the default limit.
#[test]
fn max_cycles_stops_endless_runs() {
    let program = file(
        "max-cycles",
        "forever.s",
        "tensor out: f32[1, 1] output\nsemaphore s\nengine dve {\n  loop r0 = 0..1000000000000 {\n    signal s\n  }\n}\n",
    );
    let o = nkc_capped(&["sim", arg(&program), "--max-cycles", "100000"]);
    assert_user_error(&o, "error[E0902]");
    assert!(
        stderr(&o).contains("after 100001 instructions"),
        "{}",
        stderr(&o)
    );
    let kernel = file(
        "max-cycles",
        "forever.nk",
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    for j in nl.affine_range(16777216):\n        for i in nl.affine_range(16777216):\n            t = nl.load(a)\n            nl.store(c, value=t)\n    return c\n",
    );
    let runs: [&[&str]; 2] = [
        &[
            "run",
            arg(&kernel),
            "--pipeline",
            "none",
            "--max-cycles",
            "100000",
        ],
        &["run", arg(&kernel), "--engine", "interp"],
    ];
    for args in runs {
        let o = nkc_capped(args);
        assert_user_error(&o, "error[E0902]: `k` runs longer than the limit");
        assert!(
            stderr(&o).contains("this loop runs 281474976710656 times in all"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}
