//! Where a wait's target sits in program order, and a stretch's kept waits indexed by it
//! ([`Known`]), so that [`crate::codegen::redundant`]'s rule compares a wait only with the kept
//! waits that can make it redundant, not with every wait kept before it.
//!
//! **Why it is exact.** A kept wait `a` makes a later wait `b` of node `i` redundant
//! ([`crate::codegen::redundant::makes_redundant`]) only when, at every running instance `v` of
//! `i` where `b` asks for a signal (its value is at least 1), `a` asks for an instance of its
//! signaller that is not before the one `b` asks for in program order: either both wait on one
//! semaphore, with the same terms and a constant at least as large (the same node, an instance
//! at least as late), or `a`'s instance is on `b`'s thread and after it
//! ([`crate::codegen::sync::implies`], whose `precedes` is program order). So at one such
//! instance `v` (the wait's *reference*, [`reference`]), only the kept waits whose target at `v`
//! ([`Target`]) is at or after `b`'s can imply it; the others are not compared, and the answer
//! is the full scan's (debug builds compare the two on short lists, and on long ones within a
//! budget of comparisons per stretch, [`CHECKED_LIST`]; the module's tests on long ones).
//!
//! **The index.** Per producer thread, reference instance and guard class, [`Known`] keeps the
//! waits of its lists ordered by their target at that instance, built lazily (only for the
//! references asked for: one or a few per stretch, its nodes' last running instances) and
//! extended as waits are kept. Only the waits whose guard is within the class's enter it (a
//! wait implies another only then): the stages of a loop spread over a stage per statement each
//! have a guard and a reference of their own, and their indices hold a stage's waits each, not
//! the stretch's (a chain of 1,024 statements built 1,006 indices of every kept wait before). A wait that asks for the newest signal of its thread meets no candidate at all: a body
//! of thousands of transfers that each wait for the previous ones costs its waits times a
//! logarithm, not their square.
//!
//! **The order key** ([`Order::target`]) is computed from the loop tree, with no table of the
//! instances: for each loop of the node, outermost first, the first node of the loop (nodes are
//! numbered in program order, so a loop's nodes are an interval) and the instance's iteration,
//! then the node. Comparing two keys lexicographically compares the instances in program order.
//!
//! Invariants: the nodes of one stretch share their loops (one body), so an instance index
//! names the same registers for all of them; each index of [`Known`] holds exactly the first
//! `built` waits of its thread's list, each under its target at the index's reference.

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{ENode, Emitted, Node};
use crate::codegen::footprints::{decode, instances, on, trips, Instances};
use crate::codegen::sync::Wait;
use cranelift_entity::{EntityRef, SecondaryMap};
use runtime_sim::isa::{Expr, MAX_REGS};
use std::collections::{BTreeSet, HashMap};

/// Where an instance sits in program order: compared lexicographically, `At` keys compare the
/// instances in program order; `Past` is after every instance (a wait for more signals than
/// its signaller gives).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    At(Vec<i64>),
    Past,
}

/// A wait's reference instance (of the stretch's loops) and its target there ([`reference`]).
pub type Reference = (i64, Target);

/// One thread's waits at one reference: their targets in increasing order, and at each, the
/// last position of the stretch of a wait with that target or an earlier one.
type Reached = (Vec<Target>, Vec<usize>);

/// The first node of every loop of a kernel, from which [`Order::target`] computes keys.
pub struct Order {
    first: SecondaryMap<BirLoop, i64>,
}

impl Order {
    /// The first node of each loop of `em` (in program order).
    pub fn new(em: &Emitted) -> Order {
        fn walk(tree: &[ENode], first: &mut SecondaryMap<BirLoop, i64>) -> Option<i64> {
            let mut min: Option<i64> = None;
            for t in tree {
                let here = match t {
                    ENode::Inst(i) => Some(i.index() as i64),
                    ENode::Loop(l, body) => {
                        let f = walk(body, first);
                        if let Some(f) = f {
                            first[*l] = f;
                        }
                        f
                    }
                };
                min = match (min, here) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            min
        }
        let mut first = SecondaryMap::with_default(0);
        walk(&em.tree, &mut first);
        Order { first }
    }

    /// The key of the instance a wait for `value` signals of node `z`'s semaphore asks for,
    /// at registers `regs`: `None` when the value is not positive there (it asks for nothing).
    pub fn target(
        &self,
        em: &Emitted,
        z: Node,
        value: &Expr,
        regs: &[i64; MAX_REGS],
    ) -> Option<Target> {
        let v = value.eval(regs);
        if v <= 0 {
            return None;
        }
        let n = &em.nodes[z];
        let t = trips(em, n);
        let k = v - 1;
        if k >= instances(&t) as i128 {
            return Some(Target::Past);
        }
        let mut zr = [0i64; MAX_REGS];
        decode(&t, k as i64, &mut zr);
        let mut key = Vec::with_capacity(2 * n.loops.len() + 1);
        for (d, &l) in n.loops.iter().enumerate() {
            key.push(self.first[l]);
            key.push(zr[d]);
        }
        key.push(z.index() as i64);
        Some(Target::At(key))
    }
}

/// A wait `b` of node `i` whose signaller is `x`: the last running instance of `i` where `b`
/// asks for a signal, and the key of the instance it asks for there; `None` when there is no
/// such instance or it asks past `x`'s instances (then every kept wait of its thread is
/// compared). `inst`, when given, is `em`'s instance table.
pub fn reference(
    em: &Emitted,
    inst: Option<&Instances>,
    order: &Order,
    i: Node,
    x: Node,
    b: &Wait,
) -> Option<Reference> {
    let n = &em.nodes[i];
    let t = trips(em, n);
    let mut regs = [0i64; MAX_REGS];
    let mut asks = |v: i64, check_on: bool| {
        decode(&t, v, &mut regs);
        if check_on && !on(n, &regs) {
            return None;
        }
        order.target(em, x, &b.value, &regs)
    };
    let found = match inst {
        Some(inst) => (inst.running[i].iter().rev()).find_map(|&v| asks(v, false).map(|k| (v, k))),
        None => (0..instances(&t))
            .rev()
            .find_map(|v| asks(v, true).map(|k| (v, k))),
    };
    found.filter(|(_, k)| *k != Target::Past)
}

/// The longest list of kept waits that release builds compare whole, without its index.
pub const FEW: usize = 8;

/// Debug builds check the index's answer against the full scan on every list of at most this
/// many kept waits, and on longer ones while a stretch's checks have compared fewer than
/// [`CHECKED_COMPARISONS`] waits: checking every answer on long lists would make debug builds
/// quadratic in a long stretch (a body of 5,000 transfers, `tests/limits.rs`, took 4x its
/// release time). The index itself is checked on long lists by this module's tests.
const CHECKED_LIST: usize = 16;

/// The comparisons of the full scans that check long lists, per [`Known`] (one stretch).
const CHECKED_COMPARISONS: usize = 1 << 16;

/// One thread's waits ordered by their targets at one reference instance: the first
/// `keys.len()` waits of the thread's list, each under its target (`None`: it asks for
/// nothing there, and implies nothing there).
#[derive(Clone, Default)]
struct Sorted {
    keys: Vec<Option<Target>>,
    set: BTreeSet<(Target, u32)>,
}

/// The waits kept so far in a stretch, per producer thread, in the order kept, with their
/// indices by target (see the module doc).
#[derive(Clone)]
pub struct Known<W> {
    pub lists: Vec<Vec<W>>,
    /// Per thread, per (reference instance, class of the waits compared), the index.
    index: Vec<HashMap<(i64, u32), Sorted>>,
    /// The waits the debug checks of long lists compared so far ([`CHECKED_COMPARISONS`]).
    checked: usize,
}

impl<W: Copy> Known<W> {
    /// No waits on any of `threads` threads.
    pub fn new(threads: usize) -> Known<W> {
        Known {
            lists: vec![Vec::new(); threads],
            index: vec![HashMap::new(); threads],
            checked: 0,
        }
    }

    /// Keeps only the first `lens[t]` waits of each thread `t` (the lists and the indices).
    pub fn truncate(&mut self, lens: &[u32]) {
        for (t, &n) in lens.iter().enumerate() {
            self.lists[t].truncate(n as usize);
        }
        self.truncate_index(lens);
    }

    /// Whether some wait of thread `t` makes `b` redundant (`redundant(a, b)`), comparing only
    /// those whose target at `b`'s reference (`reference()`) is at or after `b`'s (all of them
    /// when it has none). `target(a, v)` is `a`'s target at instance `v` of the stretch. Release
    /// builds compare a list of at most [`FEW`] waits whole (the same answer, sooner); debug
    /// builds always take the index, and compare its answer with the full scan's on short lists
    /// and within a budget on long ones ([`CHECKED_LIST`]).
    ///
    /// `may_imply(a)` is a necessary condition of `redundant(a, b)` that depends on `b` only
    /// through its `class()` (asked only when the index is used; for the rule: the earlier wait's guard is a subset of `b`'s, and the
    /// class is `b`'s guard, [`crate::codegen::redundant::GuardClasses`]): the index of a
    /// reference and class holds only the waits that pass it, and the others cost one test
    /// each, not a target and an insertion. A staged loop's stages have guards of their own and
    /// references of their own, so each index there holds the few waits of one stage instead of
    /// every wait of the stretch (the stretch costs its length, not its square).
    #[allow(clippy::too_many_arguments)]
    pub fn any_implies<R: std::borrow::Borrow<Reference>>(
        &mut self,
        t: usize,
        b: W,
        class: impl FnOnce() -> u32,
        reference: impl FnOnce() -> Option<R>,
        mut may_imply: impl FnMut(W) -> bool,
        mut target: impl FnMut(W, i64) -> Option<Target>,
        mut redundant: impl FnMut(W, W) -> bool,
    ) -> bool {
        let list = &self.lists[t];
        if !cfg!(debug_assertions) && list.len() <= FEW {
            return list.iter().any(|&a| redundant(a, b));
        }
        let r = reference();
        let Some((v, key)) = r.as_ref().map(R::borrow) else {
            return list.iter().any(|&a| redundant(a, b));
        };
        let s = self.index[t].entry((*v, class())).or_default();
        while s.keys.len() < list.len() {
            let at = s.keys.len();
            let a = list[at];
            let k = if may_imply(a) { target(a, *v) } else { None };
            if let Some(k) = &k {
                s.set.insert((k.clone(), at as u32));
            }
            s.keys.push(k);
        }
        let found =
            (s.set.range((key.clone(), 0)..)).any(|&(_, at)| redundant(list[at as usize], b));
        let long = list.len() > CHECKED_LIST;
        if cfg!(debug_assertions) && (!long || self.checked + list.len() <= CHECKED_COMPARISONS) {
            if long {
                self.checked += list.len();
            }
            let all = list.iter().any(|&a| redundant(a, b));
            assert_eq!(
                found, all,
                "the target index finds what the full scan finds"
            );
        }
        found
    }

    /// Keeps only the first `lens[t]` entries of each thread's indices (the lists are set
    /// apart: [`Known::truncate`] cuts both).
    pub fn truncate_index(&mut self, lens: &[u32]) {
        for (t, &n) in lens.iter().enumerate() {
            let n = n as usize;
            for s in self.index[t].values_mut() {
                while s.keys.len() > n {
                    let at = s.keys.len() - 1;
                    if let Some(k) = s.keys.pop().expect("longer than n") {
                        s.set.remove(&(k, at as u32));
                    }
                }
            }
        }
    }

    /// Adds `w`, kept, to thread `t`'s list.
    pub fn push(&mut self, t: usize, w: W) {
        self.lists[t].push(w);
    }
}

/// Where in a stretch a change of the kept waits can still change what the later nodes keep:
/// per producer thread, the waits of the stretch's nodes (every one that may be kept) by
/// reference instance and target, with the last position at or before each target; and the
/// last position of a wait with no reference (compared with every kept wait).
///
/// A kept wait `d` that comes or goes changes what a later wait `b` keeps only when `d` makes
/// `b` redundant, so only when `d`'s target at `b`'s reference is at or after `b`'s (module
/// doc): past the last such `b` ([`Reach::last_affected`]), every node keeps what it kept.
#[derive(Clone)]
pub struct Reach {
    no_reference: Vec<Option<usize>>,
    by: Vec<HashMap<i64, Reached>>,
}

impl Reach {
    /// The reach of the waits `waits` of a stretch: each `(position of its node, producer
    /// thread, reference)`, over `threads` threads.
    pub fn new(
        threads: usize,
        waits: impl IntoIterator<Item = (usize, usize, Option<Reference>)>,
    ) -> Reach {
        let mut no_reference = vec![None; threads];
        let mut entries: Vec<HashMap<i64, Vec<(Target, usize)>>> = vec![HashMap::new(); threads];
        for (pos, t, r) in waits {
            match r {
                None => no_reference[t] = no_reference[t].max(Some(pos)),
                Some((v, k)) => entries[t].entry(v).or_default().push((k, pos)),
            }
        }
        let by = (entries.into_iter())
            .map(|m| {
                (m.into_iter())
                    .map(|(v, mut e)| {
                        e.sort_unstable();
                        let mut last = 0;
                        let (keys, reach) = (e.into_iter())
                            .map(|(k, pos)| {
                                last = last.max(pos);
                                (k, last)
                            })
                            .unzip();
                        (v, (keys, reach))
                    })
                    .collect()
            })
            .collect();
        Reach { no_reference, by }
    }

    /// The last position of the stretch whose waits a kept wait on thread `t` may make
    /// redundant, `target(v)` being its target at reference `v` (`None`: nowhere).
    pub fn last_affected(
        &self,
        t: usize,
        mut target: impl FnMut(i64) -> Option<Target>,
    ) -> Option<usize> {
        let mut last = self.no_reference[t];
        for (&v, (keys, reach)) in &self.by[t] {
            let Some(k) = target(v) else { continue };
            let n = keys.partition_point(|x| *x <= k);
            if n > 0 {
                last = last.max(Some(reach[n - 1]));
            }
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A wait of the tests: its target at references 0 and 1 (`None`: it asks for nothing
    /// there).
    type W = (u32, [Option<i64>; 2]);

    fn at(k: Option<i64>) -> Option<Target> {
        k.map(|k| Target::At(vec![k]))
    }

    proptest! {
        /// On lists far longer than debug builds check ([`CHECKED_LIST`]), with waits kept and
        /// cut back as a pass over a stretch does, the index answers what the full scan does
        /// whenever the rule's premise holds: a wait implies another only when its target at
        /// the other's reference is at or after the other's.
        #[test]
        fn the_index_finds_what_the_full_scan_finds(
            waits in prop::collection::vec(
                (prop::option::weighted(0.9, 0i64..40), prop::option::weighted(0.9, 0i64..40)),
                1..400,
            ),
            cuts in prop::collection::vec(0usize..400, 0..4),
            salt in 0u32..7,
        ) {
            let waits: Vec<W> = (waits.iter().enumerate())
                .map(|(n, &(a, b))| (n as u32, [a, b]))
                .collect();
            // Implies when its target is at or after the other's at the other's reference
            // (reference 0 for even waits, 1 for odd), and a hash of the pair says so.
            let reference = |b: W| {
                let v = i64::from(b.0 % 2);
                at(b.1[v as usize]).map(|k| (v, k))
            };
            let target = |a: W, v: i64| at(a.1[v as usize]);
            let redundant = |a: W, b: W| {
                let Some((v, kb)) = reference(b) else {
                    return (a.0 * 7 + b.0 * 3 + salt).is_multiple_of(5);
                };
                target(a, v).is_some_and(|ka| ka >= kb) && !(a.0 * 7 + b.0 * 3 + salt).is_multiple_of(5)
            };
            let mut known: Known<W> = Known::new(2);
            let mut cuts = cuts.into_iter();
            for &b in &waits {
                let t = (b.0 % 3 % 2) as usize;
                let scan = known.lists[t].iter().any(|&a| redundant(a, b));
                let found = known.any_implies(t, b, || 0, || reference(b), |_| true, target, redundant);
                prop_assert_eq!(found, scan);
                if !found {
                    known.push(t, b);
                }
                if b.0 % 97 == 96 {
                    if let Some(c) = cuts.next() {
                        let lens: Vec<u32> =
                            (known.lists.iter()).map(|l| l.len().min(c) as u32).collect();
                        known.truncate(&lens);
                    }
                }
            }
        }
    }

    /// The index of one reference and class holds only the waits that `may_imply` lets
    /// through: the others cost no target (a staged loop's stages, each with its own guard and
    /// reference, index their own few waits, not the whole stretch's), and the answers are the
    /// full scan's.
    #[test]
    fn a_class_indexes_only_the_waits_that_may_imply_it() {
        // Wait `n` of class (and reference) `n % 4`, its target `37n mod 101` at every
        // reference; a wait implies a later one of its class whose target is at most its own
        // when a hash of the pair says so.
        let class = |w: u32| w % 4;
        let key = |w: u32| Target::At(vec![i64::from(w * 37 % 101)]);
        let redundant = |a: u32, b: u32| {
            class(a) == class(b) && key(a) >= key(b) && !(a * 7 + b * 3).is_multiple_of(5)
        };
        let mut known: Known<u32> = Known::new(1);
        let mut targets = 0;
        for b in 0..400u32 {
            let scan = known.lists[0].iter().any(|&a| redundant(a, b));
            let found = known.any_implies(
                0,
                b,
                || class(b),
                || Some((i64::from(class(b)), key(b))),
                |a| class(a) == class(b),
                |a, _| {
                    targets += 1;
                    Some(key(a))
                },
                redundant,
            );
            assert_eq!(found, scan, "wait {b}");
            if !found {
                known.push(0, b);
            }
        }
        // Each kept wait gets a target in the one index of its class, not in all four.
        let kept = known.lists[0].len();
        assert!(kept > 8, "the list is long enough to be indexed");
        assert!(targets <= kept, "{targets} targets for {kept} kept waits");
    }
}
