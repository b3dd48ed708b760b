//! The backend's plan of a kernel before allocation ([`compute_planned`]): the kernel lowered
//! to BIR, list-scheduled, its transfers split over the queues, its flat loops
//! modulo-scheduled, with the ring slots [`crate::codegen::expand`] adds, round after round;
//! what the passes `lower-bir`, `schedule`, `modulo` and `expand` of
//! [`crate::passes::PASSES`] compute, in the same order and by the same functions.
//!
//! The transformations that measure before they move ([`crate::retime`],
//! [`crate::prefetch`]) plan every kernel they try; the plan of the kernel they leave is handed
//! on (to the next of them, then to [`crate::context::Context`], which adopts it instead of
//! planning the same kernel again: [`crate::context::Context::with_planned`]). A kernel of
//! `default`, `emergent` or `auto` was so planned two or three times over before the backend
//! ran (softmax_stages on `default`: 19 rounds of lowering and scheduling, 10 of them for the
//! kernel `retime` left).
//!
//! Invariants: a plan is of exactly the function it was computed from ([`Planned::func`] is
//! that function with the added slots); whoever holds a plan drops it when it changes the
//! function; [`Planned::passes`] are the passes of the table the plan ran, in order, as
//! [`crate::context::Context::run`] would record them.

use crate::codegen::bir::{lower_function, Bir};
use crate::codegen::modulo::{schedule_loops, ModuloSchedule};
use crate::codegen::queues::{compute_queue_plan, QueuePlan};
use crate::codegen::schedule::schedule_bodies;
use crate::transform::remark::Remark;
use crate::MAX_EXPANSIONS;
use penguin::Function;

/// A kernel planned up to allocation (module doc).
#[derive(Clone, Debug)]
pub struct Planned {
    /// The kernel with the ring slots `expand` added.
    pub func: Function,
    pub bir: Bir,
    pub queue_plan: QueuePlan,
    /// The modulo schedule of every flat loop body.
    pub schedules: Vec<ModuloSchedule>,
    /// The ring slots `expand` added, for the log.
    pub expansions: Vec<Remark>,
    /// The passes of [`crate::passes::PASSES`] the plan ran, in order (`expand` when it ran,
    /// not when the slots ran out).
    pub passes: Vec<&'static str>,
}

/// The plan of `func` (module doc); `None` when it does not lower (the backend then reports
/// why).
pub fn compute_planned(func: &Function) -> Option<Planned> {
    let mut expanded = func.clone();
    let mut expansions = Vec::new();
    let mut passes = Vec::new();
    loop {
        let mut bir: Bir = lower_function(&expanded).ok()?;
        schedule_bodies(&expanded, &mut bir);
        let queue_plan = compute_queue_plan(&expanded, &bir);
        let schedules = schedule_loops(&expanded, &mut bir, &queue_plan);
        passes.extend(["lower-bir", "schedule", "modulo"]);
        if expansions.len() < MAX_EXPANSIONS {
            passes.push("expand");
            if let Some(note) = crate::expand_recurrence(&mut expanded, &bir, &schedules) {
                expansions.push(note);
                continue;
            }
        }
        return Some(Planned {
            func: expanded,
            bir,
            queue_plan,
            schedules,
            expansions,
            passes,
        });
    }
}
