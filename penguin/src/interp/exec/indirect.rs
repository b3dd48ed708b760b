//! The interpreter's indirect DMAs (`gather`, `scatter`): row `p` of the tile pairs with row
//! `idx[p]` of the HBM box, with `idx` the `[P, 1]` index tile read when the instruction runs.
//!
//! Invariants: every index is checked (an integer in `0..B`, `B` the box's rows) before any row
//! moves, so an instruction that fails writes nothing; with `skip_oob` an index outside the box
//! (an integer, negative ones included) moves nothing for its row. Scatter writes partitions in
//! increasing order (the last of equal indices wins), the order the simulator's DMA follows; an
//! accumulating scatter reads each row it names just before adding to it, so equal indices add
//! up, each sum rounded to the destination's dtype.

use super::{Machine, Result};
use crate::entities::Inst;
use crate::interp::memory::Region;
use crate::interp::InterpError;
use crate::ir::{InstData, Op};
use cranelift_entity::EntityRef;

impl Machine<'_> {
    /// Runs gather or scatter `data` (already unmasked: clipped to its active box).
    pub(super) fn exec_indirect(&mut self, inst: Inst, data: &InstData) -> Result<()> {
        let (gather, skip_oob, accumulate) = match data.op {
            Op::Gather { skip_oob } => (true, skip_oob, false),
            Op::Scatter {
                skip_oob,
                accumulate,
            } => (false, skip_oob, accumulate),
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
        // An undefined index would choose an address: observable, so the undefined-data error.
        if let Some(i) = idx.undef.as_ref().and_then(|u| u.iter().position(|&x| x)) {
            let (slot, row, col) = idx.region.element(i);
            let blocked = !self.bufs[data.srcs[1].tensor.index()]
                .block_counts
                .is_empty();
            return Err(InterpError::Uninitialised {
                inst,
                op: name,
                tensor: self.func.display_name(data.srcs[1].tensor).to_string(),
                element: crate::interp::Element {
                    slot: blocked.then_some(slot),
                    row,
                    col,
                },
                dest: self.func.display_name(hbm_op.tensor).to_string(),
                at: self.iteration(),
            });
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
                let (values, undef) = self.read_region(hbm_op.tensor, &row_of(&hbm, k));
                let moved_row = (&values[..], undef.as_deref());
                self.write(inst, name, &row_of(&tile, p), &data.dst, moved_row, None)?;
                moved += tile.cols as u64;
            }
        } else {
            let values = self.read(inst, name, tile_op)?;
            for (p, row) in rows.iter().enumerate() {
                let Some(k) = *row else { continue };
                let cols = p * tile.cols..(p + 1) * tile.cols;
                let part = &values.data[cols.clone()];
                let undef = values.undef.as_ref().map(|u| &u[cols]);
                let to = row_of(&hbm, k);
                if accumulate {
                    // Read-modify-write: the row as it is now (an earlier partition's sum
                    // included) plus this partition's row.
                    let (old, old_undef) = self.read_region(hbm_op.tensor, &to);
                    let sum: Vec<f32> = old.iter().zip(part).map(|(a, b)| a + b).collect();
                    if old_undef.as_ref().is_some_and(|u| u.iter().any(|&x| x)) {
                        let src = Some((hbm_op, &to));
                        self.write(
                            inst,
                            name,
                            &to,
                            &data.dst,
                            (&sum, old_undef.as_deref()),
                            src,
                        )?;
                    } else {
                        let src = Some((tile_op, &row_of(&tile, p)));
                        self.write(inst, name, &to, &data.dst, (&sum, undef), src)?;
                    }
                    moved += tile.cols as u64;
                    continue;
                }
                let src = Some((tile_op, &row_of(&tile, p)));
                self.write(inst, name, &to, &data.dst, (part, undef), src)?;
                moved += tile.cols as u64;
            }
        }
        self.stats.record(&data.op, data.engine, moved);
        Ok(())
    }
}
