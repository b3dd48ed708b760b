//! Unrolling for the emergent path: the seed's heuristic unroll, with the factor chosen from the
//! DMA queue plan.
//!
//! A DMA instruction names its queues, the same in every iteration (MACHINE.md). A loop body with
//! few large transfers therefore either splits each over many queues, in short pieces that cost
//! `sp` one issue slot each (the loop becomes `sp`-bound), or leaves queues idle. Unrolling by `U`
//! gives the queue plan `U` copies of each transfer to place on different queues, so the same
//! bytes move in fewer, longer pieces.
//!
//! [`unroll_loops`] looks at every innermost loop that carries no annotation and has a transfer.
//! For `U` in 1, 2, 4, 8, it packs `U` copies of the body's transfers with the queue plan's own
//! packing ([`crate::cost::queue_pack::packed_period`]) and divides by `U`: the DMA time per original
//! iteration. A factor is tried only when the unrolled loop keeps at least [`MIN_TRIP`]
//! iterations (a pipelined loop of fewer pays more in fill and drain than the plan gains), or
//! when it unrolls the loop fully into an enclosing loop of at least two iterations: an
//! un-annotated one, which then pipelines the copies, or one the annotated pipeliner extended,
//! where the copies run in the loop's stage under its guards. A full unroll is tried at any trip
//! up to the largest factor (a trip of 3, 5, 6 or 7 has no other factor: measured, `tests/good`'s
//! nest_whole 14,968 → 10,532 cycles, tail_consumers' tail_nested 8,567 → 6,334,
//! prefetch_holder's holder_chunks 18,528 → 14,570 on `default`), and only when every transfer's
//! tile is private to an iteration (the enclosing loop rings only the tiles each copy writes
//! whole first; masked_tiles' ragged_rows_cols, whose masked load shares its tile between the
//! copies, ran 17,932 → 45,576 cycles unrolled); and when SBUF has room for two slots of every private SBUF tile of every copy, and
//! PSUM for a bank of every private PSUM tile of every copy ([`crate::cost::budget`]: an
//! unrolled loop's PSUM plan then always fits, at worst with its PSUM tiles unringed). It takes
//! the smallest `U` within [`GAIN_PERCENT`] of the best, when that beats `U = 1` by at least as much,
//! the body has compute to overlap (a loop of transfers alone only lengthens each transfer with
//! fewer pieces) and its compute per iteration is below its DMA time (a compute-bound loop gains
//! nothing from a faster queue plan). A loop whose factor-1 plan is no better unrolled is still
//! unrolled when its loads are bound by their latency: a load's transfer time (latency, queue
//! time and issue, [`crate::cost::loop_cost::wanted_depth`]) over the loop's period (the longer
//! of its compute and its DMA time at factor 1) wants more ring slots than a ring holds
//! ([`crate::cost::loop_cost::MAX_DEPTH`]), and `U` copies keep `U` times as many tiles in flight;
//! it takes the smallest factor that holds them (or the largest tried), among those whose
//! queue plan is no more than [`GAIN_PERCENT`] slower. Each decision and its reason is logged.
//!
//! The unrolled loop keeps its axis: it runs `q = trip / U` iterations from 0, and its body holds
//! `U` copies of the old body, copy `u` with the induction variable replaced by
//! `U·iv + lb + u` in every access and guard. A full unroll puts the copies (the induction
//! variable replaced by `lb + u`) in the loop's place and leaves the loop empty, of trip 0. A
//! tile private to an iteration (an on-chip local tensor that only this body touches, first written whole by an unguarded statement that does
//! not read it) gets a fresh tensor in every copy but the first, so the copies are independent
//! and the emergent pass rings each; any other tensor is shared, in program order, which keeps
//! every value. When `U` does not divide the trip count, a remainder loop of `trip mod U`
//! iterations (a new axis `iv.rem`, the old body with its own private tiles) follows, under the
//! loop statement's guards and stage.
//!
//! The copies, renamed tiles and the remainder loop are made with [`penguin::edit`].
//!
//! What every loop's decision reads of the whole kernel (the SBUF and PSUM in use, which tiles
//! statements outside the loop touch) is found by one walk of the kernel ([`KernelIndex`]) and
//! kept until a loop is unrolled: a kernel of `n` loops costs `n` walks only if it unrolls them
//! all, not for asking.
//!
//! Invariants: the function verifies after the pass; every copied statement and instruction keeps
//! its side tables (spans, annotations, stage tag); the instances run, and the order of the accesses to every shared
//! tensor, are those of the loop as written.

use crate::cost::dma::{dma_tile, transfer_bytes};
use crate::transform::remark::{Remark, UnrollDecline};
use penguin::affine::AffineExpr;
use penguin::edit::{self, Cursor, Subst};
use penguin::ir::{Memory, Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The factors tried.
pub const FACTORS: [u32; 4] = [1, 2, 4, 8];

/// The fewest iterations an unrolled loop keeps (the fill and drain of a pipelined loop of fewer
/// cost more than the queue plan gains).
pub const MIN_TRIP: i64 = 4;

/// How much faster per iteration (percent) a larger factor's queue plan must be to be taken.
pub const GAIN_PERCENT: u64 = 5;

/// A loop [`unroll_loops`] unrolled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnrolledData {
    /// The loop's induction variable, as written.
    pub iv: String,
    pub factor: u32,
}

/// Unrolls the innermost un-annotated loops whose transfers spread better over the queues
/// unrolled; returns the loops it unrolled and the log lines (one per loop considered).
pub fn unroll_loops(func: &mut Function) -> (Vec<UnrolledData>, Vec<Remark>) {
    let mut unrolled = Vec::new();
    let mut log = Vec::new();
    // The index of `func` as it stands; dropped when a loop is unrolled.
    let mut index: Option<KernelIndex> = None;
    for l in candidates(func) {
        let transfers = transfers(func, l);
        if transfers.is_empty() {
            continue;
        }
        let name = func.display_iv(l).to_string();
        let trip = func.axes[l].trip_count();
        let ix = index.get_or_insert_with(|| KernelIndex::compute(func));
        let private = private_tiles(func, l, ix);
        let tried = tried_factors(func, l, &transfers, &private, ix);
        let Some(&(_, one)) = tried.first() else {
            continue;
        };
        let best = tried.iter().map(|&(_, p)| p).min().unwrap_or(one);
        let (u, p) = tried
            .iter()
            .copied()
            .find(|&(_, p)| p * 100 <= best * (100 + GAIN_PERCENT))
            .unwrap_or((1, one));
        let compute = crate::cost::loop_cost::body_compute(func, &func.axes[l].body);
        let (wanted, deeper) = deeper_factor(func, l, &private, compute, one, &tried);
        let spreads = u > 1 && p * 100 <= one * (100 - GAIN_PERCENT);
        let u = match deeper {
            Some((d, _)) if !spreads => d,
            _ => u,
        };
        let by_latency = !spreads && deeper.is_some();
        let why = if !spreads && !by_latency {
            Some(UnrollDecline::NoBetterSpread)
        } else if compute == 0 {
            Some(UnrollDecline::NoCompute)
        } else if compute >= one {
            Some(UnrollDecline::ComputeBound { compute, dma: one })
        } else {
            None
        };
        if let Some(why) = why {
            log.push(Remark::UnrollDeclined {
                iv: name,
                trip,
                why,
                periods: tried,
            });
            continue;
        }
        log.push(Remark::Unrolled {
            iv: name.clone(),
            trip,
            factor: u,
            remainder: trip % i64::from(u),
            periods: tried,
            compute,
            private: private.len(),
            deeper: by_latency.then_some(wanted),
        });
        unroll(func, l, u, &private);
        index = None;
        unrolled.push(UnrolledData {
            iv: name.clone(),
            factor: u,
        });
    }
    (unrolled, log)
}

/// The innermost un-annotated loops of instructions alone (no predicates): the loops unrolling
/// may copy.
fn candidates(func: &Function) -> Vec<Axis> {
    func.axes
        .keys()
        .filter(|&l| {
            let ad = &func.axes[l];
            ad.attrs.num_stages.is_none()
                && ad.attrs.pipelined.is_none()
                && ad.attrs.multi_buffer.is_none()
                && ad.body.iter().all(|&s| {
                    matches!(func.stmts[s].kind, StmtKind::Insts(_))
                        && func.stmts[s].preds.is_empty()
                })
        })
        .collect()
}

/// The factors loop `l` may be unrolled by (its trip count and the memory of the copies of its
/// `private` tiles allow them), each with the period its `transfers` pack into per iteration.
fn tried_factors(
    func: &Function,
    l: Axis,
    transfers: &[(u64, u64)],
    private: &[Tensor],
    index: &KernelIndex,
) -> Vec<(u32, u64)> {
    let trip = func.axes[l].trip_count();
    // A full unroll leaves the copies to the enclosing loop's pipelining.
    let enclosed = edit::locate_loop(func, l)
        .and_then(|p| p.0)
        .is_some_and(|p| {
            // An un-annotated loop pipelines the copies; a loop the annotated pipeliner
            // extended runs them in the stage of the loop they replace.
            let pd = &func.axes[p];
            let pipelines = pd.attrs.pipelined.is_some()
                || (pd.attrs.num_stages.is_none() && pd.attrs.pipelined.is_none());
            pipelines && pd.trip_count() >= 2
        });
    let period = |u: u32| {
        let copies: Vec<(u64, u64)> = (0..u).flat_map(|_| transfers.iter().copied()).collect();
        crate::cost::queue_pack::packed_period(&copies) / u64::from(u)
    };
    let sbuf_copy: u64 = private
        .iter()
        .filter(|&&t| func.tensors[t].memory == Memory::Sbuf)
        .map(|&t| crate::cost::budget::tensor_bytes(&func.tensors[t]))
        .sum();
    let in_use = index.in_use.sbuf;
    // The PSUM banks of one copy's private tiles: every copy holds its own (one slot each;
    // the emergent pass rings a PSUM tile only where a bank is free).
    let psum_copy: u64 = private
        .iter()
        .filter(|&&t| func.tensors[t].memory == Memory::Psum)
        .map(|&t| crate::cost::budget::psum_slot_banks(&func.tensors[t]))
        .sum();
    let psum_in_use = index.in_use.psum_banks;
    // A full unroll hands the copies to the enclosing loop, which rings only the tiles each
    // copy writes whole first: a copy's transfer whose tile is shared with the other copies (a
    // masked load writes part of it) would wait for the copy before it.
    let enclosed = enclosed && dma_tiles(func, l).iter().all(|t| private.contains(t));
    // A full unroll into an enclosing loop is tried at any trip up to the largest factor,
    // not only at the factors' powers of two (a trip of 3, 5, 6 or 7 has no other).
    let full = u32::try_from(trip)
        .ok()
        .filter(|&t| enclosed && t > 1 && t <= FACTORS[FACTORS.len() - 1]);
    let mut factors: Vec<u32> = FACTORS.into_iter().chain(full).collect();
    factors.sort_unstable();
    factors.dedup();
    factors
        .into_iter()
        // Enough iterations left to pipeline, or a full unroll into an enclosing loop.
        .filter(|&u| {
            u == 1 || trip / i64::from(u) >= MIN_TRIP || (trip == i64::from(u) && enclosed)
        })
        // Two slots of every private SBUF tile of every copy (the emergent pass rings each),
        // and a bank for every private PSUM tile of every copy.
        .filter(|&u| {
            u == 1
                || (crate::cost::budget::sbuf_fits(in_use + sbuf_copy * (2 * u64::from(u) - 1))
                    && crate::cost::budget::psum_fits(psum_in_use + psum_copy * (u64::from(u) - 1)))
        })
        .map(|u| (u, period(u)))
        .collect()
}

/// The ring slots loop `l`'s loads want to hide their transfers behind its period (`wanted`),
/// and the factor (with its period) among `tried` that keeps that many tiles in flight when the
/// loop's `compute` is shorter than its transfers' period `one` at factor 1.
fn deeper_factor(
    func: &Function,
    l: Axis,
    private: &[Tensor],
    compute: u64,
    one: u64,
    tried: &[(u32, u64)],
) -> (u64, Option<(u32, u64)>) {
    // The ring slots the loop's loads want to hide their transfer's time behind the period
    // (the longer of the compute and the transfers' period at factor 1): a load whose
    // latency a ring of [`MAX_DEPTH`] slots does not hide keeps `U · MAX_DEPTH` tiles in
    // flight with `U` copies.
    let loaded = loaded_in(func, l);
    let wanted = (private.iter())
        .filter(|t| loaded.contains(t))
        .map(|&t| {
            let fit = crate::cost::loop_cost::wanted_depth(func, t, l);
            1 + fit.dma.div_ceil(compute.max(one).max(1))
        })
        .max()
        .unwrap_or(0);
    let depth = u64::from(crate::cost::loop_cost::MAX_DEPTH);
    let deeper = (compute > 0 && compute < one && wanted > depth)
        .then(|| {
            let fits: Vec<(u32, u64)> = (tried.iter().copied())
                .filter(|&(f, q)| f > 1 && q * 100 <= one * (100 + GAIN_PERCENT))
                .collect();
            (fits.iter().copied())
                .find(|&(f, _)| u64::from(f) * depth >= wanted)
                .or_else(|| fits.last().copied())
        })
        .flatten();
    (wanted, deeper)
}

/// The tensors a load of loop `l`'s body writes (found once for every tile asked about: a body
/// of thousands of tiles costs its length, not its length per tile).
fn loaded_in(func: &Function, l: Axis) -> std::collections::HashSet<Tensor> {
    (func.axes[l].body.iter())
        .filter_map(|&s| match &func.stmts[s].kind {
            StmtKind::Insts(insts) => Some(insts),
            _ => None,
        })
        .flatten()
        .filter(|&&i| matches!(func.insts[i].op, Op::Load))
        .map(|&i| func.insts[i].dst.tensor)
        .collect()
}

/// `(partitions, bytes)` of every transfer of `l`'s body.
fn transfers(func: &Function, l: Axis) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &s in &func.axes[l].body {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                if let (Some(tile), Some(bytes)) = (
                    dma_tile(&d.op, &d.dst, &d.srcs),
                    transfer_bytes(func, &d.op, &d.dst, &d.srcs),
                ) {
                    let partitions = tile.access.size.first().copied().unwrap_or(1).max(1);
                    out.push((partitions, bytes));
                }
            }
        }
    }
    out
}

/// The on-chip tiles of the loads and stores directly in `l`'s body.
fn dma_tiles(func: &Function, l: Axis) -> BTreeSet<Tensor> {
    let mut out = BTreeSet::new();
    for &s in &func.axes[l].body {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                if let Some(tile) = dma_tile(&d.op, &d.dst, &d.srcs) {
                    out.insert(tile.tensor);
                }
            }
        }
    }
    out
}

/// What [`unroll_loops`] reads of the whole kernel, found by one walk of it: the memory in use
/// ([`crate::cost::budget::compute_in_use`]), the statements the walk reaches, and per tensor the
/// number of those statements whose instructions access it.
struct KernelIndex {
    in_use: crate::cost::budget::InUse,
    reached: HashSet<Stmt>,
    stmts_touching: HashMap<Tensor, usize>,
}

impl KernelIndex {
    fn compute(func: &Function) -> Self {
        let mut reached = HashSet::new();
        let mut stmts_touching: HashMap<Tensor, usize> = HashMap::new();
        func.walk_stmts(|s, _| {
            reached.insert(s);
            for t in touched(func, s) {
                *stmts_touching.entry(t).or_insert(0) += 1;
            }
        });
        KernelIndex {
            in_use: crate::cost::budget::compute_in_use(func),
            reached,
            stmts_touching,
        }
    }
}

/// The tensors the instructions of statement `s` access (none for a loop statement).
fn touched(func: &Function, s: Stmt) -> BTreeSet<Tensor> {
    let StmtKind::Insts(insts) = &func.stmts[s].kind else {
        return BTreeSet::new();
    };
    (insts.iter())
        .flat_map(|&i| {
            let d = &func.insts[i];
            d.srcs.iter().chain([&d.dst]).map(|o| o.tensor)
        })
        .collect()
}

/// The on-chip local tensors private to one iteration of `l` (module doc), a loop of
/// instruction statements alone ([`candidates`]); `index` is `func`'s. A tensor is touched
/// outside the body when more statements of the kernel touch it than statements of the body.
fn private_tiles(func: &Function, l: Axis, index: &KernelIndex) -> Vec<Tensor> {
    let body = &func.axes[l].body;
    // A loop the kernel no longer reaches (an inner loop a full unroll emptied) has nothing
    // private: none of its accesses runs.
    if !body.iter().all(|s| index.reached.contains(s)) {
        return Vec::new();
    }
    // Per tensor the body touches, whether its first access (program order) writes all of it
    // without reading it; and how many of the body's statements touch it.
    let mut first: BTreeMap<Tensor, bool> = BTreeMap::new();
    let mut inside: HashMap<Tensor, usize> = HashMap::new();
    for &s in body {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            continue;
        };
        for t in touched(func, s) {
            *inside.entry(t).or_insert(0) += 1;
        }
        for &i in insts {
            let d = &func.insts[i];
            for o in &d.srcs {
                first.entry(o.tensor).or_insert(false);
            }
            let td = &func.tensors[d.dst.tensor];
            let whole = d.writes_whole(&td.shape);
            let reads = matches!(d.op, Op::Matmul { accumulate: true })
                || d.srcs.iter().any(|o| o.tensor == d.dst.tensor);
            first.entry(d.dst.tensor).or_insert(whole && !reads);
        }
    }
    let outside = |t: &Tensor| index.stmts_touching.get(t) > inside.get(t);
    first
        .into_iter()
        .filter(|&(t, ok)| {
            let td = &func.tensors[t];
            ok && !outside(&t)
                && td.kind == TensorKind::Local
                && td.memory != Memory::Hbm
                && td.block.is_empty()
        })
        .map(|(t, _)| t)
        .collect()
}

/// A fresh copy of every tile of `private` ([`edit::copy_tensor`], named `name.tag`), as the
/// renames of a substitution.
fn fresh_tiles(func: &mut Function, private: &[Tensor], tag: &str) -> Vec<(Tensor, Tensor)> {
    private
        .iter()
        .map(|&t| (t, edit::copy_tensor(func, t, tag)))
        .collect()
}

/// Unrolls `l` by `u` (module doc).
fn unroll(func: &mut Function, l: Axis, u: u32, private: &[Tensor]) {
    let (lb, trip) = (func.axes[l].lb, func.axes[l].trip_count());
    let q = trip / i64::from(u);
    let rem = trip % i64::from(u);
    let body = func.axes[l].body.clone();
    let place = edit::locate_loop(func, l).expect("a loop of the verified tree is in the tree");
    // The remainder loop first, from the old body and tensors.
    if rem > 0 {
        let name = edit::fresh_iv_name(func, &edit::derived(&func.axes[l].iv_name, "rem"));
        let r = edit::copy_loop_header(func, l, name);
        func.axes[r].lb = lb + q * i64::from(u);
        func.axes[r].ub = lb + trip;
        // Its own private tiles: the main loop's accesses then meet no access outside it, which
        // keeps the main loop clampable for the synchronisation analysis ([`crate::codegen::clamp`]).
        let renamed = fresh_tiles(func, private, "rem");
        let sub = Subst::new().axis(l, AffineExpr::iv(r)).tensors(renamed);
        let rbody: Vec<Stmt> = body
            .iter()
            .map(|&s| edit::copy_stmt(func, s, &sub, "rem"))
            .collect();
        func.axes[r].body = rbody;
        // Its statement stands beside the loop's, under the same guards and in the same stage
        // (a loop in a user's stage of an extended loop runs only on that stage's iterations).
        let rs = func.add_loop_stmt(r);
        let ls = func.block(place.0)[place.1];
        func.stmts[rs].preds = func.stmts[ls].preds.clone();
        edit::copy_stmt_tables(func, ls, rs);
        Cursor::at(func, place).insert_after([rs]);
    }
    // The unrolled loop: copies 1.. from the body as written, then copy 0 in place. A full
    // unroll's copies leave the loop: their induction variable is a constant.
    let full = q == 1 && rem == 0;
    let at = |k: u32| {
        if full {
            AffineExpr::constant(lb + i64::from(k))
        } else {
            AffineExpr::from_terms([(l, i64::from(u))], lb + i64::from(k))
        }
    };
    let mut copies = Vec::new();
    for k in 1..u {
        let tag = format!("u{k}");
        let renamed = fresh_tiles(func, private, &tag);
        let sub = Subst::new().axis(l, at(k)).tensors(renamed);
        copies.extend(body.iter().map(|&s| edit::copy_stmt(func, s, &sub, &tag)));
    }
    let sub = Subst::new().axis(l, at(0));
    for &s in &body {
        sub.apply(func, s);
    }
    let new_body: Vec<Stmt> = body.iter().copied().chain(copies).collect();
    if full {
        // The copies take the loop's place in its block, under its guards and in its stage (the
        // body's statements have no guards of their own, see `candidates`), and the loop stays
        // behind them, empty, of trip 0 (an axis is the loop of exactly one statement).
        let ls = func.block(place.0)[place.1];
        for &s in &new_body {
            func.stmts[s].preds = func.stmts[ls].preds.clone();
            func.annots[s] = func.annots[ls];
            func.stage_tags[s] = func.stage_tags[ls];
        }
        Cursor::at(func, place).insert_before(new_body);
        func.axes[l].lb = 0;
        func.axes[l].ub = 0;
        func.axes[l].body = Vec::new();
        return;
    }
    func.axes[l].lb = 0;
    func.axes[l].ub = q;
    func.axes[l].body = new_body;
}

#[cfg(test)]
mod tests {
    use super::*;
    use penguin::affine::CmpOp;

    /// An un-annotated, transfer-bound loop `c` (trip 9) in stage 1 of the extended `r`: its
    /// statement is guarded `r >= 1`, and so must be its remainder loop's.
    const IN_STAGE: &str = "kernel probe(x) -> (y) {
  tensor x: hbm f32[512, 1152] input
  tensor y: hbm f32[1152, 512] output
  tensor t: sbuf f32[128, 128] local
  tensor tp: psum f32[128, 128] local
  tensor o: sbuf f32[128, 128] local
  loop r in 0..5 affine pipelined(stages=2, trip=4) {
    loop c in 0..9 affine stage_id=1 stage=1 if r >= 1 {
      stmt {
        t[0 +: 128, 0 +: 128] = load.dma x[128*r - 128 +: 128, 128*c +: 128]
      }
      stmt {
        tp[0 +: 128, 0 +: 128] = transpose.pe t[0 +: 128, 0 +: 128]
      }
      stmt {
        o[0 +: 128, 0 +: 128] = copy.any tp[0 +: 128, 0 +: 128]
      }
      stmt {
        y[128*c +: 128, 128*r - 128 +: 128] = store.dma o[0 +: 128, 0 +: 128]
      }
    }
  }
}
";

    #[test]
    fn a_remainder_loop_keeps_the_guards_and_stage_of_its_loop() {
        let mut func = penguin::parse_function(IN_STAGE).expect("the test kernel parses");
        let (unrolled, log) = unroll_loops(&mut func);
        assert_eq!(unrolled.len(), 1, "{log:?}");
        assert!(
            // `c` runs 9 iterations: the remainder is what the factor leaves of them.
            matches!(&log[0], Remark::Unrolled { trip: 9, remainder, factor, .. }
                if *remainder > 0 && *remainder == 9 % i64::from(*factor)),
            "{log:?}"
        );
        assert!(log[0].to_string().contains("remainder loop of"), "{log:?}");
        let rem = func
            .axes
            .keys()
            .find(|&a| func.axes[a].iv_name == "c.rem")
            .expect("a remainder loop");
        let (parent, at) = edit::locate_loop(&func, rem).expect("in the tree");
        let rs = func.block(parent)[at];
        let r = parent.expect("the remainder stands in `r`");
        assert_eq!(func.stmts[rs].preds.len(), 1);
        let g = &func.stmts[rs].preds[0];
        assert_eq!((g.expr.coeff(r), g.cmp, g.bound), (1, CmpOp::Ge, 1));
        assert_eq!(func.stage_tags[rs], Some(1));
        assert_eq!(func.annots[rs].stage_id, Some(1));
        let verified = penguin::verify_function(&func);
        assert!(verified.is_ok(), "{verified:?}");
    }

    /// Eight 96-row blocks, one f32 load and two narrowing bf16 stores: each load takes about
    /// five periods of the loop to land, more than a ring's four slots hold.
    const LATENCY_BOUND: &str = "kernel narrow_two(x) -> (y, z) {
  tensor x: hbm f32[768, 384] input
  tensor y: hbm bf16[768, 384] output
  tensor z: hbm bf16[768, 128] output
  tensor t: sbuf f32[96, 384] local
  tensor a: sbuf f32[96, 384] local
  tensor b: sbuf f32[96, 128] local
  loop i in 0..8 affine {
    stmt {
      t[0 +: 96, 0 +: 384] = load.dma x[96*i +: 96, 0 +: 384]
    }
    stmt {
      a[0 +: 96, 0 +: 384] = activation.act(func=exp, scale=1.0, bias=false) t[0 +: 96, 0 +: 384]
      y[96*i +: 96, 0 +: 384] = store.dma a[0 +: 96, 0 +: 384]
    }
    stmt {
      b[0 +: 96, 0 +: 128] = tensor_scalar.dve(op=multiply, imm=0.25, reverse=false) t[0 +: 96, 0 +: 128]
      z[96*i +: 96, 0 +: 128] = store.dma b[0 +: 96, 0 +: 128]
    }
  }
}
";

    #[test]
    fn a_loop_bound_by_its_loads_latency_is_unrolled_for_more_tiles_in_flight() {
        let mut func = penguin::parse_function(LATENCY_BOUND).expect("the test kernel parses");
        let (unrolled, log) = unroll_loops(&mut func);
        // The queue plan is no better unrolled: the factor comes from the loads' latency.
        let Some(Remark::Unrolled {
            factor,
            periods,
            deeper: Some(wanted),
            ..
        }) = log.first()
        else {
            panic!("unrolled for latency: {log:?}");
        };
        let one = periods[0].1;
        let at = |f: u32| periods.iter().find(|p| p.0 == f).map(|p| p.1);
        assert!(
            at(*factor).is_some_and(|p| p * 100 > one * (100 - GAIN_PERCENT)),
            "{log:?}"
        );
        let depth = u64::from(crate::cost::loop_cost::MAX_DEPTH);
        assert!(*wanted > depth, "{log:?}");
        // The smallest factor whose copies hold the slots the loads want.
        assert!(u64::from(*factor) * depth >= *wanted, "{log:?}");
        assert!(u64::from(*factor / 2) * depth < *wanted, "{log:?}");
        assert_eq!(unrolled.len(), 1);
        assert!(log[0].to_string().contains("tiles in flight"), "{}", log[0]);
        let verified = penguin::verify_function(&func);
        assert!(verified.is_ok(), "{verified:?}");
    }
}
