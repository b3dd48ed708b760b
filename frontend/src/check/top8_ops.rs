//! The NKI operations that are the Vector engine's top-8 instructions:
//! - `nisa.max8(src)`: the Penguin `max8` instruction, `[P, 8]`, each partition's 8 largest
//!   values in descending order;
//! - `nisa.nc_find_index8(data, vals)`: the Penguin `find_index8` instruction, `[P, 8]`, where
//!   each of the 8 values of `vals` is in `data`'s partition (indices held as float32);
//! - `nisa.nc_match_replace8(data, vals, imm, dst_idx=None)`: the Penguin `match_replace8`
//!   instruction, `data`'s shape, with those 8 elements replaced by `imm`; with `dst_idx=`, a
//!   `find_index8` into that tile first (both read the same `data`).
//!
//! `data` has at least 8 elements per partition (a tile of more than two dimensions counts
//! every element of its partition), `vals` is `[P, 8]`. Numerics are the shared vocabulary's
//! (`vocab::max8`, `vocab::find_index8`, `vocab::match_replace8`), so the interpreter and the
//! simulator agree on them by construction.

use super::calls::Param;
use super::operands::{Arg, Dest, OpKind, Res, StmtCtx};
use super::{Checker, TileVal};
use crate::ast::{Expr, Span};
use crate::codes;
use penguin::Op;
use vocab::{Diagnostic, TOP8, TOP8_MIN_FREE};

/// The `nisa` operations of this file, by name.
pub(super) fn nisa_ops(name: &str) -> Option<OpKind> {
    Some(match name {
        "max8" => OpKind::Max8,
        "nc_find_index8" => OpKind::FindIndex8,
        "nc_match_replace8" => OpKind::MatchReplace8,
        _ => return None,
    })
}

/// The parameters of the operations of this file, in NKI's order.
pub(super) fn params(kind: OpKind) -> &'static [Param] {
    match kind {
        OpKind::Max8 => &[("src", true), ("dtype", false)],
        OpKind::FindIndex8 => &[("data", true), ("vals", true), ("dtype", false)],
        OpKind::MatchReplace8 => &[
            ("data", true),
            ("vals", true),
            ("imm", true),
            ("dst_idx", false),
            ("dtype", false),
        ],
        _ => &[],
    }
}

impl Checker<'_> {
    /// Applies the operations of this file once their arguments are bound.
    pub(super) fn top8_op(
        &mut self,
        kind: OpKind,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let what = match kind {
            OpKind::Max8 => "`nisa.max8`",
            OpKind::FindIndex8 => "`nisa.nc_find_index8`",
            _ => "`nisa.nc_match_replace8`",
        };
        let data = self.compute_tile(slots[0]?, cx, what)?;
        if data.size[1] < TOP8_MIN_FREE as u64 {
            self.top8_error(
                format!(
                    "{what} of {:?}: it reads at least {TOP8_MIN_FREE} elements per partition",
                    data.size
                ),
                &slots[0]?.span,
                "pass a tile of at least 8 columns",
            );
            return None;
        }
        let col8 = [data.size[0], TOP8 as u64];
        if kind == OpKind::Max8 {
            return self.emit(cx, Op::Max8, vec![data], Res::sbuf(col8), dest, span);
        }
        let vals = self.compute_tile(slots[1]?, cx, what)?;
        if vals.size != col8 {
            self.top8_error(
                format!(
                    "{what}: `vals` is {:?} but must be {col8:?}, 8 values per partition",
                    vals.size
                ),
                &slots[1]?.span,
                "pass the [P, 8] result of nisa.max8",
            );
            return None;
        }
        if kind == OpKind::FindIndex8 {
            let srcs = vec![data, vals];
            return self.emit(cx, Op::FindIndex8, srcs, Res::sbuf(col8), dest, span);
        }
        let imm = match self.arg(slots[2]?, cx)? {
            Arg::Scalar(v) => v,
            Arg::Tile(_, s) => {
                self.top8_error(
                    format!("{what}: `imm` is a tile; it is one value"),
                    &s,
                    "pass a number such as 0.0 or float('-inf')",
                );
                return None;
            }
        };
        if let Some(idx) = slots[3] {
            let (target, _) = self.view(idx)?;
            let into = Dest::Into {
                target,
                accumulate: false,
            };
            let srcs = vec![data.clone(), vals.clone()];
            self.emit(cx, Op::FindIndex8, srcs, Res::sbuf(col8), into, span)?;
        }
        let shape = data.size;
        let op = Op::MatchReplace8 { imm };
        self.emit(cx, op, vec![data, vals], Res::sbuf(shape), dest, span)
    }

    /// A shape error of one of this file's operations at `span`.
    fn top8_error(&mut self, message: String, span: &Span, help: &str) {
        self.error(
            Diagnostic::new(codes::ELEMENTWISE_SHAPE, message, span.clone())
                .with_label("here")
                .with_help(help.to_string()),
        );
    }
}
