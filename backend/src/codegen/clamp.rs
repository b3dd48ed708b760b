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
//!   epilogue copies. Those run once per execution of the block, before or after every iteration;
//!   what they meet first inside the loop is its first or last iterations (the ring's slots are
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

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{Emitted, Foot, NodeData};
use crate::codegen::sync::MAX_DISTANCE;
use runtime_sim::isa::{Cmp, Term};

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

/// How loop `l` is clamped: `(B, S)`, or `None` when it keeps its trip count.
fn clamp_loop(em: &Emitted, l: BirLoop, period: i64) -> Option<(i64, i64)> {
    let (trip, depth) = em.loops[l];
    let n = trip as i64;
    let inside = |nd: &NodeData| nd.loops.get(depth) == Some(&l);
    let reg = depth as u8;
    // Thresholds of the guards on this loop's register.
    let (mut low, mut high) = (0i64, 0i64);
    for nd in em.nodes.values().filter(|nd| inside(nd)) {
        for c in &nd.inst.pred {
            let (coeffs, k) = difference(c)?;
            if !coeffs.iter().any(|&(r, _)| r == reg) {
                continue;
            }
            let [(_, a)] = coeffs[..] else {
                return None;
            };
            // a * r + k against 0 changes around r = -k / a.
            let t = -k as f64 / a as f64;
            if t <= n as f64 / 4.0 {
                low = low.max(t.ceil() as i64 + 1);
            } else if t >= n as f64 * 3.0 / 4.0 {
                high = high.max(n - t.floor() as i64 + 1);
            } else {
                return None;
            }
        }
    }
    // The loops around `l` (an instruction directly beside it has exactly these).
    let parent = match em.nodes.values().find(|nd| inside(nd)) {
        Some(nd) => &nd.loops[..depth],
        None => &[][..],
    };
    // Accesses: nothing outside may meet them (but beside the loop); inside, equal coefficients
    // on the register.
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
                        // An access beside the loop, in the block that holds it (a peeled
                        // loop's prologue or epilogue copy).
                        let out = if inside(x) { y } else { x };
                        if out.loops[..] != parent[..] {
                            return None;
                        }
                        continue;
                    }
                    if lin_coeff(&fx.r0, reg) != lin_coeff(&fy.r0, reg)
                        || lin_coeff(&fx.c0, reg) != lin_coeff(&fy.c0, reg)
                    {
                        return None;
                    }
                }
            }
        }
    }
    let h = low.max(high).max(0);
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
    let plans: Vec<(BirLoop, Option<(i64, i64)>)> = em
        .loops
        .keys()
        .map(|l| (l, clamp_loop(em, l, period)))
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
