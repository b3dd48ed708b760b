//! The limits of a run, each a diagnostic before the work it bounds: HBM tensors of more elements
//! than the simulator holds (E0901, [`check_size`]), and for the interpreter, which has no clock,
//! a kernel of more instruction instances or element operations than `--max-cycles` allows
//! (E0902, [`check_interp_budget`]).

use crate::driver::Failure;
use crate::error::RunError;
use penguin::Function;

/// Whether the kernel's HBM tensors (parameters, outputs, scratch) fit what `nkc run` holds: the
/// simulator's [`runtime_sim::sim::MAX_HBM_ELEMS`] elements over all of them, on either engine.
/// Checked on the Penguin IR before any input is made or read, whatever the front end accepted:
/// too large is E0901 at the largest tensor.
pub fn check_size(func: &Function) -> Result<(), Failure> {
    let limit = runtime_sim::sim::MAX_HBM_ELEMS;
    let hbm = || {
        func.tensors
            .iter()
            .filter(|(_, t)| t.memory == penguin::Memory::Hbm)
    };
    let elems = hbm()
        .map(|(_, t)| t.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d)))
        .fold(0u64, u64::saturating_add);
    if elems <= limit {
        return Ok(());
    }
    let Some((largest, data)) =
        hbm().max_by_key(|(_, t)| t.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d)))
    else {
        return Ok(());
    };
    let count = |n: u64| match n {
        u64::MAX => "2^64 or more".to_string(),
        n => n.to_string(),
    };
    let span = func
        .tensor_spans
        .get(largest)
        .copied()
        .flatten()
        .map_or(0..0, |s| s.range());
    Err(Failure::Diagnostics(vec![RunError::TooLargeToRun {
        kernel: func.name.clone(),
        elems: count(elems),
        limit,
        largest: data.name.clone(),
        shape: data.shape.clone(),
        at: span,
    }
    .to_diagnostic()]))
}

/// The instruction instances of a kernel (each instruction times the trip counts of its loops,
/// saturating), and the loop that runs most often in all, with that count.
fn instances(func: &Function) -> (u64, Option<(penguin::Axis, u64)>) {
    let (n, _, busiest) = compute_instances_and_work(func);
    (n, busiest)
}

/// The element operations of one instruction: the elements of its largest operand, or, for a
/// matmul, its multiply-adds over [`MACS_PER_ELEMENT`] (at least 1).
fn inst_work(func: &Function, inst: penguin::Inst) -> u64 {
    let Some(d) = func.insts.get(inst) else {
        return 1;
    };
    let elems = |o: &penguin::Operand| o.access.size.iter().fold(1u64, |a, &x| a.saturating_mul(x));
    let largest = std::iter::once(&d.dst)
        .chain(&d.srcs)
        .map(elems)
        .max()
        .unwrap_or(1);
    let work = match d.op {
        penguin::Op::Matmul { .. } => d.srcs.first().map_or(largest, |lhs| {
            let macs = elems(lhs).saturating_mul(d.dst.access.size.get(1).copied().unwrap_or(1));
            largest.max(macs / MACS_PER_ELEMENT)
        }),
        _ => largest,
    };
    work.max(1)
}

/// The instruction instances of a kernel and their element operations ([`inst_work`]), each
/// instruction times the trip counts of its loops (saturating), and the loop that runs most
/// often in all, with that count.
fn compute_instances_and_work(func: &Function) -> (u64, u64, Option<(penguin::Axis, u64)>) {
    fn walk(
        func: &Function,
        stmts: &[penguin::Stmt],
        times: u64,
        busiest: &mut Option<(penguin::Axis, u64)>,
    ) -> (u64, u64) {
        let (mut n, mut work) = (0u64, 0u64);
        for &s in stmts {
            let Some(data) = func.stmts.get(s) else {
                continue;
            };
            let (here, here_work) = match &data.kind {
                penguin::StmtKind::Insts(insts) => (
                    times.saturating_mul(insts.len() as u64),
                    insts
                        .iter()
                        .map(|&i| times.saturating_mul(inst_work(func, i)))
                        .fold(0u64, u64::saturating_add),
                ),
                penguin::StmtKind::Loop(axis) => {
                    let Some(a) = func.axes.get(*axis) else {
                        continue;
                    };
                    let inner = times.saturating_mul(a.trip_count().max(0) as u64);
                    if busiest.is_none_or(|(_, b)| inner > b) {
                        *busiest = Some((*axis, inner));
                    }
                    walk(func, &a.body, inner, busiest)
                }
            };
            n = n.saturating_add(here);
            work = work.saturating_add(here_work);
        }
        (n, work)
    }
    let mut busiest = None;
    let (n, work) = walk(func, &func.body, 1, &mut busiest);
    (n, work, busiest)
}

/// How many of the interpreter's matmul multiply-adds take the time of one element of another
/// operation (its matmul runs on register tiles: some 1.3 × 10^9 multiply-adds a second, against
/// some 10^8 elements of a copy or an add).
const MACS_PER_ELEMENT: u64 = 16;

/// The element operations the interpreter may spend per cycle of `--max-cycles`: one per
/// partition, 128, the rate at which one engine of the simulated core processes a tile, so that a
/// kernel the simulator runs under the limit interprets too. (At 16, the seqlen-4096 attention
/// tutorial kernels, which the simulator runs in 1.3 to 2.6 million cycles, were refused with
/// `--check`: they are 3.9 to 5.9 × 10^8 element operations.) A run at the default limit still
/// ends within seconds: the interpreter does some 5 × 10^8 element operations a second
/// (`attn_fwd_v4`'s 3.9 × 10^8 in 0.5 s), so 1.28 × 10^9 take 2 to 3 s.
pub const INTERP_WORK_PER_CYCLE: u64 = 128;

/// The interpreter has no clock: it refuses a kernel of more instruction instances than
/// `max_cycles`, or of more element operations than [`INTERP_WORK_PER_CYCLE`] times that (E0902),
/// which it would take too long to run.
pub(super) fn check_interp_budget(func: &Function, max_cycles: u64) -> Result<(), Failure> {
    let (n, work, _) = compute_instances_and_work(func);
    let work_limit = max_cycles.saturating_mul(INTERP_WORK_PER_CYCLE);
    if n > max_cycles {
        return Err(cycle_limit(
            func,
            max_cycles,
            format!("the interpreter would execute {n} instructions, more than the limit"),
        ));
    }
    if work > work_limit {
        return Err(cycle_limit(
            func,
            max_cycles,
            format!(
                "the interpreter would process {work} elements, more than {INTERP_WORK_PER_CYCLE} per cycle of the limit ({work_limit})"
            ),
        ));
    }
    Ok(())
}

/// E0902, at the loop of `func` that runs most often: a run over `--max-cycles`.
pub(super) fn cycle_limit(func: &Function, max_cycles: u64, detail: String) -> Failure {
    let (_, busiest) = instances(func);
    let busiest = busiest.map(|(axis, n)| {
        let span = func.axis_spans.get(axis).copied().flatten();
        (span.map_or(0..0, |s| s.range()), n)
    });
    Failure::Diagnostics(vec![RunError::CycleLimit {
        kernel: func.name.clone(),
        max_cycles,
        busiest,
        detail,
    }
    .to_diagnostic()])
}
