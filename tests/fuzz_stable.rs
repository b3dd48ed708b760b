//! The fuzz targets of `fuzz/`, on stable Rust and with a fixed budget, in the test suite: a
//! seeded mutation loop over the corpus of each, deterministic (the same inputs on every run), a
//! few seconds each. Every input runs under `catch_unwind`; a panic fails the test and prints the
//! input (saved under `target/fuzz-stable/` too).
//!
//! - `frontend`: mutated kernels (the examples and the test corpora) through the whole front end
//!   (`check_source`, `compile`): diagnostics or IR, never a panic.
//! - `isa_reader`: mutated pseudo-ISA programs (the hand-written test programs and compiled
//!   examples) through the reader: a program whose text reads back to the same text, or an error
//!   naming a line and a column; a program the validator accepts then runs on the simulator under
//!   a small `max_cycles`: a result or an error, never a panic.
//! - `run_check`: random kernels of `tests/common/random_kernel.rs` through `nkc run --check`
//!   in-process ([`nkc::run::run`]) on every pipelining path: the simulated outputs agree with the
//!   interpreter bit for bit, with no race, or the legality check refuses the schedule.
//!
//! The budgets are inputs, not time: `NKC_FUZZ_FRONTEND`, `NKC_FUZZ_ISA` and `NKC_FUZZ_RUN_CHECK`
//! change them (and `NKC_FUZZ_SEED` the seed) for a longer campaign, for instance
//! `NKC_FUZZ_FRONTEND=1000000 cargo test --release --test fuzz_stable -- --nocapture frontend`,
//! which prints the count, the rate, and the slowest input (the campaign's "timeouts").

#[path = "common/random_kernel.rs"]
mod random_kernel;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use random_kernel::Rng;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The files of a folder of the package with the extension `ext`, sorted, as text.
fn corpus(dir: &str, ext: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("corpus files are UTF-8"))
        .collect()
}

/// A char boundary of `s` at or before byte `i`.
fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One to four mutations of a corpus entry: a character replaced, a dictionary token inserted, a
/// range deleted or duplicated, two lines swapped, a number made extreme, or a splice with
/// another entry.
fn mutate(rng: &mut Rng, corpus: &[String], dict: &[&str]) -> String {
    let mut s = corpus[rng.below(corpus.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = boundary(&s, rng.below(s.len() + 1));
        match rng.below(8) {
            0 => {
                let end = boundary(&s, at + 1 + rng.below(3));
                let c = [' ', '(', ')', ':', '\n', '0', 'x', '\u{e9}', '\t', '['][rng.below(10)];
                s.replace_range(at..end, &c.to_string());
            }
            1 | 2 => s.insert_str(at, dict[rng.below(dict.len())]),
            3 => {
                let end = boundary(&s, at + 1 + rng.below(24));
                s.replace_range(at..end, "");
            }
            4 => {
                let end = boundary(&s, at + 1 + rng.below(48));
                let piece = s[at..end].to_string();
                s.insert_str(end, &piece);
            }
            5 => {
                let mut lines: Vec<&str> = s.lines().collect();
                if lines.len() > 1 {
                    let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                    lines.swap(a, b);
                }
                s = lines.join("\n") + "\n";
            }
            6 => {
                // The next number becomes an extreme one.
                if let Some(off) = s[at..].find(|c: char| c.is_ascii_digit()) {
                    let start = at + off;
                    let len = s[start..]
                        .find(|c: char| !c.is_ascii_digit())
                        .unwrap_or(s.len() - start);
                    let big = [
                        "0",
                        "1",
                        "4294967296",
                        "18446744073709551615",
                        "16777216",
                        "65",
                    ];
                    s.replace_range(start..start + len, big[rng.below(big.len())]);
                }
            }
            _ => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = boundary(other, rng.below(other.len() + 1));
                s = format!("{}{}", &s[..at], &other[cut..]);
            }
        }
    }
    s
}

/// What a campaign found.
struct Campaign {
    inputs: u64,
    panics: Vec<String>,
    slowest: Duration,
    elapsed: Duration,
}

/// Runs `check` on `n` inputs from `make`, each under `catch_unwind`.
fn campaign(
    name: &str,
    n: u64,
    mut make: impl FnMut(u64) -> String,
    check: impl Fn(&str),
) -> Campaign {
    let started = Instant::now();
    let mut c = Campaign {
        inputs: 0,
        panics: Vec::new(),
        slowest: Duration::ZERO,
        elapsed: Duration::ZERO,
    };
    for i in 0..n {
        let input = make(i);
        let t = Instant::now();
        let ok = catch_unwind(AssertUnwindSafe(|| check(&input))).is_ok();
        c.slowest = c.slowest.max(t.elapsed());
        c.inputs += 1;
        // A long campaign reports as it goes, so that a run stopped early still counts.
        if n >= 100_000 && c.inputs % 10_000 == 0 {
            eprintln!(
                "fuzz {name}: {} inputs, {} panics, {:.0} s, slowest {:.3} s",
                c.inputs,
                c.panics.len(),
                started.elapsed().as_secs_f64(),
                c.slowest.as_secs_f64()
            );
        }
        if !ok {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-stable");
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(dir.join(format!("{name}-{i}.txt")), &input);
            c.panics.push(input);
        }
    }
    c.elapsed = started.elapsed();
    println!(
        "fuzz {name}: {} inputs in {:.1} s ({:.0} per second), {} panics, slowest input {:.3} s",
        c.inputs,
        c.elapsed.as_secs_f64(),
        c.inputs as f64 / c.elapsed.as_secs_f64().max(1e-9),
        c.panics.len(),
        c.slowest.as_secs_f64()
    );
    c
}

fn assert_no_panic(name: &str, c: &Campaign, want: u64) {
    assert_eq!(c.inputs, want);
    if let Some(first) = c.panics.first() {
        panic!(
            "fuzz {name}: {} of {} inputs panicked; the first:\n{first}",
            c.panics.len(),
            c.inputs
        );
    }
}

const NK_DICT: &[&str] = &[
    "nl.load(",
    "nl.store(",
    "nl.affine_range(",
    "nl.sequential_range(",
    ", num_stages=",
    ", stage_id=",
    ", execution_order=",
    "num_stages=\"auto\"",
    ", multi_buffer=2",
    ", disable_auto_buffer=True",
    "for i in ",
    "for k in range(",
    ":",
    "\n    ",
    "\n        ",
    "\n",
    "(",
    ")",
    "[",
    "]",
    ", ",
    " * ",
    " // ",
    " % ",
    " - ",
    "i",
    "128",
    "99999999999999999999",
    "nl.float32",
    "nl.bfloat16",
    "buffer=nl.psum",
    "buffer=nl.sbuf",
    "buffer=nl.shared_hbm",
    "return ",
    "def k(a: nl.hbm[nl.float32, 128, 512]):",
    " = ",
    " += ",
    "nl.matmul(",
    "transpose_x=True",
    "nisa.nc_transpose(",
    "nisa.activation(op=nl.exp, data=",
    ".shape[0]",
    "nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)",
    "nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)",
    "nl.sum(",
    ", axis=1",
    "# ",
];

const ISA_DICT: &[&str] = &[
    "loop r0 = 0..",
    "loop r1 = 0..3 {\n",
    "}\n",
    "r0",
    "(r1 mod 3)*2048",
    "@(r0 >= 1 && r0 < 3) ",
    "wait s >= ",
    "signal s\n",
    "dma q3 ",
    "sbuf.f32[0, 128; 0; 512:1]",
    "psum.f32[0, 128; 2048; 512:1]",
    "sbuf.bf16[0, 64; 4; 2:1, 4:8]",
    "hbm a[0; 128:512, 512:1]",
    "; ",
    ":",
    ", ",
    " -> s",
    "engine pool {\n",
    "engine pe {\n",
    "tensor t: f32[65536] scratch\n",
    "tensor u: bf16[4294967296, 4294967296] input\n",
    "semaphore s\n",
    " line 7",
    " stage 2",
    " stmt \"x\"",
    "NaN",
    "inf",
    "18446744073709551615",
    "-9223372036854775808",
    "\n",
    "  ",
    "matmul ",
    "transpose ",
    "activation exp ",
    "reduce max ",
    "iota ",
    "memset ",
    "copy ",
    "tensor_tensor add ",
    "tensor_scalar divide ",
];

#[test]
fn fuzz_frontend() {
    let n = env_u64("NKC_FUZZ_FRONTEND", 3000);
    let mut seeds: Vec<String> = Vec::new();
    for dir in ["examples", "tests/good", "tests/ui", "filetests/pipeline"] {
        seeds.extend(corpus(dir, "nk"));
    }
    seeds.extend((0..8).map(random_kernel::random_kernel));
    let mut rng = Rng(env_u64("NKC_FUZZ_SEED", 1));
    let c = campaign(
        "frontend",
        n,
        |_| mutate(&mut rng, &seeds, NK_DICT),
        |text| {
            let _ = frontend::check_source(text, None);
            let _ = frontend::compile(text, None);
        },
    );
    assert_no_panic("frontend", &c, n);
}

/// Compiled examples: the pseudo-ISA the backend emits, to mutate beside the hand-written programs.
fn compiled_examples() -> Vec<String> {
    use nkc::pipeline::PipelineMode;
    let mut out = Vec::new();
    for name in ["tensor_add_mode_b", "softmax", "matmul"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{name}.nk"));
        let src = nkc::driver::Source::read(&path).expect("the example reads");
        let mut func = nkc::driver::compile(&src, None).expect("the example compiles");
        let mut log = penguin::pipeline::PipelineLog::default();
        nkc::pipeline::pipeline_path(&mut func, PipelineMode::Default, &mut log)
            .expect("the example pipelines");
        nkc::pipeline::prepare_backend(&mut func, PipelineMode::Default)
            .expect("emergent pipelining");
        let compiled =
            nkc::pipeline::codegen(&func, Some(&src.text), true).expect("the backend compiles it");
        out.push(runtime_sim::text::print(&compiled.program));
    }
    out
}

/// The `isa_reader` target's property, then the simulator on what the validator accepts.
fn isa_check(text: &str) {
    use runtime_sim::sim::{self, Options};
    match runtime_sim::text::parse(text) {
        Ok(p) => {
            let printed = runtime_sim::text::print(&p);
            let again = runtime_sim::text::parse(&printed).expect("printed programs read back");
            // NaN immediates never compare equal; compare the text instead.
            assert_eq!(runtime_sim::text::print(&again), printed);
            if runtime_sim::validate::validate(&p).is_err() {
                return;
            }
            let elems: u64 = p
                .tensors
                .iter()
                .map(|t| t.elems())
                .fold(0, u64::saturating_add);
            let opts = Options {
                numerics: elems <= 1 << 20,
                trace: true,
                max_cycles: 200_000,
                ..Options::default()
            };
            let inputs = if opts.numerics {
                sim::random_inputs(&p, 1)
            } else {
                Vec::new()
            };
            match sim::simulate(&p, &inputs, &opts) {
                Ok(r) => {
                    let _ = sim::trace::to_chrome_json(&r.trace);
                    for race in &r.races {
                        let _ = race.to_string();
                    }
                }
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
        Err(e) => assert!(e.line >= 1 && e.col >= 1, "{e:?}"),
    }
}

#[test]
fn fuzz_isa_reader() {
    let n = env_u64("NKC_FUZZ_ISA", 6000);
    let mut seeds = corpus("runtime-sim/tests/programs", "s");
    seeds.extend(compiled_examples());
    let mut rng = Rng(env_u64("NKC_FUZZ_SEED", 1));
    let c = campaign(
        "isa_reader",
        n,
        |_| mutate(&mut rng, &seeds, ISA_DICT),
        isa_check,
    );
    assert_no_panic("isa_reader", &c, n);
}

#[test]
fn fuzz_run_check() {
    use nkc::pipeline::PipelineMode;
    let n = env_u64("NKC_FUZZ_RUN_CHECK", 160);
    // Seeds far from those of tests/pipeline_props.rs (0..150), on every path in turn, and
    // every other seed peeled (`--peel`; no effect on `emergent` and `none`).
    let base = env_u64("NKC_FUZZ_SEED", 1) << 32;
    let modes = [
        PipelineMode::Default,
        PipelineMode::Annotated,
        PipelineMode::Emergent,
        PipelineMode::None,
    ];
    let simulated = std::sync::atomic::AtomicU64::new(0);
    let c = campaign(
        "run_check",
        n,
        |i| i.to_string(),
        |i| {
            let i: u64 = i.parse().expect("an index");
            if random_kernel::run_checked_peeled(
                base + i / 4,
                modes[(i % 4) as usize],
                (i / 4) % 2 == 1,
            ) {
                simulated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    assert_no_panic("run_check", &c, n);
    // Each input that ran was simulated and checked; one refused by the pipeliner (E04xx) was
    // not. A campaign in which nothing ran proves nothing.
    let simulated = simulated.load(std::sync::atomic::Ordering::Relaxed);
    println!("fuzz run_check: {simulated} of {n} inputs simulated and checked");
    assert!(
        simulated > 0 && simulated >= n / 2,
        "only {simulated} of {n} random kernels were simulated and checked"
    );
}

#[path = "common/fuzz_checks.rs"]
mod fuzz_checks;
#[path = "common/pir_mutate.rs"]
mod pir_mutate;

const PIR_DICT: &[&str] = &[
    "loop r in 0..4 affine {\n",
    "loop s in 0..65536 sequential {\n",
    "}\n",
    "stmt {\n",
    " +: 128",
    " +: 1",
    "{k - 1}",
    "{k + 1}",
    "block[k: 2]",
    "block[k: 1]",
    "= load.dma ",
    "= store.dma ",
    "= copy.any ",
    "= add.dve ",
    "= reduce.pool ",
    "= matmul.pe ",
    "sbuf f32[128, 4611686018427387904]",
    "hbm f32[4, 8] scratch\n",
    "128*r",
    "-1",
];

/// The `.pir` corpus: the hand-written IR of the tests, and the random kernels lowered (small
/// tiles, so that each input runs on four paths in milliseconds).
fn pir_corpus() -> Vec<String> {
    let mut seeds = corpus("tests/pir", "pir");
    seeds.extend(corpus("filetests/pir/roundtrip", "pir"));
    for seed in 0..24 {
        let text = random_kernel::random_kernel(seed);
        if let Ok(func) = frontend::compile(&text, None) {
            seeds.push(penguin::write::write_function(&func));
        }
    }
    seeds
}

/// The `pir_run_check` target's counterpart: mutated Penguin IR through `run --check` on every
/// path; a user error or the interpreter's bits, never an internal error or a panic.
#[test]
fn fuzz_pir_run_check() {
    let n = env_u64("NKC_FUZZ_PIR", 150);
    let seeds = pir_corpus();
    let mut rng = Rng(env_u64("NKC_FUZZ_SEED", 1));
    let ran = std::sync::atomic::AtomicU64::new(0);
    let c = campaign(
        "pir_run_check",
        n,
        |_| mutate(&mut rng, &seeds, PIR_DICT),
        |text| {
            if fuzz_checks::pir_run_check(text, 2_000_000) == fuzz_checks::Outcome::Ran {
                ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    assert_no_panic("pir_run_check", &c, n);
    let ran = ran.into_inner();
    println!("fuzz pir_run_check: {ran} of {n} inputs ran and were checked");
    assert!(ran > 0, "no mutated .pir input ran");
}

/// The valid-IR mutator ([`pir_mutate`]): pipelined `.pir` with its ring offsets, slot counts,
/// trips, stages, predicates, loop kinds and tile sizes changed within the verifier's rules,
/// through `run --check` on every path (`default|annotated|emergent|none|auto`, each with and
/// without `--peel`): the interpreter's bits or a user error, and at least half of the inputs
/// reach a run (`NKC_FUZZ_PIR_VALID` inputs).
#[test]
fn fuzz_pir_valid_mutants() {
    let n = env_u64("NKC_FUZZ_PIR_VALID", 12);
    let seeds = pir_mutate::seeds(24, &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pir"));
    assert!(seeds.len() >= 20, "only {} seeds verify", seeds.len());
    let mut rng = Rng(env_u64("NKC_FUZZ_SEED", 1) ^ 7);
    let mut ran = 0;
    let mut findings = Vec::new();
    for _ in 0..n {
        let text = pir_mutate::mutate_valid(&mut rng, &seeds, 8);
        let mut finding = String::new();
        match catch_unwind(AssertUnwindSafe(|| {
            pir_mutate::run_every_path(&text, 2_000_000, &mut finding)
        })) {
            Ok(Some(true)) => ran += 1,
            Ok(Some(false)) => {}
            Ok(None) => findings.push(format!("{finding}\n{text}")),
            Err(_) => findings.push(format!("panic\n{text}")),
        }
    }
    println!("fuzz pir_valid_mutants: {ran} of {n} inputs ran on at least one path");
    assert!(
        findings.is_empty(),
        "{} findings, the first:\n{}",
        findings.len(),
        findings[0]
    );
    assert!(2 * ran >= n, "only {ran} of {n} mutants reached a run");
}

const NPY_DICT: &[&str] = &[
    "'descr'",
    "'<f4'",
    "'f4'",
    "'<f8'",
    "'fortran_order'",
    "True",
    "False",
    "'shape'",
    "(2, 2)",
    "(4,)",
    "()",
    "[[[[[[[[[[",
    "((((((((((",
    "]]]]]",
    "'",
    "\"",
    "\\",
    ", }",
    "18446744073709551616",
];

/// A version 1 or 2 `.npy` file holding `header` and four float32 values.
fn npy_file(header: &str, wide: bool) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    if wide {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    } else {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len().min(65535) as u16).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    for x in [1.0f32, 2.0, 3.0, 4.0] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// The `npy_header` target's counterpart: mutated headers read in linear time, to an array or a
/// short error, never a panic.
#[test]
fn fuzz_npy_header() {
    let n = env_u64("NKC_FUZZ_NPY", 1000);
    let seeds: Vec<String> = [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
        "{'descr': 'f4', 'fortran_order': False, 'shape': (4,), }",
        "{\"shape\": [2, 2], \"descr\": \">f4\", \"fortran_order\": True}",
        "{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (2,), }",
    ]
    .iter()
    .map(|h| format!("{h:<70}\n"))
    .collect();
    let dir = std::env::temp_dir().join(format!("nkc-fuzz-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    let mut rng = Rng(env_u64("NKC_FUZZ_SEED", 1));
    let read = std::sync::atomic::AtomicU64::new(0);
    let c = campaign(
        "npy_header",
        n,
        |_| mutate(&mut rng, &seeds, NPY_DICT),
        |header| {
            for wide in [false, true] {
                let bytes = npy_file(header, wide);
                if fuzz_checks::npy_header(&bytes, &dir) == fuzz_checks::Outcome::Ran {
                    read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        },
    );
    assert_no_panic("npy_header", &c, n);
    let read = read.into_inner();
    println!("fuzz npy_header: {read} of {} files read as arrays", 2 * n);
    assert!(read > 0, "no mutated header read");
}

/// The `suggest_write` target's counterpart: `suggest` on random kernels, the suggestion written
/// over a copy, which then holds exactly it and runs bit-exact on the annotated path.
#[test]
fn fuzz_suggest_write() {
    let n = env_u64("NKC_FUZZ_SUGGEST", 6);
    let base = env_u64("NKC_FUZZ_SEED", 1) << 32;
    let dir = std::env::temp_dir().join(format!("nkc-fuzz-suggest-{}", std::process::id()));
    let written = std::sync::atomic::AtomicU64::new(0);
    let c = campaign(
        "suggest_write",
        n,
        |i| random_kernel::random_kernel(base + i),
        |text| {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
            if fuzz_checks::suggest_write(text, &dir) == fuzz_checks::Outcome::Ran {
                written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    assert_no_panic("suggest_write", &c, n);
    let written = written.into_inner();
    println!("fuzz suggest_write: {written} of {n} suggestions written and checked");
    assert!(written > 0, "no suggestion was written");
}

/// What one input of the campaign did (a column of its table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Exit 0 (and, where the surface checks it, the right bits).
    Ok,
    /// A user error (exit 1).
    Refused,
    /// A command-line usage error (clap's exit 2; the CLI surface only).
    Usage,
    /// A panic, or an internal compiler error (exit 101), or a crash by another signal.
    Panic,
    /// Longer than the surface allows.
    Timeout,
    /// An allocation failure under the memory cap (an abort by `SIGABRT`/`SIGKILL`, or a message
    /// saying so).
    Oom,
    /// Exit 0 with other bits than the interpreter's, or an answer that breaks the surface's
    /// property (a suggestion that does not hold, an array of the wrong size).
    Wrong,
    /// A file of the user's changed that no `--write`/`--output` named, or a temporary file left.
    Damaged,
}

const VERDICTS: [Verdict; 8] = [
    Verdict::Ok,
    Verdict::Refused,
    Verdict::Usage,
    Verdict::Panic,
    Verdict::Timeout,
    Verdict::Oom,
    Verdict::Wrong,
    Verdict::Damaged,
];

/// The counts of one surface, and its first finding of each bad kind.
#[derive(Default)]
struct Tally {
    counts: [u64; 8],
    findings: Vec<String>,
    slowest: Duration,
    slowest_input: String,
}

impl Tally {
    /// The row of the table, printed as soon as the surface is done (a long campaign stopped
    /// early still reports what it ran).
    fn row(&self, name: &str) -> String {
        let c = self.counts;
        format!(
            "{name:<28} {:>9} {:>9} {:>7} {:>6} {:>8} {:>4} {:>6} {:>8}  {:.3} s",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            self.slowest.as_secs_f64()
        )
    }

    fn add(&mut self, v: Verdict, input: &str, took: Duration) {
        let k = VERDICTS
            .iter()
            .position(|&x| x == v)
            .expect("every verdict");
        self.counts[k] += 1;
        self.slowest = self.slowest.max(took);
        if k >= 3 {
            // Every finding saved whole, the first three quoted in the report.
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("campaign");
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(dir.join(format!("{v:?}-{}.txt", self.counts[k])), input);
            if self.findings.len() < 3 {
                self.findings
                    .push(format!("{v:?}: {}", &input[..boundary(input, 2000)]));
            }
        }
    }
    fn bad(&self) -> u64 {
        self.counts[3..].iter().sum()
    }
}

/// The CPU time this thread has used: what a timeout is measured in, so that a loaded machine
/// (other builds on the same cores) does not make an input slow.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `one` on `n` inputs from `make`, under `catch_unwind` (a panic is [`Verdict::Panic`]) and
/// a clock of this thread's CPU time (`limit`: [`Verdict::Timeout`] when longer).
fn surface(
    tally: &mut Tally,
    n: u64,
    limit: Duration,
    mut make: impl FnMut(u64) -> String,
    one: impl Fn(&str) -> Verdict,
) {
    for i in 0..n {
        let input = make(i);
        let t = thread_cpu_time();
        let v = catch_unwind(AssertUnwindSafe(|| one(&input))).unwrap_or(Verdict::Panic);
        let took = thread_cpu_time().saturating_sub(t);
        let v = if v != Verdict::Panic && took > limit {
            Verdict::Timeout
        } else {
            v
        };
        tally.add(v, &input, took);
    }
}

/// The verdict of an in-process `nkc run --check`-like result.
fn run_verdict(r: Result<nkc::run::RunReport, nkc::driver::Failure>) -> Verdict {
    use nkc::driver::{Failure, InternalCause};
    match r {
        Ok(rep) if rep.checked && rep.sim.as_ref().is_none_or(|s| s.races.is_empty()) => {
            Verdict::Ok
        }
        Ok(_) => Verdict::Wrong,
        Err(Failure::Internal(cause))
            if matches!(
                *cause,
                InternalCause::CheckOutputCount { .. }
                    | InternalCause::CheckBackendChanged { .. }
                    | InternalCause::CheckLegalityMissed { .. }
            ) =>
        {
            Verdict::Wrong
        }
        Err(Failure::Internal(_)) => Verdict::Panic,
        Err(_) => Verdict::Refused,
    }
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .map(|p| {
                    let bytes = std::fs::read(&p).unwrap_or_default();
                    (p, bytes)
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// One random command line over the files of the CLI surface's directory: a command, a kernel,
/// and options drawn from every flag, with paths that are sometimes the kernel itself.
fn random_command_line(rng: &mut Rng, dir: &Path) -> Vec<String> {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let kernels = [p("k.nk"), p("k.pir"), p("bad.nk"), p("p.s")];
    let cmd = [
        "run", "check", "compile", "suggest", "compare", "sim", "explain",
    ][rng.below(7)];
    let mut args = vec![cmd.to_string()];
    if cmd == "explain" {
        args.push(["E0051", "E0902", "E9999", "", "e0173"][rng.below(5)].to_string());
        return args;
    }
    args.push(kernels[rng.below(kernels.len())].clone());
    let targets = [
        p("k.nk"),
        p("k.pir"),
        p("out"),
        p("t.json"),
        p("a.npy"),
        dir.to_string_lossy().into_owned(),
    ];
    for _ in 0..rng.below(5) {
        let t = targets[rng.below(targets.len())].clone();
        let opt: Vec<String> = match rng.below(18) {
            0 => vec!["--check".into()],
            1 => vec!["--json".into()],
            2 => vec![
                "--pipeline".into(),
                ["default", "annotated", "emergent", "none", "auto", "bogus"][rng.below(6)].into(),
            ],
            3 => vec!["--peel".into()],
            4 => vec!["--trace".into(), t],
            5 => vec!["--output".into(), t],
            6 => vec!["-o".into(), t],
            7 => vec!["--svg".into(), t],
            8 => vec!["--write".into()],
            9 => vec![
                "--input".into(),
                format!(
                    "a={}",
                    [p("a.npy"), p("k.nk"), p("missing.npy")][rng.below(3)]
                ),
            ],
            10 => vec![
                "--max-cycles".into(),
                ["0", "1", "1000", "18446744073709551615", "-1"][rng.below(5)].into(),
            ],
            11 => vec!["--seed".into(), ["0", "7", "x"][rng.below(3)].into()],
            12 => vec![
                "--shape".into(),
                ["a=128x512", "a=0x0", "zz=1x1", "a=99999999999x99999999999"][rng.below(4)].into(),
            ],
            13 => vec![
                "--dtype".into(),
                ["bfloat16", "a=float32", "int7"][rng.below(3)].into(),
            ],
            14 => vec!["--kernel".into(), ["k", "nope", ""][rng.below(3)].into()],
            15 => vec![
                "--engine".into(),
                ["sim", "interp", "gpu"][rng.below(3)].into(),
            ],
            16 => vec![
                "--emit".into(),
                ["penguin", "pipelined", "ast", "isa", "bir"][rng.below(5)].into(),
            ],
            _ => vec!["--no-legality-check".into()],
        };
        args.extend(opt);
    }
    args
}

/// The paths a command line names as what it writes (`--output`, `-o`, `--trace`, `--svg`, the
/// kernel under `--write`): the files it may change.
fn named_outputs(args: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for w in args.windows(2) {
        if ["--output", "-o", "--trace", "--svg"].contains(&w[0].as_str()) {
            out.push(PathBuf::from(&w[1]));
        }
    }
    if args.iter().any(|a| a == "--write") {
        if let Some(k) = args.get(1) {
            out.push(PathBuf::from(k));
        }
    }
    out
}

/// The CLI surface: `nkc` as a child under the 2 GiB cap, killed after `limit`. (The child is
/// reaped by `wait4`, which clippy does not see.)
#[allow(clippy::zombie_processes)]
fn cli_verdict(args: &[String], dir: &Path, limit: Duration) -> Verdict {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, Stdio};
    let before = snapshot(dir);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nkc"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: `setrlimit` is async-signal-safe and touches no state of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &cap);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("the nkc binary runs");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    // The child's CPU time is what must stay under `limit`; the wall clock kills it at six
    // times that (a loaded machine), which counts as a timeout too.
    let started = Instant::now();
    let pid = child.id() as libc::pid_t;
    let status = loop {
        let mut raw = 0;
        // SAFETY: `rusage` is plain data that `wait4` fills in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, without blocking.
        let r = unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) };
        if r == pid {
            let cpu = Duration::new(
                usage.ru_utime.tv_sec as u64,
                usage.ru_utime.tv_usec as u32 * 1000,
            ) + Duration::new(
                usage.ru_stime.tv_sec as u64,
                usage.ru_stime.tv_usec as u32 * 1000,
            );
            break Some((std::process::ExitStatus::from_raw(raw), cpu));
        }
        if started.elapsed() > limit * 6 {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let err = reader.join().unwrap_or_default();
    let Some((status, cpu)) = status else {
        return Verdict::Timeout;
    };
    let changed = {
        let after = snapshot(dir);
        let allowed = named_outputs(args);
        let names = |s: &[(PathBuf, Vec<u8>)]| s.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
        let lost = before.iter().any(|(p, bytes)| {
            !allowed.contains(p)
                && after
                    .iter()
                    .find(|a| &a.0 == p)
                    .is_none_or(|a| &a.1 != bytes)
        });
        let left = names(&after)
            .iter()
            .any(|p| !names(&before).contains(p) && !allowed.contains(p));
        lost || left
    };
    // Restore the directory for the next command line.
    for (p, bytes) in &before {
        let _ = std::fs::write(p, bytes);
    }
    for (p, _) in snapshot(dir) {
        if !before.iter().any(|b| b.0 == p) {
            let _ = std::fs::remove_file(p);
        }
    }
    if err.contains("memory allocation")
        || matches!(status.signal(), Some(libc::SIGABRT | libc::SIGKILL))
    {
        return Verdict::Oom;
    }
    match status.code() {
        _ if changed => Verdict::Damaged,
        _ if cpu > limit => Verdict::Timeout,
        Some(0) => Verdict::Ok,
        Some(1) => Verdict::Refused,
        Some(2) => Verdict::Usage,
        _ => Verdict::Panic,
    }
}

/// The campaign over every surface (issue 30): mutated `.npy` headers, mutated `.pir` through the
/// reader and verifier, mutated `.pir` through `run --check` on every path, mutated `.nk` through
/// the front end, random and widened random kernels through `run --check` on every path,
/// `suggest --write`, mutated `.s` programs through the reader and the simulator, and random
/// command lines through the binary (as a child under the 2 GiB cap, with the files of its
/// directory compared before and after). Prints one row per surface: exit 0 / exit 1 / usage
/// (exit 2) / panic / timeout / OOM / wrong / file damaged; the last five must be zero. The
/// in-process surfaces run under the same 2 GiB address-space cap (set on this process): an
/// allocation failure there aborts the campaign. Budgets: `NKC_CAMPAIGN_<SURFACE>` per surface
/// (`NPY`, `PIR_VERIFY`, `PIR_RUN`, `PIR_VALID`, `FRONTEND`, `KERNELS`, `SUGGEST`, `ISA`, `CLI`), seed
/// `NKC_FUZZ_SEED`.
#[test]
fn campaign_every_surface() {
    // SAFETY: plain libc calls on this process's limits.
    unsafe {
        let cap = libc::rlimit {
            rlim_cur: 2 << 30,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &cap), 0);
    }
    let seed = env_u64("NKC_FUZZ_SEED", 1);
    let budget = |name: &str, default: u64| env_u64(&format!("NKC_CAMPAIGN_{name}"), default);
    let mut table: Vec<(&str, Tally)> = Vec::new();
    let scratch = std::env::temp_dir().join(format!("nkc-campaign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("the temporary directory is writable");

    // .npy headers.
    let mut t = Tally::default();
    let npy_seeds: Vec<String> = [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
        "{'descr': 'f4', 'fortran_order': False, 'shape': (4,), }",
        "{\"shape\": [2, 2], \"descr\": \">f4\", \"fortran_order\": True}",
    ]
    .iter()
    .map(|h| format!("{h:<70}\n"))
    .collect();
    let mut rng = Rng(seed ^ 1);
    let npy_path = scratch.join("h.npy");
    surface(
        &mut t,
        budget("NPY", 400),
        Duration::from_millis(200),
        |_| mutate(&mut rng, &npy_seeds, NPY_DICT),
        |h| {
            let bytes = npy_file(h, h.len() % 2 == 0);
            std::fs::write(&npy_path, &bytes).expect("writable");
            let r = nkc::npy::read_npy(&npy_path);
            if std::fs::read(&npy_path).ok().as_deref() != Some(&bytes[..]) {
                return Verdict::Damaged;
            }
            match r {
                Ok(a) if a.data.len() == a.shape.iter().product::<usize>() => Verdict::Ok,
                Ok(_) => Verdict::Wrong,
                Err(e) if e.to_string().len() <= 400 + npy_path.as_os_str().len() => {
                    Verdict::Refused
                }
                Err(_) => Verdict::Wrong,
            }
        },
    );
    eprintln!("{}", t.row("npy header"));
    table.push(("npy header", t));

    // .pir through the reader and verifier (what every command does first).
    let pir_seeds = pir_corpus();
    let mut t = Tally::default();
    let mut rng = Rng(seed ^ 2);
    surface(
        &mut t,
        budget("PIR_VERIFY", 300),
        Duration::from_secs(10),
        |_| mutate(&mut rng, &pir_seeds, PIR_DICT),
        |text| {
            let src = nkc::driver::Source {
                path: PathBuf::from("m.pir"),
                text: text.to_string(),
            };
            match nkc::driver::read_penguin(&src, None) {
                Ok(_) => Verdict::Ok,
                Err(nkc::driver::Failure::Internal(_)) => Verdict::Panic,
                Err(_) => Verdict::Refused,
            }
        },
    );
    eprintln!("{}", t.row(".pir read+verify"));
    table.push((".pir read+verify", t));

    // .pir through run --check on every path.
    let mut t = Tally::default();
    let mut rng = Rng(seed ^ 3);
    surface(
        &mut t,
        budget("PIR_RUN", 12),
        Duration::from_secs(10),
        |_| mutate(&mut rng, &pir_seeds, PIR_DICT),
        |text| {
            use nkc::run::{PipelineMode, RunOptions};
            let src = nkc::driver::Source {
                path: PathBuf::from("m.pir"),
                text: text.to_string(),
            };
            let mut worst = Verdict::Refused;
            for mode in PipelineMode::ALL {
                let opts = RunOptions {
                    pipeline: mode,
                    check: true,
                    max_cycles: 2_000_000,
                    ..RunOptions::default()
                };
                let v = run_verdict(nkc::run::run(&src, &opts, &mut Default::default()));
                if v != Verdict::Ok && v != Verdict::Refused {
                    return v;
                }
                if v == Verdict::Ok {
                    worst = Verdict::Ok;
                }
            }
            worst
        },
    );
    eprintln!("{}", t.row(".pir run --check x5"));
    table.push((".pir run --check x5", t));

    // Valid-IR mutants of pipelined .pir (ring offsets, slots, trips, stages, predicates, loop
    // kinds, tile sizes) through run --check on every path, with and without --peel.
    let valid_seeds =
        pir_mutate::seeds(24, &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pir"));
    let mut t = Tally::default();
    let mut rng = Rng(seed ^ 7);
    surface(
        &mut t,
        budget("PIR_VALID", 10),
        Duration::from_secs(20),
        |_| pir_mutate::mutate_valid(&mut rng, &valid_seeds, 8),
        |text| {
            let mut finding = String::new();
            match pir_mutate::run_every_path(text, 2_000_000, &mut finding) {
                Some(true) => Verdict::Ok,
                Some(false) => Verdict::Refused,
                None if finding.contains("--check:") || finding.contains("exit 0") => {
                    Verdict::Wrong
                }
                None => Verdict::Panic,
            }
        },
    );
    eprintln!("{}", t.row(".pir valid mutants x10"));
    table.push((".pir valid mutants x10", t));

    // .nk through the front end.
    let mut nk_seeds: Vec<String> = Vec::new();
    for dir in ["examples", "tests/good", "tests/ui"] {
        nk_seeds.extend(corpus(dir, "nk"));
    }
    nk_seeds.extend((0..8).map(random_kernel::random_wide_kernel));
    let mut t = Tally::default();
    let mut rng = Rng(seed ^ 4);
    surface(
        &mut t,
        budget("FRONTEND", 60),
        Duration::from_secs(10),
        |_| mutate(&mut rng, &nk_seeds, NK_DICT),
        |text| match frontend::compile(text, None) {
            Ok(_) => Verdict::Ok,
            Err(_) => Verdict::Refused,
        },
    );
    eprintln!("{}", t.row(".nk check"));
    table.push((".nk check", t));

    // Random kernels (the first generator and the widened one) through run --check, on every
    // path and peeled.
    let mut t = Tally::default();
    let base = seed << 40;
    surface(
        &mut t,
        budget("KERNELS", 2),
        Duration::from_secs(20),
        |i| {
            if i % 2 == 0 {
                random_kernel::random_case(base + i)
            } else {
                random_kernel::random_wide_kernel(base + i)
            }
        },
        |text| {
            use nkc::run::{PipelineMode, RunOptions};
            let src = nkc::driver::Source {
                path: PathBuf::from("r.nk"),
                text: text.to_string(),
            };
            let mut worst = Verdict::Refused;
            for mode in PipelineMode::ALL {
                for peel in [false, true] {
                    let opts = RunOptions {
                        pipeline: mode,
                        check: true,
                        peel,
                        ..RunOptions::default()
                    };
                    let v = run_verdict(nkc::run::run(&src, &opts, &mut Default::default()));
                    if v != Verdict::Ok && v != Verdict::Refused {
                        return v;
                    }
                    if v == Verdict::Ok {
                        worst = Verdict::Ok;
                    }
                }
            }
            worst
        },
    );
    eprintln!("{}", t.row(".nk random run --check x10"));
    table.push((".nk random run --check x10", t));

    // suggest --write.
    let mut t = Tally::default();
    let sdir = scratch.join("suggest");
    surface(
        &mut t,
        budget("SUGGEST", 1),
        Duration::from_secs(20),
        |i| random_kernel::random_kernel(base + (1 << 20) + i),
        |text| {
            let _ = std::fs::remove_dir_all(&sdir);
            std::fs::create_dir_all(&sdir).expect("writable");
            match catch_unwind(AssertUnwindSafe(|| fuzz_checks::suggest_write(text, &sdir))) {
                Ok(fuzz_checks::Outcome::Ran) => Verdict::Ok,
                Ok(fuzz_checks::Outcome::Refused) => Verdict::Refused,
                // The property's own failures: a file that does not hold the suggestion, or a
                // suggestion that does not run bit-exact; an internal error is a panic.
                Err(e) => {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    if msg.contains("internal error") {
                        Verdict::Panic
                    } else if msg.contains("temporary file") || msg.contains("holds other") {
                        Verdict::Damaged
                    } else {
                        Verdict::Wrong
                    }
                }
            }
        },
    );
    eprintln!("{}", t.row("suggest --write"));
    table.push(("suggest --write", t));

    // .s programs through the reader and the simulator.
    let mut isa_seeds = corpus("runtime-sim/tests/programs", "s");
    isa_seeds.extend(compiled_examples());
    let mut t = Tally::default();
    let mut rng = Rng(seed ^ 5);
    surface(
        &mut t,
        budget("ISA", 60),
        Duration::from_secs(10),
        |_| mutate(&mut rng, &isa_seeds, ISA_DICT),
        |text| {
            isa_check(text);
            Verdict::Ok
        },
    );
    eprintln!("{}", t.row(".s read+simulate"));
    table.push((".s read+simulate", t));

    // Command lines through the binary.
    let cdir = scratch.join("cli");
    std::fs::create_dir_all(&cdir).expect("writable");
    let kernel = "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    for i in nl.affine_range(2, num_stages=2):\n        t = nl.load(a[:, i * 256:(i + 1) * 256])\n        nl.store(c[:, i * 256:(i + 1) * 256], value=nl.exp(t))\n    return c\n";
    std::fs::write(cdir.join("k.nk"), kernel).expect("writable");
    std::fs::write(
        cdir.join("bad.nk"),
        kernel.replace("nl.exp(t)", "nl.exp(u)"),
    )
    .expect("writable");
    std::fs::write(cdir.join("k.pir"), &pir_seeds[0]).expect("writable");
    std::fs::write(cdir.join("p.s"), &isa_seeds[0]).expect("writable");
    let data: Vec<f32> = (0..128 * 512).map(|x| (x % 7) as f32 * 0.25).collect();
    let arr = penguin::interp::Array {
        shape: vec![128, 512],
        data,
    };
    nkc::npy::write_npy(&cdir.join("a.npy"), &arr).expect("writable");
    let mut t = Tally::default();
    let mut rng = Rng(seed ^ 6);
    let limit = Duration::from_secs(10);
    surface(
        &mut t,
        budget("CLI", 8),
        limit + Duration::from_secs(1),
        |_| random_command_line(&mut rng, &cdir).join("\u{1f}"),
        |line| {
            let args: Vec<String> = line.split('\u{1f}').map(str::to_string).collect();
            cli_verdict(&args, &cdir, limit)
        },
    );
    eprintln!("{}", t.row("CLI (child, 2 GiB)"));
    table.push(("CLI (child, 2 GiB)", t));
    let _ = std::fs::remove_dir_all(&scratch);

    println!(
        "{:<28} {:>9} {:>9} {:>7} {:>6} {:>8} {:>4} {:>6} {:>8}  slowest",
        "surface", "exit 0", "exit 1", "usage", "panic", "timeout", "OOM", "wrong", "damaged"
    );
    let mut total = [0u64; 8];
    for (name, t) in &table {
        let c = t.counts;
        println!(
            "{name:<28} {:>9} {:>9} {:>7} {:>6} {:>8} {:>4} {:>6} {:>8}  {:.3} s",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            t.slowest.as_secs_f64()
        );
        for (k, x) in c.iter().enumerate() {
            total[k] += x;
        }
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("campaign");
    let _ = std::fs::create_dir_all(&dir);
    for (k, (_, t)) in table.iter().enumerate() {
        let _ = std::fs::write(dir.join(format!("slowest-{k}.txt")), &t.slowest_input);
    }
    let c = total;
    println!(
        "{:<28} {:>9} {:>9} {:>7} {:>6} {:>8} {:>4} {:>6} {:>8}  ({} inputs)",
        "total",
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c.iter().sum::<u64>()
    );
    let findings: Vec<String> = table
        .iter()
        .filter(|(_, t)| t.bad() > 0)
        .flat_map(|(name, t)| t.findings.iter().map(move |f| format!("[{name}] {f}")))
        .collect();
    assert!(findings.is_empty(), "findings:\n{}", findings.join("\n\n"));
}
