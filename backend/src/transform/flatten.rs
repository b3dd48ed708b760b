//! Flattening of short, issue-bound pipelined loops: an annotated loop of few iterations whose
//! transfers keep `sp` busier than its compute keeps the engines is unrolled fully into the
//! un-annotated loop around it, whose pipelining then overlaps its executions.
//!
//! The annotated pipeliner turns a loop of `N` iterations in `S` stages into an extended loop of
//! `N + S − 1` iterations, `S − 1` of which fill or drain the pipeline each time the loop runs;
//! when `N ≤ S` the loop never reaches a steady state at all (transpose_stages: four tiles in four
//! stages). Its executions overlap only through the loop around it. For a loop bound by its
//! compute, the carry across executions ([`crate::transform::emergent::carry`]) does that: the next
//! execution's first loads go in this one's drain, where `sp` idles. A loop bound by `sp`'s issue
//! slots has no idle drain (the carry declines it), and it is bound there because a DMA names its
//! queues statically (MACHINE.md): its few transfers per iteration must each be split into many
//! short pieces, one issue slot each, to use the 16 queues. Unrolled, the same bytes move as more
//! transfers in fewer pieces, as the emergent path's unroll does for an un-annotated loop
//! ([`crate::transform::unroll`]).
//!
//! [`flatten_short_pipelines`] takes an extended loop of at most [`MAX_ITERATIONS`] iterations
//! whose body is instruction statements, that is issue-bound as the carry sees it (`sp`'s issue
//! cycles per iteration at least the body's compute cycles per iteration of the steady state),
//! and that stands in a loop of at least two iterations that pipelines the copies: an
//! un-annotated one (which the emergent pass pipelines next), or one the annotated pipeliner
//! extended and did not peel (nested pipelining: the copies run in the user's stage of the
//! loop they replace, under its guards and with its stage tag, and the outer loop's stages
//! overlap the executions; tests/good's restart_nests three_in_two, five chunks in three stages
//! in a loop of four in two, 24,532 → 11,637 cycles). It unrolls it fully there: iteration `j` of the loop becomes a copy of its
//! body with the induction variable replaced by `lb + j`, guards that the constant decides
//! dropped (the statement with them when they fail), in iteration order. A peeled loop (`--peel`)
//! is its steady state, with its prologue and epilogue already copies beside it in the enclosing
//! body: its copies go between them, and the result is the same straight-line body. The loop stays
//! behind the copies, empty, of trip 0 (as a full unroll of [`crate::transform::unroll`] leaves it), and the
//! lowering to BIR skips it. Measured: transpose_stages and transpose_mode_b (issue-bound, four
//! tiles in four stages) run 0.47× as long flattened (23,260 → 10,875 cycles, as fast as the
//! emergent path); flattening compute-bound loops too lost to the carry (`tests/good`'s
//! carry_executions: 50,684 flattened against 46,327 carried, and 25,420 against 22,162 for its
//! three-stage kernel), although it gained on matmul_mode_b (81,396 against 87,503).
//!
//! The user's stages keep their meaning: the copies run exactly the instances of the extended
//! loop, in its order (its fill, its iterations that run every stage, its drain), so each engine
//! sees the sequence the annotated pipeliner built. Only the enclosing loop's pipelining is new.
//!
//! Every access of a ring along the loop now names a constant slot. So that the enclosing loop
//! can ring each value and issue its load ahead, each value the enclosing body writes whole gets
//! a tile of its own (a rename by live range, `t.f0`, `t.f1`, ...): in the enclosing body's
//! statements in order, copies included, a whole, unguarded write that does not read the tile
//! starts a new tile, and every later access of the same slot up to the next such write uses it.
//! A tensor is renamed only when every one of its accesses is a statement directly in the
//! enclosing body or a copy, and each read and each partial or guarded write finds a tile started
//! before it there; otherwise (a value that flows in from an earlier iteration of the enclosing
//! loop, or from a loop nested beside) it keeps its slots. A loop whose renamed tiles do not fit
//! SBUF or PSUM beside every other tensor is left as it is.
//!
//! The copies and the tiles are made with [`penguin::edit`].
//!
//! Invariants: the function verifies after the pass; every copied statement keeps its spans and
//! annotations, and has no stage tag (the enclosing loop's pipelining gives its own), or, in an
//! extended loop, the guards, annotations and stage tag of the loop's statement besides its own
//! open guards; every
//! instance, and the order of the accesses to every memory location, are those of the extended
//! loop.

use crate::cost::budget;
use crate::cost::loop_cost::steady_issue_and_compute;
use crate::transform::decline::Decline;
use crate::transform::remark::Remark;
use cranelift_entity::SecondaryMap;
use penguin::affine::{AffineExpr, Predicate};
use penguin::edit::{self, Cursor, Subst};
use penguin::ir::{Memory, Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};
use std::collections::{BTreeMap, BTreeSet};

/// The most iterations of an extended loop that is flattened.
pub const MAX_ITERATIONS: i64 = 16;

/// Flattens every short, issue-bound annotated loop into the un-annotated loop around it (module
/// doc); returns the remarks, one per loop considered.
pub fn flatten_short_pipelines(func: &mut Function) -> Vec<Remark> {
    let mut log = Vec::new();
    let candidates: Vec<Axis> = func.axes.keys().collect();
    for l in candidates {
        let Some(p) = func.axes[l].attrs.pipelined else {
            continue;
        };
        let name = func.display_iv(l).to_string();
        let trip = func.axes[l].trip_count();
        if !(1..=MAX_ITERATIONS).contains(&trip) {
            continue;
        }
        let flat = func.axes[l]
            .body
            .iter()
            .all(|&s| matches!(func.stmts[s].kind, StmtKind::Insts(_)));
        let Some((Some(parent), _)) = edit::locate_loop(func, l) else {
            continue;
        };
        let pd = &func.axes[parent];
        // An un-annotated loop pipelines the copies; a loop the annotated pipeliner extended
        // (nested pipelining) runs them in the stage of the loop they replace, under its guards.
        let pipelines = match pd.attrs.pipelined {
            Some(outer) => !outer.peeled,
            None => pd.attrs.num_stages.is_none(),
        };
        let enclosing = pipelines && pd.attrs.multi_buffer.is_none() && pd.trip_count() >= 2;
        if !flat || !enclosing {
            continue;
        }
        let into = func.display_iv(parent).to_string();
        // Issue-bound, as the carry across executions sees it (`crate::transform::emergent::carry`).
        let (issue, compute) = steady_issue_and_compute(func, l, &p);
        let kept = |why| Remark::FlattenDeclined {
            iv: name.clone(),
            trip: p.orig_trip,
            stages: p.num_stages,
            why,
        };
        if issue < compute {
            log.push(kept(Decline::NotIssueBound { issue, compute }));
            continue;
        }
        // On a copy: a loop left as it is leaves no stray statement behind.
        let mut flat_func = func.clone();
        match flatten(&mut flat_func, l) {
            Ok(renamed) => {
                *func = flat_func;
                log.push(Remark::Flattened {
                    iv: name,
                    trip: p.orig_trip,
                    stages: p.num_stages,
                    peeled: p.peeled,
                    extended: trip,
                    into,
                    renamed,
                });
            }
            Err(why) => log.push(kept(why)),
        }
    }
    log
}

/// Whether `pred`, its expression a constant, holds (`Some`), or it still depends on a loop
/// (`None`).
fn decided(pred: &Predicate) -> Option<bool> {
    pred.expr
        .as_constant()
        .map(|_| pred.holds(&SecondaryMap::new()))
}

/// Unrolls loop `l` fully in its parent's block and renames its tiles by live range; returns the
/// renamed tensors with their tile counts, or why nothing changed.
fn flatten(func: &mut Function, l: Axis) -> Result<Vec<(String, usize)>, Decline> {
    let body = func.axes[l].body.clone();
    // The region renamed by live range: the parent's body, the loop replaced by its copies. The
    // candidates are the tensors touched only by its statements.
    let place = edit::locate_loop(func, l).expect("a loop of the verified tree is in the tree");
    let (parent, pos) = place;
    let siblings: Vec<Stmt> = func.block(parent).to_vec();
    let candidates = rename_candidates(func, l, &body, &siblings);
    let copies = unrolled_copies(func, l, &body)?;
    let region: Vec<Stmt> = siblings[..pos]
        .iter()
        .chain(&copies)
        .chain(&siblings[pos + 1..])
        .copied()
        .collect();
    // In a loop the annotated pipeliner extended, the copies carry the guards of the stage the
    // loop ran in: among the statements of that stage they guard nothing a live range must see.
    let ls = siblings[pos];
    let stage = parent
        .is_some_and(|p| func.axes[p].attrs.pipelined.is_some())
        .then(|| (func.stmts[ls].preds.clone(), func.stage_tags[ls]));
    let plan = live_ranges(func, &region, &candidates, stage.as_ref());
    // A ring along the loop must go: the loop leaves the program, and its slots with it.
    if let Some(t) = (func.tensors.keys())
        .find(|&t| func.tensors[t].block.iter().any(|b| b.axis == l) && !plan.contains_key(&t))
    {
        return Err(Decline::RingKeepsSlots {
            ring: func.display_name(t).to_string(),
        });
    }
    check_budget(func, &plan)?;
    let renamed = rename_tiles(func, plan);
    // The copies take the loop's place, which stays behind them, empty.
    Cursor::at(func, place).insert_before(copies);
    func.axes[l].lb = 0;
    func.axes[l].ub = 0;
    func.axes[l].body = Vec::new();
    func.axes[l].attrs.pipelined = None;
    Ok(renamed)
}

/// The tensors that flattening loop `l` (of statements `body`, among `siblings` in its parent's
/// block) may rename: local tiles touched only there, of no block dimension but the loop's.
fn rename_candidates(
    func: &Function,
    l: Axis,
    body: &[Stmt],
    siblings: &[Stmt],
) -> BTreeSet<Tensor> {
    let inside: BTreeSet<Stmt> = body.iter().chain(siblings).copied().collect();
    let mut touched: BTreeSet<Tensor> = BTreeSet::new();
    let mut outside: BTreeSet<Tensor> = BTreeSet::new();
    func.walk_stmts(|s, _| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                let ts = d.srcs.iter().chain([&d.dst]).map(|o| o.tensor);
                match inside.contains(&s) {
                    true => touched.extend(ts),
                    false => outside.extend(ts),
                }
            }
        }
    });
    touched
        .into_iter()
        .filter(|&t| {
            let td = &func.tensors[t];
            !outside.contains(&t)
                && td.kind == TensorKind::Local
                && td.memory != Memory::Hbm
                && td.block.iter().all(|b| b.axis == l)
                && td.block.len() <= 1
        })
        .collect()
}

/// The copies of loop `l`'s `body`, one per iteration in order (each statement's first one is
/// the statement itself, substituted), leaving out those whose guards fail; an error when a
/// statement of the body never runs.
fn unrolled_copies(func: &mut Function, l: Axis, body: &[Stmt]) -> Result<Vec<Stmt>, Decline> {
    // The copies, in iteration order, with the statements whose guards fail left out. Each
    // statement's first instance is the statement itself (substituted last: the copies are made
    // from it as written), the others copies.
    let mut instances: Vec<(i64, Stmt, Vec<Predicate>)> = Vec::new();
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    for v in lb..ub {
        let at = Subst::new().axis(l, AffineExpr::constant(v));
        for &s in body {
            let preds: Vec<Predicate> = func.stmts[s].preds.iter().map(|p| at.pred(p)).collect();
            if preds.iter().all(|p| decided(p) != Some(false)) {
                let open = preds.into_iter().filter(|p| decided(p).is_none()).collect();
                instances.push((v, s, open));
            }
        }
    }
    let mut copies: Vec<Stmt> = Vec::new();
    let mut firsts: Vec<(Stmt, i64)> = Vec::new();
    for (v, s, _) in &instances {
        if firsts.iter().any(|&(f, _)| f == *s) {
            let at = Subst::new().axis(l, AffineExpr::constant(*v));
            copies.push(edit::copy_stmt(func, *s, &at, &edit::tag("f", *v)));
        } else {
            firsts.push((*s, *v));
            copies.push(*s);
        }
    }
    if firsts.len() != body.len() {
        return Err(Decline::BodyNeverRuns);
    }
    for &(s, v) in &firsts {
        Subst::new().axis(l, AffineExpr::constant(v)).apply(func, s);
    }
    // The loop's statement: in a loop the annotated pipeliner extended, its guards and stage
    // are those of the stage the copies now run in.
    let (parent, pos) =
        edit::locate_loop(func, l).expect("a loop of the verified tree is in the tree");
    let ls = func.block(parent)[pos];
    let in_extended = parent.is_some_and(|p| func.axes[p].attrs.pipelined.is_some());
    let (outer_preds, outer_annots, outer_stage) = (
        func.stmts[ls].preds.clone(),
        func.annots[ls],
        func.stage_tags[ls],
    );
    for (c, (_, _, preds)) in copies.iter().zip(instances) {
        if in_extended {
            func.stmts[*c].preds = outer_preds.iter().cloned().chain(preds).collect();
            func.annots[*c] = outer_annots;
            func.stage_tags[*c] = outer_stage;
        } else {
            func.stmts[*c].preds = preds;
            // Out of the extended loop, a statement has no stage of it (the enclosing loop's
            // pipelining gives its own).
            func.stage_tags[*c] = None;
        }
    }
    Ok(copies)
}

/// The renamed tiles of `plan` fit the memories in place of the tensors they replace.
fn check_budget(func: &Function, plan: &Plan) -> Result<(), Decline> {
    // The budget: the renamed tiles in place of the tensors they replace.
    let mut sbuf = budget::sbuf_in_use(func);
    let mut psum = budget::psum_banks_in_use(func);
    for (&t, ranges) in plan {
        let td = &func.tensors[t];
        let one = penguin::ir::TensorData {
            block: Vec::new(),
            ..td.clone()
        };
        let n = ranges.len() as u64;
        match td.memory {
            Memory::Psum => {
                psum = psum - budget::psum_slot_banks(td) * td.slots()
                    + budget::psum_slot_banks(&one) * n;
            }
            _ => sbuf = sbuf - budget::tensor_bytes(td) + budget::tensor_bytes(&one) * n,
        }
    }
    if !budget::sbuf_fits(sbuf) || !budget::psum_fits(psum) {
        return Err(Decline::NoRoomForTiles { sbuf, psum });
    }
    Ok(())
}

/// Gives each live range of `plan` a tile of its own (`NAMEfK`); returns the renamed tensors with
/// their tile counts.
fn rename_tiles(func: &mut Function, plan: Plan) -> Vec<(String, usize)> {
    let mut renamed = Vec::new();
    for (t, ranges) in plan {
        let base = func.tensors[t].name.clone();
        let tiles: Vec<Tensor> = (0..ranges.len())
            .map(|k| {
                let n = edit::copy_tensor(func, t, &format!("f{k}"));
                func.tensors[n].block = Vec::new();
                n
            })
            .collect();
        for (k, accesses) in ranges.into_iter().enumerate() {
            for (inst, operand) in accesses {
                let d = &mut func.insts[inst];
                let o = match operand {
                    None => &mut d.dst,
                    Some(j) => &mut d.srcs[j],
                };
                o.tensor = tiles[k];
                o.access.slots.clear();
            }
        }
        // No instruction accesses `t` any more: it names no slot of the loop that leaves.
        func.tensors[t].block.clear();
        renamed.push((base, tiles.len()));
    }
    renamed
}

/// One operand of an instruction: the destination (`None`) or source `j`.
type Operand = (penguin::Inst, Option<usize>);

/// Per renamed tensor, its live ranges in order: the operands each covers ([`live_ranges`]).
type Plan = BTreeMap<Tensor, Vec<Vec<Operand>>>;

/// Per tensor of `candidates` that can be renamed (module doc), its live ranges in `region` (the
/// statements in program order) in the order they start: the operands each covers.
///
/// `stage`: the guards and stage tag of the loop's statement when its parent is an extended
/// loop; a statement of that stage under exactly those guards counts as unguarded.
fn live_ranges(
    func: &Function,
    region: &[Stmt],
    candidates: &BTreeSet<Tensor>,
    stage: Option<&(Vec<Predicate>, Option<u32>)>,
) -> Plan {
    let mut ranges: Plan = BTreeMap::new();
    // Per (tensor, slot): the live range under way.
    let mut current: BTreeMap<(Tensor, i64), usize> = BTreeMap::new();
    let mut refused: BTreeSet<Tensor> = BTreeSet::new();
    let slot_of = |t: Tensor, o: &penguin::ir::Operand| -> Option<i64> {
        match (func.tensors[t].block.first(), o.access.slots.first()) {
            (None, _) => Some(0),
            (Some(b), Some(e)) => e.as_constant().map(|v| v.rem_euclid(i64::from(b.count))),
            (Some(_), None) => None,
        }
    };
    for &s in region {
        let StmtKind::Insts(insts) = &func.stmts[s].kind else {
            continue;
        };
        let guarded = match stage {
            Some((preds, tag)) if func.stage_tags[s] == *tag => {
                func.stmts[s].preds.iter().any(|p| !preds.contains(p))
            }
            _ => !func.stmts[s].preds.is_empty(),
        };
        for &i in insts {
            let d = &func.insts[i];
            for (j, o) in d.srcs.iter().enumerate() {
                let t = o.tensor;
                if !candidates.contains(&t) || refused.contains(&t) {
                    continue;
                }
                match slot_of(t, o).and_then(|k| current.get(&(t, k))) {
                    Some(&r) => ranges.entry(t).or_default()[r].push((i, Some(j))),
                    None => {
                        refused.insert(t);
                    }
                }
            }
            let t = d.dst.tensor;
            if !candidates.contains(&t) || refused.contains(&t) {
                continue;
            }
            let Some(k) = slot_of(t, &d.dst) else {
                refused.insert(t);
                continue;
            };
            let reads = matches!(d.op, Op::Matmul { accumulate: true })
                || d.srcs.iter().any(|o| o.tensor == t);
            let whole = d.writes_whole(&func.tensors[t].shape);
            if whole && !reads && !guarded {
                let rs = ranges.entry(t).or_default();
                rs.push(vec![(i, None)]);
                current.insert((t, k), rs.len() - 1);
            } else if let Some(&r) = current.get(&(t, k)) {
                ranges.entry(t).or_default()[r].push((i, None));
            } else {
                refused.insert(t);
            }
        }
    }
    // A tile of one value and no slots is already a tile of its own.
    ranges.retain(|&t, rs| {
        !refused.contains(&t) && (rs.len() > 1 || !func.tensors[t].block.is_empty())
    });
    ranges
}
