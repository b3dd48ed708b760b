//! What the two looks for reads of unwritten memory share ([`crate::uninit`]'s static look and
//! [`crate::uninit_walk`]'s walk of the iteration space): the report of such a read, the
//! rectangles of a 2-D tensor they reason in, and the coverage question on them.
//!
//! It sits below both files, so that each imports it and neither imports the other's internals
//! (the static look calls the walk; the walk imports nothing from the static look). Rectangles are
//! half-open `[r0, r1) × [c0, c1)` in `i128`, wide enough that the affine bounds the looks compute
//! never overflow here.

use crate::entities::{Inst, Tensor};

/// A read that certainly touches an element nothing wrote before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnwrittenRead {
    pub inst: Inst,
    pub tensor: Tensor,
    /// The first such element (row, column), in row-major order.
    pub element: (u64, u64),
}

/// A rectangle `[r0, r1) × [c0, c1)` of a 2-D tensor.
pub(crate) type Rect = [(i128, i128); 2];

/// The first element (row-major) of `read` in none of `writes`, if any.
pub(crate) fn first_uncovered(read: &Rect, writes: &[Rect]) -> Option<(i128, i128)> {
    let clip = |k: usize, v: i128| v.clamp(read[k].0, read[k].1);
    let mut cuts: [Vec<i128>; 2] = [vec![read[0].0, read[0].1], vec![read[1].0, read[1].1]];
    for w in writes {
        for (k, cut) in cuts.iter_mut().enumerate() {
            cut.push(clip(k, w[k].0));
            cut.push(clip(k, w[k].1));
        }
    }
    for cut in &mut cuts {
        cut.sort_unstable();
        cut.dedup();
    }
    for rows in cuts[0].windows(2) {
        for cols in cuts[1].windows(2) {
            let (r, c) = (rows[0], cols[0]);
            let covered = writes
                .iter()
                .any(|w| w[0].0 <= r && r < w[0].1 && w[1].0 <= c && c < w[1].1);
            if !covered {
                return Some((r, c));
            }
        }
    }
    None
}
