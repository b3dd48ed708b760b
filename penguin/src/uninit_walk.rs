//! Reads of unwritten memory found by walking the iteration space (issue 30, round three): the
//! complement of [`crate::uninit`]'s static look, for what it skips: reads through ring slots
//! (`t{k - 1}`), reads under predicates (the stages of pipelined IR), and reads that are not
//! certain on the first iteration.
//!
//! The walk runs the kernel's control flow as the interpreter does, without data: loops in order
//! with their induction variables, predicates evaluated, each instruction's reads before its write,
//! every access's rectangle and slot (`rem_euclid` of its block count) computed. It keeps, per
//! tensor and slot, the rectangles written so far; a read (an accumulating matmul reads its
//! destination) of a rectangle that they do not cover is reported, once per instruction, with the
//! first uncovered element. So every report is a read the interpreter would stop on (E0900).
//!
//! It is sound, never complete, and bounded: it stops after [`MAX_STEPS`] loop iterations and
//! instructions (what it found by then stands); a masked instruction's read is skipped (its write
//! still counts whole, an over-approximation); a tensor or slot with more than [`MAX_WRITES`]
//! distinct written rectangles, an access that is not two-dimensional, and any expression that
//! overflows end the look at that tensor (it then counts as written everywhere).

use crate::affine::AffineExpr;
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Access, Function, Op, StmtKind};
use crate::uninit_rect::{first_uncovered, Rect, UnwrittenRead};
use cranelift_entity::SecondaryMap;
use std::collections::{BTreeMap, BTreeSet};

/// The most loop iterations and instructions the walk steps through.
pub const MAX_STEPS: u64 = 200_000;

/// The most distinct rectangles written to one slot of a tensor the walk keeps.
pub const MAX_WRITES: usize = 64;

/// What is known to be written of one tensor: per slot (one index per block dimension), the
/// rectangles; `None` once the tensor is given up on (every read of it counts as covered).
type Written = Option<BTreeMap<Vec<u64>, Vec<Rect>>>;

/// Every read of a tensor that is not an input that reads, on some execution the walk reached,
/// an element nothing wrote before it; one per instruction, in the order the walk found them.
pub fn unwritten_reads_walked(func: &Function) -> Vec<UnwrittenRead> {
    let mut w = Walk {
        func,
        ivs: SecondaryMap::new(),
        steps: 0,
        written: BTreeMap::new(),
        reported: BTreeSet::new(),
        found: Vec::new(),
    };
    w.stmts(&func.body);
    w.found
}

struct Walk<'f> {
    func: &'f Function,
    ivs: SecondaryMap<Axis, i64>,
    steps: u64,
    written: BTreeMap<Tensor, Written>,
    reported: BTreeSet<Inst>,
    found: Vec<UnwrittenRead>,
}

impl Walk<'_> {
    /// Whether the step budget is spent (then the walk unwinds).
    fn step(&mut self) -> bool {
        self.steps += 1;
        self.steps > MAX_STEPS
    }

    /// Walks `stmts`; `false` when the budget ran out.
    fn stmts(&mut self, stmts: &[Stmt]) -> bool {
        for &s in stmts {
            let Some(data) = self.func.stmts.get(s) else {
                continue;
            };
            let mut holds = true;
            for p in &data.preds {
                match self.eval(&p.expr) {
                    Some(v) => {
                        holds &= match p.cmp {
                            crate::affine::CmpOp::Ge => v >= p.bound,
                            crate::affine::CmpOp::Lt => v < p.bound,
                            crate::affine::CmpOp::Eq => v == p.bound,
                        }
                    }
                    // Not evaluable: stop, sound (nothing after it is looked at).
                    None => return false,
                }
            }
            if !holds {
                continue;
            }
            match &data.kind {
                StmtKind::Insts(insts) => {
                    for &i in insts {
                        if self.step() {
                            return false;
                        }
                        self.inst(i);
                    }
                }
                StmtKind::Loop(axis) => {
                    let Some(a) = self.func.axes.get(*axis) else {
                        continue;
                    };
                    let mut iv = a.lb;
                    while iv < a.ub {
                        if self.step() {
                            return false;
                        }
                        self.ivs[*axis] = iv;
                        if !self.stmts(&a.body) {
                            return false;
                        }
                        iv += 1;
                    }
                }
            }
        }
        true
    }

    /// `e` at the current induction variables; `None` on overflow.
    fn eval(&self, e: &AffineExpr) -> Option<i64> {
        e.terms()
            .iter()
            .try_fold(e.constant_term(), |acc, &(a, c)| {
                acc.checked_add(c.checked_mul(self.ivs[a])?)
            })
    }

    /// The slot and rectangle an access touches now; `None` when it is not one the walk follows.
    fn place(&self, t: Tensor, a: &Access) -> Option<(Vec<u64>, Rect)> {
        let d = self.func.tensors.get(t)?;
        if a.start.len() != 2 || a.size.len() != 2 || a.slots.len() != d.block.len() {
            return None;
        }
        let mut slot = Vec::with_capacity(a.slots.len());
        for (e, b) in a.slots.iter().zip(&d.block) {
            if b.count == 0 {
                return None;
            }
            slot.push(self.eval(e)?.rem_euclid(i64::from(b.count)) as u64);
        }
        let mut rect = [(0, 0); 2];
        for (k, (e, &size)) in a.start.iter().zip(&a.size).enumerate() {
            let lo = i128::from(self.eval(e)?);
            rect[k] = (lo, lo + i128::from(size));
        }
        Some((slot, rect))
    }

    fn followed(&self, t: Tensor) -> bool {
        self.func
            .tensors
            .get(t)
            .is_some_and(|d| !d.kind.is_read_only() && d.shape.len() == 2)
    }

    fn inst(&mut self, i: Inst) {
        let Some(d) = self.func.insts.get(i) else {
            return;
        };
        let acc_dst = matches!(d.op, Op::Matmul { accumulate: true }).then_some(&d.dst);
        if d.mask.is_empty() && !self.reported.contains(&i) {
            for src in d.exact_srcs().chain(acc_dst) {
                if !self.followed(src.tensor) {
                    continue;
                }
                let Some((slot, read)) = self.place(src.tensor, &src.access) else {
                    self.written.insert(src.tensor, None);
                    continue;
                };
                let Some(known) = self
                    .written
                    .entry(src.tensor)
                    .or_insert(Some(BTreeMap::new()))
                else {
                    continue;
                };
                let rects = known.get(&slot).map_or(&[][..], |v| &v[..]);
                let covered_by_one = rects.iter().any(|w| {
                    w[0].0 <= read[0].0
                        && read[0].1 <= w[0].1
                        && w[1].0 <= read[1].0
                        && read[1].1 <= w[1].1
                });
                if covered_by_one || read[0].0 >= read[0].1 || read[1].0 >= read[1].1 {
                    continue;
                }
                if let Some((r, c)) = first_uncovered(&read, rects) {
                    self.reported.insert(i);
                    self.found.push(UnwrittenRead {
                        inst: i,
                        tensor: src.tensor,
                        element: (r.max(0) as u64, c.max(0) as u64),
                    });
                    break;
                }
            }
        }
        let t = d.dst.tensor;
        if !self.followed(t) {
            return;
        }
        let place = self.place(t, &d.dst.access);
        let entry = self.written.entry(t).or_insert(Some(BTreeMap::new()));
        let Some(known) = entry else {
            return;
        };
        let Some((slot, rect)) = place else {
            *entry = None;
            return;
        };
        let rects = known.entry(slot).or_default();
        if rects.contains(&rect) {
            return;
        }
        // A rectangle inside one already written adds nothing.
        if rects.iter().any(|w| {
            w[0].0 <= rect[0].0 && rect[0].1 <= w[0].1 && w[1].0 <= rect[1].0 && rect[1].1 <= w[1].1
        }) {
            return;
        }
        if rects.len() >= MAX_WRITES {
            *entry = None;
            return;
        }
        rects.push(rect);
    }
}
