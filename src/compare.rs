//! `nkc compare`: one kernel on every pipelining path, side by side.
//!
//! The paths are `none`, `emergent`, `auto` (the compiler's own stage choice,
//! `num_stages="auto"`, on every loop outside a nest), and when the kernel carries pipelining
//! annotations `default` (what `nkc run` does: the user's stages say which iteration a statement
//! belongs to, the backend when its transfers are issued) and `annotated` (the user's stages as
//! written), and with `--peel` also `annotated_peeled`, the annotated path with its
//! extended loops peeled (physical prologue and epilogue; a `program size` row, a line comparing
//! it with the predicated path, and for a suite a table of the two per kernel). Each path is a
//! full `nkc run --check` ([`crate::run::run`] with the simulator and the interpreter as oracle):
//! a path whose outputs differ from the interpreter's, or whose program races, fails the whole
//! comparison. The report prints as a Markdown table (one column per path),
//! as JSON keyed by path name (each value is that path's `nkc run --json` object), and as an SVG of
//! the stacked timelines ([`crate::timeline_svg`]). Several files make a suite: one table row of
//! cycles ÷ lower bound per kernel and path. A file of a suite that fails (a diagnostic, a path
//! that disagrees with the interpreter) does not stop the others: its row says `failed`, and the
//! command exits non-zero at the end ([`SuiteEntry`]).
//!
//! Invariant: every [`PathRun`] holds a simulated, checked run (`report.sim` is `Some`).

use crate::driver::{self, Failure, InternalCause, Source, UserCause};
use crate::run::{self, Engine, PipelineMode, RunOptions, RunReport};
use backend::codegen::schedule_summary::Limit;
use penguin::listing::capped_list;
use penguin::pipeline::PipelineLog;
use rayon::prelude::*;
use runtime_sim::machine::{Engine as HwEngine, DMA_QUEUES};
use serde_json::json;

/// What `nkc compare` was asked.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    pub kernel: Option<String>,
    pub seed: u64,
    pub legality_check: bool,
    /// Keep the timelines (for `--svg`).
    pub timelines: bool,
    /// Also run the annotated path peeled (`--peel`), as the path `annotated_peeled`.
    pub peel: bool,
    /// The shapes of untyped parameters (`--shape`, `--dtype`).
    pub specialise: driver::Specialise,
    /// `NAME=PATH.npy` input arrays (`--input`), the same on every path.
    pub inputs: Vec<(String, std::path::PathBuf)>,
    /// The cycle limit of each path's simulation (`--max-cycles`).
    pub max_cycles: u64,
}

/// One path's checked, simulated run.
#[derive(Debug)]
pub struct PathRun {
    pub mode: PipelineMode,
    /// The annotated path with its extended loops peeled (`--peel`).
    pub peeled: bool,
    pub report: RunReport,
}

impl PathRun {
    /// The path's name: the mode's, or `annotated_peeled`.
    pub fn name(&self) -> &'static str {
        path_name(self.mode, self.peeled)
    }

    /// The simulator's figures (present by the module's invariant).
    pub fn sim(&self) -> &run::SimRun {
        self.report
            .sim
            .as_ref()
            .expect("compare runs every path on the simulator")
    }

    pub fn cycles(&self) -> u64 {
        self.sim().stats.cycles
    }
}

/// A kernel on each of its paths.
#[derive(Debug)]
pub struct Comparison {
    pub kernel: String,
    pub file: String,
    /// `none` first, then `emergent`, `auto`, `default` and `annotated` when the kernel is
    /// annotated, then `annotated_peeled` with `--peel`.
    pub paths: Vec<PathRun>,
}

/// A path's name: the mode's, or `annotated_peeled` for the peeled annotated path.
fn path_name(mode: PipelineMode, peeled: bool) -> &'static str {
    if peeled {
        "annotated_peeled"
    } else {
        mode.name()
    }
}

/// The paths a kernel is compared on: each mode, and whether it is peeled.
fn paths_of(source: &Source, opts: &CompareOptions) -> Result<Vec<(PipelineMode, bool)>, Failure> {
    let specs = opts
        .specialise
        .specs(source, opts.kernel.as_deref(), &opts.inputs)?;
    let func = driver::compile_with(source, opts.kernel.as_deref(), &specs)?;
    let mut modes = vec![
        (PipelineMode::None, false),
        (PipelineMode::Emergent, false),
        (PipelineMode::Auto, false),
    ];
    if crate::pipeline::has_annotations(&func) {
        // Without annotations `default` is `emergent`'s pipelining: no column of its own.
        modes.push((PipelineMode::Default, false));
        modes.push((PipelineMode::Annotated, false));
        if opts.peel {
            modes.push((PipelineMode::Annotated, true));
        }
    }
    Ok(modes)
}

impl Default for CompareOptions {
    /// Seed 0, the legality check on, no timelines, no peeling, the default cycle limit.
    fn default() -> Self {
        CompareOptions {
            kernel: None,
            seed: 0,
            legality_check: true,
            timelines: false,
            peel: false,
            specialise: driver::Specialise::default(),
            inputs: Vec::new(),
            max_cycles: runtime_sim::sim::DEFAULT_MAX_CYCLES,
        }
    }
}

/// Compiles and simulates the kernel on each path, checking every path against the interpreter.
pub fn compare(source: &Source, opts: &CompareOptions) -> Result<Comparison, Failure> {
    let mut all = compare_each(&[source], opts);
    all.pop()
        .unwrap_or(Err(Failure::internal(InternalCause::NoComparison)))
}

/// [`compare`] of each source, in order. The runs (one per source and path) are independent, so
/// they share the machine's cores (rayon's pool: `RAYON_NUM_THREADS` sets its size); a source
/// fails with the failure of its first path, in path order, as one run after another would.
pub fn compare_each(
    sources: &[&Source],
    opts: &CompareOptions,
) -> Vec<Result<Comparison, Failure>> {
    let paths: Vec<Result<Vec<(PipelineMode, bool)>, Failure>> =
        sources.iter().map(|s| paths_of(s, opts)).collect();
    let jobs: Vec<(usize, PipelineMode, bool)> = (paths.iter().enumerate())
        .flat_map(|(k, p)| (p.iter().flatten()).map(move |&(mode, peel)| (k, mode, peel)))
        .collect();
    let bar = crate::sim::StepsBar::new("path", jobs.len() as u64);
    let mut runs = jobs
        .par_iter()
        .map(|&(k, mode, peel)| {
            let r = run_path(sources[k], opts, mode, peel);
            bar.step();
            r
        })
        .collect::<Vec<_>>()
        .into_iter();
    (sources.iter().zip(paths))
        .map(|(source, modes)| {
            let modes = modes?;
            let reports: Vec<Result<PathRun, Failure>> = runs.by_ref().take(modes.len()).collect();
            let paths = reports.into_iter().collect::<Result<Vec<_>, _>>()?;
            let kernel = paths
                .first()
                .map(|p| p.report.kernel.clone())
                .unwrap_or_default();
            Ok(Comparison {
                kernel,
                file: source.display_name(),
                paths,
            })
        })
        .collect()
}

/// One path's `nkc run --check` on the simulator.
fn run_path(
    source: &Source,
    opts: &CompareOptions,
    mode: PipelineMode,
    peel: bool,
) -> Result<PathRun, Failure> {
    let ropts = RunOptions {
        kernel: opts.kernel.clone(),
        engine: Engine::Sim,
        pipeline: mode,
        inputs: opts.inputs.clone(),
        seed: opts.seed,
        output_dir: None,
        legality_check: opts.legality_check,
        check: true,
        trace: None,
        timeline: opts.timelines,
        max_cycles: opts.max_cycles,
        peel,
        specialise: opts.specialise.clone(),
        print_after: crate::pipeline::PrintAfter::Nothing,
    };
    let name = path_name(mode, peel);
    let report = run::run(source, &ropts, &mut PipelineLog::default()).map_err(|f| match f {
        Failure::Internal(cause) => Failure::internal(InternalCause::OnPath {
            path: name.to_string(),
            cause,
        }),
        Failure::User(cause) => Failure::user(UserCause::OnPath {
            path: name.to_string(),
            cause,
        }),
        d => d,
    })?;
    debug_assert!(report.checked && report.sim.is_some());
    Ok(PathRun {
        mode,
        peeled: peel,
        report,
    })
}

/// When the user's path's slowest loop is bound by `sp` or the DMA queues and the emergent path
/// unrolled the same loop (`backend::transform::unroll`, which spreads a body's transfers over the queues),
/// that loop and the unroll factor.
fn unrolled_for_queues(user: &PathRun, emergent: &PathRun) -> Option<(String, u32)> {
    let l = (user.sim().loops.iter()).max_by_key(|l| l.ii.max(l.predicted))?;
    if !matches!(&l.limited_by, Limit::Resource(r) if r == "sp" || r == "dma queues") {
        return None;
    }
    if user.report.unrolled.iter().any(|u| u.iv == l.name) {
        return None;
    }
    let u = (emergent.report.unrolled.iter()).find(|u| u.iv == l.name)?;
    Some((u.iv.clone(), u.factor))
}

/// The share of the 16 DMA queues' time spent moving bytes.
fn dma_utilisation(stats: &runtime_sim::sim::Stats) -> f64 {
    let busy: u64 = stats.queue_busy.iter().sum();
    stats.utilisation(busy) / DMA_QUEUES as f64
}

impl Comparison {
    fn none_cycles(&self) -> u64 {
        self.path(PipelineMode::None, false)
            .map_or(0, PathRun::cycles)
    }

    /// The run of path `mode`, peeled or not, when the comparison has it.
    pub fn path(&self, mode: PipelineMode, peeled: bool) -> Option<&PathRun> {
        self.paths
            .iter()
            .find(|p| p.mode == mode && p.peeled == peeled)
    }

    /// The path with the fewest cycles.
    pub fn best(&self) -> Option<&PathRun> {
        self.paths.iter().min_by_key(|p| p.cycles())
    }

    /// The `--json` form: path name to that path's `nkc run --json` object.
    pub fn to_json(&self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .paths
            .iter()
            .map(|p| (p.name().to_string(), p.report.to_json()))
            .collect();
        serde_json::Value::Object(map)
    }

    /// The side-by-side table, in Markdown.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "`{}` ({}): every path's outputs equal the kernel's as written (interpreted) bit for bit\n\n",
            self.kernel, self.file
        );
        s += "| |";
        for p in &self.paths {
            s += &format!(" {} |", p.name());
        }
        s += "\n| --- |";
        s += &" ---: |".repeat(self.paths.len());
        s.push('\n');
        let none = self.none_cycles();
        let row = |label: &str, f: &dyn Fn(&PathRun) -> String| {
            let mut r = format!("| {label} |");
            for p in &self.paths {
                r += &format!(" {} |", f(p));
            }
            r.push('\n');
            r
        };
        s += &row("cycles", &|p| p.cycles().to_string());
        s += &row("lower bound", &|p| p.sim().lower_bound().to_string());
        s += &row("bound set by", &|p| p.sim().bound_by().to_string());
        s += &row("cycles / bound", &|p| {
            format!("{:.3}", p.sim().cycles_over_bound())
        });
        s += &row("speed-up over none", &|p| {
            format!("{:.2}x", none as f64 / p.cycles().max(1) as f64)
        });
        for e in HwEngine::ALL {
            s += &row(&format!("{} utilisation", e.name()), &|p| {
                let st = &p.sim().stats;
                format!("{:.1}%", 100.0 * st.utilisation(st.engines[e.index()].busy))
            });
        }
        s += &row("dma queues utilisation", &|p| {
            format!("{:.1}%", 100.0 * dma_utilisation(&p.sim().stats))
        });
        s += &row("SBUF bytes / partition", &|p| {
            p.sim().sbuf_bytes.to_string()
        });
        s += &row("PSUM banks", &|p| p.sim().psum_banks.to_string());
        s += &row("instructions", &|p| {
            p.sim().stats.instructions().to_string()
        });
        if self.paths.iter().any(|p| p.peeled) {
            s += &row("program size", &|p| p.sim().program_size.to_string());
        }
        s += &row("compile time", &|p| {
            format!("{:.1} ms", 1e3 * p.report.compile_seconds)
        });
        if let Some(why) = self.why_slower() {
            s += &format!("\n{why}\n");
        }
        if let Some(peel) = self.peel_summary() {
            s += &format!("\n{peel}\n");
        }
        s
    }

    /// With `--peel`, one line: the peeled annotated path against the predicated one.
    pub fn peel_summary(&self) -> Option<String> {
        let pred = self.path(PipelineMode::Annotated, false)?;
        let peel = self.path(PipelineMode::Annotated, true)?;
        let (a, b) = (pred.sim(), peel.sim());
        Some(format!(
            "peeled: {} cycles against {} predicated ({:.3}x), {} instructions run against {} ({} of them guarded off), program size {} against {}.",
            b.stats.cycles,
            a.stats.cycles,
            b.stats.cycles as f64 / a.stats.cycles.max(1) as f64,
            b.stats.instructions(),
            a.stats.instructions(),
            a.stats
                .engines
                .iter()
                .map(|e| e.predicated_off)
                .sum::<u64>(),
            b.program_size,
            a.program_size
        ))
    }

    /// One line saying why the slower of the user's path and `emergent` is slower: each path's
    /// pipelined loop with the largest predicted II, and what sets it. The user's path is
    /// `default` (what `nkc run` does) when the comparison has it, else `annotated`; with both,
    /// a `default` slower than `annotated` is named too.
    pub fn why_slower(&self) -> Option<String> {
        let (a, e) = (
            self.path(PipelineMode::Annotated, false)?,
            self.path(PipelineMode::Emergent, false)?,
        );
        let user = self.path(PipelineMode::Default, false).unwrap_or(a);
        let describe = |p: &PathRun| {
            let l = p.sim().loops.iter().max_by_key(|l| l.ii.max(l.predicted))?;
            if let Some(cycle) = l.period_set_by.as_ref().filter(|c| !c.is_empty()) {
                // The engines' orders hold the loop above its MII: name that cycle, and say when
                // no order of the body does better (then the user's stages and buffers set it),
                // unless the cycle runs through a store that holds the next body's loads on `sp`:
                // issuing that store after them is the backend's freedom (issue 32, item 1), so
                // no order of one body is not the limit.
                // On `default` that freedom was the backend's to take (`retime`): a store still
                // holding the loads is one it could not issue later, or that was no faster so.
                let on_default = p.mode == PipelineMode::Default;
                let best = match (l.order_bound, cycle.store_holding_loads()) {
                    (Some(b), Some(store)) if b >= l.predicted && on_default => format!(
                        ", and no order of one body is faster; the cycle runs through `{store}` holding the next body's loads, {}",
                        not_retimed(p, &l.name, store)
                    ),
                    (Some(b), Some(store)) if b >= l.predicted => format!(
                        ", and no order of one body is faster; the cycle runs through `{store}` holding the next body's loads, which `default` may issue after them (`annotated` keeps the user's stages as written)"
                    ),
                    (Some(b), None) if b >= l.predicted => {
                        ", and no order of the body is faster, nor a store issued after the next body's loads: the user's stages and buffers set it"
                            .to_string()
                    }
                    _ => String::new(),
                };
                return Some(format!(
                    "{}: period {} in loop `{}` (MII {}) set by {}{best}",
                    p.mode.name(),
                    l.predicted,
                    l.name,
                    l.mii,
                    cycle
                ));
            }
            let what = match &l.limited_by {
                Limit::Recurrence(cycle) => format!("the recurrence {cycle}"),
                Limit::Resource(r) => r.clone(),
            };
            Some(format!(
                "{}: II {} in loop `{}` set by {}",
                p.mode.name(),
                l.ii,
                l.name,
                what
            ))
        };
        let (slow, fast) = if user.cycles() > e.cycles() {
            (user, e)
        } else {
            (e, user)
        };
        let ds = describe(slow)?;
        let df = describe(fast).map(|d| format!("; {d}")).unwrap_or_default();
        // The user's stage count against the trip count: an extended loop spends `stages − 1` of
        // its `trip + stages − 1` iterations filling and draining, every time it runs.
        let ramps: Vec<String> = a
            .sim()
            .annotated_loops
            .iter()
            .filter(|(_, stages, trip)| i64::from(*stages) > (*trip / 4).max(1))
            .map(|(iv, stages, trip)| {
                format!(
                    "annotated loop `{iv}` runs {trip} iterations in {stages} stages, so {} of its {} extended iterations fill or drain the pipeline each time it runs",
                    stages - 1,
                    trip + i64::from(*stages) - 1
                )
            })
            .collect();
        // Both paths at the same period in the same slowest loop: the steady state is not the
        // difference, the iterations around it are (the user's stages' fill and drain, when
        // they take a large share).
        let slowest = |p: &PathRun| {
            (p.sim().loops.iter())
                .max_by_key(|l| l.ii.max(l.predicted))
                .map(|l| (l.name.clone(), l.ii.max(l.predicted)))
        };
        let same_period = match (slowest(slow), slowest(fast)) {
            (Some(s), Some(f)) if s == f => Some(s),
            _ => None,
        };
        let ramps = match (ramps.is_empty(), same_period) {
            (true, None) => String::new(),
            (false, None) => format!(" The user's stages: {}.", capped_list(&ramps, "; ")),
            (true, Some((iv, _))) => format!(
                " Both paths run loop `{iv}` at the same period: the difference is outside its steady state."
            ),
            (false, Some((iv, _))) => format!(
                " Both paths run loop `{iv}` at the same period: the difference is the fill and drain of the user's stages: {}.",
                capped_list(&ramps, "; ")
            ),
        };
        let unrolled_against = |p: &PathRun| {
            unrolled_for_queues(p, e)
                .map(|(iv, factor)| {
                    format!(
                        " The emergent path unrolls loop `{iv}` ×{factor}, so that the copies' transfers share the DMA queues in fewer pieces; the {} path runs the user's loop as written, one iteration's transfers at a time.",
                        p.mode.name()
                    )
                })
                .unwrap_or_default()
        };
        let unrolled = unrolled_against(user);
        // `default` issues transfers where the user's stages as written hold them back: where
        // the two differ, the stages as written and what sets their period.
        let annotated = (user.mode == PipelineMode::Default && user.cycles() != a.cycles())
            .then(|| describe(a))
            .flatten()
            .map(|d| {
                let (x, than) = if a.cycles() > user.cycles() {
                    (a.cycles() as f64 / user.cycles().max(1) as f64, "slower")
                } else {
                    (user.cycles() as f64 / a.cycles().max(1) as f64, "faster")
                };
                let unrolled = if unrolled.is_empty() {
                    unrolled_against(a)
                } else {
                    String::new()
                };
                format!(
                    " The user's stages as written: annotated is {x:.2}x {than} than default; {d}.{unrolled}"
                )
            })
            .unwrap_or_default();
        Some(format!(
            "{} is {:.2}x slower than {}. {ds}{df}.{ramps}{unrolled}{annotated}",
            slow.mode.name(),
            slow.cycles() as f64 / fast.cycles().max(1) as f64,
            fast.mode.name()
        ))
    }
}

/// Why `retime` left a store holding the next body's loads on path `p`'s loop `iv` (the
/// clause after "holding the next body's loads, "): it did not move this one (its rules, such
/// as a ring with a slot to spare, or a predicted period that does not gain, kept it), and the
/// stores it did move there.
fn not_retimed(p: &PathRun, iv: &str, store: &str) -> String {
    use backend::transform::remark::Remark;
    let mut moved: Vec<String> = Vec::new();
    for r in &p.report.remarks {
        if let Remark::Retimed { iv: i, tile, .. } = r {
            let tile = format!("`{tile}`");
            if i == iv && !moved.contains(&tile) {
                moved.push(tile);
            }
        }
    }
    // The store as the cycle names it, `sp.store(TILE)`.
    let tile = (store.strip_prefix("sp.store(")).and_then(|s| s.strip_suffix(')'));
    let again = tile.is_some_and(|t| moved.contains(&format!("`{t}`")));
    let moved = if moved.is_empty() {
        String::new()
    } else {
        format!(
            "it moved the store{} of {}; ",
            if moved.len() == 1 { "" } else { "s" },
            capped_list(&moved, ", ")
        )
    };
    let what = if again {
        "which `retime` issued one iteration later but not after them"
    } else {
        "which `retime` did not issue after them"
    };
    format!(
        "{what} ({moved}a store moves only within its rules and when the predicted period gains, `--log backend` says which)"
    )
}

/// One file of a suite: its comparison, or why it failed (its diagnostics went to stderr).
#[derive(Debug)]
pub enum SuiteEntry {
    Compared(Comparison),
    Failed {
        /// The file as given.
        file: String,
        /// The first line of what went wrong (the code and message of the first diagnostic).
        error: String,
        /// A bug in nkc rather than an error in the file.
        internal: bool,
    },
}

impl SuiteEntry {
    /// A failed file's entry, from the failure that stopped it.
    pub fn failed(file: String, failure: &Failure) -> SuiteEntry {
        let error = match failure {
            Failure::Diagnostics(errors) => errors
                .iter()
                .min_by_key(|e| (e.span.start, e.span.end))
                .map_or_else(String::new, |e| format!("error[{}]: {}", e.code, e.message)),
            Failure::User(m) => format!("error: {m}"),
            Failure::Unplaced(d) if d.code.is_empty() => format!("error: {}", d.message),
            Failure::Unplaced(d) => format!("error[{}]: {}", d.code, d.message),
            Failure::Internal(m) => format!("error: internal compiler error: {m}"),
        };
        let error = driver::printable(error.lines().next().unwrap_or_default());
        SuiteEntry::Failed {
            file,
            error,
            internal: matches!(failure, Failure::Internal(_)),
        }
    }

    pub fn comparison(&self) -> Option<&Comparison> {
        match self {
            SuiteEntry::Compared(c) => Some(c),
            SuiteEntry::Failed { .. } => None,
        }
    }
}

/// The suite table: cycles ÷ lower bound of every kernel on every path, and its best path; a file
/// that failed has a row of its own, `failed` in every column, named by its file.
pub fn suite_table(entries: &[SuiteEntry]) -> String {
    let mut s = String::from(
        "| kernel | none | emergent | auto | default | annotated | best path | best cycles / bound |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n",
    );
    for entry in entries {
        let c = match entry {
            SuiteEntry::Compared(c) => c,
            SuiteEntry::Failed { file, .. } => {
                s += &format!(
                    "| {file} | failed | failed | failed | failed | failed | failed | — |\n"
                );
                continue;
            }
        };
        let cell = |mode: PipelineMode| {
            c.path(mode, false).map_or("—".to_string(), |p| {
                format!("{:.3}", p.sim().cycles_over_bound())
            })
        };
        let (best, ratio) = c
            .best()
            .map_or(("—", 0.0), |p| (p.name(), p.sim().cycles_over_bound()));
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {best} | {ratio:.3} |\n",
            c.kernel,
            cell(PipelineMode::None),
            cell(PipelineMode::Emergent),
            cell(PipelineMode::Auto),
            cell(PipelineMode::Default),
            cell(PipelineMode::Annotated),
        );
    }
    s + &peel_table(entries)
}

/// With `--peel`, the annotated path predicated against peeled, one row per annotated kernel:
/// cycles, instructions executed (predicated-off ones included) and program size; empty
/// without a peeled path.
fn peel_table(entries: &[SuiteEntry]) -> String {
    let mut rows = String::new();
    for c in entries.iter().filter_map(SuiteEntry::comparison) {
        let (Some(pred), Some(peel)) = (
            c.path(PipelineMode::Annotated, false),
            c.path(PipelineMode::Annotated, true),
        ) else {
            continue;
        };
        let figures = |p: &PathRun| {
            let sim = p.sim();
            [sim.stats.cycles, sim.stats.instructions(), sim.program_size]
        };
        let (a, b) = (figures(pred), figures(peel));
        rows += &format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c.kernel, a[0], b[0], a[1], b[1], a[2], b[2]
        );
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "\nThe annotated path, predicated against peeled (`--peel`):\n\n\
         | kernel | cycles | peeled cycles | instructions | peeled instructions | program size | peeled program size |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n{rows}"
    )
}

/// The `--json` form of a suite: file to its comparison's JSON, or, for a file that failed, to
/// `{"failed": true, "error": FIRST LINE, "internal": BOOL}`.
pub fn suite_json(entries: &[SuiteEntry]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = entries
        .iter()
        .map(|entry| match entry {
            SuiteEntry::Compared(c) => (c.file.clone(), c.to_json()),
            SuiteEntry::Failed {
                file,
                error,
                internal,
            } => (
                file.clone(),
                json!({ "failed": true, "error": error, "internal": internal }),
            ),
        })
        .collect();
    json!(map)
}
