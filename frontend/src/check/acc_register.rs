//! The Vector engine's accumulation registers as `nisa.tensor_scalar_cumulative` leaves them:
//! one value per partition, the last one the scan computed (the last column of its result).
//! `reduce_cmd=nisa.reduce_cmd.reduce` continues the scan from them.
//!
//! nkc has no register in its IR: a continuing scan starts from the last column of the
//! destination of the scan before it, which holds the register's value exactly as long as
//! nothing ran between the two. So the register is known only when the continuing call is
//! traced right after the scan that set it: no instruction emitted between them
//! ([`Checker::emitted`] unchanged), the same enclosing loops (a register carried from one
//! iteration of a hardware loop to the next is not known at trace time) and the same guarded
//! branch (a scan under a condition of loop indices runs only in some iterations). Otherwise
//! the call is the diagnostic it was before, never a guess.

use super::{Checker, TileVal};
use penguin::{AffineExpr, Axis, Predicate};

/// The registers after a scan: where their values are, and when they were set.
#[derive(Clone, Debug)]
pub(super) struct AccRegister {
    /// The `[P, 1]` last column of the scan's destination.
    column: TileVal,
    /// [`Checker::emitted`] right after the scan.
    emitted: u64,
    /// The loops enclosing the scan.
    enclosing: Vec<Axis>,
    /// The guarded branches around it: their copies and their guards.
    guards: (usize, Vec<Predicate>),
}

impl Checker<'_> {
    /// Records the registers a scan into `dst` left, `dst` a plain `[P, F]` tile (no pattern,
    /// no view); anything else forgets them.
    pub(super) fn set_acc_register(&mut self, dst: &TileVal) {
        self.acc_register = None;
        if dst.pattern.is_some() || dst.view.is_some() || dst.indirect.is_some() || dst.size[1] == 0
        {
            return;
        }
        let last = AffineExpr::constant(dst.size[1] as i64 - 1);
        let Some(start) = super::arith::lin(&dst.start[1], 1, &last, 1) else {
            return;
        };
        let mut column = dst.clone();
        column.start[1] = start;
        column.size[1] = 1;
        column.dims = None;
        self.acc_register = Some(AccRegister {
            column,
            emitted: self.emitted,
            enclosing: self.enclosing.clone(),
            guards: (self.if_guards.copies, self.active_guards.clone()),
        });
    }

    /// The `[partitions, 1]` values of the registers when they are known here (module doc).
    pub(super) fn acc_register(&self, partitions: u64) -> Option<TileVal> {
        let r = self.acc_register.as_ref()?;
        let known = r.emitted == self.emitted
            && r.enclosing == self.enclosing
            && r.guards.0 == self.if_guards.copies
            && r.guards.1 == self.active_guards
            && r.column.size[0] == partitions;
        known.then(|| r.column.clone())
    }
}
