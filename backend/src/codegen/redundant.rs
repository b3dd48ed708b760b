//! Redundant waits: the one place that decides which of the synchronisation's waits the program
//! keeps, and which nodes signal ([`drop_redundant_waits`]). [`crate::codegen::assemble`] then
//! prints what is left, and the wait pruning ([`crate::codegen::hb`]) applies the same rule
//! (the functions here) to the programs it tries.
//!
//! **The rule.** Each engine's stream is cut into *stretches* ([`compute_stretches`]): the nodes of
//! the engine in one body of a loop (or the kernel's top level) between the nested loops that
//! hold work of the engine, in program order. Within a stretch, the waits of its nodes are
//! visited in order, and a wait is dropped when
//! - its value is never positive over its node's trip counts ([`may_keep`]): it always holds; or
//! - a wait kept earlier in the stretch, whose guard is a subset of its own, asks for at least as
//!   much ([`makes_redundant`]): on the same semaphore with the same terms and a constant at
//!   least as large, or on a semaphore whose signaller's completion implies its signaller's
//!   ([`crate::codegen::sync::implies`]). Both producers are then on one thread (one DMA
//!   queue, or one compute engine), and the earlier wait's target is not before the later
//!   one's, so only the kept waits on the same producer thread whose targets are at or after
//!   its own are compared ([`keep_node`], [`crate::codegen::targets`]).
//!
//! A node signals its semaphore only when some kept wait reads it.
//!
//! Invariants: only waits and signals are dropped; a kept wait is one the synchronisation
//! computed, unchanged, before the same node; every semaphore some kept wait reads is signalled.

use crate::codegen::emit::{ENode, Emitted, Node};
use crate::codegen::entities::Sem;
use crate::codegen::footprints::{decode, Instances};
use crate::codegen::sync::{self, Sync, Wait};
use crate::codegen::targets::{self, Known, Order, Reference, Target};
use cranelift_entity::SecondaryMap;
use runtime_sim::isa::{Cmp, Engine, MAX_REGS};

/// Drops the waits of `sync` that the rule of the module doc makes redundant on `em` (the
/// kernel the program is built from), and the signals no kept wait reads. Returns the number of
/// waits dropped.
pub fn drop_redundant_waits(em: &Emitted, sync: &mut Sync) -> usize {
    // The instance table of the analysis, when it ran on `em` itself (not on the trip-clamped
    // copy): a wait's reference instance is then found among its node's running instances,
    // not by decoding every instance of its loops from the last (a node of a loop spread over
    // many stages runs in few of them).
    let table = sync.instances.clone();
    let inst = table.as_deref().filter(|t| describes(t, em));
    let signaller = compute_signallers(sync);
    let thread_of = |w: &Wait| signaller[w.sem].map_or(0, |i| sync::thread(&em.nodes[i]));
    let mut keep: SecondaryMap<Node, Vec<bool>> = (sync.waits.iter())
        .map(|(i, ws)| (i, vec![false; ws.len()]))
        .collect();
    let order = Order::new(em);
    let mut classes = GuardClasses::default();
    let mut kept = Vec::new();
    for (_, nodes) in compute_stretches(em) {
        // The kept waits so far, as (node, index in its waits), by producer thread.
        let mut known: Known<(Node, usize)> = Known::new(sync::THREADS);
        for i in nodes {
            let trips = sync::trips(em, &em.nodes[i]);
            let candidates = (sync.waits[i].iter().enumerate())
                .filter(|(_, w)| may_keep(w, &trips))
                .map(|(k, w)| ((i, k), thread_of(w)));
            kept.clear();
            let mut regs = [0i64; MAX_REGS];
            keep_node(
                candidates,
                &mut known,
                |(bi, bk)| classes.class(&sync.waits[bi][bk].pred),
                |(bi, bk)| {
                    let w = &sync.waits[bi][bk];
                    let x = signaller[w.sem]?;
                    targets::reference(em, inst, &order, bi, x, w)
                },
                |(ai, ak), (bi, bk)| guard_within(&sync.waits[ai][ak], &sync.waits[bi][bk]),
                |(ai, ak), v| {
                    let a = &sync.waits[ai][ak];
                    decode(&trips, v, &mut regs);
                    let z = signaller[a.sem]?;
                    order.target(em, z, &a.value, &regs)
                },
                |(ai, ak), (bi, bk)| {
                    let (a, b) = (&sync.waits[ai][ak], &sync.waits[bi][bk]);
                    makes_redundant(em, inst, bi, &signaller, a, b)
                },
                &mut kept,
            );
            for &(_, k) in &kept {
                keep[i][k] = true;
            }
        }
    }
    let mut dropped = 0;
    let mut read: SecondaryMap<Sem, bool> = SecondaryMap::new();
    for (i, ws) in sync.waits.iter_mut() {
        let mut it = std::mem::take(&mut keep[i]).into_iter();
        ws.retain(|_| {
            let k = it.next().expect("one flag per wait");
            dropped += usize::from(!k);
            k
        });
        for w in ws.iter() {
            read[w.sem] = true;
        }
    }
    for s in sync.signal.values_mut() {
        if s.expand().is_some_and(|s| !read[s]) {
            *s = None.into();
        }
    }
    dropped
}

/// Whether `inst` is the instance table of `em`: one entry per node, with its trip counts.
fn describes(inst: &Instances, em: &Emitted) -> bool {
    inst.trips.keys().count() == em.nodes.len()
        && (em.nodes.iter()).all(|(i, n)| inst.trips[i] == sync::trips(em, n))
}

/// The node that signals each semaphore.
pub fn compute_signallers(sync: &Sync) -> SecondaryMap<Sem, Option<Node>> {
    let mut signaller = SecondaryMap::new();
    for (i, s) in sync.signal.iter() {
        if let Some(s) = s.expand() {
            signaller[s] = Some(i);
        }
    }
    signaller
}

/// Every engine's stretches, engine by engine ([`Engine::ALL`]), each in program order.
pub fn compute_stretches(em: &Emitted) -> Vec<(Engine, Vec<Node>)> {
    let mut out = Vec::new();
    for e in Engine::ALL {
        let mut mine = Vec::new();
        stretches_in(em, &em.tree, e, &mut mine);
        out.extend(mine.into_iter().map(|s| (e, s)));
    }
    out
}

/// The stretches of engine `e`'s nodes in `tree`: a stretch ends at every nested loop that holds
/// work of `e`.
fn stretches_in(em: &Emitted, tree: &[ENode], e: Engine, out: &mut Vec<Vec<Node>>) {
    let mut cur: Vec<Node> = Vec::new();
    for t in tree {
        match t {
            ENode::Loop(_, body) => {
                if !sync::engine_has(em, body, e) {
                    continue;
                }
                stretches_in(em, body, e, out);
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            ENode::Inst(i) => {
                if em.nodes[*i].engine == e {
                    cur.push(*i);
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
}

/// Whether wait `w` of a node with trip counts `trips` may be kept: its value is positive
/// somewhere.
pub fn may_keep(w: &Wait, trips: &[i64]) -> bool {
    !sync::never_positive(&w.value, trips)
}

/// Whether wait `a`, kept earlier in the stretch of node `i`, makes `i`'s wait `b` redundant.
/// `inst`, when given, is `em`'s instance table ([`sync::implies`]: the same answer, sooner).
pub fn makes_redundant(
    em: &Emitted,
    inst: Option<&Instances>,
    i: Node,
    signaller: &SecondaryMap<Sem, Option<Node>>,
    a: &Wait,
    b: &Wait,
) -> bool {
    let signaller = |s: Sem| signaller[s].expect("every waited semaphore has its signaller");
    guard_within(a, b)
        && ((a.sem == b.sem
            && a.value.terms == b.value.terms
            && a.value.constant >= b.value.constant)
            || sync::implies(
                em,
                inst,
                i,
                signaller(a.sem),
                &a.value,
                signaller(b.sem),
                &b.value,
            ))
}

/// Guards interned as classes: two waits whose guards (`pred`) are the same list have the same
/// class, so whether an earlier wait's guard is a subset of theirs ([`guard_within`], the first
/// condition of [`makes_redundant`]) is the same for both ([`Known::any_implies`] keeps an index
/// per class).
#[derive(Default)]
pub struct GuardClasses<'a> {
    ids: std::collections::HashMap<&'a [Cmp], u32>,
}

impl<'a> GuardClasses<'a> {
    /// The class of guard `pred`.
    pub fn class(&mut self, pred: &'a [Cmp]) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(pred).or_insert(next)
    }
}

/// Whether wait `a`'s guard is a subset of wait `b`'s: a necessary condition of
/// [`makes_redundant`] that depends on `b` only through its guard.
pub fn guard_within(a: &Wait, b: &Wait) -> bool {
    a.pred.iter().all(|c| b.pred.contains(c))
}

/// One node of a stretch: of its `candidates` (its waits that [`may_keep`], in order, each with
/// its producer's thread), keeps in `kept` those that no wait kept before (in `known`, by
/// producer thread) makes redundant, and adds them to `known`. Only the kept waits whose target
/// (`target(a, v)`: at instance `v` of the stretch) is at or after the candidate's at its
/// reference (`reference(w)`, [`targets::reference`]), and whose guard is within the candidate's
/// (`may_imply(a, w)`, which depends on `w` only through `class(w)`), are compared
/// ([`Known::any_implies`]).
#[allow(clippy::too_many_arguments)]
pub fn keep_node<W: Copy, R: std::borrow::Borrow<Reference>>(
    candidates: impl IntoIterator<Item = (W, usize)>,
    known: &mut Known<W>,
    mut class: impl FnMut(W) -> u32,
    mut reference: impl FnMut(W) -> Option<R>,
    mut may_imply: impl FnMut(W, W) -> bool,
    mut target: impl FnMut(W, i64) -> Option<Target>,
    mut redundant: impl FnMut(W, W) -> bool,
    kept: &mut Vec<W>,
) {
    for (w, t) in candidates {
        let found = known.any_implies(
            t,
            w,
            || class(w),
            || reference(w),
            |a| may_imply(a, w),
            &mut target,
            &mut redundant,
        );
        if !found {
            known.push(t, w);
            kept.push(w);
        }
    }
}
