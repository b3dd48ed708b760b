//! The interpreter's indirect DMAs (`gather`, `scatter`): row `p` of the tile pairs with row
//! `idx[p]` of the HBM box, with `idx` the `[P, 1]` index tile read when the instruction runs.
//!
//! Invariants: every index is checked (an integer in `0..B`, `B` the box's rows) before any row
//! moves, so an instruction that fails writes nothing; with `skip_oob` an index outside the box
//! moves nothing for its row. Scatter writes partitions in increasing order (the last of equal
//! indices wins), the order the simulator's DMA follows.

use super::{Machine, Result};
use crate::entities::Inst;
use crate::interp::memory::Region;
use crate::interp::InterpError;
use crate::ir::{InstData, Op};

impl Machine<'_> {
    /// Runs gather or scatter `data` (already unmasked: clipped to its active box).
    pub(super) fn exec_indirect(&mut self, inst: Inst, data: &InstData) -> Result<()> {
        let (gather, skip_oob) = match data.op {
            Op::Gather { skip_oob } => (true, skip_oob),
            Op::Scatter { skip_oob } => (false, skip_oob),
            _ => return Err(self.malformed(Some(inst), "not an indirect DMA")),
        };
        let name = data.op.name();
        let (hbm_op, tile_op) = if gather {
            (&data.srcs[0], &data.dst)
        } else {
            (&data.dst, &data.srcs[0])
        };
        let hbm = self.resolve(inst, name, hbm_op)?;
        let tile = self.resolve(inst, name, tile_op)?;
        let idx = self.read(inst, name, &data.srcs[1])?;
        if hbm.pattern.is_some() || tile.pattern.is_some() {
            return Err(self.malformed(Some(inst), "an indirect DMA through an access pattern"));
        }
        if idx.shape() != (tile.rows, 1) || hbm.cols != tile.cols {
            return Err(self.bad_shape(
                inst,
                "the index tile",
                idx.shape(),
                format!("[{}, 1] beside a tile of {} columns", tile.rows, hbm.cols),
            ));
        }
        // Every index first: a failing instruction moves nothing.
        let mut rows = Vec::with_capacity(tile.rows);
        for (p, &v) in idx.data.iter().enumerate() {
            let ok = v.fract() == 0.0 && v >= 0.0 && (v as f64) < hbm.rows as f64;
            if ok {
                rows.push(Some(v as usize));
            } else if skip_oob && v.fract() == 0.0 {
                rows.push(None);
            } else {
                return Err(InterpError::IndexOutOfRange {
                    inst,
                    op: name,
                    tensor: self.func.display_name(hbm_op.tensor).to_string(),
                    partition: p,
                    value: v,
                    rows: hbm.rows as u64,
                    at: self.iteration(),
                });
            }
        }
        let row_of = |r: &Region, k: usize| Region {
            slot: r.slot,
            row0: r.row0 + k,
            col0: r.col0,
            rows: 1,
            cols: r.cols,
            pattern: None,
        };
        let mut moved = 0u64;
        if gather {
            for (p, row) in rows.iter().enumerate() {
                let Some(k) = *row else { continue };
                let values = self.read_region(inst, name, hbm_op.tensor, &row_of(&hbm, k))?;
                self.write(inst, name, &row_of(&tile, p), &data.dst, &values)?;
                moved += tile.cols as u64;
            }
        } else {
            let values = self.read(inst, name, tile_op)?.data;
            for (p, row) in rows.iter().enumerate() {
                let Some(k) = *row else { continue };
                let part = &values[p * tile.cols..(p + 1) * tile.cols];
                self.write(inst, name, &row_of(&hbm, k), &data.dst, part)?;
                moved += tile.cols as u64;
            }
        }
        self.stats.record(&data.op, data.engine, moved);
        Ok(())
    }
}
