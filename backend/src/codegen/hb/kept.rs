//! Which waits the program keeps ([`crate::codegen::hb`]): [`Checker::keep`] applies
//! [`crate::codegen::redundant`]'s rule (a wait whose value is never positive is dropped, and so
//! is one that a wait kept earlier in the same stretch of the same engine implies) stretch by
//! stretch, incrementally: a pass starts at the first node whose waits changed and stops where
//! the waits kept so far are the last pass's again ([`KeptRun`]).
//!
//! Invariant: [`Checker::kept`] is what [`crate::codegen::redundant::drop_redundant_waits`]
//! keeps of the live waits, computed at once (debug builds check it after the pruning), and
//! `readers`/`read_now` count the kept waits of each semaphore.

use super::checker::{Checker, KeptRun};
use super::clock::Lane;
use super::{Alive, THREADS};
use crate::codegen::entities::{Node, Stretch, WaitId};
use crate::codegen::redundant;
use cranelift_entity::EntityRef;
use runtime_sim::isa::Engine;

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

    /// Whether the program drops wait `b` (of node `i`) when wait `a` ran before it in the same
    /// iteration of the same body of the same engine.
    fn implies(&mut self, a: WaitId, b: WaitId, i: Node) -> bool {
        let at = a.index() * self.waits.len() + b.index();
        let dense = !self.implied.is_empty();
        if dense && self.implied[at] != 0 {
            return self.implied[at] == 2;
        }
        if let Some(&x) = self.implied_sparse.get(&(a, b)) {
            return x;
        }
        let (wa, wb) = (self.wait(a), self.wait(b));
        let x = redundant::makes_redundant(self.em, Some(self.inst), i, &self.signaller, wa, wb);
        if dense {
            self.implied[at] = 1 + u8::from(x);
        } else {
            self.implied_sparse.insert((a, b), x);
        }
        x
    }

    /// Makes `ws` the waits node `i` keeps, counting the semaphores they read; returns the
    /// waits it kept before.
    pub(super) fn set_kept(&mut self, i: Node, ws: Vec<WaitId>) -> Vec<WaitId> {
        let was = std::mem::replace(&mut self.kept[i], ws);
        for &w in &was {
            let s = self.waits[w].sem;
            self.readers[s] -= 1;
            self.read_now[s] = self.readers[s] > 0;
            self.dirty.push(s);
        }
        for &w in &self.kept[i] {
            let s = self.waits[w].sem;
            self.readers[s] += 1;
            self.read_now[s] = true;
            self.dirty.push(s);
        }
        was
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
    /// first node after the last changed one where the kept waits so far are again the last
    /// pass's: from there on every node keeps what it kept. A run of waits removed one at a time
    /// down a long stretch so costs what changes, not the stretch per wait.
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
            Some(run) => (Some(run.lists), run.lens),
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
        let mut known: Vec<Vec<WaitId>> = vec![Vec::new(); THREADS];
        let base = lens[start];
        if let Some(lists) = &old {
            for (t, k) in known.iter_mut().enumerate() {
                k.extend_from_slice(&lists[t][..base[t] as usize]);
            }
        }
        let mut converged = false;
        let (mut ws, mut candidates) = (Vec::new(), Vec::new());
        for (at, &i) in nodes.iter().enumerate().skip(start) {
            ws.clear();
            candidates.clear();
            candidates.extend(
                (self.of_node[i].iter())
                    .filter(|&&w| alive[w] && self.positive[w])
                    .map(|&w| (w, self.producer_thread[w])),
            );
            // The budget counts this pass's comparisons too: each candidate is compared with
            // the waits kept before it on its producer's thread (a long stretch whose passes
            // never converge would otherwise cost its length cubed, unbudgeted).
            self.steps += (candidates.iter())
                .map(|&(_, t)| known[t].len() as u64 + 1)
                .sum::<u64>();
            redundant::keep_node(
                candidates.iter().copied(),
                &mut known,
                |a, w| self.implies(a, w, i),
                &mut ws,
            );
            if ws != self.kept[i] {
                let was = self.set_kept(i, ws.clone());
                moved.push((i, was));
            }
            let now: [u32; THREADS] = std::array::from_fn(|t| known[t].len() as u32);
            let before = std::mem::replace(&mut lens[at + 1], now);
            if let Some(lists) = &old {
                if at >= last
                    && now == before
                    && (0..THREADS).all(|t| {
                        let r = base[t] as usize..now[t] as usize;
                        known[t][r.clone()] == lists[t][r]
                    })
                {
                    converged = true;
                    break;
                }
            }
        }
        let lists = match (converged, old) {
            (true, Some(lists)) => lists,
            _ => known,
        };
        self.runs[s] = Some(KeptRun { lists, lens });
        self.segments[s].1 = nodes;
    }
}
