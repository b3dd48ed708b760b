//! Waits that other waits of the same consumer imply ([`crate::codegen::sync`]): a wait on `Z`
//! whose instance is on the same DMA queue (and runs) or the same compute engine as the
//! instance of `X` another wait needs, and comes after it in program order, makes that wait
//! redundant ([`implies`]); [`compute_sync`](super::compute_sync) drops those.
//!
//! Invariant: a wait is dropped only when another kept wait of its consumer implies it at every
//! instance where it runs, so the waits kept order the consumer after everything the dropped
//! one did.

use super::{common_depth, decode, instances, on, thread, trips, Sync};
use crate::codegen::emit::{Emitted, Node, NodeData};
use crate::codegen::footprints::Instances;
use runtime_sim::isa::{Expr, MAX_REGS};

/// Whether instance `ix` of node `xi` precedes instance `iz` of node `zi` in program order.
fn precedes(em: &Emitted, xi: Node, ix: i64, zi: Node, iz: i64) -> bool {
    let (x, z) = (&em.nodes[xi], &em.nodes[zi]);
    let c = common_depth(x, z);
    // The instance's iteration of the shared loops: its linear index over them (the loops
    // below them are the last digits of `ix`).
    let shared = |n: &NodeData, i: i64| {
        i / n.loops[c..]
            .iter()
            .map(|&l| em.loops[l].0 as i64)
            .product::<i64>()
            .max(1)
    };
    let (sx, sz) = (shared(x, ix), shared(z, iz));
    if sx != sz {
        return sx < sz;
    }
    xi < zi
}

/// Drops a consumer's wait on `X` when another of its waits, on `Z`, implies it for every
/// instance: the instance of `Z` it waits for is on the same DMA queue (first in, first out; and
/// on) or the same compute engine
/// (in order) as the instance of `X` the first wait needs, and comes after it in program order.
/// Counted in `implied_waits`.
pub(super) fn drop_implied(em: &Emitted, inst: &Instances, s: &mut Sync) {
    for yi in em.nodes.keys() {
        let mut keep = vec![true; s.waits[yi].len()];
        for a in 0..keep.len() {
            let xa = s.waits[yi][a].from;
            for b in 0..keep.len() {
                if a == b || !keep[b] {
                    continue;
                }
                let (wa, wb) = (&s.waits[yi][a], &s.waits[yi][b]);
                // (Only a producer on `a`'s thread can imply it, [`implies`]: that is decided
                // first, before the guards are compared.)
                if thread(&em.nodes[wb.from]) != thread(&em.nodes[xa]) {
                    continue;
                }
                // `b` must run wherever `a` does.
                let covers = wb.pred.iter().all(|c| wa.pred.contains(c));
                let implied =
                    covers && implies(em, Some(inst), yi, wb.from, &wb.value, xa, &wa.value);
                if implied {
                    keep[a] = false;
                    s.implied_waits += 1;
                    break;
                }
            }
        }
        let mut k = keep.into_iter();
        s.waits[yi].retain(|_| k.next().unwrap_or(true));
    }
}

/// Whether a wait on producer `zi` for `z_value` (run whenever the consumer `yi` runs) implies a
/// wait on producer `xi` for `x_value`, for every instance of `yi`: the instance of `z` it waits
/// for is on the same DMA queue (and on: an off transfer's signal follows only its own
/// semaphore's earlier signals) or the same compute engine as the instance of `x`, and comes after
/// it in program order, so its completion implies `x`'s (first in, first out; in order), and its
/// signal carries `x`'s clock.
///
/// `inst`, when given, is `em`'s instance table: the running instances are read from it instead
/// of evaluating the guards again (the same answer).
pub fn implies(
    em: &Emitted,
    inst: Option<&Instances>,
    yi: Node,
    zi: Node,
    z_value: &Expr,
    xi: Node,
    x_value: &Expr,
) -> bool {
    let (x, y, z) = (&em.nodes[xi], &em.nodes[yi], &em.nodes[zi]);
    let same_queue = x.queue().is_some() && x.queue() == z.queue();
    let same_engine = x.queue().is_none() && z.queue().is_none() && x.engine == z.engine;
    if !(same_queue || same_engine) {
        return false;
    }
    let ty = trips(em, y);
    let tz = trips(em, z);
    let mut regs = [0i64; MAX_REGS];
    let mut zr = [0i64; MAX_REGS];
    // Whether the running instance of `y` at registers `regs` is covered.
    let mut covered = |regs: &[i64; MAX_REGS]| {
        let need_x = x_value.eval(regs) as i64 - 1;
        if need_x < 0 {
            return true;
        }
        let got_z = z_value.eval(regs) as i64 - 1;
        if got_z < 0 || got_z >= instances(&tz) || !precedes(em, xi, need_x, zi, got_z) {
            return false;
        }
        // An off transfer's signal follows its own semaphore's earlier signals, not its queue's
        // earlier transfers: only an instance that runs vouches for the queue.
        !same_queue
            || match inst {
                Some(inst) => inst.running[zi].binary_search(&got_z).is_ok(),
                None => {
                    decode(&tz, got_z, &mut zr);
                    on(z, &zr)
                }
            }
    };
    match inst {
        Some(inst) => inst.running[yi].iter().all(|&v| {
            decode(&ty, v, &mut regs);
            covered(&regs)
        }),
        None => (0..instances(&ty)).all(|v| {
            decode(&ty, v, &mut regs);
            !on(y, &regs) || covered(&regs)
        }),
    }
}
