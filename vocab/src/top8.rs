//! The float32 meaning of the Vector engine's top-8 instructions, one row (one partition) at a
//! time: `max8` (the 8 largest values), `nc_find_index8` (where 8 given values are) and
//! `nc_match_replace8` (those values overwritten). The interpreter and the simulator both call
//! these, so they agree bit for bit.
//!
//! Invariants: values are ordered by `f32::total_cmp` (so `-0.0 < +0.0` and the canonical quiet
//! NaN is above every number); equality is that of `==` on floats except that a NaN value
//! matches a NaN element; a value is matched to the first element equal to it that no earlier
//! value of the 8 has taken, so repeated values (two equal maxima) find distinct positions;
//! slices have the lengths each function documents (callers check shapes first, `row.len() >=
//! TOP8`).

/// The number of values each instruction handles per partition.
pub const TOP8: usize = 8;

/// The fewest elements per partition the instructions read (NKI: 8 to 16,384).
pub const TOP8_MIN_FREE: usize = TOP8;

/// The index written for a value that is not in the row: NKI's all-ones `uint32` sentinel,
/// 0xFFFF_FFFF, as the float32 a tile holds (nkc's tiles hold integers as float32: this one
/// rounds to 2^32).
pub const TOP8_NOT_FOUND: f32 = u32::MAX as f32;

/// One row of `nisa.max8`: the 8 largest elements of `row` in descending order (repeated values
/// repeat). Requires `row.len() >= TOP8` and `out.len() == TOP8`.
pub fn max8(row: &[f32], out: &mut [f32]) {
    let mut sorted = row.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    out.copy_from_slice(&sorted[..TOP8]);
}

fn same(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// The position in `row` of each of the 8 `vals`: the first element equal to it that an earlier
/// value has not taken, or `None`. Requires `vals.len() == TOP8`.
fn positions(row: &[f32], vals: &[f32]) -> [Option<usize>; TOP8] {
    let mut taken = vec![false; row.len()];
    let mut out = [None; TOP8];
    for (slot, &v) in out.iter_mut().zip(vals) {
        let found = row
            .iter()
            .enumerate()
            .find(|&(i, &x)| !taken[i] && same(x, v))
            .map(|(i, _)| i);
        if let Some(i) = found {
            taken[i] = true;
        }
        *slot = found;
    }
    out
}

/// One row of `nisa.nc_find_index8`: the index of each of the 8 `vals` in `row` (see the module
/// invariants), [`TOP8_NOT_FOUND`] for a value not there. Requires `vals.len() == TOP8 ==
/// out.len()`.
pub fn find_index8(row: &[f32], vals: &[f32], out: &mut [f32]) {
    for (o, p) in out.iter_mut().zip(positions(row, vals)) {
        *o = p.map_or(TOP8_NOT_FOUND, |i| i as f32);
    }
}

/// One row of `nisa.nc_match_replace8`: `row` with the element each of the 8 `vals` matches (see
/// the module invariants) replaced by `imm`. Requires `vals.len() == TOP8` and `out.len() ==
/// row.len()`.
pub fn match_replace8(row: &[f32], vals: &[f32], imm: f32, out: &mut [f32]) {
    out.copy_from_slice(row);
    for i in positions(row, vals).into_iter().flatten() {
        out[i] = imm;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max8_is_descending_and_keeps_repeats() {
        let row = [3.0, 9.0, 1.0, 9.0, -2.0, 7.0, 0.5, 4.0, 8.0, -0.0, 0.0];
        let mut out = [0.0; TOP8];
        max8(&row, &mut out);
        assert_eq!(out, [9.0, 9.0, 8.0, 7.0, 4.0, 3.0, 1.0, 0.5]);
    }

    #[test]
    fn repeated_values_find_distinct_positions() {
        let row = [3.0, 9.0, 1.0, 9.0, -2.0, 7.0, 0.5, 4.0, 8.0, 0.0];
        let vals = [9.0, 9.0, 8.0, 7.0, 4.0, 3.0, 1.0, 42.0];
        let mut idx = [0.0; TOP8];
        find_index8(&row, &vals, &mut idx);
        assert_eq!(idx, [1.0, 3.0, 8.0, 5.0, 7.0, 0.0, 2.0, TOP8_NOT_FOUND]);
        let mut out = [0.0; 10];
        match_replace8(&row, &vals, f32::NEG_INFINITY, &mut out);
        let ninf = f32::NEG_INFINITY;
        assert_eq!(
            out,
            [ninf, ninf, ninf, ninf, -2.0, ninf, 0.5, ninf, ninf, 0.0]
        );
    }
}
