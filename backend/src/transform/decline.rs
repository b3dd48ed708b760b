//! Why a Penguin pass of the backend leaves a loop as it is: typed declines.
//!
//! The loop-nest realisations of the emergent path ([`super::emergent::nest`],
//! [`super::emergent::carry`]) and [`super::flatten`] decide per loop whether to transform it. When
//! they do not, they return a [`Decline`] (with the [`NestEnd`] that stopped a nest) instead of a
//! sentence: Rust code matches the variant, and the decision log gets its [`fmt::Display`], which
//! is the wording the filetests and the `--log backend` output have always had.
//!
//! Invariant: each variant's text is one clause, lower-case, without a final period; names are
//! the ones the user sees (display names, `j@9:9`), taken when the decline is made.

use std::fmt;

/// Why no loop encloses a loop in a flat nest ([`super::emergent::nest::compute_nest`]): what ended
/// the chain of enclosing loops at its first step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NestEnd {
    /// The loop is not in the function's tree.
    NotInTree,
    /// The loop stands at the top of the kernel, unguarded.
    ReachesTop,
    /// The loop stands at the top of the kernel, guarded.
    Guarded { iv: String },
    /// The loop's statement has a guard on a loop other than its parent.
    GuardedByMore { iv: String, parent: String },
    /// The parent is annotated (`num_stages`) and not extended by the pipeliner.
    Annotated { iv: String },
    /// The loop's guards leave no iteration of its parent.
    NeverRuns { iv: String },
}

impl fmt::Display for NestEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NestEnd::NotInTree => f.write_str("it is not in the kernel's loop tree"),
            NestEnd::ReachesTop => f.write_str("the nest reaches the top of the kernel"),
            NestEnd::Guarded { iv } => write!(f, "loop `{iv}` is guarded"),
            NestEnd::GuardedByMore { iv, parent } => {
                write!(f, "loop `{iv}` is guarded by more than loop `{parent}`")
            }
            NestEnd::Annotated { iv } => write!(f, "loop `{iv}` is annotated"),
            NestEnd::NeverRuns { iv } => write!(f, "loop `{iv}` never runs"),
        }
    }
}

/// Why a pass leaves a loop as it is (module doc). Ring and loop names are display names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decline {
    /// No loop encloses it in a flat nest.
    NotNested(NestEnd),
    /// Every load of the body, or none, can be hoisted: nothing to overlap.
    NoLoadAhead,
    /// `sp` issues longer than the compute engines run, per iteration (the reason the nest
    /// realisation tries one whole execution ahead, and the first half of its decline then).
    IssueBound { issue: u64, compute: u64 },
    /// `sp` issues faster than the compute engines run, per iteration of the steady state: the
    /// carry across executions overlaps them (why [`super::flatten`] leaves a loop).
    NotIssueBound { issue: u64, compute: u64 },
    /// Two reasons, the first why the second was tried.
    Both(Box<Decline>, Box<Decline>),
    /// No ring size in `2..=max` for `ring` divides the trip count.
    NoDivisorRing { ring: String, max: u32, trip: i64 },
    /// The deepest ring whose slots divide the trip count issues the loads only `ahead`
    /// iterations ahead, fewer than the `wanted` that cover their transfers (the reason the nest
    /// realisation tries whole executions ahead).
    ShallowDivisorRing { trip: i64, ahead: i64, wanted: i64 },
    /// One whole execution ahead needs a slot per iteration, more than `max`.
    TripAboveSlots { trip: i64, max: u32 },
    /// The innermost enclosing loop `iv` runs the loop fewer than twice (`trip` running
    /// iterations): no execution follows another in it.
    LevelRunsOnce { iv: String, trip: i64 },
    /// SBUF cannot hold two executions of the ring.
    NoRoomForTwoExecutions,
    /// The steady state's transfers keep `sp` busy: its drain is not idle.
    DrainNotIdle { issue: u64, compute: u64 },
    /// No stage-0 load of a kernel input into a ring whose slots divide the trip count.
    NoCarriedLoad,
    /// No such load whose ring only it and its prologue copies write (a peeled loop).
    NoPeeledCarriedLoad,
    /// No ring size for `ring` divides the trip count.
    NoRingDivides { ring: String, trip: i64 },
    /// With `slots` slots, a read of `ring` would meet another write.
    ReadsAnotherWrite { ring: String, slots: u32 },
    /// A reader of `ring` has no stage tag.
    ReaderWithoutStage { ring: String },
    /// The rings leave no slot free at the end of the steady state.
    NoSlotFree,
    /// A statement of the loop's body runs in no iteration.
    BodyNeverRuns,
    /// The ring `ring` along the loop cannot be renamed by live range.
    RingKeepsSlots { ring: String },
    /// The renamed tiles would not fit: SBUF bytes per partition and PSUM banks needed.
    NoRoomForTiles { sbuf: u64, psum: u64 },
}

impl fmt::Display for Decline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decline::NotNested(end) => write!(f, "not nested in another loop ({end})"),
            Decline::NoLoadAhead => f.write_str("no load to issue ahead of other work"),
            Decline::IssueBound { issue, compute } => write!(
                f,
                "its transfers are issue-bound (~{issue} `sp` cycles against ~{compute} compute cycles per iteration)"
            ),
            Decline::NotIssueBound { issue, compute } => write!(
                f,
                "its transfers are not issue-bound (~{issue} `sp` cycles against ~{compute} compute cycles per iteration of the steady state), so the carry across its executions overlaps them"
            ),
            Decline::Both(why, not) => write!(f, "{why} and {not}"),
            Decline::NoDivisorRing { ring, max, trip } => write!(
                f,
                "no ring of 2..={max} slots for `{ring}` divides the trip count {trip}"
            ),
            Decline::ShallowDivisorRing {
                trip,
                ahead,
                wanted,
            } => write!(
                f,
                "a ring whose slots divide the trip count {trip} issues its loads {ahead} iteration(s) ahead, fewer than the {wanted} that cover their transfers"
            ),
            Decline::TripAboveSlots { trip, max } => {
                write!(f, "the trip count {trip} is above {max}")
            }
            Decline::LevelRunsOnce { iv, trip } => write!(
                f,
                "the innermost enclosing loop `{iv}` runs it {trip} time(s), so no execution follows another in it"
            ),
            Decline::NoRoomForTwoExecutions => {
                f.write_str("SBUF has no room for two executions of the ring")
            }
            Decline::DrainNotIdle { issue, compute } => write!(
                f,
                "its transfers are issue-bound (~{issue} `sp` cycles against ~{compute} compute cycles per iteration of the steady state), so `sp` has no idle drain"
            ),
            Decline::NoCarriedLoad => f.write_str(
                "no stage-0 load of a kernel input into a ring whose slots divide the trip count",
            ),
            Decline::NoPeeledCarriedLoad => f.write_str(
                "no stage-0 load of a kernel input into a ring that only it and its prologue copies write",
            ),
            Decline::NoRingDivides { ring, trip } => {
                write!(f, "no ring of `{ring}` divides the trip count {trip}")
            }
            Decline::ReadsAnotherWrite { ring, slots } => write!(
                f,
                "a read of `{ring}` would read another write with {slots} slots"
            ),
            Decline::ReaderWithoutStage { ring } => write!(f, "a reader of `{ring}` has no stage"),
            Decline::NoSlotFree => {
                f.write_str("the rings leave no slot free at the end of the steady state")
            }
            Decline::BodyNeverRuns => f.write_str("a statement of its body never runs"),
            Decline::RingKeepsSlots { ring } => write!(
                f,
                "the ring `{ring}` cannot take a tile per value (a value flows in from before the loop, or a write covers part of a tile)"
            ),
            Decline::NoRoomForTiles { sbuf, psum } => write!(
                f,
                "its values, a tile each, would need {sbuf} bytes of SBUF per partition and {psum} PSUM banks"
            ),
        }
    }
}
