//! The legality check of a software pipeline plan, on ISL (isl-rs): does the pipelined schedule
//! keep every dependence of the original loop?
//!
//! The check reads the ORIGINAL function and the plan; [`crate::pipeline::isl_model`] writes the
//! polyhedral model (statement domains, element-exact accesses with the modulo slots of the
//! multi-buffered tensors, both schedules). It works **one tensor at a time**: a problem holds only
//! the instructions that touch that tensor, so each is small, its cost does not grow with the rest
//! of the body, and a violation names its tensor without tagging.
//!
//! **Which dependences.** The verdict compares the two schedules on every pair of *conflicting*
//! instances: two accesses to one element, at least one a write, ordered by the original schedule
//! (FLOW write→read, ANTI read→write, OUTPUT write→write). That is all the memory-based
//! dependences, the transitive closure of the direct ones; a schedule keeps all of them exactly
//! when it keeps the direct ones (per element, the direct OUTPUT dependences chain the writes in
//! program order; a read keeps its last writer before it and its next write after it), so the
//! check is sound and no stricter than it must be. When a tensor has a violation, the report gives
//! the reversed **direct** dependences, the root causes, computed by `compute_flow`:
//! FLOW `from_sink(reads).set_must_source(writes)` (the last writer), ANTI `from_sink(writes)
//! .set_may_source(reads).set_kill(writes)` (a read to the next write), OUTPUT `from_sink(writes)
//! .set_must_source(writes)` (a write to the next one). Two accesses of one instance (an
//! accumulating matmul reads and writes its `dst`) are never reordered and carry no dependence.
//!
//! **The pipelined schedule** is an ISL schedule tree: the band `[outer ivs, iv]` inserted as a
//! partial schedule on the statement domains and shifted by each child's stage
//! (`ScheduleNode::band_shift`), its partial schedule followed (`flat_range_product`) by the
//! child's rank in `plan.order` and the position inside the child. A dependence `a -> b` is
//! violated where the pipelined time of `b` is not after that of `a`
//! (`lex_ge_at_multi_union_pw_aff`).
//!
//! **Trip count.** It is the parameter `N` everywhere (domains `lb <= iv < N`), bound to the
//! loop's upper bound only once the dependences are ordered, so the work ISL does is the same for
//! any trip count (the `legality` benchmark shows it flat from 16 to 1,000,000). Dependences
//! across iterations of the loops around the pipelined loop are never reordered; the model tags
//! memory with those loops' ivs, so they are not computed.
//!
//! **Fast path** (`LegalityOptions::prefilter`, on by default). A tensor whose every pair of
//! accesses (at least one a write) keeps its order under the plan's stages and order, at distance
//! 0 and at the smallest distance at which its slots repeat, cannot have a violation and skips
//! ISL ([`crate::pipeline::prefilter`]: sound, not complete; a tensor it cannot prove goes to
//! ISL). The benchmark measures both ways.
//!
//! Result order: by tensor (entity order), then kind (flow, anti, output), then source and sink
//! instruction. One violation per (kind, tensor, source, sink), with the lexicographically first
//! violating pair (source iteration first, then sink).

use super::isl_model::{LoopModel, ModelError, TRIP_PARAM};
use super::plan::{DepKind, PipelinePlan, Violation};
use super::prefilter::compute_order_kept;
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
    /// Pairs of instructions (source, sink) with a flow dependence (the source writes an element
    /// the sink later reads), counted per tensor, over the tensors checked with ISL. A pair whose
    /// instructions both read and write the tensor counts under each kind that applies.
    pub flow: usize,
    /// The same for anti dependences.
    pub anti: usize,
    /// The same for output dependences.
    pub output: usize,
    /// Tensors written in the loop whose dependences ISL checked.
    pub tensors_checked: usize,
    /// Tensors written in the loop that the fast path proved order-preserving without ISL.
    pub tensors_preserved: usize,
}

impl LegalityReport {
    pub fn is_legal(&self) -> bool {
        self.violations.is_empty()
    }
}

/// How to run the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegalityOptions {
    /// Skip ISL for tensors whose instances the pipelined schedule provably keeps in order.
    pub prefilter: bool,
}

impl Default for LegalityOptions {
    fn default() -> Self {
        LegalityOptions { prefilter: true }
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
    Unsupported(ModelError),
}

fn isl(during: &'static str) -> impl FnOnce(LibISLError) -> LegalityError {
    move |e| LegalityError::Isl {
        during,
        message: e.to_string(),
    }
}

/// The instances of the statements that access a tensor: the domains of its reads and writes.
fn statement_domain(reads: &UnionMap, writes: &UnionMap) -> Result<UnionSet, LegalityError> {
    reads
        .copy()
        .map_err(isl("copying the reads"))?
        .domain()
        .map_err(isl("taking the statement domains"))?
        .union(
            writes
                .copy()
                .map_err(isl("copying the writes"))?
                .domain()
                .map_err(isl("taking the statement domains"))?,
        )
        .map_err(isl("taking the statement domains"))
}

/// Computes the FLOW/ANTI/OUTPUT dependences of `func` (the ORIGINAL, un-pipelined function) with
/// the multi-buffered layout of `plan.buffers` (slot = original iteration mod count), and returns
/// every dependence the pipelined schedule of `plan` reverses (at most one per (kind, tensor,
/// source inst, sink inst), each with its lexicographically first violating pair). Empty = legal.
///
/// `func` must pass the verifier; a plan that does not fit the loop (stage or order counts, an
/// order that is not a permutation, a loop not in the function) is [`LegalityError::Unsupported`].
pub fn compute_violations(
    func: &Function,
    plan: &PipelinePlan,
) -> Result<LegalityReport, LegalityError> {
    compute_violations_with(func, plan, &LegalityOptions::default())
}

/// [`compute_violations`] with options.
pub fn compute_violations_with(
    func: &Function,
    plan: &PipelinePlan,
    options: &LegalityOptions,
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
        checker.check_tensor(tensor, options, &mut report)?;
    }
    Ok(report)
}

/// What the per-tensor problems of one loop share: the model, rendered once per instruction.
struct Checker<'a> {
    ctx: &'a Context,
    func: &'a Function,
    plan: &'a PipelinePlan,
    model: &'a LoopModel,
    /// Per instruction of the model: its original schedule on its domain, and its band shift
    /// with its in-iteration order (ISL text pieces).
    original: Vec<String>,
    /// The same without the domain constraints (a schedule function on the universe is
    /// cheaper to order by than one piecewise on the domain), in the full and (for flat
    /// instructions; empty otherwise) the compact form.
    original_universe: [Vec<String>; 2],
    /// The band shift and in-iteration order, full and compact.
    shift_and_order: [Vec<String>; 2],
    /// `[N] -> { : N = ub }`: binds the trip count when a verdict is read.
    trip: Set,
}

fn union_text(pieces: &[String]) -> String {
    format!("[{TRIP_PARAM}] -> {{ {} }}", pieces.join("; "))
}

/// The pieces of `all` for the instructions `insts` (indices into the model), as a union.
fn pieces(all: &[String], insts: &[usize]) -> String {
    let picked: Vec<String> = insts.iter().map(|&k| all[k].clone()).collect();
    union_text(&picked)
}

impl<'a> Checker<'a> {
    fn new(
        ctx: &'a Context,
        func: &'a Function,
        plan: &'a PipelinePlan,
        model: &'a LoopModel,
    ) -> Result<Self, LegalityError> {
        let unsupported = LegalityError::Unsupported;
        let n = model.insts.len();
        let mut original = Vec::with_capacity(n);
        let mut original_universe = [Vec::with_capacity(n), Vec::with_capacity(n)];
        let mut shift_and_order = [Vec::with_capacity(n), Vec::with_capacity(n)];
        for m in &model.insts {
            original.push(model.original_schedule(func, m).map_err(unsupported)?);
            for compact in [false, true] {
                let (u, s) = if compact && !LoopModel::is_flat(m) {
                    (String::new(), String::new())
                } else {
                    (
                        model
                            .original_schedule_universe(m, compact)
                            .map_err(unsupported)?,
                        model
                            .shift_and_order(plan, m, compact)
                            .map_err(unsupported)?,
                    )
                };
                original_universe[usize::from(compact)].push(u);
                shift_and_order[usize::from(compact)].push(s);
            }
        }
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
            original_universe,
            shift_and_order,
            trip,
        })
    }

    /// The original and the pipelined schedules of the instructions `insts` (whose instances
    /// are `domain`), as multi-affine functions. The pipelined one is read off an ISL schedule
    /// tree: the band `[outer ivs, iv]` (the original schedule's first dimensions) on the
    /// domain, shifted by stage (`band_shift`), followed by the in-iteration order.
    fn schedules(
        &self,
        insts: &[usize],
        domain: UnionSet,
    ) -> Result<(MultiUnionPwAff, MultiUnionPwAff), LegalityError> {
        let ctx = self.ctx;
        // The compact form when every instruction of the problem is flat.
        let form = usize::from(
            insts
                .iter()
                .all(|&k| LoopModel::is_flat(&self.model.insts[k])),
        );
        let original = MultiUnionPwAff::from_union_map(
            UnionMap::read_from_str(ctx, &pieces(&self.original_universe[form], insts))
                .map_err(isl("reading the original schedule"))?,
        )
        .map_err(isl("reading the original schedule"))?;
        let band_dims = self.model.band_dims() as u32;
        let all_dims = original
            .dim(DimType::Out)
            .map_err(isl("reading the original schedule"))? as u32;
        let band = original
            .copy()
            .map_err(isl("copying the original schedule"))?
            .drop_dims(DimType::Out, band_dims, all_dims - band_dims)
            .map_err(isl("taking the band"))?;
        let rest = MultiUnionPwAff::from_union_map(
            UnionMap::read_from_str(ctx, &pieces(&self.shift_and_order[form], insts))
                .map_err(isl("reading the stage shifts"))?,
        )
        .map_err(isl("reading the stage shifts"))?;
        let rest_dims = rest
            .dim(DimType::Out)
            .map_err(isl("reading the stage shifts"))? as u32;
        let shift = rest
            .copy()
            .map_err(isl("copying the stage shifts"))?
            .drop_dims(DimType::Out, band_dims, rest_dims - band_dims)
            .map_err(isl("taking the stage shifts"))?;
        let inner = rest
            .drop_dims(DimType::Out, 0, band_dims)
            .map_err(isl("taking the in-iteration order"))?;
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
            .band_get_partial_schedule()
            .map_err(isl("reading the shifted band"))?;
        let pipelined = shifted
            .flat_range_product(inner)
            .map_err(isl("appending the in-iteration order"))?;
        Ok((original, pipelined))
    }

    /// Checks the dependences carried by `tensor`, adding to `report`.
    fn check_tensor(
        &self,
        tensor: Tensor,
        options: &LegalityOptions,
        report: &mut LegalityReport,
    ) -> Result<(), LegalityError> {
        let acc = self
            .model
            .accesses_of(self.func, self.plan, tensor)
            .map_err(LegalityError::Unsupported)?;
        if acc.writes.is_empty() {
            return Ok(());
        }
        if options.prefilter && compute_order_kept(self.model, self.plan, tensor, &acc) {
            report.tensors_preserved += 1;
            return Ok(());
        }
        report.tensors_checked += 1;
        let ctx = self.ctx;
        let reads = UnionMap::read_from_str(ctx, &union_text(&acc.reads))
            .map_err(isl("reading the access relations"))?;
        let writes = UnionMap::read_from_str(ctx, &union_text(&acc.writes))
            .map_err(isl("reading the access relations"))?;
        let (original, pipelined) =
            self.schedules(&acc.insts, statement_domain(&reads, &writes)?)?;
        let copy = |m: &UnionMap| m.copy().map_err(isl("copying an access relation"));
        let trip = || self.trip.copy().map_err(isl("copying the trip count"));

        // Every pair of conflicting instances (one element, at least one write) in the original
        // order; then those the pipelined schedule does not run in that order.
        let accesses = copy(&reads)?
            .union(copy(&writes)?)
            .map_err(isl("collecting accesses"))?;
        let deps = copy(&writes)?
            .apply_range(accesses.reverse().map_err(isl("reversing an access"))?)
            .map_err(isl("pairing conflicting accesses"))?
            .union(
                copy(&reads)?
                    .apply_range(
                        copy(&writes)?
                            .reverse()
                            .map_err(isl("reversing an access"))?,
                    )
                    .map_err(isl("pairing conflicting accesses"))?,
            )
            .map_err(isl("pairing conflicting accesses"))?
            .lex_lt_at_multi_union_pw_aff(original.copy().map_err(isl("copying a schedule"))?)
            .map_err(isl("ordering conflicting accesses"))?
            .intersect_params(trip()?)
            .map_err(isl("binding the trip count"))?;
        self.count_kinds(&deps, &acc.readers, &acc.writers, report)?;
        let reversed = |dep: UnionMap| -> Result<UnionMap, LegalityError> {
            dep.lex_ge_at_multi_union_pw_aff(pipelined.copy().map_err(isl("copying a schedule"))?)
                .map_err(isl("comparing with the pipelined order"))
        };
        if reversed(deps)?
            .is_empty()
            .map_err(isl("testing for violations"))?
        {
            return Ok(());
        }

        // Report the direct dependences that are reversed: the root causes.
        let original_map = UnionMap::read_from_str(ctx, &pieces(&self.original, &acc.insts))
            .map_err(isl("reading the original schedule"))?;
        let mut found = Vec::new();
        for (kind, dep) in self.direct_dependences(&reads, &writes, &original_map)? {
            let dep = dep
                .intersect_params(trip()?)
                .map_err(isl("binding the trip count"))?;
            found.extend(self.decode(kind, tensor, &reversed(dep)?)?);
        }
        if found.is_empty() {
            // Not reached when the two formulations agree; never drop a violation.
            for (kind, src, snk) in [
                (DepKind::Flow, &writes, &reads),
                (DepKind::Anti, &reads, &writes),
                (DepKind::Output, &writes, &writes),
            ] {
                let dep = copy(src)?
                    .apply_range(copy(snk)?.reverse().map_err(isl("reversing an access"))?)
                    .map_err(isl("pairing conflicting accesses"))?
                    .lex_lt_at_multi_union_pw_aff(
                        original.copy().map_err(isl("copying a schedule"))?,
                    )
                    .map_err(isl("ordering conflicting accesses"))?
                    .intersect_params(trip()?)
                    .map_err(isl("binding the trip count"))?;
                found.extend(self.decode(kind, tensor, &reversed(dep)?)?);
            }
        }
        found.sort_by_key(|v| (v.kind, v.source, v.sink));
        report.violations.extend(found);
        Ok(())
    }

    /// The direct dependences under the original schedule: FLOW from the last writer, ANTI to the
    /// next write, OUTPUT to the next write.
    fn direct_dependences(
        &self,
        reads: &UnionMap,
        writes: &UnionMap,
        original: &UnionMap,
    ) -> Result<[(DepKind, UnionMap); 3], LegalityError> {
        let copy = |m: &UnionMap| m.copy().map_err(isl("copying an access relation"));
        let flow = UnionAccessInfo::from_sink(copy(reads)?)
            .map_err(isl("computing flow dependences"))?
            .set_must_source(copy(writes)?)
            .map_err(isl("computing flow dependences"))?
            .set_schedule_map(copy(original)?)
            .map_err(isl("computing flow dependences"))?
            .compute_flow()
            .map_err(isl("computing flow dependences"))?
            .get_may_dependence()
            .map_err(isl("computing flow dependences"))?;
        let anti = UnionAccessInfo::from_sink(copy(writes)?)
            .map_err(isl("computing anti dependences"))?
            .set_may_source(copy(reads)?)
            .map_err(isl("computing anti dependences"))?
            .set_kill(copy(writes)?)
            .map_err(isl("computing anti dependences"))?
            .set_schedule_map(copy(original)?)
            .map_err(isl("computing anti dependences"))?
            .compute_flow()
            .map_err(isl("computing anti dependences"))?
            .get_may_dependence()
            .map_err(isl("computing anti dependences"))?;
        let output = UnionAccessInfo::from_sink(copy(writes)?)
            .map_err(isl("computing output dependences"))?
            .set_must_source(copy(writes)?)
            .map_err(isl("computing output dependences"))?
            .set_schedule_map(copy(original)?)
            .map_err(isl("computing output dependences"))?
            .compute_flow()
            .map_err(isl("computing output dependences"))?
            .get_may_dependence()
            .map_err(isl("computing output dependences"))?;
        Ok([
            (DepKind::Flow, flow),
            (DepKind::Anti, anti),
            (DepKind::Output, output),
        ])
    }

    /// Counts the (source, sink) pairs of `deps` with a dependence, for the log: a pair counts as
    /// flow when the source writes the tensor and the sink reads it, anti when the source reads
    /// and the sink writes, output when both write (a pair of instructions that both read and
    /// write the tensor counts under each kind that applies).
    fn count_kinds(
        &self,
        deps: &UnionMap,
        readers: &[Inst],
        writers: &[Inst],
        report: &mut LegalityReport,
    ) -> Result<(), LegalityError> {
        let list = deps.get_map_list().map_err(isl("listing dependences"))?;
        let n = list.size().map_err(isl("listing dependences"))?;
        for k in 0..n {
            let map = list.get_at(k).map_err(isl("listing dependences"))?;
            if map.is_empty().map_err(isl("listing dependences"))? {
                continue;
            }
            let source = self.inst_of(map.get_tuple_name(DimType::In).map_err(isl("naming"))?)?;
            let sink = self.inst_of(map.get_tuple_name(DimType::Out).map_err(isl("naming"))?)?;
            let (sw, sr) = (writers.contains(&source), readers.contains(&source));
            let (kw, kr) = (writers.contains(&sink), readers.contains(&sink));
            report.flow += usize::from(sw && kr);
            report.anti += usize::from(sr && kw);
            report.output += usize::from(sw && kw);
        }
        Ok(())
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
