//! Array contraction by lifetime: an on-chip array declared with one block per iteration of a
//! loop, whose blocks each live only within their iteration, gets storage for one iteration.
//!
//! A kernel often declares `s = nl.ndarray((Q, K, nl.par_dim(128), 512), buffer=nl.psum)` outside
//! its loops and writes and reads block `s[i, j]` within iteration `(i, j)` of the loops around
//! it. Declared, that is `Q·K` blocks; live at once, one. [`contract_array`] gives such an array
//! the storage its lifetimes need: for each loop `L` that encloses every access of the array
//! (outermost first), when every access moves by the same `c` elements of the free dimension per
//! iteration of `L`, it proposes to drop that `c·iv` from every access, so that all iterations of
//! `L` share one block. Blocks selected by constants (a loop the front end unrolled) are then
//! folded modulo a window `W` ([`fold_modulo`]): offset `Σ c·iv + c0` with every `c` a multiple
//! of `W` becomes `c0 mod W`. The shrunk array is then shifted to start at 0 (on PSUM by whole
//! banks, so that accesses keep their place within a bank) and its free size is what the
//! accesses reach.
//!
//! **Legality (ISL, isl-rs).** A proposal is kept only when every element every read reads gets
//! its value from the same write instance as before, or from none in both: the flow of values
//! through the array is unchanged, so the program computes the same. The check computes, for the
//! declared and the proposed storage, the last writer of each element each read instance reads
//! (`compute_flow`, reads as sinks tagged by the element of the *declared* array they read,
//! writes as must sources, the loop tree's schedule) and compares the two dependence relations
//! and the two sets of reads without a writer (`is_equal`). This is exact: a value flowing from
//! one iteration of `L` to another (`s[i-1]` read in iteration `i`), or a block that several
//! loops share (written in one loop and read in a later one), or an accumulation `+=` into a
//! never-written block (which would then add to the previous iteration's) changes the flow and
//! keeps the declared storage; accumulation chains within one iteration are kept. Every access of
//! the array in the function is in the model, so no use is missed.
//!
//! Only what the model states exactly is contracted: a local SBUF or PSUM tensor of shape
//! `[partitions, free]`, no block dimensions (the pipeliner's rings come later), every write a
//! plain box (no mask, no access pattern, no indirect write that may leave rows as they were),
//! in loops of at least one iteration. Only the free dimension is contracted.
//!
//! Invariants: the function verifies after [`contract_array`] when it did before (each access
//! stays inside the new shape, within one PSUM bank where it was); the tensor's partition
//! dimension, dtype, memory and kind are unchanged; an array no proposal holds for is untouched.

use crate::affine::{AffineExpr, CmpOp, Predicate};
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Function, Memory, Op, StmtKind, TensorKind};
use cranelift_entity::EntityRef;
use isl_rs::{Context, UnionAccessInfo, UnionMap, UnionSet};
use std::fmt::Write;
use vocab::machine::PSUM_BANK_BYTES;

/// What [`contract_array`] did to one array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractionData {
    pub tensor: Tensor,
    /// The loops whose iterations now share storage, outermost first.
    pub loops: Vec<Axis>,
    /// The window the remaining offsets were folded into (`offset mod W`), when they were.
    pub window: Option<u64>,
    /// The shape before and after.
    pub before: Vec<u64>,
    pub after: Vec<u64>,
}

/// Which operand of an instruction an access is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Dst,
    Src(usize),
}

/// One access of the array, with where its instruction sits.
#[derive(Clone, Debug)]
struct Site {
    inst: Inst,
    slot: Slot,
    /// Written (the destination), read (a source, or the destination of an accumulating matmul).
    write: bool,
    read: bool,
    /// The loops around the instruction, outermost first, and their bounds `lb <= iv < ub`.
    loops: Vec<Axis>,
    bounds: Vec<(i64, i64)>,
    /// The predicates of the statements around it.
    preds: Vec<Predicate>,
    /// Its place in the loop tree: `[c0, iv0, c1, iv1, .., ck, position]` as text pieces.
    sched: Vec<String>,
}

/// Contracts each of `tensors` as far as its lifetimes allow ([`contract_array`]): what changed.
pub fn contract_arrays(func: &mut Function, tensors: &[Tensor]) -> Vec<ContractionData> {
    (tensors.iter())
        .filter_map(|&t| contract_array(func, t))
        .collect()
}

/// Gives `tensor` one block per live iteration of the loops around its accesses (module doc), or
/// leaves it as it is (`None`) when no loop's iterations can share its storage.
pub fn contract_array(func: &mut Function, tensor: Tensor) -> Option<ContractionData> {
    let td = func.tensors.get(tensor)?;
    if !matches!(td.memory, Memory::Sbuf | Memory::Psum)
        || td.kind != TensorKind::Local
        || !td.block.is_empty()
        || td.shape.len() != 2
    {
        return None;
    }
    let sites = collect_sites(func, tensor);
    if sites.is_empty() || !sites.iter().all(|s| exact_site(func, s)) {
        return None;
    }
    let common = common_loops(&sites);
    if (common.iter()).any(|&a| func.axes[a].trip_count() < 1) {
        return None;
    }
    let ctx = Context::alloc();
    let original = Model::new(func, tensor, &sites);
    let declared = original.flow(&ctx, &sites, &vec![AffineExpr::constant(0); sites.len()])?;
    // The offset dropped from each site's free start, so far.
    let mut dropped = vec![AffineExpr::constant(0); sites.len()];
    let mut loops = Vec::new();
    for &axis in &common {
        let Some(c) = common_coeff(func, &sites, axis) else {
            continue;
        };
        let proposal: Vec<AffineExpr> = (dropped.iter())
            .map(|d| d.add(&AffineExpr::term(axis, c)))
            .collect();
        if original.layout(func, &proposal).is_none() {
            continue;
        }
        if (original.flow(&ctx, &sites, &proposal)).is_some_and(|f| f.same_as(&declared)) {
            dropped = proposal;
            loops.push(axis);
        }
    }
    let mut window = None;
    if let Some((w, folded)) = fold_modulo(func, &ctx, &original, &sites, &dropped, &declared) {
        dropped = folded;
        window = Some(w);
    }
    let (shift, free) = original.layout(func, &dropped)?;
    let before = func.tensors[tensor].shape.clone();
    if (loops.is_empty() && window.is_none()) || free >= before[1] {
        return None;
    }
    for (s, d) in sites.iter().zip(&dropped) {
        let data = &mut func.insts[s.inst];
        let op = match s.slot {
            Slot::Dst => &mut data.dst,
            Slot::Src(i) => &mut data.srcs[i],
        };
        let start = &mut op.access.start[1];
        *start = start.sub(d);
        start.add_constant(-shift);
    }
    func.tensors[tensor].shape[1] = free;
    Some(ContractionData {
        tensor,
        loops,
        window,
        before,
        after: func.tensors[tensor].shape.clone(),
    })
}

/// The second proposal, for blocks selected by constants (a loop the front end unrolled, or
/// blocks written out one by one): every free start `Σ c·iv + c0` whose steps `c` are all
/// multiples of a window `W` is folded to `c0 mod W`, so that the blocks share `W` elements.
/// `W` runs over the multiples `g, 2g, 4g, ..` of `g`, the gcd of every step and offset, below
/// the array's reach; the first whose every access stays inside the window and keeps the flow
/// of values is taken. The window and each site's new offset dropped, or `None`.
fn fold_modulo(
    func: &Function,
    ctx: &Context,
    model: &Model,
    sites: &[Site],
    dropped: &[AffineExpr],
    declared: &Flow,
) -> Option<(u64, Vec<AffineExpr>)> {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a.abs()
        } else {
            gcd(b, a % b)
        }
    }
    let starts: Vec<AffineExpr> = (model.free.iter().zip(dropped))
        .map(|(f, d)| f.sub(d))
        .collect();
    let g = (starts.iter())
        .flat_map(|e| e.terms().iter().map(|&(_, c)| c).chain([e.constant_term()]))
        .fold(0, gcd);
    let (_, reach) = model.layout(func, dropped)?;
    let reach = i64::try_from(reach).ok()?;
    let widest = model.size.iter().map(|s| s[1]).max()?;
    let mut w = g.max(1);
    while w < reach {
        let fits = (starts.iter().zip(&model.size)).all(|(e, size)| {
            e.terms().iter().all(|&(_, c)| c % w == 0)
                && e.constant_term().rem_euclid(w) + i64::try_from(size[1]).unwrap_or(i64::MAX) <= w
        });
        if fits && u64::try_from(w).ok()? >= widest {
            let proposal: Vec<AffineExpr> = (starts.iter().zip(dropped))
                .map(|(e, d)| {
                    let mut keep = e.clone();
                    keep.add_constant(-e.constant_term().rem_euclid(w));
                    d.add(&keep)
                })
                .collect();
            let laid_out = model.layout(func, &proposal).is_some();
            if laid_out && (model.flow(ctx, sites, &proposal)).is_some_and(|f| f.same_as(declared))
            {
                return Some((u64::try_from(w).ok()?, proposal));
            }
        }
        w = w.checked_mul(2)?;
    }
    None
}

/// Every access of `tensor`, in program order.
fn collect_sites(func: &Function, tensor: Tensor) -> Vec<Site> {
    fn walk(
        func: &Function,
        tensor: Tensor,
        block: &[Stmt],
        loops: &mut Vec<Axis>,
        preds: &mut Vec<Predicate>,
        sched: &mut Vec<String>,
        out: &mut Vec<Site>,
    ) {
        for (c, &stmt) in block.iter().enumerate() {
            let data = &func.stmts[stmt];
            let npreds = preds.len();
            preds.extend(data.preds.iter().cloned());
            sched.push(c.to_string());
            match &data.kind {
                StmtKind::Insts(insts) => {
                    for (p, &inst) in insts.iter().enumerate() {
                        let id = &func.insts[inst];
                        let mut here = sched.clone();
                        here.push(p.to_string());
                        let site = |slot, write, read| Site {
                            inst,
                            slot,
                            write,
                            read,
                            loops: loops.clone(),
                            bounds: (loops.iter())
                                .map(|&a| (func.axes[a].lb, func.axes[a].ub))
                                .collect(),
                            preds: preds.clone(),
                            sched: here.clone(),
                        };
                        for (i, src) in id.srcs.iter().enumerate() {
                            if src.tensor == tensor {
                                out.push(site(Slot::Src(i), false, true));
                            }
                        }
                        if id.dst.tensor == tensor {
                            let rmw = matches!(id.op, Op::Matmul { accumulate: true });
                            out.push(site(Slot::Dst, true, rmw));
                        }
                    }
                }
                StmtKind::Loop(axis) => {
                    loops.push(*axis);
                    sched.push(format!("d{}", loops.len() - 1));
                    walk(
                        func,
                        tensor,
                        &func.axes[*axis].body,
                        loops,
                        preds,
                        sched,
                        out,
                    );
                    sched.pop();
                    loops.pop();
                }
            }
            sched.pop();
            preds.truncate(npreds);
        }
    }
    let mut out = Vec::new();
    walk(
        func,
        tensor,
        &func.body,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// Whether the model states the site exactly: a box, and, written, every element of it.
fn exact_site(func: &Function, s: &Site) -> bool {
    let data = &func.insts[s.inst];
    let acc = match s.slot {
        Slot::Dst => &data.dst.access,
        Slot::Src(i) => &data.srcs[i].access,
    };
    let plain_write = data.mask.is_empty()
        && acc.pattern.is_none()
        && !matches!(data.op, Op::Gather { skip_oob: true } | Op::Scatter { .. });
    acc.start.len() == 2 && acc.size.len() == 2 && acc.slots.is_empty() && (!s.write || plain_write)
}

/// The loops that enclose every site, outermost first.
fn common_loops(sites: &[Site]) -> Vec<Axis> {
    let first = &sites[0].loops;
    let n = (sites.iter())
        .map(|s| {
            first
                .iter()
                .zip(&s.loops)
                .take_while(|(a, b)| a == b)
                .count()
        })
        .min()
        .unwrap_or(0);
    first[..n].to_vec()
}

/// The step `c > 0` every site's free start takes per iteration of `axis`, when all agree.
fn common_coeff(func: &Function, sites: &[Site], axis: Axis) -> Option<i64> {
    let mut coeffs = sites.iter().map(|s| start_of(func, s).coeff(axis));
    let c = coeffs.next()?;
    (c > 0 && coeffs.all(|k| k == c)).then_some(c)
}

fn start_of<'f>(func: &'f Function, s: &Site) -> &'f AffineExpr {
    let data = &func.insts[s.inst];
    match s.slot {
        Slot::Dst => &data.dst.access.start[1],
        Slot::Src(i) => &data.srcs[i].access.start[1],
    }
}

fn size_of(func: &Function, s: &Site) -> [u64; 2] {
    let data = &func.insts[s.inst];
    let acc = match s.slot {
        Slot::Dst => &data.dst.access,
        Slot::Src(i) => &data.srcs[i].access,
    };
    [acc.size[0], acc.size[1]]
}

/// The flow of values through an array: each (read instance, declared element) to the write
/// instance it reads, and the (read instance, declared element) pairs no write reaches.
struct Flow {
    deps: UnionMap,
    unwritten: UnionSet,
}

impl Flow {
    /// Whether every read reads the same write (or none) in both; `false` when ISL fails.
    fn same_as(&self, other: &Flow) -> bool {
        self.deps.is_equal(&other.deps).unwrap_or(false)
            && self.unwritten.is_equal(&other.unwritten).unwrap_or(false)
    }
}

/// The polyhedral model of the array's accesses, in ISL's text syntax.
struct Model {
    /// Per site: its partition start.
    part: Vec<AffineExpr>,
    /// Per site: its declared free start.
    free: Vec<AffineExpr>,
    size: Vec<[u64; 2]>,
    /// The longest schedule, to which every one is padded.
    sched_len: usize,
    memory: Memory,
    elem: u64,
}

impl Model {
    fn new(func: &Function, tensor: Tensor, sites: &[Site]) -> Model {
        let td = &func.tensors[tensor];
        Model {
            part: (sites.iter())
                .map(|s| {
                    let data = &func.insts[s.inst];
                    match s.slot {
                        Slot::Dst => data.dst.access.start[0].clone(),
                        Slot::Src(i) => data.srcs[i].access.start[0].clone(),
                    }
                })
                .collect(),
            free: sites.iter().map(|s| start_of(func, s).clone()).collect(),
            size: sites.iter().map(|s| size_of(func, s)).collect(),
            sched_len: sites.iter().map(|s| s.sched.len()).max().unwrap_or(0),
            memory: td.memory,
            elem: td.dtype.size_bytes(),
        }
    }

    /// Where the array starts and how far its accesses reach, each site's free start less
    /// `dropped`: the shift to subtract (on PSUM a whole number of banks) and the free size, or
    /// `None` when a PSUM access would no longer stay within one bank.
    fn layout(&self, func: &Function, dropped: &[AffineExpr]) -> Option<(i64, u64)> {
        let axes = &func.axes;
        let bounds = |a: Axis| (axes[a].lb, axes[a].ub - 1);
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        for (k, d) in dropped.iter().enumerate() {
            let start = self.free[k].sub(d);
            let (a, b) = start.range(bounds);
            lo = lo.min(a);
            hi = hi.max(b.checked_add(i64::try_from(self.size[k][1]).ok()?)?);
        }
        if self.memory == Memory::Psum {
            let bank = i64::try_from(PSUM_BANK_BYTES / self.elem).ok()?;
            lo = lo.div_euclid(bank) * bank;
            for (k, d) in dropped.iter().enumerate() {
                let size = i64::try_from(self.size[k][1]).ok()?;
                let starts = self.free[k]
                    .sub(d)
                    .residues_mod(bank, |a| (axes[a].lb, axes[a].ub));
                if size <= bank && starts.iter().any(|&r| r + size > bank) {
                    return None;
                }
            }
        }
        Some((lo, u64::try_from(hi - lo).ok()?))
    }

    /// The flow of values through the array when each site's free start is less `dropped`:
    /// every (read instance, declared element) with its last writer, and those with none.
    /// `None` when ISL fails (the proposal is then not taken).
    fn flow(&self, ctx: &Context, sites: &[Site], dropped: &[AffineExpr]) -> Option<Flow> {
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        let mut sched = Vec::new();
        for (k, s) in sites.iter().enumerate() {
            let tuple = self.tuple(s);
            let domain = self.domain(s)?;
            let time = self.time(s);
            let p = affine(s, &self.part[k])?;
            let f = affine(s, &self.free[k])?;
            let f_new = affine(s, &self.free[k].sub(&dropped[k]))?;
            let [np, nf] = self.size[k];
            if s.write {
                writes.push(format!(
                    "{tuple} -> M[e0, e1] : {domain} and {p} <= e0 < {p} + {np} and {f_new} <= e1 < {f_new} + {nf}"
                ));
                sched.push(format!("{tuple} -> [{time}]"));
            }
            if s.read {
                // Tagged by the declared element `o`, it reads element `e` of the storage.
                reads.push(format!(
                    "[{tuple} -> O[o0, o1]] -> M[e0, e1] : {domain} and {p} <= o0 < {p} + {np} and {f} <= o1 < {f} + {nf} and e0 = o0 and e1 = o1 - ({f}) + ({f_new})"
                ));
                sched.push(format!("[{tuple} -> O[o0, o1]] -> [{time}]"));
            }
        }
        let union = |pieces: &[String]| format!("{{ {} }}", pieces.join("; "));
        let read = |text: &str| UnionMap::read_from_str(ctx, text).ok();
        let flow = UnionAccessInfo::from_sink(read(&union(&reads))?)
            .ok()?
            .set_must_source(read(&union(&writes))?)
            .ok()?
            .set_schedule_map(read(&union(&sched))?)
            .ok()?
            .compute_flow()
            .ok()?;
        Some(Flow {
            deps: flow.get_may_dependence().ok()?,
            unwritten: flow.get_may_no_source().ok()?.domain().ok()?,
        })
    }

    /// `S<k>[d0, ..]`.
    fn tuple(&self, s: &Site) -> String {
        let dims: Vec<String> = (0..s.loops.len()).map(|q| format!("d{q}")).collect();
        format!("S{}[{}]", s.inst.index(), dims.join(", "))
    }

    fn time(&self, s: &Site) -> String {
        let mut t = s.sched.clone();
        t.resize(self.sched_len, "0".to_string());
        t.join(", ")
    }

    /// The loop box and the predicates of the statements around the site.
    fn domain(&self, s: &Site) -> Option<String> {
        let mut cs: Vec<String> = (s.bounds.iter().enumerate())
            .map(|(q, (lb, ub))| format!("{lb} <= d{q} < {ub}"))
            .collect();
        for pred in &s.preds {
            let op = match pred.cmp {
                CmpOp::Ge => ">=",
                CmpOp::Lt => "<",
                CmpOp::Eq => "=",
            };
            cs.push(format!("{} {op} {}", affine(s, &pred.expr)?, pred.bound));
        }
        if cs.is_empty() {
            cs.push("0 = 0".to_string());
        }
        Some(cs.join(" and "))
    }
}

/// `e` in the dimensions of the site's tuple, or `None` when it names a loop around no access.
fn affine(s: &Site, e: &AffineExpr) -> Option<String> {
    let mut out = String::new();
    for &(axis, c) in e.terms() {
        let q = s.loops.iter().position(|&a| a == axis)?;
        write!(out, "{c}*d{q} + ").ok()?;
    }
    write!(out, "{}", e.constant_term()).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function;
    use crate::verify::verify_function;

    /// A kernel whose PSUM array `acc` (four blocks of a bank) is used by `body` in a loop `j`
    /// of `trip` iterations inside a loop `i` of two (after `before`).
    fn kernel(before: &str, body: &str, after: &str) -> Function {
        kernel_trip(before, body, after, 4)
    }

    fn kernel_trip(before: &str, body: &str, after: &str, trip: u32) -> Function {
        let text = format!(
            "kernel k(a, b) -> (out) {{
  tensor a: hbm f32[128, 128] input
  tensor b: hbm f32[128, 512] input
  tensor out: hbm f32[128, 512] output
  tensor acc: psum f32[128, 2048] local
  tensor q: sbuf f32[128, 128] local
  tensor k: sbuf f32[128, 512] local
  tensor s: sbuf f32[128, 512] local
  stmt {{
    q[0 +: 128, 0 +: 128] = load.dma a[0 +: 128, 0 +: 128]
  }}
  stmt {{
    k[0 +: 128, 0 +: 512] = load.dma b[0 +: 128, 0 +: 512]
  }}
  {before}
  loop i in 0..2 sequential {{
    loop j in 0..{trip} affine {{
      {body}
    }}
  }}
  {after}
  stmt {{
    out[0 +: 128, 0 +: 512] = store.dma s[0 +: 128, 0 +: 512]
  }}
}}"
        );
        let f = parse_function(&text).expect("the test kernel parses");
        verify_function(&f).expect("the test kernel verifies");
        f
    }

    const WRITE: &str = "stmt {
        acc[0 +: 128, 512*j +: 512] = matmul.pe(accumulate=false) q[0 +: 128, 0 +: 128], k[0 +: 128, 0 +: 512]
      }";
    const ADD: &str = "stmt {
        acc[0 +: 128, 512*j +: 512] = matmul.pe(accumulate=true) q[0 +: 128, 0 +: 128], k[0 +: 128, 0 +: 512]
      }";
    const READ: &str = "stmt {
        s[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 512*j +: 512]
      }";

    fn contract(f: &mut Function) -> Option<ContractionData> {
        let acc = (f.tensors.iter())
            .find(|(_, t)| t.name == "acc")
            .map(|(t, _)| t)
            .expect("the kernel has `acc`");
        let done = contract_array(f, acc);
        verify_function(f).expect("the contracted kernel verifies");
        done
    }

    #[test]
    fn a_block_live_within_its_iteration_gets_one_bank() {
        let mut f = kernel("", &format!("{WRITE}\n{ADD}\n{READ}"), "");
        let done = contract(&mut f).expect("contracted");
        assert_eq!(done.after, vec![128, 512]);
        assert_eq!(
            done.loops.len(),
            1,
            "along `j` (the outer loop `i` moves no access)"
        );
    }

    #[test]
    fn a_value_read_in_the_next_iteration_keeps_the_declared_storage() {
        let read_prev = "stmt {
        s[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 512*j +: 512]
      }
      stmt {
        acc[0 +: 128, 512*j + 512 +: 512] = matmul.pe(accumulate=false) q[0 +: 128, 0 +: 128], k[0 +: 128, 0 +: 512]
      }";
        let mut f = kernel_trip(&WRITE.replace("512*j", "0"), read_prev, "", 3);
        assert_eq!(contract(&mut f), None);
    }

    #[test]
    fn blocks_read_by_a_later_loop_are_live_at_once() {
        let later = "loop r in 0..4 affine {
    stmt {
      s[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 512*r +: 512]
    }
  }";
        let mut f = kernel("", WRITE, later);
        assert_eq!(contract(&mut f), None);
    }

    #[test]
    fn an_accumulation_into_an_unwritten_block_is_not_folded_onto_another() {
        // The first `+=` of each iteration reads nothing written: sharing the storage would add
        // to the previous iteration's block.
        let mut f = kernel("", &format!("{ADD}\n{READ}"), "");
        assert_eq!(contract(&mut f), None);
    }

    #[test]
    fn blocks_selected_by_constants_fold_into_one_window() {
        let unrolled = "stmt {
    acc[0 +: 128, 0 +: 512] = matmul.pe(accumulate=false) q[0 +: 128, 0 +: 128], k[0 +: 128, 0 +: 512]
  }
  stmt {
    s[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 0 +: 512]
  }
  stmt {
    acc[0 +: 128, 1536 +: 512] = matmul.pe(accumulate=false) q[0 +: 128, 0 +: 128], k[0 +: 128, 0 +: 512]
  }
  stmt {
    s[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 1536 +: 512]
  }";
        let other = "stmt {
        s[0 +: 128, 0 +: 512] = copy.any k[0 +: 128, 0 +: 512]
      }";
        let mut f = kernel(unrolled, other, "");
        let done = contract(&mut f).expect("folded");
        // Offsets 0 and 1536: folded modulo their gcd, both blocks share one bank.
        assert_eq!((done.window, done.after), (Some(1536), vec![128, 512]));
    }
}
