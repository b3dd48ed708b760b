//! `t.reshape(shape)` of an on-chip tile: NKI's view of the same elements with other free
//! dimensions, the partition dimension kept (`res.reshape((P, H // 2, 2, W // 2, 2))` to pool
//! over windows, `acc.reshape((P, H, W))` to index rows of a flat PSUM tile).
//!
//! nkc stores an on-chip tile as `[P, F]`, its free dimensions flattened row-major (`tile_nd`),
//! so a reshape that keeps the partition count `P` and splits or merges only the free
//! dimensions is the same bytes: no instruction, the same tensor, and the new dimensions carried
//! by the value (`TileVal::dims`) and, for a name bound to it, beside the name
//! (`TileNdData::reshaped`, as for an HBM reshape). Subscripts of it follow the on-chip rules of
//! `tile_nd` with the partition dimension first; an operation on the whole view reads it with
//! its new shape (`patterns_nd::value_dims`).
//!
//! Invariants: the view's first dimension equals the tile's partitions and the product of the
//! others its free size; only a whole tile, not a slice or an access pattern of one, and not an
//! array whose partition dimension is not its first (block dimensions before it), is reshaped.

use super::{Checker, TileVal};
use crate::ast::{Expr, Index, Keyword, Span};
use crate::codes;
use vocab::Diagnostic;

impl Checker<'_> {
    /// `name.reshape(...)` (`e`) of the on-chip tile `base`: the view and its dimensions.
    pub(super) fn reshape_tile(
        &mut self,
        e: &Expr,
        base: TileVal,
        name: &str,
        args: &[Expr],
        kwargs: &[Keyword],
    ) -> Option<(TileVal, Vec<u64>)> {
        let shape = self.tensor(base.tensor).shape;
        let par = self.tile_nd.par.get(&base.tensor).copied().unwrap_or(0);
        let refuse = |cx: &mut Self, label: &str| {
            cx.error(
                Diagnostic::new(
                    codes::RESHAPE_LAYOUT,
                    format!("nkc reshapes a whole on-chip tile only, and `{name}` is not one"),
                    e.span.clone(),
                )
                .with_label(label.to_string())
                .with_help("reshape the whole tile (its partition dimension first), or index the tile as it is"),
            );
            None
        };
        if base.pattern.is_some() || base.indirect.is_some() {
            return refuse(self, "an access pattern of a tile");
        }
        if !base.is_whole(shape) {
            return refuse(self, "a part of an on-chip tile");
        }
        if par != 0 {
            return refuse(
                self,
                "an array of tiles (its partition dimension is not the first)",
            );
        }
        let old: Vec<u64> = self
            .reshaped_dims(name)
            .or_else(|| base.dims.clone())
            .or_else(|| self.value_dims(&base))
            .unwrap_or_else(|| shape.to_vec());
        let dims = self.reshape_dims(e, name, args, kwargs, &old)?;
        if dims.first() != Some(&shape[0]) {
            self.error(
                Diagnostic::new(
                    codes::RESHAPE_LAYOUT,
                    format!(
                        "a reshape of the on-chip tile `{name}` keeps its {} partitions, but {dims:?} starts with {}",
                        shape[0],
                        dims.first().copied().unwrap_or(0)
                    ),
                    e.span.clone(),
                )
                .with_label("the partition dimension changes")
                .with_note("an on-chip tile's first dimension is its partitions; a reshape splits or merges only its free dimensions")
                .with_help(format!("keep {} first: `{name}.reshape(({}, ...))`", shape[0], shape[0])),
            );
            return None;
        }
        let view = TileVal {
            dims: (dims.len() != 2).then(|| dims.clone()),
            ..base
        };
        Some((view, dims))
    }

    /// `t[indices]` of a reshaped on-chip tile `base` of dimensions `dims` (partitions first).
    pub(super) fn subscript_reshaped_tile(
        &mut self,
        base: &TileVal,
        dims: &[u64],
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<TileVal> {
        let whole = TileVal {
            dims: None,
            ..base.clone()
        };
        self.subscript_on_chip(&whole, dims, 0, name, indices, span)
    }
}
