//! What one consumer must wait for on one producer ([`crate::codegen::sync`]): the search of
//! the producer's latest conflicting instance before each running instance of the consumer, and
//! the distance and slack ([`Need::Distance`]), distances per iteration of a short inner loop
//! ([`Need::Pieces`]) or single signal ([`Need::First`]) that covers them all.
//!
//! Invariants: a need never asks for an instance that does not precede the consumer's (so the
//! wait cannot deadlock); distances are at most [`MAX_DISTANCE`], and a search past
//! [`MAX_WORK`] checks falls back to waiting for every earlier instance (`D = 0`), which is
//! always correct.

use super::slack::compute_slack;
use super::{common_depth, instances, MAX_DISTANCE, MAX_WORK};
use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{Emitted, Node};
use crate::codegen::footprints::{meeting_feet, Instances};
use cranelift_entity::SecondaryMap;

/// What a consumer waits for on one producer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Need {
    /// Every instance up to `distance` common iterations back, but the last `slack` of the
    /// producer's instances in the common iteration that precedes them ([`super::slack`]).
    Distance { distance: i64, slack: i64 },
    /// A distance per range of values of the innermost shared loop's register `reg`:
    /// `(first, last, distance)`, covering its iterations in order ([`pieces`]).
    Pieces {
        reg: usize,
        ranges: Vec<(i64, i64, i64)>,
    },
    /// The producer's first instance only.
    First,
}

/// The most iterations of the innermost shared loop for which distances are decided per
/// iteration ([`Need::Pieces`]); such a loop is never trip-clamped ([`crate::codegen::clamp`]), so its
/// iterations are the same in the clamped copy and the real kernel.
pub const MAX_PIECES: i64 = 8;

/// The ranges of [`Need::Pieces`] from the smallest distance found at each value of the
/// register (`None`: no conflict there, so any distance will do): consecutive values with one
/// distance share a range, and a value without a conflict joins the range before it (the first
/// range when it leads). `None` when a single distance covers every value.
pub(super) fn pieces(by: &[Option<i64>]) -> Option<Vec<(i64, i64, i64)>> {
    let mut ranges: Vec<(i64, i64, i64)> = Vec::new();
    for (j, d) in by.iter().enumerate() {
        let j = j as i64;
        match (d, ranges.last_mut()) {
            (Some(d), Some(last)) if last.2 == *d => last.1 = j,
            (None, Some(last)) => last.1 = j,
            (Some(d), _) => ranges.push((j, j, *d)),
            (None, None) => {}
        }
    }
    // Values without a conflict before the first one join the first range.
    if let Some(first) = ranges.first_mut() {
        first.0 = 0;
    }
    (ranges.len() > 1).then_some(ranges)
}

/// What consumer `y` must wait for on producer `x`: `None` when it never needs to wait.
///
/// The usual answer is a distance (below). But when the only instance of `x` that ever conflicts
/// with `y` is `x`'s first, which precedes every instance of `y` that runs, waiting for one signal
/// is enough, and weaker than any distance: waiting for a count that grows with the iteration
/// would tie `y` to the progress of the engine issuing `x`'s later (predicated-off) instances.
///
/// Every running instance of `y` is searched (the pruning needs them all): `found` gets, per
/// instance `v` of `y` that conflicts with an earlier one of `x`, `(v, u)` with `u` the latest
/// such instance of `x`; it is cleared and the function returns [`Search::Incomplete`] when the
/// search ran out of budget (the list is then incomplete).
pub(super) fn need(
    em: &Emitted,
    inst: &Instances,
    peeled: &SecondaryMap<BirLoop, bool>,
    xi: Node,
    yi: Node,
    found: &mut Vec<(i64, i64)>,
) -> (Option<Need>, Search) {
    let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
    let c = common_depth(x, y);
    let (tx, ty) = (&inst.trips[xi], &inst.trips[yi]);
    let px = instances(&tx[c..]);
    let xb = i64::from(xi < yi);
    let mut best: Option<i64> = None;
    // The smallest number of instances of `x` before a running `y` that it need not wait for.
    let mut least_backoff: Option<i64> = None;
    // Whether every conflict found is with `x`'s first instance, which precedes every `y`.
    let mut first_only = true;
    let mut work = 0u64;
    let running = &inst.running[xi];
    let feet = meeting_feet(x, y);
    let mut complete = true;
    // An instance's iteration of the shared loops is the leading digits of its index.
    let py = instances(&ty[c..]).max(1);
    // `last` below grows with `v`, so the search's starting point only moves forward.
    let mut from = 0;
    // The smallest distance per value of the innermost shared loop's register, when it is short.
    let inner = c
        .checked_sub(1)
        .filter(|&k| (2..=MAX_PIECES).contains(&ty[k]) && !peeled[y.loops[k]]);
    let mut by: Vec<Option<i64>> = vec![None; inner.map_or(0, |k| ty[k] as usize)];
    for &v in &inst.running[yi] {
        let linc = v / py;
        // The latest conflicting instance of `x` before this one, searched backwards among the
        // running ones from the last that precedes it in program order.
        let last = (linc + xb) * px - 1;
        if last < 0 {
            first_only = false;
        }
        let mut latest = None;
        while from < running.len() && running[from] <= last {
            from += 1;
        }
        let mut k = from;
        while k > 0 {
            k -= 1;
            let u = running[k];
            work += 1;
            if work > MAX_WORK {
                // Out of budget: wait for everything before (always correct).
                latest = Some(last);
                first_only = false;
                complete = false;
                break;
            }
            if inst.conflict(em, &feet, (xi, u), (yi, v)) {
                latest = Some(u);
                found.push((v, u));
                break;
            }
        }
        if let Some(u) = latest {
            first_only &= u == 0;
            // The largest D with (linc - D + xb) * px >= u + 1.
            let d = (linc + xb - (u + 1 + px - 1) / px).clamp(0, MAX_DISTANCE);
            best = Some(best.map_or(d, |b: i64| b.min(d)));
            let backoff = (linc + xb) * px - (u + 1);
            least_backoff = Some(least_backoff.map_or(backoff, |b: i64| b.min(backoff)));
            if let Some(k) = inner {
                let at = &mut by[(linc % ty[k]) as usize];
                *at = Some(at.map_or(d, |b: i64| b.min(d)));
            }
        }
        if !complete {
            break;
        }
    }
    if !complete {
        found.clear();
    }
    let need = match best {
        None => None,
        Some(_) if first_only => Some(Need::First),
        Some(d) => match (inner, complete.then(|| pieces(&by)).flatten()) {
            (Some(reg), Some(ranges)) => Some(Need::Pieces { reg, ranges }),
            _ => Some(Need::Distance {
                distance: d,
                slack: compute_slack(least_backoff.unwrap_or(0), px),
            }),
        },
    };
    let search = match complete {
        false => Search::Incomplete,
        true => Search::Complete,
    };
    (need, search)
}

/// How [`need`]'s search of the conflicting instances ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Search {
    /// Out of budget: the conflicts found are incomplete.
    Incomplete,
    /// Every conflicting instance was found.
    Complete,
}
