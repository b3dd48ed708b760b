//! Chained transfers share their queues: a transfer that follows another transfer of the same
//! bytes (the store of a loaded tile, the reload of a stored HBM region, a store of HBM bytes
//! that an earlier transfer read or wrote) takes the leader's queues, piece for piece.
//!
//! A queue is first in, first out, and a transfer's latency overlaps the transfers before it on
//! its queue (MACHINE.md; the simulator starts a transfer's bytes when its latency has passed and
//! its queue is free). A follower whose piece `k` is queued behind the leader's piece holding
//! the same rows needs no semaphore (the synchronisation pass pairs no two transfers of one
//! queue) and moves its bytes as soon as the leader's have: the link costs the piece's bytes,
//! not a wait for the leader's last piece and then a whole latency.
//!
//! **Pairs.** A leader `L` and a follower `F` of one buffer: `F` reads what `L` wrote (any
//! memory), or, on HBM, `F` is a store of bytes `L` loaded or stored (the anti- and output
//! dependences: no path renames HBM). Their accesses line up ([`line_up`]) when they are boxes of
//! the same slot selectors whose first dimension (the rows the pieces split, as many as the
//! partitions) starts at the same terms, `F`'s rows lie within `L`'s, and begin and end on
//! boundaries of `L`'s pieces: `F` then splits into pieces of `L`'s rows and its piece `k` takes the
//! queue of `L`'s piece `first + k`. A store of 128 rows read back as two reloads of 64 rows each
//! splits each reload into half the store's pieces, the first reload on the store's first
//! queues, the second on its last; a reload in another dtype than the tile is the same rows of
//! the same HBM tensor (the pieces count rows, not bytes). Rows that do not line up (a reload
//! across the pieces' boundaries, or whose rows move with another loop variable than its
//! writer's) keep their own split and their semaphore.
//!
//! **Within a body** ([`chained_pairs`], [`align_chained_queues`]). Sharing queues costs
//! throughput (the two transfers no longer spread over twice the queues), so the body's pairs
//! are aligned only where the body's time is its chain: a body that runs once and is bound by
//! its latency (`queues::latency`), and a loop body whose iterations chain through a transfer (a
//! load reading the region a store of the previous iteration wrote, or a store of the region the
//! previous iteration read: each iteration waits for the one before, whatever the queues).
//!
//! **Across stages** ([`shifted_pairs`], [`align_shifted_queues`]). In a pipelined loop a
//! follower may read what its leader wrote `δ` iterations of the extended loop earlier (a reload
//! in the stage after the store of its rows: the leader's rows at `iv − δ` are the follower's
//! at `iv`). `sp` issues the leader's instance `δ` bodies before the follower's, so on the same
//! queues the follower is again first in, first out behind it, whatever the order of one body.
//! A loop whose iterations do not chain aligns such pairs, and the forward pairs of its body,
//! only where that costs no throughput (`codegen::queues`): the follower is then issued as soon
//! as `sp` reaches it, instead of holding `sp` (and every transfer behind it, the next
//! iterations' loads included) until its leader has landed.
//!
//! **Across bodies** ([`align_across_bodies`]). A transfer whose latest conflicting HBM transfer
//! in program order is in another body (a loop reading what an earlier loop or the top level
//! stored, the top level reloading what a loop stored) follows it on its queues. Where the
//! follower keeps its number of pieces, its whole body's queues are renamed by one permutation
//! that sends the follower's queues to the leader's: every other transfer of the body keeps its
//! balance, so this costs no throughput. Otherwise (the pieces differ, or the body was renamed
//! already, or one of its transfers leads another body's) the follower alone takes the
//! leader's queues.
//!
//! **Scatters.** A scatter moves as one piece (`codegen::queues`) and writes rows its index
//! names anywhere in its box, so it lines up with no transfer's pieces; but two scatters of one
//! tensor that the plan puts on the same queue (a scatter and its own next iteration) follow
//! each other there with no semaphore, and [`queued_behind`] says so, so that the loop
//! dependence graph weighs that link by the piece, not a latency (`scatter_pieces.nk`'s
//! `scatter_blocks`: II 2,612 → 847).
//!
//! Invariant kept: each transfer's queues stay distinct and as many as its pieces, and its
//! pieces divide its partitions, as many as one of its own choices
//! ([`crate::cost::dma::split_choices`]): a follower is never cut into pieces shorter than its
//! power-of-two split's (a 70-row reload behind an 80-row store's pieces of 10 rows), which the
//! lower bound's least piece assumes.

use super::QueuePlan;
use crate::codegen::bir::{BNode, Bir, BirInst, BirLoop};
use crate::cost::queue_pack::{SplitData, Transfer};
use cranelift_entity::EntityRef;
use penguin::affine::AffineExpr;
use penguin::entities::{Axis, Tensor};
use penguin::ir::{Op, Operand};
use petgraph::unionfind::UnionFind;
use runtime_sim::machine::DMA_QUEUES;
use std::collections::{HashMap, HashSet};

/// The operand a transfer writes (a load's tile, a store's HBM region) and the one it reads.
fn sides(bir: &Bir, i: BirInst) -> Option<(&Operand, &Operand)> {
    let bi = &bir.insts[i];
    match bi.op {
        Op::Load | Op::Store => Some((&bi.dst, bi.srcs.first()?)),
        _ => None,
    }
}

/// A transfer's HBM operand and whether it writes it (a store), and its tile's partitions.
fn hbm_side(bir: &Bir, i: BirInst) -> Option<(&Operand, bool, u64)> {
    let bi = &bir.insts[i];
    let (hbm, writes, tile) = match bi.op {
        Op::Load => (bi.srcs.first()?, false, &bi.dst),
        Op::Store => (&bi.dst, true, bi.srcs.first()?),
        _ => return None,
    };
    Some((hbm, writes, *tile.access.size.first()?))
}

/// The operands through which transfer `f` follows transfer `l` (module doc): `f` reads what
/// `l` wrote, or `f` stores to the HBM tensor `l` loads or stores. `None` when neither.
fn link(bir: &Bir, l: BirInst, f: BirInst) -> Option<(&Operand, &Operand)> {
    let (written, _) = sides(bir, l)?;
    let (_, read) = sides(bir, f)?;
    if written.tensor == read.tensor {
        return Some((written, read));
    }
    let (lh, _, _) = hbm_side(bir, l)?;
    let (fh, writes, _) = hbm_side(bir, f)?;
    (writes && lh.tensor == fh.tensor).then_some((lh, fh))
}

/// Where the rows of `follow` (a transfer of `fp` partitions) lie within those of `lead` (of
/// `lp`): `(d, na, nb)`, `follow`'s rows starting `d` rows into `lead`'s `na`, `nb` of them.
/// `None` unless both are boxes of one buffer and the same slot selectors, each first dimension
/// its transfer's partitions, starting at the same terms, `follow`'s within `lead`'s, meeting in
/// every other dimension.
fn within(lead: &Operand, lp: u64, follow: &Operand, fp: u64) -> Option<(u64, u64, u64)> {
    let (a, b) = (&lead.access, &follow.access);
    if lead.tensor != follow.tensor
        || a.pattern.is_some()
        || b.pattern.is_some()
        || a.slots != b.slots
    {
        return None;
    }
    let (sa, sb) = (a.start.first()?, b.start.first()?);
    let (&na, &nb) = (a.size.first()?, b.size.first()?);
    if na != lp || nb != fp || sa.terms() != sb.terms() || !meet(lead, follow) {
        return None;
    }
    let d = u64::try_from(sb.constant_term() - sa.constant_term()).ok()?;
    (d + nb <= na).then_some((d, na, nb))
}

/// How `follow`'s pieces line up with those of `lead` split in `pieces`: `(first, n)`, `follow`
/// split into `n` pieces of `lead`'s rows per piece, its piece `k` on the rows of `lead`'s piece
/// `first + k` (module doc). `None` when its rows do not begin and end on `lead`'s pieces'
/// boundaries ([`within`] for the rest).
fn line_up(
    lead: &Operand,
    lp: u64,
    pieces: u64,
    follow: &Operand,
    fp: u64,
) -> Option<(usize, usize)> {
    let (d, na, nb) = within(lead, lp, follow, fp)?;
    if pieces == 0 || na % pieces != 0 {
        return None;
    }
    let rows = na / pieces;
    (d % rows == 0 && nb % rows == 0 && nb > 0).then(|| ((d / rows) as usize, (nb / rows) as usize))
}

/// The split that lines `follow` up behind `lead`'s `split`, if any ([`line_up`]).
fn lined_up(
    lead: &Operand,
    lp: u64,
    split: &SplitData,
    follow: &Operand,
    fp: u64,
) -> Option<SplitData> {
    let (first, n) = line_up(lead, lp, split.pieces(), follow, fp)?;
    // Only a split the planner could choose for the follower alone (its pieces no shorter than
    // its power-of-two split's, which the lower bound's least piece assumes).
    if !crate::cost::dma::split_choices(fp).contains(&(n as u64)) {
        return None;
    }
    Some(SplitData {
        queues: split.queues.get(first..first + n)?.to_vec(),
    })
}

/// Whether every piece of transfer `f` is queued right behind the piece of transfer `l` that
/// holds its rows, on the same queue, when `f` runs `distance` iterations of loop `iv` after `l`
/// (module doc): `f` follows `l` ([`link`]), and `f`'s split is the one that lines it up behind
/// `l`'s ([`lined_up`]). Across iterations (`distance > 0`) the rows must not move with `iv`
/// (each transfer's first dimension free of it), so the rows of `l`'s earlier iteration are
/// those `f` lines up with. Such an `f` needs no semaphore on `l` and moves its bytes as soon as
/// `l`'s piece has moved its own: the loop dependence graph weighs the link by `l`'s issue and
/// piece, not its whole latency ([`crate::codegen::ldg`]).
pub(crate) fn queued_behind(
    bir: &Bir,
    plan: &QueuePlan,
    l: BirInst,
    f: BirInst,
    iv: penguin::Axis,
    distance: u32,
) -> bool {
    if let Some(same) = scatters_on_one_queue(bir, plan, l, f, iv, distance) {
        return same;
    }
    let (Some((lo, fo)), Some((_, _, lp)), Some((_, _, fp))) =
        (link(bir, l, f), hbm_side(bir, l), hbm_side(bir, f))
    else {
        return false;
    };
    let (Some(ls), Some(fs)) = (plan.split(l), plan.split(f)) else {
        return false;
    };
    let moves = |o: &Operand| o.access.start.first().is_none_or(|e| e.coeff(iv) != 0);
    let fixed = !(moves(lo) || moves(fo));
    if (distance == 0 || fixed) && lined_up(lo, lp, ls, fo, fp).is_some_and(|s| &s == fs) {
        return true;
    }
    if distance == 0 {
        return false;
    }
    // `l`'s instance `distance` iterations earlier, as `f` sees it (rows or ring slots that
    // move with `iv`).
    let earlier = shifted(lo, iv, distance);
    lined_up(&earlier, lp, ls, fo, fp).is_some_and(|s| &s == fs)
}

/// `o` as the instance of its instruction `by` iterations of loop `iv` earlier accesses it:
/// `iv − by` in every start and slot selector.
fn shifted(o: &Operand, iv: Axis, by: u32) -> Operand {
    let back = AffineExpr::iv(iv).sub(&AffineExpr::constant(i64::from(by)));
    let mut o = o.clone();
    for e in o.access.start.iter_mut().chain(o.access.slots.iter_mut()) {
        *e = e.substitute(iv, &back);
    }
    o
}

/// The most iterations of the extended loop a follower may trail its leader by in
/// [`shifted_pairs`] (a user's or the emergent path's stage distance; further apart, the leader
/// has long landed anyway).
pub(crate) const MAX_SHIFT: u32 = 8;

/// The pairs `(leader, follower, δ)` of `body`'s `transfers` in loop `iv` where the follower at
/// iteration `j` reads (or, on HBM, stores over) the rows its leader's instance of iteration
/// `j − δ` wrote or touched, `1 ≤ δ ≤` [`MAX_SHIFT`], the smallest such `δ`, both accesses
/// moving with `iv` (their rows, or the ring slot of a tile: a load's slot read by its store
/// stages later; accesses that do not move are [`chained_pairs`]'s carried pairs). Their accesses line up as
/// [`within`] says once the leader's is shifted ([`shifted`]).
pub(crate) fn shifted_pairs(
    bir: &Bir,
    transfers: &[Transfer],
    iv: Axis,
) -> Vec<(usize, usize, u32)> {
    let mut pairs = Vec::new();
    for (f, tf) in transfers.iter().enumerate() {
        let fi = BirInst::new(tf.inst);
        for (l, tl) in transfers.iter().enumerate() {
            if l == f {
                continue;
            }
            let Some((lo, fo)) = link(bir, BirInst::new(tl.inst), fi) else {
                continue;
            };
            let moves = |o: &Operand| {
                let a = &o.access;
                a.start.iter().chain(&a.slots).any(|e| e.coeff(iv) != 0)
            };
            if !moves(lo) || !moves(fo) {
                continue;
            }
            let found = (1..=MAX_SHIFT)
                .find(|&d| within(&shifted(lo, iv, d), tl.partitions, fo, tf.partitions).is_some());
            if let Some(d) = found {
                pairs.push((l, f, d));
            }
        }
    }
    pairs
}

/// Gives the follower of each of `pairs` ([`shifted_pairs`]) not yet `aligned` the queues of its
/// leader's pieces that hold its rows, as [`align_chained_queues`] does within one iteration.
/// Returns the transfers lined up, leaders and followers.
pub(crate) fn align_shifted_queues(
    bir: &Bir,
    transfers: &[Transfer],
    splits: &mut [SplitData],
    pairs: &[(usize, usize, u32)],
    iv: Axis,
    aligned: &mut [bool],
) -> Vec<BirInst> {
    let mut linked = Vec::new();
    for &(l, f, d) in pairs {
        if aligned[f] {
            continue;
        }
        let (tl, tf) = (&transfers[l], &transfers[f]);
        let Some((lo, fo)) = link(bir, BirInst::new(tl.inst), BirInst::new(tf.inst)) else {
            continue;
        };
        let earlier = shifted(lo, iv, d);
        let Some(split) = lined_up(&earlier, tl.partitions, &splits[l], fo, tf.partitions) else {
            continue;
        };
        aligned[f] = true;
        splits[f] = split;
        linked.extend([BirInst::new(tl.inst), BirInst::new(tf.inst)]);
    }
    linked
}

/// For two scatters of one HBM tensor (`None` unless both `l` and `f` are), whether `f` is queued
/// right behind `l`: each moves as one piece (`codegen::queues`), and when the plan puts both on
/// one queue, `f`'s bytes move right after `l`'s, whatever rows their indices name (the
/// synchronisation pass pairs no two transfers of one queue). A scatter in a loop follows its own
/// previous iteration so. Across iterations its box must not move with `iv`, as for the other
/// transfers.
fn scatters_on_one_queue(
    bir: &Bir,
    plan: &QueuePlan,
    l: BirInst,
    f: BirInst,
    iv: penguin::Axis,
    distance: u32,
) -> Option<bool> {
    let scatter = |i: BirInst| matches!(bir.insts[i].op, Op::Scatter { .. });
    if !scatter(l) || !scatter(f) {
        return None;
    }
    let (lo, fo) = (&bir.insts[l].dst, &bir.insts[f].dst);
    let moves = |o: &Operand| o.access.start.iter().any(|e| e.coeff(iv) != 0);
    if lo.tensor != fo.tensor || (distance > 0 && (moves(lo) || moves(fo))) {
        return Some(false);
    }
    let (Some(ls), Some(fs)) = (plan.split(l), plan.split(f)) else {
        return Some(false);
    };
    Some(ls.pieces() == 1 && ls == fs)
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

/// The chained pairs `(leader, follower, carried)` of a body's `transfers` (indices into it):
/// forward (the leader first in `body`), and with `carried` also the follower first (the
/// leader's previous iteration comes before it: the follower's accesses are the same rows in
/// every iteration, no term of an induction variable). Only transfers of the buffers a transfer
/// reads or stores to are compared with it, so a body of many transfers of distinct buffers
/// costs one pass.
pub(crate) fn chained_pairs(
    bir: &Bir,
    body: &[BNode],
    transfers: &[Transfer],
    carried: bool,
) -> Vec<(usize, usize, bool)> {
    let at = positions(body, transfers);
    let mut touching: HashMap<Tensor, Vec<usize>> = HashMap::new();
    for (l, tl) in transfers.iter().enumerate() {
        let i = BirInst::new(tl.inst);
        if let Some((written, _)) = sides(bir, i) {
            touching.entry(written.tensor).or_default().push(l);
        }
        if let Some((hbm, false, _)) = hbm_side(bir, i) {
            touching.entry(hbm.tensor).or_default().push(l);
        }
    }
    let mut pairs = Vec::new();
    for (f, tf) in transfers.iter().enumerate() {
        let fi = BirInst::new(tf.inst);
        let Some((_, read)) = sides(bir, fi) else {
            continue;
        };
        let mut keys = vec![read.tensor];
        if let Some((hbm, true, _)) = hbm_side(bir, fi) {
            keys.push(hbm.tensor);
        }
        keys.dedup();
        let mut seen = HashSet::new();
        for key in keys {
            for &l in touching.get(&key).into_iter().flatten() {
                if l == f || !seen.insert(l) {
                    continue;
                }
                let tl = &transfers[l];
                let Some((lo, fo)) = link(bir, BirInst::new(tl.inst), fi) else {
                    continue;
                };
                if within(lo, tl.partitions, fo, tf.partitions).is_none() {
                    continue;
                }
                let (Some(pl), Some(pf)) = (at[l], at[f]) else {
                    continue;
                };
                let fixed = fo.access.start.iter().all(|e| e.terms().is_empty());
                match pl < pf {
                    true => pairs.push((l, f, false)),
                    false if carried && fixed => pairs.push((l, f, true)),
                    false => {}
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// Whether each of `n` transfers is on a chain of `pairs` ([`chained_pairs`]) that has a carried
/// pair: the loop's iterations follow one another through every transfer.
pub(crate) fn all_carried(n: usize, pairs: &[(usize, usize, bool)]) -> bool {
    let mut group = UnionFind::new(n);
    for &(l, f, _) in pairs {
        group.union(l, f);
    }
    let carried: HashSet<usize> = (pairs.iter())
        .filter(|p| p.2)
        .map(|&(l, _, _)| group.find_mut(l))
        .collect();
    (0..n).all(|k| carried.contains(&group.find_mut(k)))
}

/// Gives the follower of each of `pairs` ([`chained_pairs`] of `body`'s `transfers`) the
/// queues of its leader's pieces that hold its rows, split like them (module doc). Returns the
/// transfers lined up, leaders and followers.
pub(crate) fn align_chained_queues(
    bir: &Bir,
    body: &[BNode],
    transfers: &[Transfer],
    splits: &mut [SplitData],
    pairs: Vec<(usize, usize, bool)>,
) -> Vec<BirInst> {
    let mut aligned = vec![false; transfers.len()];
    align_chained_marking(bir, body, transfers, splits, pairs, &mut aligned)
}

/// [`align_chained_queues`], marking in `aligned` the followers it lines up (and skipping those
/// already marked).
pub(crate) fn align_chained_marking(
    bir: &Bir,
    body: &[BNode],
    transfers: &[Transfer],
    splits: &mut [SplitData],
    mut pairs: Vec<(usize, usize, bool)>,
    aligned: &mut [bool],
) -> Vec<BirInst> {
    // Forward pairs in the body's order, so that a chain of several links follows its first
    // leader; the carried ones last.
    let at = positions(body, transfers);
    pairs.sort_by_key(|&(l, f, c)| (c, at[f], at[l]));
    let mut linked = Vec::new();
    for (l, f, _) in pairs {
        if aligned[f] {
            continue;
        }
        let (tl, tf) = (&transfers[l], &transfers[f]);
        let Some((lo, fo)) = link(bir, BirInst::new(tl.inst), BirInst::new(tf.inst)) else {
            continue;
        };
        let Some(split) = lined_up(lo, tl.partitions, &splits[l], fo, tf.partitions) else {
            continue;
        };
        aligned[f] = true;
        splits[f] = split;
        linked.extend([BirInst::new(tl.inst), BirInst::new(tf.inst)]);
    }
    linked
}

/// The transfers of `body` and of the loops in it, in program order, each with the loop whose
/// body holds it directly (`None`: the top level).
fn walk(
    bir: &Bir,
    plan: &QueuePlan,
    body: &[BNode],
    at: Option<BirLoop>,
) -> Vec<(BirInst, Option<BirLoop>)> {
    let mut out = Vec::new();
    let mut stack = vec![(body, at, 0usize)];
    while let Some((nodes, at, k)) = stack.pop() {
        let Some(&n) = nodes.get(k) else {
            continue;
        };
        stack.push((nodes, at, k + 1));
        match n {
            BNode::Inst(i) if plan.split(i).is_some() => out.push((i, at)),
            BNode::Inst(_) => {}
            BNode::Loop(l) => stack.push((&bir.loops[l].body, Some(l), 0)),
        }
    }
    out
}

/// Lines up every transfer of HBM whose latest conflicting transfer in program order is in
/// another body behind that transfer's pieces (module doc): its body's queues renamed by a
/// permutation where it keeps its pieces and the body is free to move, else its own split
/// replaced. Returns how many transfers followed their leader.
pub(crate) fn align_across_bodies(bir: &Bir, plan: &mut QueuePlan) -> usize {
    let order = walk(bir, plan, &bir.body, None);
    // Per HBM tensor, the latest store and the latest transfer so far (positions in `order`).
    let mut last_store: HashMap<Tensor, usize> = HashMap::new();
    let mut last_any: HashMap<Tensor, usize> = HashMap::new();
    // Bodies one of whose transfers leads another body's (their queues stay), and bodies whose
    // queues changed already (renamed once at most).
    let mut leading: HashSet<Option<BirLoop>> = HashSet::new();
    let mut moved: HashSet<Option<BirLoop>> = HashSet::new();
    let mut followed = 0;
    for n in 0..order.len() {
        let (f, fb) = order[n];
        let Some((fo, writes, fp)) = hbm_side(bir, f) else {
            continue;
        };
        let lead = match writes {
            true => last_any.get(&fo.tensor),
            false => last_store.get(&fo.tensor),
        }
        .copied();
        last_any.insert(fo.tensor, n);
        if writes {
            last_store.insert(fo.tensor, n);
        }
        let Some(m) = lead else {
            continue;
        };
        let (l, lb) = order[m];
        if lb == fb {
            continue;
        }
        let (Some((lo, _, lp)), Some(lsplit)) = (hbm_side(bir, l), plan.split(l)) else {
            continue;
        };
        let Some(target) = lined_up(lo, lp, lsplit, fo, fp) else {
            continue;
        };
        leading.insert(lb);
        followed += 1;
        let own = plan.split(f).expect("walk keeps planned transfers").clone();
        if own == target {
            continue;
        }
        let renamable = !leading.contains(&fb) && !moved.contains(&fb);
        if own.pieces() == target.pieces() && renamable {
            let rename = permutation(&own, &target);
            for &(i, b) in &order {
                if b == fb {
                    let s = plan.splits[i]
                        .as_mut()
                        .expect("walk keeps planned transfers");
                    for q in &mut s.queues {
                        *q = rename[usize::from(*q)];
                    }
                }
            }
        } else if !plan.chained.contains(&f) {
            plan.splits[f] = Some(target);
        } else {
            // Its split is its body's chain's: kept (the link keeps its semaphore).
            followed -= 1;
            continue;
        }
        moved.insert(fb);
    }
    followed
}

/// A permutation of the queues that sends `from`'s queues to `to`'s, piece for piece (as many
/// pieces, each distinct), and the other queues in order to the queues left.
fn permutation(from: &SplitData, to: &SplitData) -> [u8; DMA_QUEUES] {
    let mut rename = [u8::MAX; DMA_QUEUES];
    let mut used = [false; DMA_QUEUES];
    for (&a, &b) in from.queues.iter().zip(&to.queues) {
        rename[usize::from(a)] = b;
        used[usize::from(b)] = true;
    }
    let mut free = (0..DMA_QUEUES).filter(|&q| !used[q]);
    for r in &mut rename {
        if *r == u8::MAX {
            *r = free.next().expect("as many queues left as unmapped") as u8;
        }
    }
    rename
}
