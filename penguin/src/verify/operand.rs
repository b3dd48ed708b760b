//! Checks of one operand's access: one start and one size per dimension, one slot expression per
//! block dimension, scoped expressions, no empty size; a general access pattern's own rules; a
//! PSUM access within one bank; then the in-bounds check ([`Verifier::bounds`]).

use super::{AnyEntity, Verifier, PSUM_BANK_BYTES};
use crate::entities::Axis;
use crate::ir::{Access, MaskBound, Memory, Operand, Pattern, TensorData, MAX_PATTERN_ENUMERATION};

impl Verifier<'_> {
    /// Checks one operand's access; returns whether its sizes are well-formed 2-D sizes. With
    /// `masked`, a dimension that the mask clips ([`crate::ir::InstData::clipped`]) is in bounds when its
    /// start plus some bound of the mask is.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn operand(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        o: &Operand,
        what: &str,
        write: bool,
        bx: Option<&[(Axis, i128, i128)]>,
        masked: Option<(&[MaskBound], [u64; 2])>,
    ) -> bool {
        let f = self.func;
        let Some(t) = f.tensors.get(o.tensor) else {
            self.error_in(
                e,
                loops,
                format!("{what} names undefined tensor {}", o.tensor),
            );
            return false;
        };
        let acc = &o.access;
        let rank = t.shape.len();
        let mut ok = self.access_arity(e, loops, t, acc, what);
        let scoped = self.access_scoped(e, loops, t, acc, what);
        ok &= self.sizes_nonempty(e, loops, t, acc, what);
        if ok {
            if let Some(pat) = &acc.pattern {
                ok &= self.pattern(e, loops, o, pat, what, write, masked.map(mask_dims));
            }
        }
        if ok && rank == 2 && t.memory == Memory::Psum {
            self.psum_bank(e, loops, o, what);
        }
        if ok && scoped {
            if let Some(bx) = bx {
                self.bounds(e, loops, t, acc, what, write, bx, masked);
            }
        }
        ok && rank == 2
    }

    /// One start and one size per dimension (returned), one slot expression per block dimension.
    fn access_arity(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        t: &TensorData,
        acc: &Access,
        what: &str,
    ) -> bool {
        let rank = t.shape.len();
        let mut ok = true;
        if acc.start.len() != rank || acc.size.len() != rank {
            self.error_in(
                e,
                loops,
                format!(
                    "{what} `{}` has {} start(s) and {} size(s) but `{}` has {rank} dimensions",
                    t.name,
                    acc.start.len(),
                    acc.size.len(),
                    t.name
                ),
            );
            ok = false;
        }
        if acc.slots.len() != t.block.len() {
            self.error_in(
                e,
                loops,
                format!(
                    "{what} `{}` has {} slot expression(s) but `{}` has {} block dimension(s)",
                    t.name,
                    acc.slots.len(),
                    t.name,
                    t.block.len()
                ),
            );
        }
        ok
    }

    /// The starts and slot expressions mention only enclosing loops' variables; returns whether
    /// the starts do (the bounds check needs them).
    fn access_scoped(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        t: &TensorData,
        acc: &Access,
        what: &str,
    ) -> bool {
        let mut scoped = true;
        for (d, s) in acc.start.iter().enumerate() {
            scoped &= self.scope(e, loops, s, &format!("{what} (`{}` dim {d})", t.name));
        }
        for (k, s) in acc.slots.iter().enumerate() {
            self.scope(e, loops, s, &format!("{what} (`{}` slot {k})", t.name));
        }
        scoped
    }

    /// No size is zero.
    fn sizes_nonempty(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        t: &TensorData,
        acc: &Access,
        what: &str,
    ) -> bool {
        let mut ok = true;
        for (d, &z) in acc.size.iter().enumerate() {
            if z == 0 {
                self.error_in(
                    e,
                    loops,
                    format!("{what} selects nothing of `{}` in dim {d}", t.name),
                );
                ok = false;
            }
        }
        ok
    }

    /// An access to a PSUM tensor stays within one bank: it spans at most a bank's bytes, and on
    /// a tensor of several banks every free start it takes over its loops' ranges is at most a
    /// bank's elements minus its size past a bank boundary.
    fn psum_bank(&mut self, e: AnyEntity, loops: &[Axis], o: &Operand, what: &str) {
        let t = &self.func.tensors[o.tensor];
        let elem = t.dtype.size_bytes();
        let bank = (PSUM_BANK_BYTES / elem) as i64;
        let size = o.access.size[1] as i64;
        let name = t.name.clone();
        if size > bank {
            self.error_in(
                e,
                loops,
                format!(
                    "{what} reaches {} bytes of `{name}` in each partition, more than one PSUM bank ({PSUM_BANK_BYTES})",
                    size as u64 * elem
                ),
            );
            return;
        }
        if t.shape[1] * elem <= PSUM_BANK_BYTES {
            return;
        }
        let axes = &self.func.axes;
        let starts = o.access.start[1].residues_mod(bank, |a| (axes[a].lb, axes[a].ub));
        if starts.iter().any(|&r| r + size > bank) {
            self.error_in(
                e,
                loops,
                format!("{what} of `{name}` may cross a PSUM bank ({bank} elements each)"),
            );
        }
    }

    /// A general access pattern's own rules: its size is its bounding box (whose bounds the
    /// caller checks, so every element is inside the tensor); on chip the partition axis is
    /// axis 0 with unit partition step and no free step, and the free axes (at most 4) never
    /// move across partitions; a written pattern touches no element twice; no mask.
    #[allow(clippy::too_many_arguments)]
    fn pattern(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        o: &Operand,
        pat: &Pattern,
        what: &str,
        write: bool,
        masked: Option<Vec<usize>>,
    ) -> bool {
        let t = &self.func.tensors[o.tensor];
        let rank = t.shape.len();
        let name = t.name.clone();
        let mut errs = Vec::new();
        if pat.bounding_box(rank).as_ref() != Some(&o.access.size) {
            errs.push(format!(
                "{what} `{name}` has an access pattern whose size is not its bounding box (every axis needs a positive count and {rank} non-negative steps)"
            ));
        }
        if pat.axes.is_empty() || pat.axes.len() > 5 {
            errs.push(format!(
                "{what} `{name}` has an access pattern of {} axes; a pattern has a partition axis and 1 to 4 free axes",
                pat.axes.len()
            ));
        }
        if let Some(dims) = masked.filter(|dims| dims.iter().any(|&d| !pat.clips(d))) {
            errs.push(format!(
                "{what} `{name}` has an access pattern on an instruction masked on its {} index, along several free axes",
                if dims.contains(&0) { "partition" } else { "free" }
            ));
        }
        if errs.is_empty() && rank == 2 && t.memory != Memory::Hbm {
            if pat.axes[0].step != [1, 0] {
                errs.push(format!(
                    "{what} `{name}` strides its partition axis; on chip the partition axis is never strided (its step must be (1, 0))"
                ));
            }
            if pat.axes[1..].iter().any(|a| a.step[0] != 0) {
                errs.push(format!(
                    "{what} `{name}` has a free axis that moves across partitions; on chip a free axis steps along the free dimension only"
                ));
            }
        }
        if errs.is_empty() && write {
            match pat.reaches_twice(&t.shape) {
                Some(false) => {}
                Some(true) => errs.push(format!(
                    "{what} writes `{name}` through an access pattern that reaches some element twice"
                )),
                None => errs.push(format!(
                    "{what} writes `{name}` through an access pattern whose elements nkc cannot show distinct (its axes do not nest and it has more than {MAX_PATTERN_ENUMERATION} values)"
                )),
            }
        }
        let ok = errs.is_empty();
        for m in errs {
            self.error_in(e, loops, m);
        }
        ok
    }
}

/// The indices (0: partition, 1: free) a mask bounds.
fn mask_dims((m, _): (&[MaskBound], [u64; 2])) -> Vec<usize> {
    let mut dims: Vec<usize> = m.iter().map(|b| b.dim.index()).collect();
    dims.sort_unstable();
    dims.dedup();
    dims
}
