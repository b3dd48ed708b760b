//! `nkc compare`: one kernel on every pipelining path, side by side.
//!
//! The paths are `none`, `emergent`, and `annotated` when the kernel carries pipelining
//! annotations. Each path is a full `nkc run --check` ([`crate::run::run`] with the simulator and
//! the interpreter as oracle): a path whose outputs differ from the interpreter's, or whose program
//! races, fails the whole comparison. The report prints as a Markdown table (one column per path),
//! as JSON keyed by path name (each value is that path's `nkc run --json` object), and as an SVG of
//! the stacked timelines ([`crate::timeline_svg`]). Several files make a suite: one table row of
//! cycles ÷ lower bound per kernel and path. A file of a suite that fails (a diagnostic, a path
//! that disagrees with the interpreter) does not stop the others: its row says `failed`, and the
//! command exits non-zero at the end ([`SuiteEntry`]).
//!
//! Invariant: every [`PathRun`] holds a simulated, checked run (`report.sim` is `Some`).

use crate::driver::{self, Failure, Source};
use crate::run::{self, Engine, PipelineMode, RunOptions, RunReport};
use penguin::listing::capped_list;
use penguin::pipeline::PipelineLog;
use runtime_sim::machine::{Engine as HwEngine, DMA_QUEUES};
use serde_json::json;

/// What `nkc compare` was asked.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    pub kernel: Option<String>,
    pub seed: u64,
    pub legality_check: bool,
    /// Keep the timelines (for `--svg`).
    pub timelines: bool,
    /// The shapes of untyped parameters (`--shape`, `--dtype`).
    pub specialise: driver::Specialise,
}

/// One path's checked, simulated run.
#[derive(Debug)]
pub struct PathRun {
    pub mode: PipelineMode,
    pub report: RunReport,
}

impl PathRun {
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
    /// `none` first, then `emergent`, then `annotated` when the kernel is annotated.
    pub paths: Vec<PathRun>,
}

/// The paths a kernel is compared on.
fn paths_of(source: &Source, opts: &CompareOptions) -> Result<Vec<PipelineMode>, Failure> {
    let specs = opts.specialise.specs(&[])?;
    let func = driver::compile_with(source, opts.kernel.as_deref(), &specs)?;
    let mut modes = vec![PipelineMode::None, PipelineMode::Emergent];
    if run::has_annotations(&func) {
        modes.push(PipelineMode::Annotated);
    }
    Ok(modes)
}

/// Compiles and simulates the kernel on each path, checking every path against the interpreter.
pub fn compare(source: &Source, opts: &CompareOptions) -> Result<Comparison, Failure> {
    let mut paths = Vec::new();
    for mode in paths_of(source, opts)? {
        let ropts = RunOptions {
            kernel: opts.kernel.clone(),
            engine: Engine::Sim,
            pipeline: mode,
            inputs: Vec::new(),
            seed: opts.seed,
            output_dir: None,
            legality_check: opts.legality_check,
            check: true,
            trace: None,
            timeline: opts.timelines,
            max_cycles: runtime_sim::sim::DEFAULT_MAX_CYCLES,
            specialise: opts.specialise.clone(),
        };
        let report =
            run::run(source, &ropts, &mut PipelineLog::default()).map_err(|f| match f {
                Failure::Internal(m) => Failure::Internal(format!("path `{}`: {m}", mode.name())),
                Failure::User(m) => Failure::User(format!("path `{}`: {m}", mode.name())),
                d => d,
            })?;
        debug_assert!(report.checked && report.sim.is_some());
        paths.push(PathRun { mode, report });
    }
    let kernel = paths
        .first()
        .map(|p| p.report.kernel.clone())
        .unwrap_or_default();
    Ok(Comparison {
        kernel,
        file: source.display_name(),
        paths,
    })
}

/// The share of the 16 DMA queues' time spent moving bytes.
fn dma_utilisation(stats: &runtime_sim::sim::Stats) -> f64 {
    let busy: u64 = stats.queue_busy.iter().sum();
    stats.utilisation(busy) / DMA_QUEUES as f64
}

impl Comparison {
    fn none_cycles(&self) -> u64 {
        self.paths
            .iter()
            .find(|p| p.mode == PipelineMode::None)
            .map_or(0, PathRun::cycles)
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
            .map(|p| (p.mode.name().to_string(), p.report.to_json()))
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
            s += &format!(" {} |", p.mode.name());
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
        s += &row("compile time", &|p| {
            format!("{:.1} ms", 1e3 * p.report.compile_seconds)
        });
        if let Some(why) = self.why_slower() {
            s += &format!("\n{why}\n");
        }
        s
    }

    /// One line saying why the slower of `annotated` and `emergent` is slower: each path's
    /// pipelined loop with the largest predicted II, and what sets it.
    pub fn why_slower(&self) -> Option<String> {
        let get = |m: PipelineMode| self.paths.iter().find(|p| p.mode == m);
        let (a, e) = (get(PipelineMode::Annotated)?, get(PipelineMode::Emergent)?);
        let describe = |p: &PathRun| {
            let l = p.sim().loops.iter().max_by_key(|l| l.ii)?;
            let what = if let Some(cycle) = l.limited_by.strip_prefix("recurrence ") {
                format!("the recurrence {cycle}")
            } else {
                l.limited_by.trim_start_matches("resource ").to_string()
            };
            Some(format!(
                "{}: II {} in loop `{}` set by {}",
                p.mode.name(),
                l.ii,
                l.name,
                what
            ))
        };
        let (slow, fast) = if a.cycles() > e.cycles() {
            (a, e)
        } else {
            (e, a)
        };
        let (ds, df) = (describe(slow)?, describe(fast).unwrap_or_default());
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
        let ramps = if ramps.is_empty() {
            String::new()
        } else {
            format!(" The user's stages: {}.", capped_list(&ramps, "; "))
        };
        Some(format!(
            "{} is {:.2}x slower than {}. {ds}; {df}.{ramps}",
            slow.mode.name(),
            slow.cycles() as f64 / fast.cycles().max(1) as f64,
            fast.mode.name()
        ))
    }
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
        "| kernel | none | emergent | annotated | best path | best cycles / bound |\n\
         | --- | ---: | ---: | ---: | --- | ---: |\n",
    );
    for entry in entries {
        let c = match entry {
            SuiteEntry::Compared(c) => c,
            SuiteEntry::Failed { file, .. } => {
                s += &format!("| {file} | failed | failed | failed | failed | — |\n");
                continue;
            }
        };
        let cell = |mode: PipelineMode| {
            c.paths
                .iter()
                .find(|p| p.mode == mode)
                .map_or("—".to_string(), |p| {
                    format!("{:.3}", p.sim().cycles_over_bound())
                })
        };
        let (best, ratio) = c.best().map_or(("—", 0.0), |p| {
            (p.mode.name(), p.sim().cycles_over_bound())
        });
        s += &format!(
            "| {} | {} | {} | {} | {best} | {ratio:.3} |\n",
            c.kernel,
            cell(PipelineMode::None),
            cell(PipelineMode::Emergent),
            cell(PipelineMode::Annotated),
        );
    }
    s
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
