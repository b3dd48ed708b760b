//! The widened random kernels of `tests/common/random_kernel.rs` ([`random_wide_kernel`]: matmul
//! into PSUM, reductions, broadcasts, activation with a bias, transposes, bfloat16, several
//! shapes, nested loops, Mode A and Mode B, `num_stages="auto"`): each passes the front end, the
//! seeds here reach every operation family and schedule, and each runs on every path (`default`,
//! `annotated`, `emergent`, `none`, `auto`, and `--peel` on the three that pipeline annotated
//! loops) to the interpreter's bits of the kernel as written, with no race. `NKC_WIDE_CASES`
//! changes the number of kernels run on every path (the long campaign: `make test-long`).

#[path = "common/random_kernel.rs"]
mod random_kernel;

use nkc::run::PipelineMode;
use random_kernel::{random_wide_kernel, run_text_checked};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every generated kernel is valid NKI for the front end: a generator whose kernels are refused
/// tests nothing beyond the front end.
#[test]
fn every_wide_kernel_passes_check() {
    for seed in 0..400 {
        let text = random_wide_kernel(seed);
        if let Err(e) = frontend::compile(&text, None) {
            panic!("seed {seed}: {e:#?}\n{text}");
        }
    }
}

/// The first 60 seeds reach every operation family and every kind of schedule.
#[test]
fn the_wide_kernels_cover_every_family() {
    let n = 60;
    let texts: Vec<String> = (0..n).map(random_wide_kernel).collect();
    for needle in [
        "nl.matmul(",
        "acc += nl.matmul(",
        "acc += nl.multiply(",
        "nl.max(",
        "nl.sum(",
        "nisa.activation(",
        "nisa.nc_transpose(",
        "nl.exp(",
        "nl.tanh(",
        "nl.bfloat16",
        "num_stages=\"auto\"",
        "num_stages=2",
        "stage_id=1",
        "for o in nl.affine_range(",
        "nl.sequential_range(",
        ", 4, 8]",
        ", 32, 32]",
    ] {
        let hits = texts.iter().filter(|t| t.contains(needle)).count();
        assert!(hits > 0, "no kernel of the {n} holds `{needle}`");
    }
    // A broadcast: a binary operation of a tile with a `[P, 1]` column of a reduction.
    assert!(texts
        .iter()
        .any(|t| t.contains("axis=1") && t.contains("bias=")));
}

/// Each kernel on every path, bit-exact against the interpreter; most must run (not be refused by
/// the legality check), or the property proves little.
#[test]
fn wide_kernels_run_bit_exact_on_every_path() {
    let n = env_u64("NKC_WIDE_CASES", 8);
    let paths = [
        (PipelineMode::Default, false),
        (PipelineMode::Annotated, false),
        (PipelineMode::Emergent, false),
        (PipelineMode::None, false),
        (PipelineMode::Auto, false),
        (PipelineMode::Default, true),
        (PipelineMode::Annotated, true),
        (PipelineMode::Auto, true),
    ];
    let (mut ran, mut refused) = (0u64, 0u64);
    for seed in 0..n {
        let text = random_wide_kernel(seed);
        for &(mode, peel) in &paths {
            if run_text_checked(&text, seed, mode, peel) {
                ran += 1;
            } else {
                refused += 1;
            }
        }
    }
    println!("wide kernels: {ran} runs bit-exact, {refused} refused by the legality check");
    assert!(
        ran > 0 && refused * 4 <= ran,
        "{ran} ran, {refused} refused"
    );
}
