//! NumPy broadcasting between the N-D values of an elementwise operation: `max_val` of NKI
//! shape `[P, W, 1, 1]` (a reduction with `keepdims=True`) against a window view `[P, W, 3, 3]`.
//!
//! Each operand's NKI shape is its access pattern's axes, its recorded N-D shape
//! ([`Checker::value_dims`]), or `[P, F]`. Shapes of one rank broadcast axis by axis (equal, or
//! one of them 1) over the free axes; an operand with an axis of 1 where the other's is longer
//! is read through an access pattern that repeats it, a step of 0 along that axis, so no copy
//! is made. The partition axis and operands of different ranks are left to the 2-D rules
//! (`broadcast`), whose diagnostic stands.
//!
//! Invariant: an operand returned reads only elements of the operand given (steps of 0 reach
//! nothing new), and both returned operands have the broadcast shape as their value's axes.

use super::patterns_nd::NdLayout;
use super::{Checker, TileVal};
use penguin::{PatAxis, Pattern};

impl Checker<'_> {
    /// `a` and `b` read with the NumPy broadcast of their N-D shapes, and that shape; `None`
    /// when they do not broadcast that way.
    pub(super) fn broadcast_nd(
        &self,
        a: &TileVal,
        b: &TileVal,
    ) -> Option<(TileVal, TileVal, Vec<u64>)> {
        let (pa, pb) = (self.nd_axes(a)?, self.nd_axes(b)?);
        if pa.len() != pb.len() || pa.len() <= 2 && a.pattern.is_none() && b.pattern.is_none() {
            return None;
        }
        if pa[0].count != pb[0].count {
            return None;
        }
        let mut shape = Vec::with_capacity(pa.len());
        for (x, y) in pa.iter().zip(&pb) {
            shape.push(match (x.count, y.count) {
                (m, n) if m == n => m,
                (1, n) => n,
                (m, 1) => m,
                _ => return None,
            });
        }
        let widen = |t: &TileVal, axes: Vec<PatAxis>| {
            let axes: Vec<PatAxis> = axes
                .into_iter()
                .zip(&shape)
                .map(|(ax, &n)| {
                    if ax.count == n {
                        ax
                    } else {
                        PatAxis {
                            count: n,
                            step: vec![0; ax.step.len()],
                        }
                    }
                })
                .collect();
            let free = axes
                .iter()
                .skip(1)
                .fold(1u64, |f, x| f.saturating_mul(x.count));
            TileVal {
                size: [axes[0].count, free],
                pattern: Some(Pattern { axes }),
                ..t.clone()
            }
        };
        Some((widen(a, pa), widen(b, pb), shape))
    }

    /// The value axes of an on-chip operand: its pattern's, its N-D shape over its stored
    /// tile, or `[P, F]`.
    fn nd_axes(&self, t: &TileVal) -> Option<Vec<PatAxis>> {
        if let Some(p) = &t.pattern {
            return Some(p.axes.clone());
        }
        if t.view.is_some() || t.indirect.is_some() {
            return None;
        }
        let dims = self
            .value_dims(t)
            .unwrap_or_else(|| vec![t.size[0], t.size[1]]);
        let lay = NdLayout::on_chip(&dims, 0);
        Some(
            dims.iter()
                .zip(&lay.strides)
                .map(|(&count, s)| PatAxis {
                    count,
                    step: s.to_vec(),
                })
                .collect(),
        )
    }
}
