//! Modulo variable expansion: one more ring slot for a tile whose reuse sets a pipelined loop's
//! recurrence bound.
//!
//! A pipelined loop writes a tile in every iteration and the pipeliner gives it
//! `max use stage − min def stage + 1` slots. When the cycle that sets the loop's RecMII
//! ([`crate::codegen::modulo`]), above the loop's resources averaged over its fill and drain
//! ([`ModuloSchedule::res_average`]: a short loop is mostly fill and drain), runs through the
//! **reuse** of such a tile (an anti or output dependence:
//! the next iteration's write of the slot must wait for this iteration's last reader, such as a
//! store's whole DMA latency), one more slot breaks that cycle without touching any stage: the
//! writer of iteration `k + N + 1` reuses the slot instead of the one of `k + N`.
//! [`expand_recurrence`] adds that slot (the backend's share of the seed's hand-off: Penguin
//! decides the stages and the minimum buffer count, the backend realises the ring).
//!
//! Only pipelined loops are expanded (an instruction with a stage, or touching a ring along the
//! loop): `--pipeline none` keeps one buffer per tile.
//!
//! The tile must hold no value from one iteration to another except through its slots: an SBUF
//! tile local to the kernel whose every read finds the same write with `N + 1` slots as with `N`
//! ([`crate::transform::ring_reads`], the rule of every pass that deepens an existing ring). The ring stays
//! within its depth cap ([`crate::transform::ring_slots`]: [`crate::cost::loop_cost::MAX_DEPTH`],
//! or a transferred tile's depth its DMA latency wants, the emergent rings' rule) and the SBUF
//! capacity (every tensor counted
//! with all its slots: [`crate::cost::budget`], the count of every pass that adds slots).
//!
//! A **peeled** loop's (`penguin::pipeline::peel`) recurrence is broken also when it holds the
//! schedule's II above ResMII: its ResMII counts every stage in every iteration, with no fill or
//! drain to average over, so RecMII rarely exceeds it although the recurrence still sets the
//! period.

use crate::codegen::bir::Bir;
use crate::codegen::ldg::DepKind;
use crate::codegen::modulo::ModuloSchedule;
use crate::transform::remark::{RecurrenceBound, Remark};
use crate::transform::ring_slots::expandable;
use penguin::{Axis, Function, Tensor};

/// One more ring slot for a tile: which tile, along which loop, how many slots it gets, and why
/// (the log's line). [`crate::transform::ring_slots::apply`] realises it on the Penguin function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpansionData {
    pub tensor: Tensor,
    pub axis: Axis,
    pub slots: u32,
    /// The decision, for the log ([`Remark::RingSlotAdded`]).
    pub remark: Remark,
}

/// The first tile, on the critical cycle of a recurrence-bound pipelined loop, that the rule
/// allows one more slot; `None` when there is none. The function is read, not changed.
pub fn compute_expansion(
    func: &Function,
    bir: &Bir,
    schedules: &[ModuloSchedule],
) -> Option<ExpansionData> {
    for s in schedules {
        let l = bir.loops[s.lp].axis;
        // A peeled loop's ResMII counts every stage in every iteration (no fill or drain to
        // average over): its recurrence is worth breaking when the schedule's II is above it.
        let peeled = func.axes[l].attrs.pipelined.is_some_and(|p| p.peeled);
        let bound = if peeled {
            s.rec_mii.max(s.search_ii)
        } else {
            s.rec_mii
        };
        if bound <= s.res_average || !pipelined(func, bir, s.lp) {
            continue;
        }
        for &(kind, t, cross_engine) in &s.rec_edges {
            // A flow edge is the computation itself, and a reuse within one in-order engine is
            // that engine's order: more slots help neither. A reuse from a transfer counts as
            // crossing engines (`rec_edges`): the slot stays busy until the DMA lands.
            if kind == DepKind::Flow || !cross_engine {
                continue;
            }
            if let Some(n) = expandable(func, t, l) {
                let bound = if s.rec_mii > s.res_average {
                    RecurrenceBound::RecMii(s.rec_mii)
                } else {
                    RecurrenceBound::SearchIi(s.search_ii)
                };
                let remark = Remark::RingSlotAdded {
                    tile: func.display_name(t).to_string(),
                    iv: func.display_iv(l).to_string(),
                    slots: n + 1,
                    bound,
                    res_average: s.res_average,
                    cycle: s.rec_cycle.to_string(),
                };
                return Some(ExpansionData {
                    tensor: t,
                    axis: l,
                    slots: n + 1,
                    remark,
                });
            }
        }
    }
    None
}

/// Whether BIR loop `l` is pipelined (by either path): an instruction of its body carries a stage,
/// or touches a ring along the loop. A loop of `--pipeline none` is not (its only guards are
/// folded zeroings, `k == lb`), and keeps its buffers.
fn pipelined(func: &Function, bir: &Bir, l: crate::codegen::bir::BirLoop) -> bool {
    let axis = bir.loops[l].axis;
    bir.loops[l].body.iter().any(|n| match *n {
        crate::codegen::bir::BNode::Inst(i) => {
            let bi = &bir.insts[i];
            bi.stage.is_some()
                || std::iter::once(&bi.dst)
                    .chain(&bi.srcs)
                    .any(|o| func.tensors[o.tensor].block.iter().any(|b| b.axis == axis))
        }
        crate::codegen::bir::BNode::Loop(_) => false,
    })
}
