//! Where the instances of a kernel are in program order, for the happens-before walks
//! ([`crate::codegen::hb`]), computed in the time of the instances that run: the running
//! instances in program order ([`Places::order`]), and for any instance, running or not, its
//! place among all instances ([`Places::full`]) and the latest running instance of its engine at
//! or before it ([`Places::src`], whose clock is its signal's).
//!
//! An instance's place among all is affine in its registers: the place of its node's instance 0
//! plus, per loop around it, the register times the instances one iteration of that loop holds
//! (one pass over the loop tree, [`crate::codegen::layout`]). So the running instances are put in program
//! order by sorting them by place, and nothing enumerates the predicated-off ones: a loop spread
//! over many stages, whose instances mostly are, costs what runs.
//!
//! Invariant: `order` is the running instances sorted by `full`, which is strictly increasing
//! along program order (the loop tree walked at every iteration); `pos` is each running flat
//! instance's index in `order`.

use super::conflicts::Conflicts;
use crate::codegen::emit::Emitted;
use crate::codegen::entities::Node;
use crate::codegen::footprints::Instances;
use crate::codegen::layout::{compute_layout, Layout};

/// [`Places::src`] of an instance before every running instance of its engine.
pub(super) const NONE: u32 = u32::MAX;

/// The program order of a kernel's instances (see the module doc).
pub(super) struct Places {
    /// Per node, the place of its instance 0 among all instances, and per loop around it
    /// (outermost first) the instances one iteration of the loop holds.
    layout: Layout,
    /// The running instances in program order: (node, linear iteration index).
    pub(super) order: Vec<(Node, u32)>,
    /// Per running flat instance, its index in `order` (`NONE` for one that does not run).
    pub(super) pos: Vec<u32>,
    /// Per engine, the places of its running instances in program order, and their indices
    /// in `order`.
    engine_full: [Vec<i64>; 5],
    engine_pos: [Vec<u32>; 5],
}

impl Places {
    /// The places of the instances of `em` (`inst`: its instance table; `cf`: its flat
    /// numbering).
    pub(super) fn new(em: &Emitted, inst: &Instances, cf: &Conflicts) -> Places {
        let mut p = Places {
            layout: compute_layout(em),
            order: Vec::new(),
            pos: vec![NONE; cf.total],
            engine_full: Default::default(),
            engine_pos: Default::default(),
        };
        let mut running: Vec<(i64, Node, u32)> = Vec::new();
        for (i, lins) in inst.running.iter() {
            for &lin in lins {
                running.push((p.full(inst, i, lin as usize), i, lin as u32));
            }
        }
        running.sort_unstable_by_key(|r| r.0);
        for (k, &(full, i, lin)) in running.iter().enumerate() {
            p.order.push((i, lin));
            p.pos[cf.base[i] + lin as usize] = k as u32;
            let e = em.nodes[i].engine.index();
            p.engine_full[e].push(full);
            p.engine_pos[e].push(k as u32);
        }
        p
    }

    /// The place of instance `lin` of node `i` among every instance of the kernel.
    pub(super) fn full(&self, inst: &Instances, i: Node, lin: usize) -> i64 {
        self.layout.place(i, &inst.trips[i], lin as i64)
    }

    /// The index in `order` of the latest running instance of node `i`'s engine at or before its
    /// instance `lin` in program order (`NONE`: none).
    pub(super) fn src(&self, em: &Emitted, inst: &Instances, i: Node, lin: usize) -> u32 {
        let e = em.nodes[i].engine.index();
        let full = self.full(inst, i, lin);
        match self.engine_full[e].partition_point(|&q| q <= full) {
            0 => NONE,
            n => self.engine_pos[e][n - 1],
        }
    }
}
