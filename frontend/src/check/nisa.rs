//! The `nisa` operations that are the core operations under other names and argument lists:
//! `nisa.tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None,
//! reverse1=False)`, `nisa.tensor_tensor(data1, data2, op)` and `nisa.tensor_reduce(op, data,
//! axis, keepdims=False)`. Each becomes the elementwise or reduction instructions that
//! `nl.multiply`, `nl.add`, `nl.sum`, ... make, so their numerics are those of the core ops in
//! the interpreter and the simulator alike.
//!
//! An `op` argument names an `nl` (or `np`) function: `add`, `subtract`, `multiply`, `divide`,
//! `maximum`, `minimum`; a reduction also takes `max` / `min`. Anything else is a diagnostic that
//! lists them.

use super::error::CheckError;
use super::operands::{Arg, Dest, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind, Span};
use penguin::{AluOp, ReduceOp};

/// The name `nl.NAME` or `np.NAME` written as an `op=` argument.
fn op_name(e: &Expr) -> Option<&str> {
    e.attr_of(&["nl", "np", "numpy"])
}

fn alu_named(name: &str) -> Option<AluOp> {
    AluOp::ALL
        .into_iter()
        .find(|a| a.is_nl() && a.name() == name)
}

impl Checker<'_> {
    /// The ALU operation an `op=` argument names.
    pub(super) fn alu_op(&mut self, e: &Expr) -> Option<AluOp> {
        if let Some(alu) = op_name(e).and_then(alu_named) {
            return Some(alu);
        }
        if !matches!(e.kind, ExprKind::Error) {
            self.error(CheckError::ExpectedAluOp { at: e.span.clone() });
        }
        None
    }

    /// The reduction an `op=` argument names.
    pub(super) fn reduce_op(&mut self, e: &Expr) -> Option<ReduceOp> {
        match op_name(e) {
            Some("add" | "sum") => Some(ReduceOp::Sum),
            Some("maximum" | "max") => Some(ReduceOp::Max),
            Some("minimum" | "min") => Some(ReduceOp::Min),
            Some("multiply" | "prod") => Some(ReduceOp::Prod),
            Some("logical_and" | "all") => Some(ReduceOp::All),
            _ => {
                if !matches!(e.kind, ExprKind::Error) {
                    self.error(CheckError::ExpectedReduceOp { at: e.span.clone() });
                }
                None
            }
        }
    }

    /// A boolean keyword such as `reverse0=True`; absent is false.
    fn flag(&mut self, e: Option<&Expr>, what: &str) -> Option<bool> {
        match e {
            None => Some(false),
            Some(e) => self.condition(e, what),
        }
    }

    /// `nisa.tensor_scalar`: `data op0 operand0`, then `op1 operand1` when given; `reverseK`
    /// swaps the operands of step K. An operand is a scalar or a `[P, 1]` tile.
    pub(super) fn tensor_scalar(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let data = self.arg(slots[0]?, cx);
        let op0 = self.alu_op(slots[1]?);
        let operand0 = self.arg(slots[2]?, cx);
        let rev0 = self.flag(slots[3], "reverse0");
        let second = match (slots[4], slots[5]) {
            (None, None) => None,
            (Some(op), Some(operand)) => {
                let op1 = self.alu_op(op);
                let operand1 = self.arg(operand, cx);
                let rev1 = self.flag(slots[6], "reverse1");
                Some((op1?, operand1?, rev1?))
            }
            (Some(e), None) | (None, Some(e)) => {
                self.error(CheckError::Op1WithoutOperand1 { at: e.span.clone() });
                return None;
            }
        };
        let (data, op0, operand0, rev0) = (data?, op0?, operand0?, rev0?);
        let first_dest = if second.is_some() {
            Dest::Temp
        } else {
            dest.clone()
        };
        let (a, b) = if rev0 {
            (operand0, data)
        } else {
            (data, operand0)
        };
        let t = self.elementwise(op0, a, b, span, cx, first_dest)?;
        let Some((op1, operand1, rev1)) = second else {
            return Some(t);
        };
        let t = Arg::Tile(t, span.clone());
        let (a, b) = if rev1 { (operand1, t) } else { (t, operand1) };
        self.elementwise(op1, a, b, span, cx, dest)
    }

    /// `nisa.tensor_tensor(data1, data2, op)`.
    pub(super) fn tensor_tensor(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let a = self.arg(slots[0]?, cx);
        let b = self.arg(slots[1]?, cx);
        let op = self.alu_op(slots[2]?);
        self.elementwise(op?, a?, b?, span, cx, dest)
    }
}
