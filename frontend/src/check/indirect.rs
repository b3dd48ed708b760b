//! Indirect subscripts of HBM tensors (NKI's gather and scatter): `t[idx_tile[i_p, 0], i_f]`,
//! where the row index is the values of an on-chip integer tile, one per partition.
//!
//! The subscript becomes a [`TileVal`] whose box is every row an index may name (the whole
//! indexed dimension at the affine offset the other indices give) and whose `indirect` is the
//! `[P, 1]` index tile; a load of it is a `gather` (`memory_ops.rs`), a store into it a
//! `scatter` (`ops.rs`), each moving one row of `size[1]` elements per partition.
//!
//! Invariants: at most one index is a tile, and it indexes the dimension just before the last
//! (the rows of the stored 2-D form, so one index step is one stored row); the index tile is on
//! chip and `[P, 1]`; the box is an ordinary box (no access pattern, no partition-major view).
//! Anything else is E0127 with a help saying what to write.

use super::{Checker, TileVal, Value};
use crate::ast::{Expr, ExprKind, Index, Span};
use crate::codes;
use crate::diagnostic::Error;
use penguin::Memory;

impl Checker<'_> {
    /// Whether `e` is an on-chip tile or a subscript of one, found without reporting anything.
    fn is_onchip_tile(&self, e: &Expr) -> bool {
        let name = match &e.kind {
            ExprKind::Name(n) => n,
            ExprKind::Subscript { value, .. } => match &value.kind {
                ExprKind::Name(n) => n,
                _ => return false,
            },
            _ => return false,
        };
        match self.find(name).map(|b| &b.value) {
            Some(Value::Tile(t)) => self.tensor(t.tensor).memory != Memory::Hbm,
            _ => false,
        }
    }

    /// The hook of `subscript`: `None` when no index is an on-chip tile (an ordinary subscript),
    /// else the indirect view (or `Some(None)` after an error).
    pub(super) fn subscript_indirect(
        &mut self,
        base: &TileVal,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<Option<TileVal>> {
        let tiles: Vec<usize> = (indices.iter().enumerate())
            .filter(|(_, ix)| matches!(ix, Index::Expr(e) if self.is_onchip_tile(e)))
            .map(|(k, _)| k)
            .collect();
        let &[k] = tiles.as_slice() else {
            if tiles.len() > 1 {
                let at = indices[tiles[1]].span();
                self.error(refuse("two index tiles in one subscript", at).with_help(
                    "index one dimension with a tile; compute a single row index on chip (`row = i * n + j`) for a flattened view",
                ));
                return Some(None);
            }
            return None;
        };
        let Index::Expr(ie) = &indices[k] else {
            return None;
        };
        if self.tensor(base.tensor).memory != Memory::Hbm || base.indirect.is_some() {
            self.error(refuse("an on-chip tile indexed by the values of a tile", ie.span.clone()).with_help(
                "index an on-chip tile by affine indices; to gather rows, load them from HBM with `nl.load(t[idx[i_p, 0], i_f])`",
            ));
            return Some(None);
        }
        // The index must be the one before the last: the stored rows (each index one row).
        if k + 2 != indices.len() {
            self.error(
                refuse("an index tile on a dimension other than the rows", ie.span.clone())
                    .with_label(format!("index {k} of {}", indices.len()))
                    .with_help("index the dimension just before the last with the tile and give the last one as a slice or `nl.arange` (`t[b, idx[i_p, 0], i_f]`); reshape the tensor so the gathered dimension comes just before the last"),
            );
            return Some(None);
        }
        let (idx, _) = self.view(ie)?;
        if idx.size[1] != 1 || idx.pattern.is_some() {
            self.error(
                refuse("an index tile of more than one column", ie.span.clone())
                    .with_label(format!("a [{}, {}] tile", idx.size[0], idx.size[1]))
                    .with_help(
                        "select one column of it, one row index per partition: `idx[i_p, 0]`",
                    ),
            );
            return Some(None);
        }
        // The same subscript with the whole indexed dimension: every row an index may name.
        let mut whole = indices.to_vec();
        whole[k] = Index::Slice {
            lo: None,
            hi: None,
            step: None,
            span: ie.span.clone(),
        };
        let Some(mut view) = self.subscript(base, name, &whole, span) else {
            return Some(None);
        };
        let rows_are_indices = view.dims.as_ref().is_none_or(|d| d.len() == 2);
        if view.pattern.is_some() || view.view.is_some() || !rows_are_indices {
            self.error(
                refuse("an indirect subscript whose rows are not contiguous", span.clone())
                    .with_help("keep the free axis a plain slice or `nl.arange` of the last dimension: `t[idx[i_p, 0], i_f]`"),
            );
            return Some(None);
        }
        view.dims = None;
        view.indirect = Some(Box::new(idx));
        Some(Some(view))
    }
}

fn refuse(what: &str, at: Span) -> Error {
    Error::new(
        codes::INDIRECT_INDEX,
        format!("{what} is not an indirect access nkc lowers"),
        at,
    )
}
