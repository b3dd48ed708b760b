//! `nisa.nc_matmul(..., tile_position=(row, col), tile_size=(rows, cols))`: the Tensor engine's
//! row and column tiling, which places a small matmul in one part of the 128×128 PE array so
//! that several run side by side.
//!
//! The placement changes when the matmul runs on NKI's hardware, not what it computes, and nkc's
//! machine model has one PE array used whole; so the front end checks the arguments by NKI's
//! rules and then compiles the matmul as without them. The rules: both keywords or neither; each
//! a pair of compile-time integers (`()` for none); a size is 32, 64 or 128 in each direction,
//! a position a multiple of its size with the tile inside the array; the stationary operand
//! `[K, M]` fits the tile (`K ≤ rows`, `M ≤ cols`).
//!
//! Invariant: a matmul accepted here is the same Penguin instruction as one written without the
//! keywords.

use super::Checker;
use crate::ast::{Expr, ExprKind, Span};
use crate::codes;
use vocab::machine::PMAX;

/// The sizes a PE tile may have in each direction.
const TILE_SIZES: [i64; 3] = [32, 64, 128];

impl Checker<'_> {
    /// Checks `tile_position=` and `tile_size=` of an `nc_matmul` whose stationary operand is
    /// `stationary` (`[K, M]`); `None` after a diagnostic.
    pub(super) fn check_pe_tiling(
        &mut self,
        position: Option<&Expr>,
        size: Option<&Expr>,
        stationary: [u64; 2],
        span: &Span,
    ) -> Option<()> {
        let pos = match position {
            Some(e) => self.int_pair(e, "tile_position")?,
            None => None,
        };
        let size = match size {
            Some(e) => self.int_pair(e, "tile_size")?,
            None => None,
        };
        let (pos, size) = match (pos, size) {
            (None, None) => return Some(()),
            (Some(p), Some(s)) => (p, s),
            _ => {
                return self.pe_error(
                    "`tile_position` and `tile_size` go together: give both, or neither".into(),
                    span,
                )
            }
        };
        let array = PMAX as i64;
        for (d, what) in [(0, "rows"), (1, "columns")] {
            if !TILE_SIZES.contains(&size[d]) {
                return self.pe_error(
                    format!(
                        "a PE tile has 32, 64 or 128 {what}, not {} (`tile_size[{d}]`)",
                        size[d]
                    ),
                    span,
                );
            }
            if pos[d] < 0 || pos[d] % size[d] != 0 || pos[d] + size[d] > array {
                return self.pe_error(
                    format!(
                        "`tile_position[{d}]` is {}: a multiple of the tile's {} {what} from 0 to {}",
                        pos[d],
                        size[d],
                        array - size[d]
                    ),
                    span,
                );
            }
        }
        let [k, m] = stationary;
        if k > size[0] as u64 || m > size[1] as u64 {
            return self.pe_error(
                format!(
                    "the stationary operand is [{k}, {m}] but the PE tile is {} rows by {} columns: it must fit (K ≤ rows, M ≤ columns)",
                    size[0], size[1]
                ),
                span,
            );
        }
        Some(())
    }

    /// `()` (`Some(None)`) or a pair of compile-time integers (`Some(Some(..))`); `None` after
    /// a diagnostic.
    fn int_pair(&mut self, e: &Expr, what: &str) -> Option<Option<[i64; 2]>> {
        let ExprKind::Tuple(items) = &e.kind else {
            return self.pe_error(
                format!("`{what}` is a pair of integers, `({what}_0, {what}_1)`"),
                &e.span,
            );
        };
        match items.as_slice() {
            [] => Some(None),
            [a, b] => {
                let a = self.const_int(a);
                let b = self.const_int(b);
                Some(Some([a?, b?]))
            }
            _ => self.pe_error(
                format!("`{what}` is a pair of integers, not {} values", items.len()),
                &e.span,
            ),
        }
    }

    fn pe_error<T>(&mut self, message: String, at: &Span) -> Option<T> {
        self.raise(codes::MATMUL_LIMIT, message, at);
        None
    }
}
