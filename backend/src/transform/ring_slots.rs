//! One more ring slot for a tile along a loop, on the Penguin function: whether the tile may take
//! it ([`expandable`]: an SBUF tile or an HBM scratch tensor local to the kernel (at most
//! [`MAX_DEPTH`] slots of scratch, which HBM holds), blocked along that loop or not at all,
//! within its depth cap ([`depth_cap`]) and the SBUF budget, every read finding the same write,
//! [`crate::transform::ring_reads`]) and the edit itself ([`apply`]). The modulo
//! scheduler's recurrence decides which tile (`codegen::expand`), and `retime` reuses the rule.
//!
//! A question asked of many tiles or loops of one kernel goes through [`KernelFacts`], which
//! walks the whole kernel for the uses of every tile and the SBUF in use once, not once per
//! question (`retime` asks it of the store of every flat loop: a kernel of `n` loops cost `n`
//! walks of `n` loops).
//!
//! Invariant: [`apply`] changes only `t`'s block and, for a tile that was not blocked, the slot
//! selectors of its accesses (slot `iv` of `l`); [`KernelFacts`] answers exactly as
//! [`expandable`] does (it borrows the function, so the facts it keeps stay those of the
//! function it answers about).

use crate::cost::budget;
use crate::cost::loop_cost::{wanted_depth, MAX_DEPTH};
use crate::transform::emergent::plan::{
    body_runs_within, collect_uses, loaded_and_stored, loops_around, transfer_depth_of_runs, Use,
};
use crate::transform::ring_reads::compute_reads_kept;
use penguin::affine::AffineExpr;
use penguin::ir::{BlockDim, Memory, Op, TensorKind};
use penguin::{Axis, Function, Tensor};
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};

/// The current slot count of `t` when one more slot along `l` keeps every value (module doc).
pub fn expandable(func: &Function, t: Tensor, l: Axis) -> Option<u32> {
    KernelFacts::new(func).expandable(t, l)
}

/// The whole-kernel facts [`expandable`] reads, each computed at most once for one function:
/// the uses of every tile ([`collect_uses`]), the SBUF in use ([`budget::sbuf_in_use`]) and the
/// loops around every loop ([`loops_around`]).
pub struct KernelFacts<'f> {
    func: &'f Function,
    uses: OnceCell<BTreeMap<Tensor, Vec<Use>>>,
    sbuf_in_use: OnceCell<u64>,
    around: OnceCell<HashMap<Axis, Vec<Axis>>>,
}

impl<'f> KernelFacts<'f> {
    /// The facts of `func`, none computed yet.
    pub fn new(func: &'f Function) -> Self {
        KernelFacts {
            func,
            uses: OnceCell::new(),
            sbuf_in_use: OnceCell::new(),
            around: OnceCell::new(),
        }
    }

    fn uses(&self) -> &BTreeMap<Tensor, Vec<Use>> {
        self.uses.get_or_init(|| collect_uses(self.func))
    }

    fn sbuf_in_use(&self) -> u64 {
        *self
            .sbuf_in_use
            .get_or_init(|| budget::sbuf_in_use(self.func))
    }

    /// [`expandable`] of `t` along `l` in the function of these facts.
    pub fn expandable(&self, t: Tensor, l: Axis) -> Option<u32> {
        let func = self.func;
        let td = &func.tensors[t];
        let scratch =
            td.memory == Memory::Hbm && !func.params.contains(&t) && !func.outputs.contains(&t);
        if !(td.memory == Memory::Sbuf || scratch) || td.kind != TensorKind::Local {
            return None;
        }
        let n = match td.block.as_slice() {
            [] => 1,
            [b] if b.axis == l => b.count,
            _ => return None,
        };
        // HBM scratch: a ring of at most [`MAX_DEPTH`] slots (HBM holds them).
        let cap = if scratch {
            MAX_DEPTH
        } else {
            self.depth_cap(t, l)
        };
        if n >= cap || !compute_reads_kept(func, t, l, n + 1) {
            return None;
        }
        if scratch {
            return Some(n);
        }
        self.fits_one_more_slot(t, n)
    }

    /// The most slots `t` may take along `l`: [`MAX_DEPTH`], or for a tile a DMA moves the depth
    /// its transfer's latency wants when deeper (the emergent rings' rule,
    /// [`crate::transform::emergent::plan::transfer_depth`]): the user's stages fix where each
    /// statement runs, the ring depth of a tile is the backend's on every path.
    fn depth_cap(&self, t: Tensor, l: Axis) -> u32 {
        let func = self.func;
        let Some(us) = self.uses().get(&t) else {
            return MAX_DEPTH;
        };
        if !us
            .iter()
            .any(|u| matches!(func.insts[u.inst].op, Op::Load | Op::Store))
        {
            return MAX_DEPTH;
        }
        let fit = wanted_depth(func, t, l);
        let around = self.around.get_or_init(|| loops_around(func));
        let runs = body_runs_within(func, around.get(&l).map_or(&[][..], Vec::as_slice), l);
        transfer_depth_of_runs(runs, &fit, loaded_and_stored(func, us)).max(MAX_DEPTH)
    }

    /// `Some(n)` when one more slot of `t` (of `n` slots) fits in SBUF, every tensor counted
    /// with all its slots.
    fn fits_one_more_slot(&self, t: Tensor, n: u32) -> Option<u32> {
        let slot = budget::slot_bytes(&self.func.tensors[t], u64::from(n));
        budget::sbuf_fits(self.sbuf_in_use() + slot).then_some(n)
    }
}

/// Gives `t` `count` slots along `l`; an unblocked tile's accesses select slot `iv`.
pub fn apply(func: &mut Function, t: Tensor, l: Axis, count: u32) {
    let was_blocked = !func.tensors[t].block.is_empty();
    func.tensors[t].block = vec![BlockDim { axis: l, count }];
    if was_blocked {
        return;
    }
    let sel = vec![AffineExpr::iv(l)];
    for (_, d) in func.insts.iter_mut() {
        if d.dst.tensor == t {
            d.dst.access.slots = sel.clone();
        }
        for o in &mut d.srcs {
            if o.tensor == t {
                o.access.slots = sel.clone();
            }
        }
    }
}
