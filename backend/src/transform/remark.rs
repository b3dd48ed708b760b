//! What a Penguin pass of the backend decided, as typed remarks (`--log backend`).
//!
//! A pass returns [`Remark`]s, one per decision, carrying the decision's data; the driver's
//! compile context collects them in pass order. Rust code matches the variants; the log gets their
//! [`fmt::Display`], which is the wording the filetests and the `--log backend` output have
//! always had. Like [`super::decline::Decline`] (whose style this follows), names are the ones
//! the user sees, taken when the remark is made.
//!
//! Invariant: each remark's text is one line. Emergent pipelining's remarks are their own type
//! ([`EmergentRemark`], in [`Remark::Emergent`]); the modulo schedules' lines are their typed
//! summaries (`crate::codegen::schedule_summary`), which the run report prints after these.

use super::decline::Decline;
use super::emergent::remark::EmergentRemark;
use std::fmt;

/// Why `unroll` leaves a loop at factor 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnrollDecline {
    /// Unrolling does not spread the loop's transfers better.
    NoBetterSpread,
    /// The body has no compute to overlap with its transfers.
    NoCompute,
    /// The body's compute is not below its DMA time at factor 1.
    ComputeBound { compute: u64, dma: u64 },
}

/// What holds a pipelined loop above its resources' average, in [`Remark::RingSlotAdded`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecurrenceBound {
    /// The recurrence sets RecMII.
    RecMii(u64),
    /// The recurrence holds the II search at this II.
    SearchIi(u64),
}

/// One decision of a backend pass on Penguin IR (or, for [`Remark::RingSlotAdded`], of the
/// backend's `expand`, which codegen decides and [`super::ring_slots`] realises).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Remark {
    /// `fold-zeros`: the zeroing of PSUM tile `tile` goes into the first matmul of loop `iv`,
    /// which overwrites at `iv == lb`.
    ZeroingFolded { tile: String, iv: String, lb: i64 },
    /// `unroll`: loop `iv` stays at factor 1. `periods`: the DMA cycles per iteration at each
    /// factor tried.
    UnrollDeclined {
        iv: String,
        trip: i64,
        why: UnrollDecline,
        periods: Vec<(u32, u64)>,
    },
    /// `unroll`: loop `iv` unrolled `factor` times (with a remainder loop of `remainder`
    /// iterations when not zero); `private` tiles renamed per copy.
    Unrolled {
        iv: String,
        trip: i64,
        factor: u32,
        remainder: i64,
        periods: Vec<(u32, u64)>,
        compute: u64,
        private: usize,
        /// When unrolled for its loads' latency rather than the queue plan: the ring slots
        /// they want.
        deeper: Option<u64>,
    },
    /// `flatten`: annotated loop `iv` (`trip` iterations in `stages` stages) stays a loop.
    FlattenDeclined {
        iv: String,
        trip: i64,
        stages: u32,
        why: Decline,
    },
    /// `flatten`: annotated loop `iv` (`trip` iterations in `stages` stages; `extended`
    /// iterations as the pipeliner left it, `peeled` or extended) is unrolled fully into loop
    /// `into`; `renamed`: each tile renamed by live range, and into how many tiles.
    Flattened {
        iv: String,
        trip: i64,
        stages: u32,
        peeled: bool,
        extended: i64,
        into: String,
        renamed: Vec<(String, usize)>,
    },
    /// `expand`: tile `tile` in loop `iv` gets `slots` slots (one more): its reuse is on the
    /// recurrence `cycle` (as the modulo scheduler names it) that `bound` above the resources'
    /// `res_average` cycles per iteration.
    RingSlotAdded {
        tile: String,
        iv: String,
        slots: u32,
        bound: RecurrenceBound,
        res_average: u64,
        cycle: String,
    },
    /// `emergent`: a decision of emergent pipelining.
    Emergent(EmergentRemark),
    /// `retime`: the load of `tile` in user-pipelined loop `iv` is issued `by` iterations earlier
    /// than the user's stages put it ([`crate::prefetch`]); the tile has `slots` slots. Its
    /// transfer takes `dma` cycles, an iteration at least `period`.
    Prefetched {
        iv: String,
        tile: String,
        by: u32,
        slots: u32,
        dma: u64,
        period: u64,
    },
    /// `retime`: the store of `tile` in loop `iv` goes one iteration later (the tile has
    /// `slots` slots, one more when `grown`): predicted period `predicted` over `trip`
    /// iterations, was `was` over `was_trip`.
    Retimed {
        iv: String,
        tile: String,
        slots: u32,
        /// Whether the tile took one more slot (else its ring already held the value one
        /// iteration longer).
        grown: bool,
        predicted: u64,
        trip: u64,
        was: u64,
        was_trip: u64,
    },
    /// `retime`: the store of `tile` after an inner loop of loop `iv` is issued one iteration of
    /// the nest later, after that iteration's inner loops ([`super::delay_stores`]); the tile
    /// has `slots` slots; `carries` copies across the executions of `iv`.
    StoreDelayed {
        iv: String,
        tile: String,
        slots: u64,
        carries: usize,
    },
}

impl From<EmergentRemark> for Remark {
    fn from(r: EmergentRemark) -> Self {
        Remark::Emergent(r)
    }
}

/// `U=1: 512, U=2: 384`: the DMA cycles per iteration at each factor tried.
fn periods_table(periods: &[(u32, u64)]) -> String {
    periods
        .iter()
        .map(|(u, p)| format!("U={u}: {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Remark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remark::ZeroingFolded { tile, iv, lb } => write!(
                f,
                "backend: the zeroing of PSUM tile `{tile}` is folded into the first matmul of loop `{iv}` (it overwrites at `{iv} == {lb}`)"
            ),
            Remark::UnrollDeclined {
                iv,
                trip,
                why,
                periods,
            } => {
                write!(f, "unroll: loop `{iv}` (trip {trip}): factor 1: ")?;
                match why {
                    UnrollDecline::NoBetterSpread => write!(
                        f,
                        "unrolling does not spread its transfers better (DMA cycles per iteration {})",
                        periods_table(periods)
                    ),
                    UnrollDecline::NoCompute => f.write_str(
                        "no compute to overlap with its transfers, whose latency fewer, longer pieces would lengthen",
                    ),
                    UnrollDecline::ComputeBound { compute, dma } => write!(
                        f,
                        "its compute (~{compute} cycles per iteration) is not below its DMA time ({dma}), which unrolling would shorten"
                    ),
                }
            }
            Remark::Unrolled { .. } => fmt_unrolled(self, f),
            Remark::FlattenDeclined {
                iv,
                trip,
                stages,
                why,
            } => write!(
                f,
                "flatten: loop `{iv}` ({trip} iterations in {stages} stages) stays a loop: {why}"
            ),
            Remark::Flattened { .. } => fmt_flattened(self, f),
            Remark::RingSlotAdded {
                tile,
                iv,
                slots,
                bound,
                res_average,
                cycle,
            } => {
                write!(
                    f,
                    "`{tile}` in loop `{iv}` gets {slots} slots (was {}): its reuse is on the recurrence that ",
                    slots - 1
                )?;
                match bound {
                    RecurrenceBound::RecMii(r) => write!(f, "sets RecMII {r}")?,
                    RecurrenceBound::SearchIi(ii) => {
                        write!(f, "holds the schedule at II {ii}")?
                    }
                }
                write!(
                    f,
                    " above its resources' {res_average} cycles per iteration (averaged over the fill and the drain): {cycle}"
                )
            }
            Remark::Emergent(r) => write!(f, "{r}"),
            Remark::Retimed {
                iv,
                tile,
                slots,
                grown,
                predicted,
                trip,
                was,
                was_trip,
            } => {
                let ring = if *grown {
                    format!("`{tile}` gets {slots} slots")
                } else {
                    format!("`{tile}`'s {slots} slots already hold it")
                };
                write!(
                    f,
                    "retime: loop `{iv}`: the store of `{tile}` goes one iteration later, after the next iteration's loads ({ring}): predicted period {predicted} over {trip} iterations (was {was} over {was_trip})"
                )
            }
            Remark::Prefetched {
                iv,
                tile,
                by,
                slots,
                dma,
                period,
            } => write!(
                f,
                "retime: loop `{iv}`: the load of `{tile}` is issued {by} iteration(s) earlier than the user's stages put it (`{tile}` gets {slots} slots): its transfer takes ~{dma} cycles against ~{period} per iteration"
            ),
            Remark::StoreDelayed {
                iv,
                tile,
                slots,
                carries,
            } => {
                let across = match carries {
                    0 => String::new(),
                    n => format!(" ({n} carr{} across the loops around it)", if *n == 1 { "y" } else { "ies" }),
                };
                write!(
                    f,
                    "retime: loop `{iv}`: the store of `{tile}` after its inner loop is issued in the next iteration of the nest, after that iteration's inner loops and their loads (`{tile}` has {slots} slots){across}"
                )
            }
        }
    }
}

/// [`Remark::Unrolled`]'s line.
fn fmt_unrolled(r: &Remark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Remark::Unrolled {
        iv,
        trip,
        factor,
        remainder,
        periods,
        compute,
        private,
        deeper,
    } = r
    else {
        return Ok(());
    };
    write!(f, "unroll: loop `{iv}` (trip {trip}): factor {factor}")?;
    if *remainder > 0 {
        write!(f, ", remainder loop of {remainder}")?;
    }
    if let Some(wanted) = deeper {
        let depth = crate::cost::loop_cost::MAX_DEPTH;
        return write!(
            f,
            ": {factor} copies keep {} tiles in flight, for loads whose latency wants {wanted} ring slots (a ring holds at most {depth}; DMA cycles per iteration {}; compute ~{compute}); {private} tile(s) private to an iteration renamed per copy",
            u64::from(*factor) * u64::from(depth),
            periods_table(periods)
        );
    }
    write!(
        f,
        ": {factor} copies of each transfer spread over the queues in fewer pieces (DMA cycles per iteration {}; compute ~{compute}); {private} tile(s) private to an iteration renamed per copy",
        periods_table(periods)
    )
}

/// [`Remark::Flattened`]'s line.
fn fmt_flattened(r: &Remark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Remark::Flattened {
        iv,
        trip,
        stages,
        peeled,
        extended,
        into,
        renamed,
    } = r
    else {
        return Ok(());
    };
    write!(
        f,
        "flatten: loop `{iv}` ({trip} iterations in {stages} stages, "
    )?;
    if *peeled {
        write!(
            f,
            "peeled, {extended} iteration(s) between its prologue and epilogue"
        )?;
    } else {
        write!(f, "extended to {extended}")?;
    }
    if *trip <= i64::from(*stages) {
        f.write_str("; no steady state")?;
    } else {
        write!(f, "; {} of them fill or drain", stages - 1)?;
    }
    write!(
        f,
        ") is unrolled fully into loop `{into}`, whose pipelining overlaps its executions; renamed by live range: "
    )?;
    if renamed.is_empty() {
        return f.write_str("none");
    }
    for (k, (t, n)) in renamed.iter().enumerate() {
        if k > 0 {
            f.write_str(", ")?;
        }
        write!(f, "`{t}` → {n} tiles")?;
    }
    Ok(())
}

/// Every remark's line, in order.
pub fn remark_lines(remarks: &[Remark]) -> Vec<String> {
    remarks.iter().map(ToString::to_string).collect()
}
