//! The colouring allocators for SBUF, PSUM and HBM scratch: buffers whose live ranges overlap
//! never share memory; the others may.
//!
//! [`allocate`] numbers the BIR instructions in program order and gives every on-chip buffer a
//! **live range**: from its first to its last access, widened to the whole span of every loop
//! that contains one of its accesses (so a value carried from one iteration to the next, or a ring
//! whose slots are reused across iterations, stays live for the whole loop). Two buffers
//! **interfere** when their live ranges overlap (the interference graph is implicit: each buffer
//! tests its live range against those of the buffers already placed).
//!
//! Buffers are then placed largest first, each at the lowest offset that overlaps no interfering
//! buffer already placed (first fit; SBUF in bytes of every partition, 64-byte aligned, all ring
//! slots together; PSUM in whole banks, one per slot, so that a tile never crosses a bank and a
//! PSUM ring rotates banks). Sharing is safe because the synchronisation analysis works on
//! physical footprints: a buffer's first write waits for the last access of whatever held its
//! bytes before. Running out of SBUF or of PSUM banks is a diagnostic that names the buffers and
//! their bytes; nothing is ever placed past capacity. HBM inputs and outputs become the program's
//! tensors.
//!
//! **Every buffer on bytes of its own**, first: when all the SBUF buffers fit side by side,
//! none shares bytes with another, so no write waits for the last access of what its bytes
//! held before (a wait that can chain a compute behind a store's DMA latency). Kept whenever it
//! fits; otherwise the colourings below, as before it existed.
//!
//! **Loads on fresh bytes.** A buffer that a load writes ([`compute_loaded_buffers`]) shares no
//! bytes with a buffer that lives before it, in the colouring tried first: its load would wait
//! for that buffer's last access, and every transfer behind it on `sp`'s in-order stream with
//! it. It may still share with buffers that live after it (their writers wait, not `sp`). That
//! colouring is kept whenever it fits the SBUF; otherwise the colourings below are tried, as
//! before it existed.
//!
//! Those **widened** ranges are the first colouring (after the fresh loads'), and the one kept whenever it fits. Only when
//! it overflows the SBUF or the PSUM is the kernel coloured again with the **exact** ranges
//! ([`compute_exact_live_ranges`]): a buffer is widened to a loop only when it may carry a value
//! across that loop's iterations (in some iteration, a read of it may run before a write of all
//! of it that surely ran), is a ring rotating along that loop (a slot selected by its variable),
//! is staged in it (a pipelined body overlaps its iterations), or the loop is flat (every buffer
//! of a flat body still spans it, so that different buffers of one flat body never share memory,
//! which the loop dependence graph of the modulo scheduler counts on); a tile written whole and
//! then consumed within each iteration of an outer loop lives only from its first to its last
//! access within the body. Exact ranges share more, and every sharing is ordered by the
//! synchronisation (a write-after-read wait on the bytes the buffers share), which can cost
//! overlap; hence the widened ranges first. When the exact ranges overflow too, the **last
//! resort** treats flat bodies like the others ([`FlatBodies::Exact`]): a tile written whole and
//! then consumed within each iteration of a flat loop lives only within the iteration, so buffers
//! of one flat body may share memory; and a tile is written whole also by writes of parts of it
//! that together cover it (`Kills`), not only by one write of all of it. The modulo scheduler's
//! loop dependence graph (built on logical buffers, before allocation) does not see those
//! sharings; the order it chose is kept and the synchronisation orders them like any other (it
//! serialises the iterations' overlap on the shared bytes: slower, but the kernel fits). While
//! the pass driver can still plan the kernel again within the PSUM budgets, a PSUM overflow of
//! the first two colourings is returned before the last resort is tried (so every kernel that fit
//! without the last resort is compiled as before). The overflow reported when every colouring
//! overflows is the first PSUM overflow met (the driver's plan within the PSUM budgets may fix it,
//! which an SBUF overflow alone does not ask for), else the widened colouring's.
//!
//! **HBM scratch** (a local HBM tensor: `nl.ndarray(..., buffer=nl.shared_hbm)` not returned) is
//! coloured the same way into one **arena** per dtype, a program tensor of role `scratch`
//! ([`Allocation::arenas`], after the inputs and outputs): each scratch tensor gets an element
//! offset in its arena (64-byte aligned), disjoint from every scratch tensor live at the same
//! time, shared otherwise ([`Place::Scratch`]). The arena's size is the highest end. Accesses
//! become offsets into the arena (`emit`); their footprints keep the tensor's own rows and
//! columns, and two different tensors of one arena conflict exactly when their element ranges
//! overlap (`sync`), so reuse is ordered like SBUF reuse. A scratch tensor that is a ring along
//! one loop (`transform::ring_slots`) takes its slots one after another in the arena
//! ([`scratch_slot_elems`] each), rotated like an SBUF ring; its footprints stack the slots'
//! rows. A scratch tensor blocked along several loops is not lowered (E0504).
//!
//! The phases of [`allocate`] (of each colouring): the HBM inputs and outputs, the live ranges
//! ([`compute_live_ranges`], or [`compute_exact_live_ranges`]), the buffers to place by memory
//! (or the error of a tensor the backend does not lower), the scratch arenas, the SBUF and PSUM
//! colouring (`colour`), then the capacity checks.
//!
//! Invariants of an [`Allocation`]: every tensor BIR uses has a place; two on-chip buffers or two
//! scratch tensors of one arena share bytes only when their live ranges are disjoint; every SBUF
//! slot starts at a multiple of [`SBUF_ALIGN`] and every PSUM slot at a bank; nothing is placed
//! past the SBUF or the PSUM's banks (that is an error instead).

use crate::codegen::bir::{BInstData, BLoopData, BNode, Bir, BirInst, BirLoop};
pub use crate::cost::budget::SBUF_ALIGN;
use crate::error::BackendError;
use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::ir::{Memory, Op, Operand, TensorKind};
use penguin::listing::capped_list;
use penguin::{Axis, Function, Tensor};
use runtime_sim::isa::{Role, TensorDecl};
use runtime_sim::machine::{PSUM_BANKS, PSUM_BANK_BYTES, SBUF_PARTITION_BYTES};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Where a logical buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The program's tensor of that index.
    Hbm { index: usize },
    /// Elements `[offset, offset + elems)` of the scratch arena that is program tensor `index`.
    Scratch {
        index: usize,
        offset: u64,
        elems: u64,
    },
    /// Bytes `[base, base + slots * slot_bytes)` of every partition.
    Sbuf { base: u64, slot_bytes: u64 },
    /// Banks from `base / PSUM_BANK_BYTES`, whole banks per slot (`slot_bytes` = one bank, or
    /// several for a PSUM array of several banks).
    Psum { base: u64, slot_bytes: u64 },
}

impl Place {
    /// The bytes of every partition the buffer may touch (all slots), for on-chip places.
    pub fn region(&self, slots: u64) -> Option<(u64, u64)> {
        match *self {
            Place::Sbuf { base, slot_bytes } | Place::Psum { base, slot_bytes } => {
                Some((base, base.saturating_add(slots.saturating_mul(slot_bytes))))
            }
            Place::Hbm { .. } | Place::Scratch { .. } => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Allocation {
    pub places: BTreeMap<Tensor, Place>,
    /// The HBM tensors of the program, in order: parameters, then outputs, then constants.
    pub hbm: Vec<Tensor>,
    /// The scratch arenas, one per dtype used by HBM scratch: program tensors `hbm.len()..`.
    pub arenas: Vec<TensorDecl>,
    /// SBUF bytes per partition in use (the highest end of any buffer).
    pub sbuf_bytes: u64,
    /// PSUM banks in use (the highest bank used, plus one).
    pub psum_banks: u64,
    /// Live ranges `[first, last]` in program positions, per on-chip buffer.
    pub live: BTreeMap<Tensor, (usize, usize)>,
    /// Which colouring the ranges are: `None` for the widened ones, else the exact ones with
    /// flat bodies spanning their loops or not (the last resort).
    pub exact: Option<FlatBodies>,
}

/// The live range of every buffer `bir` uses, widened to the whole span of every loop that
/// contains one of its accesses.
pub fn compute_live_ranges(bir: &Bir) -> BTreeMap<Tensor, (usize, usize)> {
    live_ranges(bir, &mut |_, _| true)
}

/// The **exact** live range of every buffer `bir` uses (the fallback of [`allocate`] when the
/// widened ranges of [`compute_live_ranges`] overflow): from its first to its last access, widened
/// to the span of a loop only when the buffer may be live across that loop's iterations
/// ([`carried_across`]); a tile that each iteration of a loop writes whole before reading it
/// lives only from its first to its last access within the body. With [`FlatBodies::Span`],
/// every buffer of a flat body still spans it; with [`FlatBodies::Exact`], flat bodies are
/// treated as the others (the last resort of [`allocate`]).
pub fn compute_exact_live_ranges(
    func: &Function,
    bir: &Bir,
    flat: FlatBodies,
) -> BTreeMap<Tensor, (usize, usize)> {
    // The loop asked about and its index: `live_ranges` asks about every buffer of one loop
    // in a row, so each loop is indexed once.
    let mut index: Option<(BirLoop, LoopIndex)> = None;
    live_ranges(bir, &mut |l, t| {
        let lp = &bir.loops[l];
        if flat == FlatBodies::Span && !lp.body.iter().any(|n| matches!(n, BNode::Loop(_))) {
            return true;
        }
        if index.as_ref().map(|(k, _)| *k) != Some(l) {
            index = Some((l, LoopIndex::new(bir, l)));
        }
        let Some((_, ix)) = &index else {
            unreachable!("the loop's index was just made")
        };
        carried_across(func, bir, l, t, flat, ix)
    })
}

/// What [`carried_across`] asks of one loop for every buffer: the variables of the loops inside
/// it, and per buffer, the instructions that access it and the nodes of the body that hold them
/// (the others change nothing in [`FreshCx::body`]), so that deciding every buffer of a body
/// costs the body, not the body per buffer.
struct LoopIndex {
    inside: Vec<Axis>,
    /// Per buffer: its instructions in the loop (in program order), and the positions in the
    /// loop's body of the nodes that hold them (increasing).
    of: HashMap<Tensor, (Vec<BirInst>, Vec<usize>)>,
}

impl LoopIndex {
    fn new(bir: &Bir, l: BirLoop) -> LoopIndex {
        let lp = &bir.loops[l];
        let mut of: HashMap<Tensor, (Vec<BirInst>, Vec<usize>)> = HashMap::new();
        let mut inside = Vec::new();
        let mut insts = Vec::new();
        for (k, &n) in lp.body.iter().enumerate() {
            insts.clear();
            collect_insts(bir, n, &mut insts);
            for &i in &insts {
                let bi = &bir.insts[i];
                inside.extend(
                    bi.loops
                        .iter()
                        .skip(lp.depth + 1)
                        .map(|&m| bir.loops[m].axis),
                );
                for o in std::iter::once(&bi.dst).chain(bi.srcs.iter()) {
                    let (is, ks) = of.entry(o.tensor).or_default();
                    if is.last() != Some(&i) {
                        is.push(i);
                    }
                    if ks.last() != Some(&k) {
                        ks.push(k);
                    }
                }
            }
        }
        inside.sort_unstable();
        inside.dedup();
        LoopIndex { inside, of }
    }
}

/// Whether the exact live ranges keep every buffer of a flat loop body live for the whole loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlatBodies {
    /// Every buffer of a flat body spans the loop: different buffers of one flat body never share
    /// memory, so the loop dependence graph the modulo scheduler built (on logical buffers) holds
    /// for the memory too, and the iterations of the body overlap freely.
    Span,
    /// A tile each iteration of a flat body writes whole before reading it lives only within the
    /// iteration, as in a nested body: buffers of one flat body may share memory, and the
    /// synchronisation orders each sharing (a write of the next iteration waits for the last
    /// access of the bytes it takes), which costs overlap but fits where spanning does not.
    Exact,
}

/// From the first to the last access of every buffer `bir` uses, in program positions; a buffer
/// accessed in a loop for which `widen(loop, buffer)` holds is live for the loop's whole span.
fn live_ranges(
    bir: &Bir,
    widen: &mut dyn FnMut(BirLoop, Tensor) -> bool,
) -> BTreeMap<Tensor, (usize, usize)> {
    fn extend(
        live: &mut BTreeMap<Tensor, (usize, usize)>,
        t: Tensor,
        (first, last): (usize, usize),
    ) {
        let r = live.entry(t).or_insert((first, last));
        r.0 = r.0.min(first);
        r.1 = r.1.max(last);
    }
    fn walk(
        bir: &Bir,
        nodes: &[BNode],
        pos: &mut usize,
        live: &mut BTreeMap<Tensor, (usize, usize)>,
        widen: &mut dyn FnMut(BirLoop, Tensor) -> bool,
    ) {
        for &n in nodes {
            match n {
                BNode::Inst(i) => {
                    let bi = &bir.insts[i];
                    for o in std::iter::once(&bi.dst).chain(bi.srcs.iter()) {
                        extend(live, o.tensor, (*pos, *pos));
                    }
                    *pos += 1;
                }
                BNode::Loop(l) => {
                    let start = *pos;
                    let mut inner = BTreeMap::new();
                    walk(bir, &bir.loops[l].body, pos, &mut inner, widen);
                    let end = pos.saturating_sub(1).max(start);
                    for (t, range) in inner {
                        let range = if widen(l, t) { (start, end) } else { range };
                        extend(live, t, range);
                    }
                }
            }
        }
    }
    let mut live = BTreeMap::new();
    walk(bir, &bir.body, &mut 0, &mut live, widen);
    live
}

/// Whether buffer `t`, accessed in loop `l`, must stay live for the whole of `l` in the exact
/// ranges. It must unless each iteration of `l` starts afresh: `l` holds a nested loop or `flat`
/// is [`FlatBodies::Exact`] (with [`FlatBodies::Span`], every buffer of a flat body spans it,
/// which the loop dependence graph counts on: different logical buffers of one flat body never
/// share memory), no access of `t` in `l` is staged (a pipelined
/// body overlaps its iterations) or selects a ring slot by `l`'s variable (a ring rotating along
/// `l`), and in each iteration of `l`, every read of `t` follows a write of all of `t` that
/// surely ran when the read runs ([`FreshCx::body`]).
fn carried_across(
    func: &Function,
    bir: &Bir,
    l: BirLoop,
    t: Tensor,
    flat: FlatBodies,
    ix: &LoopIndex,
) -> bool {
    let lp = &bir.loops[l];
    if flat == FlatBodies::Span && !lp.body.iter().any(|n| matches!(n, BNode::Loop(_))) {
        return true;
    }
    let (insts, nodes) = match ix.of.get(&t) {
        Some((insts, nodes)) => (&insts[..], &nodes[..]),
        None => (&[][..], &[][..]),
    };
    let rotates =
        |o: &Operand| o.tensor == t && (o.access.slots.iter()).any(|s| s.coeff(lp.axis) != 0);
    let staged_or_ring = insts.iter().any(|&i| {
        let bi = &bir.insts[i];
        let mut ops = std::iter::once(&bi.dst).chain(bi.srcs.iter());
        (bi.stage.is_some() && ops.clone().any(|o| o.tensor == t)) || ops.any(rotates)
    });
    let cx = FreshCx {
        func,
        bir,
        t,
        depth: lp.depth,
        inside: &ix.inside,
        unions: flat == FlatBodies::Exact,
    };
    // (A node of the body that does not access `t` neither reads it nor kills it.)
    let (mut first, mut kills) = (Vec::new(), Kills::default());
    staged_or_ring || !(nodes.iter()).all(|&k| cx.node(lp.body[k], &mut first, &mut kills))
}

/// The guards of a write of all of a buffer that ran, each naming only variables constant within
/// one iteration of the loop asked about: a read whose guards include them all follows it.
type Kill = Vec<Predicate>;

/// The writes of all of the buffer that ran ([`Kill`]s), and (with [`FreshCx::unions`]) the
/// regions written so far by writes of part of it, by their guards: when the regions of one guard
/// list together cover the buffer, that list becomes a kill.
#[derive(Default)]
struct Kills {
    whole: Vec<Kill>,
    parts: Vec<(Kill, Vec<Region>)>,
}

/// The elements a write covers: a half-open interval per dimension.
type Region = Vec<(i128, i128)>;

/// The most partial regions [`Kills`] keeps per guard list (a bound on the coverage test).
const MAX_PARTS: usize = 64;

/// Whether each iteration of the loop at `depth` writes all of buffer `t` before reading it.
struct FreshCx<'a> {
    func: &'a Function,
    bir: &'a Bir,
    t: Tensor,
    depth: usize,
    /// The variables of the loops inside the loop asked about.
    inside: &'a [Axis],
    /// Whether writes of parts of `t` that together cover it kill it too (the last resort's
    /// ranges, [`FlatBodies::Exact`]), or only a write of all of it.
    unions: bool,
}

impl FreshCx<'_> {
    /// Whether every read of `t` in `nodes` follows a write of all of it (one of `kills`, or
    /// one of `nodes`, added to `kills`), with the variables of the loops in `first` at their
    /// first iteration.
    fn body(&self, nodes: &[BNode], first: &mut Vec<(Axis, i64)>, kills: &mut Kills) -> bool {
        nodes.iter().all(|&n| self.node(n, first, kills))
    }

    fn node(&self, n: BNode, first: &mut Vec<(Axis, i64)>, kills: &mut Kills) -> bool {
        match n {
            BNode::Inst(i) => {
                let bi = &self.bir.insts[i];
                let Some(residual) = residual(bi, first) else {
                    return true;
                };
                if self.reads(bi) && !covered(&kills.whole, &residual) {
                    return false;
                }
                self.kill(bi, first, residual, kills);
                true
            }
            BNode::Loop(m) => {
                let lp = &self.bir.loops[m];
                if lp.trip == 0 {
                    return true;
                }
                let mut insts = Vec::new();
                collect_insts(self.bir, n, &mut insts);
                let reads: Vec<&BInstData> = (insts.iter())
                    .map(|&i| &self.bir.insts[i])
                    .filter(|bi| self.reads(bi))
                    .collect();
                if reads.is_empty() {
                    // No read: a write of all of `t` over the loop's iterations kills it.
                    for &i in &insts {
                        let bi = &self.bir.insts[i];
                        if let Some(residual) = residual(bi, first) {
                            self.kill(bi, first, residual, kills);
                        }
                    }
                    return true;
                }
                // The first iteration in order; then every read of a later one follows the
                // kills made so far.
                first.push((lp.axis, lp.lb));
                let ok = self.body(&lp.body, first, kills);
                first.pop();
                ok && reads
                    .iter()
                    .all(|bi| residual(bi, first).is_none_or(|r| covered(&kills.whole, &r)))
            }
        }
    }

    /// Adds the write `bi` (running under the guards `residual`) to `kills` when it writes all
    /// of `t` over the loops it is inside of but not in `first`, and its guards name only
    /// variables constant within one iteration; with [`Self::unions`], a write of part of `t`
    /// adds its region to those of its guards, and the guards become a kill once their regions
    /// cover `t`.
    fn kill(&self, bi: &BInstData, first: &[(Axis, i64)], residual: Kill, kills: &mut Kills) {
        let constant =
            |g: &Predicate| (g.expr.terms().iter()).all(|(ax, _)| !self.inside.contains(ax));
        if bi.dst.tensor != self.t || self.reads(bi) || !residual.iter().all(constant) {
            return;
        }
        let Some(region) = self.written(bi, first) else {
            return;
        };
        let shape = &self.func.tensors[self.t].shape;
        if covers(std::slice::from_ref(&region), shape) {
            kills.whole.push(residual);
            return;
        }
        if !self.unions {
            return;
        }
        let k = match kills.parts.iter().position(|(g, _)| *g == residual) {
            Some(k) => k,
            None => {
                kills.parts.push((residual, Vec::new()));
                kills.parts.len() - 1
            }
        };
        let (guards, regions) = &mut kills.parts[k];
        if regions.len() >= MAX_PARTS {
            return;
        }
        regions.push(region);
        if covers(regions, shape) {
            let guards = guards.clone();
            kills.whole.push(guards);
        }
    }

    /// Whether `bi` reads `t` (a source, or an accumulating matmul's destination).
    fn reads(&self, bi: &BInstData) -> bool {
        bi.srcs.iter().any(|o| o.tensor == self.t)
            || (bi.dst.tensor == self.t && matches!(bi.op, Op::Matmul { accumulate: true }))
    }

    /// The region the destination of `bi` (a box) writes in every slot of its tensor over the
    /// iterations of its loops deeper than `depth` (those in `first` at the given value): each
    /// dimension is a constant or moves with one of those loops (each loop in one of them) whose
    /// iterations tile an interval, and each slot selector of a ring moves with one of them
    /// through every residue. Conservative: `None` when unsure.
    fn written(&self, bi: &BInstData, first: &[(Axis, i64)]) -> Option<Region> {
        let d = &self.func.tensors[bi.dst.tensor];
        let acc = &bi.dst.access;
        if acc.pattern.is_some()
            || acc.start.len() != d.shape.len()
            || acc.size.len() != d.shape.len()
            || acc.slots.len() != d.block.len()
        {
            return None;
        }
        let inner: Vec<&BLoopData> = (bi.loops.iter().skip(self.depth + 1))
            .map(|&m| &self.bir.loops[m])
            .filter(|m| !first.iter().any(|f| f.0 == m.axis))
            .collect();
        if inner.iter().any(|m| m.trip == 0) {
            return None;
        }
        let mut used = vec![false; inner.len()];
        // `e` with the loops of `first` at their value: its constant, and its only term (the
        // loop, marked used, and the coefficient) if any; `None` when it has several, one of
        // another loop, or one used already.
        let mut split = |e: &AffineExpr| -> Option<(i128, Option<(&BLoopData, i128)>)> {
            let mut c = i128::from(e.constant_term());
            let mut term = None;
            for &(ax, k) in e.terms() {
                if let Some(&(_, v)) = first.iter().find(|f| f.0 == ax) {
                    c += i128::from(k) * i128::from(v);
                    continue;
                }
                let j = inner.iter().position(|m| m.axis == ax)?;
                if term.is_some() || std::mem::replace(&mut used[j], true) {
                    return None;
                }
                term = Some((inner[j], i128::from(k)));
            }
            Some((c, term))
        };
        let mut region = Vec::with_capacity(acc.start.len());
        for (e, &size) in acc.start.iter().zip(&acc.size) {
            let size = i128::from(size);
            region.push(match split(e)? {
                (c, None) => (c, c + size),
                (c, Some((m, a))) => {
                    let (lb, trip) = (i128::from(m.lb), i128::from(m.trip));
                    if a <= 0 || a > size {
                        return None;
                    }
                    (c + a * lb, c + a * (lb + trip - 1) + size)
                }
            });
        }
        for (e, b) in acc.slots.iter().zip(&d.block) {
            let count = i128::from(b.count);
            if count <= 1 {
                continue;
            }
            let ok = match split(e) {
                Some((_, Some((m, a)))) => {
                    i128::from(m.trip) >= count && gcd(a.rem_euclid(count), count) == 1
                }
                Some((_, None)) | None => false,
            };
            if !ok {
                return None;
            }
        }
        Some(region)
    }
}

/// The guards of `bi` that the variables of `first` do not decide, or `None` when one of them
/// is false (`bi` does not run there).
fn residual(bi: &BInstData, first: &[(Axis, i64)]) -> Option<Kill> {
    let mut out = Vec::new();
    for g in &bi.guards {
        match holds(g, first) {
            Some(true) => {}
            Some(false) => return None,
            None => out.push(g.clone()),
        }
    }
    Some(out)
}

/// Whether the union of `regions` covers every element of a tensor of `shape`
/// ([`crate::cost::boxes::union_covers`]).
fn covers(regions: &[Region], shape: &[u64]) -> bool {
    let whole: Vec<(i128, i128)> = shape.iter().map(|&n| (0, i128::from(n))).collect();
    crate::cost::boxes::union_covers(regions, &whole)
}

/// Whether a read under the guards `guards` follows one of `kills`.
fn covered(kills: &[Kill], guards: &[Predicate]) -> bool {
    kills.iter().any(|k| k.iter().all(|p| guards.contains(p)))
}

/// Whether guard `g` holds with the variables of `first` at their values: `None` when it names
/// another variable.
fn holds(g: &Predicate, first: &[(Axis, i64)]) -> Option<bool> {
    let mut v = i128::from(g.expr.constant_term());
    for &(ax, k) in g.expr.terms() {
        let &(_, x) = first.iter().find(|f| f.0 == ax)?;
        v += i128::from(k) * i128::from(x);
    }
    let bound = i128::from(g.bound);
    Some(match g.cmp {
        CmpOp::Ge => v >= bound,
        CmpOp::Lt => v < bound,
        CmpOp::Eq => v == bound,
    })
}

/// The instructions of node `n`, in program order.
fn collect_insts(bir: &Bir, n: BNode, out: &mut Vec<BirInst>) {
    match n {
        BNode::Inst(i) => out.push(i),
        BNode::Loop(l) => {
            for &m in &bir.loops[l].body {
                collect_insts(bir, m, out);
            }
        }
    }
}

/// The greatest common divisor of `a` and `b` (non-negative).
fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// A buffer to place: (tensor, size in units, unit): SBUF in bytes (the unit: one slot),
/// PSUM in banks (the unit: one slot's bytes, whole banks), HBM scratch in elements rounded up
/// to 64 bytes (unit 1).
type Buffer = (Tensor, u64, u64);

/// The buffers to place, by memory.
#[derive(Default)]
struct Buffers {
    sbuf: Vec<Buffer>,
    psum: Vec<Buffer>,
    /// Per dtype name.
    scratch: BTreeMap<&'static str, Vec<Buffer>>,
}

/// Places every buffer `bir` uses: coloured with the widened live ranges
/// ([`compute_live_ranges`]), or, when those overflow the SBUF or the PSUM, with the exact ones
/// ([`compute_exact_live_ranges`]), first with flat bodies spanning their loops, then (when that
/// still overflows and the kernel has a flat loop) with flat bodies exact too: the last resort.
///
/// `psum_retry`: whether the pass driver can still plan the kernel again within the PSUM budgets
/// (which may also free SBUF). Then a PSUM overflow of the first two colourings is returned
/// before the last resort is tried, as it was before the last resort existed: the last resort
/// serialises flat bodies, the budgets usually cost less. When every colouring overflows, the
/// error is the first PSUM overflow any of them met, or else the widened colouring's.
pub fn allocate(func: &Function, bir: &Bir, psum_retry: bool) -> Result<Allocation, BackendError> {
    let widened = compute_live_ranges(bir);
    // Every SBUF buffer on bytes of its own first, then loads on fresh bytes: each kept whenever
    // it fits (only the SBUF places differ).
    let all: BTreeSet<Tensor> = (widened.keys().copied())
        .filter(|&t| func.tensors[t].memory == Memory::Sbuf)
        .collect();
    if !all.is_empty() {
        if let Ok(a) = allocate_with(func, widened.clone(), &all) {
            return Ok(a);
        }
    }
    let loaded = compute_loaded_buffers(bir);
    if !loaded.is_empty() {
        if let Ok(a) = allocate_with(func, widened.clone(), &loaded) {
            return Ok(a);
        }
    }
    let first = match allocate_with(func, widened.clone(), &BTreeSet::new()) {
        Err(e @ (BackendError::SbufOverflow { .. } | BackendError::PsumOverflow { .. })) => e,
        r => return r,
    };
    let mut psum = matches!(first, BackendError::PsumOverflow { .. }).then(|| first.clone());
    let mut tried = vec![widened];
    for flat in [FlatBodies::Span, FlatBodies::Exact] {
        if flat == FlatBodies::Exact && psum_retry && psum.is_some() {
            break;
        }
        let live = compute_exact_live_ranges(func, bir, flat);
        if tried.contains(&live) {
            continue;
        }
        match allocate_with(func, live.clone(), &BTreeSet::new()) {
            Err(e @ BackendError::PsumOverflow { .. }) => {
                psum.get_or_insert(e);
            }
            Err(BackendError::SbufOverflow { .. }) => {}
            Ok(a) => {
                return Ok(Allocation {
                    exact: Some(flat),
                    ..a
                })
            }
            r => return r,
        }
        tried.push(live);
    }
    Err(psum.unwrap_or(first))
}

/// The SBUF buffers that a load writes: [`allocate`] first places each of them on bytes that no
/// buffer live before it held ([`colour`]'s `fresh`).
///
/// `sp` issues every transfer from one in-order stream. A load into bytes that an earlier buffer
/// held waits for that buffer's last access (a write-after-read the synchronisation orders), and
/// every transfer behind it on `sp` waits too: slice_assign's load after its loop waited 2,440
/// cycles for the loop's last exponential, whose ring it reused, though SBUF had room for both.
/// On fresh bytes it goes out as soon as `sp` reaches it.
pub fn compute_loaded_buffers(bir: &Bir) -> BTreeSet<Tensor> {
    (bir.insts.values())
        .filter(|d| d.op == Op::Load)
        .map(|d| d.dst.tensor)
        .collect()
}

/// Places every buffer `bir` uses by the live ranges `live`; the SBUF buffers of `fresh` on
/// bytes that no buffer live before them held ([`colour`]).
fn allocate_with(
    func: &Function,
    live: BTreeMap<Tensor, (usize, usize)>,
    fresh: &BTreeSet<Tensor>,
) -> Result<Allocation, BackendError> {
    let mut a = Allocation::default();
    let consts = func.consts.keys();
    for &t in func.params.iter().chain(func.outputs.iter()).chain(consts) {
        a.places.insert(t, Place::Hbm { index: a.hbm.len() });
        a.hbm.push(t);
    }
    let bufs = collect_buffers(func, &live, &a)?;
    for scratch in bufs.scratch.values() {
        place_arena(func, scratch, &live, &mut a);
    }
    let sb = colour(&bufs.sbuf, &live, fresh);
    let ps = colour(&bufs.psum, &live, &BTreeSet::new());
    for (&(t, size, slot_bytes), &off) in bufs.sbuf.iter().zip(&sb) {
        a.places.insert(
            t,
            Place::Sbuf {
                base: off,
                slot_bytes,
            },
        );
        a.sbuf_bytes = a.sbuf_bytes.max(off.saturating_add(size));
    }
    for (&(t, banks, slot_bytes), &off) in bufs.psum.iter().zip(&ps) {
        a.places.insert(
            t,
            Place::Psum {
                base: off * PSUM_BANK_BYTES,
                slot_bytes,
            },
        );
        a.psum_banks = a.psum_banks.max(off.saturating_add(banks));
    }
    a.live = live;
    // PSUM first: a PSUM overflow is the one the pass driver can retry (within the PSUM budgets).
    check_psum(func, &bufs.psum, a.psum_banks)?;
    check_sbuf(func, &bufs.sbuf, a.sbuf_bytes)?;
    Ok(a)
}

/// The buffers of every tensor live in `bir` but the kernel's HBM inputs and outputs (already
/// placed in `a`), or the error of a tensor the backend does not lower.
fn collect_buffers(
    func: &Function,
    live: &BTreeMap<Tensor, (usize, usize)>,
    a: &Allocation,
) -> Result<Buffers, BackendError> {
    let mut bufs = Buffers::default();
    for &t in live.keys() {
        let d = &func.tensors[t];
        let span = func.tensor_spans.get(t).copied().flatten();
        match d.memory {
            Memory::Hbm => {
                if d.kind == TensorKind::Local && !a.places.contains_key(&t) {
                    // A ring of scratch: one block dimension, its slots one after another.
                    if d.block.len() > 1 {
                        return Err(BackendError::MultiBufferedScratch {
                            tensor: d.name.clone(),
                            at: span,
                        });
                    }
                    let slot = scratch_slot_elems(d);
                    bufs.scratch.entry(d.dtype.name()).or_default().push((
                        t,
                        slot.saturating_mul(d.slots()),
                        slot,
                    ));
                }
            }
            Memory::Sbuf | Memory::Psum => {
                if d.shape.len() != 2 {
                    return Err(BackendError::TileDims {
                        tensor: d.name.clone(),
                        dims: d.shape.len(),
                        at: span,
                    });
                }
                let copy = d.shape[1].saturating_mul(d.dtype.size_bytes());
                if d.memory == Memory::Sbuf {
                    let slot_bytes = copy.div_ceil(SBUF_ALIGN).saturating_mul(SBUF_ALIGN);
                    bufs.sbuf
                        .push((t, slot_bytes.saturating_mul(d.slots()), slot_bytes));
                } else {
                    // A PSUM array of several banks (each access within one bank, checked by
                    // the front end and the simulator) takes whole contiguous banks per slot.
                    let banks = copy.div_ceil(PSUM_BANK_BYTES).max(1);
                    if banks > PSUM_BANKS {
                        return Err(BackendError::PsumTileTooLarge {
                            tensor: d.name.clone(),
                            bytes: copy,
                            bank: PSUM_BANK_BYTES,
                            at: span,
                        });
                    }
                    bufs.psum
                        .push((t, banks.saturating_mul(d.slots()), banks * PSUM_BANK_BYTES));
                }
            }
        }
    }
    Ok(bufs)
}

/// Colours the HBM scratch tensors of one dtype into one arena, a new program tensor of `a`
/// (named `scratch_<dtype>`, with underscores before it while the name is a kernel tensor's).
fn place_arena(
    func: &Function,
    bufs: &[Buffer],
    live: &BTreeMap<Tensor, (usize, usize)>,
    a: &mut Allocation,
) {
    let index = a.hbm.len() + a.arenas.len();
    let offs = colour(bufs, live, &BTreeSet::new());
    let mut size = 0;
    for (&(t, elems, _), &offset) in bufs.iter().zip(&offs) {
        a.places.insert(
            t,
            Place::Scratch {
                index,
                offset,
                elems,
            },
        );
        size = size.max(offset.saturating_add(elems));
    }
    let dtype = func.tensors[bufs[0].0].dtype;
    let taken = |n: &str| a.hbm.iter().any(|&t| func.tensors[t].name == n);
    let mut name = format!("scratch_{}", dtype.name());
    while taken(&name) {
        name.insert(0, '_');
    }
    a.arenas.push(TensorDecl {
        name,
        dtype,
        shape: vec![size],
        role: Role::Scratch,
        values: Vec::new(),
    });
}

/// The elements of one slot of scratch tensor `d` in its arena (64-byte aligned).
pub fn scratch_slot_elems(d: &penguin::ir::TensorData) -> u64 {
    let align = SBUF_ALIGN / d.dtype.size_bytes();
    d.elems().div_ceil(align).saturating_mul(align)
}

/// The SBUF overflow error when the placed SBUF buffers end past the SBUF (`used` bytes per
/// partition), naming the buffers.
fn check_sbuf(func: &Function, sbuf: &[Buffer], used: u64) -> Result<(), BackendError> {
    if used <= SBUF_PARTITION_BYTES {
        return Ok(());
    }
    let list = capped_list(
        sbuf.iter()
            .map(|&(t, b, _)| format!("`{}` {b} bytes", func.display_name(t))),
        ", ",
    );
    let big = sbuf.iter().max_by_key(|x| x.1).map(|x| x.0);
    Err(BackendError::SbufOverflow {
        bytes: used,
        limit: SBUF_PARTITION_BYTES,
        buffers: list,
        at: big.and_then(|t| func.tensor_spans.get(t).copied().flatten()),
    })
}

/// The PSUM overflow error when the placed PSUM buffers use more than the PSUM's banks (`used`),
/// naming the buffers.
fn check_psum(func: &Function, psum: &[Buffer], used: u64) -> Result<(), BackendError> {
    if used <= PSUM_BANKS {
        return Ok(());
    }
    let list = capped_list(
        psum.iter().map(|&(t, b, _)| {
            format!(
                "`{}` {b} bank{} ({} bytes)",
                func.display_name(t),
                if b == 1 { "" } else { "s" },
                b * PSUM_BANK_BYTES
            )
        }),
        ", ",
    );
    let big = psum.iter().max_by_key(|x| x.1).map(|x| x.0);
    Err(BackendError::PsumOverflow {
        banks: used,
        limit: PSUM_BANKS,
        buffers: list,
        at: big.and_then(|t| func.tensor_spans.get(t).copied().flatten()),
    })
}

/// First-fit colouring of the interference graph, largest buffer first (ties by the start of
/// the live range): the offset of each buffer (in its units), in the order of `bufs`. Two
/// buffers interfere when their live ranges overlap, or when one of `fresh` lives after the
/// other (so that a buffer of `fresh` shares bytes only with buffers that live after it).
fn colour(
    bufs: &[Buffer],
    live: &BTreeMap<Tensor, (usize, usize)>,
    fresh: &BTreeSet<Tensor>,
) -> Vec<u64> {
    let ranges: Vec<(usize, usize)> = (bufs.iter())
        .map(|b| live.get(&b.0).copied().unwrap_or((0, 0)))
        .collect();
    let is_fresh: Vec<bool> = bufs.iter().map(|b| fresh.contains(&b.0)).collect();
    let interfere = |i: usize, j: usize| {
        let (a, b) = (ranges[i], ranges[j]);
        let overlap = a.0 <= b.1 && b.0 <= a.1;
        overlap || is_fresh[i] && b.1 < a.0 || is_fresh[j] && a.1 < b.0
    };
    let mut order: Vec<usize> = (0..bufs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(bufs[i].1), ranges[i].0));
    let mut off: Vec<Option<u64>> = vec![None; bufs.len()];
    // The buffers placed so far, by their placed interval `(offset, end)`: the first fit of the
    // next buffer walks its interfering ones in that order, and stops at the first gap it fits.
    let mut placed: Vec<(u64, u64, usize)> = Vec::with_capacity(bufs.len());
    for i in order {
        let mut at: u64 = 0;
        for &(s, e, _) in placed.iter().filter(|p| interfere(i, p.2)) {
            if at.saturating_add(bufs[i].1) <= s {
                break;
            }
            at = at.max(e);
        }
        off[i] = Some(at);
        let p = (at, at.saturating_add(bufs[i].1), i);
        let k = placed.partition_point(|q| (q.0, q.1) <= (p.0, p.1));
        placed.insert(k, p);
    }
    // Every buffer was given an offset by the loop above.
    off.into_iter().map(|o| o.unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::bir::lower_function;

    /// A block loop whose first PSUM tile `h` takes all eight banks and is written whole, then
    /// consumed, before the block's two other PSUM tiles (`t`, `o`) are written.
    const PHASES: &str = r#"kernel phases(x, w) -> (z) {
  tensor x: hbm f32[128, 128] input
  tensor w: hbm f32[128, 4096] input
  tensor z: hbm f32[256, 128] output
  tensor xs: sbuf f32[128, 128] local
  tensor ws: sbuf f32[128, 4096] local
  tensor h: psum f32[128, 4096] local
  tensor hs: sbuf f32[128, 4096] local
  tensor t: psum f32[128, 128] local
  tensor ts: sbuf f32[128, 128] local
  tensor o: psum f32[128, 128] local
  tensor os: sbuf f32[128, 128] local
  stmt {
    xs[0 +: 128, 0 +: 128] = load.dma x[0 +: 128, 0 +: 128]
  }
  stmt {
    ws[0 +: 128, 0 +: 4096] = load.dma w[0 +: 128, 0 +: 4096]
  }
  loop b in 0..2 affine {
    loop j in 0..8 affine {
      stmt {
        h[0 +: 128, 512*j +: 512] = matmul.pe(accumulate=false) xs[0 +: 128, 0 +: 128], ws[0 +: 128, 512*j +: 512]
      }
    }
    loop j2 in 0..8 affine {
      stmt {
        hs[0 +: 128, 512*j2 +: 512] = copy.any h[0 +: 128, 512*j2 +: 512]
      }
    }
    stmt {
      t[0 +: 128, 0 +: 128] = transpose.pe hs[0 +: 128, 0 +: 128]
    }
    stmt {
      ts[0 +: 128, 0 +: 128] = copy.any t[0 +: 128, 0 +: 128]
    }
    stmt {
      o[0 +: 128, 0 +: 128] = matmul.pe(accumulate=false) ts[0 +: 128, 0 +: 128], xs[0 +: 128, 0 +: 128]
    }
    stmt {
      os[0 +: 128, 0 +: 128] = copy.any o[0 +: 128, 0 +: 128]
    }
    stmt {
      z[128*b +: 128, 0 +: 128] = store.dma os[0 +: 128, 0 +: 128]
    }
  }
}
"#;

    fn lowered(text: &str) -> (Function, Bir) {
        let func = penguin::parse_function(text).expect("the test kernel parses");
        let bir = lower_function(&func).expect("the test kernel lowers");
        (func, bir)
    }

    fn tensor(func: &Function, name: &str) -> Tensor {
        (func.tensors.keys())
            .find(|&t| func.tensors[t].name == name)
            .expect("the test kernel names the tensor")
    }

    #[test]
    fn a_tile_written_whole_each_iteration_lives_only_within_the_body() {
        let (func, bir) = lowered(PHASES);
        // Widened to the block loop, `h`, `t` and `o` need 10 banks at once.
        match allocate_with(&func, compute_live_ranges(&bir), &BTreeSet::new()) {
            Err(BackendError::PsumOverflow { banks, .. }) => assert_eq!(banks, 10),
            other => panic!("expected a PSUM overflow, got {other:?}"),
        }
        let exact = compute_exact_live_ranges(&func, &bir, FlatBodies::Span);
        let (h, t, o) = (tensor(&func, "h"), tensor(&func, "t"), tensor(&func, "o"));
        // `h` ends with the loop that reads it, before `t` starts; `t` ends before `o` starts.
        assert!(exact[&h].1 < exact[&t].0);
        assert!(exact[&t].1 < exact[&o].0);
        // Flat loops still span their bodies: `h` starts where the loop writing it starts.
        let widened = compute_live_ranges(&bir);
        assert_eq!(exact[&h].0, widened[&h].0);
        assert!(exact[&h].1 < widened[&h].1);
        let a = allocate(&func, &bir, true).expect("the exact ranges fit");
        assert_eq!(a.psum_banks, 8);
        assert_eq!(a.live, exact);
        assert_eq!(a.exact, Some(FlatBodies::Span));
    }

    /// A loop of loads and exponentials, then a load and a copy after it: `u`, loaded after the
    /// loop, and `v`, computed after it, may share the bytes of the loop's `t` and `e`.
    fn after_loop(cols: u64) -> String {
        format!(
            r#"kernel after_loop(x, y) -> (z) {{
  tensor x: hbm f32[128, {c4}] input
  tensor y: hbm f32[128, {cols}] input
  tensor z: hbm f32[128, {c5}] output
  tensor t: sbuf f32[128, {cols}] local
  tensor e: sbuf f32[128, {cols}] local
  tensor u: sbuf f32[128, {cols}] local
  tensor v: sbuf f32[128, {cols}] local
  loop i in 0..4 affine {{
    stmt {{
      t[0 +: 128, 0 +: {cols}] = load.dma x[0 +: 128, {cols}*i +: {cols}]
    }}
    stmt {{
      e[0 +: 128, 0 +: {cols}] = activation.act(func=exp, scale=1.0, bias=false) t[0 +: 128, 0 +: {cols}]
    }}
    stmt {{
      z[0 +: 128, {cols}*i +: {cols}] = store.dma e[0 +: 128, 0 +: {cols}]
    }}
  }}
  stmt {{
    u[0 +: 128, 0 +: {cols}] = load.dma y[0 +: 128, 0 +: {cols}]
  }}
  stmt {{
    v[0 +: 128, 0 +: {cols}] = copy.any u[0 +: 128, 0 +: {cols}]
  }}
  stmt {{
    z[0 +: 128, {c4} +: {cols}] = store.dma v[0 +: 128, 0 +: {cols}]
  }}
}}
"#,
            c4 = cols * 4,
            c5 = cols * 5,
        )
    }

    fn sbuf_region(a: &Allocation, t: Tensor) -> (u64, u64) {
        a.places[&t].region(1).expect("an SBUF tile")
    }

    fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
        a.0 < b.1 && b.0 < a.1
    }

    #[test]
    fn every_buffer_gets_bytes_of_its_own_when_they_fit() {
        let (func, bir) = lowered(&after_loop(512));
        let a = allocate(&func, &bir, true).expect("the kernel fits");
        let r = ["t", "e", "u", "v"].map(|n| sbuf_region(&a, tensor(&func, n)));
        // No write waits for an access of what its bytes held before: the copy's `v` no longer
        // takes the loop's bytes (nd_partition_major's exponential waited for a reduction, and
        // its store for the exponential, through such sharings: 12,035 -> 9,692 cycles).
        for (i, x) in r.iter().enumerate() {
            for y in &r[i + 1..] {
                assert!(!overlaps(*x, *y), "{r:?}");
            }
        }
        assert_eq!(a.sbuf_bytes, 4 * 2048);
        // Loads alone on fresh bytes (the colouring before this one): `v` shares.
        let loaded = allocate_with(
            &func,
            compute_live_ranges(&bir),
            &compute_loaded_buffers(&bir),
        )
        .expect("the kernel fits");
        assert_eq!(loaded.sbuf_bytes, 3 * 2048);
    }

    #[test]
    fn a_load_goes_to_bytes_no_earlier_buffer_held_when_they_fit() {
        // Tiles of 64 KiB: three fit the SBUF (192 KiB per partition), four do not.
        let (func, bir) = lowered(&after_loop(16384));
        let a = allocate(&func, &bir, true).expect("the kernel fits");
        let [t, e, u, v] = ["t", "e", "u", "v"].map(|n| sbuf_region(&a, tensor(&func, n)));
        // `u`'s load waits for no access of the loop's tiles; the copy's `v` still reuses them.
        assert!(!overlaps(u, t) && !overlaps(u, e), "{t:?} {e:?} {u:?}");
        assert!(overlaps(v, t) || overlaps(v, e), "{t:?} {e:?} {v:?}");
        assert_eq!(a.sbuf_bytes, 3 * 65536);
        // Without the rule, first fit puts `u` on the loop's bytes.
        let shared = allocate_with(&func, compute_live_ranges(&bir), &BTreeSet::new())
            .expect("the kernel fits");
        assert_eq!(shared.sbuf_bytes, 2 * 65536);
    }

    #[test]
    fn a_load_shares_bytes_when_fresh_ones_do_not_fit() {
        // Tiles of 80 KiB: two fit the SBUF (192 KiB per partition), three do not.
        let (func, bir) = lowered(&after_loop(20480));
        let a = allocate(&func, &bir, true).expect("the shared colouring fits");
        assert_eq!(a.sbuf_bytes, 2 * 20480 * 4);
        let u = sbuf_region(&a, tensor(&func, "u"));
        let t = sbuf_region(&a, tensor(&func, "t"));
        let e = sbuf_region(&a, tensor(&func, "e"));
        assert!(overlaps(u, t) || overlaps(u, e));
    }

    #[test]
    fn a_kernel_that_fits_keeps_its_widened_ranges() {
        // One block loop iteration fewer of `h`'s banks: 4 + 1 + 1 banks fit widened.
        let text = PHASES
            .replace("psum f32[128, 4096]", "psum f32[128, 2048]")
            .replace("j in 0..8", "j in 0..4")
            .replace("j2 in 0..8", "j2 in 0..4");
        let (func, bir) = lowered(&text);
        let a = allocate(&func, &bir, true).expect("the widened ranges fit");
        assert_eq!(a.live, compute_live_ranges(&bir));
        assert_eq!(a.exact, None);
        assert_eq!(a.psum_banks, 6);
    }

    #[test]
    fn a_tile_not_written_whole_first_stays_live_across_the_loop() {
        // Half of `h` is written each iteration: the other half may carry a value over.
        let text = PHASES.replace("j in 0..8", "j in 0..4");
        let (func, bir) = lowered(&text);
        let h = tensor(&func, "h");
        assert_eq!(
            compute_exact_live_ranges(&func, &bir, FlatBodies::Span)[&h],
            compute_live_ranges(&bir)[&h]
        );
        assert!(matches!(
            allocate(&func, &bir, true),
            Err(BackendError::PsumOverflow { banks: 10, .. })
        ));
    }

    /// [`PHASES`] with every statement of the block loop under `b >= 1` (as emergent
    /// pipelining shifts them), or all but the loop reading `h`.
    fn guarded(all: bool) -> String {
        let text = PHASES
            .replace(
                "    loop j in 0..8 affine {",
                "    loop j in 0..8 affine if b >= 1 {",
            )
            .replace("\n    stmt {\n      ", "\n    stmt if b >= 1 {\n      ");
        if all {
            text.replace(
                "    loop j2 in 0..8 affine {",
                "    loop j2 in 0..8 affine if b >= 1 {",
            )
        } else {
            text
        }
    }

    #[test]
    fn a_write_guarded_as_its_reads_are_still_starts_each_iteration_afresh() {
        let (func, bir) = lowered(&guarded(true));
        let a = allocate(&func, &bir, true).expect("the exact ranges fit");
        assert_eq!(a.psum_banks, 8);
        // A read that may run when the write does not may see an earlier iteration's value.
        let (func, bir) = lowered(&guarded(false));
        let h = tensor(&func, "h");
        assert_eq!(
            compute_exact_live_ranges(&func, &bir, FlatBodies::Span)[&h],
            compute_live_ranges(&bir)[&h]
        );
    }

    #[test]
    fn a_ring_rotating_along_the_loop_stays_live_across_it() {
        let text = PHASES
            .replace(
                "tensor t: psum f32[128, 128] local",
                "tensor t: psum f32[128, 128] local block[b: 2]",
            )
            .replace("t[0 +: 128, 0 +: 128] =", "t{b}[0 +: 128, 0 +: 128] =")
            .replace("copy.any t[0 +: 128", "copy.any t{b}[0 +: 128");
        let (func, bir) = lowered(&text);
        let (h, t) = (tensor(&func, "h"), tensor(&func, "t"));
        let exact = compute_exact_live_ranges(&func, &bir, FlatBodies::Span);
        assert_eq!(exact[&t], compute_live_ranges(&bir)[&t]);
        assert!(exact[&h].1 >= exact[&t].0);
        assert!(matches!(
            allocate(&func, &bir, true),
            Err(BackendError::PsumOverflow { .. })
        ));
    }

    /// A flat loop whose four [128, 16384] f32 tiles (64 KiB each) each live only until the next
    /// is computed: spanning the loop they need 256 KiB, sharing by iteration 128 KiB.
    const FLAT: &str = r#"kernel flat(x) -> (z) {
  tensor x: hbm f32[256, 16384] input
  tensor z: hbm f32[256, 16384] output
  tensor a: sbuf f32[128, 16384] local
  tensor b: sbuf f32[128, 16384] local
  tensor c: sbuf f32[128, 16384] local
  tensor d: sbuf f32[128, 16384] local
  loop i in 0..2 affine {
    stmt {
      a[0 +: 128, 0 +: 16384] = load.dma x[128*i +: 128, 0 +: 16384]
    }
    stmt {
      b[0 +: 128, 0 +: 16384] = activation.act(func=square, scale=1.0, bias=false) a[0 +: 128, 0 +: 16384]
    }
    stmt {
      c[0 +: 128, 0 +: 16384] = activation.act(func=square, scale=1.0, bias=false) b[0 +: 128, 0 +: 16384]
    }
    stmt {
      d[0 +: 128, 0 +: 16384] = activation.act(func=square, scale=1.0, bias=false) c[0 +: 128, 0 +: 16384]
    }
    stmt {
      z[128*i +: 128, 0 +: 16384] = store.dma d[0 +: 128, 0 +: 16384]
    }
  }
}
"#;

    #[test]
    fn a_flat_body_shares_memory_by_iteration_only_as_the_last_resort() {
        let (func, bir) = lowered(FLAT);
        let widened = compute_live_ranges(&bir);
        // Flat bodies span their loop in the first exact ranges: nothing changes.
        assert_eq!(
            compute_exact_live_ranges(&func, &bir, FlatBodies::Span),
            widened
        );
        assert!(matches!(
            allocate_with(&func, widened.clone(), &BTreeSet::new()),
            Err(BackendError::SbufOverflow { bytes: 262144, .. })
        ));
        let last = compute_exact_live_ranges(&func, &bir, FlatBodies::Exact);
        let (a, b, c, d) = (
            tensor(&func, "a"),
            tensor(&func, "b"),
            tensor(&func, "c"),
            tensor(&func, "d"),
        );
        assert!(last[&a].1 < last[&c].0 && last[&b].1 < last[&d].0);
        let alloc = allocate(&func, &bir, true).expect("the last resort fits");
        assert_eq!(alloc.sbuf_bytes, 2 * 65536);
        assert_eq!(alloc.live, last);
        assert_eq!(alloc.exact, Some(FlatBodies::Exact));
    }

    #[test]
    fn a_flat_body_carrying_a_tile_keeps_it_live_across_the_loop() {
        // `a` accumulates over the iterations (read before it is written): it spans the loop.
        let text = FLAT.replace(
            "a[0 +: 128, 0 +: 16384] = load.dma x[128*i +: 128, 0 +: 16384]",
            "a[0 +: 128, 0 +: 16384] = tensor_tensor.dve(op=add) a[0 +: 128, 0 +: 16384], d[0 +: 128, 0 +: 16384]",
        );
        let (func, bir) = lowered(&text);
        let last = compute_exact_live_ranges(&func, &bir, FlatBodies::Exact);
        let a = tensor(&func, "a");
        assert_eq!(last[&a], compute_live_ranges(&bir)[&a]);
    }

    /// A block loop whose tile `q` is written in two halves, then stored whole.
    const HALVES: &str = r#"kernel halves(x) -> (z) {
  tensor x: hbm f32[256, 1024] input
  tensor z: hbm f32[256, 1024] output
  tensor p: sbuf f32[128, 1024] local
  tensor q: sbuf f32[128, 1024] local
  loop b in 0..2 affine {
    loop j in 0..2 affine {
      stmt {
        p[0 +: 128, 512*j +: 512] = load.dma x[128*b +: 128, 512*j +: 512]
      }
    }
    stmt {
      q[0 +: 128, 0 +: 512] = copy.any p[0 +: 128, 0 +: 512]
    }
    stmt {
      q[0 +: 128, 512 +: 512] = copy.any p[0 +: 128, 512 +: 512]
    }
    stmt {
      z[128*b +: 128, 0 +: 1024] = store.dma q[0 +: 128, 0 +: 1024]
    }
  }
}
"#;

    #[test]
    fn writes_that_together_cover_a_tile_start_it_afresh_in_the_last_resort() {
        let (func, bir) = lowered(HALVES);
        let (p, q) = (tensor(&func, "p"), tensor(&func, "q"));
        let widened = compute_live_ranges(&bir);
        // One write of all of it is needed in the first exact ranges; two halves do in the last.
        let exact = compute_exact_live_ranges(&func, &bir, FlatBodies::Span);
        assert_eq!(exact[&q], widened[&q]);
        assert!(exact[&p].1 < widened[&p].1);
        let last = compute_exact_live_ranges(&func, &bir, FlatBodies::Exact);
        assert!(last[&q].0 > widened[&q].0 && last[&q].0 > last[&p].0);
        // Only the first half written does not cover it.
        let (func, bir) =
            lowered(&HALVES.replace("q[0 +: 128, 512 +: 512]", "q[0 +: 128, 0 +: 512]"));
        let q = tensor(&func, "q");
        let last = compute_exact_live_ranges(&func, &bir, FlatBodies::Exact);
        assert_eq!(last[&q], compute_live_ranges(&bir)[&q]);
    }
}
