//! The steady state's plans of a loop body's transfers ([`compute_best_steady_plan`]): the split of
//! each transfer chosen by what binds the steady state, and every piece of every transfer
//! balanced over the 16 queues together.
//!
//! The **steady class** is the class of iterations ([`super::run_classes`]) whose transfers keep
//! the queues busiest over the loop (their queue time times the class's iterations; ties: the
//! busier iteration): in a pipelined loop, the iterations where every stage runs. Its period is at least the longest of `sp`'s issue slots (one per
//! piece, counted [`SEARCH_SP`](super::SEARCH_SP) as the search counts them: `sp` is in
//! order and also waits), the busiest queue, and the body's compute.
//!
//! **The walk**: starting from one piece per transfer, it places the pieces ([`place`]) and
//! splits further the transfer whose pieces bind: while the busiest queue is above `sp` and the
//! compute, the transfer with the longest piece on that queue takes its next split. Once `sp`
//! or the compute binds, more pieces only lengthen the steady period: the plan of the shortest
//! period (ties: fewer pieces) is the steady state's alone ([`compute_steady_plan`]). The walk
//! goes on past that point (as long as a transfer on the busiest queue can split further),
//! because the fill and the drain run fewer transfers, which more pieces move faster:
//! [`super::compute_queue_plan`] weighs every plan of the walk over every class (fill and drain
//! included, [`super::estimate_time_with`]) and keeps the best when it beats the other plans by
//! [`super::STEADY_GAIN_PERCENT`] with no fewer pieces (more pieces shorten each transfer's
//! latency, which the estimate does not see). On `exp_stages` (emergent), the steady state
//! alone takes 8 pieces per transfer (the queues bind at 1,725 cycles; 16 make `sp` bind at
//! 2,048), and the whole loop keeps 16: its fill runs only loads and its drain only stores,
//! and the simulator runs it in 19,433 cycles against 20,761 with 8.
//!
//! A transfer the steady class does not run (a nest's first-execution loads, which run once
//! before the loop's carries take over; a stage's fill or drain when another class moves more)
//! takes its largest split throughout: its issue slots are not the steady state's, and what the
//! iterations that run it wait for is its latency, one piece after the fixed latency. (On
//! `tests/good/nest_odd.nk`, the prologue's two 256 KiB loads, planned whole for their
//! average share of a queue, each held the first iterations for 13,800 cycles of one queue:
//! 58,273 cycles, then 37,810 with them split 16 ways.) Choosing instead the split of least
//! latency with its issue slots (`64 p + Q / p`, 8 ways for a 64 KiB load) gained 5-7% on
//! many_psum, sched_nested's nested_matmul_store and nki_tensor_add_kernel_ but lost 12.8% on
//! matmul_128x128x512_spmd (grid 4x2), whose walk then ended on 16-way steady pieces where it
//! had 8: the estimate that scores the walk does not see `sp`'s in-order waits, so the largest
//! split stays.
//!
//! A steady class of **one iteration** has no period (nothing overlaps its transfers but other
//! classes, and its iteration waits for their latency): [`super::compute_queue_plan`] does not
//! walk then ([`has_period`]; the classes of a body without guards are one class standing for
//! every iteration, which has one), and the views' plan stays: more pieces would only put
//! issue slots on `sp` ahead of the next iteration's transfers. (`nki_rmsnorm_kernel`, 250
//! rows: two iterations of one class each; the walk split the first iteration's load and store
//! 8 ways where the views split them 4, and the store's 4 more issue slots, ahead of the second
//! iteration's load on `sp`, and its pieces on the queues that load then took, ran 32,989
//! cycles against 31,520.)
//!
//! A transfer of `np` partitions may take any number of pieces that divides `np`, up to its
//! largest power-of-two split ([`split_choices`]): an 80-partition tile splits 5 or 10 ways as
//! well as 2, 4, 8 or 16, which balances three transfers that powers of two do not (three
//! 80-partition transfers: one piece of a fifth on each of 15 queues, where quarters put two
//! pieces on some queue).
//!
//! **Placement** is longest-processing-time first over the pieces of every transfer: the
//! transfers by decreasing piece, each piece on the queue least busy in the steady class that
//! holds no other piece of its transfer (ties: least busy over the whole loop, each piece
//! counting its transfer's iterations; then the lowest index after the rotation). Queues run
//! their transfers first in, first out (MACHINE.md, the simulator's `dma`), in `sp`'s order,
//! whichever queue each is on: any placement keeps every transfer's order, so nothing else
//! constrains it. LPT puts the busiest queue within one piece of the average
//! (`Σ Q / 16 + max piece`) when the pieces are at least as many as the queues.
//!
//! Invariant of a plan: per transfer, its queues are distinct, as many as its pieces, and its
//! pieces divide its partitions.

use super::{SplitData, Transfer, SEARCH_SP};
use crate::cost::dma::split_choices;
use runtime_sim::machine::{self, DMA_QUEUES};

/// The steady class of `classes` (module doc): which transfers run in it and in how many
/// iterations, or `None` when there is no class.
fn steady_class(ts: &[Transfer], classes: &[(Vec<bool>, u64)]) -> Option<(Vec<bool>, u64)> {
    let work = |h: &[bool]| -> u64 {
        (ts.iter().zip(h))
            .filter(|(_, &on)| on)
            .map(|(t, _)| machine::dma_queue_cycles(t.bytes))
            .sum()
    };
    let (_, (h, n)) = (classes.iter().enumerate())
        .max_by_key(|(c, (h, n))| (work(h) * n, work(h), std::cmp::Reverse(*c)))?;
    Some((h.clone(), *n))
}

/// Whether the steady class of `classes` (counted iterations) has a period, that is runs in at
/// least two iterations (module doc); `false` when there is no class.
pub fn has_period(ts: &[Transfer], classes: &[(Vec<bool>, u64)]) -> bool {
    steady_class(ts, classes).is_some_and(|(_, n)| n >= 2)
}

/// One piece of transfer `t` split `p` ways: its queue cycles.
fn piece(t: &Transfer, p: u64) -> u64 {
    machine::dma_queue_cycles(t.bytes / p.max(1))
}

/// The placement of the walk's plans (module doc), one after the other, each a few splits from
/// the last: each transfer's queues, in the order of its pieces (the lowest index after the
/// rotation first). It keeps the transfers in placement order (longest piece first, then the
/// plan's order) and moves only those whose split changed (a binary search and a shift, where
/// sorting every plan again cost its transfers times their logarithm), chooses each transfer's
/// queues among the 16 on the stack (the least loaded one for a single piece, where a list of
/// them was allocated and sorted per transfer), and refills the plan's queue lists in place.
/// (Keeping the 16 sorted across transfers, an insertion of the chosen ones back, cost more on
/// `tests/limits.rs`' 5,000 loads: 44 s against 25 s.) The plans are those of sorting every plan
/// afresh (the same order and choices, ties included: the tests below compare them).
///
/// Invariant: `order` is `(Reverse(piece), transfer)` for every transfer, sorted, under the
/// splits `last`.
struct Placer<'a> {
    ts: &'a [Transfer],
    runs: &'a [u64],
    steady_on: &'a [bool],
    rotation: usize,
    last: Vec<u64>,
    order: Vec<(std::cmp::Reverse<u64>, usize)>,
    out: Vec<SplitData>,
}

impl<'a> Placer<'a> {
    fn new(ts: &'a [Transfer], runs: &'a [u64], steady_on: &'a [bool], rotation: usize) -> Self {
        Placer {
            ts,
            runs,
            steady_on,
            rotation,
            last: Vec::new(),
            order: Vec::new(),
            out: vec![SplitData { queues: Vec::new() }; ts.len()],
        }
    }

    /// The placement of the splits `pieces` (`pieces[k]` for transfer `k`; `runs[k]` is how
    /// many iterations transfer `k` runs in).
    fn place(&mut self, pieces: &[u64]) -> &[SplitData] {
        let key = |k: usize| (std::cmp::Reverse(piece(&self.ts[k], pieces[k])), k);
        if self.last.len() != pieces.len() {
            self.order = (0..pieces.len()).map(key).collect();
            self.order.sort_unstable();
        } else {
            for (k, (&last, &now)) in self.last.iter().zip(pieces).enumerate() {
                if last != now {
                    let was = (std::cmp::Reverse(piece(&self.ts[k], last)), k);
                    let at = (self.order.binary_search(&was))
                        .expect("every transfer is in the order under its last split");
                    self.order.remove(at);
                    let now = key(k);
                    let to = self.order.partition_point(|x| *x < now);
                    self.order.insert(to, now);
                }
            }
        }
        self.last.clear();
        self.last.extend_from_slice(pieces);
        let mut steady = [0u64; DMA_QUEUES];
        let mut whole = [0u64; DMA_QUEUES];
        let rotation = self.rotation;
        for &(std::cmp::Reverse(c), k) in &self.order {
            // The queues by load in the steady class, then over the whole loop, then their
            // position after the rotation: the `p` first take the pieces.
            let mut by: [(u64, u64, usize); DMA_QUEUES] = std::array::from_fn(|at| {
                let q = (at + rotation) % DMA_QUEUES;
                (steady[q], whole[q], at)
            });
            let p = (pieces[k] as usize).min(DMA_QUEUES);
            if p == 1 {
                by[0] = *(by.iter().min()).expect("there are queues");
            } else {
                by.sort_unstable();
            }
            let mut chosen = 0u32;
            for &(_, _, at) in &by[..p] {
                chosen |= 1 << at;
                let q = (at + rotation) % DMA_QUEUES;
                steady[q] += if self.steady_on[k] { c } else { 0 };
                whole[q] += c * self.runs[k].max(1);
            }
            let queues = &mut self.out[k].queues;
            queues.clear();
            queues.extend(
                (0..DMA_QUEUES)
                    .filter(|at| chosen & (1 << at) != 0)
                    .map(|at| ((at + rotation) % DMA_QUEUES) as u8),
            );
        }
        &self.out
    }
}

/// The steady class's period under `splits` (every transfer running): the longest of `sp`
/// (scaled by [`SEARCH_SP`]), the busiest queue and `compute`; the busiest queue's cycles; and
/// that queue (ties: the lowest index).
fn period(
    ts: &[Transfer],
    splits: &[SplitData],
    steady_on: &[bool],
    compute: u64,
) -> (u64, u64, usize) {
    let mut queues = [0u64; DMA_QUEUES];
    let mut pieces = 0;
    for ((t, s), _) in (ts.iter().zip(splits).zip(steady_on)).filter(|(_, &on)| on) {
        pieces += s.pieces();
        for &q in &s.queues {
            queues[q as usize] += piece(t, s.pieces());
        }
    }
    let sp = (pieces * machine::dma_issue_cycles() * SEARCH_SP.0).div_ceil(SEARCH_SP.1);
    let (busiest, load) = (queues.iter().enumerate())
        .max_by_key(|&(q, &l)| (l, std::cmp::Reverse(q)))
        .map_or((0, 0), |(q, &l)| (q, l));
    (sp.max(load).max(compute), load, busiest)
}

/// The steady state's plan of `ts` (the plan's order) over `classes` (module doc): the walk's
/// plan of the shortest steady period (ties: fewer pieces), or `None` when there is no class.
/// (The steady state alone; [`super::compute_queue_plan`] weighs the
/// walk's plans over every class, [`compute_steady_walk`].)
#[cfg(test)]
pub fn compute_steady_plan(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    compute: u64,
    rotation: usize,
) -> Option<Vec<SplitData>> {
    let mut best: Option<((u64, u64), Vec<SplitData>)> = None;
    walk(
        ts,
        classes,
        compute,
        rotation,
        false,
        |time, pieces, splits| {
            if best.as_ref().is_none_or(|(b, _)| (time, pieces) < *b) {
                best = Some(((time, pieces), splits.to_vec()));
            }
        },
    )?;
    best.map(|(_, splits)| splits)
}

/// Every plan of the walk (module doc), carried on past the point where `sp` or the compute
/// binds the steady state, as long as a transfer on the busiest queue can split further: the
/// fill and the drain run fewer transfers, which more pieces move faster. `None` when there is
/// no class.
#[cfg(test)]
pub fn compute_steady_walk(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    compute: u64,
    rotation: usize,
) -> Option<Vec<Vec<SplitData>>> {
    let mut plans = Vec::new();
    walk(ts, classes, compute, rotation, true, |_, _, splits| {
        plans.push(splits.to_vec())
    })?;
    Some(plans)
}

/// The plan of [`compute_steady_walk`]'s walk of least `score` (ties: fewer pieces of all
/// transfers); a plan whose score is `None` does not count. [`super::compute_queue_plan`]
/// scores each by its estimate over every class. `None` when there is no class or no plan
/// counts.
pub fn compute_best_steady_plan(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    compute: u64,
    rotation: usize,
    score: impl Fn(&[SplitData]) -> Option<u128>,
) -> Option<Vec<SplitData>> {
    let mut best: Option<((u128, u64), Vec<SplitData>)> = None;
    walk(ts, classes, compute, rotation, true, |_, _, splits| {
        let Some(time) = score(splits) else {
            return;
        };
        let key = (time, splits.iter().map(SplitData::pieces).sum());
        if best.as_ref().is_none_or(|(b, _)| key < *b) {
            best = Some((key, splits.to_vec()));
        }
    })?;
    best.map(|(_, splits)| splits)
}

/// The walk (module doc): `visit` sees each plan with its steady period and its pieces (those
/// of the transfers the steady class runs). `on` carries it on once `sp` or the compute binds.
/// `None` when there is no class.
fn walk(
    ts: &[Transfer],
    classes: &[(Vec<bool>, u64)],
    compute: u64,
    rotation: usize,
    on: bool,
    mut visit: impl FnMut(u64, u64, &[SplitData]),
) -> Option<()> {
    let (steady_on, _) = steady_class(ts, classes)?;
    let runs: Vec<u64> = (0..ts.len())
        .map(|k| (classes.iter()).filter(|(h, _)| h[k]).map(|(_, n)| n).sum())
        .collect();
    let choices: Vec<Vec<u64>> = ts.iter().map(|t| split_choices(t.partitions)).collect();
    // A transfer the steady state does not run (a first execution's load, a stage's fill or
    // drain) takes its largest split: its issue slots are not the steady state's, and its
    // latency is what the iterations that run it wait for.
    let mut at: Vec<usize> = (0..ts.len())
        .map(|k| match steady_on[k] {
            true => 0,
            false => choices[k].len() - 1,
        })
        .collect();
    let mut placer = Placer::new(ts, &runs, &steady_on, rotation);
    loop {
        let pieces: Vec<u64> = (0..ts.len()).map(|k| choices[k][at[k]]).collect();
        let splits = placer.place(&pieces);
        let (time, load, busiest) = period(ts, splits, &steady_on, compute);
        let total: u64 = (pieces.iter().zip(&steady_on))
            .filter(|(_, &on)| on)
            .map(|(p, _)| p)
            .sum();
        // What binds: the queues (split the longest piece on the busiest one further), or `sp`
        // or the compute (more pieces cannot shorten the steady period).
        let sp = (total * machine::dma_issue_cycles() * SEARCH_SP.0).div_ceil(SEARCH_SP.1);
        let grow = (0..ts.len())
            .filter(|&k| steady_on[k] && splits[k].queues.contains(&(busiest as u8)))
            .filter(|&k| at[k] + 1 < choices[k].len())
            .max_by_key(|&k| (piece(&ts[k], pieces[k]), std::cmp::Reverse(k)));
        visit(time, total, splits);
        if !on && (sp >= load || compute >= load) {
            break;
        }
        match grow {
            Some(k) => at[k] += 1,
            None => break,
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The placement as it was written first, every plan sorted afresh: the placer's oracle.
    fn place_afresh(
        ts: &[Transfer],
        pieces: &[u64],
        runs: &[u64],
        steady_on: &[bool],
        rotation: usize,
    ) -> Vec<SplitData> {
        let mut order: Vec<usize> = (0..ts.len()).collect();
        order.sort_by_key(|&k| (std::cmp::Reverse(piece(&ts[k], pieces[k])), k));
        let mut steady = [0u64; DMA_QUEUES];
        let mut whole = [0u64; DMA_QUEUES];
        let mut out = vec![SplitData { queues: Vec::new() }; ts.len()];
        for k in order {
            let c = piece(&ts[k], pieces[k]);
            let mut queues: Vec<usize> = (0..DMA_QUEUES)
                .map(|j| (j + rotation) % DMA_QUEUES)
                .collect();
            queues.sort_by_key(|&q| (steady[q], whole[q]));
            let mut chosen: Vec<usize> = queues.into_iter().take(pieces[k] as usize).collect();
            for &q in &chosen {
                steady[q] += if steady_on[k] { c } else { 0 };
                whole[q] += c * runs[k].max(1);
            }
            chosen.sort_by_key(|&q| (q + DMA_QUEUES - rotation) % DMA_QUEUES);
            out[k].queues = chosen.into_iter().map(|q| q as u8).collect();
        }
        out
    }

    proptest! {
        /// Over a walk of random splits (each plan a few splits from the last), the placer's
        /// plans are those of sorting every plan afresh.
        #[test]
        fn the_placer_places_as_sorting_afresh(
            sizes in prop::collection::vec((0usize..5, 1u64..9, 0u64..4, any::<bool>()), 1..40),
            steps in prop::collection::vec((0usize..40, 0usize..5), 0..60),
            rotation in 0usize..DMA_QUEUES,
        ) {
            let parts = [16u64, 32, 80, 96, 128];
            let ts: Vec<Transfer> = (sizes.iter().enumerate())
                .map(|(k, &(p, kib, _, _))| Transfer {
                    inst: k,
                    partitions: parts[p],
                    bytes: parts[p] * 512 * kib,
                    on: 1,
                    total: 1,
                })
                .collect();
            let runs: Vec<u64> = sizes.iter().map(|s| s.2).collect();
            let steady_on: Vec<bool> = sizes.iter().map(|s| s.3).collect();
            let choices: Vec<Vec<u64>> = ts.iter().map(|t| split_choices(t.partitions)).collect();
            let mut at = vec![0usize; ts.len()];
            let mut placer = Placer::new(&ts, &runs, &steady_on, rotation);
            for step in std::iter::once(None).chain(steps.into_iter().map(Some)) {
                if let Some((k, to)) = step {
                    let k = k % ts.len();
                    at[k] = to.min(choices[k].len() - 1);
                }
                let pieces: Vec<u64> = (0..ts.len()).map(|k| choices[k][at[k]]).collect();
                let want = place_afresh(&ts, &pieces, &runs, &steady_on, rotation);
                let got = placer.place(&pieces);
                prop_assert_eq!(
                    got.iter().map(|s| s.queues.clone()).collect::<Vec<_>>(),
                    want.into_iter().map(|s| s.queues).collect::<Vec<_>>()
                );
            }
        }
    }
}
