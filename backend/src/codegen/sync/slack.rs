//! The slack of a wait ([`crate::codegen::sync`]): how many of the producer's last instances in
//! the common iteration a consumer waits up to it need not wait for.
//!
//! A distance `D` asks for every instance of the producer `X` up to the end of the common
//! iteration `D + 1 - [X before Y]` back: `(lin_common - D + xb) * P_X` signals. When `X` sits
//! in loops that the consumer `Y` does not share (`Y` follows `X`'s loop, or a loop nested in
//! their common one), the instance `Y` reads is often not the last of that block: a statement
//! after a loop reads what one iteration wrote, not what the last one did. The search
//! ([`need`](super::need)) finds, per running instance `v` of `Y`, the latest conflicting
//! instance `u` of `X`, so the back-off `(lin_common(v) + xb) * P_X - (u + 1)` (the instances of
//! `X` before `v` that `v` need not wait for) is known for every `v`; the wait may back off by
//! their least, `B`, and `B = D * P_X + slack` with `0 <= slack < P_X`. The wait is then
//!
//! `wait S_X >= (lin_common(v) - D + xb) * P_X - slack`
//!
//! which is the count reached at the end of the producer's instance that `Y` needs, at every
//! `v` where the back-off is least, and later than it elsewhere.
//!
//! Invariants: `0 <= slack < P_X`, so the wait never asks for more than the instances of `X`
//! before `v` (no deadlock) and covers every conflicting one (`B` is a least back-off); a distance
//! capped at [`MAX_DISTANCE`] has no slack (the cap already waits for more than needed).
//!
//! On a trip-clamped copy ([`crate::codegen::clamp`]) the slack counts instances of the copy's
//! loops. The instance it names, `P_X - 1 - slack` within the block (the latest one the consumer
//! needs), is mapped to the kernel's ([`realised_slack`]) loop by loop of `X`'s loops outside the
//! common ones; a loop that kept its trip count keeps its iteration, and in a loop clamped from
//! `N` to `B` iterations (`S = N - B`), the copy's iteration `i` is the kernel's:
//! - `i + S` when `i >= B / 2`: the copy's upper half is the kernel's last iterations with their
//!   guards and ring phases, and the consumer (beside the loop, or the loop would not be clamped)
//!   meets nothing there that moves with the register (the clamp's `edge_only`), so nothing after
//!   `i` in the copy conflicts means nothing after `i + S` does in the kernel;
//! - `i` when `i <` [`EDGE`]: the copy's first iterations are the kernel's, addresses included;
//!   a conflict the consumer has with a footprint that moves with the register is in them alone,
//!   and one with a ring slot or a fixed address in the steady state would recur in the copy's
//!   later steady iterations (at least `EDGE + L` of them), so the kernel has no later one either;
//! - otherwise the slack is dropped (the whole block: always correct, only more cautious).
//!
//! The map is monotone, so the least back-off over the consumer's instances stays the least on
//! the kernel.

use super::MAX_DISTANCE;
use crate::codegen::clamp::EDGE;

/// The slack of a wait whose least back-off over the consumer's running instances is
/// `least_backoff`, for a producer of `per_common` instances per common iteration.
pub(super) fn compute_slack(least_backoff: i64, per_common: i64) -> i64 {
    if per_common <= 1 || least_backoff / per_common > MAX_DISTANCE || least_backoff < 0 {
        return 0;
    }
    least_backoff % per_common
}

/// The slack of a wait decided on a trip-clamped copy where the producer's loops outside the
/// common ones have trip counts `analysed` (outermost first), realised on a kernel where they
/// have `real` (module doc): the same instance counted from the end of the kernel's block, or
/// none when it lies in a clamped loop's middle.
pub(super) fn realised_slack(slack: i64, analysed: &[i64], real: &[i64]) -> i64 {
    if analysed == real || slack == 0 {
        return slack;
    }
    if analysed.len() != real.len() {
        return 0;
    }
    // The instance the wait stops at, as iterations of the loops outside the common ones.
    let mut at = analysed.iter().product::<i64>() - 1 - slack;
    let mut digits = vec![0i64; analysed.len()];
    for (d, &b) in digits.iter_mut().zip(analysed).rev() {
        *d = at % b;
        at /= b;
    }
    let mut real_at = 0i64;
    for ((&i, &b), &n) in digits.iter().zip(analysed).zip(real) {
        let i = if b == n || i < EDGE {
            i
        } else if i >= b / 2 && b < n {
            i + n - b
        } else {
            return 0;
        };
        real_at = real_at * n + i;
    }
    real.iter().product::<i64>() - 1 - real_at
}
