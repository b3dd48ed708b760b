//! The property test of the pipeliner: random small kernels × random stage assignments.
//!
//! A kernel is a random op DAG over small local tiles (`[4, 8]`), sometimes with an SBUF buffer
//! carried across iterations (`acc += ...`, possibly read by later statements), in a loop of 1 to
//! 5 iterations. Its schedule is random too: Mode A with 2 to 4 stages, or Mode B with random
//! stage ids (non-decreasing, no gap) and, half the time, a random valid execution order that
//! interleaves the stages; sometimes `disable_auto_buffer` (with or without `multi_buffer`), and
//! sometimes `disable_execution_order_check` with an arbitrary order, so that some schedules are
//! illegal.
//!
//! Every fourth kernel is nested (`random_nested_kernel`): that loop, with its own random schedule,
//! inside an outer loop with a random schedule of its own (nested pipelining), whose body also reads
//! back what the inner loop stored.
//!
//! The property: every schedule the legality check accepts interprets to the original's bits,
//! predicated and peeled (`--peel`).
//! The figures (printed, see them with `--nocapture`): how many schedules the check rejects, and
//! of those, how many really change the result when run with the check off (different bits, or a
//! read of memory nothing wrote) — the precision of the check. The check is exact on memory
//! dependences; the rejected schedules that keep their bits do so by coincidence of values (an
//! accumulator that stays 0 through `tanh`, a broken dependence on a tile no output depends on).

use penguin::pipeline::{self, codes, PipelineOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use std::cell::RefCell;

#[path = "common/random_kernel.rs"]
mod random_kernel;
use random_kernel::{bits, random_case, random_kernel, random_nested_kernel};

#[derive(Default, Debug)]
struct Figures {
    cases: usize,
    accepted: usize,
    rejected: usize,
    /// Rejected schedules that, run with the check off, give other bits or stop.
    really_wrong: usize,
    /// Nested kernels, and those whose schedules the check accepted.
    nested: usize,
    nested_accepted: usize,
}

/// One case: returns whether the check accepted, and for a rejection whether it was real.
fn run_case(seed: u64, figures: &RefCell<Figures>) -> Result<(), TestCaseError> {
    let src = random_case(seed);
    let func = frontend::compile(&src, None)
        .map_err(|e| TestCaseError::fail(format!("does not compile: {e:?}\n{src}")))?;
    let original = bits(&func, seed)
        .ok_or_else(|| TestCaseError::fail(format!("the original does not run\n{src}")))?;
    let mut piped = func.clone();
    let mut f = figures.borrow_mut();
    f.cases += 1;
    let nested = seed % 4 == 3;
    f.nested += usize::from(nested);
    match pipeline::pipeline_function(&mut piped, &PipelineOptions::default()) {
        Ok(_) => {
            f.accepted += 1;
            f.nested_accepted += usize::from(nested);
            prop_assert!(
                bits(&piped, seed).as_ref() == Some(&original),
                "an accepted schedule changes the result:\n{src}\n{}",
                penguin::write_function(&piped)
            );
            // Peeled (`--peel`): the same instances in the same order, so the same bits.
            let mut peeled = piped.clone();
            let peel = pipeline::peel::peel_extended_loops(
                &mut peeled,
                &mut pipeline::PipelineLog::default(),
            );
            prop_assert!(peel.is_ok(), "{peel:?}\n{src}");
            prop_assert!(
                penguin::verify_function(&peeled).is_ok(),
                "the peeled IR does not verify:\n{src}\n{}",
                penguin::write_function(&peeled)
            );
            prop_assert!(
                bits(&peeled, seed).as_ref() == Some(&original),
                "an accepted schedule, peeled, changes the result:\n{src}\n{}",
                penguin::write_function(&peeled)
            );
        }
        Err(errors) => {
            prop_assert!(
                errors
                    .iter()
                    .all(|e| e.code() == codes::DEPENDENCE_VIOLATION),
                "unexpected errors {errors:#?}\n{src}"
            );
            f.rejected += 1;
            let mut unchecked = func.clone();
            let off = PipelineOptions {
                legality_check: false,
                ..Default::default()
            };
            pipeline::pipeline_function(&mut unchecked, &off)
                .map_err(|e| TestCaseError::fail(format!("{e:?}\n{src}")))?;
            if bits(&unchecked, seed).as_ref() != Some(&original) {
                f.really_wrong += 1;
            }
        }
    }
    Ok(())
}

#[test]
fn accepted_random_schedules_keep_their_bits() {
    let cases: u32 = std::env::var("NKC_PIPELINE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let figures = RefCell::new(Figures::default());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    // A fixed sequence of kernels, so that the figures are reproducible.
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&any::<u64>(), |seed| run_case(seed, &figures));
    if let Err(e) = result {
        panic!("{e}");
    }
    let f = figures.into_inner();
    println!(
        "random schedules: {} cases, {} accepted, {} rejected ({:.1}%); with the check off, {} of \
         the {} rejected really change the result ({:.1}%)",
        f.cases,
        f.accepted,
        f.rejected,
        100.0 * f.rejected as f64 / f.cases.max(1) as f64,
        f.really_wrong,
        f.rejected,
        100.0 * f.really_wrong as f64 / f.rejected.max(1) as f64
    );
    println!(
        "nested: {} of the cases, {} accepted",
        f.nested, f.nested_accepted
    );
    assert!(f.cases >= cases as usize);
    // Both sides of the check are exercised, on nested kernels too.
    assert!(f.accepted > f.cases / 4, "{f:?}");
    assert!(f.nested_accepted > f.nested / 4, "{f:?}");
    assert!(f.rejected > 0, "{f:?}");
}

#[test]
fn the_generator_makes_kernels_the_front_end_accepts() {
    for seed in 0..200 {
        let src = if seed % 2 == 0 {
            random_kernel(seed)
        } else {
            random_nested_kernel(seed)
        };
        assert!(
            frontend::compile(&src, None).is_ok(),
            "{src}\n{:?}",
            frontend::compile(&src, None).err()
        );
    }
}

/// The backend's side of the property: every random kernel whose schedule the legality check
/// accepts compiles (list and modulo scheduling, ring expansion, synchronisation) and simulates
/// to the bits of the kernel as written (`--check`), with no race, on the `default` path (the
/// user's stages), on it peeled (`--peel`: physical prologue and epilogue) and on `emergent`. `NKC_BACKEND_CASES=N` changes the count.
#[test]
fn accepted_random_schedules_run_bit_exact_on_the_backend() {
    use nkc::run::PipelineMode;
    let cases: u64 = std::env::var("NKC_BACKEND_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let (mut ran, mut refused) = (0, 0);
    for seed in 0..cases {
        let paths = [
            (PipelineMode::Default, false),
            (PipelineMode::Default, true),
            (PipelineMode::Emergent, false),
        ];
        for (mode, peel) in paths {
            if random_kernel::run_checked_peeled(seed, mode, peel) {
                ran += 1;
            } else {
                refused += 1;
            }
        }
    }
    println!("backend: {ran} random runs bit-exact, {refused} schedules refused by the check");
    assert!(ran > cases as usize);
}
