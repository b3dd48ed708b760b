//! Vector clocks of the happens-before walks ([`crate::codegen::hb`]): a clock per thread
//! (the five engines, then the DMA queues), each component an epoch of type [`Lane`].
//!
//! Invariant: a component counts the instances of its thread, so a kernel of fewer than
//! `u16::MAX` instances never overflows a `u16` lane; joins are componentwise maxima.

use super::THREADS;

/// A component of a vector clock: an epoch, which counts instances. The walks stream through
/// clocks, so a kernel whose epochs all fit a `u16` walks with half the memory.
pub(super) trait Lane: Copy + Ord + Default {
    const ONE: Self;
    fn incr(&mut self);
}

impl Lane for u16 {
    const ONE: u16 = 1;
    fn incr(&mut self) {
        *self += 1;
    }
}

impl Lane for u32 {
    const ONE: u32 = 1;
    fn incr(&mut self) {
        *self += 1;
    }
}

/// A vector clock.
pub(super) type Vc<L> = [L; THREADS];

pub(super) fn join<L: Lane>(a: &mut Vc<L>, b: &Vc<L>) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

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
