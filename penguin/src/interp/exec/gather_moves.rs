//! The interpreter's on-chip data-movement operations that read across partitions or by index:
//! `shuffle` (`nisa.nc_stream_shuffle`), `local_gather` (`nisa.local_gather`,
//! `nl.gather_flattened`) and `sequence_bounds`. The moves themselves are
//! [`vocab::gather_ops`]'s, applied alike to values and to undefined flags.
//!
//! Invariant: shapes are checked before any element is read; a failing instruction writes
//! nothing.

use super::{InterpError, Machine, Result, Values};
use crate::entities::Inst;
use crate::ir::{InstData, Op};
use vocab::poison;

impl Machine<'_> {
    /// The values of shuffle `inst` (`data`, `mask`) into a `[p, f]` destination: rows of the
    /// source, or of the destination's previous value (source 1) where the mask keeps a row.
    pub(super) fn shuffle_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        mask: &[u8; 32],
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let name = data.op.name();
        let src = self.read(inst, name, &data.srcs[0])?;
        let old = match data.srcs.get(1) {
            Some(o) => Some(self.read(inst, name, o)?),
            None => None,
        };
        let (sp, sf) = src.shape();
        if sf != f || old.as_ref().is_some_and(|o| o.shape() != (p, f)) {
            return Err(self.bad_shape(inst, "the source", (sp, sf), format!("[_, {f}]")));
        }
        let mut out = vec![0.0f32; p * f];
        let mut flags = vec![false; p * f];
        for r in 0..p {
            let (from, row) = match vocab::shuffle_source(mask, r) {
                Some(s) if s < sp => (&src, s),
                Some(s) => {
                    return Err(self.bad_shape(
                        inst,
                        "the source",
                        (sp, sf),
                        format!("at least {} rows (the mask reads row {s})", s + 1),
                    ))
                }
                None => match &old {
                    Some(o) => (o, r),
                    None => {
                        return Err(self.malformed(
                            Some(inst),
                            "a shuffle whose mask keeps a row has the destination as source 1",
                        ))
                    }
                },
            };
            out[r * f..(r + 1) * f].copy_from_slice(&from.data[row * f..(row + 1) * f]);
            if let Some(u) = &from.undef {
                flags[r * f..(r + 1) * f].copy_from_slice(&u[row * f..(row + 1) * f]);
            }
        }
        Ok((out, poison::normalise(flags)))
    }

    /// The values of local gather `inst` (`data`) into a `[p, f]` destination: runs of each
    /// row of the data (source 0) at the indices of its group of rows of source 1.
    pub(super) fn local_gather_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let Op::LocalGather {
            group,
            elems,
            count,
        } = data.op
        else {
            return Err(self.malformed(Some(inst), "not a local gather"));
        };
        let (group, elems, count) = (group as usize, elems as usize, count as usize);
        let name = data.op.name();
        let src = self.read(inst, name, &data.srcs[0])?;
        let idx = self.read(inst, name, &data.srcs[1])?;
        let ((sp, sf), (ip, icols)) = (src.shape(), idx.shape());
        if sp != p || ip != p || f != count * elems || group == 0 || p % group != 0 {
            return Err(self.bad_shape(
                inst,
                "the destination",
                (p, f),
                format!("[{sp}, {count} * {elems}] with {ip} index rows in groups of {group}"),
            ));
        }
        let at = |r: usize, k: usize| vocab::gather_index_at(r, k, group, icols);
        let mut out = vec![0.0f32; p * f];
        let mut flags = vec![false; p * f];
        for r in 0..p {
            let cells: Option<Vec<(usize, usize)>> = (0..count).map(|k| at(r, k)).collect();
            let Some(cells) = cells else {
                return Err(self.bad_shape(
                    inst,
                    "the index tile",
                    (ip, icols),
                    format!("{count} indices per group of {group} rows"),
                ));
            };
            let starts = vocab::gather_starts(
                |k| idx.data[cells[k].0 * icols + cells[k].1],
                elems,
                count,
                sf,
            )
            .map_err(|(_, value)| InterpError::IndexOutOfRange {
                inst,
                op: name,
                tensor: self.func.display_name(data.srcs[0].tensor).to_string(),
                partition: r,
                value,
                rows: (sf + 1).saturating_sub(elems) as u64,
                at: self.iteration(),
            })?;
            let row = r * f..(r + 1) * f;
            vocab::gather_row(
                &src.data[r * sf..(r + 1) * sf],
                &starts,
                elems,
                &mut out[row.clone()],
            );
            if let Some(u) = &src.undef {
                vocab::gather_row(
                    &u[r * sf..(r + 1) * sf],
                    &starts,
                    elems,
                    &mut flags[row.clone()],
                );
            }
            if let Some(u) = &idx.undef {
                for (k, &(ir, ic)) in cells.iter().enumerate() {
                    if u[ir * icols + ic] {
                        flags[r * f + k * elems..r * f + (k + 1) * elems].fill(true);
                    }
                }
            }
        }
        Ok((out, poison::normalise(flags)))
    }

    /// The values of `sequence_bounds` `inst` (`data`) into a `[p, f]` destination, twice the
    /// source's width: a row is undefined iff any of its segment ids is.
    pub(super) fn sequence_bounds_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let x = self.read(inst, data.op.name(), &data.srcs[0])?;
        let (xp, xf) = x.shape();
        self.dst_shape(inst, (p, f), (xp, 2 * xf))?;
        let mut out = vec![0.0f32; p * f];
        for (row, o) in x
            .data
            .chunks_exact(xf.max(1))
            .zip(out.chunks_exact_mut(f.max(1)))
        {
            vocab::sequence_bounds(row, o);
        }
        Ok((out, poison::rows(&[x.row_flags()], p, f)))
    }
}
