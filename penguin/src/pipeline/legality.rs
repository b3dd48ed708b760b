//! The legality check of a software pipeline plan, on ISL (isl-rs): does the pipelined schedule
//! keep every dependence of the original loop?
//!
//! The check reads the ORIGINAL function and the plan ([`crate::pipeline::isl_model`] writes the
//! polyhedral model: domains, element-exact accesses with the modulo slots of the multi-buffered
//! tensors, and both schedules). It works one tensor at a time: a problem holds only the
//! instructions that touch that tensor, so each is small, and a violation names its tensor
//! without tagging. For every tensor the loop writes:
//! - FLOW: `UnionAccessInfo::from_sink(reads).set_must_source(writes)` under the original schedule:
//!   the **direct** (last writer) dependences;
//! - ANTI: sink = writes, may-source = reads, kill = writes: each read to the **next** write of
//!   its element;
//! - OUTPUT: sink = writes, must-source = writes: each write to the **next** write of its element.
//!
//! Why direct dependences suffice (the check is sound, and exactly as strict as checking every
//! pair of conflicting accesses): per element, the direct OUTPUT dependences chain all writes in
//! program order, so a schedule that keeps them keeps the order of all writes; a read then keeps
//! its last writer before it (direct FLOW, plus the chain for every earlier write) and its next
//! write after it (direct ANTI, plus the chain for every later write). So every read sees the
//! same value and every element ends with the same last write. Conversely the direct dependences
//! are a subset of all of them. Two accesses of one instance (an accumulating matmul reads and
//! writes its `dst`) are never reordered and carry no dependence.
//!
//! The pipelined schedule is an ISL schedule tree: the band `[outer ivs, iv]` inserted as a
//! partial schedule on the statement domains and shifted by each child's stage
//! (`ScheduleNode::band_shift`), its map followed (`flat_range_product`) by the child's rank in
//! `plan.order` and the position inside the child. A dependence `a -> b` is violated where the
//! pipelined time of `b` is not after that of `a`: `dep ∩ lex_ge(pipelined, pipelined)`.
//!
//! The trip count is the parameter `N` everywhere (domains `lb <= iv < N`); it is bound to the
//! loop's upper bound only when a verdict is read off a violation set, so the work ISL does is the
//! same for any trip count. Dependences across iterations of the loops around the pipelined loop
//! are never reordered; the model tags memory with those loops' ivs, so they are not computed.
//!
//! Result order: by tensor (entity order), then kind (flow, anti, output), then source and sink
//! instruction. One violation per (kind, tensor, source, sink), with the lexicographically first
//! violating pair (source iteration first, then sink).

use super::isl_model::{LoopModel, TRIP_PARAM};
use super::plan::{DepKind, PipelinePlan, Violation};
use crate::entities::{Axis, Inst, Tensor};
use crate::ir::Function;
use cranelift_entity::EntityRef;
use isl_rs::{
    Context, DimType, LibISLError, MultiUnionPwAff, Schedule, Set, UnionAccessInfo, UnionMap,
    UnionSet,
};

/// What the check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LegalityReport {
    /// Every dependence the pipelined schedule reverses (empty: the plan is legal).
    pub violations: Vec<Violation>,
    /// Pairs of instructions (source, sink) with a flow dependence on some tensor, counted per
    /// tensor, for the log.
    pub flow: usize,
    /// The same for anti dependences.
    pub anti: usize,
    /// The same for output dependences.
    pub output: usize,
}

impl LegalityReport {
    pub fn is_legal(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Why the check could not give a verdict.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LegalityError {
    /// ISL reported an error (an internal failure or a model it could not read).
    #[error("the ISL legality check failed while {during}: {message}")]
    Isl {
        during: &'static str,
        message: String,
    },
    /// The function or the plan holds something the check cannot model.
    #[error("the legality check cannot model this loop: {0}")]
    Unsupported(String),
}

fn isl(during: &'static str) -> impl FnOnce(LibISLError) -> LegalityError {
    move |e| LegalityError::Isl {
        during,
        message: e.to_string(),
    }
}

/// Computes the FLOW/ANTI/OUTPUT dependences of `func` (the ORIGINAL, un-pipelined function) with
/// the multi-buffered layout of `plan.buffers` (slot = original iteration mod count), and returns
/// every dependence the pipelined schedule of `plan` reverses (at most one per (kind, tensor,
/// source inst, sink inst), each with its lexicographically first violating pair). Empty = legal.
pub fn compute_violations(
    func: &Function,
    plan: &PipelinePlan,
) -> Result<LegalityReport, LegalityError> {
    let model = LoopModel::build(func, plan).map_err(LegalityError::Unsupported)?;
    let mut report = LegalityReport::default();
    if model.insts.is_empty() {
        return Ok(report);
    }
    // Declared first, dropped last: every ISL object below borrows this context.
    let ctx = Context::alloc();
    let checker = Checker::new(&ctx, func, plan, &model)?;
    for tensor in model.written_tensors(func) {
        checker.check_tensor(tensor, &mut report)?;
    }
    Ok(report)
}

/// The ISL objects shared by the per-tensor problems of one loop.
struct Checker<'a> {
    ctx: &'a Context,
    func: &'a Function,
    plan: &'a PipelinePlan,
    model: &'a LoopModel,
    /// The original schedule of every instruction of the loop.
    original: UnionMap,
    /// The pipelined schedule of every instruction of the loop.
    pipelined: UnionMap,
    /// `[N] -> { : N = ub }`: binds the trip count when a verdict is read.
    trip: Set,
}

fn union_text(pieces: &[String]) -> String {
    format!("[{TRIP_PARAM}] -> {{ {} }}", pieces.join("; "))
}

impl<'a> Checker<'a> {
    fn new(
        ctx: &'a Context,
        func: &'a Function,
        plan: &'a PipelinePlan,
        model: &'a LoopModel,
    ) -> Result<Self, LegalityError> {
        let unsupported = LegalityError::Unsupported;
        let mut domains = Vec::new();
        let mut original = Vec::new();
        let mut band = Vec::new();
        let mut shift = Vec::new();
        let mut inner = Vec::new();
        for m in &model.insts {
            domains.push(model.domain(func, m).map_err(unsupported)?);
            original.push(model.original_schedule(m).map_err(unsupported)?);
            band.push(model.band(m));
            shift.push(model.band_shift(plan, m));
            inner.push(model.in_iteration(plan, m).map_err(unsupported)?);
        }
        let domain = UnionSet::read_from_str(ctx, &union_text(&domains))
            .map_err(isl("reading the statement domains"))?;
        let original = UnionMap::read_from_str(ctx, &union_text(&original))
            .map_err(isl("reading the original schedule"))?
            .intersect_domain(domain.copy().map_err(isl("copying the domains"))?)
            .map_err(isl("restricting the original schedule"))?;
        let band = MultiUnionPwAff::from_union_map(
            UnionMap::read_from_str(ctx, &union_text(&band)).map_err(isl("reading the band"))?,
        )
        .map_err(isl("building the band"))?;
        let shift = MultiUnionPwAff::from_union_map(
            UnionMap::read_from_str(ctx, &union_text(&shift))
                .map_err(isl("reading the stage shifts"))?,
        )
        .map_err(isl("building the stage shifts"))?;
        let shifted = Schedule::from_domain(domain)
            .map_err(isl("building the schedule tree"))?
            .insert_partial_schedule(band)
            .map_err(isl("inserting the band"))?
            .get_root()
            .map_err(isl("walking the schedule tree"))?
            .child(0)
            .map_err(isl("walking the schedule tree"))?
            .band_shift(shift)
            .map_err(isl("shifting the band by stage"))?
            .get_schedule()
            .map_err(isl("reading back the schedule tree"))?
            .get_map()
            .map_err(isl("reading the schedule map"))?;
        let inner = UnionMap::read_from_str(ctx, &union_text(&inner))
            .map_err(isl("reading the in-iteration order"))?;
        let pipelined = shifted
            .flat_range_product(inner)
            .map_err(isl("appending the in-iteration order"))?;
        let ub = func.axes[plan.axis].ub;
        let trip = Set::read_from_str(
            ctx,
            &format!("[{TRIP_PARAM}] -> {{ : {TRIP_PARAM} = {ub} }}"),
        )
        .map_err(isl("reading the trip count"))?;
        Ok(Checker {
            ctx,
            func,
            plan,
            model,
            original,
            pipelined,
            trip,
        })
    }

    /// Checks the dependences carried by `tensor`, adding to `report`.
    fn check_tensor(
        &self,
        tensor: Tensor,
        report: &mut LegalityReport,
    ) -> Result<(), LegalityError> {
        let acc = self
            .model
            .accesses_of(self.func, self.plan, tensor)
            .map_err(LegalityError::Unsupported)?;
        if acc.writes.is_empty() {
            return Ok(());
        }
        let ctx = self.ctx;
        let read_map = |pieces: &[String]| -> Result<UnionMap, LegalityError> {
            if pieces.is_empty() {
                UnionMap::read_from_str(ctx, &format!("[{TRIP_PARAM}] -> {{ }}"))
                    .map_err(isl("reading an empty access relation"))
            } else {
                UnionMap::read_from_str(ctx, &union_text(pieces))
                    .map_err(isl("reading the access relations"))
            }
        };
        let reads = read_map(&acc.reads)?;
        let writes = read_map(&acc.writes)?;
        let stmts = reads
            .copy()
            .map_err(isl("copying the reads"))?
            .domain()
            .map_err(isl("taking the accessing statements"))?
            .union(
                writes
                    .copy()
                    .map_err(isl("copying the writes"))?
                    .domain()
                    .map_err(isl("taking the accessing statements"))?,
            )
            .map_err(isl("taking the accessing statements"))?;
        let original = self
            .original
            .copy()
            .map_err(isl("copying the original schedule"))?
            .intersect_domain(stmts.copy().map_err(isl("copying the statements"))?)
            .map_err(isl("restricting the original schedule"))?;
        let pipelined = self
            .pipelined
            .copy()
            .map_err(isl("copying the pipelined schedule"))?
            .intersect_domain(stmts)
            .map_err(isl("restricting the pipelined schedule"))?;
        // Pairs of instances whose pipelined order is not the dependence's direction.
        let reversed = pipelined
            .copy()
            .map_err(isl("copying the pipelined schedule"))?
            .lex_ge_union_map(pipelined)
            .map_err(isl("ordering the pipelined schedule"))?;

        let copy = |m: &UnionMap| m.copy().map_err(isl("copying an access relation"));
        let flow = UnionAccessInfo::from_sink(copy(&reads)?)
            .map_err(isl("computing flow dependences"))?
            .set_must_source(copy(&writes)?)
            .map_err(isl("computing flow dependences"))?
            .set_schedule_map(copy(&original)?)
            .map_err(isl("computing flow dependences"))?
            .compute_flow()
            .map_err(isl("computing flow dependences"))?
            .get_may_dependence()
            .map_err(isl("computing flow dependences"))?;
        let anti = UnionAccessInfo::from_sink(copy(&writes)?)
            .map_err(isl("computing anti dependences"))?
            .set_may_source(reads)
            .map_err(isl("computing anti dependences"))?
            .set_kill(copy(&writes)?)
            .map_err(isl("computing anti dependences"))?
            .set_schedule_map(copy(&original)?)
            .map_err(isl("computing anti dependences"))?
            .compute_flow()
            .map_err(isl("computing anti dependences"))?
            .get_may_dependence()
            .map_err(isl("computing anti dependences"))?;
        let output = UnionAccessInfo::from_sink(copy(&writes)?)
            .map_err(isl("computing output dependences"))?
            .set_must_source(writes)
            .map_err(isl("computing output dependences"))?
            .set_schedule_map(original)
            .map_err(isl("computing output dependences"))?
            .compute_flow()
            .map_err(isl("computing output dependences"))?
            .get_may_dependence()
            .map_err(isl("computing output dependences"))?;

        for (kind, dep) in [
            (DepKind::Flow, flow),
            (DepKind::Anti, anti),
            (DepKind::Output, output),
        ] {
            let dep = dep
                .intersect_params(self.trip.copy().map_err(isl("copying the trip count"))?)
                .map_err(isl("binding the trip count"))?;
            let count = self.count_pairs(&dep)?;
            match kind {
                DepKind::Flow => report.flow += count,
                DepKind::Anti => report.anti += count,
                DepKind::Output => report.output += count,
            }
            let violated = dep
                .intersect(copy(&reversed)?)
                .map_err(isl("intersecting dependences with the pipelined order"))?;
            if violated.is_empty().map_err(isl("testing for violations"))? {
                continue;
            }
            let mut found = self.decode(kind, tensor, &violated)?;
            found.sort_by_key(|v| (v.source, v.sink));
            report.violations.extend(found);
        }
        Ok(())
    }

    /// The number of non-empty (source, sink) relations in `dep`.
    fn count_pairs(&self, dep: &UnionMap) -> Result<usize, LegalityError> {
        let list = dep.get_map_list().map_err(isl("listing dependences"))?;
        let n = list.size().map_err(isl("listing dependences"))?;
        let mut count = 0;
        for k in 0..n {
            let map = list.get_at(k).map_err(isl("listing dependences"))?;
            if !map.is_empty().map_err(isl("listing dependences"))? {
                count += 1;
            }
        }
        Ok(count)
    }

    /// One violation per (source, sink) relation of `violated`, at its lexicographic minimum.
    fn decode(
        &self,
        kind: DepKind,
        tensor: Tensor,
        violated: &UnionMap,
    ) -> Result<Vec<Violation>, LegalityError> {
        let list = violated.get_map_list().map_err(isl("listing violations"))?;
        let n = list.size().map_err(isl("listing violations"))?;
        let mut out = Vec::new();
        for k in 0..n {
            let map = list.get_at(k).map_err(isl("listing violations"))?;
            if map.is_empty().map_err(isl("testing a violation"))? {
                continue;
            }
            let source = self.inst_of(map.get_tuple_name(DimType::In).map_err(isl("naming"))?)?;
            let sink = self.inst_of(map.get_tuple_name(DimType::Out).map_err(isl("naming"))?)?;
            let n_in = map.dim(DimType::In).map_err(isl("decoding a violation"))?;
            let n_out = map.dim(DimType::Out).map_err(isl("decoding a violation"))?;
            let point = map
                .wrap()
                .map_err(isl("decoding a violation"))?
                .lexmin()
                .map_err(isl("finding the first violation"))?
                .sample_point()
                .map_err(isl("finding the first violation"))?;
            let mut coords = Vec::with_capacity((n_in + n_out) as usize);
            for q in 0..n_in + n_out {
                let v = point
                    .get_coordinate_val(DimType::Set, q)
                    .map_err(isl("decoding a violation"))?;
                coords.push(v.get_num_si().map_err(isl("decoding a violation"))?);
            }
            let iter = |inst: Inst, values: &[i64]| -> Vec<(Axis, i64)> {
                let loops = &self
                    .model
                    .insts
                    .iter()
                    .find(|m| m.inst == inst)
                    .expect("inst_of only returns instructions of the model")
                    .loops;
                loops.iter().copied().zip(values.iter().copied()).collect()
            };
            out.push(Violation {
                kind,
                tensor,
                source,
                sink,
                source_iter: iter(source, &coords[..n_in as usize]),
                sink_iter: iter(sink, &coords[n_in as usize..]),
            });
        }
        Ok(out)
    }

    /// The instruction of a statement tuple name `S<k>`.
    fn inst_of(&self, name: &str) -> Result<Inst, LegalityError> {
        name.strip_prefix('S')
            .and_then(|k| k.parse::<usize>().ok())
            .map(Inst::new)
            .filter(|inst| self.model.insts.iter().any(|m| m.inst == *inst))
            .ok_or_else(|| LegalityError::Isl {
                during: "decoding a violation",
                message: format!("unexpected statement `{name}`"),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ISL links and answers: a forward relation is inside the lexicographic `<`, a backward one
    /// is not, and malformed text is an error rather than a panic.
    #[test]
    fn isl_links_and_orders() {
        let ctx = Context::alloc();
        let lex_forward = |text: &str| -> Result<bool, LibISLError> {
            let rel = UnionMap::read_from_str(&ctx, text)?;
            let lt = rel
                .copy()?
                .domain()?
                .lex_lt_union_set(rel.copy()?.range()?)?;
            rel.is_subset(&lt)
        };
        assert!(lex_forward("{ [i, 0] -> [i + 1, 2] : 0 <= i < 8 }").unwrap());
        assert!(!lex_forward("{ [i, 1] -> [i, 0] : 0 <= i < 8 }").unwrap());
        assert!(lex_forward("{ [i] -> ").is_err());
    }
}
