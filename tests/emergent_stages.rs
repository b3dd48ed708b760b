//! Emergent stages for compute (`backend/src/emergent/stages.rs`): the effect on softmax against
//! the single-shift scheme (both computed here, on the same kernel), and the legality of the stage
//! plans on kernels with loop-carried state: a buffer made outside the loop and updated inside it,
//! and a PSUM accumulation group across an inner loop. Every program is simulated with the race
//! detector and compared with the interpreter bit for bit.

use backend::cost::budget::Overflow;
use backend::transform::emergent::remark::Refused;
use backend::transform::emergent::{pipeline_emergent_with, EmergentOptions, EmergentRemark};
use backend::transform::remark::Remark;
use nkc::driver::Source;
use nkc::pipeline::PipelineMode;
use nkc::run::{self, Engine, RunOptions};
use penguin::pipeline::PipelineLog;
use runtime_sim::sim;
use std::path::{Path, PathBuf};

fn source_text(name: &str, text: &str) -> Source {
    Source {
        path: PathBuf::from(name),
        text: text.to_string(),
    }
}

/// Compiles `src` on the emergent path with `opts` and simulates it (seeded inputs, race
/// detector on); returns the cycles, the outputs and the emergent log.
fn simulate(
    src: &Source,
    opts: &EmergentOptions,
) -> (u64, Vec<(String, sim::Array)>, Vec<EmergentRemark>) {
    let mut func = nkc::driver::compile(src, None).unwrap();
    nkc::pipeline::pipeline_path(
        &mut func,
        PipelineMode::Emergent,
        &mut PipelineLog::default(),
    )
    .unwrap();
    let log = pipeline_emergent_with(&mut func, opts);
    nkc::driver::verify(&func, "emergent pipelining").unwrap();
    let compiled = nkc::pipeline::codegen(&func, Some(&src.text), true).unwrap();
    let inputs = sim::random_inputs(&compiled.program, 7);
    let r = sim::simulate(&compiled.program, &inputs, &sim::Options::default()).unwrap();
    assert!(r.races.is_empty(), "races: {:?}", r.races);
    (r.stats.cycles, r.outputs, log)
}

fn single_shift() -> EmergentOptions {
    EmergentOptions {
        stages: false,
        ..EmergentOptions::default()
    }
}

/// `nkc run --check --pipeline emergent`: the interpreter's bits, no race.
fn check_emergent(src: &Source) {
    let opts = RunOptions {
        specialise: Default::default(),
        kernel: None,
        engine: Engine::Sim,
        pipeline: PipelineMode::Emergent,
        inputs: Vec::new(),
        seed: 7,
        output_dir: None,
        legality_check: true,
        check: true,
        trace: None,
        timeline: false,
        max_cycles: runtime_sim::sim::DEFAULT_MAX_CYCLES,
        peel: false,
        print_after: Default::default(),
    };
    let report = run::run(src, &opts, &mut PipelineLog::default()).unwrap();
    assert!(report.checked);
}

/// The stage of the statement the staged loop's remark names `name` (a child `` `a.e,name` ``:
/// its last instruction, `tensor.engine`, or `loop k`).
fn stage_of(log: &[EmergentRemark], name: &str) -> u32 {
    let children = log
        .iter()
        .find_map(|r| match r {
            EmergentRemark::Staged { children, .. } => Some(children),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no staged loop in {log:#?}"));
    children
        .iter()
        .find(|(c, _)| c.trim_matches('`').rsplit(',').next() == Some(name))
        .map(|&(_, stage)| stage)
        .unwrap_or_else(|| panic!("`{name}` not in {children:?}"))
}

/// The slots of the stage ring of tile `tile`, if any.
fn ring_slots(log: &[EmergentRemark], tile: &str) -> Option<u32> {
    log.iter().find_map(|r| match r {
        EmergentRemark::StageRing { tile: t, slots, .. } if t == tile => Some(*slots),
        _ => None,
    })
}

#[test]
fn stages_beat_the_single_shift_on_softmax() {
    let src = Source::read(Path::new("examples/softmax.nk")).unwrap();
    let (staged, out_staged, log) = simulate(&src, &EmergentOptions::default());
    let (single, out_single, log_single) = simulate(&src, &single_shift());
    // The chain max (dve) -> exp (act) -> sum (dve) -> reciprocal (act) -> multiply (dve) is split
    // at its hand-offs, so iteration i+1's dve work overlaps iteration i's act work.
    assert!(
        stage_of(&log, "s.dve") > stage_of(&log, "e.act"),
        "{log:#?}"
    );
    assert!(
        stage_of(&log, "r.dve") > stage_of(&log, "s.dve"),
        "{log:#?}"
    );
    assert!(
        !log_single
            .iter()
            .any(|r| matches!(r, EmergentRemark::Staged { .. })),
        "{log_single:#?}"
    );
    assert!(
        staged * 10 <= single * 9,
        "staged {staged} cycles against {single} single-shifted: not 10% fewer"
    );
    // Same program semantics: the same bits either way.
    assert_eq!(out_staged.len(), out_single.len());
    for ((n1, a1), (n2, a2)) in out_staged.iter().zip(&out_single) {
        assert_eq!(n1, n2);
        assert!(
            a1.data
                .iter()
                .zip(&a2.data)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "`{n1}` differs between the staged and the single-shift programs"
        );
    }
    check_emergent(&src);
}

#[test]
fn the_rings_cover_the_stages_their_tiles_span() {
    let src = Source::read(Path::new("examples/softmax.nk")).unwrap();
    let (_, _, log) = simulate(&src, &EmergentOptions::default());
    // `e` is written by exp and read by sum and multiply, two and one stages later.
    let span = stage_of(&log, "r.dve") - stage_of(&log, "e.act");
    let slots = ring_slots(&log, "e").unwrap_or_else(|| panic!("no ring for `e` in {log:#?}"));
    assert!(
        slots > span,
        "{slots} slot(s) for a span of {span} stage(s)"
    );
}

/// A buffer made outside the loop and updated inside it: the add (dve) and the tanh that reads it
/// (act) would be a hand-off, but the buffer carries state, so both stay in one stage.
const CARRIED: &str = "def carried(a: nl.hbm[nl.float32, 1024, 512]):
    c = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(8):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        e = nl.exp(t)
        acc[:, :] = nl.add(acc, e)
        s = nl.tanh(acc)
        nl.store(c[i * 128:(i + 1) * 128, :], value=s)
    return c
";

#[test]
fn a_loop_carried_buffer_keeps_its_accesses_in_one_stage() {
    let src = source_text("carried.nk", CARRIED);
    let (_, _, log) = simulate(&src, &EmergentOptions::default());
    let add = stage_of(&log, "acc.dve");
    assert!(add > stage_of(&log, "e.act"), "{log:#?}");
    assert_eq!(add, stage_of(&log, "s.act"), "{log:#?}");
    check_emergent(&src);
}

/// CARRIED with its input loaded once before the loop: no load in the loop to issue ahead (its
/// store's tile is a ring, which the single shift does not shift).
const CARRIED_NO_RING: &str = "def carried_no_ring(a: nl.hbm[nl.float32, 128, 512]):
    c = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    t = nl.load(a[0:128, :])
    for i in nl.affine_range(8):
        e = nl.exp(t)
        acc[:, :] = nl.add(acc, e)
        s = nl.tanh(acc)
        nl.store(c[i * 128:(i + 1) * 128, :], value=s)
    return c
";

/// A refused stage plan's remark says what the loop gets instead: with no load to shift, nothing is
/// shifted, and the remark does not claim a fallback to the single shift.
#[test]
fn a_refused_plan_with_no_load_to_shift_says_nothing_is_shifted() {
    let src = source_text("carried_no_ring.nk", CARRIED_NO_RING);
    let unsafe_opts = EmergentOptions {
        carried_rule: false,
        ..EmergentOptions::default()
    };
    let (_, out, log) = simulate(&src, &unsafe_opts);
    let refused = log
        .iter()
        .find(|r| matches!(r, EmergentRemark::StagesIllegal { .. }))
        .unwrap_or_else(|| panic!("no refused plan: {log:#?}"));
    assert!(
        matches!(
            refused,
            EmergentRemark::StagesIllegal {
                then: Refused::Unchanged,
                ..
            }
        ),
        "{log:#?}"
    );
    let text = refused.to_string();
    assert!(
        !text.contains("falling back") && text.contains("keeps its body as written"),
        "{text}"
    );
    assert!(
        !log.iter()
            .any(|r| matches!(r, EmergentRemark::Shifted { .. })),
        "{log:#?}"
    );
    let (_, want, _) = simulate(&src, &single_shift());
    assert_eq!(out.len(), want.len());
    for ((_, a), (_, b)) in out.iter().zip(&want) {
        assert!(a
            .data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
    check_emergent(&src);
}

#[test]
fn the_isl_check_refuses_a_plan_that_splits_loop_carried_state() {
    // Without the carried-state rule the planner puts the tanh one stage after the add that
    // updates `acc`: it would read `acc` after the next iteration's add. The ISL legality check
    // refuses the plan and the loop falls back to the single shift, still bit-exact.
    let src = source_text("carried.nk", CARRIED);
    let unsafe_opts = EmergentOptions {
        carried_rule: false,
        ..EmergentOptions::default()
    };
    let (_, out, log) = simulate(&src, &unsafe_opts);
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::StagesIllegal { tensor, then: Refused::SingleShift, .. } if tensor == "acc"
        )),
        "{log:#?}"
    );
    assert!(
        log.iter()
            .any(|r| matches!(r, EmergentRemark::Shifted { ahead: 2, .. })),
        "{log:#?}"
    );
    let (_, want, _) = simulate(&src, &single_shift());
    for ((_, a), (_, b)) in out.iter().zip(&want) {
        assert!(a
            .data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

/// A PSUM accumulation group across an inner loop, its result read by two engines after it.
const ACC_GROUP: &str =
    "def accgroup(at: nl.hbm[nl.float32, 512, 512], b: nl.hbm[nl.float32, 512, 512]):
    c = nl.ndarray((512, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(4):
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(4):
            lhs = nl.load(at[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
            rhs = nl.load(b[k * 128:(k + 1) * 128, :])
            acc += nl.matmul(lhs, rhs, transpose_x=True)
        res = nl.exp(acc)
        y = nl.multiply(res, 2.0)
        nl.store(c[m * 128:(m + 1) * 128, :], value=y)
    return c
";

#[test]
fn an_accumulation_group_across_an_inner_loop_stays_exact() {
    let src = source_text("accgroup.nk", ACC_GROUP);
    // With prefetch across the nest the inner loop's loads run ahead over `m` and `m` is not
    // staged (tests/nest.rs); without it, `m` is staged around the accumulation group.
    let opts = EmergentOptions {
        across_nests: false,
        ..EmergentOptions::default()
    };
    let (_, _, log) = simulate(&src, &opts);
    // The inner loop (pe) runs a stage after the zeroing (dve) and a stage before the exp (act):
    // the PSUM accumulator becomes a ring of banks spanning those stages.
    let inner = stage_of(&log, "loop k");
    assert!(inner < stage_of(&log, "res.act"), "{log:#?}");
    assert!(ring_slots(&log, "acc").is_some(), "{log:#?}");
    check_emergent(&src);
}

/// Every kernel of `examples/`, sorted.
fn all_examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("examples")
        .expect("examples/ is readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "nk"))
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

/// Cycles and lower bound of `src` on `mode`, the emergent path realised with `opts` (timing
/// only: the bits are checked by the other tests and by `tests/backend.rs`).
fn cycles_and_bound(src: &Source, mode: PipelineMode, opts: &EmergentOptions) -> (u64, u64) {
    let mut func = nkc::driver::compile(src, None).unwrap();
    nkc::pipeline::pipeline_path(&mut func, mode, &mut PipelineLog::default()).unwrap();
    pipeline_emergent_with(&mut func, opts);
    let compiled = nkc::pipeline::codegen(&func, Some(&src.text), true).unwrap();
    let inputs = sim::random_inputs(&compiled.program, 7);
    let o = sim::Options {
        numerics: false,
        races: false,
        ..sim::Options::default()
    };
    let r = sim::simulate(&compiled.program, &inputs, &o).unwrap();
    (r.stats.cycles, r.stats.bound())
}

#[test]
fn stages_never_lose_much_to_the_single_shift() {
    // The tables (`-- --nocapture`) of the `emergent` and `default` paths, single shift against
    // stages, in cycles and cycles / lower bound; no kernel may get more than 2% slower with
    // stages. The `_plain`, `_mode_b` and `_stages` variants differ only in annotations: on the
    // emergent path they are the same program, and the default path runs their annotated loops
    // on the annotated pipeliner, so only the base kernels and the annotated variants' default
    // path are measured.
    let mut worse = Vec::new();
    for mode in [PipelineMode::Emergent, PipelineMode::Default] {
        println!("\n`--pipeline {}`\n", mode.name());
        println!("| kernel | single shift | stages | single / bound | stages / bound |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        for ex in all_examples() {
            let stem = Path::new(&ex)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let variant = ["_plain", "_mode_b", "_stages"]
                .iter()
                .any(|v| stem.ends_with(v));
            if variant && mode == PipelineMode::Emergent {
                continue;
            }
            let src = Source::read(Path::new(&ex)).unwrap();
            let (single, b1) = cycles_and_bound(&src, mode, &single_shift());
            let (staged, b2) = cycles_and_bound(&src, mode, &EmergentOptions::default());
            println!(
                "| {stem} | {single} | {staged} | {:.3} | {:.3} |",
                single as f64 / b1 as f64,
                staged as f64 / b2 as f64
            );
            if staged * 100 > single * 102 {
                worse.push(format!("{ex} ({}): {staged} against {single}", mode.name()));
            }
        }
    }
    assert!(worse.is_empty(), "slower with stages: {worse:#?}");
}

/// Four hand-offs (act, dve, act, dve) on 16 KiB-per-partition tiles: every tile split over its
/// own stages would not fit in SBUF, so stages are merged until the rings fit.
const BIG: &str = "def big(a: nl.hbm[nl.float32, 512, 4096]):
    c = nl.ndarray((512, 4096), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        x = nl.exp(t)
        y = nl.add(x, t)
        z = nl.tanh(y)
        w = nl.multiply(z, x)
        nl.store(c[i * 128:(i + 1) * 128, :], value=w)
    return c
";

#[test]
fn stages_merge_when_their_rings_do_not_fit_sbuf() {
    let src = source_text("big.nk", BIG);
    let (_, _, log) = simulate(&src, &EmergentOptions::default());
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::StagesDoNotFit {
                why: Overflow::Sbuf { .. },
                ..
            }
        )),
        "{log:#?}"
    );
    assert!(
        log.iter().any(|r| matches!(
            r,
            EmergentRemark::Staged {
                merged: Some(_),
                ..
            }
        )),
        "{log:#?}"
    );
    // Merged, not dropped: some hand-offs are still split.
    assert!(
        stage_of(&log, "y.dve") > stage_of(&log, "x.act"),
        "{log:#?}"
    );
    check_emergent(&src);
}

/// A loaded tile that a store reads as it is (issue 32): the store's transfer holds the tile's
/// slot for a DMA latency after `sp` issues it, behind its iteration's compute, so the ring gets
/// one slot more than its prefetch depth, and the load issued ahead no longer waits for the
/// previous iteration's store (the compare line's `sp.store(t) → (1 iteration later, `t`'s slot
/// reused) sp.load(t)`). Measured: `phases_stores_first` ran 22,641 cycles on `emergent` with the
/// ring as deep as its prefetch, slower than the user's stages (18,211); the bf16 kernel 39,806.
/// The same reuse on `default` (the user's stages) gets its slots from the modulo variable
/// expansion, as deep as the emergent ring.
#[test]
fn a_stored_load_keeps_a_spare_slot() {
    let run_kernel = |file: &str, kernel: &str, mode: PipelineMode| {
        let src = Source::read(Path::new(file)).unwrap();
        let opts = RunOptions {
            kernel: Some(kernel.to_string()),
            engine: Engine::Sim,
            pipeline: mode,
            seed: 7,
            check: true,
            ..RunOptions::default()
        };
        let r = run::run(&src, &opts, &mut PipelineLog::default()).unwrap();
        assert!(
            r.checked,
            "{kernel} --pipeline {}: not bit-exact",
            mode.name()
        );
        let sim = r.sim.as_ref().expect("engine sim");
        assert!(sim.races.is_empty(), "{kernel}: races {:?}", sim.races);
        (sim.stats.cycles, r.remarks.clone())
    };
    let (e, log) = run_kernel(
        "tests/good/sched_phases.nk",
        "phases_stores_first",
        PipelineMode::Emergent,
    );
    assert!(
        log.iter().any(|r| matches!(
            r,
            Remark::Emergent(EmergentRemark::TransferRing {
                tile,
                slots: 7,
                ahead: 5,
                ..
            }) if tile == "t"
        )),
        "{log:#?}"
    );
    assert!(
        log.iter().any(|r| matches!(
            r,
            Remark::Emergent(EmergentRemark::Shifted {
                tiles,
                ahead: 5,
                ..
            }) if tiles.last().is_some_and(|t| t == "t")
        )),
        "{log:#?}"
    );
    // 22,641 cycles with the ring as deep as its prefetch; the user's stages, with three slots
    // for `t`, ran 18,211.
    assert!(e * 100 < 18_211 * 95, "emergent {e}");
    // On `default`, the user's stages keep `t` in stages 0 to 2; the store's transfer reading
    // its slot is a reuse through `sp`'s DMA, not through `sp`'s order, so the ring gets a
    // fourth slot (`codegen::expand`): 18,211 cycles with three. Its transfer's latency wants
    // more than `MAX_DEPTH` (4) slots, so the expansion goes on up to the depth of the emergent
    // ring (`transform::emergent::plan::transfer_depth`, 7 here): 15,794 cycles with four.
    let (d, log) = run_kernel(
        "tests/good/sched_phases.nk",
        "phases_stores_first",
        PipelineMode::Default,
    );
    assert!(
        log.iter().any(|r| matches!(
            r,
            Remark::RingSlotAdded {
                tile,
                iv,
                slots: 4,
                ..
            } if tile == "t" && iv == "i"
        )),
        "{log:#?}"
    );
    assert!(
        log.iter().any(|r| matches!(
            r,
            Remark::RingSlotAdded {
                tile,
                slots: 7,
                ..
            } if tile == "t"
        )),
        "{log:#?}"
    );
    assert!(d * 100 < 15_794 * 95, "default {d}");
    let (b, _) = run_kernel(
        "tests/good/sched_stream.nk",
        "stream_store_loaded_bf16",
        PipelineMode::Emergent,
    );
    assert!(b * 10 < 39_806 * 8, "stream_store_loaded_bf16: {b} cycles");
}

/// Scratch stored by one loop and read back by the next: the second loop writes no HBM, so its
/// loads of the scratch read the same values wherever they move within it, and are issued ahead
/// like a kernel input's (`backend::transform::emergent::plan::hoistable_loads`). The program is
/// bit-exact, race-free, and faster than with the loads kept in place.
#[test]
fn loads_of_scratch_an_earlier_loop_stored_are_issued_ahead() {
    let text = "def reload(x: nl.hbm[nl.float32, 256, 384]):
    s = nl.ndarray((256, 384), dtype=nl.float32, buffer=nl.shared_hbm)
    out = nl.ndarray((192, 384), dtype=nl.float32, buffer=nl.shared_hbm)
    for b in nl.affine_range(4):
        t = nl.load(x[b * 64:(b + 1) * 64, :])
        nl.store(s[b * 64:(b + 1) * 64, :], value=nl.exp(t))
    for b in nl.affine_range(3):
        u = nl.load(s[b * 64 + 32:b * 64 + 96, :])
        nl.store(out[b * 64:(b + 1) * 64, :], value=nl.multiply(u, 3.0))
    return out
";
    let src = source_text("reload.nk", text);
    let (cycles, _, log) = simulate(&src, &single_shift());
    let shifted: Vec<&Vec<String>> = (log.iter())
        .filter_map(|r| match r {
            EmergentRemark::Shifted { tiles, .. } => Some(tiles),
            _ => None,
        })
        .collect();
    assert!(
        shifted.iter().any(|tiles| tiles.iter().any(|t| t == "u")),
        "the reload of the scratch is issued ahead: {log:#?}"
    );
    check_emergent(&src);
    // The loop that stores the scratch writes HBM `s`: its own reads of `s` (none here) would
    // stay; the one that writes nothing keeps no load in place. Without the shift (annotated
    // path: no emergent pipelining) the reloads wait in program order.
    let opts = RunOptions {
        pipeline: PipelineMode::Annotated,
        check: false,
        ..RunOptions::default()
    };
    let plain = run::run(&src, &opts, &mut PipelineLog::default()).unwrap();
    let plain = plain.sim.expect("a simulated run").stats.cycles;
    assert!(cycles < plain, "{cycles} vs {plain} cycles");
}
