//! The rectangle detector against its element-by-element oracle ([`super::reference`]).
//!
//! Three levels, each compared exactly: footprints (the runs are the greedy encoding of the merged
//! element intervals; overlaps and equality agree), detectors fed the same random access streams
//! (same reports in the same order, same live records and prunes), and whole random programs with
//! random patterns, strides, rotations, predicates and missing waits (the same `SimResult` races
//! and stats, or the same error). An ignored test does the same for a directory of programs (the
//! compiled examples, each also with one of its waits removed).

use super::super::memory::{Pattern, Resolved, Space};
use super::super::{simulate, simulate_exact, Options};
use super::reference;
use super::*;
use crate::isa::{DType, MAX_DIMS};
use proptest::prelude::*;

/// A resolved pattern with its offsets enumerated the slow way; `None` when an offset would be
/// negative.
fn resolved(
    space: Space,
    p0: u32,
    np: u32,
    unit: u64,
    start: u64,
    dims: &[(u64, i64)],
) -> Option<Resolved> {
    let mut pd = [(1u64, 0i64); MAX_DIMS];
    for (o, &(n, s)) in pd.iter_mut().zip(dims) {
        *o = (n, if n > 1 { s * unit as i64 } else { 0 });
    }
    let pattern = Pattern {
        start,
        unit,
        dims: pd,
        ndims: dims.len(),
    };
    let mut offsets = vec![start as i64];
    for &(n, s) in pattern.dims() {
        offsets = offsets
            .iter()
            .flat_map(|&o| (0..n as i64).map(move |i| o + i * s))
            .collect();
    }
    if offsets.iter().any(|&o| o < 0) {
        return None;
    }
    let lo = *offsets.iter().min()? as u64;
    let hi = *offsets.iter().max()? as u64 + unit;
    Some(Resolved {
        space,
        dtype: if unit == 2 { DType::Bf16 } else { DType::F32 },
        p0,
        np,
        free: offsets.len() as u64,
        offsets: offsets.into_iter().map(|o| o as u64).collect(),
        lo,
        hi,
        pattern,
    })
}

fn expand(runs: &[Run]) -> Vec<(u64, u64)> {
    runs.iter()
        .flat_map(|r| {
            (0..r.count).map(move |k| (r.start + k * r.stride, r.start + k * r.stride + r.len))
        })
        .collect()
}

/// The greedy run-length encoding of merged intervals, interval by interval.
fn greedy(intervals: &[(u64, u64)]) -> Vec<Run> {
    let mut b = Builder::default();
    for &(lo, hi) in intervals {
        b.push_one(lo, hi - lo);
    }
    b.runs
}

/// A pattern: unit (1: HBM, 2: bf16, 4: f32), start, (size, stride in elements) dims.
type Pat = (u64, u64, Vec<(u64, i64)>);

/// A footprint of a random stream: unit, partitions, start, dims.
type PoolFoot = (u64, u32, u32, u64, Vec<(u64, i64)>);

/// A pattern with up to 4 dims with strides of either sign.
fn pattern() -> impl Strategy<Value = Pat> {
    (
        prop::sample::select(vec![1u64, 2, 4]),
        0u64..48,
        prop::collection::vec((1u64..7, -12i64..13), 0..=4),
    )
        .prop_map(|(u, s, d)| (u, 2000 + s, d))
}

/// A pattern of nested strided levels (each starting its blocks just past, or exactly at a
/// multiple of, the previous level's), so that levels merge and blocks of outer levels continue
/// the progressions of inner ones; shuffled and sometimes reversed.
fn nested() -> impl Strategy<Value = Pat> {
    (
        prop::sample::select(vec![1u64, 2, 4]),
        1u64..4,
        prop::collection::vec((1u64..4, 0u64..4, any::<bool>(), any::<bool>()), 1..=4),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(u, inner, levels, rot)| {
            // Sizes in elements: `inner` contiguous elements, then the levels.
            let mut dims = vec![(inner, 1i64)];
            let mut extent = inner;
            let mut prev = (inner, 1u64);
            for (n, gap, exact, neg) in levels {
                let s = if exact { prev.0 * prev.1 } else { extent + gap };
                dims.push((n + 1, if neg { -(s as i64) } else { s as i64 }));
                extent += n * s;
                prev = (n + 1, s);
            }
            dims.truncate(MAX_DIMS);
            let k = rot.index(dims.len());
            dims.rotate_left(k);
            (u, 4000, dims)
        })
}

/// A second pattern near the first: shifted, one stride changed, or unrelated (same unit).
fn pair() -> impl Strategy<Value = (Pat, Pat)> {
    pattern().prop_flat_map(|a| {
        let (u, s, d) = a.clone();
        let n = d.len();
        let shifted = (-40i64..41).prop_map({
            let (d, a) = (d.clone(), a.clone());
            move |k| (a.clone(), (u, (s as i64 + k) as u64, d.clone()))
        });
        let restrided = (0..n.max(1), -12i64..13).prop_map({
            let (d, a) = (d.clone(), a.clone());
            move |(i, st)| {
                let mut e = d.clone();
                if let Some(x) = e.get_mut(i) {
                    x.1 = st;
                }
                (a.clone(), (u, s, e))
            }
        });
        let other = pattern().prop_map({
            let a = a.clone();
            move |(_, s2, d2)| (a.clone(), (u, s2, d2))
        });
        prop_oneof![Just((a.clone(), a.clone())), shifted, restrided, other]
    })
}

fn space_of(unit: u64) -> Space {
    if unit == 1 {
        Space::Hbm(0)
    } else {
        Space::Sbuf
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn runs_are_the_greedy_encoding_of_the_merged_elements((u, s, d) in pattern()) {
        let r = resolved(space_of(u), 0, 1, u, s, &d).expect("starts high enough");
        let exact = reference::Footprint::of(&r);
        let f = Footprint::of(&r);
        prop_assert_eq!(expand(f.runs()), exact.intervals.clone());
        prop_assert_eq!(f.runs().to_vec(), greedy(&exact.intervals));
        prop_assert_eq!((f.lo, f.hi), (r.lo, r.hi));
    }

    #[test]
    fn nested_runs_are_the_greedy_encoding_too((u, s, d) in nested()) {
        let r = resolved(space_of(u), 0, 1, u, s, &d).expect("starts high enough");
        let exact = reference::Footprint::of(&r);
        let f = Footprint::of(&r);
        prop_assert_eq!(f.runs().to_vec(), greedy(&exact.intervals));
    }

    #[test]
    fn overlaps_and_equality_agree_with_the_element_walk(
        ((u, s, d), (_, s2, d2)) in pair(),
        (p0, np, q0, nq) in (0u32..4, 1u32..4, 0u32..4, 1u32..4),
    ) {
        let space = space_of(u);
        let (p0, np, q0, nq) = if u == 1 { (0, 1, 0, 1) } else { (p0, np, q0, nq) };
        let a = resolved(space, p0, np, u, s, &d).expect("starts high enough");
        let Some(b) = resolved(space, q0, nq, u, s2, &d2) else {
            return Ok(());
        };
        let (ea, eb) = (reference::Footprint::of(&a), reference::Footprint::of(&b));
        let (fa, fb) = (Footprint::of(&a), Footprint::of(&b));
        prop_assert_eq!(fa.overlap(&fb), ea.overlap(&eb));
        prop_assert_eq!(fb.overlap(&fa), eb.overlap(&ea));
        prop_assert_eq!(fa == fb, ea == eb);
    }
}

#[test]
fn an_outer_block_can_continue_an_inner_progression() {
    // f32: 2 elements 8 bytes apart, blocks of 2 rows 100 bytes apart, 2 blocks 116 bytes apart:
    // the last interval of the first block (108) and the first of the second (116) are 8 apart.
    let r = resolved(Space::Sbuf, 0, 1, 4, 0, &[(2, 29), (2, 25), (2, 2)]).expect("in range");
    let f = Footprint::of(&r);
    let want = greedy(&reference::Footprint::of(&r).intervals);
    assert_eq!(f.runs(), want.as_slice());
    assert_eq!(f.runs().len(), 3, "{:?}", f.runs());
}

/// One access of a random stream: thread, whether it writes, which footprint of the pool, and
/// the synchronisation before it (`sync`: thread `from` publishes to thread `to`).
#[derive(Clone, Debug)]
struct Step {
    thread: usize,
    write: bool,
    foot: usize,
    sync: Option<(usize, usize)>,
    tick: bool,
}

fn steps() -> impl Strategy<Value = (Vec<PoolFoot>, Vec<Step>)> {
    let foot = (
        prop::sample::select(vec![1u64, 4]),
        0u32..4,
        1u32..4,
        0u64..40,
        prop::collection::vec((1u64..5, -6i64..9), 0..=3),
    );
    (
        prop::collection::vec(foot, 1..24),
        prop::collection::vec(
            (
                0usize..6,
                any::<bool>(),
                any::<prop::sample::Index>(),
                prop::option::of((0usize..6, 0usize..6)),
                any::<bool>(),
            )
                .prop_map(|(thread, write, foot, sync, tick)| Step {
                    thread,
                    write,
                    foot: foot.index(1 << 20),
                    sync,
                    tick,
                }),
            0..700,
        ),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random access streams with random clocks: the same conflicts in the same order, the same
    /// live records and the same prunes (pruning forced early and often).
    #[test]
    fn detectors_report_the_same_conflicts((pool, steps) in steps()) {
        let feet: Vec<Resolved> = pool
            .iter()
            .map(|(u, p0, np, s, d)| {
                let (p0, np) = if *u == 1 { (0, 1) } else { (*p0, *np) };
                resolved(space_of(*u), p0, np, *u, 300 + s, d).expect("starts high enough")
            })
            .collect();
        let mut clocks = [[0u32; THREADS]; 6];
        for (t, c) in clocks.iter_mut().enumerate() {
            c[t] = 1;
        }
        let mut rect: Detector<usize> = Detector::new();
        let mut exact: reference::Detector<usize> = reference::Detector::new();
        for (i, st) in steps.iter().enumerate() {
            if let Some((from, to)) = st.sync {
                let c = clocks[from];
                join(&mut clocks[to], &c);
                clocks[from][from] += 1;
            }
            if st.tick {
                clocks[st.thread][st.thread] += 1;
            }
            let r = &feet[st.foot % feet.len()];
            let (mut got, mut want) = (Vec::new(), Vec::new());
            let clock = clocks[st.thread];
            rect.access(st.thread, &clock, st.write, Footprint::of(r), &i, |w, wr, sp, ov| {
                got.push((*w, wr, sp, ov))
            });
            exact.access(st.thread, &clock, st.write, reference::Footprint::of(r), &i, |w, wr, sp, ov| {
                want.push((*w, wr, sp, ov))
            });
            prop_assert_eq!(got, want, "step {}", i);
            prop_assert_eq!(rect.live(), exact.live());
            if i % 7 == 0 {
                // Threads 0..3 still run.
                let live = &clocks[..3];
                rect.prune_at = 8;
                exact.set_prune_at(8);
                rect.prune(live);
                exact.prune(live);
                prop_assert_eq!(rect.live(), exact.live());
                prop_assert_eq!(rect.prunes(), exact.prunes());
            }
        }
    }
}

/// A small deterministic generator (SplitMix64) for random programs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut r = vocab::SplitMix64(self.0);
        let z = r.next_u64();
        self.0 = r.0;
        z
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// `n` as a product of 1 to 3 sizes, each with a random stride (elements).
fn dims(rng: &mut Rng, n: u64, strides: (i64, i64)) -> String {
    let mut sizes = Vec::new();
    let mut rest = n;
    for _ in 0..rng.below(3) {
        let divs: Vec<u64> = (1..=rest).filter(|&d| rest.is_multiple_of(d)).collect();
        let d = *rng.pick(&divs);
        sizes.push(d);
        rest /= d;
    }
    sizes.push(rest);
    let parts: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let stride = if i + 1 == sizes.len() && rng.chance(50) {
                1
            } else {
                rng.range(strides.0, strides.1)
            };
            format!("{s}:{stride}")
        })
        .collect();
    parts.join(", ")
}

/// A start expression: a constant, maybe rotated or advanced by the loop register.
fn start(rng: &mut Rng, base: i64, looped: bool) -> String {
    let mut s = format!("{base}");
    if looped {
        match rng.below(3) {
            0 => s += &format!(" + (r0 mod 2)*{}", rng.pick(&[4, 8, 16, 32, 64])),
            1 => s += &format!(" + {}*r0", rng.pick(&[2, 4, 8, 16])),
            _ => {}
        }
    }
    s
}

/// A tile pattern of `[np, free]`.
fn tile(rng: &mut Rng, mem: &str, np: u64, free: u64, looped: bool) -> String {
    let dtype = if rng.chance(30) { "bf16" } else { "f32" };
    let p0 = rng.below(4);
    let base = rng.range(128, 320);
    format!(
        "{mem}.{dtype}[{p0}, {np}; {}; {}]",
        start(rng, base, looped),
        dims(rng, free, (-5, 8))
    )
}

/// An HBM pattern of `elems` elements of a 256-element tensor.
fn hbm(rng: &mut Rng, tensor: &str, elems: u64, looped: bool) -> String {
    let base = rng.range(40, 120);
    format!(
        "hbm {tensor}[{}; {}]",
        start(rng, base, looped),
        dims(rng, elems, (-3, 16))
    )
}

/// A random program: `steps` instructions over pe, act, dve, pool and sp in one global order,
/// each signalling its own semaphore; a step waits for an earlier step of the same iteration
/// (`>= r0 + 1`) or any step of the previous one (`>= r0`) with some probability, so a missing
/// wait is common and a deadlock impossible.
fn program(seed: u64) -> String {
    let mut rng = Rng(seed);
    let trip = rng.range(1, 6);
    let looped = trip > 1;
    let n = rng.range(2, 12) as usize;
    let engines = ["pe", "act", "dve", "pool", "sp"];
    let mut steps: Vec<(&str, String)> = Vec::new();
    for k in 0..n {
        let engine = *rng.pick(&engines);
        let np = rng.range(1, 4) as u64;
        let free = *rng.pick(&[1u64, 2, 3, 4, 6, 8]);
        let op = random_op(&mut rng, engine, np, free, looped);
        let pred = if looped && rng.chance(20) {
            if rng.chance(50) {
                "@(r0 >= 1) "
            } else {
                "@(r0 < 1) "
            }
        } else {
            ""
        };
        steps.push((engine, format!("{pred}{op} -> s{k}")));
    }
    let mut streams: Vec<(&str, Vec<String>)> = engines.iter().map(|&e| (e, Vec::new())).collect();
    for k in 0..n {
        let engine = steps[k].0;
        let mut lines = Vec::new();
        for (j, (e, _)) in steps.iter().enumerate() {
            let dma_dep = *e == "sp" && engine == "sp";
            if (*e == engine && !dma_dep) || !rng.chance(60) {
                continue;
            }
            if j < k {
                lines.push(format!("wait s{j} >= r0 + 1"));
            } else if looped {
                lines.push(format!("wait s{j} >= r0"));
            }
        }
        lines.push(steps[k].1.clone());
        if let Some((_, s)) = streams.iter_mut().find(|(e, _)| *e == engine) {
            s.extend(lines);
        }
    }
    let mut text = String::from("tensor a: f32[16, 16] input\ntensor o: f32[16, 16] output\n");
    for k in 0..n {
        text += &format!("semaphore s{k}\n");
    }
    for (e, lines) in streams {
        if lines.is_empty() {
            continue;
        }
        text += &format!("engine {e} {{\n  loop r0 = 0..{trip} {{\n");
        for l in lines {
            text += &format!("    {l}\n");
        }
        text += "  }\n}\n";
    }
    text
}

/// One random instruction (without guard or signal) on `engine`: a tile of `np` partitions and
/// `free` elements (`looped`: addressed by `r0`), its memories and operation drawn from `rng`.
fn random_op(rng: &mut Rng, engine: &str, np: u64, free: u64, looped: bool) -> String {
    let mem = |rng: &mut Rng| {
        if engine != "pool" && rng.chance(25) {
            "psum"
        } else {
            "sbuf"
        }
    };
    match engine {
        "pe" => format!(
            "transpose {}, {}",
            tile(rng, "psum", free, np, looped),
            tile(rng, "sbuf", np, free, looped)
        ),
        "act" => {
            let (m1, m2) = (mem(rng), mem(rng));
            if rng.chance(50) {
                format!(
                    "copy {}, {}",
                    tile(rng, m1, np, free, looped),
                    tile(rng, m2, np, free, looped)
                )
            } else {
                format!(
                    "activation exp {}, {}, scale=1.0",
                    tile(rng, m1, np, free, looped),
                    tile(rng, m2, np, free, looped)
                )
            }
        }
        "dve" | "pool" => {
            let (m1, m2, m3) = (mem(rng), mem(rng), mem(rng));
            match rng.below(4) {
                0 => format!("memset {}, 1.0", tile(rng, m1, np, free, looped)),
                1 => format!(
                    "tensor_tensor add {}, {}, {}",
                    tile(rng, m1, np, free, looped),
                    tile(rng, m2, np, free, looped),
                    {
                        let f = if rng.chance(30) { 1 } else { free };
                        tile(rng, m3, np, f, looped)
                    }
                ),
                2 => format!(
                    "tensor_scalar multiply {}, {}, 2.0",
                    tile(rng, m1, np, free, looped),
                    tile(rng, m2, np, free, looped)
                ),
                _ => format!(
                    "copy {}, {}",
                    tile(rng, m1, np, free, looped),
                    tile(rng, m2, np, free, looped)
                ),
            }
        }
        _ => {
            let q = rng.below(4);
            let t = tile(rng, "sbuf", np, free, looped);
            if rng.chance(50) {
                let src = if rng.chance(50) { "a" } else { "o" };
                format!("dma q{q} {t}, {}", hbm(rng, src, np * free, looped))
            } else {
                format!("dma q{q} {}, {t}", hbm(rng, "o", np * free, looped))
            }
        }
    }
}

/// Both detectors on one program: the same races (instructions, iterations, memory, partitions,
/// bytes, order), the same stats, or the same error; and the rectangle detector alike whether the
/// semaphores' history is compacted at every chance or never.
/// The outputs as bits: random programs reinterpret memory across dtypes, so their outputs may
/// hold NaNs, which `==` on the floats would call different from themselves.
fn output_bits(outputs: &[(String, crate::sim::Array)]) -> Vec<(&str, &[usize], Vec<u32>)> {
    outputs
        .iter()
        .map(|(name, a)| {
            let bits = a.data.iter().map(|x| x.to_bits()).collect();
            (name.as_str(), a.shape.as_slice(), bits)
        })
        .collect()
}

/// The number of races found (0 on an error).
fn compare(text: &str, numerics: bool, max_races: usize) -> Result<usize, TestCaseError> {
    let p = crate::text::parse(text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let opts = Options {
        numerics,
        races: true,
        trace: false,
        max_races,
        ..Options::default()
    };
    let inputs = if numerics {
        super::super::random_inputs(&p, 3)
    } else {
        Vec::new()
    };
    let rect = simulate(&p, &inputs, &opts);
    // The semaphores' history compacted at every chance, and never: the same verdicts.
    for window in [1, usize::MAX] {
        let other = super::super::simulate_window(&p, &inputs, &opts, window);
        match (&rect, other) {
            (Ok(r), Ok(o)) => {
                prop_assert_eq!(&r.races, &o.races, "window {}: {}", window, text);
                let (mut rs, mut os) = (r.stats.clone(), o.stats);
                prop_assert!(
                    window > 1 || os.sem_window_peak <= rs.sem_window_peak,
                    "window {}: {:?} {:?}",
                    window,
                    rs,
                    os
                );
                (rs.sem_window_peak, os.sem_window_peak) = (0, 0);
                prop_assert_eq!(rs, os, "window {}: {}", window, text);
                prop_assert_eq!(
                    output_bits(&r.outputs),
                    output_bits(&o.outputs),
                    "window {}: {}",
                    window,
                    text
                );
            }
            (Err(r), Err(o)) => prop_assert_eq!(r, &o, "window {}: {}", window, text),
            (r, o) => {
                let (r, o) = (r.as_ref().map(|x| x.races.len()), o.map(|x| x.races.len()));
                prop_assert!(false, "window {window}: {text}\n{r:?}\n{o:?}");
            }
        }
    }
    let exact = simulate_exact(&p, &inputs, &opts);
    match (rect, exact) {
        (Ok(r), Ok(e)) => {
            prop_assert_eq!(&r.races, &e.races, "{}", text);
            prop_assert_eq!(&r.stats, &e.stats, "{}", text);
            Ok(r.races.len())
        }
        (Err(r), Err(e)) => {
            prop_assert_eq!(r, e, "{}", text);
            Ok(0)
        }
        (r, e) => {
            let (r, e) = (r.map(|x| x.races), e.map(|x| x.races));
            prop_assert!(false, "{text}\n{r:?}\n{e:?}");
            Ok(0)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_have_the_same_races(
        seed in any::<u64>(),
        numerics in prop::bool::weighted(0.2),
        max_races in prop::sample::select(vec![1usize, 3, 1000]),
    ) {
        compare(&program(seed), numerics, max_races)?;
    }
}

/// Enough of the random programs run to completion, race and have their semaphores' history
/// compacted for the comparisons to mean something.
#[test]
fn the_random_programs_race_often() {
    let (mut ran, mut raced, mut compacted) = (0, 0, 0);
    for seed in 0..300 {
        let text = program(seed);
        let p = crate::text::parse(&text).expect("generated programs parse");
        let opts = Options {
            numerics: false,
            ..Options::default()
        };
        if let Ok(r) = simulate(&p, &[], &opts) {
            ran += 1;
            raced += usize::from(!r.races.is_empty());
            let tight = super::super::simulate_window(&p, &[], &opts, 1).expect("runs alike");
            compacted += usize::from(tight.stats.sem_window_peak < r.stats.sem_window_peak);
        }
    }
    assert!(
        ran > 150 && raced > 50 && raced < ran,
        "{ran} ran, {raced} raced"
    );
    // The history window is compacted in enough of them for the comparison to test it.
    assert!(compacted > 50, "{compacted} of {ran} compacted");
}

/// The test programs with each of their waits removed in turn.
#[test]
fn every_missing_wait_of_the_test_programs_is_reported_alike() {
    for name in ["add.s", "loop.s", "queues.s"] {
        let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(&path).expect("the test program exists");
        let lines: Vec<&str> = src.lines().collect();
        compare(&src, true, 1000).expect("same verdicts");
        for (i, l) in lines.iter().enumerate() {
            if !l.contains("wait ") {
                continue;
            }
            let text: String = lines
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            compare(&text, true, 1000)
                .unwrap_or_else(|e| panic!("{name} without line {}: {e}", i + 1));
        }
    }
}

/// Timing-only runs may name tensors of nearly 2^64 elements: strides and extents that large
/// neither overflow nor change a verdict.
#[test]
fn huge_tensors_and_strides_agree() {
    let big = 1u64 << 61;
    let mut raced = 0;
    for (s1, s2) in [(big, big), (big, big + 1), (big - 3, 3), (7, big / 2)] {
        let text = format!(
            "tensor t: f32[{big}, 8] output\nsemaphore s\n\
             engine sp {{\n  \
             dma q0 hbm t[{a}; 2:{s1}, 4:1], sbuf.f32[0, 1; 0; 8:1] -> s\n  \
             dma q1 hbm t[{b}; 2:{s2}, 2:-1, 2:2], sbuf.f32[0, 1; 64; 8:1]\n  \
             dma q2 sbuf.f32[0, 1; 128; 8:1], hbm t[{c}; 4:{s2}, 2:1]\n}}\n",
            a = big + 5,
            b = big + 9,
            c = 3 * big - 1,
        );
        let p = crate::text::parse(&text).expect("parses");
        let opts = Options {
            numerics: false,
            ..Options::default()
        };
        let (r, e) = (simulate(&p, &[], &opts), simulate_exact(&p, &[], &opts));
        match (r, e) {
            (Ok(r), Ok(e)) => {
                assert_eq!(r.races, e.races, "{text}");
                raced += r.races.len();
            }
            (r, e) => assert_eq!(r.err(), e.err(), "{text}"),
        }
    }
    assert!(raced > 0);
}

/// The detectors on every `.s` program in `$RACE_ORACLE_DIR` (for instance the examples compiled
/// with `nkc compile --emit isa`), as they are and with one of their waits removed (up to 24 of
/// them per program, spread over it): `RACE_ORACLE_DIR=... cargo test -p runtime-sim --release
/// --lib -- directory`. Without it, the programs of `runtime-sim/tests/programs`; an empty
/// directory fails.
#[test]
fn the_programs_of_a_directory_have_the_same_races() {
    let dir = std::env::var("RACE_ORACLE_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs").to_string());
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("RACE_ORACLE_DIR is a directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "s"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no `.s` program in {dir}");
    let (mut checked, mut racy) = (0, 0);
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable");
        let lines: Vec<&str> = src.lines().collect();
        let waits: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].trim_start().contains("wait "))
            .collect();
        let step = waits.len().div_ceil(24).max(1);
        compare(&src, false, 1000).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for &w in waits.iter().step_by(step) {
            let text: String = lines
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != w)
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            let races = compare(&text, false, 1000)
                .unwrap_or_else(|e| panic!("{} without line {}: {e}", path.display(), w + 1));
            checked += 1;
            racy += usize::from(races > 0);
        }
    }
    eprintln!("{checked} programs without one wait compared, {racy} of them racy");
    assert!(checked > 0, "no program of {dir} has a wait to remove");
}
