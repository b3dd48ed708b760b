//! The modulo scheduler's typed account of one loop ([`ScheduleSummaryData`], filled by
//! [`crate::codegen::modulo::ModuloSchedule::summary`]): the loop, its II, the parts of its MII
//! and the cycles that set them as typed edges ([`CycleData`]). The run report (`src/loops.rs`)
//! and the compare table (`src/compare.rs`) read these fields; the `Display` impls give the text
//! of `--log backend` (the scheduler's one-line account), unchanged from when it was a string.
//!
//! Invariant: a summary holds names (labels, display names), never BIR ids, so it outlives the
//! BIR it was made from; its text is a function of its fields alone.

use runtime_sim::isa::Engine;
use std::fmt;

/// How a cycle reaches its next instruction from the one before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CycleStep {
    /// A dependence within one iteration, or no edge at all: the text names only the next
    /// instruction.
    Direct,
    /// An in-order engine's next instruction; `next_body`: of the next iteration.
    InOrder { engine: Engine, next_body: bool },
    /// A flow `distance` iterations later through `tensor`; `stages` when it runs into a later
    /// user stage (`(from, to)`).
    Flow {
        distance: u32,
        tensor: String,
        stages: Option<(u32, u32)>,
    },
    /// `tensor`'s slot reused `distance` iterations later.
    SlotReused { distance: u32, tensor: String },
    /// Another dependence carried `distance` iterations through `tensor`.
    Carried { distance: u32, tensor: String },
}

/// One edge of a cycle: how it goes, and the instruction it reaches (its label,
/// [`crate::codegen::modulo::inst_label`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleEdge {
    pub step: CycleStep,
    pub to: String,
}

/// A dependence cycle: its first instruction, then every edge back round to it. Empty (no
/// `start`, no edges) when no cycle sets the figure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CycleData {
    pub start: String,
    pub edges: Vec<CycleEdge>,
}

impl CycleData {
    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.edges.is_empty()
    }

    /// The store that `sp` issues before the next body's loads where the cycle goes from it to
    /// them in `sp`'s order (`sp.store(o) → (sp in order, next body) sp.load(t)`): a store the
    /// backend may issue after those loads instead (`crate::retime`, issue 32, item 1), so no
    /// order of one body is then not the limit.
    pub fn store_holding_loads(&self) -> Option<&str> {
        let mut from = self.start.as_str();
        for e in &self.edges {
            let next_body_sp = matches!(
                e.step,
                CycleStep::InOrder {
                    engine: Engine::Sp,
                    next_body: true
                }
            );
            if next_body_sp && from.starts_with("sp.store") && e.to.starts_with("sp.load") {
                return Some(from);
            }
            from = e.to.as_str();
        }
        None
    }
}

fn later(d: u32) -> String {
    format!("{d} iteration{} later", if d == 1 { "" } else { "s" })
}

impl fmt::Display for CycleEdge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let to = &self.to;
        match &self.step {
            CycleStep::Direct => write!(f, "{to}"),
            CycleStep::InOrder { engine, next_body } => {
                let next = if *next_body { ", next body" } else { "" };
                write!(f, "({} in order{next}) {to}", engine.name())
            }
            CycleStep::Flow {
                distance,
                tensor,
                stages: Some((sa, sb)),
            } => write!(
                f,
                "({}, `{tensor}`: stage {sa} → {sb}) {to}",
                later(*distance)
            ),
            CycleStep::Flow {
                distance, tensor, ..
            }
            | CycleStep::Carried { distance, tensor } => {
                write!(f, "({}, `{tensor}`) {to}", later(*distance))
            }
            CycleStep::SlotReused { distance, tensor } => {
                write!(f, "({}, `{tensor}`'s slot reused) {to}", later(*distance))
            }
        }
    }
}

impl fmt::Display for CycleData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.start)?;
        for e in &self.edges {
            write!(f, " → {e}")?;
        }
        Ok(())
    }
}

/// The resource or recurrence that sets a loop's MII.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    /// An engine (`pe`, `act`, `dve`, `pool`, `sp`) or `dma` (the busiest DMA queue).
    Resource(String),
    /// A dependence cycle.
    Recurrence(CycleData),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Resource(r) => write!(f, "resource {r}"),
            Limit::Recurrence(c) => write!(f, "recurrence {c}"),
        }
    }
}

/// An instruction's start offset in the schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetData {
    /// Its label ([`crate::codegen::modulo::inst_label`]).
    pub inst: String,
    pub stage: Option<u32>,
    pub sigma: u64,
}

/// What the modulo scheduler decided for one loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleSummaryData {
    /// The loop's induction variable, as the user names it.
    pub loop_name: String,
    pub trip: u64,
    pub ii: u64,
    pub mii: u64,
    pub res_mii: u64,
    /// The resource that sets ResMII.
    pub res_resource: String,
    pub rec_mii: u64,
    /// The cycle that sets RecMII (empty when none does).
    pub rec_cycle: CycleData,
    /// The II the search reached.
    pub search_ii: u64,
    /// Whether the body keeps its earlier order.
    pub kept_order: bool,
    /// The predicted period of the emitted order, of the order before, and of the schedule's.
    pub predicted: u64,
    pub predicted_before: u64,
    pub scheduled: u64,
    /// When the predicted period is more than 2% above the MII: the cycle through the engines'
    /// orders that sets it (empty when none does).
    pub period_cycle: Option<CycleData>,
    /// The shortest predicted period of any order of the body, and of how many orders.
    pub order_bound: Option<(u64, usize)>,
    pub steady_state: bool,
    /// The body's start offsets, earliest first.
    pub offsets: Vec<OffsetData>,
}

impl ScheduleSummaryData {
    /// What sets the MII.
    pub fn limited_by(&self) -> Limit {
        if self.rec_mii > self.res_mii {
            Limit::Recurrence(self.rec_cycle.clone())
        } else {
            Limit::Resource(self.res_resource.clone())
        }
    }

    fn fmt_order(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.search_ii != self.ii {
            write!(f, "); the II search reached {}", self.search_ii)?;
            f.write_str(if self.kept_order {
                ", but"
            } else {
                "; the body is"
            })?;
        } else {
            f.write_str(");")?;
        }
        if self.kept_order {
            write!(
                f,
                " the body keeps its order (predicted period {} against {} in offset order",
                self.predicted_before, self.scheduled
            )?;
        } else {
            write!(
                f,
                " reordered, predicted period {} (was {}",
                self.predicted, self.predicted_before
            )?;
        }
        f.write_str(")")
    }

    fn fmt_period(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(cycle) = &self.period_cycle else {
            return Ok(());
        };
        if !cycle.is_empty() {
            write!(f, "; the period {} is set by {cycle}", self.predicted)?;
        }
        match self.order_bound {
            Some((b, n)) if b >= self.predicted => {
                write!(
                    f,
                    "; no order of the body is faster (the best of all {n} orders of its engines' instructions)"
                )?;
                match cycle.store_holding_loads() {
                    Some(store) => write!(
                        f,
                        ", but `{store}` holds the next body's loads, which it may follow"
                    ),
                    None => Ok(()),
                }
            }
            Some((b, _)) => write!(f, "; the best order of the body would run at {b}"),
            None => Ok(()),
        }
    }
}

/// One line for `--log backend` and the run report.
impl fmt::Display for ScheduleSummaryData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "modulo schedule of loop `{}` (trip {}): II {} (MII {}; ResMII {} set by {}; RecMII {}",
            self.loop_name,
            self.trip,
            self.ii,
            self.mii,
            self.res_mii,
            self.res_resource,
            self.rec_mii
        )?;
        if !self.rec_cycle.is_empty() {
            write!(f, " set by {}", self.rec_cycle)?;
        }
        self.fmt_order(f)?;
        self.fmt_period(f)?;
        if !self.steady_state {
            f.write_str(
                "; no steady state: its stages never all run in two consecutive iterations, so \
                 the figures count every stage whole",
            )?;
        }
        f.write_str("; start offsets:")?;
        for o in &self.offsets {
            write!(f, " {}@{}", o.inst, o.sigma)?;
            if let Some(st) = o.stage {
                write!(f, "[s{st}]")?;
            }
        }
        Ok(())
    }
}
