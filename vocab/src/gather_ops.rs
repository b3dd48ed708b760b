//! The meaning of the on-chip data-movement instructions that read across partitions or pick
//! elements by index, shared by the interpreter and the simulator so that they agree by
//! construction:
//! - `nisa.nc_stream_shuffle` ([`shuffle_source`]): within each quadrant of
//!   [`SHUFFLE_QUADRANT`] partitions, destination row `i` takes source row `mask[i]`, or keeps
//!   its value where `mask[i]` is [`SHUFFLE_KEEP`];
//! - `nisa.local_gather` / `nl.gather_flattened` ([`gather_index_at`], [`gather_starts`],
//!   [`gather_row`]): each row gathers runs of elements of its own source row at indices read
//!   from its group of partitions;
//! - `nisa.sequence_bounds` ([`sequence_bounds`]): the start and end of each element's run of
//!   equal segment ids.
//!
//! Both sides apply the same moves to values and to undefined flags ([`crate::poison`]), so they
//! agree on both.
//!
//! Invariants: an index that is not an integer in range is an `Err` naming it (callers turn it
//! into their run-time error); slices have the lengths each function documents (callers check
//! shapes first).

/// The partitions a shuffle mask spans: one quadrant of the 128.
pub const SHUFFLE_QUADRANT: usize = 32;

/// The mask value of a destination row that keeps its value.
pub const SHUFFLE_KEEP: u8 = 255;

/// The source row of destination row `d` of a shuffle by `mask` (`None`: the row keeps its
/// value). The quadrant of `d` selects the quadrant of the source.
pub fn shuffle_source(mask: &[u8; SHUFFLE_QUADRANT], d: usize) -> Option<usize> {
    let m = mask[d % SHUFFLE_QUADRANT];
    (m != SHUFFLE_KEEP).then(|| d - d % SHUFFLE_QUADRANT + m as usize)
}

/// The `k`-th index of row `p` of a local gather over groups of `group` rows: row
/// `g0 + k % group`, column `k / group` of the index tile (`g0` the group's first row), i.e. the
/// group's indices read column by column. `None` when that column does not exist (`k` beyond
/// `group * cols`).
pub fn gather_index_at(p: usize, k: usize, group: usize, cols: usize) -> Option<(usize, usize)> {
    let group = group.max(1);
    let (row, col) = (p - p % group + k % group, k / group);
    (col < cols).then_some((row, col))
}

/// Where the `count` runs of `elems` elements of one row of a local gather start in its source
/// row of `len` elements: the `k`-th start is `index(k)`. `Err((k, value))` for the first index
/// that is not a non-negative integer whose run fits in the row. Output element `k * elems + e`
/// is source element `starts[k] + e`.
pub fn gather_starts(
    index: impl Fn(usize) -> f32,
    elems: usize,
    count: usize,
    len: usize,
) -> Result<Vec<usize>, (usize, f32)> {
    (0..count)
        .map(|k| {
            let v = index(k);
            let fits = v >= 0.0
                && v.fract() == 0.0
                && (v as u64).saturating_add(elems as u64) <= len as u64;
            if fits {
                Ok(v as usize)
            } else {
                Err((k, v))
            }
        })
        .collect()
}

/// Applies a local gather's `starts` ([`gather_starts`]) to one row: values or flags alike.
/// Requires `out.len() == starts.len() * elems` and every run inside `src`.
pub fn gather_row<T: Copy>(src: &[T], starts: &[usize], elems: usize, out: &mut [T]) {
    for (k, &at) in starts.iter().enumerate() {
        out[k * elems..(k + 1) * elems].copy_from_slice(&src[at..at + elems]);
    }
}

/// One row of `nisa.sequence_bounds`: for the `n` segment ids of `row`, `out[j]` is the index
/// where `j`'s run of equal ids starts and `out[n + j]` the index where it ends (exclusive); an
/// id of 0 is padding, with start `n` and end `-1`. Requires `out.len() == 2 * row.len()`.
pub fn sequence_bounds(row: &[f32], out: &mut [f32]) {
    let n = row.len();
    let (start, end) = out.split_at_mut(n);
    for j in 0..n {
        start[j] = if row[j] == 0.0 {
            n as f32
        } else if j > 0 && row[j] == row[j - 1] {
            start[j - 1]
        } else {
            j as f32
        };
    }
    for j in (0..n).rev() {
        end[j] = if row[j] == 0.0 {
            -1.0
        } else if j + 1 < n && row[j] == row[j + 1] {
            end[j + 1]
        } else {
            (j + 1) as f32
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_bounds_matches_the_documented_example() {
        let ids = [0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 3.0, 3.0];
        let mut out = [0.0; 18];
        sequence_bounds(&ids, &mut out);
        assert_eq!(&out[..9], &[9.0, 1.0, 1.0, 3.0, 3.0, 3.0, 9.0, 7.0, 7.0]);
        assert_eq!(&out[9..], &[-1.0, 3.0, 3.0, 6.0, 6.0, 6.0, -1.0, 9.0, 9.0]);
    }

    #[test]
    fn gather_reads_the_group_column_by_column() {
        assert_eq!(gather_index_at(17, 0, 16, 4), Some((16, 0)));
        assert_eq!(gather_index_at(17, 17, 16, 4), Some((17, 1)));
        assert_eq!(gather_index_at(3, 64, 16, 4), None);
        assert_eq!(gather_index_at(3, 2, 1, 4), Some((3, 2)));
        let src = [0.0, 1.0, 2.0, 3.0];
        let starts = gather_starts(|k| [2.0, 0.0][k], 2, 2, 4);
        assert_eq!(starts, Ok(vec![2, 0]));
        let mut out = [0.0; 4];
        gather_row(&src, &starts.unwrap_or_default(), 2, &mut out);
        assert_eq!(out, [2.0, 3.0, 0.0, 1.0]);
        assert_eq!(gather_starts(|_| 3.0, 2, 1, 4), Err((0, 3.0)));
        assert_eq!(gather_starts(|_| 0.5, 1, 1, 4), Err((0, 0.5)));
    }

    #[test]
    fn shuffle_stays_in_the_quadrant() {
        let mut mask = [0u8; 32];
        mask[1] = SHUFFLE_KEEP;
        mask[2] = 31;
        assert_eq!(shuffle_source(&mask, 34), Some(63));
        assert_eq!(shuffle_source(&mask, 33), None);
        assert_eq!(shuffle_source(&mask, 96), Some(96));
    }
}
