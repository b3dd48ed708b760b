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
    run_text_checked(&random_case(seed), seed, mode, peel)
}

/// [`run_checked_peeled`] on the kernel `text` (named after `seed`, whose inputs it runs on).
pub fn run_text_checked(text: &str, seed: u64, mode: nkc::run::PipelineMode, peel: bool) -> bool {
    use nkc::run::{self, RunOptions};
    let src = nkc::driver::Source {
        path: std::path::PathBuf::from(format!("random{seed}.nk")),
        text: text.to_string(),
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

/// A tile of a widened random kernel: its name, its shape, and whether it lives in PSUM (a matmul
/// result, copied to SBUF before it is stored).
#[derive(Clone)]
struct WideTile {
    name: String,
    rows: usize,
    cols: usize,
    psum: bool,
}

/// A random kernel over every operation family (issue 30's widened generator), as source text:
/// loads of `[P, F]` tiles (`P` in {4, 16, 32}, `F` in {8, 16, 32}) from float32 or bfloat16
/// inputs; element-wise binary and unary operations, scalar operands, row reductions (`nl.max`,
/// `nl.sum` to `[P, 1]`), their broadcasts back over the rows, `nisa.activation` with a bias
/// column, matmuls into PSUM (`transpose_x=True`), Tensor-engine transposes, a PSUM accumulator
/// (`acc += nl.matmul(...)`) or an SBUF one carried across iterations; a loop of 1 to 4
/// iterations, sometimes inside an outer loop of 1 to 3 over column blocks; every loop with a
/// random schedule: none, `num_stages=k`, `num_stages="auto"`, or Mode B `stage_id`s. The last
/// tile of each shape is stored (a float32 or bfloat16 output), so that every family reaches an
/// output. Deterministic in the seed; every kernel passes `nkc check`.
pub fn random_wide_kernel(seed: u64) -> String {
    let mut r = Rng(seed ^ 0x7769_6465);
    let p = [4, 16, 32][r.below(3)];
    let f = [8, 16, 32][r.below(3)];
    let trip = 1 + r.below(4);
    let outer = if r.chance(30) { 1 + r.below(3) } else { 0 };
    let nested = outer > 0;
    let ob = outer.max(1);
    let in_dt = if r.chance(30) { "bfloat16" } else { "float32" };
    let out_dt = if r.chance(20) { "bfloat16" } else { "float32" };
    let kind = if r.chance(50) {
        "affine_range"
    } else {
        "sequential_range"
    };
    // Column slice of the current block.
    let cols = if nested {
        format!("o * {f}:(o + 1) * {f}")
    } else {
        ":".to_string()
    };

    let mut body: Vec<String> = Vec::new();
    let mut pool: Vec<WideTile> = vec![WideTile {
        name: "t0".into(),
        rows: p,
        cols: f,
        psum: false,
    }];
    body.push(format!("t0 = nl.load(a[i * {p}:(i + 1) * {p}, {cols}]"));
    if r.chance(60) {
        body.push(format!("t1 = nl.load(b[i * {p}:(i + 1) * {p}, {cols}]"));
        pool.push(WideTile {
            name: "t1".into(),
            rows: p,
            cols: f,
            psum: false,
        });
    }
    // A carried accumulator: a PSUM matmul group or an SBUF sum.
    let acc = match r.below(3) {
        0 => Some(true),
        1 => Some(false),
        _ => None,
    };
    let computes = 2 + r.below(5);
    let acc_at = r.below(computes + 1);
    for step in 0..=computes {
        if step == acc_at {
            match acc {
                // acc[F, F] += t^T t', both [P, F].
                Some(true) => {
                    let ks: Vec<&WideTile> = pool
                        .iter()
                        .filter(|t| t.rows == p && t.cols == f && !t.psum)
                        .collect();
                    let x = ks[r.below(ks.len())].name.clone();
                    let y = ks[r.below(ks.len())].name.clone();
                    body.push(format!("acc += nl.matmul({x}, {y}, transpose_x=True"));
                }
                Some(false) => {
                    let ks: Vec<&WideTile> = pool
                        .iter()
                        .filter(|t| t.rows == p && t.cols == f && !t.psum)
                        .collect();
                    let x = ks[r.below(ks.len())].name.clone();
                    body.push(format!("acc += nl.multiply({x}, 0.5"));
                }
                None => {}
            }
        }
        if step == computes {
            break;
        }
        let name = format!("u{step}");
        let x = pool[r.below(pool.len())].clone();
        let same: Vec<WideTile> = pool
            .iter()
            .filter(|t| t.rows == x.rows && t.cols == x.cols && t.name != x.name)
            .cloned()
            .collect();
        let column: Vec<WideTile> = pool
            .iter()
            .filter(|t| t.rows == x.rows && t.cols == 1)
            .cloned()
            .collect();
        let (head, rows, cols, psum) = match r.below(10) {
            0 | 1 if !same.is_empty() => {
                let y = &same[r.below(same.len())].name;
                let op = ["add", "multiply", "subtract", "maximum"][r.below(4)];
                (
                    format!("{name} = nl.{op}({}, {y}", x.name),
                    x.rows,
                    x.cols,
                    false,
                )
            }
            2 => {
                let op = ["exp", "tanh"][r.below(2)];
                (
                    format!("{name} = nl.{op}({}", x.name),
                    x.rows,
                    x.cols,
                    false,
                )
            }
            3 => (
                format!("{name} = nl.multiply({}, 0.75", x.name),
                x.rows,
                x.cols,
                false,
            ),
            4 if x.cols > 1 => {
                let op = ["max", "sum"][r.below(2)];
                (
                    format!("{name} = nl.{op}({}, axis=1", x.name),
                    x.rows,
                    1,
                    false,
                )
            }
            5 if x.cols > 1 && !column.is_empty() => {
                let m = &column[r.below(column.len())].name;
                let op = ["multiply", "subtract", "add"][r.below(3)];
                (
                    format!("{name} = nl.{op}({}, {m}", x.name),
                    x.rows,
                    x.cols,
                    false,
                )
            }
            6 if x.cols > 1 && !column.is_empty() => {
                let m = &column[r.below(column.len())].name;
                let op = ["exp", "tanh"][r.below(2)];
                (
                    format!(
                        "{name} = nisa.activation(op=nl.{op}, data={}, bias={m}",
                        x.name
                    ),
                    x.rows,
                    x.cols,
                    false,
                )
            }
            7 | 8 if !x.psum => {
                // x[K, M]^T y[K, N] into PSUM.
                let ys: Vec<WideTile> = pool
                    .iter()
                    .filter(|t| t.rows == x.rows && t.cols > 1 && !t.psum)
                    .cloned()
                    .collect();
                if ys.is_empty() {
                    continue;
                }
                let y = &ys[r.below(ys.len())];
                (
                    format!(
                        "{name} = nl.matmul({}, {}, transpose_x=True",
                        x.name, y.name
                    ),
                    x.cols,
                    y.cols,
                    true,
                )
            }
            9 if !x.psum => (
                format!("{name} = nl.copy(nisa.nc_transpose({})", x.name),
                x.cols,
                x.rows,
                false,
            ),
            _ => (
                format!("{name} = nl.multiply({}, -1.5", x.name),
                x.rows,
                x.cols,
                false,
            ),
        };
        body.push(head);
        pool.push(WideTile {
            name,
            rows,
            cols,
            psum,
        });
    }
    // The last tile of each shape, stored: [P, F] to `c`, every other shape to an output of its
    // own, one block of rows per iteration.
    let mut shapes: Vec<(usize, usize)> = Vec::new();
    for t in pool.iter().rev() {
        if !shapes.contains(&(t.rows, t.cols)) {
            shapes.push((t.rows, t.cols));
        }
    }
    shapes.sort();
    let mut outs: Vec<(String, usize, usize)> = Vec::new();
    for (j, &(rows, cols_n)) in shapes.iter().enumerate() {
        let t = pool
            .iter()
            .rev()
            .find(|t| (t.rows, t.cols) == (rows, cols_n))
            .expect("a tile of each shape")
            .clone();
        let mut value = t.name.clone();
        if t.psum {
            body.push(format!("s{j} = nl.copy({}", t.name));
            value = format!("s{j}");
        }
        let out = format!("out{j}");
        let col_slice = if nested {
            format!("o * {cols_n}:(o + 1) * {cols_n}")
        } else {
            ":".to_string()
        };
        let row_slice = if trip > 1 {
            format!("i * {rows}:(i + 1) * {rows}")
        } else {
            ":".to_string()
        };
        body.push(format!(
            "nl.store({out}[{row_slice}, {col_slice}], value={value}"
        ));
        outs.push((out, rows * trip, cols_n * ob));
    }

    // The inner loop's schedule.
    let n = body.len();
    let mut kws = vec![String::new(); n];
    let mut loop_kws = String::new();
    match r.below(4) {
        0 => {}
        1 => loop_kws = format!(", num_stages={}", 2 + r.below(2)),
        2 => loop_kws = ", num_stages=\"auto\"".to_string(),
        _ => {
            let mut s = 0;
            for (j, kw) in kws.iter_mut().enumerate() {
                if j > 0 && s < 2 && r.chance(35) {
                    s += 1;
                }
                *kw = format!(", stage_id={s}");
            }
            if s == 0 {
                kws.iter_mut().for_each(String::clear);
            }
        }
    }

    let rows_in = p * trip;
    let cols_in = f * ob;
    let mut src = format!(
        "def k(a: nl.hbm[nl.{in_dt}, {rows_in}, {cols_in}], b: nl.hbm[nl.float32, {rows_in}, {cols_in}]):\n"
    );
    for (j, (out, rows, cols_n)) in outs.iter().enumerate() {
        let dt = if j == 0 { out_dt } else { "float32" };
        src += &format!(
            "    {out} = nl.ndarray(({rows}, {cols_n}), dtype=nl.{dt}, buffer=nl.shared_hbm)\n"
        );
    }
    let (ind, acc_ind) = if nested {
        ("            ", "        ")
    } else {
        ("        ", "    ")
    };
    let mut acc_out = String::new();
    let mut acc_decl = String::new();
    match acc {
        Some(true) => {
            acc_decl =
                format!("{acc_ind}acc = nl.zeros(({f}, {f}), dtype=nl.float32, buffer=nl.psum)\n");
            acc_out = format!("{acc_ind}ar = nl.copy(acc)\n");
        }
        Some(false) => {
            acc_decl =
                format!("{acc_ind}acc = nl.zeros(({p}, {f}), dtype=nl.float32, buffer=nl.sbuf)\n");
        }
        None => {}
    }
    let acc_shape = match acc {
        Some(true) => Some((f, f, "ar")),
        Some(false) => Some((p, f, "acc")),
        None => None,
    };
    if let Some((ar, ac, _)) = acc_shape {
        src += &format!(
            "    accout = nl.ndarray(({ar}, {}), dtype=nl.float32, buffer=nl.shared_hbm)\n",
            ac * ob
        );
    }
    if nested && acc.is_none() {
        src += &format!(
            "    ex = nl.ndarray(({p}, {cols_in}), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        );
    }
    let mut outer_close = String::new();
    if nested {
        let mut okw = String::new();
        let mut inner_stage = String::new();
        let mut after_stage = String::new();
        match r.below(4) {
            0 => {}
            1 => okw = format!(", num_stages={}", 2 + r.below(2)),
            2 => okw = ", num_stages=\"auto\"".to_string(),
            // Mode B on the outer loop only without an accumulator (its `nl.zeros` would need
            // a stage too).
            _ if acc.is_some() => {}
            _ => {
                inner_stage = ", stage_id=0".to_string();
                after_stage = ", stage_id=1".to_string();
            }
        }
        src += &format!("    for o in nl.affine_range({outer}{okw}):\n");
        src += &acc_decl;
        src += &format!("        for i in nl.{kind}({trip}{inner_stage}{loop_kws}):\n");
        if let Some((_, ac, v)) = acc_shape {
            outer_close += &acc_out;
            outer_close += &format!(
                "        nl.store(accout[:, o * {ac}:(o + 1) * {ac}], value={v}{after_stage})\n"
            );
        } else {
            // After the inner loop: a load and a store of its own (an outer body of two stages
            // under Mode B).
            outer_close += &format!(
                "        w = nl.load(b[0:{p}, o * {f}:(o + 1) * {f}]{after_stage})\n        nl.store(ex[:, o * {f}:(o + 1) * {f}], value=nl.exp(w){after_stage})\n"
            );
        }
    } else {
        src += &acc_decl;
        src += &format!("    for i in nl.{kind}({trip}{loop_kws}):\n");
        if acc.is_some() {
            outer_close += &acc_out;
            let at = if acc == Some(true) { "ar" } else { "acc" };
            outer_close += &format!("    nl.store(accout, value={at})\n");
        }
    }
    for (line, kw) in body.iter().zip(&kws) {
        src += &format!("{ind}{line}{kw})\n");
    }
    src += &outer_close;
    let mut rets: Vec<String> = outs.iter().map(|o| o.0.clone()).collect();
    if acc.is_some() {
        rets.push("accout".into());
    } else if nested {
        rets.push("ex".into());
    }
    src += &format!("    return {}\n", rets.join(", "));
    src
}
