//! Which waits the program keeps ([`crate::codegen::hb`]): [`Checker::keep`] applies
//! [`crate::codegen::redundant`]'s rule (a wait whose value is never positive is dropped, and so
//! is one that a wait kept earlier in the same stretch of the same engine implies) stretch by
//! stretch, incrementally: a pass starts at the first node whose waits changed and stops past
//! the last node whose kept waits the waits kept differently so far could change
//! ([`crate::codegen::targets::Reach`]: a wait is made redundant only by one whose target is at
//! or after its own), the rest of the last pass standing ([`KeptRun`]). Each wait is compared
//! only with the kept waits of its producer's thread whose targets are at or after its own
//! ([`crate::codegen::targets::Known`]).
//!
//! Invariant: [`Checker::kept`] is what [`crate::codegen::redundant::drop_redundant_waits`]
//! keeps of the live waits, computed at once (debug builds check it after the pruning).

use super::checker::{Checker, KeptRun};
use super::clock::Lane;
use super::{Alive, THREADS};
use crate::codegen::entities::{Node, Stretch, WaitId};
use crate::codegen::footprints::decode;
use crate::codegen::redundant;
use crate::codegen::targets::{self, Known, Reach, Reference};
use cranelift_entity::EntityRef;
use runtime_sim::isa::{Engine, MAX_REGS};
use std::rc::Rc;

impl<'a, L: Lane> Checker<'a, L> {
    /// Cuts every engine's stream into its stretches ([`redundant::compute_stretches`]).
    pub(super) fn compute_segments(&mut self) {
        for (e, seg) in redundant::compute_stretches(self.em) {
            let id = self.segments.next_key();
            for (k, &i) in seg.iter().enumerate() {
                self.segment_of[i] = id.into();
                self.position[i] = k;
            }
            self.segments.push((e, seg));
        }
    }

    /// The reach of the waits of the stretch of `nodes` ([`Reach`]): every wait that may be
    /// kept, alive or not (the reach of more waits is further).
    fn compute_reach(&mut self, nodes: &[Node]) -> Reach {
        let mut all = Vec::new();
        for (pos, &i) in nodes.iter().enumerate() {
            for k in 0..self.of_node[i].len() {
                let w = self.of_node[i][k];
                if self.positive[w] {
                    let r = self.reference(w).map(|r| (*r).clone());
                    all.push((pos, self.producer_thread[w], r));
                }
            }
        }
        Reach::new(THREADS, all)
    }

    /// Wait `w`'s reference instance and its target there ([`targets::reference`]; memoised).
    fn reference(&mut self, w: WaitId) -> Option<Rc<Reference>> {
        if let Some(r) = &self.reference[w] {
            return r.clone();
        }
        let b = self.wait(w);
        let r = (self.signaller[b.sem])
            .and_then(|x| {
                let i = self.waits[w].node;
                targets::reference(self.em, Some(self.inst), &self.target_order, i, x, b)
            })
            .map(Rc::new);
        self.reference[w] = Some(r.clone());
        r
    }

    /// Makes `ws` the waits node `i` keeps; returns the waits it kept before.
    pub(super) fn set_kept(&mut self, i: Node, ws: Vec<WaitId>) -> Vec<WaitId> {
        std::mem::replace(&mut self.kept[i], ws)
    }

    /// Sets [`Checker::kept`] for the nodes of engine `e`: the waits of `alive` that the program
    /// keeps, by [`redundant`]'s rule: a wait whose value is never positive is dropped,
    /// and so is one that a wait kept earlier in the same iteration of the same body of the same
    /// engine implies. (The other engines' waits do not change what it keeps on `e`.)
    pub(super) fn keep(&mut self, e: Engine, alive: &Alive) {
        if self.segments.is_empty() {
            self.compute_segments();
        }
        let mut moved = Vec::new();
        for s in self.segments.keys() {
            if self.segments[s].0 == e {
                self.runs[s] = None;
                self.keep_segment(s, alive, &mut moved, &[]);
            }
        }
    }

    /// [`Checker::keep`] for stretch `s` only (the one whose kept waits change when a wait of
    /// one of its nodes does). Each node whose kept waits change is pushed on `moved` with the
    /// waits it had.
    ///
    /// `changed` are the nodes of the stretch whose waits changed (were removed or came back)
    /// since the last call for it. What a node keeps depends only on its own waits and on the
    /// waits kept before it in the stretch (by producer thread), so the pass starts at the first
    /// changed node, from the kept waits the last pass had there ([`KeptRun`]), and stops at the
    /// first node, at or after the last changed one, past which no wait that this pass kept
    /// differently (came or went) can make a later wait redundant ([`Reach`]): from there on
    /// every node keeps what it kept, and the last pass's lists and counts stand (shifted by
    /// what changed). A run of waits removed one at a time down a long stretch so costs what
    /// changes, not the stretch per wait, when the waits' targets move along with the stretch
    /// (each wait asks for recent signals); when a later wait may ask for an older signal than
    /// the one that changed, the pass goes on to it.
    pub(super) fn keep_segment(
        &mut self,
        s: Stretch,
        alive: &Alive,
        moved: &mut Vec<(Node, Vec<WaitId>)>,
        changed: &[Node],
    ) {
        self.clean.remove(&s);
        let nodes = std::mem::take(&mut self.segments[s].1);
        let (old, mut lens) = match self.runs[s].take() {
            Some(run) => (Some(run.known), run.lens),
            None => (None, vec![[0; THREADS]; nodes.len() + 1]),
        };
        // Where the pass starts, and the last changed node.
        let mine = || {
            (changed.iter())
                .filter(|&&i| self.segment_of[i].expand() == Some(s))
                .map(|&i| self.position[i])
        };
        let (start, last) = match (&old, mine().min()) {
            (Some(_), Some(first)) => (first, mine().max().unwrap_or(first)),
            _ => (0, nodes.len()),
        };
        // The kept waits so far, by the thread of their producer: a wait implies another only
        // when both producers are on one thread (one queue, or one compute engine; `implies`).
        // The last pass's, cut where this one starts (its index by target with them); the
        // last pass's lists stay in `old_lists` to tell where this one converges.
        let base = lens[start];
        let (mut known, old_lists) = match old {
            Some(mut k) => {
                let lists = std::mem::take(&mut k.lists);
                k.lists = (lists.iter().zip(&base))
                    .map(|(l, &n)| l[..n as usize].to_vec())
                    .collect();
                k.truncate_index(&base);
                (k, Some(lists))
            }
            None => (Known::new(THREADS), None),
        };
        if old_lists.is_some() && self.reach[s].is_none() {
            self.reach[s] = Some(self.compute_reach(&nodes));
        }
        // The last position whose kept waits the waits kept differently so far may change.
        let mut until = last;
        let mut converged = None;
        let (mut ws, mut candidates) = (Vec::new(), Vec::new());
        for (at, &i) in nodes.iter().enumerate().skip(start) {
            ws.clear();
            candidates.clear();
            for k in 0..self.of_node[i].len() {
                let w = self.of_node[i][k];
                if alive[w] && self.positive[w] {
                    // (Computed only for a list too long to compare whole.)
                    let t = self.producer_thread[w];
                    let r = (cfg!(debug_assertions) || known.lists[t].len() > targets::FEW)
                        .then(|| self.reference(w))
                        .flatten();
                    candidates.push((w, t, r));
                }
            }
            // The budget counts this pass's candidates too (their comparisons are those with
            // the kept waits whose targets are at or after theirs: few, `targets`).
            self.steps += candidates.len() as u64;
            let (em, order) = (self.em, &self.target_order);
            let trips = &self.inst.trips[i];
            let mut regs = [0i64; MAX_REGS];
            let waits = &self.waits;
            let (sync, signaller) = (self.sync, &self.signaller);
            let mut cmp = |a: WaitId, w: WaitId| {
                let at = a.index() * waits.len() + w.index();
                let dense = !self.implied.is_empty();
                if dense && self.implied[at] != 0 {
                    return self.implied[at] == 2;
                }
                if let Some(&x) = self.implied_sparse.get(&(a, w)) {
                    return x;
                }
                let (wa, wb) = (
                    &sync.waits[waits[a].node][waits[a].index],
                    &sync.waits[waits[w].node][waits[w].index],
                );
                let x = redundant::makes_redundant(em, Some(self.inst), i, signaller, wa, wb);
                if dense {
                    self.implied[at] = 1 + u8::from(x);
                } else {
                    self.implied_sparse.insert((a, w), x);
                }
                x
            };
            let (guard_class, classes) = (&mut self.guard_class, &mut self.classes);
            redundant::keep_node(
                candidates.iter().map(|&(w, t, _)| (w, t)),
                &mut known,
                |w| {
                    if guard_class[w] == u32::MAX {
                        let wait = &sync.waits[waits[w].node][waits[w].index];
                        guard_class[w] = classes.class(&wait.pred);
                    }
                    guard_class[w]
                },
                |w| {
                    (candidates.iter())
                        .find(|c| c.0 == w)
                        .and_then(|c| c.2.clone())
                },
                |a, b| {
                    let (wa, wb) = (
                        &sync.waits[waits[a].node][waits[a].index],
                        &sync.waits[waits[b].node][waits[b].index],
                    );
                    redundant::guard_within(wa, wb)
                },
                |a, v| {
                    let wa = &sync.waits[waits[a].node][waits[a].index];
                    decode(trips, v, &mut regs);
                    order.target(em, signaller[wa.sem]?, &wa.value, &regs)
                },
                &mut cmp,
                &mut ws,
            );
            if ws != self.kept[i] {
                let was = self.set_kept(i, ws.clone());
                if old_lists.is_some() {
                    let reach = self.reach[s].as_ref().expect("computed above");
                    for &d in (was.iter())
                        .filter(|d| !ws.contains(d))
                        .chain((ws.iter()).filter(|d| !was.contains(d)))
                    {
                        let wd = &sync.waits[self.waits[d].node][self.waits[d].index];
                        let z = self.signaller[wd.sem];
                        let order = &self.target_order;
                        let affected = reach.last_affected(self.producer_thread[d], |v| {
                            decode(trips, v, &mut regs);
                            order.target(em, z?, &wd.value, &regs)
                        });
                        until = until.max(affected.unwrap_or(0));
                    }
                }
                moved.push((i, was));
            }
            let now: [u32; THREADS] = std::array::from_fn(|t| known.lists[t].len() as u32);
            let before = std::mem::replace(&mut lens[at + 1], now);
            // Past `until`, every later node keeps what it kept in the last pass: its waits are
            // the same, and the kept waits that differ make none of them redundant.
            // (Or where the kept waits so far are again the last pass's.)
            if let Some(lists) = &old_lists {
                let same = || {
                    now == before
                        && (0..THREADS).all(|t| {
                            let r = base[t] as usize..now[t] as usize;
                            known.lists[t][r.clone()] == lists[t][r]
                        })
                };
                if at >= until || (at >= last && same()) {
                    converged = Some((at, before, now));
                    break;
                }
            }
        }
        if let (Some((at, before, now)), Some(lists)) = (converged, old_lists) {
            // The rest of the last pass's lists stands, after this pass's (the index covers a
            // prefix of them), and the counts past `at` move by what this pass changed.
            for (t, l) in known.lists.iter_mut().enumerate() {
                l.extend_from_slice(&lists[t][before[t] as usize..]);
            }
            if before != now {
                for n in &mut lens[at + 2..] {
                    for t in 0..THREADS {
                        n[t] = n[t] - before[t] + now[t];
                    }
                }
            }
        }
        self.runs[s] = Some(KeptRun { known, lens });
        self.segments[s].1 = nodes;
    }
}
