//! `nkc sim`: run a pseudo-ISA program (`.s`) on the bundled simulator.
//!
//! Conventions of `nkc run`: inputs from `--input NAME=PATH.npy` or, for every input tensor not
//! given, from the seeded generator (`--seed`); outputs written as `NAME.npy` with `--output DIR`;
//! `--json` prints one object on stdout. A malformed program, a bad input, an access out of range
//! or a deadlock is a user error (exit 1). Races are reported after the run, and also fail the
//! command (exit 1): the outputs and the trace are still written, for inspection. A program whose
//! tensors exceed the simulator's elements is E0901 before anything is allocated, and a run past
//! `--max-cycles` is E0902 (whose help names the flag); a long run draws a [`ProgressBar`] on a
//! terminal (`nkc run` too), and a command of many runs (`compare`, `suggest`) one [`StepsBar`]
//! over them instead.

use crate::driver::{Failure, Source, UserCause};
use crate::error::RunError;
use runtime_sim::isa::{Engine, Program, Role};
use runtime_sim::machine::DMA_QUEUES;
use runtime_sim::sim::{self, Array, Options, SimError, SimResult};
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Clone, Debug)]
pub struct SimOptions {
    /// `NAME=PATH` pairs.
    pub inputs: Vec<(String, PathBuf)>,
    pub seed: u64,
    pub output_dir: Option<PathBuf>,
    /// Where to write the Chrome trace-event JSON.
    pub trace: Option<PathBuf>,
    /// Timing only.
    pub no_numerics: bool,
    /// Stop with E0902 past this many cycles (or instructions): `--max-cycles`.
    pub max_cycles: u64,
}

impl Default for SimOptions {
    fn default() -> SimOptions {
        SimOptions {
            inputs: Vec::new(),
            seed: 0,
            output_dir: None,
            trace: None,
            no_numerics: false,
            max_cycles: sim::DEFAULT_MAX_CYCLES,
        }
    }
}

/// What a simulation produced.
pub struct SimReport {
    pub program: String,
    pub result: SimResult,
    pub files: Vec<(String, PathBuf)>,
    pub trace: Option<PathBuf>,
    pub numerics: bool,
    /// The dtype the program declares for each output, by name.
    pub dtypes: Vec<(String, vocab::DType)>,
}

impl SimReport {
    /// The dtype the program declares for output `name` (float32 when it names none).
    pub fn dtype_of(&self, name: &str) -> vocab::DType {
        self.dtypes
            .iter()
            .find(|(n, _)| n == name)
            .map_or(vocab::DType::F32, |(_, d)| *d)
    }
}

/// Parses, runs and writes the files asked for.
pub fn sim(source: &Source, opts: &SimOptions) -> Result<SimReport, Failure> {
    let prog = runtime_sim::text::parse(&source.text).map_err(|e| {
        Failure::user(UserCause::ProgramSyntax {
            file: source.display_name(),
            line: e.line,
            col: e.col,
            message: e.message.clone(),
        })
    })?;
    refuse_inputs_as_outputs(source, &prog, opts)?;
    let inputs = gather_inputs(source, &prog, opts)?;
    let sim_opts = Options {
        numerics: !opts.no_numerics,
        trace: opts.trace.is_some(),
        max_cycles: opts.max_cycles,
        ..Options::default()
    };
    let mut bar = ProgressBar::new(sim::instruction_instances(&prog).min(opts.max_cycles));
    let result = sim::simulate_with_progress(&prog, &inputs, &sim_opts, &mut |p| bar.update(p))
        .map_err(|e| sim_failure(source, &e))?;
    drop(bar);
    let mut files = Vec::new();
    if let Some(dir) = &opts.output_dir {
        crate::run::files::create_output_dir(dir)?;
        for (name, a) in &result.outputs {
            let bf16 = prog
                .tensors
                .iter()
                .any(|t| &t.name == name && t.dtype == vocab::DType::Bf16);
            let dtype = if bf16 {
                crate::run::files::FileDtype::Bf16
            } else {
                crate::run::files::FileDtype::F32
            };
            let path = crate::run::files::write_output(dir, name, a, dtype)?;
            files.push((name.clone(), path));
        }
    }
    if let Some(path) = &opts.trace {
        crate::write_file::write_atomically(
            path,
            sim::trace::to_chrome_json(&result.trace).as_bytes(),
        )
        .map_err(|e| Failure::user(UserCause::Write(e)))?;
    }
    Ok(SimReport {
        program: source.display_name(),
        result,
        files,
        trace: opts.trace.clone(),
        numerics: !opts.no_numerics,
        dtypes: prog
            .tensors
            .iter()
            .filter(|t| t.role == Role::Output)
            .map(|t| (t.name.clone(), t.dtype))
            .collect(),
    })
}

/// An error when a file the run would write (`--trace`, `--output DIR/NAME.npy`) is the program
/// or one of its `--input` files: checked before anything runs.
fn refuse_inputs_as_outputs(
    source: &Source,
    prog: &Program,
    opts: &SimOptions,
) -> Result<(), Failure> {
    crate::run::files::refuse_inputs_as_outputs(
        source,
        &opts.inputs,
        opts.trace.as_deref(),
        opts.output_dir.as_deref(),
        prog.tensors
            .iter()
            .filter(|t| t.role == Role::Output)
            .map(|t| t.name.as_str()),
    )
}

/// A progress bar for a long simulation, on standard error: drawn only when standard error is a
/// terminal, and only once the run has taken more than [`ProgressBar::after`]; cleared when
/// dropped. It counts instructions executed or skipped, out of every instance of the program's
/// instructions (at most `--max-cycles`, where the run stops), and shows the simulated cycle.
pub struct ProgressBar {
    total: u64,
    started: std::time::Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl ProgressBar {
    /// How long a simulation runs before its bar appears: a second, or the milliseconds of the
    /// environment variable `NKC_PROGRESS_AFTER_MS` (undocumented, for the tests that check
    /// the bar on a pseudo-terminal without a long run).
    pub fn after() -> std::time::Duration {
        static AFTER: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
        *AFTER.get_or_init(|| {
            std::env::var("NKC_PROGRESS_AFTER_MS")
                .ok()
                .and_then(|ms| ms.parse().ok())
                .map_or(
                    std::time::Duration::from_secs(1),
                    std::time::Duration::from_millis,
                )
        })
    }

    /// A bar for a run of `total` instruction instances (none drawn yet).
    pub fn new(total: u64) -> ProgressBar {
        ProgressBar {
            total,
            started: std::time::Instant::now(),
            bar: None,
        }
    }

    /// Shows how far the run is (drawing the bar first, once it is due). Nothing is drawn while
    /// a [`StepsBar`] counts the runs this one is part of.
    pub fn update(&mut self, p: sim::Progress) {
        if self.bar.is_none() {
            if self.started.elapsed() < Self::after()
                || !std::io::stderr().is_terminal()
                || STEPS_SHOWN.load(std::sync::atomic::Ordering::Relaxed) > 0
            {
                return;
            }
            let bar = indicatif::ProgressBar::new(self.total);
            // The template is a constant: it parses.
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "simulating [{wide_bar}] {percent:>3}% of {human_len} instructions, {msg}, eta {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(p.instructions.min(self.total));
            bar.set_message(format!("cycle {}", p.cycle));
        }
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// How many [`StepsBar`]s are alive: while one is, the bars of single simulations stay hidden
/// (several run at once under `compare`, and one bar of the whole is what the user reads).
static STEPS_SHOWN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A progress bar over the steps of a long command made of many runs (`nkc compare`: one per
/// file and path; `nkc suggest`: one per candidate), on standard error: drawn only when it is a
/// terminal and once the command has taken more than [`ProgressBar::after`]; cleared when
/// dropped. Thread-safe: the steps may finish on several threads.
pub struct StepsBar {
    what: &'static str,
    total: u64,
    started: std::time::Instant,
    done: std::sync::atomic::AtomicU64,
    bar: std::sync::OnceLock<indicatif::ProgressBar>,
}

impl StepsBar {
    /// A bar of `total` steps, each a `what` (`"path"`, `"candidate"`).
    pub fn new(what: &'static str, total: u64) -> StepsBar {
        STEPS_SHOWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        StepsBar {
            what,
            total,
            started: std::time::Instant::now(),
            done: std::sync::atomic::AtomicU64::new(0),
            bar: std::sync::OnceLock::new(),
        }
    }

    /// One more step finished.
    pub fn step(&self) {
        let done = self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        self.show(done);
    }

    /// The total grew (a search that finds more candidates to measure).
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
        if let Some(bar) = self.bar.get() {
            bar.set_length(total);
        }
    }

    fn show(&self, done: u64) {
        if self.bar.get().is_none()
            && (self.started.elapsed() < ProgressBar::after() || !std::io::stderr().is_terminal())
        {
            return;
        }
        let bar = self.bar.get_or_init(|| {
            let bar = indicatif::ProgressBar::new(self.total);
            // The template is a constant: it parses.
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{prefix} [{wide_bar}] {pos}/{len} {msg}, elapsed {elapsed}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(self.what);
            bar.set_message(format!("{}s", self.what));
            bar
        });
        bar.set_position(done.min(self.total));
    }
}

impl Drop for StepsBar {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
        STEPS_SHOWN.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A simulator error on the program of `source`: a user error (exit code 1), with its code when
/// it has one.
pub fn sim_failure(source: &Source, e: &SimError) -> Failure {
    let code = match e {
        SimError::TooLarge { .. } => frontend::codes::TOO_LARGE_TO_RUN,
        SimError::CycleLimit { .. } => frontend::codes::CYCLE_LIMIT,
        _ => {
            return Failure::user(UserCause::ProgramRejected {
                file: source.display_name(),
                error: e.clone(),
            })
        }
    };
    let d = RunError::Program {
        code,
        file: source.display_name(),
        message: e.to_string(),
    }
    .to_diagnostic();
    let d = match e {
        SimError::CycleLimit { .. } => d.with_help(
            "raise the limit with `--max-cycles N` if the program is meant to run this long",
        ),
        _ => d,
    };
    Failure::Diagnostics(vec![d])
}

/// The inputs: the `--input` files, and seeded random values for the others (after checking that
/// the program's tensors fit the simulator, before allocating anything per element).
fn gather_inputs(
    source: &Source,
    prog: &Program,
    opts: &SimOptions,
) -> Result<Vec<Array>, Failure> {
    let names: Vec<&str> = prog
        .tensors
        .iter()
        .filter(|t| t.role == Role::Input)
        .map(|t| t.name.as_str())
        .collect();
    crate::driver::unique_inputs(&opts.inputs)?;
    for (name, _) in &opts.inputs {
        if !names.contains(&name.as_str()) {
            return Err(Failure::user(UserCause::NotAProgramInput {
                name: name.clone(),
                inputs: names.iter().map(|n| n.to_string()).collect(),
            }));
        }
    }
    let mut inputs =
        sim::try_random_inputs(prog, opts.seed).map_err(|e| sim_failure(source, &e))?;
    for (i, name) in names.iter().enumerate() {
        if let Some((_, path)) = opts.inputs.iter().find(|(n, _)| n == name) {
            // The random values it replaces go first: the inputs are held once.
            inputs[i].data = Vec::new();
            let a = crate::run::files::read_input(path)?;
            if a.shape != inputs[i].shape {
                return Err(Failure::user(UserCause::ProgramInputShape {
                    name: name.to_string(),
                    path: path.clone(),
                    got: a.shape.clone(),
                    want: inputs[i].shape.clone(),
                }));
            }
            inputs[i] = a;
        }
    }
    Ok(inputs)
}

/// Busy cycles, utilisation, instructions and predicated-off instructions per engine, keyed by
/// engine name: the `engines` field of `nkc sim --json` and `nkc run --json`.
pub fn engines_json(s: &runtime_sim::sim::Stats) -> serde_json::Value {
    let engines: serde_json::Map<String, serde_json::Value> = Engine::ALL
        .iter()
        .map(|&e| {
            let es = &s.engines[e.index()];
            (
                e.name().to_string(),
                json!({
                    "busy": es.busy,
                    "utilisation": s.utilisation(es.busy),
                    "instructions": es.instructions,
                    "predicated_off": es.predicated_off,
                }),
            )
        })
        .collect();
    serde_json::Value::Object(engines)
}

impl SimReport {
    /// The `--json` form.
    pub fn to_json(&self) -> serde_json::Value {
        let s = &self.result.stats;
        let engines = engines_json(s);
        let queues: Vec<serde_json::Value> = (0..DMA_QUEUES)
            .map(|q| {
                json!({
                    "busy": s.queue_busy[q],
                    "utilisation": s.utilisation(s.queue_busy[q]),
                    "transfers": s.queue_transfers[q],
                })
            })
            .collect();
        let outputs: serde_json::Map<String, serde_json::Value> = self
            .result
            .outputs
            .iter()
            .map(|(n, a)| (n.clone(), json!(a.shape)))
            .collect();
        let checksums: serde_json::Map<String, serde_json::Value> = self
            .result
            .outputs
            .iter()
            .map(|(n, a)| {
                (
                    n.clone(),
                    json!(a.data.iter().map(|&x| f64::from(x)).sum::<f64>()),
                )
            })
            .collect();
        let files: serde_json::Map<String, serde_json::Value> = self
            .files
            .iter()
            .map(|(n, p)| (n.clone(), json!(p.display().to_string())))
            .collect();
        let races: Vec<String> = self.result.races.iter().map(|r| r.to_string()).collect();
        json!({
            "program": self.program,
            "numerics": self.numerics,
            "cycles": s.cycles,
            "bound": s.bound(),
            "compute_bound": s.compute_bound(),
            "dma_bound": s.dma_bound(),
            "cycles_over_bound": s.cycles_over_bound(),
            "instructions": s.instructions(),
            "opcodes": s.opcodes,
            "engines": engines,
            "queues": queues,
            "dma_bytes": s.dma_bytes,
            "sbuf_high_water": s.sbuf_high_water,
            "psum_high_water": s.psum_high_water,
            "outputs": outputs,
            "checksums": checksums,
            "files": files,
            "trace": self.trace.as_ref().map(|p| p.display().to_string()),
            "races": races,
            "sem_window_peak": s.sem_window_peak,
            "trace_dropped": s.trace_dropped,
        })
    }

    /// The human summary.
    pub fn to_text(&self) -> String {
        let s = &self.result.stats;
        let mut t = format!(
            "simulated `{}`{}: {} cycles ({:.2} µs at 1.4 GHz)\n",
            self.program,
            if self.numerics { "" } else { " (timing only)" },
            s.cycles,
            s.cycles as f64 / runtime_sim::machine::CYCLES_PER_US
        );
        t += &format!(
            "  resource bound {} cycles (busiest compute engine {}, DMA {} / 16 queues); cycles / bound = {:.3}\n",
            s.bound(),
            s.compute_bound(),
            s.queue_busy.iter().sum::<u64>(),
            s.cycles_over_bound()
        );
        for e in Engine::ALL {
            let es = &s.engines[e.index()];
            if es.instructions + es.predicated_off == 0 {
                continue;
            }
            t += &format!(
                "  {:<5} busy {:>10} ({:>5.1}%)  {} instructions, {} predicated off\n",
                e.name(),
                es.busy,
                100.0 * s.utilisation(es.busy),
                es.instructions,
                es.predicated_off
            );
        }
        for q in 0..DMA_QUEUES {
            if s.queue_transfers[q] == 0 {
                continue;
            }
            t += &format!(
                "  q{:<4} busy {:>10} ({:>5.1}%)  {} transfers\n",
                q,
                s.queue_busy[q],
                100.0 * s.utilisation(s.queue_busy[q]),
                s.queue_transfers[q]
            );
        }
        t += &format!(
            "  SBUF high-water {} bytes per partition, PSUM {} bytes per partition\n",
            s.sbuf_high_water, s.psum_high_water
        );
        for (name, a) in &self.result.outputs {
            t += &format!(
                "  output {name}: {}{:?}",
                self.dtype_of(name).name(),
                a.shape
            );
            if let Some((_, p)) = self.files.iter().find(|(n, _)| n == name) {
                t += &format!("  -> {}", p.display());
            }
            t.push('\n');
        }
        if let Some(p) = &self.trace {
            t += &format!("  trace -> {}", p.display());
            if self.result.stats.trace_dropped > 0 {
                t += &format!(
                    " (its first {} slices; {} more not recorded)",
                    sim::MAX_TRACE_SLICES,
                    self.result.stats.trace_dropped
                );
            }
            t.push('\n');
        }
        t
    }

    /// The races as a failure, if any.
    pub fn races_failure(&self) -> Option<Failure> {
        let races = &self.result.races;
        if races.is_empty() {
            return None;
        }
        Some(Failure::user(UserCause::ProgramRaces {
            program: self.program.clone(),
            races: races.iter().map(|r| r.to_string()).collect(),
        }))
    }
}
