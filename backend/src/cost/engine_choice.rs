//! The engine of every engine-agnostic instruction (`EngineClass::Any`, printed `.any`: a copy
//! that `dve`, `act` or `pool` can run), chosen by the cost of the region it runs in.
//!
//! [`compute_engine_choice`] walks the kernel's loop tree bottom up. The region of an instruction
//! is the body that holds it (a loop's body, or the kernel's top level): one run of that body, with
//! every loop nested in it counted its trip times. A loop's period in the steady state is at least
//! the busiest engine's work in one iteration of its body (its resource bound, which the modulo
//! scheduler's II cannot beat), so an `.any` instruction goes to the candidate that raises the body's
//! resource bound least once the instruction is added ([`choose_engine`]), and among those that
//! leave the same bound, to the one whose work ends first (the earliest finish in a list
//! schedule of the body), then to the cheapest. Each candidate is costed at its own rate
//! (`pool`'s fixed 150 cycles included), so `pool` takes copies only while it stays under the
//! bound. The
//! work of the loops nested in a body is theirs after their own choice (innermost first), and
//! the `.any` instructions of one body are placed the most constrained first (those touching
//! PSUM, which `pool` cannot access), then the costliest first, then in program order, on the
//! work of every instruction of the body whose engine is fixed. Ties go to `dve`, then `act`,
//! then `pool`.
//!
//! So a copy in one loop is placed by that loop's work, not by the work of the loops before it;
//! a copy beside `act`-heavy work goes to `dve` and one beside vector work to `act`; the
//! comparison weighs like with like (the body's work per run, each candidate's cost of the
//! instruction times its repetitions in the body).
//!
//! Invariants: every `.any` instruction of the function gets exactly one engine among `dve`,
//! `act`, `pool`; one that touches PSUM never gets `pool`; the choice depends only on the
//! function (deterministic). Costs are the machine description's ([`estimate`](crate::cost::estimate::estimate)).

use crate::cost::estimate::estimate;
use cranelift_entity::SecondaryMap;
use penguin::ir::{EngineClass, InstData, Memory, StmtKind};
use penguin::{Function, Inst, Stmt};
use runtime_sim::isa::Engine;

/// The engines an `.any` instruction may run on, in the order ties are broken.
pub const ANY_ENGINES: [Engine; 3] = [Engine::Dve, Engine::Act, Engine::Pool];

/// The engine chosen for each `.any` instruction (`None` for every other instruction).
pub type EngineChoiceData = SecondaryMap<Inst, Option<Engine>>;

/// Work per engine over one run of a region, indexed by [`Engine::index`].
pub type Load = [u64; 5];

/// The engine that runs an instruction of class `class` when it is not `.any` (`None` for
/// `.any`).
pub fn fixed_engine(class: EngineClass) -> Option<Engine> {
    match class {
        EngineClass::Dma => Some(Engine::Sp),
        EngineClass::Tensor => Some(Engine::Pe),
        EngineClass::Vector => Some(Engine::Dve),
        EngineClass::Scalar => Some(Engine::Act),
        EngineClass::GpSimd => Some(Engine::Pool),
        EngineClass::Any => None,
    }
}

/// Whether `d` reads or writes PSUM (then it cannot run on `pool`).
pub fn touches_psum(func: &Function, d: &InstData) -> bool {
    std::iter::once(&d.dst)
        .chain(d.srcs.iter())
        .any(|o| func.tensors[o.tensor].memory == Memory::Psum)
}

/// The candidate engines of an `.any` instruction and each one's cost of it (one instance).
pub fn candidates(func: &Function, d: &InstData) -> Vec<(Engine, u64)> {
    let psum = touches_psum(func, d);
    ANY_ENGINES
        .iter()
        .filter(|&&e| !(psum && e == Engine::Pool))
        .map(|&e| (e, estimate(e, &d.op, &d.dst, &d.srcs)))
        .collect()
}

/// The candidate of `cands` (engine, cost of the instruction's instances in the region) that
/// raises the region's resource bound (its busiest engine's work, `load`'s largest entry) least;
/// among those that leave the same bound, the one whose work ends first (in a list schedule of
/// the region, the earliest finish: its engine frees soonest), then the cheapest, then the
/// earlier candidate. `cands` is not empty.
pub fn choose_engine(load: &Load, cands: &[(Engine, u64)]) -> Engine {
    let bound = load.iter().copied().max().unwrap_or(0);
    let key = |&(e, c): &(Engine, u64)| {
        let end = load[e.index()].saturating_add(c);
        (end.max(bound), end, c)
    };
    let mut best = cands[0];
    for c in cands {
        if key(c) < key(&best) {
            best = *c;
        }
    }
    best.0
}

/// The engine of every `.any` instruction of `func` (module doc).
pub fn compute_engine_choice(func: &Function) -> EngineChoiceData {
    let mut out = EngineChoiceData::new();
    region(func, &func.body, &mut out);
    out
}

/// The engine of every `.any` instruction of `body` (a loop's body) and of the loops nested in
/// it, by the work of one run of `body` (module doc).
pub fn compute_body_choice(func: &Function, body: &[Stmt]) -> EngineChoiceData {
    let mut out = EngineChoiceData::new();
    region(func, body, &mut out);
    out
}

/// Chooses the engines of the `.any` instructions of `body` and of every loop nested in it, and
/// returns the work per engine of one run of `body`.
fn region(func: &Function, body: &[Stmt], out: &mut EngineChoiceData) -> Load {
    let mut load: Load = [0; 5];
    // The `.any` instructions directly in `body`, with their position (program order).
    let mut free = Vec::new();
    for &s in body {
        match &func.stmts[s].kind {
            StmtKind::Insts(insts) => {
                for &i in insts {
                    let d = &func.insts[i];
                    match fixed_engine(d.engine) {
                        Some(e) => {
                            load[e.index()] =
                                load[e.index()].saturating_add(estimate(e, &d.op, &d.dst, &d.srcs));
                        }
                        None => free.push(i),
                    }
                }
            }
            StmtKind::Loop(a) => {
                let ad = &func.axes[*a];
                let inner = region(func, &ad.body, out);
                let trip = ad.trip_count().max(0) as u64;
                for (l, w) in load.iter_mut().zip(inner) {
                    *l = l.saturating_add(w.saturating_mul(trip));
                }
            }
        }
    }
    // The most constrained first, then the costliest (its cheapest candidate), then program
    // order (the sort is stable).
    let mut free: Vec<(Inst, Vec<(Engine, u64)>)> = free
        .into_iter()
        .map(|i| (i, candidates(func, &func.insts[i])))
        .collect();
    free.sort_by_key(|(_, c)| {
        let least = c.iter().map(|&(_, x)| x).min().unwrap_or(0);
        (c.len(), std::cmp::Reverse(least))
    });
    for (i, cands) in free {
        let e = choose_engine(&load, &cands);
        let cost = cands.iter().find(|c| c.0 == e).map_or(0, |c| c.1);
        load[e.index()] = load[e.index()].saturating_add(cost);
        out[i] = Some(e);
    }
    load
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(dve: u64, act: u64, pool: u64) -> Load {
        let mut l = [0; 5];
        l[Engine::Dve.index()] = dve;
        l[Engine::Act.index()] = act;
        l[Engine::Pool.index()] = pool;
        l
    }

    #[test]
    fn the_least_raised_bound_wins_then_the_cheapest() {
        let c = [(Engine::Dve, 100), (Engine::Act, 100), (Engine::Pool, 250)];
        // An idle region: the cheapest, ties to the first.
        assert_eq!(choose_engine(&load(0, 0, 0), &c), Engine::Dve);
        // `dve` binds: `act` leaves the bound where it is.
        assert_eq!(choose_engine(&load(500, 0, 0), &c), Engine::Act);
        // Both `act` and `pool` stay under the bound: the one that ends first.
        assert_eq!(choose_engine(&load(500, 400, 0), &c), Engine::Pool);
        assert_eq!(choose_engine(&load(500, 100, 0), &c), Engine::Act);
        // Only `pool` stays under it.
        assert_eq!(choose_engine(&load(500, 480, 0), &c), Engine::Pool);
        // Every candidate raises it: the one that raises it least.
        assert_eq!(choose_engine(&load(300, 200, 100), &c), Engine::Act);
        assert_eq!(choose_engine(&load(300, 320, 100), &c), Engine::Pool);
        // Another engine (`pe`) binds: the one that ends first under it.
        let mut l = load(200, 100, 0);
        l[Engine::Pe.index()] = 1000;
        assert_eq!(choose_engine(&l, &c), Engine::Act);
        // PSUM readers have no `pool` candidate.
        assert_eq!(choose_engine(&load(900, 800, 0), &c[..2]), Engine::Act);
    }

    /// A text kernel: an act-heavy loop, then a loop of vector work, each with one copy; the
    /// copy in the first goes to `dve`, the one in the second to `act`, whatever the other
    /// loop's work (the old rule placed both by the whole kernel's running total).
    const TWO_LOOPS: &str = "\
kernel two_loops(a) -> (b, c) {
  tensor a: hbm f32[128, 512] input
  tensor b: hbm f32[128, 512] output
  tensor c: hbm f32[128, 512] output
  tensor x: sbuf f32[128, 512] local
  tensor y: sbuf f32[128, 512] local
  tensor z: sbuf f32[128, 512] local
  tensor u: sbuf f32[128, 512] local
  tensor v: sbuf f32[128, 512] local
  stmt {
    x[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]
  }
  loop i in 0..8 affine {
    stmt {
      y[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) x[0 +: 128, 0 +: 512]
      z[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) y[0 +: 128, 0 +: 512]
      u[0 +: 128, 0 +: 512] = copy.any z[0 +: 128, 0 +: 512]
    }
  }
  loop j in 0..2 affine {
    stmt {
      v[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) x[0 +: 128, 0 +: 512], u[0 +: 128, 0 +: 512]
      v[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) v[0 +: 128, 0 +: 512], x[0 +: 128, 0 +: 512]
      y[0 +: 128, 0 +: 512] = copy.any v[0 +: 128, 0 +: 512]
    }
  }
  stmt {
    b[0 +: 128, 0 +: 512] = store.dma u[0 +: 128, 0 +: 512]
    c[0 +: 128, 0 +: 512] = store.dma y[0 +: 128, 0 +: 512]
  }
}
";

    #[test]
    fn each_loop_places_its_copies_by_its_own_work() {
        let func = penguin::parse_function(TWO_LOOPS).expect("the test kernel parses");
        let choice = compute_engine_choice(&func);
        let got: Vec<Engine> = func.insts.keys().filter_map(|i| choice[i]).collect();
        assert_eq!(got, vec![Engine::Dve, Engine::Act]);
    }

    /// A matmul's PSUM result evacuated beside vector work, `pool` idle: `pool` cannot read
    /// PSUM, so the copy goes to `act`.
    const PSUM_COPY: &str = "\
kernel psum_copy(a) -> (b) {
  tensor a: hbm f32[128, 512] input
  tensor b: hbm f32[128, 512] output
  tensor x: sbuf f32[128, 512] local
  tensor p: psum f32[128, 512] local
  tensor y: sbuf f32[128, 512] local
  tensor v: sbuf f32[128, 512] local
  stmt {
    x[0 +: 128, 0 +: 512] = load.dma a[0 +: 128, 0 +: 512]
  }
  loop i in 0..4 affine {
    stmt {
      p[0 +: 128, 0 +: 512] = matmul.pe(accumulate=false) x[0 +: 128, 0 +: 128], x[0 +: 128, 0 +: 512]
      v[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) x[0 +: 128, 0 +: 512], x[0 +: 128, 0 +: 512]
      y[0 +: 128, 0 +: 512] = copy.any p[0 +: 128, 0 +: 512]
    }
  }
  stmt {
    b[0 +: 128, 0 +: 512] = store.dma y[0 +: 128, 0 +: 512]
  }
}
";

    #[test]
    fn a_psum_reader_never_goes_to_pool() {
        let func = penguin::parse_function(PSUM_COPY).expect("the test kernel parses");
        let choice = compute_engine_choice(&func);
        let got: Vec<Engine> = func.insts.keys().filter_map(|i| choice[i]).collect();
        assert_eq!(got, vec![Engine::Act]);
    }
}
