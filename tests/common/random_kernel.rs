//! The random kernels of the property tests and the fuzz targets: a random op DAG over small
//! local tiles (`[4, 8]`), sometimes with an SBUF buffer carried across iterations, in a loop of 1
//! to 5 iterations, with a random schedule (Mode A or Mode B, interleaved execution orders,
//! buffering keywords, sometimes an illegal order with its check disabled); see
//! `tests/pipeline_props.rs`. Deterministic in the seed. Also the `run --check` property the
//! backend tests and the fuzz targets assert on such a kernel ([`run_checked`]). It depends only on
//! the workspace's crates, so that `tests/*.rs` and `fuzz/fuzz_targets/run_check.rs` include it
//! with `#[path]`.
#![allow(dead_code)]

/// SplitMix64: everything drawn depends on the seed only.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0 .. n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
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
pub fn random_kernel(seed: u64) -> String {
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

/// `nkc run --check` in-process on the random kernel of `seed`, on path `mode`: `true` when it
/// simulated to the interpreter's bits of the kernel as written with no race, `false` when the
/// legality check refused its schedule (E04xx). Anything else panics with the kernel.
pub fn run_checked(seed: u64, mode: nkc::run::PipelineMode) -> bool {
    use nkc::run::{self, Engine, RunOptions};
    let text = random_kernel(seed);
    let src = nkc::driver::Source {
        path: std::path::PathBuf::from(format!("random{seed}.nk")),
        text: text.clone(),
    };
    let opts = RunOptions {
        specialise: Default::default(),
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
    match run::run(&src, &opts, &mut penguin::pipeline::PipelineLog::default()) {
        Ok(r) => {
            let sim = r.sim.expect("engine sim reports the simulator's figures");
            assert!(r.checked && sim.races.is_empty(), "{text}\n{:?}", sim.races);
            true
        }
        Err(nkc::driver::Failure::Diagnostics(d))
            if d.iter().all(|e| e.code.starts_with("E04")) =>
        {
            false
        }
        Err(e) => panic!("seed {seed} --pipeline {}:\n{text}\n{e:?}", mode.name()),
    }
}
