//! Rings of a short inner loop spread over the loop around it: the slots that a ring along an
//! inner loop cannot use become slots of the next executions of that loop.
//!
//! A ring along loop `L` (trip `T`, as realised: an extended loop counts its extra iterations)
//! gets the depth its transfer's latency wants ([`super::plan`]), `N` slots, and every access of
//! a tile renamed per iteration selects slot `iv(L) mod N`. When `L` is short and nested
//! (`N > T`), slots `T .. N` are never used, and slot `l` of the next execution of `L` is the
//! slot of iteration `l` of this one: its writer waits for this execution's last reader of the
//! slot, a store's whole DMA latency, one execution of `L` earlier instead of `N` iterations
//! earlier (measured: `tests/good`'s nest_whole, a trip of 3 and 8 slots, ran the store's slot
//! reuse as its period in the second half of the kernel).
//!
//! [`spread_outer_slots`] gives such a ring `M × T` slots instead, along the loop `O` directly
//! around `L` and along `L`: slot `(iv(O) mod M, iv(L) mod T)`, `M = ceil(N / T)` (at most
//! `O`'s trip, at least 2), so that consecutive executions of `L` use different slots (a slot is
//! reused `M` executions later); when that does not fit SBUF (every tensor counted with all its
//! slots, [`crate::cost::budget`]), `M = floor(N / T)` when that is at least 2, else the ring
//! stays as it was.
//!
//! A ring qualifies when it is an SBUF tile local to the kernel, blocked along `L` alone, `L`
//! a direct child of a loop `O` of at least two iterations; every access of the tile selects
//! slot `iv(L)` exactly (no offset: the tile holds no value from one iteration of `L` to
//! another through its slots), and every read provably finds the write of its own iteration
//! ([`crate::transform::ring_reads::compute_reads_kept`]: one unguarded-enough instruction
//! writes the whole tile first in each iteration, directly in `L`'s body). Then every read finds
//! the same write under any slot map that gives one iteration one slot, and the new one does;
//! the synchronisation analysis ([`crate::codegen::sync`]) is exact on the slots each
//! instruction touches, so the waits follow the new reuse distances.
//!
//! Invariants: only the block of a qualifying tile and the slot selectors of its accesses change
//! (`[iv(L)]` becomes `[iv(O), iv(L)]`); the program's statements, guards and loops are
//! untouched; SBUF still holds every tensor.

use super::remark::EmergentRemark;
use crate::cost::budget;
use crate::transform::ring_reads::compute_reads_kept;
use penguin::affine::AffineExpr;
use penguin::ir::{BlockDim, Memory, StmtKind, TensorKind};
use penguin::{Axis, Function, Tensor};
use std::collections::BTreeMap;

/// Spreads every qualifying ring over the loop around its loop (module doc); returns the log.
pub fn spread_outer_slots(func: &mut Function) -> Vec<EmergentRemark> {
    let mut log = Vec::new();
    let parents = compute_parents(func);
    let tiles: Vec<Tensor> = func.tensors.keys().collect();
    for t in tiles {
        let Some((l, n)) = single_ring(func, t) else {
            continue;
        };
        let Some(&o) = parents.get(&l) else {
            continue;
        };
        let trip = func.axes[l].trip_count();
        let outer = func.axes[o].trip_count();
        let (Ok(trip), Ok(outer)) = (u32::try_from(trip), u32::try_from(outer)) else {
            continue;
        };
        if trip < 1 || n <= trip || outer < 2 || !selects_iv(func, t, l) {
            continue;
        }
        if !compute_reads_kept(func, t, l, n) {
            continue;
        }
        let ceil = n.div_ceil(trip).clamp(2, outer);
        let floor = (n / trip).min(outer);
        let before = func.tensors[t].block.clone();
        let mut placed = None;
        for m in [ceil, floor] {
            if m < 2 {
                continue;
            }
            func.tensors[t].block = vec![
                BlockDim { axis: o, count: m },
                BlockDim {
                    axis: l,
                    count: trip,
                },
            ];
            if budget::sbuf_fits(budget::sbuf_in_use(func)) {
                placed = Some(m);
                break;
            }
        }
        let Some(m) = placed else {
            func.tensors[t].block = before;
            continue;
        };
        let sel = vec![AffineExpr::iv(o), AffineExpr::iv(l)];
        for (_, d) in func.insts.iter_mut() {
            if d.dst.tensor == t {
                d.dst.access.slots = sel.clone();
            }
            for x in &mut d.srcs {
                if x.tensor == t {
                    x.access.slots = sel.clone();
                }
            }
        }
        log.push(EmergentRemark::OuterSlots {
            tile: func.display_name(t).to_string(),
            iv: func.display_iv(l).to_string(),
            outer: func.display_iv(o).to_string(),
            before: n,
            slots: (m, trip),
        });
    }
    log
}

/// Per loop, the loop whose body holds it directly.
fn compute_parents(func: &Function) -> BTreeMap<Axis, Axis> {
    let mut parents = BTreeMap::new();
    func.walk_stmts(|s, loops| {
        if let (StmtKind::Loop(a), Some(&p)) = (&func.stmts[s].kind, loops.last()) {
            parents.insert(*a, p);
        }
    });
    parents
}

/// `(L, N)` when `t` is an SBUF tile local to the kernel, a ring of `N` slots along `L` alone.
fn single_ring(func: &Function, t: Tensor) -> Option<(Axis, u32)> {
    let td = &func.tensors[t];
    if td.memory != Memory::Sbuf || td.kind != TensorKind::Local {
        return None;
    }
    match td.block.as_slice() {
        [b] => Some((b.axis, b.count)),
        _ => None,
    }
}

/// Whether every access of `t` selects slot `iv(l)` exactly.
fn selects_iv(func: &Function, t: Tensor, l: Axis) -> bool {
    let iv = [AffineExpr::iv(l)];
    func.insts.values().all(|d| {
        std::iter::once(&d.dst)
            .chain(&d.srcs)
            .filter(|x| x.tensor == t)
            .all(|x| x.access.slots.as_slice() == iv.as_slice())
    })
}
