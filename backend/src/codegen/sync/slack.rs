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
//! capped at [`MAX_DISTANCE`] has no slack (the cap already waits for more than needed). On a
//! trip-clamped copy ([`crate::codegen::clamp`]) the slack counts instances of the copy's loops;
//! [`realised_slack`] keeps it only where the producer's loops outside the common ones were not
//! clamped (the same instances), and otherwise drops it (the whole block: always correct).

use super::MAX_DISTANCE;

/// The slack of a wait whose least back-off over the consumer's running instances is
/// `least_backoff`, for a producer of `per_common` instances per common iteration.
pub(super) fn compute_slack(least_backoff: i64, per_common: i64) -> i64 {
    if per_common <= 1 || least_backoff / per_common > MAX_DISTANCE || least_backoff < 0 {
        return 0;
    }
    least_backoff % per_common
}

/// The slack of a wait decided on a trip-clamped copy with `per_common` instances of the producer
/// per common iteration there, on a kernel where it has `real_per_common`: kept when the
/// producer's non-shared loops kept their trip counts, otherwise none.
pub(super) fn realised_slack(slack: i64, per_common: i64, real_per_common: i64) -> i64 {
    if per_common == real_per_common {
        slack
    } else {
        0
    }
}
