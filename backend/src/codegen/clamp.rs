//! Trip-count clamping: a copy of the emitted kernel whose long hardware loops run only a few
//! iterations but show every pattern the full loops show, so that the synchronisation analysis
//! ([`crate::codegen::sync::compute_sync`]) and the wait pruning ([`crate::codegen::hb::compute_pruned_waits`],
//! which enumerates the program's instances) cost the same for any trip count. Their decisions
//! are made on the copy and then realised on the real kernel by node index (see `lib.rs`).
//!
//! Why a short loop shows every pattern. Inside a loop `l` of trip `N`, everything the analyses
//! look at is, per instance, a function of the iteration registers:
//! - guards are comparisons affine in the registers; a loop is clamped only when each of its
//!   guards compares its register alone against a threshold `t` that is either low (`t <= H`) or
//!   high (`t >= N - H`), so every guard is constant on the middle iterations `[H, N - H)`;
//! - footprints are affine plus ring slots `(r + o) mod m`; a loop is clamped only when any two
//!   of its accesses that may touch the same bytes have the same coefficient on its register, so
//!   whether two instances overlap depends only on their distance, and on the distance modulo
//!   `L` (the lcm of every ring depth) through the slots;
//! - a loop is clamped only when no instruction outside it may touch the bytes its instructions
//!   touch (otherwise an access outside could meet one of the removed middle iterations), except
//!   an instruction beside it, directly in the block that holds it: a peeled loop's prologue and
//!   epilogue copies, and only where the access inside the loop that it may meet does not move
//!   with the loop's register (a ring slot, a fixed address), or moves with it but can meet only
//!   its first iterations ([`edge_only`]; an access beside a loop that meets one moving with it
//!   elsewhere may meet a middle iteration, which the copy does not have, or a last one, whose
//!   addresses the copy does not shift: the loop keeps its trip count). Those run once per
//!   execution of the block, before or after every iteration; what they meet first inside the loop is its first or last iterations (the ring's slots are
//!   rewritten every iteration of the steady state), which the copy keeps exactly, with their
//!   ring phases, and any middle iteration they also meet is ordered after (before) them through
//!   the same chain of kept iterations in the copy as in the real kernel
//!   (`tests/compile_time.rs` compares the programs decided with and without the copy).
//!
//! The clamped loop runs `B` iterations: clamped iteration `r < B / 2` is real iteration `r`,
//! clamped iteration `r >= B / 2` is real iteration `r + S` with `S = N - B` a multiple of `L`
//! (high thresholds move down by `S`). The first and last `H` iterations, where guards change,
//! are kept exactly, with their ring phases; the middle keeps at least `MAX_DISTANCE + 2 + L`
//! iterations of the steady state, so every iteration distance the analysis distinguishes
//! (distances are capped at [`crate::codegen::sync::MAX_DISTANCE`]) and every slot phase occurs between
//! steady-state instances, between them and the edges, and across the edges. Hence the
//! dependence distances found, the conflicts, and the races the detector would report when a
//! wait is removed are the same on the copy as on the real kernel, for any `N`: the bound is
//! `B = 2H + MAX_DISTANCE + 2 + L` (rounded up so that `L` divides `N - B`), independent of `N`.
//! A loop that breaks one of the conditions keeps its trip count (correct, only slower).
//!
//! The conditions are decided for every loop at once, in one pass over the nodes (the guards)
//! and one sweep over the footprints of each space by start (the accesses that may meet), which
//! counts instead of visiting pairs: linear in the kernel times its loop depth, plus a log.

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{Emitted, Foot, Node, Space};
use crate::codegen::sync::MAX_DISTANCE;
use cranelift_entity::SecondaryMap;
use runtime_sim::isa::{Cmp, Term};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// The largest ring period (lcm of the ring depths) for which loops are clamped.
const MAX_PERIOD: i64 = 64;

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `lhs - rhs` as (coefficient per register, constant), or `None` with a modulo term.
fn difference(c: &Cmp) -> Option<(Vec<(u8, i64)>, i64)> {
    let mut coeffs: Vec<(u8, i64)> = Vec::new();
    for (e, sign) in [(&c.lhs, 1), (&c.rhs, -1)] {
        for t in &e.terms {
            let Term::Lin { coeff, reg } = *t else {
                return None;
            };
            match coeffs.iter_mut().find(|(r, _)| *r == reg.0) {
                Some((_, k)) => *k += sign * coeff,
                None => coeffs.push((reg.0, sign * coeff)),
            }
        }
    }
    coeffs.retain(|&(_, k)| k != 0);
    Some((coeffs, c.lhs.constant - c.rhs.constant))
}

fn lin_coeff(e: &runtime_sim::isa::Expr, reg: u8) -> i64 {
    e.terms
        .iter()
        .map(|t| match *t {
            Term::Lin { coeff, reg: r } if r.0 == reg => coeff,
            _ => 0,
        })
        .sum()
}

fn feet_may_meet(a: &Foot, b: &Foot) -> bool {
    a.space == b.space && (a.write || b.write) && a.region.0 < b.region.1 && b.region.0 < a.region.1
}

/// What decides whether a loop is clamped, gathered for every loop in one pass over the nodes
/// and one sweep over the footprints ([`compute_loop_facts`]).
#[derive(Clone, Default)]
struct LoopFacts {
    /// A guard or a pair of accesses breaks a condition of the module doc: the loop keeps its
    /// trip count.
    kept: bool,
    /// How many first (`low`) and last (`high`) iterations its guards change on.
    low: i64,
    high: i64,
}

/// Per loop, what [`clamp_loop`] decides by: the thresholds of its guards, and whether a pair of
/// accesses that may touch the same bytes breaks a condition (one outside it, not beside it; or
/// two inside with different coefficients on its register). A sweep over each space's
/// footprints by start ([`Sweep`]) counts the footprints that each one meets instead of visiting
/// the pairs, so the work is the footprints times the loops around them, not every pair of the
/// kernel per loop (a chain of tiles that share one address meets quadratically many pairs).
fn compute_loop_facts(em: &Emitted) -> SecondaryMap<BirLoop, LoopFacts> {
    let mut facts: SecondaryMap<BirLoop, LoopFacts> = SecondaryMap::new();
    // The loops around each loop: those of the first node inside it (in node order).
    let mut parent: SecondaryMap<BirLoop, Option<&[BirLoop]>> = SecondaryMap::new();
    for nd in em.nodes.values() {
        for (d, &l) in nd.loops.iter().enumerate() {
            if em.loops[l].1 != d {
                continue;
            }
            if parent[l].is_none() {
                parent[l] = Some(&nd.loops[..d]);
            }
            // Thresholds of the guards on this loop's register.
            let f = &mut facts[l];
            if f.kept {
                continue;
            }
            let (n, reg) = (em.loops[l].0 as i64, d as u8);
            for c in &nd.inst.pred {
                let Some((coeffs, k)) = difference(c) else {
                    f.kept = true;
                    break;
                };
                if !coeffs.iter().any(|&(r, _)| r == reg) {
                    continue;
                }
                let [(_, a)] = coeffs[..] else {
                    f.kept = true;
                    break;
                };
                // a * r + k against 0 changes around r = -k / a.
                let t = -k as f64 / a as f64;
                if t <= n as f64 / 4.0 {
                    f.low = f.low.max(t.ceil() as i64 + 1);
                } else if t >= n as f64 * 3.0 / 4.0 {
                    f.high = f.high.max(n - t.floor() as i64 + 1);
                } else {
                    f.kept = true;
                    break;
                }
            }
        }
    }
    // Accesses: nothing outside a loop may meet its accesses (but beside the loop); inside,
    // equal coefficients on its register.
    let mut kept: SecondaryMap<BirLoop, bool> = SecondaryMap::new();
    for (l, f) in facts.iter() {
        kept[l] = f.kept;
    }
    let mut sweep = Sweep::new(em, &parent, &mut kept);
    let mut by_space: HashMap<Space, Vec<(Node, usize)>> = HashMap::new();
    for (i, nd) in em.nodes.iter() {
        for (k, f) in nd.foot.iter().enumerate() {
            by_space.entry(f.space).or_default().push((i, k));
        }
    }
    for feet in by_space.values_mut() {
        feet.sort_by_key(|&(i, k)| em.nodes[i].foot[k].region.0);
        sweep.space(feet);
    }
    // (What the guards decided, for the check below.)
    let by_guards: SecondaryMap<BirLoop, bool> = (facts.iter()).map(|(l, f)| (l, f.kept)).collect();
    for (l, f) in facts.iter_mut() {
        f.kept = kept[l];
    }
    if cfg!(debug_assertions) && em.nodes.len() <= CHECKED_NODES {
        for l in em.loops.keys() {
            let by_pairs = by_guards[l] || breaks_by_pairs(em, l);
            assert_eq!(
                facts[l].kept, by_pairs,
                "loop {l}: the sweep decides as every pair of accesses does"
            );
        }
    }
    facts
}

/// Debug builds check the sweep of [`compute_loop_facts`] against every pair of accesses on
/// kernels of at most this many nodes.
const CHECKED_NODES: usize = 400;

/// Debug builds: whether a pair of accesses that may touch the same bytes breaks a condition
/// for loop `l`, every pair of footprints of the kernel tried (what the sweep decides).
fn breaks_by_pairs(em: &Emitted, l: BirLoop) -> bool {
    let depth = em.loops[l].1;
    let inside = |nd: &crate::codegen::emit::NodeData| nd.loops.get(depth) == Some(&l);
    let reg = depth as u8;
    let parent = match em.nodes.values().find(|nd| inside(nd)) {
        Some(nd) => &nd.loops[..depth],
        None => &[][..],
    };
    for (xi, x) in em.nodes.iter() {
        for (yi, y) in em.nodes.iter() {
            if xi > yi || inside(x) == inside(y) && !inside(x) {
                continue;
            }
            for fx in &x.foot {
                for fy in &y.foot {
                    if !feet_may_meet(fx, fy) {
                        continue;
                    }
                    if inside(x) != inside(y) {
                        let out = if inside(x) { y } else { x };
                        let (within, beside) = if inside(x) { (fx, fy) } else { (fy, fx) };
                        if out.loops[..] != parent[..]
                            || (lin_coeff(&within.r0, reg) != 0 || lin_coeff(&within.c0, reg) != 0)
                                && !edge_only(em, l, within, beside)
                        {
                            return true;
                        }
                        continue;
                    }
                    if lin_coeff(&fx.r0, reg) != lin_coeff(&fy.r0, reg)
                        || lin_coeff(&fx.c0, reg) != lin_coeff(&fy.c0, reg)
                    {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// A footprint in the sweep: its node and its index in the node's footprints.
type FootAt = (Node, usize);

/// The footprints begun so far that may still meet a later one, of one kind (writes, or
/// reads), counted by what the conditions ask: by the loops around their node, by the loops
/// they are inside of, and by those loops with their coefficients on the loop's register.
#[derive(Default)]
struct Active {
    /// By end (the earliest first): a footprint ending at or before a start meets nothing that
    /// starts later.
    ends: BinaryHeap<Reverse<(u64, FootAt)>>,
    total: u32,
    by_class: HashMap<usize, u32>,
    by_loop: HashMap<BirLoop, u32>,
    by_key: HashMap<(BirLoop, i64, i64), u32>,
    /// The footprints themselves by nest class (those beside a loop, checked one by one).
    members: HashMap<usize, HashSet<FootAt>>,
    /// Per loop (not kept), its footprints that move with its register.
    moving: HashMap<BirLoop, HashSet<FootAt>>,
}

/// The sweep of [`compute_loop_facts`] over the footprints of one space by start: each
/// footprint, when its turn comes, meets exactly the active ones (begun before it and not yet
/// ended; with a write between them), and the counts of [`Active`] say whether one of those
/// breaks a condition for a loop, without visiting the pairs.
struct Sweep<'a> {
    em: &'a Emitted,
    /// Per node, the number of its loop nest (`loops`), equal for equal nests.
    class: SecondaryMap<Node, usize>,
    /// Per loop, the number of the nest around it ([`Sweep::class`]; `usize::MAX`: no node
    /// inside it).
    parent: SecondaryMap<BirLoop, usize>,
    kept: &'a mut SecondaryMap<BirLoop, bool>,
    writes: Active,
    reads: Active,
}

impl<'a> Sweep<'a> {
    fn new(
        em: &'a Emitted,
        parent: &SecondaryMap<BirLoop, Option<&[BirLoop]>>,
        kept: &'a mut SecondaryMap<BirLoop, bool>,
    ) -> Sweep<'a> {
        let mut classes: HashMap<&[BirLoop], usize> = HashMap::new();
        let mut class = SecondaryMap::new();
        for (i, nd) in em.nodes.iter() {
            let n = classes.len();
            class[i] = *classes.entry(&nd.loops[..]).or_insert(n);
        }
        let mut parents = SecondaryMap::with_default(usize::MAX);
        for (l, p) in parent.iter() {
            if let Some(p) = p {
                let n = classes.len();
                parents[l] = *classes.entry(p).or_insert(n);
            }
        }
        Sweep {
            em,
            class,
            parent: parents,
            kept,
            writes: Active::default(),
            reads: Active::default(),
        }
    }

    fn foot(&self, (i, k): FootAt) -> &'a Foot {
        &self.em.nodes[i].foot[k]
    }

    fn keys(&self, f: FootAt) -> impl Iterator<Item = (BirLoop, i64, i64)> + 'a {
        keys(self.em, f)
    }

    /// Sweeps the footprints `feet` of one space, sorted by start.
    fn space(&mut self, feet: &[FootAt]) {
        // (Nothing of another space meets these.)
        self.writes = Active::default();
        self.reads = Active::default();
        for &f in feet {
            let ff = self.foot(f);
            let (start, end) = ff.region;
            if start == end {
                // (An empty footprint meets those that strictly contain its point: checked
                // against every other footprint of the space.)
                for &g in feet {
                    if g != f && feet_may_meet(ff, self.foot(g)) {
                        self.pair(f, g);
                    }
                }
                continue;
            }
            let em = self.em;
            for active in [&mut self.writes, &mut self.reads] {
                while let Some(&Reverse((e, g))) = active.ends.peek() {
                    if e > start {
                        break;
                    }
                    active.ends.pop();
                    change(active, g, self.class[g.0], keys(em, g), false, self.kept);
                }
            }
            self.meet(f, false);
            if ff.write {
                self.meet(f, true);
            }
            let active = if ff.write {
                &mut self.writes
            } else {
                &mut self.reads
            };
            active.ends.push(Reverse((end, f)));
            change(active, f, self.class[f.0], keys(em, f), true, self.kept);
        }
    }

    /// Marks the loops that footprint `f` and the active writes (`reads`: reads) break a
    /// condition for.
    fn meet(&mut self, f: FootAt, reads: bool) {
        let class = self.class[f.0];
        let keys: Vec<_> = self.keys(f).collect();
        for &(l, r, c) in &keys {
            let active = if reads { &self.reads } else { &self.writes };
            if self.kept[l] {
                continue;
            }
            let inside = count(&active.by_loop, l);
            // One outside `l` and not beside it; or beside it, when `f` moves with `l`'s
            // register and the one beside may meet one of its middle iterations.
            let mut beside = count(&active.by_class, self.parent[l]);
            if (r, c) != (0, 0) {
                let at = self.foot(f);
                let members = active.members.get(&self.parent[l]);
                if members
                    .is_some_and(|m| m.iter().any(|&g| !edge_only(self.em, l, at, self.foot(g))))
                {
                    beside = 0;
                }
            }
            // Two inside `l` with different coefficients on its register.
            let same = count(&active.by_key, (l, r, c));
            if active.total - inside > beside || inside > same {
                self.keep(l);
            }
        }
        // `f` outside a loop that an active footprint is inside of, and not beside it.
        let active = if reads { &self.reads } else { &self.writes };
        // Or beside it, when one of the active footprints inside it moves with its register and
        // `f` may meet one of its middle iterations.
        let at = self.foot(f);
        let broken: Vec<BirLoop> = (active.by_loop.keys())
            .copied()
            .filter(|&l| {
                !keys.iter().any(|k| k.0 == l)
                    && (self.parent[l] != class
                        || active.moving.get(&l).is_some_and(|m| {
                            m.iter().any(|&g| !edge_only(self.em, l, self.foot(g), at))
                        }))
            })
            .collect();
        for l in broken {
            self.keep(l);
        }
    }

    /// Loop `l` keeps its trip count: its counts are dropped (and no longer kept).
    fn keep(&mut self, l: BirLoop) {
        self.kept[l] = true;
        self.writes.by_loop.remove(&l);
        self.reads.by_loop.remove(&l);
    }

    /// The conditions on the pair of footprints `f` and `g` (which may meet), checked directly.
    fn pair(&mut self, f: FootAt, g: FootAt) {
        let (fk, gk): (Vec<_>, Vec<_>) = (self.keys(f).collect(), self.keys(g).collect());
        for (me, mine, theirs, other) in [(f, &fk, &gk, g), (g, &gk, &fk, f)] {
            for &(l, r, c) in mine {
                let breaks = match theirs.iter().find(|k| k.0 == l) {
                    Some(&(_, r2, c2)) => (r, c) != (r2, c2),
                    None => {
                        self.class[other.0] != self.parent[l]
                            || (r, c) != (0, 0)
                                && !edge_only(self.em, l, self.foot(me), self.foot(other))
                    }
                };
                if breaks {
                    self.keep(l);
                }
            }
        }
    }
}

/// The loops footprint `(i, k)` is inside of, each with its coefficients on the loop's register
/// (the key of the condition on two accesses inside it).
fn keys(em: &Emitted, (i, k): FootAt) -> impl Iterator<Item = (BirLoop, i64, i64)> + '_ {
    let f = &em.nodes[i].foot[k];
    (em.nodes[i].loops.iter().enumerate())
        .filter(move |&(d, &l)| em.loops[l].1 == d)
        .map(move |(d, &l)| (l, lin_coeff(&f.r0, d as u8), lin_coeff(&f.c0, d as u8)))
}

/// How many of `m` have key `k`.
fn count<K: std::hash::Hash + Eq>(m: &HashMap<K, u32>, k: K) -> u32 {
    m.get(&k).copied().unwrap_or(0)
}

/// Adds (`add`) or removes a footprint of the nest numbered `class`, inside the loops `keys`,
/// to or from the counts of `active`. The loops that keep their trip count are not counted
/// (nothing asks about them any more), and a loop's count that falls to 0 goes, so that the
/// loops counted are those of the active footprints.
fn change(
    active: &mut Active,
    f: FootAt,
    class: usize,
    keys: impl Iterator<Item = (BirLoop, i64, i64)>,
    add: bool,
    kept: &SecondaryMap<BirLoop, bool>,
) {
    let step = |n: &mut u32| {
        if add {
            *n += 1;
        } else {
            *n -= 1;
        }
    };
    step(&mut active.total);
    step(active.by_class.entry(class).or_default());
    let set = |s: &mut HashSet<FootAt>| {
        if add {
            s.insert(f);
        } else {
            s.remove(&f);
        }
    };
    set(active.members.entry(class).or_default());
    for (l, r, c) in keys {
        if kept[l] {
            continue;
        }
        let n = active.by_loop.entry(l).or_default();
        step(n);
        if *n == 0 {
            active.by_loop.remove(&l);
        }
        step(active.by_key.entry((l, r, c)).or_default());
        if (r, c) != (0, 0) {
            set(active.moving.entry(l).or_default());
        }
    }
}

/// How many first iterations of a clamped loop the copy keeps at least, exactly as they are,
/// footprints included ([`clamp_loop`]: the first `B / 2`, with `B >= MAX_DISTANCE + 2`). Its
/// last iterations keep their guards and ring phases but not the addresses of a footprint that
/// moves with the register (clamped iteration `i >= B / 2` touches what real iteration `i`
/// does, not `i + S`), so an access beside the loop that meets those would meet nothing on the
/// copy.
pub(crate) const EDGE: i64 = (MAX_DISTANCE + 2) / 2;

/// Whether footprint `beside` (of an instruction beside loop `l`) can meet footprint `within`
/// (inside `l`, moving with its register) only in `l`'s first [`EDGE`] iterations, which the
/// clamped copy keeps with their addresses: both of one buffer, affine without rotation, with
/// equal coefficients on the registers of the loops around `l` and none on deeper ones, so that
/// the iterations whose rows and columns overlap form one interval, computed here.
fn edge_only(em: &Emitted, l: BirLoop, within: &Foot, beside: &Foot) -> bool {
    let (trip, depth) = em.loops[l];
    let n = trip as i64;
    if within.tensor != beside.tensor {
        return false;
    }
    // The iterations `i` whose `[k i + a, k i + a + na)` meets `[b, b + nb)`.
    let axis = |a: &runtime_sim::isa::Expr, na: u64, b: &runtime_sim::isa::Expr, nb: u64| {
        let mut k = 0;
        for t in &a.terms {
            match *t {
                Term::Lin { coeff, reg } if (reg.0 as usize) < depth => {
                    if lin_coeff(b, reg.0) != coeff {
                        return None;
                    }
                }
                Term::Lin { coeff, reg } if reg.0 as usize == depth => k += coeff,
                _ => return None,
            }
        }
        for t in &b.terms {
            match *t {
                Term::Lin { coeff, reg } if (reg.0 as usize) < depth => {
                    if lin_coeff(a, reg.0) != coeff {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        // `d - na < k i < d + nb`.
        let d = b.constant - a.constant;
        let (lo, hi) = (d - na as i64, d + nb as i64);
        Some(match k.cmp(&0) {
            std::cmp::Ordering::Equal => {
                if lo < 0 && 0 < hi {
                    (0, n - 1)
                } else {
                    (0, -1)
                }
            }
            std::cmp::Ordering::Greater => (lo.div_euclid(k) + 1, (hi - 1).div_euclid(k)),
            std::cmp::Ordering::Less => {
                let k = -k;
                ((-hi).div_euclid(k) + 1, (-lo - 1).div_euclid(k))
            }
        })
    };
    let Some((r_lo, r_hi)) = axis(&within.r0, within.nr, &beside.r0, beside.nr) else {
        return false;
    };
    let Some((c_lo, c_hi)) = axis(&within.c0, within.nc, &beside.c0, beside.nc) else {
        return false;
    };
    let (lo, hi) = (r_lo.max(c_lo).max(0), r_hi.min(c_hi).min(n - 1));
    lo > hi || hi < EDGE
}

/// How loop `l` is clamped: `(B, S)`, or `None` when it keeps its trip count.
fn clamp_loop(em: &Emitted, l: BirLoop, period: i64, f: &LoopFacts) -> Option<(i64, i64)> {
    if f.kept {
        return None;
    }
    let n = em.loops[l].0 as i64;
    let h = f.low.max(f.high).max(0);
    let b_min = 2 * h + MAX_DISTANCE + 2 + period;
    let b = b_min + (n - b_min).rem_euclid(period);
    (b < n).then_some((b, n - b))
}

/// The clamped copy of `em`, or `None` when no loop is clamped.
pub fn clamp_trips(em: &Emitted) -> Option<Emitted> {
    let mut period = 1i64;
    for nd in em.nodes.values() {
        for f in &nd.foot {
            for t in f.r0.terms.iter().chain(&f.c0.terms) {
                if let Term::Mod { modulus, .. } = *t {
                    period = period / gcd(period, modulus) * modulus;
                    if period > MAX_PERIOD {
                        return None;
                    }
                }
            }
        }
    }
    let facts = compute_loop_facts(em);
    let plans: Vec<(BirLoop, Option<(i64, i64)>)> = em
        .loops
        .keys()
        .map(|l| (l, clamp_loop(em, l, period, &facts[l])))
        .collect();
    if plans.iter().all(|(_, p)| p.is_none()) {
        return None;
    }
    let mut out = em.clone();
    for &(l, plan) in &plans {
        let Some((b, s)) = plan else { continue };
        let (trip, depth) = em.loops[l];
        out.loops[l].0 = b as u64;
        let reg = depth as u8;
        for nd in out.nodes.values_mut() {
            if nd.loops.get(depth) != Some(&l) {
                continue;
            }
            for c in nd.inst.pred.iter_mut() {
                let Some((coeffs, k)) = difference(c) else {
                    continue;
                };
                let Some(&(_, a)) = coeffs.iter().find(|&&(r, _)| r == reg) else {
                    continue;
                };
                let t = -k as f64 / a as f64;
                if t >= trip as f64 * 3.0 / 4.0 {
                    // The real iteration is the clamped one plus `s`: a * (r + s) + k.
                    c.lhs.constant += a * s;
                }
            }
        }
    }
    Some(out)
}
