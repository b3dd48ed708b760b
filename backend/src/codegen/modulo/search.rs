//! The II search of the modulo scheduler ([`crate::codegen::modulo`]): list scheduling into a
//! modulo reservation table per engine, at increasing `II` from the MII, for each list order
//! ([`Priority`]), with each thread's latest searches remembered.
//!
//! Invariants: a schedule found meets every dependence edge (`σ_c + d·II ≥ σ_p + latency`),
//! no two intervals of one engine that may run in one iteration overlap modulo `II`, and each
//! engine's work of one body fits one window of `II` cycles. The search is a function of the
//! loop's graph, busy cycles and MII alone ([`SearchKey`]), so a remembered answer is the
//! answer.

use super::order::compute_order_period;
use super::recurrence::longest_paths;
use crate::codegen::bir::Bir;
use crate::codegen::ldg::LoopDeps;
use petgraph::visit::EdgeRef;

/// Whether `[t, t + b)` overlaps `[x, x + bx)` modulo `ii`; when it does, how far `t` must move
/// later to clear it.
fn modulo_clash(t: i64, b: i64, x: i64, bx: i64, ii: i64) -> Option<i64> {
    if b == 0 || bx == 0 {
        return None;
    }
    let r = (t - x).rem_euclid(ii);
    if r < bx {
        Some(bx - r)
    } else if r + b > ii {
        Some(ii - r + bx)
    } else {
        None
    }
}

/// The order in which [`try_schedule`] places the ready instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Priority {
    /// Earliest start first, then the longest path to the end: the classic list order.
    Earliest,
    /// Latest earliest-start first: an instruction that a long same-iteration chain (a load's
    /// latency) pushes late is placed before the flexible work of its engine, which then fills
    /// the engine's window around it.
    Constrained,
}

/// Per `II`: the earliest starts ([`longest_paths`]) and the longest path from each instruction
/// to the end (the reverse relaxation), or `None` when a cycle needs a larger `II`. Every list
/// order of [`compute_modulo_schedule`](super::compute_modulo_schedule) searches the same `II`s, so each is computed once.
#[derive(Default)]
struct PathCache(std::collections::HashMap<u64, Option<Paths>>);

/// The earliest starts and the heights at one `II`.
type Paths = (Vec<i64>, Vec<i64>);

impl PathCache {
    fn get(&mut self, deps: &LoopDeps, ii: u64) -> Option<&Paths> {
        self.0
            .entry(ii)
            .or_insert_with(|| {
                let n = deps.insts.len();
                let iii = ii as i64;
                let est = longest_paths(deps, ii, &mut vec![None; n]).ok()?;
                let mut height = vec![0i64; n];
                // (The edges backwards: a height flows from consumer to producer, so a chain
                // whose edges come in program order settles in one round, not one per link.)
                for _ in 0..=n {
                    let mut changed = false;
                    for e in deps.graph.raw_edges().iter().rev() {
                        let (p, c) = (e.source().index(), e.target().index());
                        let w = e.weight.latency as i64 - i64::from(e.weight.distance) * iii;
                        if height[c] + w > height[p] {
                            height[p] = height[c] + w;
                            changed = true;
                        }
                    }
                    if !changed {
                        break;
                    }
                }
                Some((est, height))
            })
            .as_ref()
    }
}

/// A schedule at `ii`: the start offset of every instruction, or `None`.
fn try_schedule(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    ii: u64,
    priority: Priority,
    from_est: bool,
    paths: &mut PathCache,
) -> Option<Vec<i64>> {
    let n = deps.insts.len();
    let iii = ii as i64;
    let (est, height) = paths.get(deps, ii)?;
    let mut pending: Vec<usize> = vec![0; n];
    for e in deps.graph.edge_references() {
        if e.weight().distance == 0 {
            pending[e.target().index()] += 1;
        }
    }
    let mut sigma: Vec<Option<i64>> = vec![None; n];
    // Per engine: the placed (start, busy, position) intervals.
    let mut table: Vec<Vec<(i64, i64, usize)>> = vec![Vec::new(); 5];
    // Without exclusive pairs, every placed interval of an engine is clear of the others modulo
    // `ii`, so the engine's reservations are kept sorted ([`Reservations`]) and its window as
    // a running minimum and maximum; with them, the intervals are scanned as placed.
    let disjoint = deps.exclusive.is_empty();
    let mut reserved: Vec<Reservations> = vec![Reservations::default(); 5];
    // The ready instructions, by the priority's key (unique: it ends with the position), the
    // smallest on top.
    let key = |k: usize| match priority {
        Priority::Earliest => std::cmp::Reverse((est[k], -height[k], k)),
        Priority::Constrained => std::cmp::Reverse((-est[k], -height[k], k)),
    };
    let mut ready: std::collections::BinaryHeap<_> =
        (0..n).filter(|&k| pending[k] == 0).map(key).collect();
    for _ in 0..n {
        let std::cmp::Reverse((_, _, k)) = ready.pop()?;
        // With `from_est`, the earliest start over every path (not only from the placed
        // neighbours), a lower bound of any schedule with non-negative starts: starting there
        // keeps an engine's flexible work out of the window that its late, chained work needs.
        let mut lower = if from_est { est[k].max(0) } else { 0 };
        let mut upper = i64::MAX;
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Incoming)
        {
            if let Some(sp) = sigma[e.source().index()] {
                let w = e.weight().latency as i64 - i64::from(e.weight().distance) * iii;
                lower = lower.max(sp + w);
            }
        }
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Outgoing)
        {
            if let Some(sc) = sigma[e.target().index()] {
                let w = e.weight().latency as i64 - i64::from(e.weight().distance) * iii;
                upper = upper.min(sc - w);
            }
        }
        let r = bir.insts[deps.insts[k]].engine.index();
        let b = busy[k] as i64;
        let placed = if disjoint {
            reserved[r].place(lower, upper, b, iii)
        } else {
            place_scanning(deps, &table[r], k, lower, upper, b, iii)
        }?;
        sigma[k] = Some(placed);
        match disjoint {
            true => reserved[r].insert(placed, b, iii),
            false => table[r].push((placed, b, k)),
        }
        for e in deps
            .graph
            .edges_directed(deps.node(k), petgraph::Direction::Outgoing)
        {
            if e.weight().distance == 0 {
                let c = e.target().index();
                pending[c] -= 1;
                if pending[c] == 0 {
                    ready.push(key(c));
                }
            }
        }
    }
    sigma.into_iter().collect()
}

/// The earliest start in `[lower, upper]`, and before `lower + ii`, at which `k` (busy `b`
/// cycles) clashes modulo `ii` with none of its engine's placed intervals `table` that may run
/// in its iteration, and the engine's work of one body still fits one window of `ii` cycles.
pub(super) fn place_scanning(
    deps: &LoopDeps,
    table: &[(i64, i64, usize)],
    k: usize,
    lower: i64,
    upper: i64,
    b: i64,
    ii: i64,
) -> Option<i64> {
    // Only the work that may run in the same iteration shares the engine with `k`.
    let slots: Vec<(i64, i64)> = table
        .iter()
        .filter(|s| !deps.excludes(k, s.2))
        .map(|s| (s.0, s.1))
        .collect();
    // The engine's window: all of one body's work within `ii` cycles.
    let lo_e = slots.iter().map(|s| s.0).min();
    let hi_e = slots.iter().map(|s| s.0 + s.1).max();
    let window = lo_e.zip(hi_e);
    let mut t = lower;
    let last = lower + ii;
    loop {
        if t > upper || t >= last {
            return None;
        }
        if let Some(step) = slots
            .iter()
            .filter_map(|&(x, bx)| modulo_clash(t, b, x, bx, ii))
            .max()
        {
            t += step;
            continue;
        }
        match window_fit(window, t, b, ii) {
            Ok(()) => return Some(t),
            Err(step) => t += step?,
        }
    }
}

/// Whether `[t, t + b)` keeps an engine's `window` (the earliest start and latest end of its
/// placed work, none when there is none) within `ii` cycles: `Ok` when it does, else how much
/// later to try, or `None` when no later start does (later only widens the window when the
/// engine's work starts earlier).
fn window_fit(window: Option<(i64, i64)>, t: i64, b: i64, ii: i64) -> Result<(), Option<i64>> {
    let lo = window.map_or(t, |w| w.0.min(t));
    let hi = window.map_or(t + b, |w| w.1.max(t + b));
    if hi - lo <= ii {
        Ok(())
    } else if lo < t {
        Err(None)
    } else {
        Err(Some(1.max(hi - lo - ii)))
    }
}

/// One engine's modulo reservation table when no two of its intervals may overlap (no
/// exclusive pairs): the placed intervals of positive length by start modulo `ii` (clear of
/// each other modulo `ii`, each at most `ii` long: the window holds it), and the window of
/// every placed interval (zero-length ones included). [`Reservations::place`] answers what
/// [`place_scanning`] answers, finding each clash from the neighbours of a start in the sorted
/// table instead of over every interval.
#[derive(Clone, Default)]
pub(super) struct Reservations {
    /// Start modulo `ii` → length.
    by_start: std::collections::BTreeMap<i64, i64>,
    /// The earliest start and the latest end placed.
    window: Option<(i64, i64)>,
}

impl Reservations {
    pub(super) fn insert(&mut self, t: i64, b: i64, ii: i64) {
        self.window = Some(
            self.window
                .map_or((t, t + b), |(lo, hi)| (lo.min(t), hi.max(t + b))),
        );
        if b > 0 {
            self.by_start.insert(t.rem_euclid(ii), b);
        }
    }

    /// How far `[t, t + b)` must move later to clear the interval it clashes with modulo `ii`
    /// (the end of the first interval it meets), or `None` when it clashes with none. The
    /// intervals are clear of each other: only the one that starts at or before `t` (modulo
    /// `ii`, cyclically) and the next one after `t` can overlap it.
    fn clash(&self, t: i64, b: i64, ii: i64) -> Option<i64> {
        if b == 0 || self.by_start.is_empty() {
            return None;
        }
        let tm = t.rem_euclid(ii);
        let before =
            (self.by_start.range(..=tm).next_back()).or_else(|| self.by_start.iter().next_back());
        if let Some((&x, &bx)) = before {
            if let Some(step) = modulo_clash(t, b, x, bx, ii) {
                return Some(step);
            }
        }
        let after = (self.by_start.range(tm + 1..).next()).or_else(|| self.by_start.iter().next());
        let (&x, &bx) = after?;
        modulo_clash(t, b, x, bx, ii)
    }

    /// [`place_scanning`] over this table.
    pub(super) fn place(&self, lower: i64, upper: i64, b: i64, ii: i64) -> Option<i64> {
        let mut t = lower;
        let last = lower + ii;
        loop {
            if t > upper || t >= last {
                return None;
            }
            if let Some(step) = self.clash(t, b, ii) {
                t += step;
                continue;
            }
            match window_fit(self.window, t, b, ii) {
                Ok(()) => return Some(t),
                Err(step) => t += step?,
            }
        }
    }
}

/// Everything [`search_schedule`] reads: per position its engine, the dependence edges
/// (`source, target, latency, distance`), the exclusive pairs, the latencies, both busy
/// vectors, and the MII it starts from.
#[derive(PartialEq, Eq)]
struct SearchKey {
    engines: Vec<usize>,
    edges: Vec<(usize, usize, u64, u32)>,
    exclusive: Vec<(usize, usize)>,
    latency: Vec<u64>,
    busy: Vec<u64>,
    steady: Vec<u64>,
    mii: u64,
}

/// What [`search_schedule`] returns: the II and the start offsets, or `None`.
type Searched = Option<(u64, Vec<i64>)>;

/// How many searches [`SEARCHES`] remembers.
const REMEMBERED_SEARCHES: usize = 8;

thread_local! {
    /// The latest II searches of this thread and their results. One kernel's loops are
    /// scheduled again with the same graphs: by each round of [`crate::expand_recurrence`], by
    /// the retiming's trials ([`crate::retime`]) and by the compilation of the kernel they keep.
    static SEARCHES: std::cell::RefCell<std::collections::VecDeque<(SearchKey, Searched)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

/// [`search_schedule`], answered from [`SEARCHES`] when its inputs are those of a search this
/// thread made lately (the search is a function of them alone).
pub(super) fn search_schedule_remembered(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    steady: &[u64],
    mii: u64,
) -> Option<(u64, Vec<i64>)> {
    let key = SearchKey {
        engines: (deps.insts.iter())
            .map(|&i| bir.insts[i].engine.index())
            .collect(),
        edges: (deps.graph.edge_references())
            .map(|e| {
                let w = e.weight();
                (
                    e.source().index(),
                    e.target().index(),
                    w.latency,
                    w.distance,
                )
            })
            .collect(),
        exclusive: deps.exclusive.clone(),
        latency: deps.latency.clone(),
        busy: busy.to_vec(),
        steady: steady.to_vec(),
        mii,
    };
    let found = SEARCHES.with(|m| {
        (m.borrow().iter())
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.clone())
    });
    if let Some(r) = found {
        return r;
    }
    let r = search_schedule(bir, deps, busy, steady, mii);
    SEARCHES.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= REMEMBERED_SEARCHES {
            m.pop_front();
        }
        m.push_back((key, r.clone()));
    });
    r
}

/// The II search: every list order, with and without the global earliest starts as lower
/// bounds, searches its own smallest II upward from `mii`; the schedule whose order the engines
/// run fastest is kept (its II and start offsets), or `None` when no order fits.
pub(super) fn search_schedule(
    bir: &Bir,
    deps: &LoopDeps,
    busy: &[u64],
    steady: &[u64],
    mii: u64,
) -> Option<(u64, Vec<i64>)> {
    // A sequential body always fits: every start after every predecessor's completion.
    let sequential: u64 = deps.latency.iter().sum::<u64>() + busy.iter().sum::<u64>();
    let mut best: Option<(u64, u64, Vec<i64>)> = None;
    let mut paths = PathCache::default();
    for priority in [Priority::Earliest, Priority::Constrained] {
        for from_est in [true, false] {
            let mut ii = mii;
            let sigma = loop {
                if let Some(s) = try_schedule(bir, deps, busy, ii, priority, from_est, &mut paths) {
                    break Some(s);
                }
                if ii >= sequential.max(mii) {
                    break None;
                }
                ii = (ii + (ii / 100).max(1)).min(sequential.max(mii));
            };
            let Some(sigma) = sigma else { continue };
            let mut order: Vec<usize> = (0..sigma.len()).collect();
            order.sort_by_key(|&k| (sigma[k], k));
            let period = compute_order_period(bir, deps, steady, &order);
            if best.as_ref().is_none_or(|b| (period, ii) < (b.0, b.1)) {
                best = Some((period, ii, sigma));
            }
        }
    }
    best.map(|(_, ii, sigma)| (ii, sigma))
}
