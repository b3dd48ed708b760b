//! `nkc run`: compile a kernel, gather its inputs, execute it and report its outputs.
//!
//! Inputs come from `--input NAME=PATH.npy` or, for every parameter not given, from the seeded
//! generator (`--seed`). The only engine so far is the reference interpreter. Outputs are reported
//! by the names `return` gives them, and written as `NAME.npy` files with `--output DIR`.

use crate::driver::{self, Failure, Source};
use crate::npy;
use penguin::interp::{self, Array};
use penguin::pipeline::{PipelineLog, PipelineOptions};
use penguin::{Function, Tensor};
use serde_json::json;
use std::path::PathBuf;

/// Which engine executes the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Engine {
    /// The reference interpreter of Penguin IR.
    #[default]
    Interp,
}

/// Which pipelining path loops take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PipelineMode {
    /// Annotated loops are pipelined as annotated, the others by the backend.
    #[default]
    Default,
    /// Annotated loops take the annotated path (the only path so far: as `default`).
    Annotated,
    /// Every loop takes the backend's emergent path.
    Emergent,
    /// No pipelining: annotations are ignored.
    None,
}

impl PipelineMode {
    pub fn name(self) -> &'static str {
        match self {
            PipelineMode::Default => "default",
            PipelineMode::Annotated => "annotated",
            PipelineMode::Emergent => "emergent",
            PipelineMode::None => "none",
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub kernel: Option<String>,
    pub engine: Engine,
    pub pipeline: PipelineMode,
    /// `NAME=PATH` pairs.
    pub inputs: Vec<(String, PathBuf)>,
    pub seed: u64,
    pub output_dir: Option<PathBuf>,
    /// Run the pipeliner's legality check (`--no-legality-check` turns it off).
    pub legality_check: bool,
}

/// One returned array.
#[derive(Clone, Debug)]
pub struct Output {
    pub name: String,
    pub array: Array,
    pub file: Option<PathBuf>,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunReport {
    pub kernel: String,
    pub engine: Engine,
    pub pipeline: PipelineMode,
    /// Notes for the user (printed on stderr), such as a pipelining mode that is not available yet.
    pub notes: Vec<String>,
    pub outputs: Vec<Output>,
    pub stats: interp::Stats,
}

/// Compiles and runs the kernel. The pipeliner's decisions go to `log`, also when it fails.
pub fn run(
    source: &Source,
    opts: &RunOptions,
    log: &mut PipelineLog,
) -> Result<RunReport, Failure> {
    let mut func = driver::compile(source, opts.kernel.as_deref())?;
    let mut notes = Vec::new();
    match opts.pipeline {
        PipelineMode::Default | PipelineMode::Annotated => {
            let popts = PipelineOptions {
                legality_check: opts.legality_check,
            };
            driver::pipeline(&mut func, &popts, log)?;
        }
        PipelineMode::Emergent | PipelineMode::None => {
            if opts.pipeline == PipelineMode::Emergent {
                notes.push(
                    "--pipeline emergent: emergent pipelining belongs to the backend, which does \
                     not exist yet, so the kernel runs unpipelined (as with --pipeline none)"
                        .to_string(),
                );
            }
            if has_annotations(&func) {
                strip_annotations(&mut func);
                driver::verify(&func, "removing pipelining annotations")?;
            }
        }
    }

    let inputs = gather_inputs(&func, opts)?;
    let result = match opts.engine {
        Engine::Interp => {
            interp::interpret(&func, &inputs).map_err(|e| interp_failure(&func, &e))?
        }
    };

    let mut outputs = Vec::new();
    if let Some(dir) = &opts.output_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::User(format!(
                "cannot create output directory `{}`: {e}",
                dir.display()
            ))
        })?;
    }
    for (&tensor, array) in func.outputs.iter().zip(result.outputs) {
        let name = output_name(&func, tensor);
        let file = match &opts.output_dir {
            Some(dir) => {
                let path = dir.join(format!("{name}.npy"));
                npy::write_npy(&path, &array).map_err(Failure::User)?;
                Some(path)
            }
            None => None,
        };
        outputs.push(Output { name, array, file });
    }
    Ok(RunReport {
        kernel: func.name.clone(),
        engine: opts.engine,
        pipeline: opts.pipeline,
        notes,
        outputs,
        stats: result.stats,
    })
}

/// What an interpreter error means for the user. Reading memory that nothing wrote is the kernel's
/// fault, and becomes a diagnostic at the statement; anything else, on IR that the checks and the
/// verifier accepted, is a bug in nkc.
fn interp_failure(func: &Function, e: &interp::InterpError) -> Failure {
    let span = e
        .inst()
        .and_then(|i| func.inst_spans.get(i).copied().flatten());
    match (e, span) {
        (interp::InterpError::Uninitialised { tensor, .. }, Some(span)) => {
            Failure::Diagnostics(vec![frontend::diagnostic::Error::new(
                frontend::codes::UNINITIALISED_READ,
                format!("this reads part of `{tensor}` that was never written"),
                span.range(),
            )
            .with_label("reads uninitialised memory")
            .with_note(e.to_string())
            .with_help(format!(
                "write every element of `{tensor}` before reading it, or make it with nl.zeros"
            ))])
        }
        _ => Failure::Internal(format!("the interpreter failed: {e}")),
    }
}

/// The name `return` gave an output.
fn output_name(func: &Function, tensor: Tensor) -> String {
    func.tensors[tensor].name.clone()
}

fn has_annotations(func: &Function) -> bool {
    func.axes.values().any(|a| {
        a.attrs.num_stages.is_some_and(|n| n > 1)
            || a.attrs.multi_buffer.is_some()
            || a.attrs.disable_auto_buffer
    }) || func
        .annots
        .values()
        .any(|a| a.stage_id.is_some() || a.execution_order.is_some())
}

/// `--pipeline none`: forget every pipelining annotation.
fn strip_annotations(func: &mut Function) {
    for axis in func.axes.values_mut() {
        axis.attrs.num_stages = None;
        axis.attrs.multi_buffer = None;
        axis.attrs.disable_auto_buffer = false;
        axis.attrs.disable_execution_order_check = false;
    }
    func.annots.clear();
}

fn gather_inputs(func: &Function, opts: &RunOptions) -> Result<Vec<Array>, Failure> {
    let param_names: Vec<&str> = func
        .params
        .iter()
        .map(|&t| func.tensors[t].name.as_str())
        .collect();
    for (name, _) in &opts.inputs {
        if !param_names.contains(&name.as_str()) {
            return Err(Failure::User(format!(
                "`{name}` is not a parameter of `{}`; its parameters are: {}",
                func.name,
                param_names.join(", ")
            )));
        }
    }
    let mut inputs = interp::random_inputs(func, opts.seed);
    for (i, &tensor) in func.params.iter().enumerate() {
        let data = &func.tensors[tensor];
        let given = opts.inputs.iter().rev().find(|(n, _)| *n == data.name);
        if let Some((name, path)) = given {
            let array = npy::read_npy(path).map_err(Failure::User)?;
            let want: Vec<usize> = data.shape.iter().map(|&d| d as usize).collect();
            if array.shape != want {
                return Err(Failure::User(format!(
                    "input `{name}` from `{}` has shape {:?}, but `{}` declares `{name}` as {:?}",
                    path.display(),
                    array.shape,
                    func.name,
                    want
                )));
            }
            inputs[i] = array;
        }
    }
    Ok(inputs)
}

impl RunReport {
    /// The `--json` form.
    pub fn to_json(&self) -> serde_json::Value {
        let outputs: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| (o.name.clone(), json!(o.array.shape)))
            .collect();
        let files: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .filter_map(|o| {
                o.file
                    .as_ref()
                    .map(|f| (o.name.clone(), json!(f.display().to_string())))
            })
            .collect();
        let summary: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| {
                let s = Summary::of(&o.array.data);
                (
                    o.name.clone(),
                    json!({"min": s.min, "max": s.max, "mean": s.mean, "checksum": s.checksum}),
                )
            })
            .collect();
        json!({
            "kernel": self.kernel,
            "engine": "interp",
            "pipeline": self.pipeline.name(),
            "outputs": outputs,
            "files": files,
            "summary": summary,
            "stats": stats_json(&self.stats),
        })
    }

    /// The human summary.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "ran `{}` on the interpreter (pipeline: {})\n",
            self.kernel,
            self.pipeline.name()
        );
        for o in &self.outputs {
            let sum = Summary::of(&o.array.data);
            s += &format!(
                "  {}: f32{:?}  min {:.6}  max {:.6}  mean {:.6}",
                o.name, o.array.shape, sum.min, sum.max, sum.mean
            );
            if let Some(f) = &o.file {
                s += &format!("  -> {}", f.display());
            }
            s.push('\n');
        }
        s += &stats_text(&self.stats);
        s
    }
}

/// A few figures that identify an output at a glance.
struct Summary {
    min: f32,
    max: f32,
    mean: f64,
    /// The sum of all values in f64, in order: equal outputs give equal checksums.
    checksum: f64,
}

impl Summary {
    fn of(data: &[f32]) -> Summary {
        let min = data.iter().copied().fold(f32::INFINITY, f32::min);
        let max = data.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let checksum: f64 = data.iter().map(|&x| f64::from(x)).sum();
        let mean = if data.is_empty() {
            0.0
        } else {
            checksum / data.len() as f64
        };
        Summary {
            min,
            max,
            mean,
            checksum,
        }
    }
}

fn stats_json(stats: &interp::Stats) -> serde_json::Value {
    let counters = |m: &std::collections::BTreeMap<&'static str, interp::Counter>| {
        m.iter()
            .map(|(k, c)| {
                (
                    k.to_string(),
                    json!({"insts": c.insts, "elements": c.elements}),
                )
            })
            .collect::<serde_json::Map<_, _>>()
    };
    json!({
        "insts": stats.total.insts,
        "elements": stats.total.elements,
        "matmul_macs": stats.matmul_macs,
        "stmts_skipped": stats.stmts_skipped,
        "by_op": counters(&stats.by_op),
        "by_engine": counters(&stats.by_engine),
    })
}

fn stats_text(stats: &interp::Stats) -> String {
    let engines: Vec<String> = stats
        .by_engine
        .iter()
        .map(|(name, c)| format!("{name} {}", c.insts))
        .collect();
    format!(
        "  executed {} instructions ({}), {} matmul multiply-adds\n",
        stats.total.insts,
        engines.join(", "),
        stats.matmul_macs
    )
}
