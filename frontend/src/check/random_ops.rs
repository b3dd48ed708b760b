//! The NKI operations that draw random numbers on the device:
//! - `nl.rand(shape, dtype=nl.float32)`: the Penguin `rand` instruction, a new tile of uniform
//!   values in `[0, 1)`;
//! - `nisa.dropout(data, prob)` and `nl.dropout(x, rate)`: the Penguin `dropout` instruction,
//!   `data`'s shape, each element zeroed when its random value is below the drop probability.
//!   `prob` is a number (written into a `[P, 1]` tile by a `memset` first) or a `[P, 1]` tile,
//!   one probability per partition.
//!
//! Invariants: every call traced gives its instruction a stream number of its own (in the order
//! the kernel runs them; an unrolled loop's iterations are separate calls), so two calls never
//! draw the same values; an instruction in a hardware loop draws the same values in every
//! iteration. The values are the shared vocabulary's (`vocab::rand_at`, `vocab::dropout`), so
//! the interpreter and the simulator agree on them by construction.

use super::calls::Param;
use super::operands::{Arg, Dest, OpKind, Res, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, Span};
use crate::codes;
use penguin::{Memory, Op};
use vocab::{DType, Diagnostic};

/// The `nl` operations of this file, by name.
pub(super) fn nl_ops(name: &str) -> Option<OpKind> {
    Some(match name {
        "rand" => OpKind::Rand,
        "dropout" => OpKind::Dropout,
        _ => return None,
    })
}

/// The `nisa` operations of this file, by name.
pub(super) fn nisa_ops(name: &str) -> Option<OpKind> {
    Some(match name {
        "dropout" => OpKind::Dropout,
        _ => return None,
    })
}

/// The parameters of the operations of this file, in NKI's order (`nl.dropout`'s `x, rate` are
/// `nisa.dropout`'s `data, prob` by position).
pub(super) fn params(kind: OpKind) -> &'static [Param] {
    match kind {
        OpKind::Rand => &[("shape", true), ("dtype", false)],
        OpKind::Dropout => &[("data", true), ("prob", true), ("dtype", false)],
        _ => &[],
    }
}

impl Checker<'_> {
    /// The next random stream number.
    fn next_stream(&mut self) -> u32 {
        let s = self.random_streams;
        self.random_streams = self.random_streams.saturating_add(1);
        s
    }

    /// Applies the operations of this file once their arguments are bound.
    pub(super) fn random_op(
        &mut self,
        kind: OpKind,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let dtype = match slots[if kind == OpKind::Rand { 1 } else { 2 }] {
            Some(d) => Some(self.dtype_of(d)?),
            None => None,
        };
        if kind == OpKind::Rand {
            let shape = self.shape_of(slots[0]?)?;
            let res = Res {
                shape,
                memory: Memory::Sbuf,
                dtype: dtype.unwrap_or(DType::F32),
            };
            let stream = self.next_stream();
            return self.emit(cx, Op::Rand { stream }, vec![], res, dest, span);
        }
        let what = "`dropout`";
        let data = self.compute_tile(slots[0]?, cx, what)?;
        let col = [data.size[0], 1];
        let prob = match self.arg(slots[1]?, cx)? {
            Arg::Scalar(v) => {
                let res = Res::sbuf(col);
                self.emit(cx, Op::Memset { value: v }, vec![], res, Dest::Temp, span)?
            }
            Arg::Tile(t, s) => {
                if t.size != col {
                    self.error(
                        Diagnostic::new(
                            codes::ELEMENTWISE_SHAPE,
                            format!(
                                "{what}: `prob` is {:?} but must be {col:?}, one probability per partition of the data",
                                t.size
                            ),
                            s.clone(),
                        )
                        .with_label("here")
                        .with_help(format!(
                            "pass a number such as 0.2, or a [{}, 1] tile of probabilities",
                            col[0]
                        )),
                    );
                    return None;
                }
                t
            }
        };
        let res = Res {
            shape: data.size,
            memory: Memory::Sbuf,
            dtype: dtype.unwrap_or(self.tensor(data.tensor).dtype),
        };
        let stream = self.next_stream();
        self.emit(
            cx,
            Op::Dropout { stream },
            vec![data, prob],
            res,
            dest,
            span,
        )
    }
}
