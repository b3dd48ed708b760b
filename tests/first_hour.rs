//! A new user's first hour (issue 31): what the obvious first commands do. Piping into `head`
//! ends quietly; no option is silently ignored; wrong names get a did-you-mean; `.s` and `.nk`
//! files given to the wrong command say which command runs them; `--message-format json`,
//! `nkc explain`, several files to `check`; bfloat16 `.npy` in and out; the help texts say
//! what the options do.

mod common;

use common::{nkc, scratch, scratch_kernel, stderr, stdout};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// `nkc ARGS` with its standard output a pipe that the reader closes after `keep` lines (0:
/// before reading anything); returns the exit status code and standard error.
fn with_closed_pipe(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nkc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nkc starts");
    let pipe = child.stdout.take().expect("piped stdout");
    if keep > 0 {
        let mut lines = BufReader::new(pipe).lines();
        for _ in 0..keep {
            assert!(lines.next().is_some(), "{args:?}: fewer than {keep} lines");
        }
        // `lines` (the read end) is dropped here, with most of the output unread.
    } else {
        drop(pipe);
    }
    let o = child.wait_with_output().expect("nkc ends");
    (o.status.code(), stderr(&o))
}

#[test]
fn a_closed_pipe_ends_nkc_quietly_not_as_an_internal_error() {
    // A syntax tree far larger than a pipe's buffer: the writes after `head` leaves fail.
    for keep in [0, 1] {
        let (code, err) =
            with_closed_pipe(&["compile", "examples/matmul.nk", "--emit", "ast"], keep);
        assert_eq!(code, Some(0), "keep {keep}: {err}");
        assert!(
            !err.contains("internal compiler error") && !err.contains("panicked"),
            "{err}"
        );
    }
    let (code, err) = with_closed_pipe(&["sim", "runtime-sim/tests/programs/loop.s", "--json"], 0);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("internal compiler error"), "{err}");
    let (code, err) = with_closed_pipe(&["compile", "examples/matmul.nk", "--emit", "isa"], 0);
    assert_eq!((code, err.contains("panicked")), (Some(0), false), "{err}");
}

const SCALAR: &str = "\
def k(a, n=2):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(n):
        t = nl.load(a[0:128, 0:512])
        nl.store(out[0:128, 0:512], value=t)
    return out
";

#[test]
fn shape_on_a_scalar_a_typed_parameter_or_no_parameter_is_an_error() {
    let k = scratch_kernel("first-hour", "scalar", SCALAR);
    let o = nkc(&["run", &k, "--shape", "a=128x512", "--shape", "n=4"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`n` is a scalar parameter") && err.contains("--arg n=VALUE"),
        "{err}"
    );

    // A typo of a parameter's name: did you mean, in every command.
    for cmd in ["check", "compile", "run"] {
        let o = nkc(&[cmd, &k, "--shape", "aa=128x512"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("has no parameter `aa`") && err.contains("did you mean `a`?"),
            "{cmd}: {err}"
        );
    }

    // A typed parameter declares its shape.
    let o = nkc(&["check", "examples/tensor_add.nk", "--shape", "a=128x512"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("`a` declares its type"), "{err}");
    let o = nkc(&["check", "examples/tensor_add.nk", "--dtype", "a=bfloat16"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = nkc(&["run", "examples/tensor_add.nk", "--dtype", "bfloat16"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("has none"), "{}", stderr(&o));
}

const HINTED: &str = "\
import neuronxcc.nki.typing as nt
def k(a: nt.tensor, b: nl.ndarray, n: int = 2):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, 0:64])
    u = nl.load(b[0:128, 0:64])
    nl.store(out[0:128, 0:64], value=nl.add(t, u))
    return out
";

#[test]
fn a_tensor_annotation_without_a_shape_takes_the_shape_of_the_run() {
    // `nt.tensor`, `nki.tensor`, `nl.ndarray`: hints that say nothing of the shape, so the run
    // gives it (and the dtype), as for an untyped parameter.
    let k = scratch_kernel("first-hour", "hinted", HINTED);
    let o = nkc(&[
        "run",
        &k,
        "--shape",
        "a=128x64",
        "--shape",
        "b=128x64",
        "--dtype",
        "a=bfloat16",
        "--dtype",
        "b=bfloat16",
        "--check",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A scalar annotation is no tensor's.
    let o = nkc(&[
        "run", &k, "--shape", "a=128x64", "--shape", "b=128x64", "--shape", "n=4",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn a_trace_from_the_interpreter_is_a_usage_error() {
    let dir = scratch("first-hour", "trace");
    let trace = dir.join("t.json");
    let o = nkc(&[
        "run",
        "examples/tensor_add.nk",
        "--engine",
        "interp",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--engine interp") && err.contains("--trace"),
        "{err}"
    );
    assert!(!trace.exists());
}

/// Writes a C-order `.npy` of `descr` (`<f4` or `<u2`) with these raw little-endian bytes.
fn write_npy(path: &Path, descr: &str, shape: &[usize], data: &[u8]) {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

/// The descr of a `.npy` file's header.
fn descr_of(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).into_owned();
    let at = text.find("'descr': '").expect("a descr") + 10;
    text[at..].split('\'').next().unwrap().to_string()
}

#[test]
fn every_command_takes_input_arrays_and_bfloat16_goes_in_and_out() {
    let dir = scratch("first-hour", "inputs");
    let (rows, cols) = (128, 512);
    let n = rows * cols;
    // a: bfloat16 patterns of 1.5 (0x3fc0); b: float32 0.25.
    let a = dir.join("a.npy");
    let b = dir.join("b.npy");
    write_npy(&a, "<u2", &[rows, cols], &0x3fc0u16.to_le_bytes().repeat(n));
    write_npy(&b, "<f4", &[rows, cols], &0.25f32.to_le_bytes().repeat(n));
    let (ia, ib) = (
        format!("a_input={}", a.display()),
        format!("b_input={}", b.display()),
    );
    let file = "tests/nki/tensor_add.nk";
    for cmd in ["check", "compile"] {
        let o = nkc(&[cmd, file, "--input", &ia, "--input", &ib]);
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
    }
    let out = dir.join("out");
    let o = nkc(&[
        "run",
        file,
        "--input",
        &ia,
        "--input",
        &ib,
        "--check",
        "--json",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The bfloat16 file made `a_input` bfloat16, and the output follows `a_input.dtype`.
    assert_eq!(v["dtypes"]["c_output"], "bfloat16", "{v}");
    assert_eq!(v["summary"]["c_output"]["max"], 1.75, "{v}");
    let written = out.join("c_output.npy");
    assert_eq!(descr_of(&written), "<u2");
    // Read back as an input (bfloat16 patterns), it gives the same values.
    let o = nkc(&[
        "run",
        file,
        "--input",
        &format!("a_input={}", written.display()),
        "--input",
        &ib,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("c_output: bf16[128, 512]") && text.contains("max 2.000000"),
        "{text}"
    );

    // Per-parameter dtype: only `a_input` bfloat16; the text labels the output bf16.
    let o = nkc(&[
        "run",
        file,
        "--shape",
        "a_input=128x512",
        "--shape",
        "b_input=128x512",
        "--dtype",
        "a_input=bfloat16",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("c_output: bf16[128, 512]"),
        "{}",
        stdout(&o)
    );
    let o = nkc(&[
        "run",
        file,
        "--shape",
        "a_input=128x512",
        "--shape",
        "b_input=128x512",
    ]);
    assert!(
        stdout(&o).contains("c_output: f32[128, 512]"),
        "{}",
        stdout(&o)
    );

    // compare and suggest take the arrays too.
    let o = nkc(&["compare", file, "--input", &ia, "--input", &ib, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["emergent"]["dtypes"]["c_output"], "bfloat16", "{v}");
}

#[test]
fn a_wrong_kernel_name_gets_a_did_you_mean_and_no_label_in_the_file() {
    for cmd in ["check", "compile", "run"] {
        let o = nkc(&[cmd, "examples/matmul.nk", "--kernel", "matmull"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("error[E0197]") && err.contains("did you mean `matmul`?"),
            "{err}"
        );
        assert!(
            !err.contains(":1:1") && !err.contains("-->"),
            "{cmd}: a label in the file: {err}"
        );
    }
}

#[test]
fn a_program_and_a_kernel_given_to_the_wrong_command_name_the_right_one() {
    let o = nkc(&["run", "runtime-sim/tests/programs/loop.s"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nkc sim runtime-sim/tests/programs/loop.s"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one error, not parse errors: {err}");
    let o = nkc(&["sim", "examples/tensor_add.nk"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("nkc run examples/tensor_add.nk"), "{err}");
}

const BAD: &str = "\
def k(a: nl.hbm[nl.float32, 128, 512]):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(b[0:128, 0:512])
    nl.store(out[0:128, 0:512], value=t)
    return out
";

#[test]
fn diagnostics_as_json_lines_and_json_errors_from_run_and_compare() {
    let k = scratch_kernel("first-hour", "bad", BAD);
    for args in [
        vec!["check", k.as_str(), "--message-format", "json"],
        vec!["--message-format", "json", "check", k.as_str()],
        vec!["check", k.as_str(), "--json"],
    ] {
        let o = nkc(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let text = stdout(&o);
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        let d = &lines[0];
        assert_eq!(d["code"], "E0100", "{d}");
        assert_eq!(d["severity"], "error");
        let span = &d["spans"][0];
        assert_eq!(
            (span["line_start"].as_u64(), span["column_start"].as_u64()),
            (Some(3), Some(17)),
            "{d}"
        );
        assert_eq!(
            &BAD[span["byte_start"].as_u64().unwrap() as usize..][..1],
            "b"
        );
        assert_eq!(span["is_primary"], true);
        assert!(
            stderr(&o).is_empty(),
            "JSON replaces the human form: {}",
            stderr(&o)
        );
    }
    // `run --json` and a one-file `compare --json` print an error object.
    for cmd in ["run", "compare"] {
        let o = nkc(&[cmd, &k, "--json"]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
        assert_eq!(v["exit_code"], 1, "{v}");
        assert_eq!(v["diagnostics"][0]["code"], "E0100", "{v}");
        assert!(
            stderr(&o).contains("error[E0100]"),
            "and the human form on stderr"
        );
    }
    // Errors without a code are objects too.
    let o = nkc(&["check", "no/such/file.nk", "--message-format", "json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!(
        (v["code"].is_null(), o.status.code()),
        (true, Some(1)),
        "{v}"
    );
}

#[test]
fn check_takes_several_files_and_reports_each() {
    let bad = scratch_kernel("first-hour", "several", BAD);
    let o = nkc(&["check", "examples/softmax.nk", &bad, "examples/matmul.nk"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).matches("error[E0100]").count(),
        1,
        "{}",
        stderr(&o)
    );
    let o = nkc(&["check", "examples/softmax.nk", "examples/matmul.nk"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn explain_prints_the_explanation_of_a_code() {
    let o = nkc(&["explain", "E0205"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.starts_with("E0205: ") && text.contains("--shape"),
        "{text}"
    );
    assert_eq!(stdout(&nkc(&["explain", "e205"])), text);
    let o = nkc(&["explain", "E9999"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a diagnostic code"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_help_says_what_each_option_does() {
    let help = |args: &[&str]| stdout(&nkc(args));
    assert!(help(&["--help"]).contains("Exit codes: 0 success"));
    let run = help(&["run", "--help"]);
    assert!(
        run.contains("Exit codes") && run.contains("The kernel file: NKI-style"),
        "{run}"
    );
    assert!(
        run.contains("--kernel <NAME>") && run.contains("Which kernel of the file"),
        "{run}"
    );
    assert!(!run.contains("the only path so far"), "{run}");
    assert!(run.contains("often much slower than `default`"), "{run}");
    let sim = help(&["sim", "--help"]);
    for flag in ["--log", "--no-legality-check", "--shape", "--pipeline"] {
        assert!(!sim.contains(flag), "sim offers {flag}: {sim}");
    }
    assert!(help(&["compare", "--help"]).contains("`auto`"));
    for cmd in ["check", "compile", "compare", "suggest"] {
        let h = help(&[cmd, "--help"]);
        assert!(h.contains("--input <NAME=PATH.npy>"), "{cmd}: {h}");
    }
}

#[test]
fn the_cycle_limit_names_the_flag_that_raises_it() {
    let o = nkc(&[
        "sim",
        "runtime-sim/tests/programs/loop.s",
        "--max-cycles",
        "10",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E0902") && err.contains("--max-cycles N"),
        "{err}"
    );
    for cmd in ["run", "compare"] {
        let o = nkc(&[cmd, "examples/tensor_add.nk", "--max-cycles", "1000"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("E0902") && err.contains("--max-cycles N"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn suggest_json_is_one_object_measured_on_the_default_path() {
    let o = nkc(&["suggest", "examples/transpose_stages.nk", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!(v["measured_on"], "default", "{v}");
    assert!(v["loops"][0]["current_cycles"].as_u64().is_some(), "{v}");
}

#[test]
fn sim_labels_and_writes_bfloat16_outputs_as_bfloat16() {
    let dir = scratch("first-hour", "sim-bf16");
    let prog = dir.join("add.s");
    let o = nkc(&[
        "compile",
        "tests/nki/tensor_add.nk",
        "--shape",
        "a_input=128x512",
        "--shape",
        "b_input=128x512",
        "--dtype",
        "bfloat16",
        "--emit",
        "isa",
        "-o",
        prog.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.join("out");
    let o = nkc(&[
        "sim",
        prog.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("output c_output: bf16[128, 512]"),
        "{}",
        stdout(&o)
    );
    assert_eq!(descr_of(&out.join("c_output.npy")), "<u2");
}

/// Every option a command takes either does something there or is a usage error (exit 2) that
/// names it: never silently ignored. One row per command and option whose meaning depends on
/// the others: the arguments, and `None` when the option must work, else a word the usage
/// error must contain.
#[test]
fn no_option_is_silently_ignored() {
    let k = "examples/softmax_stages.nk";
    let usage: &[(&[&str], &str)] = &[
        (&["check", k, "--log", "backend"], "nkc run"),
        (
            &["compile", k, "--emit", "penguin", "--log", "backend"],
            "--log backend",
        ),
        (
            &["compile", k, "--emit", "pipelined", "--log", "backend"],
            "--log backend",
        ),
        (
            &["compile", k, "--emit", "penguin", "--log", "pipeliner"],
            "--log pipeliner",
        ),
        (
            &["compile", k, "--emit", "ast", "--log", "pipeliner"],
            "--log pipeliner",
        ),
        (&["compile", k, "--emit", "penguin", "--peel"], "--peel"),
        (
            &["compile", k, "--emit", "penguin", "--no-legality-check"],
            "--no-legality-check",
        ),
        (
            &[
                "compile",
                k,
                "--emit",
                "pipelined",
                "--pipeline",
                "emergent",
            ],
            "--pipeline",
        ),
        (
            &["compile", k, "--emit", "penguin", "--pipeline", "none"],
            "--pipeline",
        ),
        (
            &["compile", k, "--emit", "ast", "--time-passes"],
            "--time-passes",
        ),
        (
            &["run", k, "--engine", "interp", "--trace", "t.json"],
            "--trace",
        ),
    ];
    for (args, word) in usage {
        let o = nkc(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(word), "{args:?} does not name `{word}`: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // The same options where they mean something: each leaves a trace of its work.
    let works: &[(&[&str], &str)] = &[
        (&["check", k, "--log", "pipeliner"], "pipeliner: loop `i`"),
        (
            &["check", k, "--no-legality-check"],
            "legality check was skipped",
        ),
        (
            &["compile", k, "--emit", "pipelined", "--log", "pipeliner"],
            "pipeliner: loop `i`",
        ),
        (
            &["compile", k, "--emit", "isa", "--log", "backend"],
            "emergent: ",
        ),
        (
            &["compile", k, "--emit", "penguin", "--time-passes"],
            "lower",
        ),
        (
            &[
                "compile",
                k,
                "--emit",
                "penguin",
                "--print-after",
                "emit",
                "--log",
                "backend",
            ],
            "emergent: ",
        ),
        (
            &["run", k, "--engine", "interp", "--log", "backend"],
            "emergent",
        ),
        (&["run", k, "--log", "backend"], "modulo schedule of loop"),
    ];
    for (args, trace) in works {
        let o = nkc(args);
        let err = stderr(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains(trace),
            "{args:?}: no `{trace}` on stderr: {err}"
        );
    }
    // `--pipeline` changes the program `--emit isa` prints.
    let isa = |mode: &str| stdout(&nkc(&["compile", k, "--emit", "isa", "--pipeline", mode]));
    assert_ne!(isa("default"), isa("none"));
}

/// Runs `nkc ARGS` with standard error on a pseudo-terminal (standard output a pipe) and the
/// progress bar due at once (`NKC_PROGRESS_AFTER_MS=0`); returns the exit code and everything
/// the terminal received.
fn on_a_terminal(args: &[&str]) -> (Option<i32>, String) {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: plain POSIX calls on descriptors this function opens and owns; each result is
    // checked before it is used.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        let master = OwnedFd::from_raw_fd(master);
        use std::os::fd::AsRawFd;
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0, "grantpt");
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()),
            0,
            "ptsname_r"
        );
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            slave >= 0,
            "open the pty: {}",
            std::io::Error::last_os_error()
        );
        let size = libc::winsize {
            ws_row: 24,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        assert_eq!(libc::ioctl(slave, libc::TIOCSWINSZ, &size), 0, "TIOCSWINSZ");
        (master, OwnedFd::from_raw_fd(slave))
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nkc"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NKC_PROGRESS_AFTER_MS", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave));
    let child = cmd.spawn().expect("nkc starts");
    // The child holds the terminal's only other end now: reading stops (EIO) when it exits.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut file = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = file.read(&mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        bytes
    });
    let o = child.wait_with_output().expect("nkc ends");
    let seen = reader.join().expect("the reader ends");
    (o.status.code(), String::from_utf8_lossy(&seen).into_owned())
}

/// A kernel whose simulation runs about 95,000 instructions (and 7·10^6 cycles, under the
/// `--max-cycles` it is given): long enough for the simulator to report its progress once
/// (every 65,536 instructions).
const LONG: &str = "\
def long(a: nl.hbm[nl.float32, 128, 65536]):
    out = nl.ndarray((128, 65536), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(16384):
        t = nl.load(a[:, i * 4:i * 4 + 4])
        u = nl.add(t, 1.0)
        nl.store(out[:, i * 4:i * 4 + 4], u)
    return out
";

#[test]
fn a_progress_bar_on_a_terminal_and_none_on_a_pipe() {
    const MAX: &str = "100000000";
    let long = scratch_kernel("first_hour", "long.nk", LONG);
    let prog = scratch("first_hour", "long").join("long.s");
    let o = nkc(&[
        "compile",
        &long,
        "--emit",
        "isa",
        "-o",
        prog.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let prog = prog.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["run", long.as_str(), "--max-cycles", MAX], "simulating ["),
        (&["sim", prog, "--max-cycles", MAX], "simulating ["),
        (&["compare", long.as_str(), "--max-cycles", MAX], "path ["),
        (&["suggest", "examples/softmax_stages.nk"], "candidate ["),
    ];
    for (args, bar) in cases {
        let (code, seen) = on_a_terminal(args);
        assert_eq!(code, Some(0), "{args:?}: {seen}");
        assert!(
            seen.contains(bar),
            "{args:?}: no `{bar}` on the terminal: {seen:?}"
        );
        // On a pipe, the same run draws nothing.
        let o = Command::new(env!("CARGO_BIN_EXE_nkc"))
            .args(*args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NKC_PROGRESS_AFTER_MS", "0")
            .output()
            .expect("nkc runs");
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains(bar), "{args:?}: a bar on a pipe");
    }
    // A run stopped by the cycle limit names the flag that raises it, on a terminal too.
    let (code, seen) = on_a_terminal(&["run", long.as_str(), "--max-cycles", "200000"]);
    assert_eq!(code, Some(1), "{seen}");
    assert!(
        seen.contains("E0902") && seen.contains("--max-cycles"),
        "{seen}"
    );
}

/// Logs, the compare line and diagnostics name what the user wrote: never a temporary of the
/// checker (`_tensor_scalar`, `_activation`) or a suffix lowering added (`j.1`), while the IR
/// keeps its unique names.
#[test]
fn logs_and_the_compare_line_name_what_the_user_wrote() {
    let o = nkc(&["compare", "examples/softmax.nk"]);
    let text = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        text.contains("dve.tensor_scalar(nl.multiply@7:53)")
            && text.contains("act.activation(nl.reciprocal@9:28)"),
        "{text}"
    );
    let o = nkc(&["compare", "examples/attention_stages.nk"]);
    assert!(stdout(&o).contains("loop `j@18:13`"), "{}", stdout(&o));
    for (file, args) in [
        (
            "examples/softmax.nk",
            &["run", "--log", "pipeliner", "--log", "backend"][..],
        ),
        (
            "examples/attention.nk",
            &["run", "--log", "pipeliner", "--log", "backend"][..],
        ),
        (
            "examples/attention_nested.nk",
            &["run", "--log", "pipeliner", "--log", "backend"][..],
        ),
        ("examples/rmsnorm_stages.nk", &["compare"][..]),
        ("examples/matmul_nested.nk", &["compare"][..]),
    ] {
        let mut all = args.to_vec();
        all.insert(1, file);
        let o = nkc(&all);
        assert!(o.status.success(), "{all:?}: {}", stderr(&o));
        let text = stdout(&o) + &stderr(&o);
        for internal in ["`_", "(_", " _t", "`j.1`", "`k.1`", "loop j.1"] {
            assert!(
                !text.contains(internal),
                "{all:?} shows `{internal}`:\n{text}"
            );
        }
    }
    // The IR keeps its names: the Penguin text still reads back with them.
    let ir = stdout(&nkc(&[
        "compile",
        "examples/softmax.nk",
        "--emit",
        "penguin",
    ]));
    assert!(ir.contains("_tensor_scalar"), "{ir}");
    // A helper's result assigned to a variable is shown by that variable.
    let helper = scratch_kernel(
        "first_hour",
        "helper.nk",
        "\
def scaled(x):
    return nl.multiply(x, 2.0)

def k(a: nl.hbm[nl.float32, 128, 512]):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4, num_stages=2):
        t = nl.load(a[:, i * 128:i * 128 + 128])
        doubled = scaled(t)
        nl.store(out[:, i * 128:i * 128 + 128], doubled)
    return out
",
    );
    let o = nkc(&[
        "compile",
        &helper,
        "--kernel",
        "k",
        "--emit",
        "pipelined",
        "--log",
        "pipeliner",
    ]);
    // (Whether the pipeliner accepts the loop is not the point here: a helper's tile, whose
    // source lies outside the loop, is taken for one carried across iterations, E0430; its
    // diagnostic names `doubled` too.)
    let err = stderr(&o);
    assert!(
        err.contains("`doubled` = tensor_scalar") || err.contains("doubled = tensor_scalar"),
        "{err}"
    );
    assert!(!err.contains("`_") && !err.contains(" _multiply"), "{err}");
}
