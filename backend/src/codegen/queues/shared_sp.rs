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
//! packing's `sp` time, and the estimate's), and keeps the new plan only where `sp` binds: when
//! the body's iteration ([`iteration_time`]: the longest of its own slots plus the reserve, its
//! busiest queue and its compute, on average over its guards) is shorter than under the plan
//! alone, and no transfer loses more than half its pieces (else a halved reserve, then a
//! quarter, else the plan alone). Fewer, longer pieces make each transfer's latency longer, which
//! the reserve does not weigh: without the first rule, `examples/matmul.nk` (emergent) ran
//! 79,241 cycles against 78,891, `nest_bounds.nk` 34,448 against 33,531; without the second,
//! `nest_in_stage.nk:in_first_stage`'s outer store, cut from 16 pieces to 2, ran 30,583 cycles
//! against 25,443. (The first rule also gives back gains that `sp`'s in-order waits, which no
//! average sees, made: `nest_staged_holder.nk` ran 51,413 cycles with every body cut, 54,621
//! without.)
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
            // In u128: a loop of a million iterations times its guard's period overflows u64.
            let (on, total) = on_fraction(func, bir, i);
            let runs =
                (u128::from(bir.instances(i)) * u128::from(on)).div_ceil(u128::from(total.max(1)));
            let cycles = u128::from(pieces) * u128::from(issue) * runs;
            u64::try_from(cycles).unwrap_or(u64::MAX)
        })
        .fold(0, u64::saturating_add)
}

/// One iteration of `body` under `plan` (its transfers in `plan`), on average over the
/// iterations its guards let each transfer run: the longest of `sp` (its pieces' issue slots and
/// `reserve`), the busiest queue and `compute`.
pub fn iteration_time(
    func: &Function,
    bir: &Bir,
    body: &[BNode],
    plan: &QueuePlan,
    reserve: u64,
    compute: u64,
) -> u64 {
    let issue = machine::dma_issue_cycles();
    let mut queues = [0u64; machine::DMA_QUEUES];
    let mut sp = reserve;
    for &n in body {
        let BNode::Inst(i) = n else { continue };
        let (Some(t), Some(s)) = (super::transfer(func, bir, i), plan.split(i)) else {
            continue;
        };
        sp = sp.saturating_add(t.weighted(issue * s.pieces()));
        let piece = t.weighted(machine::dma_queue_cycles(t.bytes / s.pieces().max(1)));
        for &q in &s.queues {
            queues[q as usize] += piece;
        }
    }
    let busiest = queues.into_iter().max().unwrap_or(0);
    sp.max(busiest).max(compute)
}

#[cfg(test)]
mod tests {
    use super::super::{compute_cycles, compute_queue_plan, plan_body};
    use super::*;
    use crate::codegen::bir::lower_function;

    /// `tests/good/sp_shared_nest.nk`'s `sp_three_levels` (none path): a bias load in the top
    /// loop, a store in the middle one, two loads per iteration of the inner one, 96 x 96 f32.
    const THREE_LEVELS: &str = r#"
kernel sp_three_levels(a, b, s) -> (y) {
  tensor a: hbm f32[96, 2304] input
  tensor b: hbm f32[2304, 96] input
  tensor s: hbm f32[192, 96] input
  tensor y: hbm f32[576, 96] output
  tensor _load: sbuf f32[96, 96] local
  tensor bias: sbuf f32[96, 96] local
  tensor acc: psum f32[96, 96] local
  tensor lhs: sbuf f32[96, 96] local
  tensor rhs: sbuf f32[96, 96] local
  tensor _tensor_tensor: sbuf f32[96, 96] local
  loop i in 0..2 affine {
    stmt {
      _load[0 +: 96, 0 +: 96] = load.dma s[96*i +: 96, 0 +: 96]
      bias[0 +: 96, 0 +: 96] = activation.act(func=exp, scale=1.0, bias=false) _load[0 +: 96, 0 +: 96]
    }
    loop j in 0..3 affine {
      stmt {
        acc[0 +: 96, 0 +: 96] = memset.dve(value=0.0)
      }
      loop k in 0..4 affine {
        stmt {
          lhs[0 +: 96, 0 +: 96] = load.dma a[0 +: 96, 1152*i + 384*j + 96*k +: 96]
        }
        stmt {
          rhs[0 +: 96, 0 +: 96] = load.dma b[1152*i + 384*j + 96*k +: 96, 0 +: 96]
        }
        stmt {
          acc[0 +: 96, 0 +: 96] = matmul.pe(accumulate=true) lhs[0 +: 96, 0 +: 96], rhs[0 +: 96, 0 +: 96]
        }
      }
      stmt {
        _tensor_tensor[0 +: 96, 0 +: 96] = tensor_tensor.dve(op=add) acc[0 +: 96, 0 +: 96], bias[0 +: 96, 0 +: 96]
        y[288*i + 96*j +: 96, 0 +: 96] = store.dma _tensor_tensor[0 +: 96, 0 +: 96]
      }
    }
  }
}
"#;

    /// A nest whose transfers (128 x 320 f32, 160 KiB) each end soonest split 16 ways alone
    /// ([`crate::cost::queue_pack::soonest_split`]): a bias block loaded in the top loop (trip 2),
    /// a sum stored by the middle loop (trip 2), and the inner loop (trip 3) adding loaded blocks
    /// on `dve`, whose 16 pieces a block already make `sp` bind it.
    const WIDE_NEST: &str = r#"
kernel sp_wide_nest(x, w, s) -> (y) {
  tensor x: hbm f32[512, 320] input
  tensor w: hbm f32[512, 960] input
  tensor s: hbm f32[256, 320] input
  tensor y: hbm f32[512, 320] output
  tensor _load: sbuf f32[128, 320] local
  tensor bias: sbuf f32[128, 320] local
  tensor acc: sbuf f32[128, 320] local
  tensor u: sbuf f32[128, 320] local
  tensor _tensor_tensor: sbuf f32[128, 320] local
  loop i in 0..2 affine {
    stmt {
      _load[0 +: 128, 0 +: 320] = load.dma s[128*i +: 128, 0 +: 320]
      bias[0 +: 128, 0 +: 320] = activation.act(func=exp, scale=1.0, bias=false) _load[0 +: 128, 0 +: 320]
    }
    loop j in 0..2 affine {
      stmt {
        acc[0 +: 128, 0 +: 320] = memset.dve(value=0.0)
      }
      loop k in 0..3 affine {
        stmt {
          u[0 +: 128, 0 +: 320] = load.dma w[256*i + 128*j +: 128, 320*k +: 320]
        }
        stmt {
          acc[0 +: 128, 0 +: 320] = tensor_tensor.dve(op=add) acc[0 +: 128, 0 +: 320], u[0 +: 128, 0 +: 320]
        }
      }
      stmt {
        _tensor_tensor[0 +: 128, 0 +: 320] = tensor_tensor.dve(op=add) acc[0 +: 128, 0 +: 320], bias[0 +: 128, 0 +: 320]
        y[256*i + 128*j +: 128, 0 +: 320] = store.dma _tensor_tensor[0 +: 128, 0 +: 320]
      }
    }
  }
}
"#;

    /// The plan of every body alone (no reserve), as the first round of `compute_queue_plan`.
    fn plan_alone(func: &Function, bir: &Bir) -> QueuePlan {
        let mut plan = QueuePlan::default();
        let mut rotation = 0;
        plan_body(func, bir, &bir.body, None, 0, &mut plan, &mut rotation);
        for l in bir.loops.values() {
            plan_body(
                func,
                bir,
                &l.body,
                Some(l.axis),
                0,
                &mut plan,
                &mut rotation,
            );
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
        let func = penguin::parse_function(WIDE_NEST).expect("the test kernel parses");
        let bir = lower_function(&func).expect("the test kernel lowers");
        let compute = |l: BirLoop| compute_cycles(&func, &bir, &bir.loops[l].body);
        let loops: Vec<BirLoop> = bir.loops.keys().collect();
        assert_eq!(loops.len(), 3);
        let (top, middle, inner) = (loops[0], loops[1], loops[2]);
        let alone = plan_alone(&func, &bir);
        let reserves = compute_sp_reserves(&func, &bir, &alone, compute);
        // Every body counts the others: the top one, every slot of the two loops it holds; the
        // inner one, its share of the enclosing bodies' store and bias load.
        let slots = |l: BirLoop| issued(&func, &bir, &alone, &bir.loops[l].body);
        assert!(loops.iter().all(|&l| reserves[l] > 0), "{reserves:?}");
        assert!(reserves[top] <= (slots(middle) + slots(inner)) / 2);
        assert!(reserves[inner] <= (slots(top) + slots(middle)) / 12 + 1);
        // Shared, the nest issues fewer pieces; no transfer loses more than half of its, and
        // every body whose plan changed has a shorter iteration with the others' slots on `sp`.
        let plan = compute_queue_plan(&func, &bir);
        assert!(issue_total(&func, &bir, &plan) < issue_total(&func, &bir, &alone));
        let mut changed = 0;
        for &l in &loops {
            let body = &bir.loops[l].body;
            let before = iteration_time(&func, &bir, body, &alone, reserves[l], compute(l));
            let after = iteration_time(&func, &bir, body, &plan, reserves[l], compute(l));
            let moved = (body.iter()).any(|n| match *n {
                BNode::Inst(i) => alone.split(i) != plan.split(i),
                BNode::Loop(_) => false,
            });
            if moved {
                changed += 1;
                assert!(after < before, "{l:?}: {before} -> {after}");
            }
        }
        assert!(changed > 0);
        for i in bir.insts.keys() {
            if let (Some(a), Some(s)) = (alone.split(i), plan.split(i)) {
                assert!(s.pieces() * 2 >= a.pieces(), "{i:?}: {a:?} -> {s:?}");
                assert_eq!(128 % s.pieces(), 0);
                let mut qs = s.queues.clone();
                qs.sort_unstable();
                qs.dedup();
                assert_eq!(qs.len() as u64, s.pieces());
            }
        }
    }

    #[test]
    fn a_loop_alone_in_its_nest_takes_no_reserve() {
        // The inner loop alone: one body with transfers per nest.
        let flat = THREE_LEVELS
            .replace(
                "      _load[0 +: 96, 0 +: 96] = load.dma s[96*i +: 96, 0 +: 96]\n",
                "",
            )
            .replace(
                "        y[288*i + 96*j +: 96, 0 +: 96] = store.dma _tensor_tensor[0 +: 96, 0 +: 96]\n",
                "",
            );
        assert_ne!(flat, THREE_LEVELS);
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
