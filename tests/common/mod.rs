//! Helpers shared by the end-to-end tests of the `nkc` package: running the binary, scratch
//! directories, the kernel files of a folder, and the `# expect: CODE @ LINE` headers of the test
//! corpora. Each test file uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `nkc` binary from the package root.
pub fn nkc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nkc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the nkc binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `nkc run FILE --check --json` with `args` added: asserts that it succeeds, that the outputs
/// were checked against the interpreter and that the program has no race; returns the JSON and
/// the standard error (the logs).
pub fn run_checked_json(file: &str, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = vec!["run", file, "--check", "--json"];
    all.extend_from_slice(args);
    let o = nkc(&all);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{file} {args:?}: {out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("run --json prints JSON");
    assert_eq!(v["checked"], true, "{file} {args:?}: not checked: {out}");
    assert_eq!(
        v["races"].as_array().map(Vec::len),
        Some(0),
        "{file} {args:?}: races: {out}"
    );
    (v, err)
}

/// Runs `kernel` of `file` on `default` with the backend's log, checked and race-free (as
/// [`run_checked_json`]); asserts that the emergent plan made `tile` a ring (and did not refuse
/// it for not being written whole first) and that the run is within `ratio` of its lower bound.
pub fn assert_ringed_within(file: &str, kernel: &str, tile: &str, ratio: f64) {
    let args = [
        "--kernel",
        kernel,
        "--pipeline",
        "default",
        "--log",
        "backend",
    ];
    let (v, log) = run_checked_json(file, &args);
    assert!(
        log.contains(&format!("`{tile}` becomes a ring of")),
        "{kernel}: {log}"
    );
    assert!(
        !log.contains("does not start by writing all of it"),
        "{kernel}: {log}"
    );
    let (cycles, bound) = (v["cycles"].as_f64(), v["lower_bound"].as_f64());
    let (cycles, bound) = (cycles.expect("cycles"), bound.expect("a bound"));
    assert!(
        cycles <= ratio * bound,
        "{kernel}: {cycles} against {bound}"
    );
}

/// Writes `text` to `k.nk` in a fresh scratch directory; returns its path.
pub fn scratch_kernel(tag: &str, name: &str, text: &str) -> String {
    let f = scratch(tag, name).join("k.nk");
    std::fs::write(&f, text).expect("the scratch directory is writable");
    f.to_str().expect("UTF-8 temporary path").to_string()
}

/// A fresh, empty directory for one test (`tag` keeps tests of different files apart).
pub fn scratch(tag: &str, name: &str) -> PathBuf {
    // A sequence number per call: two tests of one process that run the same case at once (the
    // corpus test and the lower-bound test) must not wipe each other's inputs.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("nkc-{tag}-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    dir
}

/// The `.nk` files of a folder of the package, sorted.
pub fn nk_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "nk"))
        .collect();
    files.sort();
    files
}

/// The `(code, line)` pairs of a file's `# expect: CODE @ LINE` header lines.
pub fn expectations(source: &str) -> Vec<(String, usize)> {
    source
        .lines()
        .filter_map(|l| l.strip_prefix("# expect:"))
        .map(|rest| {
            let (code, line) = rest
                .split_once('@')
                .unwrap_or_else(|| panic!("malformed expectation `{rest}`"));
            let line = line
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("malformed line number in `{rest}`"));
            (code.trim().to_string(), line)
        })
        .collect()
}

/// The 1-based line of a byte offset.
pub fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())].matches('\n').count() + 1
}

/// Asserts that the CPython judge is here: `python3` runs and imports numpy. An absent judge is
/// a failure, never a skip (`make setup` installs both).
pub fn require_python() {
    let ok = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python3 with numpy is required by this test (the CPython judge): run `make setup` \
         (scripts/setup.sh installs both)"
    );
}

/// The address-space cap of [`nkc_capped`]: 2 GiB, the budget of the hardening campaign.
pub const MEMORY_CAP_BYTES: u64 = 2 << 30;

/// Runs the `nkc` binary with its address space capped at [`MEMORY_CAP_BYTES`] (`setrlimit`
/// before `exec`), so an input that makes nkc allocate without bound aborts the child instead of
/// the machine. Hardening tests assert exit code 1 on its output: an allocation failure under the
/// cap shows as an abort (signal) or exit 101, never as 1.
pub fn nkc_capped(args: &[&str]) -> Output {
    nkc_capped_at(MEMORY_CAP_BYTES, args)
}

/// [`nkc_capped`] with the address space capped at `bytes`.
pub fn nkc_capped_at(bytes: u64, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nkc"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    // SAFETY: `setrlimit` is async-signal-safe and touches no state of the parent.
    unsafe {
        cmd.pre_exec(move || {
            let cap = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().expect("the nkc binary runs")
}

/// Asserts that a loop of a `--json` run report (`report["loops"][k]`) measured a steady-state
/// period within 10% of the one its modulo schedule predicted (issue 11's bound).
pub fn assert_measured_as_predicted(l: &serde_json::Value) {
    let (predicted, measured) = (
        l["predicted_period"].as_f64().expect("a predicted period"),
        l["measured_period"].as_f64().expect("a measured period"),
    );
    assert!(
        (measured / predicted - 1.0).abs() <= 0.10,
        "loop `{}`: predicted {predicted}, measured {measured}",
        l["loop"]
    );
}

/// A checked run of `kernel` of `file` on `mode` (`--check`: bit-exact against the interpreter,
/// inputs from `seed`), asserting that it was compared and raced nowhere; its report.
pub fn checked_run(
    file: &str,
    kernel: Option<&str>,
    mode: nkc::pipeline::PipelineMode,
    seed: u64,
) -> nkc::run::RunReport {
    let src = nkc::driver::Source::read(Path::new(file)).unwrap();
    let opts = nkc::run::RunOptions {
        kernel: kernel.map(str::to_string),
        engine: nkc::run::Engine::Sim,
        pipeline: mode,
        seed,
        check: true,
        ..nkc::run::RunOptions::default()
    };
    let r = nkc::run::run(&src, &opts, &mut penguin::pipeline::PipelineLog::default())
        .unwrap_or_else(|f| panic!("{file} {kernel:?} --pipeline {}: {f:?}", mode.name()));
    assert!(r.checked, "{file} {kernel:?}: not compared");
    let sim = r.sim.as_ref().expect("engine sim");
    assert!(sim.races.is_empty(), "{file} {kernel:?}: {:?}", sim.races);
    r
}

/// [`checked_run`] of `kernel` of `file` on `mode` (seed 5), also at or above its lower bound:
/// its report, cycles and lower bound.
pub fn checked_bounded(
    file: &str,
    kernel: &str,
    mode: nkc::pipeline::PipelineMode,
) -> (nkc::run::RunReport, u64, u64) {
    checked_bounded_seeded(file, kernel, mode, 5)
}

/// [`checked_bounded`] with the inputs of `seed`.
pub fn checked_bounded_seeded(
    file: &str,
    kernel: &str,
    mode: nkc::pipeline::PipelineMode,
    seed: u64,
) -> (nkc::run::RunReport, u64, u64) {
    let r = checked_run(file, Some(kernel), mode, seed);
    let sim = r.sim.as_ref().expect("engine sim");
    let (cycles, bound) = (sim.stats.cycles, sim.lower_bound());
    assert!(
        cycles >= bound,
        "{file} `{kernel}` --pipeline {}: {cycles} cycles below the bound {bound}",
        mode.name()
    );
    (r, cycles, bound)
}

/// `nkc compile FILE --kernel KERNEL --pipeline PATH --emit isa`, which must succeed: the program.
pub fn isa_of(file: &str, kernel: &str, path: &str) -> String {
    let out = nkc(&[
        "compile",
        file,
        "--kernel",
        kernel,
        "--pipeline",
        path,
        "--emit",
        "isa",
    ]);
    assert!(
        out.status.success(),
        "{file} `{kernel}` --pipeline {path}: {}",
        stderr(&out)
    );
    stdout(&out)
}

/// The tiles whose stores `backend::retime` moved in run `r` (its `Retimed` remarks).
pub fn retimed(r: &nkc::run::RunReport) -> Vec<&str> {
    r.remarks
        .iter()
        .filter_map(|x| match x {
            backend::transform::remark::Remark::Retimed { tile, .. } => Some(tile.as_str()),
            _ => None,
        })
        .collect()
}

/// Asserts that `got` is `want` within a relative 1e-5 (absolute below 1), naming `what`.
pub fn near(got: f32, want: f64, what: &str) {
    let tol = 1e-5 * want.abs().max(1.0);
    assert!(
        (got as f64 - want).abs() <= tol,
        "{what}: {got} against {want}"
    );
}

/// `tests/good/FILE` kernel `kernel` on the interpreter with seeded random inputs: the inputs and
/// the outputs.
pub fn interpret_good(
    file: &str,
    kernel: &str,
    seed: u64,
) -> (Vec<penguin::interp::Array>, Vec<penguin::interp::Array>) {
    use penguin::interp;
    let src = nkc::driver::Source::read(Path::new(&format!("tests/good/{file}"))).unwrap();
    let func =
        nkc::driver::compile(&src, Some(kernel)).unwrap_or_else(|f| panic!("{kernel}: {f:?}"));
    let inputs = interp::random_inputs(&func, seed);
    let out = interp::interpret(&func, &inputs)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"))
        .outputs;
    (inputs, out)
}

/// A 32-row scatter of 200 f32 columns (800 bytes a row), from an exp of a loaded tile, in reverse
/// row order (`tests/dependence_bound.rs` computes its bound by hand, `tests/lower_bound.rs` runs
/// it near that bound).
pub const SCATTER_ROWS: &str = "def scatter_rows(x: nl.hbm[nl.float32, 32, 200]):
    out = nl.ndarray((32, 200), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(32)[:, None]
    i_f = nl.arange(200)[None, :]
    idx = nisa.iota(31 - i_p, dtype=nl.int32)
    t = nl.load(x)
    nisa.dma_copy(dst=out[idx[i_p, 0], i_f], src=nl.exp(t))
    return out
";
