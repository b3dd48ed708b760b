//! The random kernels of the property tests and the fuzz targets: a random op DAG over small
//! local tiles (`[4, 8]`), sometimes with an SBUF buffer carried across iterations, in a loop of 1
//! to 5 iterations, with a random schedule (Mode A or Mode B, interleaved execution orders,
//! buffering keywords, sometimes an illegal order with its check disabled); see
//! `tests/pipeline_props.rs`. Deterministic in the seed. Also the `run --check` property the
//! backend tests and the fuzz targets assert on such a kernel ([`run_checked`]). It depends only on
//! the workspace's crates, so that `tests/*.rs` and `fuzz/fuzz_targets/run_check.rs` include it
//! with `#[path]`.
#![allow(dead_code)]

/// The bits of a kernel's outputs on the seeded random inputs, or `None` when the interpreter stops
/// (an uninitialised read).
pub fn bits(func: &penguin::Function, seed: u64) -> Option<Vec<Vec<u32>>> {
    use penguin::interp;
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

/// SplitMix64: everything drawn depends on the seed only.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut r = vocab::SplitMix64(self.0);
        let z = r.next_u64();
        self.0 = r.0;
        z
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

/// A random loop: its trip count, whether it updates the carried `acc`, its loop keywords, and its
/// statements (each up to the closing parenthesis of its outer call) with their keywords. Its
/// tiles are rows `i * 4 .. (i + 1) * 4` of `a`, `b` and `c`, columns `cols`.
struct RandomLoop {
    trip: usize,
    carried: bool,
    loop_kws: String,
    body: Vec<Line>,
    kws: Vec<String>,
}

fn random_loop(r: &mut Rng, cols: &str) -> RandomLoop {
    let trip = 1 + r.below(5);
    let carried = r.chance(40);
    let mut body: Vec<Line> = Vec::new();
    let mut tiles: Vec<String> = vec!["t0".into()];
    body.push(Line {
        head: format!("t0 = nl.load(a[i * 4:(i + 1) * 4, {cols}]"),
    });
    if r.chance(50) {
        body.push(Line {
            head: format!("t1 = nl.load(b[i * 4:(i + 1) * 4, {cols}]"),
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
        head: format!("nl.store(c[i * 4:(i + 1) * 4, {cols}], value={last}"),
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

    RandomLoop {
        trip,
        carried,
        loop_kws,
        body,
        kws,
    }
}

/// A random kernel with a random schedule, as source text.
pub fn random_kernel(seed: u64) -> String {
    let mut r = Rng(seed);
    let RandomLoop {
        trip,
        carried,
        loop_kws,
        body,
        kws,
    } = random_loop(&mut r, ":");
    let rows = 4 * trip;
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

/// A random kernel with two levels of loops, as source text: the loop of [`random_kernel`] (its own
/// random schedule) on columns `o * 8 .. (o + 1) * 8`, inside a loop `o` of 1 to 3 iterations
/// whose body also loads before it and, after it, reads back what it stored (a dependence through
/// HBM) or a tile of `a`, and stores the exponential to `e`. The outer loop's schedule is random
/// too (Mode A, or Mode B with the inner loop's `stage_id` on its range call), so that nested
/// pipelining, legal and not, is exercised.
pub fn random_nested_kernel(seed: u64) -> String {
    let mut r = Rng(seed ^ 0x6E65_7374_6564);
    let outer = 1 + r.below(3);
    let RandomLoop {
        trip,
        carried,
        loop_kws,
        body,
        kws,
    } = random_loop(&mut r, "o * 8:(o + 1) * 8");
    let rows = 4 * trip;
    let cols = 8 * outer;
    // The outer body: [pre], the inner loop, post load, post store.
    let pre = r.chance(50);
    let back = if r.chance(50) { "c" } else { "a" };
    let children = 3 + usize::from(pre);
    let mut outer_kws = String::new();
    let mut stage = vec![String::new(); children];
    if r.chance(50) {
        outer_kws = format!(", num_stages={}", 2 + r.below(2));
    } else if r.chance(33) {
        // An un-annotated outer loop: the backend pipelines it around the user's inner loop
        // (the carry across the inner loop's executions, or its flattening into the outer body).
    } else {
        let mut s = 0;
        for (j, st) in stage.iter_mut().enumerate() {
            if j > 0 && r.chance(50) {
                s += 1;
            }
            *st = format!(", stage_id={s}");
        }
        if s == 0 {
            stage.iter_mut().for_each(String::clear);
        }
    }
    let mut src = format!(
        "def k(a: nl.hbm[nl.float32, {rows}, {cols}], b: nl.hbm[nl.float32, {rows}, {cols}]):\n    c = nl.ndarray(({rows}, {cols}), dtype=nl.float32, buffer=nl.shared_hbm)\n    e = nl.ndarray(({e}, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n",
        e = 4 * outer
    );
    if carried {
        src += "    s = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n";
        src += "    acc = nl.zeros((4, 8), dtype=nl.float32, buffer=nl.sbuf)\n";
    }
    src += &format!("    for o in nl.affine_range({outer}{outer_kws}):\n");
    let mut c = 0;
    if pre {
        src += &format!(
            "        p = nl.load(b[0:4, o * 8:(o + 1) * 8]{})\n",
            stage[c]
        );
        c += 1;
    }
    src += &format!(
        "        for i in nl.sequential_range({trip}{}{loop_kws}):\n",
        stage[c]
    );
    c += 1;
    for (line, kw) in body.iter().zip(&kws) {
        src += &format!("            {}{kw})\n", line.head);
    }
    src += &format!(
        "        w = nl.load({back}[0:4, o * 8:(o + 1) * 8]{})\n",
        stage[c]
    );
    c += 1;
    let w = if pre { "nl.add(w, p)" } else { "w" };
    src += &format!(
        "        nl.store(e[o * 4:(o + 1) * 4, :], value=nl.exp({w}){})\n",
        stage[c]
    );
    if carried {
        src += "    nl.store(s, value=acc)\n    return c, e, s\n";
    } else {
        src += "    return c, e\n";
    }
    src
}

/// The kernel the properties run for `seed`: every fourth one nested ([`random_nested_kernel`]).
pub fn random_case(seed: u64) -> String {
    if seed % 4 == 3 {
        random_nested_kernel(seed)
    } else {
        random_kernel(seed)
    }
}

/// `nkc run --check` in-process on the random kernel of `seed` ([`random_case`]), on path `mode`: `true` when it
/// simulated to the interpreter's bits of the kernel as written with no race, `false` when the
/// legality check refused its schedule (E04xx). Anything else panics with the kernel.
pub fn run_checked(seed: u64, mode: nkc::run::PipelineMode) -> bool {
    run_checked_peeled(seed, mode, false)
}

/// [`run_checked`], with the extended loops peeled (`--peel`) when `peel` is set.
pub fn run_checked_peeled(seed: u64, mode: nkc::run::PipelineMode, peel: bool) -> bool {
    use nkc::run::{self, RunOptions};
    let text = random_case(seed);
    let src = nkc::driver::Source {
        path: std::path::PathBuf::from(format!("random{seed}.nk")),
        text: text.clone(),
    };
    let opts = RunOptions {
        pipeline: mode,
        seed,
        check: true,
        peel,
        ..RunOptions::default()
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
        Err(e) => panic!(
            "seed {seed} --pipeline {}{}:\n{text}\n{e:?}",
            mode.name(),
            if peel { " --peel" } else { "" }
        ),
    }
}
