//! `sp`'s issue time shared by the bodies of a loop nest ([`compute_sp_reserves`]).
//!
//! `sp` issues every transfer of the kernel from one in-order stream, one slot of
//! [`machine::dma_issue_cycles`] per piece. The queue plan ([`super::compute_queue_plan`]) plans
//! each body of the loop tree on its own, and a body's plan fits its own pieces in its own
//! iteration's time. In a nest, the iterations of one body are not `sp`'s alone: an inner loop's
//! body is issued `trip` times per execution of the outer body, whose own transfers (and those of
//! the enclosing bodies and of the sibling loops) are issued in between. Planned alone, each
//! body spreads its transfers over as many queues as its own compute leaves `sp` time for, and
//! together they take more of `sp` than the nest computes (`nest_staged_holder.nk`: every
//! 128 KiB transfer split 16 ways, `sp` busy 36,864 cycles against 29,984 of `dve`).
//!
//! The **reserve** of a body is the `sp` time per iteration of that body that the other bodies
//! of its nest (every body under the same top-level loop) take: a loop nested in it issues all
//! its slots within the body's iterations (its issue cycles over the kernel divided by the
//! body's iterations); an enclosing body issues its own between the iterations of every loop it
//! holds, so a body takes its share by compute (the busiest engine's cycles of one iteration of
//! the body over those of every iteration of the enclosing one). A loop beside the body (a
//! sibling in an enclosing body) runs at another time and takes nothing from it. When the nest
//! issues more than `sp` has time for in its compute (nine tenths of it: `sp` is in order and
//! also waits), every body is cut alike, so the others' slots are scaled to that room.
//! [`super::compute_queue_plan`] plans each body again with its reserve (the spread's and the
//! packing's `sp` time, and the estimate's), keeping the new plan when no transfer loses more
//! than half its pieces (a halved reserve, then a quarter, else the plan alone): fewer, longer
//! pieces make each transfer's latency longer, which the reserve does not weigh
//! (`nest_in_stage.nk:in_first_stage`: a store of the outer body cut from 16 pieces to 2 ran
//! 30,583 cycles against 25,443).
//!
//! A loop that is not nested and holds no loop has no other body in its nest (reserve 0), and the
//! kernel's top level runs once, before and after its loops: it takes no reserve and counts in
//! none. A nest without compute (nothing to share the time by) takes none either.
//!
//! Invariant: a reserve is 0 unless its body's nest has at least two bodies with transfers.

use super::{on_fraction, QueuePlan};
use crate::codegen::bir::{BNode, Bir, BirLoop};
use cranelift_entity::SecondaryMap;
use penguin::Function;
use runtime_sim::machine;

/// Per loop of `bir`, the `sp` time per iteration of its body that the other bodies of its nest
/// take under `plan` (module doc). `compute(l)` is the busiest compute engine's cycles for one
/// iteration of loop `l`'s body (nested loops times their trips).
pub fn compute_sp_reserves(
    func: &Function,
    bir: &Bir,
    plan: &QueuePlan,
    compute: impl Fn(BirLoop) -> u64,
) -> SecondaryMap<BirLoop, u64> {
    let mut reserves = SecondaryMap::new();
    for &n in &bir.body {
        let BNode::Loop(root) = n else { continue };
        let mut bodies = Vec::new();
        collect(bir, root, None, 1, &mut bodies);
        let own: Vec<u128> = (bodies.iter())
            .map(|b| u128::from(issued(func, bir, plan, &bir.loops[b.l].body)))
            .collect();
        if own.iter().filter(|&&c| c > 0).count() < 2 {
            continue;
        }
        let nest = u128::from(compute(root)) * u128::from(bir.loops[root].trip);
        let all: u128 = own.iter().sum();
        if nest == 0 || all == 0 {
            continue;
        }
        let cycles: Vec<u128> = bodies.iter().map(|b| u128::from(compute(b.l))).collect();
        // The others' issue slots as they take them when every body shares `sp` alike: scaled
        // by `num / den` when the nest issues more than `sp` has time for in its compute (a
        // tenth kept for `sp`'s waits).
        let (num, den) = match nest * 9 / 10 {
            room if room < all => (room, all),
            _ => (1, 1),
        };
        for (b, data) in bodies.iter().enumerate() {
            let mut others = 0u128;
            // The descendants issue within the body's iterations.
            for (d, dd) in bodies.iter().enumerate() {
                if d != b && is_within(&bodies, d, b) {
                    others += own[d] / u128::from(data.iterations.max(1));
                }
                // An enclosing body issues between the iterations of every loop it holds, for
                // the share of its own iteration's compute that the body's iteration holds.
                if d != b && is_within(&bodies, b, d) {
                    let span = cycles[d] * u128::from(dd.iterations);
                    others += (own[d] * cycles[b]).checked_div(span).unwrap_or(0);
                }
            }
            let reserve = others * num / den;
            reserves[data.l] = u64::try_from(reserve).unwrap_or(u64::MAX);
        }
    }
    reserves
}

/// A body of a nest: its loop, the index of its parent in the nest's list, and how many
/// iterations it runs over the kernel (its trip times its enclosing loops').
struct NestBody {
    l: BirLoop,
    parent: Option<usize>,
    iterations: u64,
}

/// Loop `l` (whose parent is `parent`, entered `outer` times) and every loop nested in it.
fn collect(bir: &Bir, l: BirLoop, parent: Option<usize>, outer: u64, out: &mut Vec<NestBody>) {
    let iterations = outer.saturating_mul(bir.loops[l].trip);
    let me = out.len();
    out.push(NestBody {
        l,
        parent,
        iterations,
    });
    for &n in &bir.loops[l].body {
        if let BNode::Loop(inner) = n {
            collect(bir, inner, Some(me), iterations, out);
        }
    }
}

/// Whether body `d` is nested (at any depth) in body `b`.
fn is_within(bodies: &[NestBody], d: usize, b: usize) -> bool {
    let mut at = bodies[d].parent;
    while let Some(p) = at {
        if p == b {
            return true;
        }
        at = bodies[p].parent;
    }
    false
}

/// `sp`'s issue cycles for the transfers directly in `body` over the whole kernel: pieces ×
/// issue × the instances their guards let run.
fn issued(func: &Function, bir: &Bir, plan: &QueuePlan, body: &[BNode]) -> u64 {
    let issue = machine::dma_issue_cycles();
    (body.iter())
        .filter_map(|&n| match n {
            BNode::Inst(i) => plan.split(i).map(|s| (i, s.pieces())),
            BNode::Loop(_) => None,
        })
        .map(|(i, pieces)| {
            let (on, total) = on_fraction(func, bir, i);
            let runs = (bir.instances(i) * on).div_ceil(total.max(1));
            pieces * issue * runs
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::{compute_cycles, compute_queue_plan, plan_body};
    use super::*;
    use crate::codegen::bir::lower_function;

    /// `tests/good/sp_shared_nest.nk`'s `sp_two_levels` (none path): an outer loop's load and
    /// store of 96 x 384 f32 around an inner loop of four loads of that size.
    const TWO_LEVELS: &str = r#"
kernel sp_two_levels(x, w) -> (y) {
  tensor x: hbm f32[288, 384] input
  tensor w: hbm f32[288, 1536] input
  tensor y: hbm f32[288, 384] output
  tensor _load: sbuf f32[96, 384] local
  tensor g: sbuf f32[96, 384] local
  tensor acc: sbuf f32[96, 384] local
  tensor u: sbuf f32[96, 384] local
  tensor _tensor_tensor: sbuf f32[96, 384] local
  loop b in 0..3 affine {
    stmt {
      _load[0 +: 96, 0 +: 384] = load.dma x[96*b +: 96, 0 +: 384]
      g[0 +: 96, 0 +: 384] = activation.act(func=tanh, scale=1.0, bias=false) _load[0 +: 96, 0 +: 384]
    }
    stmt {
      acc[0 +: 96, 0 +: 384] = memset.dve(value=0.0)
    }
    loop c in 0..4 affine {
      stmt {
        u[0 +: 96, 0 +: 384] = load.dma w[96*b +: 96, 384*c +: 384]
      }
      stmt {
        _tensor_tensor[0 +: 96, 0 +: 384] = tensor_tensor.dve(op=multiply) u[0 +: 96, 0 +: 384], g[0 +: 96, 0 +: 384]
        acc[0 +: 96, 0 +: 384] = tensor_tensor.dve(op=add) acc[0 +: 96, 0 +: 384], _tensor_tensor[0 +: 96, 0 +: 384]
      }
    }
    stmt {
      y[96*b +: 96, 0 +: 384] = store.dma acc[0 +: 96, 0 +: 384]
    }
  }
}
"#;

    /// The plan of every body alone (no reserve), as the first round of `compute_queue_plan`.
    fn plan_alone(func: &Function, bir: &Bir) -> QueuePlan {
        let mut plan = QueuePlan::default();
        let mut rotation = 0;
        plan_body(func, bir, &bir.body, true, 0, &mut plan, &mut rotation);
        for l in bir.loops.values() {
            plan_body(func, bir, &l.body, false, 0, &mut plan, &mut rotation);
        }
        plan
    }

    /// `sp`'s issue cycles over the kernel under `plan`.
    fn issue_total(func: &Function, bir: &Bir, plan: &QueuePlan) -> u64 {
        let mut total = issued(func, bir, plan, &bir.body);
        for l in bir.loops.values() {
            total += issued(func, bir, plan, &l.body);
        }
        total
    }

    #[test]
    fn the_bodies_of_a_nest_share_sp_and_take_fewer_pieces_where_it_binds() {
        let func = penguin::parse_function(TWO_LEVELS).expect("the test kernel parses");
        let bir = lower_function(&func).expect("the test kernel lowers");
        let compute = |l: BirLoop| compute_cycles(&func, &bir, &bir.loops[l].body);
        let (outer, inner) = {
            let mut ls = bir.loops.keys();
            (ls.next().expect("outer"), ls.next().expect("inner"))
        };
        let alone = plan_alone(&func, &bir);
        let reserves = compute_sp_reserves(&func, &bir, &alone, compute);
        // Each body counts what the other takes: the inner body, the outer body's load and
        // store for its share of the outer iteration's compute; the outer body, the inner
        // loop's four loads.
        let issue = machine::dma_issue_cycles();
        let inner_slots = issued(&func, &bir, &alone, &bir.loops[inner].body);
        let outer_slots = issued(&func, &bir, &alone, &bir.loops[outer].body);
        assert!(reserves[inner] > 0 && reserves[outer] > 0, "{reserves:?}");
        assert!(reserves[outer] <= inner_slots / 3, "{reserves:?}");
        assert!(reserves[inner] <= outer_slots / 12 + 1, "{reserves:?}");
        // Alone, the inner load takes all of `sp`'s room in an inner iteration (nine tenths of
        // `dve`'s), and the outer body's slots come on top; shared, it takes fewer pieces, which
        // fit with them.
        let load = |plan: &QueuePlan| -> u64 {
            (bir.loops[inner].body.iter())
                .filter_map(|n| match *n {
                    BNode::Inst(i) => plan.split(i).map(|s| s.pieces() * issue),
                    BNode::Loop(_) => None,
                })
                .sum()
        };
        let room = compute(inner) * 9 / 10;
        assert!(load(&alone) <= room && load(&alone) + reserves[inner] > room);
        let plan = compute_queue_plan(&func, &bir);
        assert!(load(&plan) < load(&alone) && load(&plan) + reserves[inner] <= room);
        let shared = issue_total(&func, &bir, &plan);
        assert!(shared < issue_total(&func, &bir, &alone));
        // The outer body's compute leaves room for its own pieces besides the inner loop's.
        assert!(outer_slots / 3 + reserves[outer] <= compute(outer) * 9 / 10);
        // No transfer loses more than half its pieces; each plan is still a split of its tile.
        for i in bir.insts.keys() {
            if let (Some(a), Some(s)) = (alone.split(i), plan.split(i)) {
                assert!(s.pieces() * 2 >= a.pieces(), "{i:?}: {a:?} -> {s:?}");
                assert_eq!(96 % s.pieces(), 0);
                let mut qs = s.queues.clone();
                qs.sort_unstable();
                qs.dedup();
                assert_eq!(qs.len() as u64, s.pieces());
            }
        }
    }

    #[test]
    fn a_loop_alone_in_its_nest_takes_no_reserve() {
        // The inner loop alone: one body per nest.
        let flat = TWO_LEVELS
            .replace(
                "      _load[0 +: 96, 0 +: 384] = load.dma x[96*b +: 96, 0 +: 384]\n",
                "",
            )
            .replace(
                "      y[96*b +: 96, 0 +: 384] = store.dma acc[0 +: 96, 0 +: 384]\n",
                "",
            );
        let func = penguin::parse_function(&flat).expect("the test kernel parses");
        let bir = lower_function(&func).expect("the test kernel lowers");
        let compute = |l: BirLoop| compute_cycles(&func, &bir, &bir.loops[l].body);
        let alone = plan_alone(&func, &bir);
        let reserves = compute_sp_reserves(&func, &bir, &alone, compute);
        assert!(reserves.values().all(|&r| r == 0), "{reserves:?}");
        let plan = compute_queue_plan(&func, &bir);
        for i in bir.insts.keys() {
            assert_eq!(plan.split(i), alone.split(i));
        }
    }
}
