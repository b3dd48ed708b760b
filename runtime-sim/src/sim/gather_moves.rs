//! The simulator's local gather (`local_gather`): the values and undefined flags of its
//! destination, by [`vocab::gather_ops`]'s moves, which the interpreter applies too.
//!
//! Invariant: every index is checked before anything is written; an index that is not an
//! integer whose run fits in its row is [`AccessError::IndexOutOfRange`] (its `rows` the count
//! of valid starts).

use super::memory::{AccessError, Resolved, Storage};
use vocab::poison::{self, Undef};

/// `res[0]` the destination `[P, count * elems]`, `res[1]` the data `[P, F]`, `res[2]` the
/// indices `[P, K]` (shapes checked by the validator).
pub(super) fn local_gather(
    st: &Storage,
    res: &[Resolved],
    group: usize,
    elems: usize,
) -> Result<(Vec<f32>, Undef), AccessError> {
    let (p, f) = (res[0].np as usize, res[0].free as usize);
    let (x, ux) = st.read(&res[1]);
    let (idx, uidx) = st.read(&res[2]);
    let (sf, icols) = (res[1].free as usize, (res[2].free as usize).max(1));
    let count = f / elems.max(1);
    let mut out = vec![0.0f32; p * f];
    let mut flags = vec![false; p * f];
    for r in 0..p {
        let cells: Vec<(usize, usize)> = (0..count)
            .map(|k| vocab::gather_index_at(r, k, group, icols).unwrap_or((r, 0)))
            .collect();
        let starts =
            vocab::gather_starts(|k| idx[cells[k].0 * icols + cells[k].1], elems, count, sf)
                .map_err(|(_, value)| AccessError::IndexOutOfRange {
                    value,
                    partition: r,
                    rows: (sf + 1).saturating_sub(elems) as u64,
                })?;
        let row = r * f..(r + 1) * f;
        vocab::gather_row(
            &x[r * sf..(r + 1) * sf],
            &starts,
            elems,
            &mut out[row.clone()],
        );
        if let Some(u) = &ux {
            vocab::gather_row(&u[r * sf..(r + 1) * sf], &starts, elems, &mut flags[row]);
        }
        if let Some(u) = &uidx {
            for (k, &(ir, ic)) in cells.iter().enumerate() {
                if u[ir * icols + ic] {
                    flags[r * f + k * elems..r * f + (k + 1) * elems].fill(true);
                }
            }
        }
    }
    Ok((out, poison::normalise(flags)))
}
