//! `nkc suggest`: the pipelining annotation of each loop that measures fastest, as a diff of the
//! source.
//!
//! The loops considered are the kernel's innermost loops and every loop that carries an
//! annotation (`num_stages`, or `stage_id` on its statements). For each, in program order:
//! 1. **Candidates.** The annotation as written (the baseline; none for an un-annotated loop);
//!    Mode A `num_stages=K` for `K` from 2 to 4 (at most the body's statement count); and, when
//!    every statement of the body carries a call to annotate, the stages of
//!    `num_stages="auto"` ([`backend::transform::emergent::choose_auto_stages`]) written out in Mode B.
//! 2. **Local search.** From the fastest Mode B plan so far, one statement's stage one up or one
//!    down (kept non-decreasing and without a gap, as Mode B wants), hill-climbing while it
//!    gains, within [`MAX_TRIALS`] measured candidates per loop.
//! 3. **Measure.** Every candidate is the source with that loop's annotation replaced, run on the
//!    path `nkc run` takes by default ([`MEASURED_ON`], `default`: the annotated pipeliner on
//!    annotated loops, the backend on the others), with `--check` ([`crate::run::run`]), against
//!    the kernel as given on that same path: a candidate the pipeliner or its ISL
//!    check refuses, or whose outputs differ from the kernel as written, is dropped. So only legal,
//!    bit-exact schedules are ever suggested.
//! 4. **Suggest** the fastest candidate when it is faster than the baseline, with a one-line
//!    reason (which statements change stage), and carry the edited source to the next loop (so each
//!    loop's baseline includes the suggestions before it). The
//!    `emergent` path's cycles on the source as given are reported beside, for reference.
//!
//! Invariants: the suggested source differs from the input only in the values of the keywords
//! `num_stages`, `stage_id` and `execution_order` of the loops reported (a kept keyword keeps
//! its place; a dropped one goes with its comma; a new one goes last); it was measured
//! bit-exact; and its cycles on `nkc run`'s default path are below the input's (so applying it
//! never slows `nkc run`).

use crate::driver::{self, Failure, InternalCause, Source, UserCause};
use crate::run::{self, Engine, PipelineMode, RunOptions};
use frontend::ast::{Expr, ExprKind, Kernel, Keyword, Module, Stmt, StmtKind};
use penguin::pipeline::PipelineLog;
use std::time::Instant;

/// The path every candidate is measured on: the one `nkc run` takes by default, so that a
/// suggestion is faster where the user runs the kernel.
pub const MEASURED_ON: PipelineMode = PipelineMode::Default;

/// The most candidates measured per loop (baseline included).
pub const MAX_TRIALS: usize = 24;

/// Options of `nkc suggest`.
#[derive(Clone, Debug, Default)]
pub struct SuggestOptions {
    pub kernel: Option<String>,
    pub seed: u64,
    /// The shapes of untyped parameters (`--shape`, `--dtype`).
    pub specialise: driver::Specialise,
    /// `NAME=PATH.npy` input arrays (`--input`), the same for every candidate.
    pub inputs: Vec<(String, std::path::PathBuf)>,
    /// The cycle limit of each candidate's simulation (`--max-cycles`; 0 takes the default).
    pub max_cycles: u64,
}

/// The annotation of one loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Annotation {
    /// No pipelining annotation.
    None,
    /// `num_stages=K` on the loop.
    Stages(u32),
    /// `stage_id` on every statement of the body, in program order.
    PerStatement(Vec<u32>),
    /// `num_stages="auto"`.
    Auto,
}

impl Annotation {
    fn describe(&self) -> String {
        match self {
            Annotation::None => "no annotation".into(),
            Annotation::Stages(k) => format!("num_stages={k}"),
            Annotation::PerStatement(s) => format!(
                "stage_id {} (Mode B)",
                s.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            Annotation::Auto => "num_stages=\"auto\"".into(),
        }
    }

    /// The stage of each of `n` statements (Mode A slices as `numpy.array_split` does).
    fn stages(&self, n: usize) -> Vec<u32> {
        match self {
            Annotation::None | Annotation::Auto => vec![0; n],
            Annotation::Stages(k) => {
                let sizes = penguin::pipeline::context::array_split_sizes(n, *k as usize);
                sizes
                    .iter()
                    .enumerate()
                    .flat_map(|(s, &len)| std::iter::repeat_n(s as u32, len))
                    .collect()
            }
            Annotation::PerStatement(s) => s.clone(),
        }
    }
}

/// What `suggest` found for one loop.
#[derive(Clone, Debug)]
pub struct LoopSuggestion {
    /// The loop's induction variable and 1-based line.
    pub iv: String,
    pub line: usize,
    /// The annotation as given, and its cycles on [`MEASURED_ON`].
    pub current: Annotation,
    pub current_cycles: u64,
    /// The fastest legal, bit-exact candidate, when faster than the current one.
    pub best: Option<(Annotation, u64)>,
    /// Why the suggestion is faster, in one line.
    pub reason: String,
    /// Candidates measured, and how many of them ran (legal and bit-exact).
    pub tried: usize,
    pub ran: usize,
    pub seconds: f64,
}

/// Every loop's suggestion, the edited source, and the `emergent` path's cycles on the input.
#[derive(Clone, Debug)]
pub struct Suggestions {
    pub kernel: String,
    pub loops: Vec<LoopSuggestion>,
    pub emergent_cycles: u64,
    pub original: String,
    pub suggested: String,
}

impl Suggestions {
    /// The unified diff from the input to the suggested source (empty when they are equal).
    pub fn diff(&self, path: &str) -> String {
        if self.original == self.suggested {
            return String::new();
        }
        similar::TextDiff::from_lines(&self.original, &self.suggested)
            .unified_diff()
            .context_radius(2)
            .header(path, path)
            .to_string()
    }

    /// The `--json` form: the kernel, the `emergent` reference, per loop the annotation as given
    /// and its cycles on [`MEASURED_ON`], the suggestion (or `null`), and the diff.
    pub fn to_json(&self, path: &str) -> serde_json::Value {
        let loops: Vec<serde_json::Value> = self
            .loops
            .iter()
            .map(|l| {
                serde_json::json!({
                    "loop": l.iv,
                    "line": l.line,
                    "current": l.current.describe(),
                    "current_cycles": l.current_cycles,
                    "suggested": l.best.as_ref().map(|(a, _)| a.describe()),
                    "suggested_cycles": l.best.as_ref().map(|(_, c)| *c),
                    "reason": l.reason,
                    "tried": l.tried,
                    "ran": l.ran,
                })
            })
            .collect();
        serde_json::json!({
            "kernel": self.kernel,
            "measured_on": MEASURED_ON.name(),
            "emergent_cycles": self.emergent_cycles,
            "loops": loops,
            "diff": self.diff(path),
        })
    }

    /// The report: one paragraph per loop, then the diff.
    pub fn to_text(&self, path: &str) -> String {
        let mut s = format!(
            "kernel `{}`: emergent runs it in {} cycles\n",
            self.kernel, self.emergent_cycles
        );
        for l in &self.loops {
            s += &format!(
                "loop `{}` (line {}): {} runs {} cycles on `nkc run`'s path ({})\n",
                l.iv,
                l.line,
                l.current.describe(),
                l.current_cycles,
                MEASURED_ON.name()
            );
            match &l.best {
                Some((a, c)) => {
                    s += &format!(
                        "  suggested: {}: {c} cycles ({:.2}x faster); {}\n",
                        a.describe(),
                        l.current_cycles as f64 / *c as f64,
                        l.reason
                    );
                }
                None => s += "  no candidate measured faster: keep it\n",
            }
            s += &format!(
                "  searched {} candidate(s), {} legal and bit-exact, in {:.1} s\n",
                l.tried, l.ran, l.seconds
            );
        }
        s + &self.diff(path)
    }
}

/// One loop of the source, located in the syntax tree.
struct Site {
    /// Its position: the kernel body's statement indices down to the loop.
    path: Vec<usize>,
    iv: String,
    line: usize,
}

/// Suggests an annotation for every loop of the kernel (see the module doc).
pub fn suggest(source: &Source, opts: &SuggestOptions) -> Result<Suggestions, Failure> {
    let specs = opts
        .specialise
        .specs(source, opts.kernel.as_deref(), &opts.inputs)?;
    let func = driver::compile_with(source, opts.kernel.as_deref(), &specs)?;
    let kernel = func.name.clone();
    // The kernel as given runs on the measured path; its diagnostics there are the user's.
    run_on(source, &source.text, MEASURED_ON, opts)?;
    let emergent_cycles = run_on(source, &source.text, PipelineMode::Emergent, opts)?;
    let module = driver::parse(source)?;
    let k = find_kernel(&module, &kernel)?;
    let mut sites = Vec::new();
    collect_sites(&source.text, &k.body, &mut Vec::new(), &mut sites);
    let mut text = source.text.clone();
    let mut loops = Vec::new();
    // At most MAX_TRIALS candidates per loop, and the reference run on `emergent` done.
    let bar = crate::sim::StepsBar::new("candidate", (sites.len() * MAX_TRIALS) as u64 + 1);
    bar.step();
    for site in &sites {
        let started = Instant::now();
        let mut trials = Trials::new(source, &kernel, site, opts, &bar);
        let current = trials.current(&text)?;
        let Some(current_cycles) = trials.run(&text, &current) else {
            return Err(Failure::internal(InternalCause::DoesNotRun {
                iv: site.iv.to_string(),
                on: MEASURED_ON.name(),
            }));
        };
        let n = trials.statements(&text)?;
        let mut best: (Annotation, u64) = (current.clone(), current_cycles);
        let consider = |a: Annotation, trials: &mut Trials, best: &mut (Annotation, u64)| {
            if let Some(c) = trials.run(&text, &a) {
                if c < best.1 {
                    *best = (a, c);
                }
            }
        };
        for k in 2..=(n.min(4) as u32) {
            consider(Annotation::Stages(k), &mut trials, &mut best);
        }
        if let Some(stages) = trials.auto_stages(&text)? {
            consider(Annotation::PerStatement(stages), &mut trials, &mut best);
        }
        // Hill-climb in Mode B from the best plan so far.
        if trials.annotatable(&text)? {
            let mut at = best.0.stages(n);
            loop {
                let before = best.1;
                for c in 0..n {
                    for up in [true, false] {
                        if trials.tried >= MAX_TRIALS {
                            break;
                        }
                        let Some(next) = moved(&at, c, up) else {
                            continue;
                        };
                        consider(Annotation::PerStatement(next), &mut trials, &mut best);
                    }
                }
                if best.1 >= before || trials.tried >= MAX_TRIALS {
                    break;
                }
                at = best.0.stages(n);
            }
        }
        let improved = best.1 < current_cycles && best.0 != current;
        let reason = if improved {
            trials.reason(&text, &current.stages(n), &best.0.stages(n))?
        } else {
            String::new()
        };
        if improved {
            text = edit(&text, &kernel, site, &best.0)?;
        }
        loops.push(LoopSuggestion {
            iv: site.iv.clone(),
            line: site.line,
            current,
            current_cycles,
            best: improved.then_some(best),
            reason,
            tried: trials.tried,
            ran: trials.ran,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    Ok(Suggestions {
        kernel,
        loops,
        emergent_cycles,
        original: source.text.clone(),
        suggested: text,
    })
}

/// `stages` with statement `c` one stage later (`up`) or earlier, when that stays
/// non-decreasing; renumbered without a gap. `None` when the move is not possible or changes
/// nothing.
fn moved(stages: &[u32], c: usize, up: bool) -> Option<Vec<u32>> {
    let mut s = stages.to_vec();
    if up {
        s[c] += 1;
    } else {
        s[c] = s[c].checked_sub(1)?;
    }
    if s.windows(2).any(|w| w[0] > w[1]) {
        return None;
    }
    // Renumber 0..N-1 without a gap.
    let mut out = Vec::with_capacity(s.len());
    let mut id = 0;
    for (k, &x) in s.iter().enumerate() {
        if k > 0 && x > s[k - 1] {
            id += 1;
        }
        out.push(id);
    }
    (out != stages && out.iter().any(|&x| x > 0)).then_some(out)
}

/// The measurements of one loop's candidates.
struct Trials<'a> {
    source: &'a Source,
    kernel: &'a str,
    site: &'a Site,
    opts: &'a SuggestOptions,
    tried: usize,
    ran: usize,
    seen: Vec<Annotation>,
    bar: &'a crate::sim::StepsBar,
}

impl<'a> Trials<'a> {
    fn new(
        source: &'a Source,
        kernel: &'a str,
        site: &'a Site,
        opts: &'a SuggestOptions,
        bar: &'a crate::sim::StepsBar,
    ) -> Trials<'a> {
        Trials {
            source,
            kernel,
            site,
            opts,
            tried: 0,
            ran: 0,
            seen: Vec::new(),
            bar,
        }
    }

    /// `f` of the loop's statement in `text`.
    fn with_loop<T>(&self, text: &str, f: impl FnOnce(&Stmt) -> T) -> Result<T, Failure> {
        let src = Source {
            path: self.source.path.clone(),
            text: text.to_string(),
        };
        let module = driver::parse(&src)?;
        let k = find_kernel(&module, self.kernel)?;
        let stmt =
            at_path(&k.body, &self.site.path).ok_or(Failure::internal(InternalCause::LostLoop))?;
        Ok(f(stmt))
    }

    /// The annotation the loop carries in `text`.
    fn current(&self, text: &str) -> Result<Annotation, Failure> {
        self.with_loop(text, |stmt| {
            let StmtKind::For { iter, body, .. } = &stmt.kind else {
                return Annotation::None;
            };
            if let Some(kw) = call_keywords(iter)
                .iter()
                .find(|k| k.name.name == "num_stages")
            {
                return match &kw.value.kind {
                    ExprKind::Int(k) => Annotation::Stages(*k as u32),
                    ExprKind::Str(_) => Annotation::Auto,
                    _ => Annotation::None,
                };
            }
            let ids: Vec<Option<u32>> = body
                .iter()
                .map(|s| {
                    annotation_call(s).and_then(|c| {
                        call_keywords(c)
                            .iter()
                            .find(|k| k.name.name == "stage_id")
                            .and_then(|k| match k.value.kind {
                                ExprKind::Int(v) => Some(v as u32),
                                _ => None,
                            })
                    })
                })
                .collect();
            if ids.iter().all(Option::is_some) && !ids.is_empty() {
                Annotation::PerStatement(ids.into_iter().flatten().collect())
            } else {
                Annotation::None
            }
        })
    }

    /// How many statements the loop's body has.
    fn statements(&self, text: &str) -> Result<usize, Failure> {
        self.with_loop(text, |stmt| match &stmt.kind {
            StmtKind::For { body, .. } => body.len(),
            _ => 0,
        })
    }

    /// Whether every statement of the body has a call to carry `stage_id`.
    fn annotatable(&self, text: &str) -> Result<bool, Failure> {
        self.with_loop(text, |stmt| match &stmt.kind {
            StmtKind::For { body, .. } => body.iter().all(|s| annotation_call(s).is_some()),
            _ => false,
        })
    }

    /// The stages `num_stages="auto"` chooses for the loop, per statement of its body, when it
    /// chooses any and every statement can carry them.
    fn auto_stages(&self, text: &str) -> Result<Option<Vec<u32>>, Failure> {
        if !self.annotatable(text)? {
            return Ok(None);
        }
        let edited = edit(text, self.kernel, self.site, &Annotation::Auto)?;
        let src = Source {
            path: self.source.path.clone(),
            text: edited.clone(),
        };
        let specs = self
            .opts
            .specialise
            .specs(&src, Some(self.kernel), &self.opts.inputs)?;
        let Ok(mut func) = driver::compile_with(&src, Some(self.kernel), &specs) else {
            return Ok(None);
        };
        backend::transform::emergent::choose_auto_stages(&mut func);
        // The statements of the loop, by their source spans.
        let spans: Vec<std::ops::Range<usize>> =
            self.with_loop(&edited, |stmt| match &stmt.kind {
                StmtKind::For { body, .. } => body.iter().map(|s| s.span.clone()).collect(),
                _ => Vec::new(),
            })?;
        let mut stages = vec![None; spans.len()];
        for (s, annot) in func.annots.iter() {
            let (Some(id), Some(Some(span))) = (annot.stage_id, func.stmt_spans.get(s)) else {
                continue;
            };
            let start = span.range().start;
            if let Some(k) = spans.iter().position(|r| r.contains(&start)) {
                stages[k] = Some(id);
            }
        }
        Ok(stages.into_iter().collect())
    }

    /// Cycles of `text` with the loop annotated `a`, on [`MEASURED_ON`], checked bit for bit;
    /// `None` when it does not compile (refused) or does not run bit-exact.
    fn run(&mut self, text: &str, a: &Annotation) -> Option<u64> {
        if self.seen.contains(a) || self.tried >= MAX_TRIALS {
            return None;
        }
        self.seen.push(a.clone());
        self.tried += 1;
        let edited = edit(text, self.kernel, self.site, a).ok()?;
        let c = measure(self.source, &edited, MEASURED_ON, self.opts);
        self.bar.step();
        let c = c?;
        self.ran += 1;
        Some(c)
    }

    /// One line naming the statements whose stage changes from `from` to `to`.
    fn reason(&self, text: &str, from: &[u32], to: &[u32]) -> Result<String, Failure> {
        let lines: Vec<String> = self.with_loop(text, |stmt| match &stmt.kind {
            StmtKind::For { body, .. } => body
                .iter()
                .map(|s| first_line(&text[s.span.clone()]))
                .collect(),
            _ => Vec::new(),
        })?;
        let moves: Vec<String> = (0..to.len().min(lines.len()))
            .filter(|&k| from.get(k) != Some(&to[k]))
            .map(|k| format!("`{}` to stage {}", lines[k], to[k]))
            .collect();
        let n = to.iter().max().map_or(1, |m| m + 1);
        Ok(format!(
            "{n} stage(s); moves {}",
            penguin::listing::capped_list(&moves, ", ")
        ))
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

/// Cycles of `text` on `mode` with `--check`; `None` when it fails.
fn measure(source: &Source, text: &str, mode: PipelineMode, opts: &SuggestOptions) -> Option<u64> {
    run_on(source, text, mode, opts).ok()
}

/// Cycles of `text` on `mode`, checked bit for bit against the interpreter and free of races. A
/// diagnostic of that path is returned as it is (the kernel's, for the user); a run that does not
/// match the interpreter or races is an internal error.
fn run_on(
    source: &Source,
    text: &str,
    mode: PipelineMode,
    opts: &SuggestOptions,
) -> Result<u64, Failure> {
    let src = Source {
        path: source.path.clone(),
        text: text.to_string(),
    };
    let ropts = RunOptions {
        kernel: opts.kernel.clone(),
        engine: Engine::Sim,
        pipeline: mode,
        seed: opts.seed,
        check: true,
        specialise: opts.specialise.clone(),
        inputs: opts.inputs.clone(),
        max_cycles: if opts.max_cycles == 0 {
            runtime_sim::sim::DEFAULT_MAX_CYCLES
        } else {
            opts.max_cycles
        },
        ..RunOptions::default()
    };
    let report = run::run(&src, &ropts, &mut PipelineLog::default())?;
    match report.sim {
        Some(sim) if report.checked && sim.races.is_empty() => Ok(sim.stats.cycles),
        _ => Err(Failure::internal(InternalCause::NotBitExact {
            mode: mode.name(),
        })),
    }
}

fn find_kernel<'m>(module: &'m Module, name: &str) -> Result<&'m Kernel, Failure> {
    module
        .kernels
        .iter()
        .find(|k| k.name.name == name)
        .ok_or_else(|| {
            Failure::internal(InternalCause::KernelVanished {
                name: name.to_string(),
            })
        })
}

/// The loops to consider, in program order: innermost loops, and every annotated loop.
fn collect_sites(text: &str, block: &[Stmt], path: &mut Vec<usize>, out: &mut Vec<Site>) {
    for (k, s) in block.iter().enumerate() {
        let StmtKind::For {
            target: frontend::ast::Target::Name(var),
            iter,
            body,
        } = &s.kind
        else {
            continue;
        };
        path.push(k);
        let nested = body.iter().any(|b| matches!(b.kind, StmtKind::For { .. }));
        let annotated = call_keywords(iter)
            .iter()
            .any(|kw| kw.name.name == "num_stages")
            || body.iter().any(|b| {
                annotation_call(b)
                    .is_some_and(|c| call_keywords(c).iter().any(|kw| kw.name.name == "stage_id"))
            });
        if annotated || !nested {
            out.push(Site {
                path: path.clone(),
                iv: var.name.clone(),
                line: text[..s.span.start].matches('\n').count() + 1,
            });
        }
        // Loops inside an annotated loop belong to it.
        if !annotated {
            collect_sites(text, body, path, out);
        }
        path.pop();
    }
}

fn at_path<'s>(block: &'s [Stmt], path: &[usize]) -> Option<&'s Stmt> {
    let (&first, rest) = path.split_first()?;
    let s = block.get(first)?;
    if rest.is_empty() {
        return Some(s);
    }
    match &s.kind {
        StmtKind::For { body, .. } => at_path(body, rest),
        _ => None,
    }
}

/// The call that carries a statement's `stage_id`: its operation's, or a loop's range call.
fn annotation_call(s: &Stmt) -> Option<&Expr> {
    let e = match &s.kind {
        StmtKind::Assign { value, .. } | StmtKind::AugAssign { value, .. } => value,
        StmtKind::Expr(e) => e,
        StmtKind::For { iter, .. } => iter,
        _ => return None,
    };
    matches!(e.kind, ExprKind::Call { .. }).then_some(e)
}

fn call_keywords(e: &Expr) -> &[Keyword] {
    match &e.kind {
        ExprKind::Call { kwargs, .. } => kwargs,
        _ => &[],
    }
}

/// `text` with the loop at `site` annotated `a` instead of what it carries.
fn edit(text: &str, kernel: &str, site: &Site, a: &Annotation) -> Result<String, Failure> {
    let src = Source {
        path: Default::default(),
        text: text.to_string(),
    };
    let module = driver::parse(&src)?;
    let k = find_kernel(&module, kernel)?;
    let Some(stmt) = at_path(&k.body, &site.path) else {
        return Err(Failure::internal(InternalCause::LostLoop));
    };
    let StmtKind::For { iter, body, .. } = &stmt.kind else {
        return Err(Failure::internal(InternalCause::LostLoop));
    };
    // (start, end, replacement), applied from the end. A keyword the annotation keeps gets its
    // new value in place; one it drops goes with the comma that separates it; a new one goes
    // last. Everything else the user wrote stays as written.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut set = |call: &Expr, drop: &[&str], add: Option<(&str, String)>| {
        keyword_edits(text, call, drop, add, &mut edits)
    };
    let loop_kw = match a {
        Annotation::Stages(k) => Some(("num_stages", k.to_string())),
        Annotation::Auto => Some(("num_stages", "\"auto\"".to_string())),
        _ => None,
    };
    set(iter, &["num_stages"], loop_kw);
    for (k, s) in body.iter().enumerate() {
        let add = match a {
            Annotation::PerStatement(ids) => ids.get(k).map(|id| ("stage_id", id.to_string())),
            _ => None,
        };
        if let Some(call) = annotation_call(s) {
            set(call, &["stage_id", "execution_order"], add);
        } else if add.is_some() {
            return Err(Failure::user(UserCause::NoStageCall));
        }
    }
    Ok(apply_edits(text, edits))
}

/// The edits (`start, end, replacement`) of call `call`'s keywords that set an annotation: a
/// keyword in `drop` that `add` keeps gets its new value in place; one it drops goes with the
/// comma that separates it; `add`, when no keyword took it, goes last.
fn keyword_edits(
    text: &str,
    call: &Expr,
    drop: &[&str],
    add: Option<(&str, String)>,
    edits: &mut Vec<(usize, usize, String)>,
) {
    let ExprKind::Call { args, kwargs, .. } = &call.kind else {
        return;
    };
    let mut placed = false;
    for kw in kwargs {
        let name = kw.name.name.as_str();
        if !drop.contains(&name) {
            continue;
        }
        match &add {
            Some((new, value)) if *new == name && !placed => {
                edits.push((kw.value.span.start, kw.value.span.end, value.clone()));
                placed = true;
            }
            _ => {
                // The comma before it (and the space up to it); for a first argument, the
                // comma and the spaces after it.
                let before = text[..kw.span.start].trim_end();
                let (from, to) = if before.ends_with(',') {
                    (before.len() - 1, kw.span.end)
                } else {
                    let after = &text[kw.span.end..];
                    let rest = after.trim_start();
                    match rest.strip_prefix(',') {
                        Some(r) => (
                            kw.span.start,
                            text.len() - r.trim_start_matches([' ', '\t']).len(),
                        ),
                        None => (kw.span.start, kw.span.end),
                    }
                };
                edits.push((from, to, String::new()));
            }
        }
    }
    if let (Some((new, value)), false) = (&add, placed) {
        let close = call.span.end - 1;
        let inside = text[..close].trim_end();
        let kept = args.len()
            + kwargs
                .iter()
                .filter(|k| !drop.contains(&k.name.name.as_str()))
                .count();
        let (at, sep) = if inside.ends_with(',') {
            (inside.len(), " ")
        } else if kept > 0 {
            (inside.len(), ", ")
        } else {
            (inside.len(), "")
        };
        edits.push((at, at, format!("{sep}{new}={value}")));
    }
}

/// `text` with `edits` applied, from the end; removals that touch (two keywords dropped side by
/// side) become one.
fn apply_edits(text: &str, mut edits: Vec<(usize, usize, String)>) -> String {
    edits.sort_by_key(|e| (e.0, e.1));
    let mut merged: Vec<(usize, usize, String)> = Vec::new();
    for e in edits {
        if let Some(last) = merged.last_mut() {
            if last.2.is_empty() && e.2.is_empty() && e.0 <= last.1 {
                last.1 = last.1.max(e.1);
                continue;
            }
        }
        merged.push(e);
    }
    let mut out = text.to_string();
    for (from, to, with) in merged.into_iter().rev() {
        out.replace_range(from..to, &with);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{edit, moved, Annotation, Site};

    const LOOP: &str = "\
def k(a: nl.hbm[nl.float32, 1024, 512]):
    out = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(8, num_stages=2):
        t = nl.load(a[i * 128:(i + 1) * 128, :], dtype=nl.float32)
        u = nl.exp(t, dtype=nl.float32)
        nl.store(out[i * 128:(i + 1) * 128, :], value=u)
    return out
";

    fn site() -> Site {
        Site {
            path: vec![1],
            iv: "i".into(),
            line: 3,
        }
    }

    #[test]
    fn an_edit_changes_only_the_annotation_and_keeps_keyword_order() {
        // num_stages changes in place.
        let three = edit(LOOP, "k", &site(), &Annotation::Stages(3)).unwrap();
        assert_eq!(
            three,
            LOOP.replace("num_stages=2)", "num_stages=3)"),
            "{three}"
        );
        // Mode B: num_stages goes with its comma, stage_id goes last in each call.
        let b = edit(LOOP, "k", &site(), &Annotation::PerStatement(vec![0, 1, 1])).unwrap();
        assert!(b.contains("nl.affine_range(8):"), "{b}");
        assert!(
            b.contains("nl.load(a[i * 128:(i + 1) * 128, :], dtype=nl.float32, stage_id=0)"),
            "{b}"
        );
        assert!(b.contains("nl.exp(t, dtype=nl.float32, stage_id=1)"), "{b}");
        // A stage id written before other keywords keeps its place when it changes.
        let placed = b.replace(
            "nl.exp(t, dtype=nl.float32, stage_id=1)",
            "nl.exp(t, stage_id=1, dtype=nl.float32)",
        );
        let moved_back = edit(
            &placed,
            "k",
            &site(),
            &Annotation::PerStatement(vec![0, 0, 1]),
        )
        .unwrap();
        assert!(
            moved_back.contains("nl.exp(t, stage_id=0, dtype=nl.float32)"),
            "{moved_back}"
        );
        // Back to no annotation: every keyword the user wrote stays, in order.
        let none = edit(&placed, "k", &site(), &Annotation::None).unwrap();
        assert!(none.contains("nl.exp(t, dtype=nl.float32)"), "{none}");
        assert!(
            none.contains("nl.load(a[i * 128:(i + 1) * 128, :], dtype=nl.float32)"),
            "{none}"
        );
        let first = placed.replace(
            "nl.exp(t, stage_id=1, dtype=nl.float32)",
            "nl.exp(stage_id=1, x=t)",
        );
        let none = edit(&first, "k", &site(), &Annotation::None).unwrap();
        assert!(none.contains("nl.exp(x=t)"), "{none}");
    }

    #[test]
    fn a_move_keeps_stages_non_decreasing_and_gap_free() {
        assert_eq!(moved(&[0, 1, 1, 2], 2, true), Some(vec![0, 1, 2, 2]));
        assert_eq!(moved(&[0, 1, 1, 2], 1, false), Some(vec![0, 0, 1, 2]));
        assert_eq!(moved(&[0, 1, 2], 0, true), Some(vec![0, 0, 1]));
        assert_eq!(moved(&[0, 1, 2], 1, true), Some(vec![0, 1, 1]));
        // Would decrease in program order, or go below stage 0, or leave one stage.
        assert_eq!(moved(&[0, 1, 1], 1, true), None);
        assert_eq!(moved(&[0, 0], 0, false), None);
        assert_eq!(moved(&[0, 1], 1, false), None);
    }
}
