//! The packing of a body's DMA transfers onto the queues: the pieces each transfer is split into,
//! the queues they go on, and the per-iteration time the packing fits in. It is the cost model of
//! the queues that both layers read: the queue planner (`codegen::queues`, which plans every BIR
//! body with it) and the unroll heuristic ([`crate::transform::unroll`], which measures a Penguin
//! body's transfers with [`packed_period`] before any BIR exists).
//!
//! A [`Transfer`] knows only its partitions, bytes and guard fraction, and its index in program
//! order, which breaks ties so that every packing is deterministic. [`Together`] says which
//! transfers run in the same iterations (the average or the steady view of the classes of
//! iterations), and every queue time is read through it.
//!
//! Invariants of a packing ([`SplitData`] per transfer): its queues are distinct, as many as its
//! pieces, and its pieces divide the transfer's partitions.

use runtime_sim::machine::{self, DMA_QUEUES};

/// The split of one transfer: piece `k` covers partitions `[k·np/p, (k+1)·np/p)` of the tile and
/// goes on `queues[k]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitData {
    pub queues: Vec<u8>,
}

impl SplitData {
    pub fn pieces(&self) -> u64 {
        self.queues.len() as u64
    }
}

/// A transfer to place.
pub(crate) struct Transfer {
    /// The instruction's index in program order (it breaks ties between equal transfers).
    pub(crate) inst: usize,
    pub(crate) partitions: u64,
    /// The bytes it moves ([`transfer_bytes`]: in the HBM side's type, as the simulator counts
    /// them), which set each piece's length (and so the transfer's latency).
    pub(crate) bytes: u64,
    /// The fraction `on / total` of the instruction's instances its guard lets run: the queue and
    /// `sp` time it costs per iteration on average (copies of one load that take turns, such as
    /// the in-loop and carry copies of a prefetch across a nest, share the time; an off instance
    /// takes none).
    pub(crate) on: u64,
    pub(crate) total: u64,
}

impl Transfer {
    /// Average cycles per iteration of `cycles` spent when the transfer runs.
    pub(crate) fn weighted(&self, cycles: u64) -> u64 {
        (cycles * self.on).div_ceil(self.total)
    }
}

/// The smallest per-iteration time the packing fits, from the resource bound of the body up by
/// 1/32 steps, and the packing.
pub(crate) fn pack_search(
    transfers: &[Transfer],
    together: &Together,
    rotation: usize,
) -> (u64, Vec<SplitData>) {
    pack_search_reserved(transfers, together, rotation, 0)
}

/// [`pack_search`] with `reserve` cycles of `sp` per iteration taken by other transfers (those
/// of the other bodies of a loop nest): `sp` issues the pieces in what remains of the time.
pub(crate) fn pack_search_reserved(
    transfers: &[Transfer],
    together: &Together,
    rotation: usize,
    reserve: u64,
) -> (u64, Vec<SplitData>) {
    let issue = machine::dma_issue_cycles();
    // The queues' time per iteration as the transfer that sees the most sees it.
    let whole: Vec<(usize, u64)> = (transfers.iter().enumerate())
        .map(|(u, t)| (u, machine::dma_queue_cycles(t.bytes)))
        .collect();
    let busiest = together.view(transfers, None, &whole);
    let issues = together.sp_time(transfers, &vec![issue; transfers.len()]);
    let mut target = (busiest / DMA_QUEUES as u64).max(issues + reserve);
    loop {
        if let Some(splits) = pack_reserved(transfers, together, target, rotation, reserve) {
            return (target, splits);
        }
        target += target / 32 + 1;
    }
}

/// The per-iteration time of a body whose transfers are `(partitions, bytes)`, always running,
/// as the queue plan packs them (`codegen::queues::compute_queue_plan`; the unroll heuristic's
/// measure, [`crate::transform::unroll`]).
pub fn packed_period(transfers: &[(u64, u64)]) -> u64 {
    let mut ts: Vec<Transfer> = transfers
        .iter()
        .enumerate()
        .map(|(k, &(partitions, bytes))| Transfer {
            // Transfer `k` stands for the `k`-th instruction (it breaks ties, as program order).
            inst: k,
            partitions,
            bytes,
            on: 1,
            total: 1,
        })
        .collect();
    if ts.is_empty() {
        return 0;
    }
    ts.sort_by_key(|t| (std::cmp::Reverse(t.bytes), t.inst));
    pack_search(&ts, &Together::Always, 0).0
}

/// Which of a body's transfers run in the same iterations: the iterations fall into classes by
/// which transfers run in them ([`run_classes`]). Transfers that never run together (a stage's
/// fill against another's drain, a prefetch's copies that take turns) then share a queue for
/// the time of one, and a transfer that runs in few iterations must still fit in those. A
/// queue's time per iteration, as a transfer `t` sees it, is either
/// - the **average** over `t`'s iterations: each piece of transfer `u` counts for the fraction of
///   `t`'s iterations that also run `u`; or
/// - the **steady** view: the time of the pieces on it in the busiest class of iterations that
///   runs `t`. In a pipelined loop that class is the steady state, where every stage runs.
///
/// The average undercounts the steady state (its fill and drain run fewer transfers), and can
/// split transfers into more pieces than `sp` issues in a steady iteration; the steady view
/// leaves queues idle in the fill and the drain. [`compute_queue_plan`] plans with both and keeps
/// the one whose iterations, class by class, take less time ([`estimate_time`]).
#[derive(Clone)]
pub(crate) enum Together {
    /// Unknown (no guard, or too many iterations to enumerate), or some transfer is rare
    /// ([`RARE`]): every transfer runs in every iteration, each piece weighted by its transfer's
    /// guard fraction (an average).
    Always,
    /// The classes of iterations, by which transfers run in them, with how many iterations each
    /// holds (those that run some transfer), and the view.
    Counted {
        classes: Vec<(Vec<bool>, u64)>,
        steady: bool,
        /// The transfers by the classes they run in ([`Kinds`]).
        kinds: Kinds,
    },
}

/// The transfers grouped by the set of classes of iterations they run in (their *kind*): a view
/// depends on the transfer that sees it only through its kind, so it is computed once per kind,
/// and `both` between two transfers (the iterations that run both) is a table of kinds.
#[derive(Clone)]
pub(crate) struct Kinds {
    /// Per transfer, its kind.
    pub(crate) of: Vec<usize>,
    /// Per pair of kinds, the iterations that run a transfer of each.
    pub(crate) both: Vec<Vec<u64>>,
}

impl Kinds {
    /// The kinds of the transfers that run in `classes`.
    pub(crate) fn new(classes: &[(Vec<bool>, u64)]) -> Kinds {
        let n = classes.first().map_or(0, |(h, _)| h.len());
        let mut ids: std::collections::HashMap<Vec<bool>, usize> = Default::default();
        let mut reps: Vec<usize> = Vec::new();
        let of = (0..n)
            .map(|t| {
                let key: Vec<bool> = classes.iter().map(|(h, _)| h[t]).collect();
                *ids.entry(key).or_insert_with(|| {
                    reps.push(t);
                    reps.len() - 1
                })
            })
            .collect();
        let both = (reps.iter())
            .map(|&t| {
                (reps.iter())
                    .map(|&u| {
                        (classes.iter())
                            .filter(|(h, _)| h[t] && h[u])
                            .map(|&(_, c)| c)
                            .sum()
                    })
                    .collect()
            })
            .collect();
        Kinds { of, both }
    }
}

impl Together {
    /// The time of `items` (pieces `(transfer, cycles)`) per iteration as transfer `k` sees it
    /// (the type doc); as the transfer that sees the most sees it when `k` is `None`.
    pub(crate) fn view(&self, ts: &[Transfer], k: Option<usize>, items: &[(usize, u64)]) -> u64 {
        match self {
            Together::Always => items.iter().map(|&(u, c)| ts[u].weighted(c)).sum(),
            Together::Counted {
                classes,
                steady: true,
                ..
            } => (classes.iter())
                .filter(|(h, _)| k.is_none_or(|k| h[k]))
                .map(|(h, _)| items.iter().filter(|&&(u, _)| h[u]).map(|&(_, c)| c).sum())
                .max()
                .unwrap_or(0),
            Together::Counted {
                steady: false,
                kinds,
                ..
            } => {
                // As transfer `t` of kind `kt` sees them: each piece for the share of `t`'s
                // iterations that also run its transfer.
                let seen = |kt: usize| -> u64 {
                    let both = &kinds.both[kt];
                    let own = both[kt].max(1);
                    (items.iter())
                        .map(|&(u, c)| (c * both[kinds.of[u]]).div_ceil(own))
                        .sum()
                };
                match k {
                    // (No class at all: nothing runs together.)
                    Some(k) => kinds.of.get(k).map_or(0, |&kt| seen(kt)),
                    // (Every kind is some transfer's.)
                    None => (0..kinds.both.len()).map(seen).max().unwrap_or(0),
                }
            }
        }
    }

    /// The counted view of `classes` (each with its transfers' flags and its iterations).
    pub(crate) fn counted(classes: Vec<(Vec<bool>, u64)>, steady: bool) -> Together {
        Together::Counted {
            kinds: Kinds::new(&classes),
            classes,
            steady,
        }
    }

    /// The kind of transfer `k` ([`Kinds`]): two transfers of one kind see every view alike.
    pub(crate) fn kind(&self, k: usize) -> usize {
        match self {
            Together::Always => 0,
            Together::Counted { kinds, .. } => kinds.of.get(k).copied().unwrap_or(0),
        }
    }

    /// `sp`'s issue time per iteration, transfer `u` issuing `issues[u]` cycles, as the
    /// transfer that sees the most sees it.
    pub(crate) fn sp_time(&self, ts: &[Transfer], issues: &[u64]) -> u64 {
        let items: Vec<(usize, u64)> = issues.iter().copied().enumerate().collect();
        self.view(ts, None, &items)
    }
}

/// The pieces placed on each queue so far, as `(transfer, cycles)`.
pub(crate) struct Queues<'a> {
    pub(crate) ts: &'a [Transfer],
    pub(crate) together: &'a Together,
    pub(crate) pieces: [Vec<(usize, u64)>; DMA_QUEUES],
}

impl<'a> Queues<'a> {
    pub(crate) fn new(ts: &'a [Transfer], together: &'a Together) -> Self {
        Queues {
            ts,
            together,
            pieces: Default::default(),
        }
    }

    /// Queue `q`'s time per iteration as transfer `k` sees it.
    pub(crate) fn load(&self, k: usize, q: usize) -> u64 {
        self.together.view(self.ts, Some(k), &self.pieces[q])
    }

    /// Whether a piece of `cycles` of transfer `k` on `q` keeps `q` within `target` for `k` and
    /// for every transfer already on `q`.
    pub(crate) fn fits(&self, k: usize, q: usize, cycles: u64, target: u64) -> bool {
        let mut items = self.pieces[q].clone();
        items.push((k, cycles));
        // (Once per kind: transfers of one kind see the queue alike.)
        let mut kinds: Vec<usize> = Vec::new();
        std::iter::once(k)
            .chain(self.pieces[q].iter().map(|&(u, _)| u))
            .filter(|&x| {
                let kind = self.together.kind(x);
                let new = !kinds.contains(&kind);
                if new {
                    kinds.push(kind);
                }
                new
            })
            .all(|x| self.together.view(self.ts, Some(x), &items) <= target)
    }

    /// The `n` queues least loaded as transfer `k` sees them, then by all their pieces (ties:
    /// lowest index after `rotation`), in queue order.
    pub(crate) fn least_loaded(&self, k: usize, n: usize, rotation: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..DMA_QUEUES)
            .map(|j| (j + rotation) % DMA_QUEUES)
            .collect();
        let all = |q: usize| -> u64 { self.pieces[q].iter().map(|&(_, c)| c).sum() };
        // (Each queue's load computed once: a view walks every piece on the queue.)
        order.sort_by_cached_key(|&q| (self.load(k, q), all(q)));
        let mut chosen: Vec<usize> = order.into_iter().take(n).collect();
        chosen.sort_by_key(|&q| (q + DMA_QUEUES - rotation) % DMA_QUEUES);
        chosen
    }
}

/// Packs the transfers into per-iteration time `target` on the queues and `sp_target` on `sp`,
/// with as many pieces as fit, or `None`.
pub(crate) fn spread(
    transfers: &[Transfer],
    together: &Together,
    target: u64,
    sp_target: u64,
    rotation: usize,
) -> Option<Vec<SplitData>> {
    let issue = machine::dma_issue_cycles();
    let mut load = Queues::new(transfers, together);
    // Each transfer's issue time: its pieces once placed, one slot for each still to place.
    let mut issued = vec![issue; transfers.len()];
    let mut out = Vec::with_capacity(transfers.len());
    for (k, t) in transfers.iter().enumerate() {
        // More pieces than the soonest split lengthen the transfer's latency, which is what the
        // spread is for: its last piece is issued later by more than its bytes are shortened.
        let queue = machine::dma_queue_cycles(t.bytes);
        let mut p = soonest_split(largest_split(t.partitions), queue, 1);
        let chosen = loop {
            let piece = machine::dma_queue_cycles(t.bytes / p);
            let queues = load.least_loaded(k, p as usize, rotation);
            let fits = queues.iter().all(|&q| load.fits(k, q, piece, target));
            issued[k] = issue * p;
            // `sp` on average, as the compute time the spread fits in is an average.
            if fits && Together::Always.sp_time(transfers, &issued) <= sp_target {
                for &q in &queues {
                    load.pieces[q].push((k, piece));
                }
                break queues;
            }
            if p == 1 {
                return None;
            }
            p /= 2;
        };
        out.push(SplitData {
            queues: chosen.into_iter().map(|q| q as u8).collect(),
        });
    }
    Some(out)
}

/// Packs the transfers into per-iteration time `target`, or `None` when they do not fit.
#[cfg(test)]
pub(crate) fn pack(
    transfers: &[Transfer],
    together: &Together,
    target: u64,
    rotation: usize,
) -> Option<Vec<SplitData>> {
    pack_reserved(transfers, together, target, rotation, 0)
}

/// [`pack`], `sp` issuing the pieces within `target` less `reserve` (the time other transfers
/// take from it).
fn pack_reserved(
    transfers: &[Transfer],
    together: &Together,
    target: u64,
    rotation: usize,
    reserve: u64,
) -> Option<Vec<SplitData>> {
    let issue = machine::dma_issue_cycles();
    let mut load = Queues::new(transfers, together);
    let mut issued = vec![0; transfers.len()];
    let mut out = Vec::with_capacity(transfers.len());
    for (k, t) in transfers.iter().enumerate() {
        let most = largest_split(t.partitions);
        let mut p = 1;
        let chosen = loop {
            let piece = machine::dma_queue_cycles(t.bytes / p);
            let queues = load.least_loaded(k, p as usize, rotation);
            if queues.iter().all(|&q| load.fits(k, q, piece, target)) {
                for &q in &queues {
                    load.pieces[q].push((k, piece));
                }
                break queues;
            }
            if p >= most {
                return None;
            }
            p *= 2;
        };
        issued[k] = issue * chosen.len() as u64;
        out.push(SplitData {
            queues: chosen.into_iter().map(|q| q as u8).collect(),
        });
    }
    (together.sp_time(transfers, &issued) + reserve <= target).then_some(out)
}

/// The split among powers of two up to `most` that ends a transfer of `queue` cycles soonest
/// when `sharing` transfers (itself included) issue as many pieces each before its last one:
/// the `p` minimising `sharing · p · issue + queue / p`. Past it, a further split costs `sp`
/// more issue slots than it takes off the longest piece.
pub(crate) fn soonest_split(most: u64, queue: u64, sharing: u64) -> u64 {
    let issue = machine::dma_issue_cycles();
    std::iter::successors(Some(1u64), |p| (p * 2 <= most).then_some(p * 2))
        .min_by_key(|&p| (sharing * p * issue + queue.div_ceil(p), p))
        .unwrap_or(1)
}

/// The largest power of two that divides `partitions`, at most the queue count.
pub(crate) fn largest_split(partitions: u64) -> u64 {
    let mut p = 1;
    while p * 2 <= DMA_QUEUES as u64 && partitions.is_multiple_of(p * 2) {
        p *= 2;
    }
    p
}
