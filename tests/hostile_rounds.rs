//! Every case of the three hostile-input rounds (issue 14, and issue 30's two rounds) under one
//! envelope (issue 30, "What it must show"): each runs as a child process of the `nkc` binary in a
//! fresh directory holding its files, under a 2 GiB address-space cap (and, where the case is a
//! failing write, a 1 KiB file-size cap), and must
//!
//! - exit 0 or 1 (the exits the case allows): never 101, a signal or an abort;
//! - use at most 10 s of CPU in a release build ([`CPU_LIMIT`]; the child's user + system time, so that a loaded machine does not
//!   fail it; the wall clock kills it at twelve times that, which fails too);
//! - change no file of its directory but the ones its `--write`/`--output`/`-o`/`--trace`/`--svg`
//!   names, and leave no new file but those;
//! - print at most 64 KiB on stderr;
//! - on exit 0 of `run`, have compared its outputs with the interpreter (`--check` is on every such
//!   case, and stdout says the outputs are equal).
//!
//! The per-item assertions (codes, messages) stay in `hardening.rs`, `hardening_sim.rs`,
//! `limits.rs`, `nothing_lost.rs` and `hostile_ir.rs`; this file asserts the envelope on all of
//! them at once. The two compile-time cases (5,000 loads in one body; a 20,000-statement `.pir`)
//! are tests of `limits.rs`, under the same cap and a CPU limit.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The CPU time a case may take: 10 s in release (`make test-long`, the campaign's build); a debug
/// build (`make test`) runs the same code some times slower, so it gets 60 s.
const CPU_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 60 } else { 10 });

/// One hostile case: its files, its command line (paths relative to its directory), the exit
/// codes it may end with, and the file-size cap it runs under (a failing write).
struct Case {
    name: String,
    files: Vec<(String, Vec<u8>)>,
    args: Vec<String>,
    exits: &'static [i32],
    fsize: Option<u64>,
}

fn case(name: &str, files: &[(&str, &[u8])], args: &str, exits: &'static [i32]) -> Case {
    Case {
        name: name.to_string(),
        files: files
            .iter()
            .map(|(n, b)| (n.to_string(), b.to_vec()))
            .collect(),
        args: args.split_whitespace().map(str::to_string).collect(),
        exits,
        fsize: None,
    }
}

fn repo_file(path: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A two-iteration Mode B loop whose store has stage `stage`.
fn staged(stage: &str) -> String {
    format!(
        "def k(a: nl.hbm[nl.float32, 256, 512]):\n    c = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    for i in nl.affine_range(2):\n        t = nl.load(a[i * 128:(i + 1) * 128, :], stage_id=0)\n        nl.store(c[i * 128:(i + 1) * 128, :], value=t, stage_id={stage})\n    return c\n"
    )
}

/// One 128 × 512 tile copied through SBUF inside `header`.
fn one_loop(header: &str) -> String {
    format!(
        "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    {header}\n        t = nl.load(a[0:128, :])\n        nl.store(c[0:128, :], value=t)\n    return c\n"
    )
}

const COPY: &str = "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a[0:128, :])\n    u = nl.exp(t)\n    nl.store(c[0:128, :], value=u)\n    return c\n";

/// The straight-line `.pir` kernel of `hostile_ir.rs`, edited by `edit`.
fn base_pir(edit: impl Fn(String) -> String) -> String {
    edit("kernel k(x) -> (y) {\n  tensor x: hbm f32[128, 512] input\n  tensor y: hbm f32[128, 512] output\n  tensor t: sbuf f32[128, 512] local\n  tensor m: sbuf f32[128, 1] local\n  tensor r: sbuf f32[128, 512] local\n  stmt {\n    t[0 +: 128, 0 +: 512] = load.dma x[0 +: 128, 0 +: 512]\n  }\n  stmt {\n    m[0 +: 128, 0 +: 1] = reduce.dve(op=max) t[0 +: 128, 0 +: 512]\n  }\n  stmt {\n    r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) t[0 +: 128, 0 +: 512], m[0 +: 128, 0 +: 1]\n  }\n  stmt {\n    y[0 +: 128, 0 +: 512] = store.dma r[0 +: 128, 0 +: 512]\n  }\n}\n".to_string())
}

/// A version-2 `.npy` file: `header` padded to a multiple of 64 bytes (or the length `claimed`),
/// then four float32 values.
fn npy(header: &str, claimed: Option<u32>) -> Vec<u8> {
    let mut h = header.to_string();
    while (12 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x02\x00".to_vec();
    out.extend_from_slice(&claimed.unwrap_or(h.len() as u32).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    for v in [1.0f32, 2.0, 3.0, 4.0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

const K22: &str = "def k(a: nl.hbm[nl.float32, 2, 2]):\n    c = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(c, value=t)\n    return c\n";

fn every_case() -> Vec<Case> {
    let mut v = Vec::new();
    // Issue 14 (round one), items 1 to 18.
    let s = staged("4294967295");
    for cmd in ["check", "run --check"] {
        v.push(case(
            "i14.01 stage_id u32 max",
            &[("k.nk", s.as_bytes())],
            &format!("{cmd} k.nk"),
            &[1],
        ));
    }
    let s = one_loop("for i in range(9223372036854775800, 9223372036854775807):");
    v.push(case(
        "i14.02 bounds near i64 max",
        &[("k.nk", s.as_bytes())],
        "run k.nk --check",
        &[1],
    ));
    let s = "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((1000000, 1000000), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a[0:128, :])\n    nl.store(c[0:128, 0:512], value=t)\n    return c\n";
    v.push(case(
        "i14.03 huge output",
        &[("k.nk", s.as_bytes())],
        "run k.nk --check",
        &[1],
    ));
    let m = String::from_utf8(repo_file("examples/matmul.nk")).expect("UTF-8");
    let mixed = m.replace("at: nl.hbm[nl.float32", "at: nl.hbm[nl.bfloat16");
    for p in ["default", "annotated", "emergent", "none", "auto"] {
        v.push(case(
            "i14.04 mixed-precision matmul",
            &[("k.nk", mixed.as_bytes())],
            &format!("run k.nk --check --pipeline {p}"),
            &[0],
        ));
    }
    let s = "def k(a: nl.hbm[nl.float32, 128, 512]):\n    s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(s[:, 0:256], value=t[:, 0:256])\n    v = nl.load(s)\n    nl.store(c, value=v)\n    return c\n";
    for cmd in [
        "check k.nk",
        "run k.nk",
        "run k.nk --check --pipeline emergent",
    ] {
        v.push(case(
            "i14.05 unwritten HBM scratch",
            &[("k.nk", s.as_bytes())],
            cmd,
            &[1],
        ));
    }
    let p =
        "tensor a: f32[100000, 100000] input\ntensor out: f32[128, 512] output\nengine sp {\n}\n";
    v.push(case(
        "i14.06 huge sim input",
        &[("p.s", p.as_bytes())],
        "sim p.s",
        &[1],
    ));
    v.push(case(
        "i14.06 huge sim input, no numerics",
        &[("p.s", p.as_bytes())],
        "sim p.s --no-numerics",
        &[1],
    ));
    let s = staged("1000000000");
    v.push(case(
        "i14.07 stage_id 10^9",
        &[("k.nk", s.as_bytes())],
        "check k.nk",
        &[1],
    ));
    let s = staged("10000000");
    v.push(case(
        "i14.08 stage gap 10^7",
        &[("k.nk", s.as_bytes())],
        "run k.nk",
        &[1],
    ));
    let mut deep = String::from("def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n");
    for d in 0..5000 {
        deep += &format!("{}for i{d} in nl.affine_range(1):\n", "    ".repeat(d + 1));
    }
    deep += &format!(
        "{}t = nl.load(a[0:128, :])\n    return c\n",
        "    ".repeat(5001)
    );
    v.push(case(
        "i14.09 5,000 nested loops",
        &[("k.nk", deep.as_bytes())],
        "run k.nk",
        &[1],
    ));
    let s = "def k(a: nl.hbm[nl.float32, 1000000, 1000000]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a[0:128, 0:512])\n    nl.store(c, value=t)\n    return c\n";
    for cmd in ["run k.nk", "run k.nk --engine interp", "compare k.nk"] {
        v.push(case(
            "i14.10 10^12-element parameter",
            &[("k.nk", s.as_bytes())],
            cmd,
            &[1],
        ));
    }
    let big = npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
        Some(0xFFFF_FFF0),
    );
    v.push(case(
        "i14.11 npy header claims 4 GB",
        &[("k.nk", K22.as_bytes()), ("a.npy", &big)],
        "run k.nk --check --input a=a.npy",
        &[1],
    ));
    let bare = npy(
        "{'descr': 'f4', 'fortran_order': False, 'shape': (2, 2), }",
        None,
    );
    v.push(case(
        "i14.11 npy bare f4",
        &[("k.nk", K22.as_bytes()), ("a.npy", &bare)],
        "run k.nk --check --input a=a.npy",
        &[0],
    ));
    let p = "tensor out: f32[1, 1] output\nsemaphore s\nengine dve {\n  loop r0 = 0..10000000 {\n    signal s\n  }\n}\n";
    v.push(case(
        "i14.12 10^7 signals",
        &[("p.s", p.as_bytes())],
        "sim p.s --max-cycles 100000000",
        &[0],
    ));
    let p = "tensor out: f32[1, 1] output\nsemaphore s\nengine dve {\n  loop r0 = 0..1000000000000 {\n    signal s\n  }\n}\n";
    v.push(case(
        "i14.13 loop of 10^12",
        &[("p.s", p.as_bytes())],
        "sim p.s",
        &[1],
    ));
    let nul = COPY.replace(
        "    return c\n",
        "    # a NUL \0 in a comment\n    return c\n",
    );
    v.push(case(
        "i14.14 NUL in a comment",
        &[("k.nk", nul.as_bytes())],
        "run k.nk",
        &[1],
    ));
    let cont = format!("{COPY}\\");
    v.push(case(
        "i14.14 continuation at EOF",
        &[("k.nk", cont.as_bytes())],
        "check k.nk",
        &[1],
    ));
    let s = staged("4294967296");
    v.push(case(
        "i14.15 stage_id 2^32",
        &[("k.nk", s.as_bytes())],
        "check k.nk",
        &[1],
    ));
    let bad = COPY.replace("nl.exp(t)", "nl.exp(u)");
    v.push(case(
        "i14.16 compare with a broken file",
        &[
            ("a.nk", COPY.as_bytes()),
            ("b.nk", bad.as_bytes()),
            ("c.nk", COPY.as_bytes()),
        ],
        "compare a.nk b.nk c.nk",
        &[1],
    ));
    let mut seq = String::from("def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n");
    for j in 0..16 {
        seq += &format!("    for i{j} in nl.affine_range(2):\n        t{j} = nl.load(a[:, i{j} * 256:(i{j} + 1) * 256])\n        nl.store(c[:, i{j} * 256:(i{j} + 1) * 256], value=t{j})\n");
    }
    seq += "    return c\n";
    v.push(case(
        "i14.17 16 sequential loops",
        &[("k.nk", seq.as_bytes())],
        "run k.nk --check",
        &[0],
    ));
    let mut line = String::from("def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t0 = nl.load(a)\n");
    for j in 1..400 {
        line += &format!("    t{j} = nl.multiply(t{}, 1.0)\n", j - 1);
    }
    line += "    nl.store(c, value=t399)\n    return c\n";
    v.push(case(
        "i14.17 400 straight-line statements",
        &[("k.nk", line.as_bytes())],
        "run k.nk --check",
        &[0],
    ));
    let nest = "def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    for i in nl.affine_range(100):\n        for j in nl.affine_range(100):\n            for l in nl.affine_range(100):\n                t = nl.load(a[0:128, 0:8])\n                nl.store(c[0:128, 0:8], value=t)\n    return c\n";
    v.push(case(
        "i14.17 three nested loops of 100",
        &[("k.nk", nest.as_bytes())],
        "compile k.nk --emit isa -o out.s",
        &[0],
    ));
    let big_mm = m.replace("512", "4096");
    v.push(case(
        "i14.17 matmul 4096^3 compiled",
        &[("k.nk", big_mm.as_bytes())],
        "compile k.nk --emit isa -o out.s",
        &[0, 1],
    ));
    v.push(case(
        "i14.18 no kernel in the file",
        &[("k.nk", b"x = 1\n")],
        "check k.nk",
        &[1],
    ));
    v.push(case(
        "i14.18 repeated --input",
        &[("k.nk", K22.as_bytes()), ("a.npy", &bare)],
        "run k.nk --input a=a.npy --input a=a.npy",
        &[1, 2],
    ));
    let p = "tensor out: f32[1, 1] output\nengine dve {\n  bogus\0 r0\n}\n";
    v.push(case(
        "i14.18 sim NUL in a message",
        &[("p.s", p.as_bytes())],
        "sim p.s",
        &[1],
    ));

    // Issue 30 (rounds two and three).
    for f in [
        "ring_offset_plus_one",
        "ring_offset_minus_three",
        "ring_offset_minus_huge",
        "ring_one_slot_read_behind",
    ] {
        let t = repo_file(&format!("tests/pir/{f}.pir"));
        for p in ["default", "emergent", "auto", "none", "annotated"] {
            v.push(case(
                &format!("i30 {f}"),
                &[("k.pir", &t)],
                &format!("run k.pir --check --pipeline {p}"),
                &[0, 1],
            ));
        }
    }
    let mut c = case(
        "i30 suggest --write under a full disk",
        &[("k.nk", &{
            let mut t = repo_file("examples/rmsnorm.nk");
            t.extend(
                "# padding so that the rewritten file passes 1 KiB\n"
                    .repeat(30)
                    .as_bytes(),
            );
            t
        })],
        "suggest k.nk --write",
        &[1],
    );
    c.fsize = Some(1024);
    // Under the cap the write fails (exit 1): the kernel must not change although `--write`
    // names it.
    v.push(c);
    for cmd in [
        "run k.nk --trace k.nk",
        "compare k.nk --svg k.nk",
        "compile k.nk -o k.nk",
        "run k.nk --check --output .",
    ] {
        // The named output is the kernel itself (or its directory): it must stay as it is.
        let exits: &'static [i32] = if cmd.ends_with(" .") { &[0, 1] } else { &[1] };
        v.push(case(
            "i30 an output that is an input",
            &[("k.nk", COPY.as_bytes())],
            cmd,
            exits,
        ));
    }
    let unwritten = base_pir(|s| {
        s.replace(
            "m[0 +: 128, 0 +: 1] = reduce.dve(op=max) t[0 +: 128, 0 +: 512]",
            "m[0 +: 64, 0 +: 1] = reduce.dve(op=max) t[0 +: 64, 0 +: 512]",
        )
    });
    for cmd in [
        "check k.pir",
        "run k.pir",
        "run k.pir --engine interp",
        "compile k.pir",
    ] {
        v.push(case(
            "i30 .pir unwritten read",
            &[("k.pir", unwritten.as_bytes())],
            cmd,
            &[1],
        ));
    }
    let pool = base_pir(|s| s.replace("reduce.dve", "reduce.pool"));
    v.push(case(
        "i30 .pir reduce.pool",
        &[("k.pir", pool.as_bytes())],
        "run k.pir --check",
        &[1],
    ));
    let wide = base_pir(|s| {
        s.replace(
            "tensor r: sbuf f32[128, 512] local",
            "tensor r: sbuf f32[128, 4611686018427387904] local",
        )
    });
    v.push(case(
        "i30 .pir SBUF f32[128, 2^62]",
        &[("k.pir", wide.as_bytes())],
        "run k.pir --check",
        &[1],
    ));
    v.push(case(
        "i30 .pir SBUF f32[128, 2^62] interp",
        &[("k.pir", wide.as_bytes())],
        "run k.pir --engine interp",
        &[1],
    ));
    let ring = String::from_utf8(repo_file("tests/pir/ring_offset_plus_one.pir"))
        .expect("UTF-8")
        .replace("block[k: 2]", "block[k: 65536]");
    v.push(case(
        "i30 .pir ring of 65,536 slots",
        &[("k.pir", ring.as_bytes())],
        "run k.pir --engine interp",
        &[1],
    ));
    // Found by the campaign over every surface (test-long): a written access pattern of 3 * 10^6
    // values on one column made the verifier list every element's offset (1.2 GB).
    let huge_pattern = String::from_utf8(repo_file("filetests/pir/roundtrip/access_patterns.pir"))
        .expect("UTF-8")
        .replace(
            "b[0, 0 : (128: 1, 0), (3: 0, 1), (4: 0, 3)]",
            "b[0, 0 : (128: 1, 0), (3000000: 0, 0), (4: 0, 3)]",
        );
    v.push(case(
        "campaign .pir written pattern of 1.5 * 10^9 values",
        &[("k.pir", huge_pattern.as_bytes())],
        "run k.pir --check",
        &[1],
    ));
    let privat = repo_file("tests/pir/privatised_name_taken.pir");
    for p in ["default --peel", "emergent", "auto --peel"] {
        v.push(case(
            "i30 privatised name taken",
            &[("k.pir", &privat)],
            &format!("run k.pir --check --pipeline {p}"),
            &[0],
        ));
    }
    let psum = repo_file("tests/pir/unrolled_psum_tiles.pir");
    v.push(case(
        "i30 emergent PSUM plan",
        &[("k.pir", &psum)],
        "run k.pir --check --pipeline emergent",
        &[0],
    ));
    for f in ["matmul_mode_b", "rmsnorm_mode_b", "attention"] {
        let t = repo_file(&format!("examples/{f}.nk"));
        v.push(case(
            "i30 suggest",
            &[("k.nk", &t)],
            "suggest k.nk",
            &[0, 1],
        ));
    }
    let s = "def k(a: nl.hbm[nl.float32, 1000000, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a[0:128, :])\n    nl.store(c, value=t)\n    return c\n";
    v.push(case(
        "i30 a 1000000 x 512 parameter",
        &[("k.nk", s.as_bytes())],
        "run k.nk --check",
        &[1],
    ));
    let p = "tensor a: f32[400000, 1000] input\ntensor out: f32[1, 1] output\nengine sp {\n  dma q0 hbm out[0; 1:1, 1:1], hbm a[0; 1:1000, 1:1]\n}\n";
    v.push(case(
        "i30 .s of 4 x 10^8 elements",
        &[("p.s", p.as_bytes())],
        "sim p.s",
        &[1],
    ));
    let mut loads = String::from("def k(a: nl.hbm[nl.float32, 128, 512]):\n    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    for i in nl.affine_range(2):\n        acc = nl.load(a[:, 0:512])\n");
    for j in 0..300 {
        loads += &format!(
            "        t{j} = nl.load(a[:, {c}:{d}])\n",
            c = j % 512,
            d = j % 512 + 1
        );
    }
    loads += "        nl.store(c[:, 0:512], value=acc)\n    return c\n";
    v.push(case(
        "i30 300 loads in one body",
        &[("k.nk", loads.as_bytes())],
        "run k.nk --check",
        &[0, 1],
    ));
    let long = "kernel long(x) -> (y) {\n  tensor x: hbm f32[128, 512] input\n  tensor y: hbm f32[128, 512] output\n  tensor t: sbuf f32[128, 512] local\n  loop r in 0..1000000 sequential {\n    stmt {\n      t[0 +: 128, 0 +: 512] = load.dma x[0 +: 128, 0 +: 512]\n    }\n    stmt {\n      y[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]\n    }\n  }\n}\n";
    for cmd in [
        "run k.pir --pipeline none",
        "run k.pir --engine interp",
        "run k.pir --check",
    ] {
        v.push(case(
            "i30 .pir loop of 10^6",
            &[("k.pir", long.as_bytes())],
            cmd,
            &[1],
        ));
    }
    let nested = npy(
        &format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}2, 2{}, }}",
            "(".repeat(20),
            ")".repeat(20)
        ),
        None,
    );
    v.push(case(
        "i30 npy 20 nested brackets",
        &[("k.nk", K22.as_bytes()), ("a.npy", &nested)],
        "run k.nk --check --input a=a.npy",
        &[1],
    ));
    let flood = npy(
        &format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': '{}",
            "y".repeat(2 << 20)
        ),
        None,
    );
    v.push(case(
        "i30 npy 2 MB header with a syntax error",
        &[("k.nk", K22.as_bytes()), ("a.npy", &flood)],
        "run k.nk --check --input a=a.npy",
        &[1],
    ));
    v
}

/// The paths a command line names as what it may write.
fn named_outputs(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for w in args.windows(2) {
        if ["--output", "-o", "--trace", "--svg"].contains(&w[0].as_str()) {
            out.push(w[1].clone());
        }
    }
    if args.iter().any(|a| a == "--write") {
        out.push(args[1].clone());
    }
    out
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("readable scratch directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_default();
            (p, b)
        })
        .collect();
    files.sort();
    files
}

/// Runs one case; `Err` says how it broke the envelope.
#[allow(clippy::zombie_processes)]
fn run_case(c: &Case, dir: &Path) -> Result<String, String> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    for (name, bytes) in &c.files {
        std::fs::write(dir.join(name), bytes).expect("the scratch directory is writable");
    }
    let before = snapshot(dir);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nkc"));
    cmd.args(&c.args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let fsize = c.fsize;
    // SAFETY: `setrlimit` is async-signal-safe and touches no state of the parent.
    unsafe {
        cmd.pre_exec(move || {
            let cap = libc::rlimit {
                rlim_cur: common::MEMORY_CAP_BYTES as libc::rlim_t,
                rlim_max: common::MEMORY_CAP_BYTES as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(bytes) = fsize {
                // A write past it fails with EFBIG (the signal is ignored, as `ulimit -f` does).
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let cap = libc::rlimit {
                    rlim_cur: bytes as libc::rlim_t,
                    rlim_max: bytes as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &cap) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("the nkc binary runs");
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut b);
        b
    });
    let started = Instant::now();
    let pid = child.id() as libc::pid_t;
    let status = loop {
        let mut raw = 0;
        // SAFETY: `rusage` is plain data that `wait4` fills in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, without blocking.
        let r = unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) };
        if r == pid {
            let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
            break Some((
                std::process::ExitStatus::from_raw(raw),
                tv(usage.ru_utime) + tv(usage.ru_stime),
            ));
        }
        if started.elapsed() > CPU_LIMIT * 12 {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr_bytes = err_reader.join().unwrap_or_default();
    let stderr =
        String::from_utf8_lossy(&stderr_bytes[..stderr_bytes.len().min(4000)]).into_owned();
    let Some((status, cpu)) = status else {
        return Err(format!(
            "killed after {:?} of wall-clock time",
            CPU_LIMIT * 12
        ));
    };
    let code = status.code();
    if !code.is_some_and(|k| c.exits.contains(&k)) {
        return Err(format!(
            "exit {code:?} (signal {:?}), expected one of {:?}\n{stderr}",
            status.signal(),
            c.exits
        ));
    }
    if cpu > CPU_LIMIT {
        return Err(format!("{cpu:?} of CPU time"));
    }
    if stderr_bytes.len() > 64 << 10 {
        return Err(format!("{} bytes of stderr", stderr_bytes.len()));
    }
    // Only a run that succeeded may have written what it names.
    let allowed: Vec<PathBuf> = if code == Some(0) {
        named_outputs(&c.args).iter().map(|n| dir.join(n)).collect()
    } else {
        Vec::new()
    };
    let after = snapshot(dir);
    for (p, bytes) in &before {
        let now = after.iter().find(|a| &a.0 == p);
        if !allowed.contains(p) && now.is_none_or(|a| &a.1 != bytes) {
            return Err(format!("{} changed or went away\n{stderr}", p.display()));
        }
    }
    for (p, _) in &after {
        let named = allowed.iter().any(|a| p.starts_with(a));
        if !named && !before.iter().any(|b| &b.0 == p) {
            return Err(format!("{} left behind", p.display()));
        }
    }
    if code == Some(0) && c.args[0] == "run" {
        if !c.args.iter().any(|a| a == "--check") {
            return Err("a `run` case without `--check`".into());
        }
        if !stdout.contains("--check: outputs equal") {
            return Err(format!("exit 0 without the interpreter's bits:\n{stdout}"));
        }
    }
    Ok(format!("exit {code:?}, {:.2} s CPU", cpu.as_secs_f64()))
}

#[test]
fn every_hostile_case_exits_0_or_1_in_time_and_memory_with_nothing_lost() {
    let cases = every_case();
    assert!(cases.len() >= 70, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let dir = common::scratch("hostile-rounds", &k.to_string());
        match run_case(c, &dir) {
            Ok(what) => println!("{:<44} {:<60} {what}", c.name, c.args.join(" ")),
            Err(e) => failures.push(format!("{} `nkc {}`: {e}", c.name, c.args.join(" "))),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases broke the envelope:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
