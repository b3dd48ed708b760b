//! The backend's static pass table ([`PASSES`]): each pass's name (the one `nkc compile
//! --print-after PASS` takes), the IR form it leaves, and the function that runs it on the
//! [`Context`]; and the one driver loop, [`Context::run`], that walks the table in order, timing,
//! verifying by IR form and printing each pass that ran.
//!
//! Two loops run through the table: `expand` sends the driver back to `lower-bir` while it gives a
//! tile one more ring slot (at most [`MAX_EXPANSIONS`] times), and `alloc`, when the
//! critical-path schedule's PSUM buffers do not fit the banks, starts the plan again from the
//! kernel as given with every body's PSUM budget (`schedule::schedule_bodies_fitting`).
//!
//! Invariant: a pass reads only what the passes before it in the table built; a pass that did
//! not apply returns [`Flow::Skip`] and is neither verified nor recorded.

use crate::codegen::emit::{self, SourceInfo};
use crate::codegen::{
    alloc, bir, bir_verify, clamp, hoist, modulo, queues, redundant, schedule, sync,
};
use crate::context::{built, Context, IrForm};
use crate::instrument::Form;
use crate::planned::Planned;
use crate::{assemble, expand_recurrence, BackendError, Compiled, MAX_EXPANSIONS};
use penguin::ir::TensorKind;
use runtime_sim::isa::{Role, TensorDecl};

/// Where the driver loop goes after a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The pass ran: verify and record it, then the next pass.
    Next,
    /// The pass ran: verify and record it, then the named pass.
    Goto(&'static str),
    /// The pass did not apply: nothing is recorded; then the named pass (`None`: the next).
    Skip(Option<&'static str>),
}

/// One pass of the table.
pub struct Pass {
    pub name: &'static str,
    /// The IR it leaves: how it is verified and printed.
    pub leaves: IrForm,
    pub run: fn(&mut Context<'_>) -> Result<Flow, BackendError>,
    /// The one-line summary printed for a form with no text (unused otherwise).
    pub summary: fn(&Context<'_>) -> String,
}

/// The backend's passes, in order.
pub static PASSES: &[Pass] = &[
    pass("lower-bir", IrForm::Bir, lower_bir),
    pass("schedule", IrForm::ScheduledBir, schedule_bodies),
    pass("modulo", IrForm::ScheduledBir, schedule_modulo),
    pass("expand", IrForm::Penguin, expand),
    summarised("alloc", IrForm::Allocated, allocate, alloc_summary),
    summarised("emit", IrForm::Emitted, emit_nodes, emit_summary),
    summarised("clamp", IrForm::Emitted, clamp_trips, clamp_summary),
    summarised("sync", IrForm::Synchronised, compute_sync, sync_summary),
    summarised(
        "prune-waits",
        IrForm::Synchronised,
        prune_waits,
        prune_summary,
    ),
    pass("assemble", IrForm::Program, assemble_program),
    pass("hoist", IrForm::Program, hoist_waits),
];

type Run = fn(&mut Context<'_>) -> Result<Flow, BackendError>;

const fn pass(name: &'static str, leaves: IrForm, run: Run) -> Pass {
    summarised(name, leaves, run, no_summary)
}

fn no_summary(_: &Context<'_>) -> String {
    String::new()
}

const fn summarised(
    name: &'static str,
    leaves: IrForm,
    run: Run,
    summary: fn(&Context<'_>) -> String,
) -> Pass {
    Pass {
        name,
        leaves,
        run,
        summary,
    }
}

/// The names of [`PASSES`], in order.
pub fn pass_names() -> impl Iterator<Item = &'static str> {
    PASSES.iter().map(|p| p.name)
}

impl Context<'_> {
    /// Runs every pass of [`PASSES`] in order (a pass may send the loop back to an earlier one),
    /// verifying and recording each one that ran; then returns the compiled kernel.
    pub fn run(mut self) -> Result<Compiled, BackendError> {
        let mut i = 0;
        if let Some(planned) = self.planned.take() {
            if self.adopts(&planned) {
                i = self.adopt(planned);
            }
        }
        while let Some(pass) = PASSES.get(i) {
            let next = match (pass.run)(&mut self)? {
                Flow::Skip(to) => to,
                flow @ (Flow::Next | Flow::Goto(_)) => {
                    self.verify(pass)?;
                    self.record(pass);
                    match flow {
                        Flow::Goto(to) => Some(to),
                        _ => None,
                    }
                }
            };
            i = match next {
                Some(name) => PASSES
                    .iter()
                    .position(|p| p.name == name)
                    .expect("invariant: a pass sends the loop to a pass of the table"),
                None => i + 1,
            };
        }
        self.finish()
    }

    /// Whether [`Context::run`] adopts `planned` ([`Context::with_planned`]): when none of the
    /// passes it ran is verified or printed (the plan keeps only the IR of its last round).
    fn adopts(&self, planned: &Planned) -> bool {
        !self.opts.verify && !(planned.passes.iter()).any(|p| self.instrument.print_after.wants(p))
    }

    /// Installs `planned` as the passes `lower-bir` to `expand` would have built it, records
    /// those passes as it ran them, and returns the index of the pass that follows them.
    fn adopt(&mut self, planned: Planned) -> usize {
        self.func = planned.func;
        self.bir = planned.bir;
        self.queue_plan = planned.queue_plan;
        self.schedules = planned.schedules;
        self.expansions = planned.expansions;
        for name in planned.passes {
            let pass = (PASSES.iter())
                .find(|p| p.name == name)
                .expect("invariant: a plan runs passes of the table");
            self.record(pass);
        }
        PASSES
            .iter()
            .position(|p| p.name == "alloc")
            .expect("invariant: the table allocates after planning")
    }

    /// Verifies the IR `pass` left, by its form, when [`Options::verify`] is on.
    fn verify(&self, pass: &Pass) -> Result<(), BackendError> {
        if !self.opts.verify {
            return Ok(());
        }
        let name = pass.name;
        match pass.leaves {
            IrForm::Penguin => penguin::verify::verify_function(&self.func)
                .map_err(|errors| BackendError::PenguinNotVerified { pass: name, errors }),
            IrForm::Bir | IrForm::ScheduledBir => {
                bir_verify::verify_after(&self.func, &self.bir, name)
            }
            IrForm::Program => runtime_sim::validate::validate(built(&self.program, "the program"))
                .map_err(|error| BackendError::ProgramNotValid { pass: name, error }),
            IrForm::Allocated | IrForm::Emitted | IrForm::Synchronised => Ok(()),
        }
    }

    /// Records `pass` in the instrument: its time, and the IR it left (a one-line summary for a
    /// form with no text).
    fn record(&mut self, pass: &Pass) {
        let form = match pass.leaves {
            IrForm::Penguin => Form::Penguin,
            IrForm::Bir | IrForm::ScheduledBir => Form::Bir,
            IrForm::Program => Form::Isa,
            IrForm::Allocated | IrForm::Emitted | IrForm::Synchronised => Form::Summary,
        };
        let cx = &*self;
        let text = || match form {
            Form::Penguin => penguin::write_function(&cx.func),
            Form::Bir => crate::codegen::bir::write_bir(&cx.func, &cx.bir),
            Form::Isa => runtime_sim::text::print(built(&cx.program, "the program")),
            Form::Summary => format!("# {}\n", (pass.summary)(cx)),
        };
        let text = if self.instrument.print_after.wants(pass.name) {
            text()
        } else {
            String::new()
        };
        self.instrument.record(pass.name, form, || text);
    }
}

/// `lower-bir`: [`bir::lower_function`].
fn lower_bir(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    cx.bir = bir::lower_function(&cx.func)?;
    Ok(Flow::Next)
}

/// `schedule`: the list scheduler, within the PSUM budgets once they are needed.
fn schedule_bodies(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    schedule::schedule_bodies_fitting(&cx.func, &mut cx.bir, cx.fit_psum);
    Ok(Flow::Next)
}

/// `modulo`: the queue plan, then the modulo scheduler on every flat loop body.
fn schedule_modulo(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    cx.queue_plan = queues::compute_queue_plan(&cx.func, &cx.bir);
    cx.schedules = modulo::schedule_loops(&cx.func, &mut cx.bir, &cx.queue_plan);
    Ok(Flow::Next)
}

/// `expand`: one more ring slot for the tile whose reuse bounds a pipelined loop, then the plan
/// again; nothing once [`MAX_EXPANSIONS`] slots were added.
fn expand(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    if cx.expansions.len() >= MAX_EXPANSIONS {
        return Ok(Flow::Skip(None));
    }
    Ok(
        match expand_recurrence(&mut cx.func, &cx.bir, &cx.schedules) {
            Some(note) => {
                cx.expansions.push(note);
                Flow::Goto("lower-bir")
            }
            None => Flow::Next,
        },
    )
}

/// `alloc`: [`alloc::allocate`]; when PSUM does not fit, the plan again from the kernel as
/// given, every body within its PSUM budget (once; the allocator's last resort waits for it).
fn allocate(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    match alloc::allocate(&cx.func, &cx.bir, !cx.fit_psum) {
        Ok(a) => {
            cx.alloc = Some(a);
            Ok(Flow::Next)
        }
        Err(BackendError::PsumOverflow { .. }) if !cx.fit_psum => {
            cx.fit_psum = true;
            cx.func = cx.input.clone();
            cx.expansions.clear();
            Ok(Flow::Skip(Some("lower-bir")))
        }
        Err(e) => Err(e),
    }
}

fn alloc_summary(cx: &Context<'_>) -> String {
    let a = built(&cx.alloc, "the allocation");
    let ranges = match a.exact {
        None => "",
        Some(alloc::FlatBodies::Span) => " (exact live ranges)",
        Some(alloc::FlatBodies::Exact) => {
            " (last resort: flat loop bodies share memory by iteration, which costs overlap)"
        }
    };
    format!(
        "SBUF {} bytes per partition, {} PSUM bank(s), {} HBM scratch arena(s){ranges}",
        a.sbuf_bytes,
        a.psum_banks,
        a.arenas.len()
    )
}

/// `emit`: [`emit::emit_nodes`], and the program's tensor declarations.
fn emit_nodes(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    let alloc = built(&cx.alloc, "the allocation");
    let info = cx.source.map(|text| SourceInfo { text });
    cx.emitted = Some(emit::emit_nodes(
        &cx.func,
        &cx.bir,
        alloc,
        &cx.queue_plan,
        info.as_ref(),
    )?);
    let func = &cx.func;
    cx.tensors = alloc
        .hbm
        .iter()
        .map(|&t| {
            let d = &func.tensors[t];
            TensorDecl {
                name: d.name.clone(),
                dtype: d.dtype,
                shape: d.shape.clone(),
                role: if func.params.contains(&t) {
                    Role::Input
                } else if d.kind == TensorKind::Const {
                    Role::Const
                } else {
                    Role::Output
                },
                values: func.consts.get(&t).cloned().unwrap_or_default(),
            }
        })
        .chain(alloc.arenas.iter().cloned())
        .collect();
    Ok(Flow::Next)
}

fn emit_summary(cx: &Context<'_>) -> String {
    format!(
        "{} instruction(s) in {} loop(s)",
        built(&cx.emitted, "the emitted nodes").nodes.len(),
        cx.bir.loops.len()
    )
}

/// `clamp`: the trip-clamped copy the synchronisation analysis runs on (same decisions, bounded
/// cost), with `clamp_trips`.
fn clamp_trips(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    let em = built(&cx.emitted, "the emitted nodes");
    cx.clamped = if cx.opts.clamp_trips {
        clamp::clamp_trips(em)
    } else {
        None
    };
    cx.clamped_loops = cx.clamped.as_ref().map_or(0, |s| {
        s.loops
            .values()
            .zip(em.loops.values())
            .filter(|(a, b)| a.0 != b.0)
            .count()
    });
    Ok(Flow::Next)
}

fn clamp_summary(cx: &Context<'_>) -> String {
    format!(
        "{} of {} loop(s) clamped for the synchronisation analysis",
        cx.clamped_loops,
        cx.bir.loops.len()
    )
}

/// `sync`: [`sync::compute_sync`] on the clamped copy when there is one.
fn compute_sync(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    let func = &cx.func;
    cx.peeled = cx
        .bir
        .loops
        .iter()
        .map(|(l, lp)| {
            let peeled = func.axes[lp.axis].attrs.pipelined.is_some_and(|p| p.peeled);
            (l, peeled)
        })
        .collect();
    let analysed = cx
        .clamped
        .as_ref()
        .unwrap_or(built(&cx.emitted, "the emitted nodes"));
    cx.sync = Some(sync::compute_sync(analysed, &cx.peeled));
    Ok(Flow::Next)
}

fn sync_summary(cx: &Context<'_>) -> String {
    let s = built(&cx.sync, "the synchronisation");
    format!(
        "{} semaphore(s), {} dependence(s) needing a wait, {} wait(s)",
        s.semaphores.len(),
        s.dependences,
        s.waits.values().map(Vec::len).sum::<usize>()
    )
}

/// `prune-waits`: the pruner on the analysed kernel, then its decisions realised on the real
/// kernel ([`sync::realise`]) when the analysis ran on the clamped copy.
fn prune_waits(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    let em = built(&cx.emitted, "the emitted nodes");
    let analysed = cx.clamped.as_ref().unwrap_or(em);
    let sync = cx
        .sync
        .as_mut()
        .expect("invariant: `sync` runs before `prune-waits`");
    cx.pruned = (cx.prune)(analysed, sync, &cx.tensors);
    if cx.clamped.is_some() {
        *sync = sync::realise(em, sync);
    }
    Ok(Flow::Next)
}

fn prune_summary(cx: &Context<'_>) -> String {
    format!(
        "{} wait(s) pruned, {} kept",
        cx.pruned,
        built(&cx.sync, "the synchronisation")
            .waits
            .values()
            .map(Vec::len)
            .sum::<usize>()
    )
}

/// `assemble`: the final set of waits and signals ([`redundant::drop_redundant_waits`]), then
/// [`assemble()`], one in-order stream per engine.
fn assemble_program(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    let em = built(&cx.emitted, "the emitted nodes");
    let sync = cx
        .sync
        .as_mut()
        .expect("invariant: `sync` runs before `assemble`");
    cx.redundant = redundant::drop_redundant_waits(em, sync);
    cx.program = Some(assemble(em, sync, std::mem::take(&mut cx.tensors)));
    Ok(Flow::Next)
}

/// `hoist`: [`hoist::hoist_invariant_waits`].
fn hoist_waits(cx: &mut Context<'_>) -> Result<Flow, BackendError> {
    let program = cx
        .program
        .as_mut()
        .expect("invariant: `assemble` runs before `hoist`");
    hoist::hoist_invariant_waits(
        program,
        built(&cx.emitted, "the emitted nodes"),
        built(&cx.sync, "the synchronisation"),
        &cx.peeled,
    );
    Ok(Flow::Next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use crate::instrument::Instrument;

    /// A PSUM accumulation over two iterations: no tile to expand, so every pass runs once.
    const KERNEL: &str = r#"kernel acc(x, y) -> (z) {
  tensor x: hbm f32[256, 128] input
  tensor y: hbm f32[256, 512] input
  tensor z: hbm f32[128, 512] output
  tensor acc: psum f32[128, 512] local
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf f32[128, 512] local
  tensor res: sbuf f32[128, 512] local
  loop k in 0..2 affine {
    stmt {
      lhs[0 +: 128, 0 +: 128] = load.dma x[128*k +: 128, 0 +: 128]
    }
    stmt {
      rhs[0 +: 128, 0 +: 512] = load.dma y[128*k +: 128, 0 +: 512]
    }
    stmt {
      acc[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 0 +: 128], rhs[0 +: 128, 0 +: 512]
    }
  }
  stmt {
    res[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 0 +: 512]
  }
  stmt {
    z[0 +: 128, 0 +: 512] = store.dma res[0 +: 128, 0 +: 512]
  }
}
"#;

    fn no_pruning(
        _: &crate::codegen::emit::Emitted,
        _: &mut sync::Sync,
        _: &[TensorDecl],
    ) -> usize {
        0
    }

    #[test]
    fn the_driver_loop_records_every_pass_of_the_table_in_order() {
        let func = penguin::parse_function(KERNEL).expect("the test kernel parses");
        let mut instrument = Instrument::default();
        let opts = Options {
            clamp_trips: true,
            verify: true,
        };
        Context::new(&func, None, opts, &no_pruning, &mut instrument)
            .run()
            .expect("the test kernel compiles");
        let ran: Vec<&str> = instrument.times.iter().map(|t| t.pass.as_str()).collect();
        assert_eq!(ran, pass_names().collect::<Vec<_>>());
    }

    #[test]
    fn a_verifier_failure_names_the_pass() {
        let func = penguin::parse_function(KERNEL).expect("the test kernel parses");
        let mut instrument = Instrument::default();
        let opts = Options {
            clamp_trips: true,
            verify: true,
        };
        let mut cx = Context::new(&func, None, opts, &no_pruning, &mut instrument);
        assert_eq!(lower_bir(&mut cx), Ok(Flow::Next));
        let schedule = &PASSES[1];
        assert_eq!(schedule.name, "schedule");
        assert_eq!(cx.verify(schedule), Ok(()));
        // A node in two places breaks BIR's structure.
        let first = cx.bir.body[0];
        cx.bir.body.push(first);
        match cx.verify(schedule) {
            Err(BackendError::BirNotVerified { pass, errors }) => {
                assert_eq!(pass, "schedule");
                assert!(!errors.is_empty());
            }
            other => panic!("expected an internal error, got {other:?}"),
        }
        cx.opts.verify = false;
        assert_eq!(cx.verify(schedule), Ok(()));
    }
}
