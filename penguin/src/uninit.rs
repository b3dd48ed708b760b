//! A static look for reads of memory that nothing wrote: of HBM scratch for `nkc check` on a
//! kernel, of every tensor but the inputs for Penguin IR a user wrote (a `.pir` file, where it is
//! the verifier's error E0051 on every command).
//!
//! The interpreter (and the simulator) find every such read by running the kernel; this pass finds
//! the ones that are certain without running it, so that `nkc check` reports them too. It is
//! sound, never complete: a read is reported only when some element it reads in its **first**
//! execution (every enclosing loop at its lower bound) lies outside every rectangle that any write
//! to the same tensor preceding it in program order could ever touch (each write's rectangle is
//! widened over every iteration of its loops, which can only over-approximate what it writes).
//! Since every loop runs at least once and a kernel as written carries no predicates, that first
//! execution happens, and nothing has written the element by then. An accumulating matmul reads
//! its destination too (the interpreter adds to it), so it counts as a read of it.
//!
//! For Penguin IR ([`Scope::AllButInputs`]) the reads this look skips are covered by the bounded
//! walk of the iteration space in [`crate::uninit_walk`], whose reports are added to its own.
//!
//! Only two-dimensional tensors of the [`Scope`] are looked at (for a kernel, HBM scratch: local
//! HBM arrays, `nl.ndarray(..., buffer=nl.shared_hbm)` not returned); an access with ring slots
//! is skipped (a write with slots makes the whole tensor count as written), and so is a read under
//! a predicate or a mask (a masked write's rectangle still over-approximates what it writes), or
//! in a loop whose trip count is not positive, and any expression that overflows.

use crate::affine::AffineExpr;
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Access, Function, Memory, Op, StmtKind, TensorKind};
pub use crate::uninit_rect::UnwrittenRead;
use crate::uninit_rect::{first_uncovered, Rect};
use std::collections::BTreeMap;

/// The most write rectangles of one tensor the coverage check looks at (beyond, it gives up on
/// that read: the check is quadratic in them).
const MAX_WRITES: usize = 256;

/// Which tensors the look covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// HBM scratch only: a kernel's local HBM arrays (the front end checks its tiles).
    HbmScratch,
    /// Every tensor but the inputs (SBUF, PSUM, HBM scratch and outputs): Penguin IR read from text.
    AllButInputs,
}

/// Every read of HBM scratch in `func` that is certainly of unwritten elements, in program order.
pub fn unwritten_scratch_reads(func: &Function) -> Vec<UnwrittenRead> {
    unwritten_reads(func, Scope::HbmScratch)
}

/// Every read of a tensor of `scope` in `func` that is certainly of unwritten elements, in
/// program order.
pub fn unwritten_reads(func: &Function, scope: Scope) -> Vec<UnwrittenRead> {
    let mut walk = Walk {
        func,
        scope,
        loops: Vec::new(),
        writes: BTreeMap::new(),
        found: Vec::new(),
    };
    walk.stmts(&func.body, true);
    let mut found = walk.found;
    if scope == Scope::AllButInputs {
        // What the static look skips (ring slots, predicated reads, later iterations), by the
        // bounded walk of the iteration space; one report per instruction.
        for u in crate::uninit_walk::unwritten_reads_walked(func) {
            if !found.iter().any(|f| f.inst == u.inst) {
                found.push(u);
            }
        }
    }
    found
}

struct Walk<'f> {
    func: &'f Function,
    scope: Scope,
    /// The enclosing loops, outermost first.
    loops: Vec<Axis>,
    /// Per scratch tensor, the rectangles of the writes seen so far (`None`: unknown, the whole
    /// tensor).
    writes: BTreeMap<Tensor, Vec<Option<Rect>>>,
    found: Vec<UnwrittenRead>,
}

impl Walk<'_> {
    /// Whether the look covers `t` ([`Scope`], two dimensions).
    fn is_scratch(&self, t: Tensor) -> bool {
        self.func.tensors.get(t).is_some_and(|d| {
            d.shape.len() == 2
                && match self.scope {
                    Scope::HbmScratch => d.memory == Memory::Hbm && d.kind == TensorKind::Local,
                    Scope::AllButInputs => !d.kind.is_read_only(),
                }
        })
    }

    /// `runs`: whether the statements certainly run (no predicate, every loop at least once).
    fn stmts(&mut self, stmts: &[Stmt], runs: bool) {
        for &s in stmts {
            let Some(data) = self.func.stmts.get(s) else {
                continue;
            };
            let runs = runs && data.preds.is_empty();
            match &data.kind {
                StmtKind::Insts(insts) => {
                    for &i in insts {
                        self.inst(i, runs);
                    }
                }
                StmtKind::Loop(axis) => {
                    let Some(a) = self.func.axes.get(*axis) else {
                        continue;
                    };
                    let runs = runs && a.trip_count() > 0;
                    self.loops.push(*axis);
                    self.stmts(&a.body, runs);
                    self.loops.pop();
                }
            }
        }
    }

    fn inst(&mut self, i: Inst, runs: bool) {
        let Some(d) = self.func.insts.get(i) else {
            return;
        };
        // The reads first: an instruction reads before it writes. An accumulating matmul reads
        // its destination (not looked at for a kernel: the front end zeroes its accumulators).
        // A masked read may read only part of its rectangle, so it is skipped like a predicated
        // one.
        let acc_dst = (self.scope == Scope::AllButInputs
            && matches!(d.op, Op::Matmul { accumulate: true }))
        .then_some(&d.dst);
        if runs && d.mask.is_empty() {
            for src in d.exact_srcs().chain(acc_dst) {
                if !self.is_scratch(src.tensor) {
                    continue;
                }
                let Some(read) = self.first_rect(&src.access) else {
                    continue;
                };
                let writes = self.writes.get(&src.tensor).map_or(&[][..], |w| &w[..]);
                if writes.len() > MAX_WRITES || writes.iter().any(Option::is_none) {
                    continue;
                }
                let rects: Vec<Rect> = writes.iter().flatten().copied().collect();
                if let Some((r, c)) = first_uncovered(&read, &rects) {
                    self.found.push(UnwrittenRead {
                        inst: i,
                        tensor: src.tensor,
                        element: (r as u64, c as u64),
                    });
                }
            }
        }
        if self.is_scratch(d.dst.tensor) {
            let hull = self.hull(&d.dst.access);
            self.writes.entry(d.dst.tensor).or_default().push(hull);
        }
    }

    /// The rectangle an access touches when every enclosing loop is at its lower bound.
    fn first_rect(&self, a: &Access) -> Option<Rect> {
        // A pattern touches only some elements of its bounding box: no rectangle is exact.
        if a.pattern.is_some() || !a.slots.is_empty() || a.start.len() != 2 || a.size.len() != 2 {
            return None;
        }
        let mut rect = [(0, 0); 2];
        for (k, (e, &size)) in a.start.iter().zip(&a.size).enumerate() {
            let lo = self.range(e, true)?.0;
            rect[k] = (lo, lo.checked_add(size as i128)?);
        }
        Some(rect)
    }

    /// The smallest rectangle holding what an access touches in every iteration of its loops.
    fn hull(&self, a: &Access) -> Option<Rect> {
        if !a.slots.is_empty() || a.start.len() != 2 || a.size.len() != 2 {
            return None;
        }
        let mut rect = [(0, 0); 2];
        for (k, (e, &size)) in a.start.iter().zip(&a.size).enumerate() {
            let (lo, hi) = self.range(e, false)?;
            rect[k] = (lo, hi.checked_add(size as i128)?);
        }
        Some(rect)
    }

    /// The least and greatest values of `e` over the enclosing loops' iterations (`first`: only
    /// the first iteration of each). `None` when `e` names a loop that does not enclose it.
    fn range(&self, e: &AffineExpr, first: bool) -> Option<(i128, i128)> {
        let (mut lo, mut hi) = (e.constant_term() as i128, e.constant_term() as i128);
        for &(axis, coeff) in e.terms() {
            if !self.loops.contains(&axis) {
                return None;
            }
            let a = self.func.axes.get(axis)?;
            let first_iv = a.lb as i128;
            let last_iv = if first {
                first_iv
            } else {
                (a.ub as i128 - 1).max(first_iv)
            };
            let (x, y) = (coeff as i128 * first_iv, coeff as i128 * last_iv);
            lo = lo.checked_add(x.min(y))?;
            hi = hi.checked_add(x.max(y))?;
        }
        Some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_finds_the_first_hole_in_row_major_order() {
        let read = [(0, 4), (0, 8)];
        assert_eq!(first_uncovered(&read, &[]), Some((0, 0)));
        assert_eq!(first_uncovered(&read, &[[(0, 4), (0, 8)]]), None);
        // Two halves cover it; the left half alone leaves column 4 of row 0.
        let left = [(0, 4), (0, 4)];
        let right = [(-3, 9), (4, 100)];
        assert_eq!(first_uncovered(&read, &[left, right]), None);
        assert_eq!(first_uncovered(&read, &[left]), Some((0, 4)));
        // Rows 0..2 written: the first hole is row 2.
        assert_eq!(first_uncovered(&read, &[[(0, 2), (0, 8)]]), Some((2, 0)));
    }
}
