//! NKI's tile of a vector: a one-dimensional HBM tensor `[N]` (or a slice `v[a:b]` of one)
//! moved by a DMA has its only axis on the partitions, since a tile's first dimension is its
//! partition dimension. `nl.load(bias[k * 128:(k + 1) * 128])` is the `[128, 1]` tile of one
//! element per partition, and `nisa.dma_copy(dst=col, src=v)` moves `v` into a `[n, 1]` tile.
//!
//! nkc stores such a vector as the row `[1, N]` (`nd.rs`), so the column is an access pattern
//! over that row (element `i` to partition `i`), as an index vector `v[i_p]` already gives
//! (`nd.rs`, `vector_on_partitions`).
//!
//! Invariant: the column has the elements of the row in the same order, so a DMA whose other
//! side is a row `[1, n]` (a kernel written for nkc's layout) keeps the row; only a load into a
//! new tile, or a DMA whose other side is `[n, 1]`, takes the column. A vector of more than 128
//! elements (more than a tile's partitions), of one element, or already a pattern, an indirect
//! access or an N-D view, is left as it is.

use super::{Checker, TileVal};
use crate::ast::{Expr, ExprKind};
use penguin::{Memory, PatAxis, Pattern};
use vocab::machine::PMAX;

impl Checker<'_> {
    /// The column `[n, 1]` NKI's DMA makes of `t` (written `e`) when `t` is a plain slice
    /// `[1, n]` of a one-dimensional HBM tensor with `2 <= n <= 128`; `None` for any other tile.
    pub(super) fn vector_column(&self, t: &TileVal, e: &Expr) -> Option<TileVal> {
        if self.tensor(t.tensor).memory != Memory::Hbm
            || t.pattern.is_some()
            || t.indirect.is_some()
            || t.view.is_some()
        {
            return None;
        }
        // The numpy shape of the view: a subscript's (or a reshape's) own dimensions, else the
        // tensor's declared ones. One dimension: a vector (`v[i]` keeps none: an element).
        // A name bound to `x.reshape((n,))` keeps its dimensions beside the name (`reshape.rs`).
        let reshaped = match &e.kind {
            ExprKind::Name(n) if t.dims.is_none() => self.reshaped_dims(n),
            _ => None,
        };
        let dims = (t.dims.as_ref().or(reshaped.as_ref())).or_else(|| self.logical.get(&t.tensor));
        if dims.map(Vec::len) != Some(1) {
            return None;
        }
        let [rows, n] = t.size;
        if rows != 1 || !(2..=PMAX).contains(&n) {
            return None;
        }
        let axes = vec![
            PatAxis {
                count: n,
                step: vec![0, 1],
            },
            PatAxis {
                count: 1,
                step: vec![0, 0],
            },
        ];
        Some(TileVal {
            tensor: t.tensor,
            start: t.start.clone(),
            size: [n, 1],
            view: None,
            pattern: Some(Pattern { axes }),
            dims: None,
            indirect: None,
        })
    }
}
