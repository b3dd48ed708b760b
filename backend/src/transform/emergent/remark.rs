//! What emergent pipelining and `num_stages="auto"` decided, as typed remarks (`--log backend`,
//! `--log pipeliner`).
//!
//! Every step of [`super::pipeline_emergent`] (rings, stages, the single shift, prefetch across a
//! nest, the carry across executions, private tiles) and of [`super::auto::choose_auto_stages`]
//! gives one [`EmergentRemark`] or [`AutoRemark`] per decision, carrying its data; their
//! [`fmt::Display`] is the line the log has always printed (the filetests match it).
//!
//! Invariant: each remark's text is one line; names (loops, tiles, statements, nests) are the
//! ones the user sees, taken when the remark is made.

use crate::cost::budget::Overflow;
use crate::transform::decline::Decline;
use penguin::pipeline::{DepKind, LegalityReport, PipelineError};
use std::fmt;

/// What a loop whose stage plan the legality check refused gets instead, in
/// [`EmergentRemark::StagesIllegal`] and [`EmergentRemark::StagesUnchecked`]: the remark says
/// only what happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its loads are issued one iteration ahead ([`super::shift`]).
    SingleShift,
    /// Nothing: no load of the loop fills a ring the single shift could issue ahead, so its
    /// body stays as it is.
    Unchanged,
    /// Its compute stays in one stage (a loop realised across its nest, [`super::drain`]: its
    /// loads are already issued across the nest).
    OneStage,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refused::SingleShift => "falling back to the single shift",
            Refused::Unchanged => {
                "the loop keeps its body as written (no load of it fills a ring that the single shift could issue ahead)"
            }
            Refused::OneStage => {
                "its compute stays in one stage (its loads are already issued across its nest)"
            }
        })
    }
}

/// Why a ring has the slots it has beyond its span of stages, in [`EmergentRemark::StageRing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingDepth {
    /// One slot per stage of its span.
    Span,
    /// One more than its span: a load may fill it before the previous trip's readers are done.
    OneMore,
    /// The DMA heuristic's depth.
    Heuristic,
}

/// Why a tile stays single-buffered in a loop, in [`EmergentRemark::StaysSingle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleBuffered {
    /// An iteration does not start by writing all of it.
    NotWrittenFirst,
    /// SBUF has no room for a second slot.
    NoRoom,
}

/// A ring grown for the carry across executions: its name, slots, and slots before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrownRing {
    pub ring: String,
    pub slots: u32,
    pub was: u32,
}

/// How a nest realisation reaches into the next execution, in [`EmergentRemark::Carried`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryForm {
    /// The loop is extended: the carries run in its last iterations.
    Extended,
    /// The loop is peeled: the carries run after its steady state.
    Peeled,
}

/// One decision of emergent pipelining ([`super::pipeline_emergent`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmergentRemark {
    /// `stages`: loop `iv` has no engine hand-off to split; the single shift.
    NoHandOff { iv: String },
    /// `stages`: the stages of loop `iv`, which holds a loop realised across its nest, would
    /// only move transfers: the single shift.
    OnlyTransfersSplit { iv: String },
    /// `drain`: loop `iv`, realised across its nest, has its compute over two stages (each child
    /// described, with its stage), the last iteration's stage 1 peeled after it; `rings`: the
    /// tiles made rings for it, with their slots.
    DrainPeeled {
        iv: String,
        children: Vec<(String, u32)>,
        rings: Vec<(String, u32)>,
    },
    /// `stages`: no stage split of loop `iv` fits the memories; the single shift.
    NoSplitFits { iv: String },
    /// `stages`: `cap` hand-off stages of loop `iv` do not fit; fewer are tried.
    StagesDoNotFit { iv: String, cap: u32, why: Overflow },
    /// `stages`: the ISL legality check refuses the stage plan of loop `iv`: `violations`
    /// violations, the first of kind `kind` on tensor `tensor`; `then`: what the loop gets
    /// instead.
    StagesIllegal {
        iv: String,
        violations: usize,
        kind: DepKind,
        tensor: String,
        then: Refused,
    },
    /// `stages`: the ISL legality check gives no verdict on loop `iv`'s stage plan; `then`:
    /// what the loop gets instead.
    StagesUnchecked {
        iv: String,
        why: penguin::pipeline::LegalityError,
        then: Refused,
    },
    /// `stages`: loop `iv`'s compute spread over `stages` stages, each child (described) with
    /// its stage; `merged`: the cap if lower than `max_cap`.
    Staged {
        iv: String,
        trip: i64,
        stages: u32,
        depth: u32,
        merged: Option<u32>,
        max_cap: u32,
        verdict: LegalityReport,
        children: Vec<(String, u32)>,
    },
    /// `stages`: tile `tile` of loop `iv` is a ring of `slots`, written in stage `written`,
    /// last used in stage `used`.
    StageRing {
        iv: String,
        tile: String,
        slots: u32,
        written: u32,
        used: u32,
        depth: RingDepth,
    },
    /// Loop `iv` gets no compute stages: it encloses loop `inner`, prefetched across the nest.
    EnclosesNest { iv: String, inner: String },
    /// Loop `iv` gets no compute stages: it holds loop `inner`, which the annotated pipeliner
    /// extended (its executions overlap through the carry and the retimed stores instead).
    HoldsExtended { iv: String, inner: String },
    /// Loop `iv` gets no compute stages: a ring of `max` slots does not hide its DMA.
    DmaBound { iv: String, max: u32 },
    /// `plan`: tile `tile` stays single-buffered in loop `iv`.
    StaysSingle {
        tile: String,
        iv: String,
        why: SingleBuffered,
    },
    /// `plan`: PSUM tile `tile` stays one bank in loop `iv`: no bank is free.
    PsumStaysOne { tile: String, iv: String },
    /// `plan`: PSUM tile `tile` becomes a ring of 2 banks in loop `iv`.
    PsumRing { iv: String, trip: i64, tile: String },
    /// `plan`: tile `tile` becomes a ring of `slots` in loop `iv` (prefetch depth `ahead`), its
    /// DMA of `dma` cycles in `pieces` pieces of `piece_bytes` against `compute` cycles.
    TransferRing {
        iv: String,
        trip: i64,
        tile: String,
        slots: u32,
        ahead: u32,
        dma: u64,
        pieces: u64,
        piece_bytes: u64,
        compute: u64,
    },
    /// `shift`: the loads of `tiles` in loop `iv` are issued `ahead` iterations ahead in one
    /// predicated loop of `iterations`.
    Shifted {
        iv: String,
        tiles: Vec<String>,
        ahead: i64,
        iterations: i64,
    },
    /// `nest`: loop `iv` keeps its prefetch within the loop.
    NestDeclined { iv: String, why: Decline },
    /// `nest`: loop `iv` (`trip`) nested in `nest` has the loads of `rings` (name, slots)
    /// issued `ahead` flat iterations ahead, `carries` carry copies per load.
    PrefetchedFlat {
        iv: String,
        trip: i64,
        nest: String,
        rings: Vec<(String, u32)>,
        ahead: i64,
        carries: usize,
    },
    /// `nest`: loop `iv` (`trip`) nested in `nest` has the loads of `rings` issued `ahead` whole
    /// executions ahead into rings of `blocks` (per enclosing level chosen, outermost first)
    /// times `trip` slots, `carries` copies per load, because of `why`.
    PrefetchedExecution {
        iv: String,
        trip: i64,
        nest: String,
        rings: Vec<String>,
        ahead: i64,
        blocks: Vec<u32>,
        carries: usize,
        why: Decline,
    },
    /// `outer_slots`: tile `tile`, a ring of `before` slots along loop `iv` (of fewer
    /// iterations), takes `slots.0 x slots.1` slots along `outer` and `iv`.
    OuterSlots {
        tile: String,
        iv: String,
        outer: String,
        before: u32,
        slots: (u32, u32),
    },
    /// `carry`: each execution of annotated loop `iv` loads its own first iterations.
    CarryDeclined { iv: String, why: Decline },
    /// `carry`: annotated loop `iv` (`trip`, `stages`) nested in `nest` has the stage-0 loads of
    /// its next execution's first `ahead` iterations issued in this one, `carries` copies per
    /// load (per load and iteration when peeled).
    Carried {
        iv: String,
        form: CarryForm,
        trip: i64,
        stages: i64,
        nest: String,
        rings: Vec<GrownRing>,
        ahead: i64,
        carries: usize,
    },
    /// `privatise`: tile `tile` stays one tile across `loops`: no room for a copy per loop.
    SharedTile { tile: String, loops: Vec<String> },
    /// `privatise`: `loops` each get their own copy of `tile` (`copies`, the first the tile).
    Privatised {
        tile: String,
        loops: Vec<String>,
        copies: Vec<String>,
    },
}

/// `` `a`, `b` ``: names quoted and joined with `sep`.
fn quoted(names: &[String], sep: &str) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(sep)
}

impl fmt::Display for EmergentRemark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use EmergentRemark as R;
        match self {
            R::NoHandOff { .. }
            | R::OnlyTransfersSplit { .. }
            | R::DrainPeeled { .. }
            | R::NoSplitFits { .. }
            | R::StagesDoNotFit { .. }
            | R::StagesIllegal { .. }
            | R::StagesUnchecked { .. }
            | R::Staged { .. }
            | R::StageRing { .. }
            | R::EnclosesNest { .. }
            | R::HoldsExtended { .. }
            | R::DmaBound { .. } => fmt_stages(self, f),
            R::StaysSingle { .. }
            | R::PsumStaysOne { .. }
            | R::PsumRing { .. }
            | R::TransferRing { .. } => fmt_plan(self, f),
            R::Shifted { .. }
            | R::NestDeclined { .. }
            | R::PrefetchedFlat { .. }
            | R::PrefetchedExecution { .. }
            | R::OuterSlots { .. } => fmt_prefetch(self, f),
            R::CarryDeclined { .. }
            | R::Carried { .. }
            | R::SharedTile { .. }
            | R::Privatised { .. } => fmt_carry_and_privatise(self, f),
        }
    }
}

/// The lines of `stages`: the compute spread over stages by engine hand-offs, or why not.
fn fmt_stages(r: &EmergentRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use EmergentRemark as R;
    match r {
        R::NoHandOff { iv } => write!(
            f,
            "emergent: loop `{iv}`: no engine hand-off to split into stages; single shift"
        ),
        R::DrainPeeled {
            iv,
            children,
            rings,
        } => {
            write!(
                f,
                "emergent: loop `{iv}`: compute over 2 stages inside the nest realisation, the last iteration's stage 1 peeled after the loop (no extra iteration);"
            )?;
            for (c, st) in children {
                write!(f, " {c}@{st}")?;
            }
            for (t, n) in rings {
                write!(f, "; `{t}` a ring of {n} slot(s)")?;
            }
            Ok(())
        }
        R::OnlyTransfersSplit { iv } => write!(
            f,
            "emergent: loop `{iv}`: no compute stages: around a nest they would only move transfers, which the single shift issues ahead in body order"
        ),
        R::NoSplitFits { iv } => write!(
            f,
            "emergent: loop `{iv}`: no stage split fits the memories; single shift"
        ),
        R::StagesDoNotFit { iv, cap, why } => write!(
            f,
            "emergent: loop `{iv}`: {cap} hand-off stage(s) do not fit ({why}); merging stages"
        ),
        R::StagesIllegal {
            iv,
            violations,
            kind,
            tensor,
            then,
        } => write!(
            f,
            "emergent: loop `{iv}`: the ISL legality check refuses the stage plan ({violations} violation(s), first: {} on `{tensor}`); {then}",
            kind.name()
        ),
        R::StagesUnchecked { iv, why, then } => {
            write!(f, "emergent: loop `{iv}`: {why}; {then}")
        }
        R::Staged { .. } => fmt_staged(r, f),
        R::StageRing {
            iv,
            tile,
            slots,
            written,
            used,
            depth,
        } => write!(
            f,
            "emergent: loop `{iv}`: `{tile}` is a ring of {slots} slot(s): written in stage {written}, last used in stage {used}{}",
            match depth {
                RingDepth::Span => "",
                RingDepth::OneMore => " (one more than its span: the load may fill it before the previous trip's readers are done)",
                RingDepth::Heuristic => " (the DMA heuristic's depth)",
            }
        ),
        R::EnclosesNest { iv, inner } => write!(
            f,
            "emergent: loop `{iv}`: no compute stages: it encloses loop `{inner}`, whose loads are issued across the nest"
        ),
        R::HoldsExtended { iv, inner } => write!(
            f,
            "emergent: loop `{iv}`: no compute stages: it holds loop `{inner}`, pipelined by the user's stages, whose executions overlap through its carried loads and the stores issued after the next iteration's inner loops, where stages would add a fill and a drain around each of them"
        ),
        R::DmaBound { iv, max } => write!(
            f,
            "emergent: loop `{iv}`: no compute stages: even a ring of {max} slots does not hide its DMA behind its compute, so splitting the compute would only lengthen the ramp"
        ),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The lines of `plan`: which tiles become rings, and which stay single.
fn fmt_plan(r: &EmergentRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use EmergentRemark as R;
    match r {
        R::StaysSingle { tile, iv, why } => write!(
            f,
            "emergent: `{tile}` stays single-buffered in loop `{iv}`: {}",
            match why {
                SingleBuffered::NotWrittenFirst =>
                    "an iteration does not start by writing all of it",
                SingleBuffered::NoRoom => "SBUF has no room for a second slot",
            }
        ),
        R::PsumStaysOne { tile, iv } => write!(
            f,
            "emergent: `{tile}` stays one PSUM bank in loop `{iv}`: no bank is free for a second slot"
        ),
        R::PsumRing { iv, trip, tile } => write!(
            f,
            "emergent: loop `{iv}` (trip {trip}): PSUM tile `{tile}` becomes a ring of 2 banks (the Tensor engine writes one while the other is read)"
        ),
        R::TransferRing {
            iv,
            trip,
            tile,
            slots,
            ahead,
            dma,
            pieces,
            piece_bytes,
            compute,
        } => write!(
            f,
            "emergent: loop `{iv}` (trip {trip}): `{tile}` becomes a ring of {slots} slots (prefetch depth {ahead}): its DMA takes ~{dma} cycles ({pieces} piece(s) of {piece_bytes} bytes) against ~{compute} compute cycles per iteration"
        ),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The lines of `shift` and `nest`: loads issued ahead, within the loop or across its nest.
fn fmt_prefetch(r: &EmergentRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use EmergentRemark as R;
    match r {
        R::Shifted {
            iv,
            tiles,
            ahead,
            iterations,
        } => write!(
            f,
            "emergent: loop `{iv}`: the loads of {} are issued {ahead} iteration(s) ahead (one predicated loop of {iterations} iterations, no peeling)",
            quoted(tiles, ", ")
        ),
        R::NestDeclined { iv, why } => write!(
            f,
            "emergent: loop `{iv}`: loads prefetched within the loop only: {why}"
        ),
        R::PrefetchedFlat {
            iv,
            trip,
            nest,
            rings,
            ahead,
            carries,
        } => {
            let rings: Vec<String> = rings
                .iter()
                .map(|(x, n)| format!("`{x}` ({n} slots)"))
                .collect();
            write!(
                f,
                "emergent: loop `{iv}` (trip {trip}) is nested in {nest}: the loads of {} are issued {ahead} flat iteration(s) ahead across the nest (ring slot = flat iteration mod slots; {carries} carry copy(ies) per load, {ahead} prologue load(s) at the first iteration; no extra iterations, no drain)",
                rings.join(", ")
            )
        }
        R::PrefetchedExecution {
            iv,
            trip,
            nest,
            rings,
            ahead,
            blocks,
            carries,
            why,
        } => {
            let blocks: Vec<String> = blocks.iter().map(u32::to_string).collect();
            let executions = if *ahead == 1 {
                "one execution".to_string()
            } else {
                format!("{ahead} executions")
            };
            let firsts = if *ahead == 1 {
                "the first execution's loads in a loop of their own".to_string()
            } else {
                format!("the first {ahead} executions' loads in loops of their own")
            };
            write!(
                f,
                "emergent: loop `{iv}` (trip {trip}) is nested in {nest}: the loads of {} are issued {executions} ahead across the nest (rings of {} x {trip} slots; {carries} carry copy(ies) per load; {firsts}; no extra iterations, no drain): {why}",
                quoted(rings, ", "),
                blocks.join(" x ")
            )
        }
        R::OuterSlots {
            tile,
            iv,
            outer,
            before,
            slots: (m, t),
        } => write!(
            f,
            "emergent: loop `{iv}` (trip {t}) is nested in `{outer}`: `{tile}` becomes a ring of {m} x {t} slots along `{outer}` and `{iv}` instead of {before} along `{iv}` alone, of which {t} were used (the next execution of `{iv}` writes other slots)"
        ),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// The lines of `carry` (loads carried into the next execution) and `privatise` (a tile per
/// loop).
fn fmt_carry_and_privatise(r: &EmergentRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use EmergentRemark as R;
    match r {
        R::CarryDeclined { iv, why } => write!(
            f,
            "emergent: annotated loop `{iv}`: each execution loads its own first iterations: {why}"
        ),
        R::Carried { .. } => fmt_carried(r, f),
        R::SharedTile { tile, loops } => write!(
            f,
            "emergent: `{tile}` stays one tile across loops {}: no room for a copy per loop",
            quoted(loops, ", ")
        ),
        R::Privatised {
            tile,
            loops,
            copies,
        } => write!(
            f,
            "emergent: loops {} use `{tile}` in turn, each writing all of it first: each gets its own tile ({})",
            quoted(loops, ", "),
            quoted(copies, ", ")
        ),
        // The other families: each has its own function.
        // (Every variant is routed to its family by `fmt`; a misrouted one still shows.)
        other => write!(f, "{other:?}"),
    }
}

/// [`EmergentRemark::Staged`]'s line.
fn fmt_staged(r: &EmergentRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let EmergentRemark::Staged {
        iv,
        trip,
        stages,
        depth,
        merged,
        max_cap,
        verdict: v,
        children,
    } = r
    else {
        return Ok(());
    };
    let described: Vec<String> = children.iter().map(|(c, s)| format!("{c}@{s}")).collect();
    write!(
        f,
        "emergent: loop `{iv}` (trip {trip}): compute spread over {stages} stage(s) by engine hand-offs (prefetch depth {depth}, {} hand-off stage(s) after it",
        stages - 1 - depth
    )?;
    if let Some(cap) = merged {
        write!(
            f,
            ", stages merged to fit: at most {cap} instead of {max_cap}"
        )?;
    }
    write!(
        f,
        "); ISL: legal ({} flow, {} anti, {} output dependence pair(s) checked on {} tensor(s), {} kept in order without ISL); {}",
        v.flow,
        v.anti,
        v.output,
        v.tensors_checked,
        v.tensors_preserved,
        described.join(" ")
    )
}

/// [`EmergentRemark::Carried`]'s line.
fn fmt_carried(r: &EmergentRemark, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let EmergentRemark::Carried {
        iv,
        form,
        trip,
        stages,
        nest,
        rings,
        ahead: p,
        carries,
    } = r
    else {
        return Ok(());
    };
    let names: Vec<String> = rings
        .iter()
        .map(|g| match g.slots == g.was {
            true => format!("`{}` ({} slots)", g.ring, g.slots),
            false => format!("`{}` ({} slots, was {})", g.ring, g.slots, g.was),
        })
        .collect();
    let names = names.join(", ");
    match form {
        CarryForm::Extended => write!(
            f,
            "emergent: annotated loop `{iv}` (trip {trip}, {stages} stages) is nested in {nest}: the stage-0 loads of {names} for the first {p} iteration(s) of each next execution are issued in the last {p} iteration(s) of this one ({carries} carry copy(ies) per load; the ring's slots continue across executions; the first execution loads its own)"
        ),
        CarryForm::Peeled => write!(
            f,
            "emergent: annotated loop `{iv}` (peeled, trip {trip}, {stages} stages) is nested in {nest}: the stage-0 loads of {names} for the first {p} iteration(s) of each next execution are issued after this one's steady state ({carries} carry copy(ies) per load and iteration; the ring's slots continue across executions; the prologue's copies of those iterations run in the first execution only)"
        ),
    }
}

/// Why `num_stages="auto"` gives a loop no stages, in [`AutoRemark::Declined`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AutoDecline {
    /// Tile `tile` takes `dma` cycles against `compute`, more than a ring of `max` slots hides.
    DmaBound {
        tile: String,
        dma: u64,
        compute: u64,
        max: u32,
    },
    /// No engine hand-off to split into stages.
    NoHandOff,
    /// No split puts a statement past stage 0.
    NoSplit,
    /// Every split is refused; the last refusal.
    Refused(AutoRefusal),
}

/// Why a stage split of `num_stages="auto"` is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AutoRefusal {
    /// Its rings do not fit.
    Rings(Overflow),
    /// The annotated pipeliner refuses it (its first error).
    Pipeliner(Box<PipelineError>),
    /// The annotated pipeliner refuses it without an error.
    Unknown,
}

impl fmt::Display for AutoDecline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoDecline::DmaBound {
                tile,
                dma,
                compute,
                max,
            } => write!(
                f,
                "bound by DMA latency: `{tile}` takes ~{dma} cycles to move against ~{compute} compute cycles per iteration, more than a ring of {max} slots hides"
            ),
            AutoDecline::NoHandOff => f.write_str("no engine hand-off to split into stages"),
            AutoDecline::NoSplit => f.write_str("no stage split"),
            AutoDecline::Refused(why) => {
                f.write_str("the pipeliner refuses every stage split (")?;
                match why {
                    AutoRefusal::Rings(o) => write!(f, "{o}")?,
                    AutoRefusal::Pipeliner(e) => write!(f, "{e}")?,
                    AutoRefusal::Unknown => f.write_str("an unknown refusal")?,
                }
                f.write_str(")")
            }
        }
    }
}

/// One decision of `num_stages="auto"` ([`super::auto::choose_auto_stages`]), per loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AutoRemark {
    /// Loop `iv` gets `stages` stages: each child (described) with its stage; `aim`: the busiest
    /// engine and its cycles per iteration.
    Staged {
        iv: String,
        stages: u32,
        children: Vec<(String, u32)>,
        aim: Option<(String, u64)>,
    },
    /// Loop `iv` is left un-annotated.
    Declined { iv: String, why: AutoDecline },
}

impl fmt::Display for AutoRemark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoRemark::Staged {
                iv,
                stages,
                children,
                aim,
            } => {
                let described: Vec<String> = children
                    .iter()
                    .map(|(c, s)| format!("`{c}`@{s}"))
                    .collect();
                write!(
                    f,
                    "auto: loop `{iv}`: {stages} stages by engine hand-offs, in program order: {}",
                    described.join(" ")
                )?;
                if let Some((e, c)) = aim {
                    write!(
                        f,
                        "; aiming at an II of about {c} cycles (the work of `{e}` per iteration)"
                    )?;
                }
                Ok(())
            }
            AutoRemark::Declined { iv, why } => write!(
                f,
                "auto: loop `{iv}`: {why}; left un-annotated (the backend's emergent pipelining may take it)"
            ),
        }
    }
}
