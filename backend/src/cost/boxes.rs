//! Boxes of tensor elements: whether a union of boxes holds every element of a target box.
//!
//! A box is one half-open interval `[lo, hi)` per dimension. The test cuts each dimension of the
//! target at every box's edges inside it and checks that each cell of that grid lies in one box,
//! so it is exact and costs (cells × boxes), which the callers bound by capping how many boxes
//! they keep. Used by the allocator (a buffer's bytes all written before they are read), the
//! emergent plan and the ring-slot rule (a tile filled in parts).

/// Whether the union of `boxes` holds every element of `target`. A box whose rank differs from
/// the target's holds nothing; an empty target is held.
pub fn union_covers<B: AsRef<[(i128, i128)]>>(boxes: &[B], target: &[(i128, i128)]) -> bool {
    if target.iter().any(|&(lo, hi)| lo >= hi) {
        return true;
    }
    let boxes: Vec<&[(i128, i128)]> = (boxes.iter().map(AsRef::as_ref))
        .filter(|b| b.len() == target.len())
        .collect();
    // Each dimension's cut points within the target, sorted: the cells are the intervals between.
    let cuts: Vec<Vec<i128>> = (target.iter().enumerate())
        .map(|(k, &(lo, hi))| {
            let mut c: Vec<i128> = (boxes.iter())
                .flat_map(|b| [b[k].0, b[k].1])
                .filter(|&x| lo < x && x < hi)
                .chain([lo, hi])
                .collect();
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect();
    // Odometer over the cells (by the index of each dimension's lower cut).
    let mut at = vec![0usize; target.len()];
    loop {
        let inside = |b: &&[(i128, i128)]| {
            (at.iter().enumerate()).all(|(k, &i)| b[k].0 <= cuts[k][i] && cuts[k][i + 1] <= b[k].1)
        };
        if !boxes.iter().any(inside) {
            return false;
        }
        let mut k = 0;
        loop {
            if k == at.len() {
                return true;
            }
            at[k] += 1;
            if at[k] + 1 < cuts[k].len() {
                break;
            }
            at[k] = 0;
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::union_covers;

    #[test]
    fn a_union_covers_exactly_the_cells_its_boxes_hold() {
        let whole = [(0, 128), (0, 1024)];
        let halves = [vec![(0, 128), (0, 512)], vec![(0, 128), (512, 1024)]];
        assert!(union_covers(&halves, &whole));
        assert!(!union_covers(&halves[..1], &whole));
        let gap = [vec![(0, 128), (0, 500)], vec![(0, 128), (512, 1024)]];
        assert!(!union_covers(&gap, &whole));
        // Overlapping quarters in both dimensions.
        let quarters = [
            vec![(0, 70), (0, 600)],
            vec![(64, 128), (0, 600)],
            vec![(0, 128), (500, 1024)],
        ];
        assert!(union_covers(&quarters, &whole));
        // Boxes reaching past the target count only inside it.
        let past = [
            vec![(0, 64), (0, 600)],
            vec![(64, 128), (0, 1024)],
            vec![(-8, 64), (500, 2000)],
        ];
        assert!(union_covers(&past, &whole));
        // A box of another rank holds nothing; an empty target is held by nothing.
        assert!(!union_covers(&[vec![(0, 128)]], &whole));
        assert!(union_covers::<Vec<(i128, i128)>>(&[], &[(3, 3)]));
        // A target inside one box, off the origin.
        assert!(union_covers(&[vec![(0, 10), (0, 10)]], &[(2, 5), (7, 9)]));
    }
}
