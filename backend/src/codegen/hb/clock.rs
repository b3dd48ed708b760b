//! Vector clocks of the happens-before walks ([`crate::codegen::hb`]): a clock per thread
//! (the five engines, then the DMA queues), each component an epoch of type [`Lane`].
//!
//! Invariant: a component counts the running instances of its thread, so a kernel of fewer
//! than `u16::MAX` running instances never overflows a `u16` lane; joins are componentwise
//! maxima.

use super::THREADS;

/// A component of a vector clock: an epoch, which counts instances. The walks stream through
/// clocks, so a kernel whose epochs all fit a `u16` walks with half the memory.
pub(super) trait Lane: Copy + Ord + Default {
    /// The lane holding `n` (which the caller made sure fits).
    fn of(n: u32) -> Self;
}

impl Lane for u16 {
    fn of(n: u32) -> u16 {
        u16::try_from(n).expect("invariant: the kernel's epochs fit the lane chosen for them")
    }
}

impl Lane for u32 {
    fn of(n: u32) -> u32 {
        n
    }
}

/// A vector clock.
pub(super) type Vc<L> = [L; THREADS];

/// Joins `b` into `a` and says whether that raised any component of `a`. (Not inlined: a
/// wait's join is rare beside the instances a walk steps over, and inlined into the walk's
/// loop it cost the loop more than the call.)
#[inline(never)]
pub(super) fn join_raises<L: Lane>(a: &mut Vc<L>, b: &Vc<L>) -> bool {
    let mut raised = false;
    for (x, y) in a.iter_mut().zip(b) {
        raised |= *y > *x;
        *x = (*x).max(*y);
    }
    raised
}

/// Whether `a` and `b` are equal, every component compared (no early exit: the loop vectorises,
/// where `==` on an array of this length calls `memcmp`).
pub(super) fn same<L: Lane>(a: &Vc<L>, b: &Vc<L>) -> bool {
    a.iter().zip(b).fold(true, |eq, (x, y)| eq & (x == y))
}
