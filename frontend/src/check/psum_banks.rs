//! PSUM arrays of several banks: `nl.ndarray((4, nl.par_dim(128), 512), buffer=nl.psum)`.
//!
//! The machine's PSUM is 8 banks of 2 KiB per partition, and one access (an instruction's
//! operand) never crosses a bank (MACHINE.md). An array larger than a bank is stored in whole
//! contiguous banks (the backend places it so), and is accepted when every access to it stays
//! within one bank in every iteration: the access's free start is `c0 + Σ ci·iv`, so it stays in
//! a bank for every value of the loop variables exactly when `start mod bank + size ≤ bank` for
//! every value `start mod bank` takes over the loops' ranges (`acc[:, nl.ds(128 * i, 128)]` of a
//! `(par_dim(128), 2048)` float32 array: starts 0, 128, 256, 384 within a bank of 512). Anything else is one diagnostic (E0262) at
//! the instruction, naming the array and its bank size.
//!
//! Invariant: after [`Checker::check_psum_banks`] reports nothing, every access of the kernel to
//! a PSUM tensor lies within one bank for every iteration.

use super::{CStmt, CStmtKind, Checker};
use crate::codes;
use crate::diagnostic::Error;
use penguin::{Memory, Operand};
use vocab::machine::PSUM_BANK_BYTES;

impl Checker<'_> {
    /// Reports each instruction of `body` with an access to a multi-bank PSUM array that may
    /// cross a bank.
    pub(super) fn check_psum_banks(&mut self, body: &[CStmt]) {
        for s in body {
            match &s.kind {
                CStmtKind::Insts(insts) => {
                    for i in insts {
                        for o in std::iter::once(&i.dst).chain(&i.srcs) {
                            if let Some(e) = self.bank_crossing(o, &i.span) {
                                self.error(e);
                                return;
                            }
                        }
                    }
                }
                CStmtKind::Loop { body, .. } => self.check_psum_banks(body),
            }
        }
    }

    /// The diagnostic for an access `o` (of the instruction at `at`) to a multi-bank PSUM array
    /// that may cross a bank.
    fn bank_crossing(&self, o: &Operand, at: &crate::ast::Span) -> Option<Error> {
        let t = self.tensor(o.tensor);
        let bytes = t.dtype.size_bytes();
        if t.memory != Memory::Psum || t.shape[1] * bytes <= PSUM_BANK_BYTES {
            return None;
        }
        let bank = (PSUM_BANK_BYTES / bytes) as i64;
        let start = &o.access.start[1];
        let size = o.access.size[1] as i64;
        let starts = start.residues_mod(bank, |a| {
            let l = self.loop_data(a);
            (l.lb, l.ub)
        });
        if starts.iter().all(|&r| r + size <= bank) {
            return None;
        }
        Some(
            Error::new(
                codes::PSUM_BANK_CROSSING,
                format!(
                    "this access to the PSUM array `{}` may cross a bank: columns {} + {size} of banks of {bank}",
                    t.name,
                    self.show(start)
                ),
                at.clone(),
            )
            .with_label("crosses a PSUM bank")
            .with_note("an array of several PSUM banks is stored bank after bank, and one instruction reaches one bank")
            .with_help(format!(
                "index the array by whole blocks of at most {bank} columns that start at a multiple of {bank} (`acc[i, :, :]` of an array `(n, nl.par_dim(128), {bank})`)"
            )),
        )
    }
}
