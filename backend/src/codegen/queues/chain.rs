//! Chained transfers share their queues: a transfer that reads what another transfer of its body
//! wrote (the store of a loaded tile, the reload of a stored HBM region) takes the writer's
//! queues, piece for piece.
//!
//! A queue is first in, first out, and a transfer's latency overlaps the transfers before it on
//! its queue (MACHINE.md; the simulator starts a transfer's bytes when its latency has passed and
//! its queue is free). A reader whose piece `k` is queued behind the writer's piece `k` (the same
//! rows) needs no semaphore (the synchronisation pass pairs no two transfers of one queue) and
//! moves its bytes as soon as the writer's have: the link costs the piece's bytes, not a wait
//! for the writer's last piece and then a whole latency. Sharing queues costs throughput (the
//! two transfers no longer spread over twice the queues), so [`align_chained_queues`] is applied
//! only where the body's time is its chain: a body that runs once and is bound by its latency
//! (`queues::latency`), and a loop body whose iterations chain through a transfer (a load
//! reading the region a store of the previous iteration wrote: each iteration waits for the one
//! before, whatever the queues).
//!
//! A pair is aligned when the writer's written operand and the reader's read operand are the same
//! buffer, the same slot selectors, the same start and size on the first dimension (the rows its
//! pieces split), meeting in every other dimension (a true dependence), that size is both transfers' partitions, and both have as
//! many pieces. The reader then takes the writer's queues in order: piece `k` of one covers the
//! rows of piece `k` of the other. Invariant kept: each transfer's queues stay distinct and as
//! many as its pieces.

use crate::codegen::bir::{BNode, Bir, BirInst};
use crate::cost::queue_pack::{SplitData, Transfer};
use cranelift_entity::EntityRef;
use penguin::entities::Tensor;
use penguin::ir::{Op, Operand};
use std::collections::HashMap;

/// The operand a transfer writes (a load's tile, a store's HBM region) and the one it reads.
fn sides(bir: &Bir, i: BirInst) -> Option<(&Operand, &Operand)> {
    let bi = &bir.insts[i];
    match bi.op {
        Op::Load | Op::Store => Some((&bi.dst, bi.srcs.first()?)),
        _ => None,
    }
}

/// Whether `w` (written) and `r` (read) cover the same rows of one buffer (other dimensions may
/// differ), split alike over `partitions` rows.
fn same_rows(w: &Operand, r: &Operand, partitions: u64) -> bool {
    w.tensor == r.tensor
        && w.access.pattern.is_none()
        && r.access.pattern.is_none()
        && w.access.slots == r.access.slots
        && w.access.start.first() == r.access.start.first()
        && w.access.size.first() == r.access.size.first()
        && w.access.size.first() == Some(&partitions)
        && meet(w, r)
}

/// Whether `w` and `r` may meet in every dimension: their starts differ by a constant less than
/// the size of the one that starts first (starts of different terms may meet).
fn meet(w: &Operand, r: &Operand) -> bool {
    let (a, b) = (&w.access, &r.access);
    (a.start.iter().zip(&b.start))
        .zip(a.size.iter().zip(&b.size))
        .all(|((x, y), (&nx, &ny))| {
            if x.terms() != y.terms() {
                return true;
            }
            let d = y.constant_term() - x.constant_term();
            (d >= 0 && (d as u64) < nx) || (d < 0 && (d.unsigned_abs()) < ny)
        })
}

/// Each transfer's position in `body` (`None` when it is not a direct instruction of it).
fn positions(body: &[BNode], transfers: &[Transfer]) -> Vec<Option<usize>> {
    let at: HashMap<usize, usize> = (body.iter().enumerate())
        .filter_map(|(k, n)| match *n {
            BNode::Inst(i) => Some((i.index(), k)),
            BNode::Loop(_) => None,
        })
        .collect();
    transfers.iter().map(|t| at.get(&t.inst).copied()).collect()
}

/// The chained pairs `(writer, reader, carried)` of a body's `transfers` (indices into it, in
/// the order of the writer, then the reader): forward (the writer first in `body`), and with
/// `carried` also the reader first (the writer's previous iteration feeds it: the accesses are
/// the same rows in every iteration, no term of an induction variable). Only writers of the
/// buffer a transfer reads are compared with it, so a body of many transfers of distinct
/// buffers costs one pass.
pub(crate) fn chained_pairs(
    bir: &Bir,
    body: &[BNode],
    transfers: &[Transfer],
    carried: bool,
) -> Vec<(usize, usize, bool)> {
    let at = positions(body, transfers);
    let mut writers: HashMap<Tensor, Vec<usize>> = HashMap::new();
    for (w, tw) in transfers.iter().enumerate() {
        if let Some((written, _)) = sides(bir, BirInst::new(tw.inst)) {
            writers.entry(written.tensor).or_default().push(w);
        }
    }
    let mut pairs = Vec::new();
    for (r, tr) in transfers.iter().enumerate() {
        let Some((_, read)) = sides(bir, BirInst::new(tr.inst)) else {
            continue;
        };
        for &w in writers.get(&read.tensor).into_iter().flatten() {
            let tw = &transfers[w];
            let Some((written, _)) = sides(bir, BirInst::new(tw.inst)) else {
                continue;
            };
            if w == r || tw.partitions != tr.partitions || !same_rows(written, read, tw.partitions)
            {
                continue;
            }
            let (Some(pw), Some(pr)) = (at[w], at[r]) else {
                continue;
            };
            let fixed = read.access.start.iter().all(|e| e.terms().is_empty());
            match pw < pr {
                true => pairs.push((w, r, false)),
                false if carried && fixed => pairs.push((w, r, true)),
                false => {}
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// Gives the reader of each of `pairs` ([`chained_pairs`] of `body`'s `transfers`) the queues
/// of its writer when both have as many pieces (module doc). Returns how many transfers changed
/// queues.
pub(crate) fn align_chained_queues(
    body: &[BNode],
    transfers: &[Transfer],
    splits: &mut [SplitData],
    mut pairs: Vec<(usize, usize, bool)>,
) -> usize {
    // Forward pairs in the body's order, so that a chain of several links follows its first
    // writer; the carried ones last.
    let at = positions(body, transfers);
    pairs.sort_by_key(|&(w, r, c)| (c, at[r], at[w]));
    let mut changed = 0;
    let mut aligned = vec![false; transfers.len()];
    for (w, r, _) in pairs {
        if aligned[r] || splits[w].pieces() != splits[r].pieces() {
            continue;
        }
        aligned[r] = true;
        if splits[r] != splits[w] {
            splits[r] = splits[w].clone();
            changed += 1;
        }
    }
    changed
}
