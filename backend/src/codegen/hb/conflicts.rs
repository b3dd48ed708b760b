//! The conflicting instances the happens-before check must find ordered
//! ([`crate::codegen::hb`]): per running instance of a consumer, and per producer that
//! [`crate::codegen::sync::compute_sync`] paired with it, the latest running instance of the
//! producer before it in program order whose footprints meet its own.
//!
//! Invariant: instances are numbered flat (a node's from `base[node]`, in its linear iteration
//! order), and `after[start[b] .. start[b + 1]]` are instance `b`'s conflicts, sorted; past
//! [`SEARCH_BUDGET`] footprint checks nothing is returned (every wait is kept).

use super::{thread, SEARCH_BUDGET};
use crate::codegen::emit::Emitted;
use crate::codegen::entities::Node;
use crate::codegen::footprints::{meeting_feet, Instances};
use crate::codegen::sync::{self, Sync};
use cranelift_entity::SecondaryMap;
use runtime_sim::isa::MAX_REGS;

/// For every running instance (numbered flat: a node's instances from `base[node]`, in its
/// linear iteration order), the instances it must happen after: per producer paired with its
/// node, the latest running conflicting instance before it in program order, with the
/// producer's thread.
pub(super) struct Conflicts {
    pub(super) base: SecondaryMap<Node, usize>,
    /// The number of instances.
    pub(super) total: usize,
    /// `after[start[b] .. start[b + 1]]` are instance `b`'s.
    pub(super) start: Vec<u32>,
    /// (thread, flat instance).
    pub(super) after: Vec<(u8, u32)>,
}

/// Finds the conflicting instances of every pair of `sync.pairs`, or `None` past the budget.
pub(super) fn compute_conflicts(em: &Emitted, inst: &Instances, sync: &Sync) -> Option<Conflicts> {
    let mut base = SecondaryMap::new();
    let mut total = 0usize;
    for (i, t) in inst.trips.iter() {
        base[i] = total;
        total += sync::instances(t) as usize;
    }
    if total >= u32::MAX as usize {
        return None;
    }
    let mut found: Vec<(u32, u8, u32)> = Vec::new();
    let mut work = 0u64;
    let mut ry = [0i64; MAX_REGS];
    for (p, &(xi, yi)) in sync.pairs.iter().enumerate() {
        // The synchronisation analysis's own search, when it has it.
        if let Some(Some(pairs)) = sync.conflicts.get(p) {
            let tr = thread(em, xi) as u8;
            for &(v, u) in pairs {
                found.push((
                    (base[yi] as i64 + v) as u32,
                    tr,
                    (base[xi] as i64 + u) as u32,
                ));
            }
            continue;
        }
        let (x, y) = (&em.nodes[xi], &em.nodes[yi]);
        let c = sync::common_depth(x, y);
        let (tx, ty) = (&inst.trips[xi], &inst.trips[yi]);
        let px = sync::instances(&tx[c..]);
        let xb = i64::from(xi < yi);
        let tr = thread(em, xi) as u8;
        let running = &inst.running[xi];
        let feet = meeting_feet(x, y);
        for &v in &inst.running[yi] {
            sync::decode(ty, v, &mut ry);
            let linc = (0..c).fold(0i64, |acc, k| acc * ty[k] + ry[k]);
            // Searched backwards among the running instances of `x`, from the last that
            // precedes this one.
            let last = (linc + xb) * px - 1;
            let mut k = running.partition_point(|&u| u <= last);
            while k > 0 {
                k -= 1;
                let u = running[k];
                work += 1;
                if work > SEARCH_BUDGET {
                    return None;
                }
                if inst.conflict(em, &feet, (xi, u), (yi, v)) {
                    found.push((
                        (base[yi] as i64 + v) as u32,
                        tr,
                        (base[xi] as i64 + u) as u32,
                    ));
                    break;
                }
            }
        }
    }
    found.sort_unstable();
    let mut start = vec![0u32; total + 1];
    for &(b, _, _) in &found {
        start[b as usize + 1] += 1;
    }
    for k in 0..total {
        start[k + 1] += start[k];
    }
    Some(Conflicts {
        base,
        total,
        start,
        after: found.into_iter().map(|(_, t, a)| (t, a)).collect(),
    })
}
