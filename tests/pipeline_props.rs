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
//! The property: every schedule the legality check accepts interprets to the original's bits.
//! The figures (printed, see them with `--nocapture`): how many schedules the check rejects, and
//! of those, how many really change the result when run with the check off (different bits, or a
//! read of memory nothing wrote) — the precision of the check. The check is exact on memory
//! dependences; the rejected schedules that keep their bits do so by coincidence of values (an
//! accumulator that stays 0 through `tanh`, a broken dependence on a tile no output depends on).

use penguin::interp;
use penguin::pipeline::{self, codes, PipelineOptions};
use penguin::Function;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use std::cell::RefCell;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a>(&mut self, xs: &'a [String]) -> &'a str {
        &xs[self.below(xs.len())]
    }
}

/// One statement: its text up to the closing parenthesis of its outer call.
struct Line {
    head: String,
}

/// A random kernel with a random schedule, as source text.
fn random_kernel(seed: u64) -> String {
    let mut r = Rng(seed);
    let trip = 1 + r.below(5);
    let rows = 4 * trip;
    let carried = r.chance(40);
    let mut body: Vec<Line> = Vec::new();
    let mut tiles: Vec<String> = vec!["t0".into()];
    body.push(Line {
        head: "t0 = nl.load(a[i * 4:(i + 1) * 4, :]".into(),
    });
    if r.chance(50) {
        body.push(Line {
            head: "t1 = nl.load(b[i * 4:(i + 1) * 4, :]".into(),
        });
        tiles.push("t1".into());
    }
    let computes = 1 + r.below(4);
    let acc_at = if carried {
        Some(r.below(computes + 1))
    } else {
        None
    };
    let mut pool = tiles.clone();
    if carried && r.chance(50) {
        // Read before the update: the previous iteration's value.
        pool.push("acc".into());
    }
    let mut last = "t0".to_string();
    for k in 0..=computes {
        if acc_at == Some(k) {
            // Add a tile, not `acc` itself: `acc` starts at 0 and must change for a broken
            // dependence on it to show in the outputs.
            let tiles_only: Vec<String> = pool.iter().filter(|t| *t != "acc").cloned().collect();
            let x = r.pick(&tiles_only).to_string();
            body.push(Line {
                head: format!("acc += nl.multiply({x}, 0.5"),
            });
            if !pool.contains(&"acc".to_string()) && r.chance(60) {
                pool.push("acc".into());
            }
        }
        if k == computes {
            break;
        }
        let name = format!("u{k}");
        let x = r.pick(&pool).to_string();
        // Two different operands where there are two: `x - x` hides any broken dependence.
        let others: Vec<String> = pool.iter().filter(|t| **t != x).cloned().collect();
        let y = if others.is_empty() {
            x.clone()
        } else {
            r.pick(&others).to_string()
        };
        let head = match r.below(7) {
            0 => format!("{name} = nl.add({x}, {y}"),
            1 => format!("{name} = nl.multiply({x}, {y}"),
            2 => format!("{name} = nl.subtract({x}, {y}"),
            3 => format!("{name} = nl.maximum({x}, {y}"),
            4 => format!("{name} = nl.tanh({x}"),
            5 => format!("{name} = nl.multiply({x}, 0.75"),
            _ => format!("{name} = nl.exp({x}"),
        };
        body.push(Line { head });
        pool.push(name.clone());
        last = name;
    }
    body.push(Line {
        head: format!("nl.store(c[i * 4:(i + 1) * 4, :], value={last}"),
    });

    // The schedule.
    let n = body.len();
    let mut loop_kws = String::new();
    let mut kws: Vec<String> = vec![String::new(); n];
    if r.chance(40) {
        let k = 2 + r.below(n.min(4) - 1);
        loop_kws += &format!(", num_stages={k}");
    } else {
        let stages_n = 1 + r.below(n.min(4));
        let mut cuts: Vec<usize> = Vec::new();
        while cuts.len() < stages_n - 1 {
            let c = 1 + r.below(n - 1);
            if !cuts.contains(&c) {
                cuts.push(c);
            }
        }
        cuts.sort();
        let stages: Vec<usize> = (0..n)
            .map(|j| cuts.iter().filter(|&&c| c <= j).count())
            .collect();
        let mut orders: Option<Vec<usize>> = None;
        if r.chance(10) {
            // Any order, with the check disabled.
            let mut perm: Vec<usize> = (0..n).collect();
            for j in (1..n).rev() {
                perm.swap(j, r.below(j + 1));
            }
            loop_kws += ", disable_execution_order_check=True";
            orders = Some(perm);
        } else if r.chance(50) {
            // A random interleaving of the stages, program order kept within each.
            let mut next: Vec<usize> = (0..stages_n)
                .map(|s| stages.iter().position(|&x| x == s).unwrap())
                .collect();
            let mut ord = vec![0; n];
            for pos in 0..n {
                let live: Vec<usize> = (0..stages_n)
                    .filter(|&s| next[s] < n && stages[next[s]] == s)
                    .collect();
                let s = live[r.below(live.len())];
                ord[next[s]] = pos;
                next[s] += 1;
            }
            orders = Some(ord);
        }
        for j in 0..n {
            kws[j] = format!(", stage_id={}", stages[j]);
            if let Some(o) = &orders {
                kws[j] += &format!(", execution_order={}", o[j]);
            }
        }
    }
    if r.chance(15) {
        loop_kws += ", disable_auto_buffer=True";
        if r.chance(50) {
            loop_kws += &format!(", multi_buffer={}", 2 + r.below(2));
        }
    }

    let mut src = format!(
        "def k(a: nl.hbm[nl.float32, {rows}, 8], b: nl.hbm[nl.float32, {rows}, 8]):\n    c = nl.ndarray(({rows}, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n"
    );
    if carried {
        src += "    s = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n";
        src += "    acc = nl.zeros((4, 8), dtype=nl.float32, buffer=nl.sbuf)\n";
    }
    src += &format!("    for i in nl.sequential_range({trip}{loop_kws}):\n");
    for (line, kw) in body.iter().zip(&kws) {
        src += &format!("        {}{kw})\n", line.head);
    }
    if carried {
        src += "    nl.store(s, value=acc)\n    return c, s\n";
    } else {
        src += "    return c\n";
    }
    src
}

/// The outputs' bits, or `None` when the interpreter stops (an uninitialised read).
fn bits(func: &Function, seed: u64) -> Option<Vec<Vec<u32>>> {
    let inputs = interp::random_inputs(func, seed);
    let result = interp::interpret(func, &inputs).ok()?;
    Some(
        result
            .outputs
            .iter()
            .map(|a| a.data.iter().map(|x| x.to_bits()).collect())
            .collect(),
    )
}

#[derive(Default, Debug)]
struct Figures {
    cases: usize,
    accepted: usize,
    rejected: usize,
    /// Rejected schedules that, run with the check off, give other bits or stop.
    really_wrong: usize,
}

/// One case: returns whether the check accepted, and for a rejection whether it was real.
fn run_case(seed: u64, figures: &RefCell<Figures>) -> Result<(), TestCaseError> {
    let src = random_kernel(seed);
    let func = frontend::compile(&src, None)
        .map_err(|e| TestCaseError::fail(format!("does not compile: {e:?}\n{src}")))?;
    let original = bits(&func, seed)
        .ok_or_else(|| TestCaseError::fail(format!("the original does not run\n{src}")))?;
    let mut piped = func.clone();
    let mut f = figures.borrow_mut();
    f.cases += 1;
    match pipeline::pipeline_function(&mut piped, &PipelineOptions::default()) {
        Ok(_) => {
            f.accepted += 1;
            prop_assert!(
                bits(&piped, seed).as_ref() == Some(&original),
                "an accepted schedule changes the result:\n{src}\n{}",
                penguin::write_function(&piped)
            );
        }
        Err(errors) => {
            prop_assert!(
                errors.iter().all(|e| e.code == codes::DEPENDENCE_VIOLATION),
                "unexpected errors {errors:#?}\n{src}"
            );
            f.rejected += 1;
            let mut unchecked = func.clone();
            let off = PipelineOptions {
                legality_check: false,
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
    assert!(f.cases >= cases as usize);
    // Both sides of the check are exercised.
    assert!(f.accepted > f.cases / 4, "{f:?}");
    assert!(f.rejected > 0, "{f:?}");
}

#[test]
fn the_generator_makes_kernels_the_front_end_accepts() {
    for seed in 0..200 {
        let src = random_kernel(seed);
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
/// user's stages) and on `emergent`. `NKC_BACKEND_CASES=N` changes the count.
#[test]
fn accepted_random_schedules_run_bit_exact_on_the_backend() {
    use nkc::run::{self, Engine, PipelineMode, RunOptions};
    let cases: u64 = std::env::var("NKC_BACKEND_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let (mut ran, mut refused) = (0, 0);
    for seed in 0..cases {
        let text = random_kernel(seed);
        let src = nkc::driver::Source {
            path: std::path::PathBuf::from(format!("random{seed}.nk")),
            text: text.clone(),
        };
        for mode in [PipelineMode::Default, PipelineMode::Emergent] {
            let opts = RunOptions {
                kernel: None,
                engine: Engine::Sim,
                pipeline: mode,
                inputs: Vec::new(),
                seed,
                output_dir: None,
                legality_check: true,
                check: true,
                trace: None,
                timeline: false,
                max_cycles: runtime_sim::sim::DEFAULT_MAX_CYCLES,
            };
            match run::run(&src, &opts, &mut pipeline::PipelineLog::default()) {
                Ok(r) => {
                    let sim = r.sim.expect("engine sim");
                    assert!(r.checked && sim.races.is_empty(), "{text}\n{:?}", sim.races);
                    ran += 1;
                }
                Err(nkc::driver::Failure::Diagnostics(d))
                    if d.iter().all(|e| e.code.starts_with("E04")) =>
                {
                    refused += 1;
                }
                Err(e) => panic!("seed {seed} --pipeline {}:\n{text}\n{e:?}", mode.name()),
            }
        }
    }
    println!("backend: {ran} random runs bit-exact, {refused} schedules refused by the check");
    assert!(ran > cases as usize);
}
