//! The report of a run as text and as JSON (`--json`): outputs with their shapes, dtypes,
//! files and summaries, then the simulator's measurements or the interpreter's statistics.

use super::{Engine, RunReport};
use penguin::interp;
use serde_json::json;

impl RunReport {
    /// The `--json` form.
    pub fn to_json(&self) -> serde_json::Value {
        let outputs: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| (o.name.clone(), json!(o.array.shape)))
            .collect();
        let dtypes: serde_json::Map<String, serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| (o.name.clone(), json!(dtype_name(o.dtype))))
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
        let mut j = json!({
            "kernel": self.kernel,
            "engine": self.engine.name(),
            "pipeline": self.pipeline.name(),
            "outputs": outputs,
            "dtypes": dtypes,
            "files": files,
            "summary": summary,
            "checked": self.checked,
            "compile_seconds": self.compile_seconds,
            "peeled": self.peeled,
        });
        if let Some(stats) = &self.stats {
            j["stats"] = stats_json(stats);
        }
        if let Some(sim) = &self.sim {
            let s = &sim.stats;
            let engines = crate::sim::engines_json(s);
            j["cycles"] = json!(s.cycles);
            j["lower_bound"] = json!(sim.lower_bound());
            j["resource_bound"] = json!(sim.resource_bound());
            j["dependence_bound"] = json!(sim.dependence_bound());
            j["fill_bound"] = json!(sim.fill_bound());
            j["bound_by"] = json!(sim.bound_by());
            j["cycles_over_bound"] = json!(sim.cycles_over_bound());
            j["races"] = json!(sim.races);
            j["engines"] = json!(engines);
            j["sbuf_bytes"] = json!(sim.sbuf_bytes);
            j["psum_banks"] = json!(sim.psum_banks);
            j["instructions"] = json!(s.instructions());
            j["program_size"] = json!(sim.program_size);
            j["dma_bytes"] = json!(s.dma_bytes);
            j["trace"] = json!(sim.trace.as_ref().map(|p| p.display().to_string()));
            j["loops"] = json!(sim
                .loops
                .iter()
                .map(|l| json!({
                    "loop": l.name,
                    "line": l.line,
                    "trip": l.trip,
                    "ii": l.ii,
                    "mii": l.mii,
                    "res_mii": l.res_mii,
                    "rec_mii": l.rec_mii,
                    "predicted_period": l.predicted,
                    "pipelined": l.pipelined,
                    "steady_state": l.steady_state,
                    "limited_by": l.limited_by.to_string(),
                    "period_set_by": l
                        .period_set_by
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    "order_bound": l.order_bound,
                    "measured_period": l.period,
                }))
                .collect::<Vec<_>>());
        }
        j
    }

    /// The human summary.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "ran `{}` on the {} (pipeline: {}){}\n",
            self.kernel,
            match self.engine {
                Engine::Sim => "simulator",
                Engine::Interp => "interpreter",
            },
            self.pipeline.name(),
            if self.checked {
                "; --check: outputs equal the kernel's as written (interpreted) bit for bit"
            } else {
                ""
            }
        );
        for o in &self.outputs {
            let sum = Summary::of(&o.array.data);
            s += &format!(
                "  {}: {}{:?}  min {:.6}  max {:.6}  mean {:.6}",
                o.name,
                o.dtype.name(),
                o.array.shape,
                sum.min,
                sum.max,
                sum.mean
            );
            if let Some(f) = &o.file {
                s += &format!("  -> {}", f.display());
            }
            s.push('\n');
        }
        if let Some(sim) = &self.sim {
            let st = &sim.stats;
            s += &format!(
                "  {} cycles ({:.2} µs at 1.4 GHz); lower bound {} cycles (resource {}, dependence {}, fill {}; set by {}); cycles / bound = {:.3}\n",
                st.cycles,
                st.cycles as f64 / runtime_sim::machine::CYCLES_PER_US,
                sim.lower_bound(),
                sim.resource_bound(),
                sim.dependence_bound()
                    .map_or("not computed".to_string(), |d| d.to_string()),
                sim.fill_bound()
                    .map_or("not computed".to_string(), |d| d.to_string()),
                sim.bound_by(),
                sim.cycles_over_bound()
            );
            for e in runtime_sim::isa::Engine::ALL {
                let es = &st.engines[e.index()];
                if es.instructions + es.predicated_off == 0 {
                    continue;
                }
                s += &format!(
                    "  {:<5} busy {:>9} ({:>5.1}%)  {} instructions, {} predicated off\n",
                    e.name(),
                    es.busy,
                    100.0 * st.utilisation(es.busy),
                    es.instructions,
                    es.predicated_off
                );
            }
            s += &format!(
                "  SBUF {} bytes per partition, {} PSUM bank(s), no races\n",
                sim.sbuf_bytes, sim.psum_banks
            );
            if let Some(p) = &sim.trace {
                s += &format!("  trace -> {}", p.display());
                if st.trace_dropped > 0 {
                    s += &format!(
                        " (its first {} slices; {} more not recorded)",
                        runtime_sim::sim::MAX_TRACE_SLICES,
                        st.trace_dropped
                    );
                }
                s.push('\n');
            }
        } else if let Some(stats) = &self.stats {
            s += &stats_text(stats);
        }
        s
    }
}

/// The NumPy-style name of a dtype (`float32`, `bfloat16`), as `--dtype` takes it.
pub fn dtype_name(d: penguin::DType) -> &'static str {
    match d {
        penguin::DType::F32 => "float32",
        penguin::DType::Bf16 => "bfloat16",
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
