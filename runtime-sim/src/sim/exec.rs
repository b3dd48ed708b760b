//! The event loop: engines run their streams in order, in simulated-time order.
//!
//! At every step the runnable engine with the smallest clock (ties: engine order) executes its
//! next instruction at that time. Compute instructions occupy their engine for the cost table's
//! cycles; `dma` occupies `sp` for `MIN_II` and its transfer completes at
//! `max(issue end + latency, queue free) + bytes / 19` on its queue, which is when its signal is
//! counted. A `wait` not yet satisfied moves its engine's clock to the time its count is reached
//! (when enough signals are known) or blocks it (when not); any new signal on the semaphore
//! re-evaluates the waiters from the time they started waiting.
//!
//! A predicated-off instruction takes no time and touches nothing, but still signals: at once,
//! except a predicated-off `dma`, whose signal keeps its semaphore's increments in issue order:
//! it is counted once every signal issued earlier to that semaphore has been counted
//! (`max(issue time, latest earlier signal)`). So a semaphore that one `dma` instruction signals
//! counts exactly its instances completed (on or off), with no wait needed to keep it so, and an
//! off instance is not held behind unrelated transfers of its queue (a prefetch issued before it
//! on the same queue does not delay it).
//!
//! Undefined values ([`vocab::poison`]), with numerics on: SBUF, PSUM and the HBM outputs and
//! scratch tensors ([`Role::Output`], [`Role::Scratch`]) start undefined. Reading an undefined
//! element is not an error: its value is poison, which every operation propagates by the shared
//! rules (elementwise per element, row operations per row, matmul per column of its operands). A
//! transfer that would write an undefined element into an HBM output or scratch tensor is a
//! [`SimError::Uninitialised`], never a silent value: that is where garbage becomes observable.
//!
//! Choices MACHINE.md leaves open: a transfer starts its latency when `sp` finishes issuing it;
//! its bytes are the HBM side's (elements × the tensor's dtype size); a wait that is satisfied
//! and a signal take no time; a predicated-off `wait` does not wait. Signals are known as soon as
//! their producer is processed, and every producer is processed at a time no later than its
//! signal's, so an engine is never released late. Values are computed when an instruction is
//! processed, which is after everything a semaphore chain orders before it.

use super::memory::{resolve, resolve_hbm, AccessError, Resolved, Space, Storage};
#[cfg(test)]
use super::race::reference;
use super::race::{engine_thread, join, queue_thread, Detector, Footprint, Vc, THREADS};
use super::trace::{Slice, Track};
use super::*;
use crate::isa::*;
use crate::machine::{dma_issue_cycles, dma_queue_cycles, DMA_LATENCY};
use crate::numerics;
use crate::text::inst_to_string;
use std::rc::Rc;
use vocab::poison::{self, Undef};

struct Frame<'p> {
    stmts: &'p [Stmt],
    pc: usize,
    /// The loop's register, trip count and current iteration (none for the stream itself).
    lp: Option<(Reg, u64, u64)>,
}

struct EngineState<'p> {
    engine: Engine,
    frames: Vec<Frame<'p>>,
    regs: [i64; MAX_REGS],
    time: u64,
    /// The instruction fetched but not yet executed (a wait not yet satisfied).
    pending: Option<&'p Inst>,
    blocked: bool,
    /// The semaphore and the time the current wait started.
    waiting: Option<(usize, u64)>,
    done: bool,
    clock: Vc,
}

/// Per semaphore, which engines' streams hold a wait on it.
fn waits_on(p: &Program) -> Vec<[bool; 5]> {
    fn walk(stmts: &[Stmt], engine: usize, out: &mut [[bool; 5]]) {
        for s in stmts {
            match s {
                Stmt::Inst(i) => {
                    if let Op::Wait { sem, .. } = i.op {
                        if let Some(w) = out.get_mut(sem) {
                            w[engine] = true;
                        }
                    }
                }
                Stmt::Loop(l) => walk(&l.body, engine, out),
            }
        }
    }
    let mut out = vec![[false; 5]; p.semaphores.len()];
    for e in Engine::ALL {
        walk(p.stream(e), e.index(), &mut out);
    }
    out
}

fn has_inst(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Inst(_) => true,
        Stmt::Loop(l) => l.trip > 0 && has_inst(&l.body),
    })
}

impl<'p> EngineState<'p> {
    fn fetch(&mut self) -> Option<&'p Inst> {
        loop {
            let f = self.frames.last_mut()?;
            if f.pc < f.stmts.len() {
                let s = &f.stmts[f.pc];
                f.pc += 1;
                match s {
                    Stmt::Inst(i) => return Some(i),
                    Stmt::Loop(l) => {
                        if l.trip > 0 && has_inst(&l.body) {
                            self.regs[l.reg.0 as usize] = 0;
                            self.frames.push(Frame {
                                stmts: &l.body,
                                pc: 0,
                                lp: Some((l.reg, l.trip, 0)),
                            });
                        }
                    }
                }
            } else {
                match &mut f.lp {
                    Some((reg, trip, iter)) if *iter + 1 < *trip => {
                        *iter += 1;
                        f.pc = 0;
                        self.regs[reg.0 as usize] = *iter as i64;
                    }
                    _ => {
                        self.frames.pop();
                    }
                }
            }
        }
    }

    fn iters(&self) -> Vec<(u8, i64)> {
        self.frames
            .iter()
            .filter_map(|f| f.lp.map(|(r, _, i)| (r.0, i as i64)))
            .collect()
    }
}

/// A semaphore's signals, sorted by time, with the prefix joins of their clocks: only the
/// window of them that can still matter ([`Sim::compact`] drops the others).
///
/// A signal is dropped once no query can tell it apart from a plain count: its time is at or below every
/// time an unfinished engine can still act at (so it is counted by every later `count_by` and no
/// later signal sorts before it), and, with the race detector on, its prefix join is below the
/// clock of every unfinished engine that waits on the semaphore (so joining it again, as a wait
/// whose count it is would, changes nothing). Dropped signals leave their number in `base` and
/// the prefix join of the last one in `base_prefix`, so the clocks and counts of the window are
/// those of the whole history.
struct Sem {
    /// Signals dropped from the front of the window.
    base: u64,
    /// The prefix join of every dropped signal's clock.
    base_prefix: Vc,
    /// The latest signal time ever counted.
    last: Option<u64>,
    times: Vec<u64>,
    clocks: Vec<Vc>,
    prefix: Vec<Vc>,
    /// The window's length at which the next compaction runs.
    cap: usize,
}

/// The smallest window a compaction leaves room for (later ones run when the window doubles).
pub(crate) const SEM_WINDOW: usize = 64;

impl Sem {
    /// An empty semaphore whose window is compacted first at `window` signals.
    fn new(window: usize) -> Sem {
        Sem {
            base: 0,
            base_prefix: [0; THREADS],
            last: None,
            times: Vec::new(),
            clocks: Vec::new(),
            prefix: Vec::new(),
            cap: window,
        }
    }

    fn add(&mut self, time: u64, clock: Option<&Vc>) {
        self.last = Some(self.last.map_or(time, |l| l.max(time)));
        let j = self.times.partition_point(|&t| t <= time);
        self.times.insert(j, time);
        if let Some(c) = clock {
            self.clocks.insert(j, *c);
            self.prefix.truncate(j);
            for k in j..self.clocks.len() {
                let mut v = self.clocks[k];
                join(
                    &mut v,
                    if k > 0 {
                        &self.prefix[k - 1]
                    } else {
                        &self.base_prefix
                    },
                );
                self.prefix.push(v);
            }
        }
    }

    /// Signals counted by `time` (which is no earlier than any dropped signal's).
    fn count_by(&self, time: u64) -> u64 {
        self.base + self.times.partition_point(|&t| t <= time) as u64
    }

    /// Signals counted in all.
    fn total(&self) -> u64 {
        self.base + self.times.len() as u64
    }

    /// The time of the `n`-th signal (1-based), when it is in the window.
    fn time_of(&self, n: u64) -> Option<u64> {
        let k = n.checked_sub(self.base + 1)?;
        self.times.get(usize::try_from(k).ok()?).copied()
    }

    /// The prefix join of the first `n` signals' clocks (`n ≥ 1`), or `None` when the `n`-th was
    /// dropped (its join is below every waiter's clock: joining it changes nothing).
    fn prefix_of(&self, n: u64) -> Option<&Vc> {
        let k = n.checked_sub(self.base + 1)?;
        self.prefix.get(usize::try_from(k).ok()?)
    }

    /// Drops the first `n` signals of the window.
    fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        if let Some(p) = self.prefix.get(n - 1) {
            self.base_prefix = *p;
        }
        self.times.drain(..n);
        self.clocks.drain(..n.min(self.clocks.len()));
        self.prefix.drain(..n.min(self.prefix.len()));
        self.base += n as u64;
    }
}

/// Which race detector runs: the rectangle one, or (tests only) the element-by-element oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RaceMode {
    Rect,
    #[cfg(test)]
    Exact,
}

/// The race detector of a run.
enum Races<W> {
    Rect(Detector<W>),
    #[cfg(test)]
    Exact(reference::Detector<W>),
}

impl<W: Clone> Races<W> {
    fn needs_prune(&self) -> bool {
        match self {
            Races::Rect(d) => d.needs_prune(),
            #[cfg(test)]
            Races::Exact(d) => d.needs_prune(),
        }
    }

    fn prune(&mut self, live: &[Vc]) {
        match self {
            Races::Rect(d) => d.prune(live),
            #[cfg(test)]
            Races::Exact(d) => d.prune(live),
        }
    }

    fn prunes(&self) -> u64 {
        match self {
            Races::Rect(d) => d.prunes(),
            #[cfg(test)]
            Races::Exact(d) => d.prunes(),
        }
    }
}

/// A reportable execution: which instruction, where.
#[derive(Clone)]
struct Who<'p> {
    engine: Engine,
    inst: &'p Inst,
    iters: Vec<(u8, i64)>,
}

/// How often (in processed instructions) a run reports its [`Progress`].
const PROGRESS_EVERY: u64 = 1 << 16;

struct Sim<'p, 'f> {
    prog: &'p Program,
    /// Told how far the run is, every [`PROGRESS_EVERY`] instructions.
    progress: &'f mut dyn FnMut(Progress),
    /// Instructions processed (a wait that blocks and resumes counts each time): with the clock,
    /// what `max_cycles` bounds.
    steps: u64,
    opts: Options,
    engines: Vec<EngineState<'p>>,
    sems: Vec<Sem>,
    /// The window length of a semaphore's first compaction ([`SEM_WINDOW`]; tests vary it).
    sem_window: usize,
    /// Per semaphore, per engine ([`Engine::index`]): whether the engine's stream waits on it.
    waits_on: Vec<[bool; 5]>,
    storage: Option<Storage>,
    queue_free: [u64; crate::machine::DMA_QUEUES],
    queue_epoch: [u32; crate::machine::DMA_QUEUES],
    stats: Stats,
    /// Records share their instruction execution's [`Who`].
    detector: Races<Rc<Who<'p>>>,
    /// Whether resolved patterns carry their element offsets (numerics, or the exact detector).
    offsets: bool,
    races: Vec<Race>,
    race_pairs: Vec<(*const Inst, *const Inst)>,
    trace: Vec<Slice>,
    last_time: u64,
}

fn info(p: &Program, w: &Who<'_>) -> InstInfo {
    InstInfo {
        engine: w.engine,
        line: w.inst.pos,
        text: inst_to_string(p, w.inst),
        iters: w.iters.clone(),
    }
}

pub(super) fn run(
    p: &Program,
    inputs: &[Array],
    opts: &Options,
    mode: RaceMode,
    sem_window: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimResult, SimError> {
    let dataless = check_inputs(p, inputs, opts)?;
    let storage = if opts.numerics {
        Some(initial_storage(p, inputs)?)
    } else {
        None
    };
    let mut sim = Sim {
        prog: p,
        progress,
        steps: 0,
        opts: *opts,
        engines: initial_engines(p),
        sems: (0..p.semaphores.len())
            .map(|_| Sem::new(sem_window))
            .collect(),
        sem_window,
        waits_on: waits_on(p),
        storage,
        queue_free: [0; crate::machine::DMA_QUEUES],
        queue_epoch: [0; crate::machine::DMA_QUEUES],
        stats: Stats::default(),
        detector: match mode {
            RaceMode::Rect => Races::Rect(Detector::new()),
            #[cfg(test)]
            RaceMode::Exact => Races::Exact(reference::Detector::new()),
        },
        offsets: opts.numerics || (opts.races && mode != RaceMode::Rect),
        races: Vec::new(),
        race_pairs: Vec::new(),
        trace: Vec::new(),
        last_time: 0,
    };
    sim.run()?;
    Ok(SimResult {
        outputs: outputs(p, sim.storage.as_ref(), dataless),
        stats: sim.stats,
        races: sim.races,
        trace: sim.trace,
    })
}

/// Checks the inputs against the program's input tensors (and HBM's size, when data moves);
/// returns whether the run is timing only, without data (see `simulate`).
fn check_inputs(p: &Program, inputs: &[Array], opts: &Options) -> Result<bool, SimError> {
    let input_decls: Vec<&TensorDecl> =
        p.tensors.iter().filter(|t| t.role == Role::Input).collect();
    let dataless = !opts.numerics && inputs.is_empty();
    if !dataless && inputs.len() != input_decls.len() {
        return Err(SimError::Input(format!(
            "the program has {} input tensors but {} inputs were given",
            input_decls.len(),
            inputs.len()
        )));
    }
    if !dataless {
        check_hbm_size(p)?;
    }
    for (d, a) in input_decls.iter().zip(inputs) {
        let want: Vec<usize> = d.shape.iter().map(|&x| x as usize).collect();
        if a.shape != want || a.data.len() as u64 != d.elems() {
            return Err(SimError::Input(format!(
                "input `{}` has shape {:?}, but the program declares {:?}",
                d.name, a.shape, want
            )));
        }
    }
    Ok(dataless)
}

/// HBM at the start: the inputs rounded to their dtypes, zero outputs, NaN scratch. Memory the
/// process cannot get is an error ([`SimError::Input`]), not an abort.
fn initial_storage(p: &Program, inputs: &[Array]) -> Result<Storage, SimError> {
    let mut it = inputs.iter();
    let mut hbm = Vec::with_capacity(p.tensors.len());
    for t in &p.tensors {
        let n = match t.role {
            Role::Input => it.as_slice().first().map_or(0, |a| a.data.len()),
            _ => t.elems() as usize,
        };
        let mut data: Vec<f32> = Vec::new();
        data.try_reserve_exact(n).map_err(|_| {
            SimError::Input(format!(
                "cannot allocate the {n} elements of tensor `{}`: out of memory",
                t.name
            ))
        })?;
        match t.role {
            Role::Input => {
                if let Some(a) = it.next() {
                    data.extend(a.data.iter().map(|&x| numerics::round_to(t.dtype, x)));
                }
            }
            Role::Const => {
                let values = t.values.iter().take(n);
                data.extend(values.map(|&x| numerics::round_to(t.dtype, x)));
                // A program built without its values (the text form requires them): NaN.
                data.resize(n, f32::NAN);
            }
            Role::Output => data.resize(n, 0.0),
            // Undefined until written: storing an undefined value here is an error.
            Role::Scratch => data.resize(n, f32::NAN),
        }
        hbm.push(data);
    }
    let tracked: Vec<bool> = (p.tensors.iter())
        .map(|t| matches!(t.role, Role::Scratch | Role::Output))
        .collect();
    Ok(Storage::new(hbm, &tracked))
}

/// Every engine at the start of its stream, at time 0.
fn initial_engines(p: &Program) -> Vec<EngineState<'_>> {
    Engine::ALL
        .iter()
        .map(|&e| {
            let mut clock = [0u32; THREADS];
            clock[engine_thread(e)] = 1;
            EngineState {
                engine: e,
                frames: vec![Frame {
                    stmts: p.stream(e),
                    pc: 0,
                    lp: None,
                }],
                regs: [0; MAX_REGS],
                time: 0,
                pending: None,
                blocked: false,
                waiting: None,
                done: false,
                clock,
            }
        })
        .collect()
}

/// The output tensors at the end of a run: their data, or zeros without numerics (nothing for
/// a dataless run).
fn outputs(p: &Program, storage: Option<&Storage>, dataless: bool) -> Vec<(String, Array)> {
    let mut outputs = Vec::new();
    for (i, t) in p.tensors.iter().enumerate() {
        if t.role == Role::Output {
            let data = match storage {
                Some(s) => s.hbm[i].clone(),
                None if dataless => Vec::new(),
                None => vec![0.0; t.elems() as usize],
            };
            outputs.push((
                t.name.clone(),
                Array {
                    shape: t.shape.iter().map(|&d| d as usize).collect(),
                    data,
                },
            ));
        }
    }
    outputs
}

impl<'p> Sim<'p, '_> {
    fn run(&mut self) -> Result<(), SimError> {
        loop {
            let mut best: Option<usize> = None;
            for (i, e) in self.engines.iter().enumerate() {
                if !e.done && !e.blocked && best.is_none_or(|b| e.time < self.engines[b].time) {
                    best = Some(i);
                }
            }
            let Some(ei) = best else {
                if self.engines.iter().all(|e| e.done) {
                    break;
                }
                return Err(self.deadlock());
            };
            let e = &mut self.engines[ei];
            let inst = match e.pending.take().or_else(|| e.fetch()) {
                Some(i) => i,
                None => {
                    e.done = true;
                    self.stats.engines[ei].finish = e.time;
                    continue;
                }
            };
            self.step(ei, inst)?;
            self.steps += 1;
            let clock = self.engines[ei].time.max(self.last_time);
            if clock > self.opts.max_cycles || self.steps > self.opts.max_cycles {
                return Err(SimError::CycleLimit {
                    limit: self.opts.max_cycles,
                    cycle: clock,
                    instructions: self.steps,
                });
            }
            if self.steps.is_multiple_of(PROGRESS_EVERY) {
                (self.progress)(Progress {
                    instructions: self.stats.instructions(),
                    cycle: clock,
                });
            }
            if self.opts.races && self.detector.needs_prune() {
                let live: Vec<Vc> = self
                    .engines
                    .iter()
                    .filter(|e| !e.done)
                    .map(|e| e.clock)
                    .collect();
                self.detector.prune(&live);
            }
        }
        let last_engine = self.engines.iter().map(|e| e.time).max().unwrap_or(0);
        self.stats.cycles = last_engine.max(self.last_time);
        self.stats.race_prunes = self.detector.prunes();
        Ok(())
    }

    fn who(&self, ei: usize, inst: &'p Inst) -> Who<'p> {
        Who {
            engine: self.engines[ei].engine,
            inst,
            iters: self.engines[ei].iters(),
        }
    }

    fn deadlock(&self) -> SimError {
        let cycle = self.engines.iter().map(|e| e.time).max().unwrap_or(0);
        let blocked = self
            .engines
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.done)
            .filter_map(|(i, e)| {
                let inst = e.pending?;
                let Op::Wait { sem, value } = &inst.op else {
                    return None;
                };
                Some(Blocked {
                    inst: info(self.prog, &self.who(i, inst)),
                    semaphore: self.prog.semaphores[*sem].clone(),
                    needs: value.eval(&e.regs),
                    has: self.sems[*sem].total(),
                })
            })
            .collect();
        SimError::Deadlock { cycle, blocked }
    }

    /// Counts a signal of `sem` at `time` published with `clock`, and re-evaluates its waiters.
    fn signal(&mut self, sem: usize, time: u64, clock: &Vc) {
        let races = self.opts.races;
        self.sems[sem].add(time, races.then_some(clock));
        if self.sems[sem].times.len() >= self.sems[sem].cap {
            self.compact(sem);
        }
        self.stats.sem_window_peak = self
            .stats
            .sem_window_peak
            .max(self.sems[sem].times.len() as u64);
        self.last_time = self.last_time.max(time);
        for e in &mut self.engines {
            if let Some((s, since)) = e.waiting {
                if s == sem {
                    e.blocked = false;
                    e.time = since;
                }
            }
        }
    }

    /// Drops the signals of `sem` that no query can tell from a count (see [`Sem`]), and sets
    /// the window length of the next compaction to twice what is left (so compactions cost O(1)
    /// per signal, amortised).
    fn compact(&mut self, sem: usize) {
        let live = || self.engines.iter().filter(|e| !e.done);
        // The earliest time any unfinished engine can still act at: a waiting engine resumes at
        // the time its wait started, the others at their clock.
        let floor = live()
            .map(|e| e.waiting.map_or(e.time, |(_, since)| since.min(e.time)))
            .min()
            .unwrap_or(u64::MAX);
        let waiters: Vec<&Vc> = live()
            .filter(|e| self.waits_on[sem][e.engine.index()])
            .map(|e| &e.clock)
            .collect();
        let s = &self.sems[sem];
        let races = self.opts.races;
        let below = |a: &Vc, b: &Vc| a.iter().zip(b).all(|(x, y)| x <= y);
        // A signal at the floor itself is counted by every query still to come (they all ask
        // at the floor or later), and a later signal at that time sorts after it: it goes too,
        // or a loop of signals that take no time would keep every one of them.
        let n = (0..s.times.len())
            .take_while(|&k| {
                s.times[k] <= floor
                    && (!races
                        || s.prefix
                            .get(k)
                            .is_some_and(|p| waiters.iter().all(|c| below(p, c))))
            })
            .count();
        let s = &mut self.sems[sem];
        s.drop_front(n);
        s.cap = (2 * s.times.len()).max(self.sem_window);
    }

    /// An engine's own signal: publish its clock, then advance its epoch.
    fn engine_signal(&mut self, ei: usize, sem: usize, time: u64) {
        let clock = self.engines[ei].clock;
        self.signal(sem, time, &clock);
        let own = engine_thread(self.engines[ei].engine);
        self.engines[ei].clock[own] += 1;
    }

    fn step(&mut self, ei: usize, inst: &'p Inst) -> Result<(), SimError> {
        let t = self.engines[ei].time;
        let on = {
            let regs = &self.engines[ei].regs;
            inst.pred
                .iter()
                .all(|c| c.op.holds(c.lhs.eval(regs), c.rhs.eval(regs)))
        };
        if !on {
            self.stats.engines[ei].predicated_off += 1;
            if let Op::Signal { sem } = inst.op {
                self.engine_signal(ei, sem, t);
            }
            if let Some(sem) = inst.signal {
                match inst.op {
                    Op::Dma { .. } => self.dma_marker(ei, sem, t),
                    _ => self.engine_signal(ei, sem, t),
                }
            }
            return Ok(());
        }
        let end = match &inst.op {
            Op::Wait { sem, value } => {
                let need = value.eval(&self.engines[ei].regs);
                let e = &mut self.engines[ei];
                let since = match e.waiting {
                    Some((_, s)) => s,
                    None => t,
                };
                let s = &self.sems[*sem];
                let satisfied = need <= 0 || (need as u128) <= s.count_by(t) as u128;
                if !satisfied {
                    e.pending = Some(inst);
                    e.waiting = Some((*sem, since));
                    // `need` is above the count by `t`, so its signal, when known, is in the window.
                    match u64::try_from(need).ok().and_then(|n| s.time_of(n)) {
                        Some(at) => e.time = at.max(since),
                        None => e.blocked = true,
                    }
                    return Ok(());
                }
                e.waiting = None;
                if self.opts.races && need > 0 {
                    if let Some(pre) = s.prefix_of(need as u64) {
                        join(&mut e.clock, pre);
                    }
                }
                if recording(&self.trace, &mut self.stats, self.opts.trace && t > since) {
                    self.trace.push(Slice {
                        track: Track::Engine(e.engine),
                        name: format!("wait {}", self.prog.semaphores[*sem]),
                        start: since,
                        end: t,
                        inst: inst_to_string(self.prog, inst),
                        meta: inst.meta.clone(),
                        iters: e.iters(),
                    });
                }
                t
            }
            Op::Signal { sem } => {
                self.engine_signal(ei, *sem, t);
                t
            }
            Op::Dma {
                queue,
                dst,
                src,
                index,
                mode,
            } => self.dma(ei, inst, *queue, (dst, src), (index.as_ref(), *mode), t)?,
            op => self.compute(ei, inst, op, t)?,
        };
        let e = &mut self.engines[ei];
        e.time = end;
        self.stats.engines[ei].instructions += 1;
        self.stats.engines[ei].busy += end - t;
        *self.stats.opcodes.entry(inst.op.name()).or_insert(0) += 1;
        if let Some(sem) = inst.signal {
            if !matches!(inst.op, Op::Dma { .. }) {
                self.engine_signal(ei, sem, end);
            }
        }
        Ok(())
    }

    fn access_error(&self, ei: usize, inst: &'p Inst, error: AccessError) -> SimError {
        SimError::Access {
            inst: info(self.prog, &self.who(ei, inst)),
            error: Box::new(error),
        }
    }

    fn resolve(&mut self, ei: usize, inst: &'p Inst, ap: &Ap) -> Result<Resolved, SimError> {
        let r = resolve(ap, &self.engines[ei].regs, self.offsets)
            .map_err(|m| self.access_error(ei, inst, m))?;
        match r.space {
            Space::Sbuf => self.stats.sbuf_high_water = self.stats.sbuf_high_water.max(r.hi),
            Space::Psum => self.stats.psum_high_water = self.stats.psum_high_water.max(r.hi),
            Space::Hbm(_) => {}
        }
        Ok(r)
    }

    fn check_races(
        &mut self,
        thread: usize,
        clock: &Vc,
        who: &Rc<Who<'p>>,
        accesses: &[(&Resolved, bool)],
    ) {
        for (r, write) in accesses {
            let mut found = Vec::new();
            let report = |prev: &Rc<Who<'p>>, prev_w, space, ov| {
                found.push((prev.clone(), prev_w, space, ov));
            };
            match &mut self.detector {
                Races::Rect(d) => d.access(thread, clock, *write, Footprint::of(r), who, report),
                #[cfg(test)]
                Races::Exact(d) => d.access(
                    thread,
                    clock,
                    *write,
                    reference::Footprint::of(r),
                    who,
                    report,
                ),
            }
            for (prev, prev_w, space, (parts, bytes)) in found {
                let key = (prev.inst as *const Inst, who.inst as *const Inst);
                if self.races.len() >= self.opts.max_races || self.race_pairs.contains(&key) {
                    continue;
                }
                self.race_pairs.push(key);
                let memory = match space {
                    Space::Sbuf => "sbuf".to_string(),
                    Space::Psum => "psum".to_string(),
                    Space::Hbm(t) => format!("hbm {}", self.prog.tensors[t].name),
                };
                self.races.push(Race {
                    first: info(self.prog, &prev),
                    first_writes: prev_w,
                    second: info(self.prog, who),
                    second_writes: *write,
                    memory,
                    partitions: parts,
                    bytes,
                });
            }
        }
    }

    fn dma(
        &mut self,
        ei: usize,
        inst: &'p Inst,
        queue: u8,
        (dst, src): (&DmaSide, &DmaSide),
        (index, mode): (Option<&Ap>, DmaMode),
        t: u64,
    ) -> Result<u64, SimError> {
        let offsets = self.offsets;
        let side = |s: &DmaSide, this: &mut Self| -> Result<Resolved, SimError> {
            match s {
                DmaSide::Tile(a) => this.resolve(ei, inst, a),
                DmaSide::Hbm(h) => resolve_hbm(
                    h,
                    &this.prog.tensors[h.tensor],
                    &this.engines[ei].regs,
                    offsets,
                )
                .map_err(|m| this.access_error(ei, inst, m)),
            }
        };
        let mut d = side(dst, self)?;
        let mut s = side(src, self)?;
        let hbm_dtype = match (&d.space, &s.space) {
            (Space::Hbm(_), _) => d.dtype,
            _ => s.dtype,
        };
        let tile_elems = match (&d.space, &s.space) {
            (Space::Hbm(_), _) => s.np as u64 * s.free,
            _ => d.np as u64 * d.free,
        };
        let bytes = tile_elems.saturating_mul(hbm_dtype.size_bytes());
        // An indirect DMA: the HBM side's rows by the index tile's values (one descriptor each);
        // `boxes` keeps the whole HBM box for the race detector.
        let mut boxes = None;
        // With `skip_oob`, the partitions whose index is in range (`None`: all of them).
        let mut kept: Option<Vec<bool>> = None;
        let mut busy = dma_queue_cycles(bytes);
        if let Some(idx) = index {
            let ir = self.resolve(ei, inst, idx)?;
            let rows = ir.np as u64;
            busy = rows.saturating_mul(dma_queue_cycles(bytes / rows.max(1)));
            let hbm_is_dst = matches!(d.space, Space::Hbm(_));
            let h = if hbm_is_dst { &d } else { &s };
            let remapped = match &self.storage {
                Some(st) if !h.offsets.is_empty() => {
                    let (vals, undef) = st.read(&ir);
                    // An undefined index would choose an address: the undefined-data error.
                    if let (Space::Hbm(t), Some(_)) = (h.space, &undef) {
                        return Err(SimError::Uninitialised {
                            inst: info(self.prog, &self.who(ei, inst)),
                            tensor: self.prog.tensors[t].name.clone(),
                            element: h.offsets[0],
                        });
                    }
                    let per = match index_dims(h) {
                        Some(x) => x,
                        None => return Err(self.access_error(ei, inst, AccessError::IndexRows)),
                    };
                    let (b, inner) = per;
                    let mut offs = Vec::with_capacity(h.offsets.len().min((rows * inner) as usize));
                    for (p, &v) in vals.iter().enumerate() {
                        let out = v < 0.0 || v as f64 >= b as f64;
                        if mode.skip_oob && out && v.fract() == 0.0 {
                            kept.get_or_insert_with(|| vec![true; vals.len()])[p] = false;
                            continue;
                        }
                        if v.fract() != 0.0 || out {
                            return Err(self.access_error(
                                ei,
                                inst,
                                AccessError::IndexOutOfRange {
                                    value: v,
                                    partition: p,
                                    rows: b,
                                },
                            ));
                        }
                        let k = v as usize * inner as usize;
                        offs.extend_from_slice(&h.offsets[k..k + inner as usize]);
                    }
                    Some(offs)
                }
                _ => None,
            };
            boxes = Some((if hbm_is_dst { d.clone() } else { s.clone() }, ir));
            if let Some(offs) = remapped {
                let h = if hbm_is_dst { &mut d } else { &mut s };
                h.free = offs.len() as u64;
                h.offsets = offs;
            }
        }
        let issue_end = t + dma_issue_cycles();
        let q = queue as usize;
        let data_start = (issue_end + DMA_LATENCY).max(self.queue_free[q]);
        let done = data_start + busy;
        self.queue_free[q] = done;
        self.stats.queue_busy[q] += busy;
        self.stats.queue_transfers[q] += 1;
        self.stats.dma_bytes += bytes;
        self.last_time = self.last_time.max(done);
        if let Some(st) = &mut self.storage {
            let (mut vals, mut undef) = st.read(&s);
            if let Some(kept) = &kept {
                (vals, undef) = skip_rows(st, kept, (&d, &s), (vals, undef));
            }
            if mode.accumulate {
                match add_to_destination(st, &d, &vals) {
                    Ok(sums) => vals = sums,
                    Err(k) => {
                        let Space::Hbm(t) = d.space else {
                            unreachable!("validate: a DMA that adds has an HBM destination")
                        };
                        return Err(SimError::Uninitialised {
                            inst: info(self.prog, &self.who(ei, inst)),
                            tensor: self.prog.tensors[t].name.clone(),
                            element: d.offsets[k],
                        });
                    }
                }
            }
            if let (Space::Hbm(t), Some(u)) = (d.space, &undef) {
                let first = u.iter().position(|&x| x);
                if let Some(i) = first.filter(|_| st.is_tracked_hbm(&d)) {
                    return Err(SimError::Uninitialised {
                        inst: info(self.prog, &self.who(ei, inst)),
                        tensor: self.prog.tensors[t].name.clone(),
                        element: d.offsets[i],
                    });
                }
            }
            st.write(&d, &vals, undef.as_deref());
        }
        self.queue_epoch[q] += 1;
        let mut clock = self.engines[ei].clock;
        clock[queue_thread(queue)] = self.queue_epoch[q];
        if self.opts.races {
            let who = Rc::new(self.who(ei, inst));
            match &boxes {
                // Conservatively the whole HBM box an index may name, and the index tile read.
                Some((hbm, ir)) => {
                    let hbm_is_dst = matches!(d.space, Space::Hbm(_));
                    let (s, d) = if hbm_is_dst { (&s, hbm) } else { (hbm, &d) };
                    self.check_races(
                        queue_thread(queue),
                        &clock,
                        &who,
                        &[(ir, false), (s, false), (d, true)],
                    );
                }
                None => self.check_races(
                    queue_thread(queue),
                    &clock,
                    &who,
                    &[(&s, false), (&d, true)],
                ),
            }
        }
        if recording(&self.trace, &mut self.stats, self.opts.trace) {
            let iters = self.engines[ei].iters();
            let text = inst_to_string(self.prog, inst);
            self.trace.push(Slice {
                track: Track::Engine(Engine::Sp),
                name: format!("dma q{queue}"),
                start: t,
                end: issue_end,
                inst: text.clone(),
                meta: inst.meta.clone(),
                iters: iters.clone(),
            });
            self.trace.push(Slice {
                track: Track::Queue(queue),
                name: format!("dma {bytes} B"),
                start: data_start,
                end: done,
                inst: text,
                meta: inst.meta.clone(),
                iters,
            });
        }
        if let Some(sem) = inst.signal {
            self.signal(sem, done, &clock);
        }
        Ok(issue_end)
    }

    /// A predicated-off transfer moves nothing and takes no time, but its signal keeps its
    /// semaphore's increments in issue order: it is counted once every signal issued earlier to
    /// the same semaphore has been counted (at once when none is pending), and publishes `sp`'s
    /// clock (joined, through the semaphore's prefix, with those earlier signals').
    fn dma_marker(&mut self, ei: usize, sem: usize, t: u64) {
        let clock = self.engines[ei].clock;
        let after = self.sems[sem].last.unwrap_or(0);
        self.signal(sem, t.max(after), &clock);
    }

    fn compute(&mut self, ei: usize, inst: &'p Inst, op: &Op, t: u64) -> Result<u64, SimError> {
        let engine = self.engines[ei].engine;
        let cost = crate::op_cost::op_cycles(engine, op);
        let operands = crate::isa::tile_operands(op);
        let mut res = Vec::with_capacity(operands.len());
        for a in &operands {
            res.push(self.resolve(ei, inst, a)?);
        }
        let mut failed = None;
        if let Some(st) = &mut self.storage {
            match compute_values(st, op, &res) {
                Ok((out, undef)) => st.write(&res[0], &out, undef.as_deref()),
                Err(e) => failed = Some(e),
            }
        }
        if let Some(e) = failed {
            return Err(self.access_error(ei, inst, e));
        }
        if self.opts.races {
            let who = Rc::new(self.who(ei, inst));
            let clock = self.engines[ei].clock;
            let mut acc: Vec<(&Resolved, bool)> = res[1..].iter().map(|r| (r, false)).collect();
            acc.push((&res[0], true));
            self.check_races(engine_thread(engine), &clock, &who, &acc);
        }
        if recording(&self.trace, &mut self.stats, self.opts.trace) {
            let e = &self.engines[ei];
            self.trace.push(Slice {
                track: Track::Engine(engine),
                name: op.name().to_string(),
                start: t,
                end: t + cost,
                inst: inst_to_string(self.prog, inst),
                meta: inst.meta.clone(),
                iters: e.iters(),
            });
        }
        Ok(t + cost)
    }
}

/// Whether the timeline records the slice of an instruction (`wanted`: a trace is asked and the
/// instruction has one): while it holds fewer than [`MAX_TRACE_SLICES`]. A slice past them is
/// counted in [`Stats::trace_dropped`], so the timeline's memory stays bounded however long the
/// run.
fn recording(trace: &[Slice], stats: &mut Stats, wanted: bool) -> bool {
    if !wanted {
        return false;
    }
    if trace.len() < MAX_TRACE_SLICES {
        return true;
    }
    stats.trace_dropped += 1;
    false
}

/// A source's flags ([`poison::Flags`]): its undefined elements and its width per row.
fn fl<'a>(u: &'a Undef, r: &Resolved) -> poison::Flags<'a> {
    (u.as_deref(), r.free as usize)
}

/// A `[P, 1]` column or a full `[P, F]` source, element `(p, f)`.
fn at(src: &[f32], full: bool, f_len: usize, p: usize, f: usize) -> f32 {
    if full {
        src[p * f_len + f]
    } else {
        src[p]
    }
}

/// The destination's values (`[P, F]` row-major) of a compute operation, with which of them are
/// undefined ([`vocab::poison`]); `res[0]` is the destination and the others the sources in
/// [`crate::isa::tile_operands`] order. Shapes were checked by the validator; a gather's index
/// out of range is the run-time error.
fn compute_values(
    st: &Storage,
    op: &Op,
    res: &[Resolved],
) -> Result<(Vec<f32>, Undef), AccessError> {
    let dst = &res[0];
    let (p, f) = (dst.np as usize, dst.free as usize);
    Ok(match op {
        Op::Matmul { acc, .. } => {
            let (a, ua) = st.read(&res[1]);
            let (b, ub) = st.read(&res[2]);
            let (k, m, n) = (
                res[1].np as usize,
                res[1].free as usize,
                res[2].free as usize,
            );
            let mut out = numerics::matmul(&a, &b, k, m, n);
            let mut undef = poison::matmul(ua.as_deref(), ub.as_deref(), k, m, n);
            if *acc {
                let (old, uold) = st.read(dst);
                for (o, &d) in out.iter_mut().zip(&old) {
                    *o += d;
                }
                undef = poison::union(undef, uold.as_deref());
            }
            (out, undef)
        }
        Op::Transpose { .. } | Op::VectorTranspose { .. } => {
            let (x, ux) = st.read(&res[1]);
            let (xp, xf) = (res[1].np as usize, res[1].free as usize);
            let mut out = vec![0.0f32; xp * xf];
            for pi in 0..xp {
                for fi in 0..xf {
                    out[fi * xp + pi] = x[pi * xf + fi];
                }
            }
            (out, poison::transpose(ux.as_deref(), xp, xf))
        }
        Op::Activation {
            func, scale, bias, ..
        } => {
            let (x, ux) = st.read(&res[1]);
            let mut flags = vec![fl(&ux, &res[1])];
            let mut next = 2;
            let scale_read = match scale {
                Scale::Tile(_) => {
                    next += 1;
                    Some((st.read(&res[2]), 2))
                }
                Scale::Imm(_) => None,
            };
            let bias_read = bias.as_ref().map(|_| (st.read(&res[next]), next));
            for ((_, u), k) in scale_read.iter().chain(&bias_read) {
                flags.push(fl(u, &res[*k]));
            }
            let scale_col = scale_read.as_ref().map(|((c, _), _)| c);
            let bias_col = bias_read.as_ref().map(|((c, _), _)| c);
            let mut out = Vec::with_capacity(p * f);
            for pi in 0..p {
                let s = match (scale, &scale_col) {
                    (_, Some(c)) => c[pi],
                    (Scale::Imm(v), None) => *v,
                    (Scale::Tile(_), None) => 1.0,
                };
                let b = bias_col.as_ref().map(|c| c[pi]);
                out.extend(
                    x[pi * f..(pi + 1) * f]
                        .iter()
                        .map(|&v| numerics::activation(*func, v, s, b)),
                );
            }
            (out, poison::elementwise(&flags, p, f))
        }
        Op::TensorTensor { op, .. } => {
            let (a, ua) = st.read(&res[1]);
            let (b, ub) = st.read(&res[2]);
            let (fa, fb) = (res[1].free as usize == f, res[2].free as usize == f);
            let mut out = Vec::with_capacity(p * f);
            for pi in 0..p {
                for fi in 0..f {
                    out.push(numerics::alu(
                        *op,
                        at(&a, fa, f, pi, fi),
                        at(&b, fb, f, pi, fi),
                    ));
                }
            }
            let flags = [fl(&ua, &res[1]), fl(&ub, &res[2])];
            (out, poison::elementwise(&flags, p, f))
        }
        Op::TensorScalar {
            op, imm, reverse, ..
        } => {
            let (x, ux) = st.read(&res[1]);
            let full = res[1].free as usize == f;
            let mut out = Vec::with_capacity(p * f);
            for pi in 0..p {
                for fi in 0..f {
                    let v = at(&x, full, f, pi, fi);
                    out.push(if *reverse {
                        numerics::alu(*op, *imm, v)
                    } else {
                        numerics::alu(*op, v, *imm)
                    });
                }
            }
            (out, poison::elementwise(&[fl(&ux, &res[1])], p, f))
        }
        Op::Reduce { op, .. } => {
            let (x, ux) = st.read(&res[1]);
            let xf = res[1].free as usize;
            let out = x
                .chunks_exact(xf.max(1))
                .map(|row| numerics::reduce(*op, row))
                .collect();
            (out, poison::rows(&[fl(&ux, &res[1])], p, f))
        }
        Op::Copy { .. } => st.read(&res[1]),
        Op::TensorTensorScan { op0, op1, .. } => {
            let (a, ua) = st.read(&res[1]);
            let (b, ub) = st.read(&res[2]);
            let (init, uinit) = st.read(&res[3]);
            let mut out = vec![0.0f32; p * f];
            for (pi, row) in out.chunks_exact_mut(f.max(1)).enumerate() {
                let span = pi * f..(pi + 1) * f;
                let (d0, d1) = (&a[span.clone()], &b[span]);
                vocab::tensor_tensor_scan(*op0, *op1, init[pi], d0, d1, row);
            }
            let flags = [fl(&ua, &res[1]), fl(&ub, &res[2]), fl(&uinit, &res[3])];
            (out, poison::rows(&flags, p, f))
        }
        Op::BnStats { .. } | Op::BnAggr { .. } => {
            let (x, ux) = st.read(&res[1]);
            let rows = x.chunks_exact((res[1].free as usize).max(1));
            let out = match op {
                Op::BnStats { .. } => rows.flat_map(vocab::bn_stats).collect(),
                _ => rows.flat_map(vocab::bn_aggr).collect(),
            };
            (out, poison::rows(&[fl(&ux, &res[1])], p, f))
        }
        Op::Max8 { .. } | Op::FindIndex8 { .. } | Op::MatchReplace8 { .. } => {
            let (x, ux) = st.read(&res[1]);
            let xf = (res[1].free as usize).max(1);
            let top = vocab::TOP8;
            let (vals, uvals) = match op {
                Op::Max8 { .. } => (Vec::new(), None),
                _ => st.read(&res[2]),
            };
            let mut out = vec![0.0f32; p * f];
            for (pi, (row, o)) in x
                .chunks_exact(xf)
                .zip(out.chunks_exact_mut(f.max(1)))
                .enumerate()
            {
                let v = vals.get(pi * top..(pi + 1) * top).unwrap_or(&[]);
                match op {
                    Op::FindIndex8 { .. } => vocab::find_index8(row, v, o),
                    Op::MatchReplace8 { imm, .. } => vocab::match_replace8(row, v, *imm, o),
                    _ => vocab::max8(row, o),
                }
            }
            let mut flags = vec![fl(&ux, &res[1])];
            if res.len() > 2 {
                flags.push(fl(&uvals, &res[2]));
            }
            (out, poison::rows(&flags, p, f))
        }
        Op::Rand { stream, .. } => (
            (0..p as u64)
                .flat_map(|pi| (0..f as u64).map(move |fi| vocab::rand_at(*stream, pi, fi)))
                .collect(),
            None,
        ),
        Op::Dropout { stream, .. } => {
            let (x, ux) = st.read(&res[1]);
            let (prob, uprob) = st.read(&res[2]);
            let mut out = Vec::with_capacity(p * f);
            for pi in 0..p {
                let pr = prob.get(pi).copied().unwrap_or(0.0);
                for fi in 0..f {
                    let v = at(&x, true, f, pi, fi);
                    out.push(vocab::dropout(*stream, pi as u64, fi as u64, v, pr));
                }
            }
            let flags = [fl(&ux, &res[1]), fl(&uprob, &res[2])];
            (out, poison::elementwise(&flags, p, f))
        }
        Op::Memset { value, .. } => (vec![*value; p * f], None),
        Op::Iota {
            base, pstep, fstep, ..
        } => {
            let mut out = Vec::with_capacity(p * f);
            for pi in 0..p {
                for fi in 0..f {
                    out.push(vocab::iota(*base, *pstep, *fstep, pi, fi));
                }
            }
            (out, None)
        }
        Op::Shuffle { mask, .. } => {
            let (x, ux) = st.read(&res[1]);
            let (mut out, old_flags) = st.read(dst);
            let mut flags = old_flags.unwrap_or_else(|| vec![false; p * f]);
            for r in 0..p {
                if let Some(s) = vocab::shuffle_source(mask, r) {
                    out[r * f..(r + 1) * f].copy_from_slice(&x[s * f..(s + 1) * f]);
                    match &ux {
                        Some(u) => {
                            flags[r * f..(r + 1) * f].copy_from_slice(&u[s * f..(s + 1) * f])
                        }
                        None => flags[r * f..(r + 1) * f].fill(false),
                    }
                }
            }
            (out, poison::normalise(flags))
        }
        Op::LocalGather { group, elems, .. } => {
            return super::gather_moves::local_gather(st, res, *group as usize, *elems as usize)
        }
        Op::SequenceBounds { .. } => {
            let (x, ux) = st.read(&res[1]);
            let xf = (res[1].free as usize).max(1);
            let mut out = vec![0.0f32; p * f];
            for (row, o) in x.chunks_exact(xf).zip(out.chunks_exact_mut(f.max(1))) {
                vocab::sequence_bounds(row, o);
            }
            (out, poison::rows(&[fl(&ux, &res[1])], p, f))
        }
        Op::Dma { .. } | Op::Signal { .. } | Op::Wait { .. } => (Vec::new(), None),
    })
}

/// The values of a `skip_oob` transfer with the partitions not `kept` left out: a scatter
/// (HBM destination) drops their rows of the tile's `vals`; a gather (HBM source, `vals` the
/// kept rows only) keeps the destination tile's current rows for them.
fn skip_rows(
    st: &Storage,
    kept: &[bool],
    (d, s): (&Resolved, &Resolved),
    (vals, undef): (Vec<f32>, Undef),
) -> (Vec<f32>, Undef) {
    let flag = |u: &Undef, i: usize| u.as_ref().is_some_and(|u| u[i]);
    let mut out = Vec::with_capacity(vals.len());
    let mut flags = Vec::with_capacity(vals.len());
    if matches!(d.space, Space::Hbm(_)) {
        let per = s.free as usize;
        for (p, &k) in kept.iter().enumerate() {
            if k {
                out.extend_from_slice(&vals[p * per..(p + 1) * per]);
                flags.extend((p * per..(p + 1) * per).map(|i| flag(&undef, i)));
            }
        }
    } else {
        let per = d.free as usize;
        let (cur, cur_undef) = st.read(d);
        let mut next = 0;
        for (p, &k) in kept.iter().enumerate() {
            let (from, fu, at) = if k {
                next += 1;
                (&vals, &undef, (next - 1) * per)
            } else {
                (&cur, &cur_undef, p * per)
            };
            out.extend_from_slice(&from[at..at + per]);
            flags.extend((at..at + per).map(|i| flag(fu, i)));
        }
    }
    let undef = flags.iter().any(|&x| x).then_some(flags);
    (out, undef)
}

/// A read-modify-write transfer's values: each element of `vals` added to the HBM element it
/// lands on (offsets of `d`), in order, so that equal offsets add up; each sum rounded to the
/// destination's dtype. `Err(k)` names the first element `k` whose destination is undefined.
fn add_to_destination(st: &Storage, d: &Resolved, vals: &[f32]) -> Result<Vec<f32>, usize> {
    let (old, old_undef) = st.read(d);
    if let Some(k) = old_undef.as_ref().and_then(|u| u.iter().position(|&x| x)) {
        return Err(k);
    }
    let mut now: std::collections::HashMap<u64, f32> = std::collections::HashMap::new();
    for (k, (&o, &v)) in d.offsets.iter().zip(vals).enumerate() {
        let prev = now.get(&o).copied().unwrap_or(old[k]);
        now.insert(o, crate::numerics::round_to(d.dtype, prev + v));
    }
    Ok(d.offsets.iter().map(|o| now[o]).collect())
}

/// An indirect DMA's HBM side `h` as `(B, inner)`: the `B` indices of its outermost dimension,
/// each `inner` elements (its offsets enumerate `B × inner` in row-major order); `None` when
/// they do not divide.
fn index_dims(h: &Resolved) -> Option<(u64, u64)> {
    let b = h.pattern.dims().first().map(|&(size, _)| size)?;
    let n = h.offsets.len() as u64;
    (b > 0 && n.is_multiple_of(b)).then_some((b, n / b))
}
