//! Emergent pipelining of loops that carry no annotation: load and store tiles become rings.
//!
//! [`pipeline_emergent`] looks, for every SBUF tile, at the innermost loop `L` that encloses all
//! its accesses. When each iteration of `L` starts by writing the whole tile (a load, or any
//! operation that does not read it) unconditionally, before any other access — or by filling it
//! slice by slice with a loop of loads directly in its body ([`filled_by_child_loop`]; that loop
//! is then issued ahead as a whole, like a single load) — no value of the tile
//! flows from one iteration of `L` to the next: the tile can be renamed per iteration. It then
//! becomes a ring of `N` slots along `L` (a block dimension, slot selector `iv(L)`), which address
//! rotation realises as `base + (r mod N) * stride`. The synchronisation analysis sees the
//! write-after-read distance grow from 1 to `N` iterations, so the in-order `sp` stream issues the
//! loads of later iterations while the compute engines still work on earlier ones: pipelining
//! emerges from the rings, the per-engine streams and the exact waits, without peeling.
//!
//! The heuristic: the ring depth is `1 + ceil(DMA time / compute time)` per iteration of `L`
//! (both from the shared machine description: latency plus queue time of the tile's transfer,
//! split as the emitter splits it; the compute engines' cost of `L`'s body), between 2 and
//! [`MAX_DEPTH`], lowered until SBUF holds every buffer. Unrolling, which the seed's
//! heuristic also decides, runs before this pass ([`crate::unroll`]): it gives each copy its own
//! tiles, so every copy's tile becomes a ring of its own here. Only tiles a DMA writes or reads are
//! considered (they carry the latency worth hiding), and PSUM tiles (an accumulator, a transpose's
//! result): those become rings of two banks, within the 8-bank budget, so that the Tensor engine
//! fills the next iteration's bank while another engine still reads this one's. Each decision and
//! its reason is logged.
//!
//! The loads are then issued ahead. A ring loop nested in un-annotated loops prefetches across the
//! whole nest when the heuristic agrees ([`crate::emergent_nest`]: no fill or drain per execution
//! of the loop). Otherwise, one predicated loop: by default [`stages`] also spreads the loop's
//! compute statements over stages by their engine hand-offs (rings for the tiles that cross
//! stages, checked by the annotated pipeliner's ISL legality check), and [`shift_loads`] — every
//! non-load statement shifted by the same prefetch depth — is the fallback (a loop bound by DMA
//! latency, no hand-off, no room, or a plan the check refuses), logged with its reason.
//!
//! A loop takes exactly one path: a loop the annotated pipeliner extended is skipped, and so is
//! any loop with a `num_stages` annotation.

mod auto;
mod stages;

pub use auto::{choose_auto_stages, choose_auto_stages_with, mark_auto_loops, AutoOptions};

pub use stages::StageOrder;

use crate::emit::dma_pieces;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{BlockDim, Memory, Op, StmtKind, TensorKind};
use penguin::{Axis, Function, Inst, Stmt, Tensor};
use runtime_sim::machine;
use std::collections::BTreeMap;

/// The deepest ring the heuristic builds.
pub const MAX_DEPTH: u32 = 4;

/// One access of a tile.
#[derive(Clone, Debug)]
struct Use {
    stmt: Stmt,
    inst: Inst,
    loops: Vec<Axis>,
    writes: bool,
    reads: bool,
}

/// How the emergent path realises a ring loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmergentOptions {
    /// Spread compute over stages by engine hand-offs ([`stages`]); `false`: the single shift.
    pub stages: bool,
    /// The execution order of a staged loop's body.
    pub order: StageOrder,
    /// Keep loop-carried state in one stage (always on; off only to test that the ISL legality
    /// check catches the plans this rule prevents).
    pub carried_rule: bool,
    /// Let a ring loop nested in un-annotated loops prefetch across the nest
    /// ([`crate::emergent_nest`]); `false` realises every ring in its own loop.
    pub across_nests: bool,
}

impl Default for EmergentOptions {
    fn default() -> Self {
        EmergentOptions {
            stages: true,
            order: StageOrder::Mixed,
            carried_rule: true,
            across_nests: true,
        }
    }
}

/// Turns the load and store tiles of un-annotated loops into rings; returns the log lines.
pub fn pipeline_emergent(func: &mut Function) -> Vec<String> {
    pipeline_emergent_with(func, &EmergentOptions::default())
}

/// A tile's transfer against its loop's compute ([`wanted_depth`]).
struct DmaFit {
    /// The slots a ring of the tile wants: `1 + ceil(dma / compute)`.
    wanted: u64,
    /// The transfer's cycles (latency, queue time, issue) and the body's compute cycles.
    dma: u64,
    compute: u64,
    /// How the emitter splits the transfer: pieces of `bytes / pieces`.
    pieces: u64,
    bytes: u64,
}

/// The heuristic: how many slots a ring of tile `t` wants in loop `l`, `1 + ceil(DMA time /
/// compute time)` per iteration (the tile's transfer split as the emitter splits it; the compute
/// engines' cost of the loop's body).
fn wanted_depth(func: &Function, t: Tensor, l: Axis) -> DmaFit {
    let td = &func.tensors[t];
    let bytes = td.shape.iter().product::<u64>() * td.dtype.size_bytes();
    let pieces = dma_pieces(td.shape[0], bytes);
    let dma = machine::DMA_LATENCY
        + machine::dma_queue_cycles(bytes / pieces)
        + pieces * machine::dma_issue_cycles();
    let compute = body_compute(func, &func.axes[l].body).max(1);
    DmaFit {
        wanted: 1 + dma.div_ceil(compute),
        dma,
        compute,
        pieces,
        bytes,
    }
}

/// [`pipeline_emergent`] with options.
pub fn pipeline_emergent_with(func: &mut Function, opts: &EmergentOptions) -> Vec<String> {
    let original = opts.stages.then(|| func.clone());
    let mut log = Vec::new();
    // Ring depths chosen per loop, for the loads that the shift below may hoist.
    let mut ringed: BTreeMap<Axis, Vec<(Tensor, u32)>> = BTreeMap::new();
    // Loops where even the deepest ring cannot hide a tile's DMA behind the body's compute.
    let mut dma_bound: BTreeMap<Axis, bool> = BTreeMap::new();
    let mut uses: BTreeMap<Tensor, Vec<Use>> = BTreeMap::new();
    func.walk_stmts(|s, loops| {
        if let StmtKind::Insts(insts) = &func.stmts[s].kind {
            for &i in insts {
                let d = &func.insts[i];
                let acc_reads_dst = matches!(d.op, Op::Matmul { accumulate: true });
                let mut add = |t: Tensor, w: bool, r: bool| {
                    uses.entry(t).or_default().push(Use {
                        stmt: s,
                        inst: i,
                        loops: loops.to_vec(),
                        writes: w,
                        reads: r,
                    })
                };
                for o in &d.srcs {
                    add(o.tensor, false, true);
                }
                add(d.dst.tensor, true, acc_reads_dst);
            }
        }
    });
    let mut sbuf_used = sbuf_in_use(func);
    // A PSUM tile takes whole banks, one per slot (a tile never crosses a bank).
    let banks = |t: &penguin::ir::TensorData| {
        let slot = t.shape.iter().skip(1).product::<u64>() * t.dtype.size_bytes();
        slot.div_ceil(machine::PSUM_BANK_BYTES) * t.slots()
    };
    let mut psum_used: u64 = func
        .tensors
        .values()
        .filter(|t| t.memory == Memory::Psum)
        .map(banks)
        .sum();
    for (t, us) in uses {
        let td = &func.tensors[t];
        if td.kind != TensorKind::Local || !td.block.is_empty() {
            continue;
        }
        // A PSUM tile (an accumulator, a transpose's result) is renamed per iteration too, as a
        // ring of two banks, so that the Tensor engine fills the next iteration's bank while
        // another engine still reads this one's.
        let psum = td.memory == Memory::Psum;
        let dma = us
            .iter()
            .any(|u| matches!(func.insts[u.inst].op, Op::Load | Op::Store));
        if !(dma && td.memory == Memory::Sbuf || psum) {
            continue;
        }
        // The innermost loop enclosing every access.
        let mut common: Vec<Axis> = us[0].loops.clone();
        for u in &us[1..] {
            let n = common
                .iter()
                .zip(&u.loops)
                .take_while(|(a, b)| a == b)
                .count();
            common.truncate(n);
        }
        let Some(&l) = common.last() else { continue };
        let ad = &func.axes[l];
        if ad.attrs.pipelined.is_some() || ad.attrs.num_stages.is_some() || ad.trip_count() < 2 {
            continue;
        }
        // Uses arrive in program order; within an instruction the sources come first, so a
        // read-modify-write shows its read first.
        let first = &us[0];
        let fd = &func.insts[first.inst];
        let whole = fd.dst.tensor == t && fd.dst.access.is_whole(&td.shape);
        let direct = first.loops.len() == common.len() && func.stmts[first.stmt].preds.is_empty();
        // Or the first iteration of a loop directly in `l`'s body, unguarded (a folded
        // accumulation's overwriting matmul): every iteration of `l` still writes it all first.
        let first_of_child = first.loops.len() == common.len() + 1
            && first.loops.last().is_some_and(|&c| {
                let cd = &func.axes[c];
                cd.ub > cd.lb
                    && func.stmts[first.stmt].preds
                        == [Predicate {
                            expr: AffineExpr::iv(c),
                            cmp: CmpOp::Eq,
                            bound: cd.lb,
                        }]
                    && func.axes[l].body.iter().any(|&b| {
                        func.stmts[b].kind == StmtKind::Loop(c) && func.stmts[b].preds.is_empty()
                    })
            });
        let filled = filled_by_child_loop(func, &us, t, l);
        if !(first.writes && !first.reads && (whole && (direct || first_of_child) || filled)) {
            log.push(format!(
                "emergent: `{}` stays single-buffered in loop `{}`: an iteration does not start by writing all of it",
                td.name, ad.iv_name
            ));
            continue;
        }
        if psum {
            let need = td.bytes_per_partition().div_ceil(machine::PSUM_BANK_BYTES);
            if psum_used + need > machine::PSUM_BANKS {
                log.push(format!(
                    "emergent: `{}` stays one PSUM bank in loop `{}`: no bank is free for a second slot",
                    td.name, ad.iv_name
                ));
                continue;
            }
            psum_used += need;
            log.push(format!(
                "emergent: loop `{}` (trip {}): PSUM tile `{}` becomes a ring of 2 banks (the Tensor engine writes one while the other is read)",
                ad.iv_name,
                ad.trip_count(),
                td.name,
            ));
            func.tensors[t].block = vec![BlockDim { axis: l, count: 2 }];
            ringed.entry(l).or_default().push((t, 2));
            rename(func, &us, t, l);
            continue;
        }
        let DmaFit {
            wanted,
            dma,
            compute,
            pieces,
            bytes,
        } = wanted_depth(func, t, l);
        *dma_bound.entry(l).or_default() |= wanted > u64::from(MAX_DEPTH);
        let mut depth = wanted.clamp(2, u64::from(MAX_DEPTH)) as u32;
        let copy = td.bytes_per_partition().div_ceil(64) * 64;
        while depth >= 2 && sbuf_used + copy * u64::from(depth - 1) > machine::SBUF_PARTITION_BYTES
        {
            depth -= 1;
        }
        if depth < 2 {
            log.push(format!(
                "emergent: `{}` stays single-buffered in loop `{}`: SBUF has no room for a second slot",
                td.name, ad.iv_name
            ));
            continue;
        }
        sbuf_used += copy * u64::from(depth - 1);
        log.push(format!(
            "emergent: loop `{}` (trip {}): `{}` becomes a ring of {depth} slots (prefetch depth {}): its DMA takes ~{dma} cycles ({pieces} piece(s) of {} bytes) against ~{compute} compute cycles per iteration",
            ad.iv_name,
            ad.trip_count(),
            td.name,
            depth - 1,
            bytes / pieces,
        ));
        func.tensors[t].block = vec![BlockDim {
            axis: l,
            count: depth,
        }];
        ringed.entry(l).or_default().push((t, depth));
        rename(func, &us, t, l);
    }
    // Innermost loops first: a loop nested in un-annotated loops is realised across its nest
    // before an enclosing loop is staged (staging guards the inner loop statement, which the
    // nest realisation requires unguarded; staging after it shifts the whole nest uniformly).
    let mut depth: BTreeMap<Axis, usize> = BTreeMap::new();
    func.walk_stmts(|s, loops| {
        if let StmtKind::Loop(a) = func.stmts[s].kind {
            depth.insert(a, loops.len());
        }
    });
    let mut ringed: Vec<(Axis, Vec<(Tensor, u32)>)> = ringed.into_iter().collect();
    ringed.sort_by_key(|(l, _)| (std::cmp::Reverse(depth.get(l).copied().unwrap_or(0)), *l));
    let mut across: Vec<Axis> = Vec::new();
    for (l, rings) in ringed {
        // A short loop nested in un-annotated loops prefetches across the nest (no fill or
        // drain per execution); otherwise compute stages, or the single shift.
        if opts.across_nests
            && crate::emergent_nest::prefetch_across_nest(func, l, &rings, &mut log)
        {
            across.push(l);
            continue;
        }
        // Staging a loop around a nest realised across it would add a fill and a drain to every
        // execution of the enclosing loop, which is what the nest realisation removed (measured:
        // matmul 90063 cycles unstaged against 111545 staged).
        if let Some(&inner) = across.iter().find(|&&a| encloses(func, l, a)) {
            log.push(format!(
                "emergent: loop `{}`: no compute stages: it encloses loop `{}`, whose loads are issued across the nest",
                func.axes[l].iv_name, func.axes[inner].iv_name
            ));
            shift_loads(func, l, &rings, &mut log);
            continue;
        }
        // The same holds around a loop the annotated pipeliner extended: its own fill and drain
        // would come on top of the stages' (measured with the modulo scheduler: matmul_mode_b's
        // default path, 116411 cycles unstaged against 121803 staged).
        let annotated_inner = func
            .axes
            .keys()
            .find(|&a| a != l && func.axes[a].attrs.pipelined.is_some() && encloses(func, l, a));
        if let Some(inner) = annotated_inner {
            log.push(format!(
                "emergent: loop `{}`: no compute stages: it encloses loop `{}`, which the annotated pipeliner extended",
                func.axes[l].iv_name, func.axes[inner].iv_name
            ));
            shift_loads(func, l, &rings, &mut log);
            continue;
        }
        let staged = match &original {
            Some(_) if dma_bound.get(&l).copied().unwrap_or(false) => {
                log.push(format!(
                    "emergent: loop `{}`: no compute stages: even a ring of {MAX_DEPTH} slots does not hide its DMA behind its compute, so splitting the compute would only lengthen the ramp",
                    func.axes[l].iv_name
                ));
                false
            }
            Some(orig) => stages::stage_loop(func, orig, l, &rings, opts, &mut log),
            None => false,
        };
        if !staged {
            shift_loads(func, l, &rings, &mut log);
        }
    }
    log
}

/// The SBUF bytes per partition every SBUF tensor of `func` takes with all its slots, each
/// rounded to 64-byte alignment as the allocator places them (every tensor counted, with no
/// sharing by live range: the conservative budget of every emergent and expansion decision).
pub(crate) fn sbuf_in_use(func: &Function) -> u64 {
    func.tensors
        .values()
        .filter(|t| t.memory == Memory::Sbuf)
        .map(|t| t.bytes_per_partition().div_ceil(64) * 64)
        .sum()
}

/// Points every access of tile `t` at the ring slot of the current iteration of loop `l`.
fn rename(func: &mut Function, us: &[Use], t: Tensor, l: Axis) {
    let sel = AffineExpr::iv(l);
    for u in us {
        let d = &mut func.insts[u.inst];
        if d.dst.tensor == t {
            d.dst.access.slots = vec![sel.clone()];
        }
        for o in &mut d.srcs {
            if o.tensor == t {
                o.access.slots = vec![sel.clone()];
            }
        }
    }
}

/// The loads of loop `l` that may be issued ahead of the rest of its body, in body order, with
/// the ring each fills and the ring's depth: direct, unguarded, single-instruction statements that
/// load a whole ring tile from a kernel input (which nothing writes), so moving them earlier
/// changes no value; with `loops`, also a direct, unguarded loop whose body is one such load
/// filling a ring tile slice by slice ([`filled_by_child_loop`]). Every realisation of an
/// emergent ring (`shift_loads`, [`stages`], [`crate::emergent_nest`]) hoists exactly these
/// (only `shift_loads` hoists loops).
pub(crate) fn hoistable_loads(
    func: &Function,
    l: Axis,
    rings: &[(Tensor, u32)],
    loops: bool,
) -> Vec<(Stmt, Tensor, u32)> {
    let mut out = Vec::new();
    for &s in &func.axes[l].body {
        let sd = &func.stmts[s];
        if !sd.preds.is_empty() {
            continue;
        }
        let inst = match &sd.kind {
            StmtKind::Insts(insts) if insts.len() == 1 => insts[0],
            StmtKind::Loop(c) if loops => match single_load(func, *c) {
                Some(i) => i,
                None => continue,
            },
            _ => continue,
        };
        let d = &func.insts[inst];
        let from_input = d
            .srcs
            .first()
            .is_some_and(|o| func.tensors[o.tensor].kind == TensorKind::Input);
        let ring = rings.iter().find(|(t, _)| *t == d.dst.tensor);
        if let (Op::Load, true, Some(&(rt, depth))) = (&d.op, from_input, ring) {
            out.push((s, rt, depth));
        }
    }
    out
}

/// The instruction of loop `c`'s body when that body is one unguarded statement of one load.
fn single_load(func: &Function, c: Axis) -> Option<Inst> {
    let [s] = func.axes[c].body[..] else {
        return None;
    };
    let sd = &func.stmts[s];
    match &sd.kind {
        StmtKind::Insts(insts) if insts.len() == 1 && sd.preds.is_empty() => {
            let i = insts[0];
            (func.insts[i].op == Op::Load).then_some(i)
        }
        _ => None,
    }
}

/// Whether every iteration of loop `l` starts by filling all of tile `t` with a loop directly in
/// its body: an unguarded loop `c` whose body is one unguarded load of a kernel input into `t`,
/// the first access of `t` (`us` in program order), writing one slice of `t` per iteration
/// (in one dimension, the start is `size · (iv(c) − lb)`, and the slices of the `trip` iterations
/// tile the dimension; every other dimension whole), with no other access of `t` in `c`.
fn filled_by_child_loop(func: &Function, us: &[Use], t: Tensor, l: Axis) -> bool {
    let Some(first) = us.first() else {
        return false;
    };
    let Some(&c) = first.loops.last() else {
        return false;
    };
    let depth = first.loops.len();
    if depth < 2 || first.loops[depth - 2] != l {
        return false;
    }
    let direct = func.axes[l]
        .body
        .iter()
        .any(|&b| func.stmts[b].kind == StmtKind::Loop(c) && func.stmts[b].preds.is_empty());
    let Some(i) = single_load(func, c) else {
        return false;
    };
    if !direct || i != first.inst || us.iter().any(|u| u.inst != i && u.loops.contains(&c)) {
        return false;
    }
    let d = &func.insts[i];
    if d.dst.tensor != t
        || !d
            .srcs
            .first()
            .is_some_and(|o| func.tensors[o.tensor].kind == TensorKind::Input)
    {
        return false;
    }
    let (cd, td) = (&func.axes[c], &func.tensors[t]);
    let mut sliced = 0;
    for ((start, &size), &dim) in d
        .dst
        .access
        .start
        .iter()
        .zip(&d.dst.access.size)
        .zip(&td.shape)
    {
        let whole = start.as_constant() == Some(0) && size == dim;
        let size_i = size as i64;
        let slice = start.terms() == [(c, size_i)]
            && start.constant_term() == -size_i * cd.lb
            && size.checked_mul(cd.trip_count().max(0) as u64) == Some(dim);
        match (whole, slice) {
            (true, _) => {}
            (false, true) => sliced += 1,
            (false, false) => return false,
        }
    }
    sliced == 1
}

/// Whether loop `outer` encloses loop `inner` (at any depth).
fn encloses(func: &Function, outer: Axis, inner: Axis) -> bool {
    func.axes[outer]
        .body
        .iter()
        .any(|&s| match func.stmts[s].kind {
            StmtKind::Loop(a) => a == inner || encloses(func, a, inner),
            StmtKind::Insts(_) => false,
        })
}

/// Issues the loads of loop `l` that fill a ring `P` iterations ahead, in one predicated loop:
/// the loop runs `P` more iterations; a hoisted load (moved to the front of the body) is guarded
/// by `iv < ub` and keeps its index; every other statement is guarded by `iv >= lb + P` and works
/// on iteration `iv - P`. `P` is the smallest ring depth of the hoisted loads minus one, so the
/// slot a load fills was last read `P + 1` iterations earlier. A load is hoisted only when it is a
/// direct, unguarded statement of the loop that writes a whole ring tile from a kernel input (which
/// nothing writes), so moving it earlier changes no value.
fn shift_loads(func: &mut Function, l: Axis, rings: &[(Tensor, u32)], log: &mut Vec<String>) {
    let body = func.axes[l].body.clone();
    let loads = hoistable_loads(func, l, rings, true);
    let hoisted: Vec<Stmt> = loads.iter().map(|&(s, _, _)| s).collect();
    let p = loads
        .iter()
        .map(|&(_, _, depth)| depth - 1)
        .min()
        .unwrap_or(0);
    if hoisted.is_empty() || p == 0 || hoisted.len() == body.len() {
        return;
    }
    let p = i64::from(p);
    let (lb, ub) = (func.axes[l].lb, func.axes[l].ub);
    let shifted = AffineExpr::from_terms([(l, 1)], -p);
    let rest: Vec<Stmt> = body
        .iter()
        .copied()
        .filter(|s| !hoisted.contains(s))
        .collect();
    for &s in &hoisted {
        func.stmts[s].preds.push(Predicate {
            expr: AffineExpr::iv(l),
            cmp: CmpOp::Lt,
            bound: ub,
        });
    }
    for &s in &rest {
        shift_stmt(func, s, l, &shifted);
        func.stmts[s].preds.push(Predicate {
            expr: AffineExpr::iv(l),
            cmp: CmpOp::Ge,
            bound: lb + p,
        });
    }
    func.axes[l].ub = ub + p;
    func.axes[l].body = hoisted.iter().chain(rest.iter()).copied().collect();
    let names: Vec<String> = loads
        .iter()
        .map(|&(_, t, _)| format!("`{}`", func.tensors[t].name))
        .collect();
    log.push(format!(
        "emergent: loop `{}`: the loads of {} are issued {p} iteration(s) ahead (one predicated loop of {} iterations, no peeling)",
        func.axes[l].iv_name,
        names.join(", "),
        ub + p - lb
    ));
}

/// Replaces `iv(l)` by `by` in every access and guard of `s` and everything nested in it.
fn shift_stmt(func: &mut Function, s: Stmt, l: Axis, by: &AffineExpr) {
    func.map_exprs(s, &|e| e.substitute(l, by));
}

/// The compute engines' cycles for one pass over `body` (nested loops times their trips), a
/// guarded statement weighted by how often its guards hold (the first-iteration and later copies
/// of a folded accumulation count once together).
pub(crate) fn body_compute(func: &Function, body: &[Stmt]) -> u64 {
    let mut total = 0;
    for &s in body {
        let (on, all) = crate::bir::guard_fraction(func, &func.stmts[s].preds);
        let before = total;
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => {
                for &i in insts {
                    let d = &func.insts[i];
                    let n = d.dst.access.size.iter().skip(1).product::<u64>().max(1);
                    total += match &d.op {
                        Op::Load | Op::Store => 0,
                        Op::Matmul { .. } => {
                            let m = d.srcs[0].access.size.get(1).copied().unwrap_or(1);
                            machine::matmul_cycles(runtime_sim::isa::DType::F32, m, n)
                        }
                        Op::Transpose => machine::transpose_cycles(128, n),
                        Op::Activation { .. } => machine::activation_cycles(n),
                        Op::TensorTensor { .. } => machine::tensor_tensor_cycles(n, false),
                        _ => machine::vector_cycles(n),
                    };
                }
            }
            StmtKind::Loop(a) => {
                let ad = &func.axes[*a];
                total += ad.trip_count().max(0) as u64 * body_compute(func, &ad.body);
            }
        }
        total = before + ((total - before) * on).div_ceil(all);
    }
    total
}
