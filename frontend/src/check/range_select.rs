//! `nisa.range_select(on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=,
//! reduce_res=, reduce_op=np.max, range_start=0, on_false_value=)`: element `[p, j]` is
//! `on_true_tile[p, j]` where both `comp_op0(range_start + j, bound0[p])` and
//! `comp_op1(range_start + j, bound1[p])` hold, `on_false_value` elsewhere; the Vector engine's
//! accumulation register of each partition takes the row's maximum (`reset_reduce` starts it,
//! `reduce` continues it, `idle` leaves it), and `reduce_res=` receives it.
//!
//! It is built from the core instructions: an iota of `range_start + j`, the two comparisons
//! with the `[P, 1]` bounds, their product (both are 0 or 1), the select `nl.where` makes, and
//! a max reduction of the result. nkc has no register in its IR: the register is the `[P, 1]`
//! tile that holds its value ([`RangeRegister`]), the reduction of the call that reset it,
//! `nl.maximum`'d with each continuing call's. Like `acc_register`'s, it is known only where
//! the call that set it ran with the same enclosing hardware loops and guarded branch (a value
//! carried from one iteration of a hardware loop to the next is not known at trace time);
//! elsewhere `reduce` is a diagnostic, never a guess.
//!
//! Invariants: `range_start` is a compile-time integer (a loop whose index it depends on is
//! unrolled, as an iota's base is), `range_start + j` stays below 2^24 (exact in float32), and
//! the reduction is a maximum (NKI's only one).

use super::calls::Param;
use super::operands::{Arg, Dest, OpKind, Res, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind, Span};
use crate::codes;
use penguin::{AffineExpr, AluOp, Axis, Op, Predicate, ReduceOp};
use vocab::Diagnostic;

/// The register's value after a `range_select` that set it, and where that call ran.
#[derive(Clone, Debug)]
pub(super) struct RangeRegister {
    /// The `[P, 1]` tile that holds it.
    value: TileVal,
    /// The number of tensors right after it was made (a retried loop's tensors are dropped).
    tensors: usize,
    /// The loops enclosing the call.
    enclosing: Vec<Axis>,
    /// The guarded branches around it: their copies and their guards.
    guards: (usize, Vec<Predicate>),
}

/// The `nisa` operation of this file, by name.
pub(super) fn nisa_ops(name: &str) -> Option<OpKind> {
    (name == "range_select").then_some(OpKind::RangeSelect)
}

/// Its parameters, in NKI's order.
pub(super) fn params(_kind: OpKind) -> &'static [Param] {
    &[
        ("on_true_tile", true),
        ("comp_op0", true),
        ("comp_op1", true),
        ("bound0", true),
        ("bound1", true),
        ("reduce_cmd", false),
        ("reduce_res", false),
        ("reduce_op", false),
        ("range_start", false),
        ("on_false_value", false),
    ]
}

/// What a call does with the register.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Idle,
    Reset,
    Continue,
}

impl Checker<'_> {
    /// `nisa.range_select(...)` once its arguments are bound (module doc).
    pub(super) fn range_select(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        const WHAT: &str = "`nisa.range_select`";
        // The start first: a loop whose index it names is unrolled before anything is emitted.
        let start = match slots[8] {
            Some(e) => self.range_start(e)?,
            None => 0,
        };
        let on_true = self.compute_tile(slots[0]?, cx, WHAT)?;
        let [p, f] = on_true.size;
        let op0 = self.comparison(slots[1]?)?;
        let op1 = self.comparison(slots[2]?)?;
        let bound0 = self.compute_tile(slots[3]?, cx, WHAT)?;
        let bound1 = self.compute_tile(slots[4]?, cx, WHAT)?;
        for (b, e) in [(&bound0, slots[3]?), (&bound1, slots[4]?)] {
            if b.size != [p, 1] {
                return self.range_error(
                    format!(
                        "{WHAT}: a bound is {:?}, but must be [{p}, 1], one value per partition",
                        b.size
                    ),
                    &e.span,
                    "pass a `[P, 1]` tile of the bounds of each partition",
                );
            }
        }
        let cmd_name = |e: &Expr| match &e.kind {
            ExprKind::Attribute { attr, .. } => Some(attr.name.clone()),
            _ => None,
        };
        let cmd = match slots[5].map(cmd_name) {
            None => Cmd::Idle,
            Some(Some(n)) if n == "idle" => Cmd::Idle,
            Some(Some(n)) if n == "reset_reduce" => Cmd::Reset,
            Some(Some(n)) if n == "reduce" => Cmd::Continue,
            Some(_) => {
                return self.range_error(
                    format!(
                    "{WHAT} takes `reduce_cmd=` `nisa.reduce_cmd.reset_reduce`, `reduce` or `idle`"
                ),
                    &slots[5]?.span,
                    "reset the register with `reset_reduce`, continue it with `reduce`",
                )
            }
        };
        if let Some(e) = slots[7] {
            if self.reduce_op(e)? != ReduceOp::Max {
                return self.range_error(
                    format!("{WHAT} reduces with a maximum only"),
                    &e.span,
                    "pass `reduce_op=np.max`",
                );
            }
        }
        let on_false = match slots[9] {
            Some(e) => match self.arg(e, cx)? {
                Arg::Scalar(v) => v,
                Arg::Tile(_, at) => {
                    return self.range_error(
                        format!("{WHAT}: `on_false_value` is one value, not a tile"),
                        &at,
                        "pass a number such as nl.fp32.min",
                    )
                }
            },
            None => f32::MIN,
        };
        if start.unsigned_abs().saturating_add(f) > 1 << 24 {
            return self.range_error(
                format!("{WHAT}: the indices from {start} over {f} columns pass 2^24, where float32 is not exact"),
                span,
                "keep `range_start` plus the row length below 16777216",
            );
        }
        let held = match cmd {
            Cmd::Continue => match self.range_register(p) {
                Some(r) => Some(r),
                None => {
                    return self.range_error(
                        format!("{WHAT} with `reduce_cmd=reduce` continues an accumulation register that is not known here"),
                        &slots[5]?.span,
                        "continue it in the same loop body as the `reset_reduce` call that started it",
                    )
                }
            },
            Cmd::Idle | Cmd::Reset => None,
        };
        let t = |v: TileVal| Arg::Tile(v, span.clone());
        let iota = Op::Iota {
            base: start as f32,
            pstep: 0.0,
            fstep: 1.0,
        };
        let idx = self.emit(cx, iota, vec![], Res::sbuf([p, f]), Dest::Temp, span)?;
        let c0 = self.elementwise(op0, t(idx.clone()), t(bound0), span, cx, Dest::Temp)?;
        let c1 = self.elementwise(op1, t(idx), t(bound1), span, cx, Dest::Temp)?;
        let keep = self.elementwise(AluOp::Multiply, t(c0), t(c1), span, cx, Dest::Temp)?;
        // nl.where's select: the kept values, plus `on_false_value` where nothing is kept.
        let a = self.elementwise(
            AluOp::PassIf,
            t(on_true),
            t(keep.clone()),
            span,
            cx,
            Dest::Temp,
        )?;
        let b = self.elementwise(
            AluOp::PassUnless,
            Arg::Scalar(on_false),
            t(keep),
            span,
            cx,
            Dest::Temp,
        )?;
        let result = self.elementwise(AluOp::Add, t(a), t(b), span, cx, dest)?;
        let register = match cmd {
            Cmd::Idle => None,
            Cmd::Reset | Cmd::Continue => {
                let op = Op::Reduce { op: ReduceOp::Max };
                let r = self.emit(
                    cx,
                    op,
                    vec![result.clone()],
                    Res::sbuf([p, 1]),
                    Dest::Temp,
                    span,
                )?;
                Some(match held {
                    Some(h) => {
                        self.elementwise(AluOp::Maximum, t(h), t(r), span, cx, Dest::Temp)?
                    }
                    None => r,
                })
            }
        };
        if let Some(value) = &register {
            self.range_register = Some(RangeRegister {
                value: value.clone(),
                tensors: self.tensors.len(),
                enclosing: self.enclosing.clone(),
                guards: (self.if_guards.copies, self.active_guards.clone()),
            });
        }
        if let Some(e) = slots[6] {
            let Some(value) = register.or_else(|| self.range_register(p)) else {
                return self.range_error(
                    format!(
                        "{WHAT}: `reduce_res=` of an accumulation register that is not known here"
                    ),
                    &e.span,
                    "start the register with `reduce_cmd=nisa.reduce_cmd.reset_reduce`",
                );
            };
            let (target, _) = self.view(e)?;
            let into = Dest::Into {
                target,
                accumulate: false,
            };
            self.emit(cx, Op::Copy, vec![value], Res::sbuf([p, 1]), into, &e.span)?;
        }
        Some(result)
    }

    /// The register's `[partitions, 1]` tile when it is known here (module doc).
    fn range_register(&self, partitions: u64) -> Option<TileVal> {
        let r = self.range_register.as_ref()?;
        let known = r.tensors <= self.tensors.len()
            && (r.value.tensor.as_u32() as usize) < self.tensors.len()
            && r.enclosing == self.enclosing
            && r.guards.0 == self.if_guards.copies
            && r.guards.1 == self.active_guards
            && r.value.size[0] == partitions;
        known.then(|| r.value.clone())
    }

    /// `range_start`: a compile-time integer; a loop index in it unrolls its loop.
    fn range_start(&mut self, e: &Expr) -> Option<i64> {
        let v = self.eval(e)?;
        let a = match v {
            super::Value::Int(a) => a,
            _ => {
                return self.range_error(
                    "`nisa.range_select`: `range_start` is an integer".to_string(),
                    &e.span,
                    "pass an integer, which may name loop indices",
                )
            }
        };
        if let Some(c) = a.as_constant() {
            return Some(c);
        }
        if self.unroll_for_division(&a, &AffineExpr::constant(0)) {
            return None;
        }
        self.range_error(
            "`nisa.range_select`: `range_start` depends on the index of a loop nkc cannot unroll"
                .to_string(),
            &e.span,
            "its value is an immediate of the instruction: use a `range` or `nl.static_range` loop",
        )
    }

    /// A comparison operation (`np.greater_equal`, `nl.less`, ...), also through a name bound to
    /// one (a parameter).
    fn comparison(&mut self, e: &Expr) -> Option<AluOp> {
        let e = self.resolve_ref(e);
        let alu = self.alu_op(&e)?;
        if !matches!(
            alu,
            AluOp::Less
                | AluOp::LessEqual
                | AluOp::Greater
                | AluOp::GreaterEqual
                | AluOp::Equal
                | AluOp::NotEqual
        ) {
            return self.range_error(
                format!(
                    "`nisa.range_select` compares with a comparison, not `{}`",
                    alu.name()
                ),
                &e.span,
                "pass np.greater_equal, np.less, np.equal, ...",
            );
        }
        Some(alu)
    }

    fn range_error<T>(&mut self, message: String, span: &Span, help: &str) -> Option<T> {
        self.error(
            Diagnostic::new(codes::UNSUPPORTED, message, span.clone())
                .with_label("here")
                .with_help(help.to_string()),
        );
        None
    }
}
