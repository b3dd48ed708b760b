//! Unit tests of the DMA queue planner ([`crate::codegen::queues`]).
//!
//! Invariant: tests only; nothing here is compiled outside `cargo test`.

use super::*;
use crate::cost::queue_pack::pack;
use runtime_sim::machine::DType;

fn t(inst: usize, partitions: u64, bytes: u64) -> Transfer {
    Transfer {
        inst,
        partitions,
        bytes,
        on: 1,
        total: 1,
    }
}

/// The text kernel `src`, parsed and lowered.
fn lower(src: &str) -> (Function, Bir) {
    let func = penguin::parse_function(src).expect("the test kernel parses");
    let bir = crate::codegen::bir::lower_function(&func).expect("the test kernel lowers");
    (func, bir)
}

/// The transfers of `body` (a loop's body), in body order.
fn body_transfers(func: &Function, bir: &Bir, body: &[BNode]) -> Vec<Transfer> {
    (body.iter())
        .filter_map(|n| match *n {
            BNode::Inst(i) => transfer(func, bir, i),
            BNode::Loop(_) => None,
        })
        .collect()
}

/// The busiest queue and the `sp` issue time of a packing.
fn cost(ts: &[Transfer], splits: &[SplitData]) -> (u64, u64) {
    let mut load = [0u64; DMA_QUEUES];
    let mut issued = 0;
    for (t, s) in ts.iter().zip(splits) {
        for &q in &s.queues {
            load[q as usize] += machine::dma_queue_cycles(t.bytes / s.pieces());
        }
        issued += s.pieces() * machine::dma_issue_cycles();
    }
    (*load.iter().max().unwrap(), issued)
}

#[test]
fn three_equal_tiles_balance_every_queue() {
    // tensor_add's body: two 256 KiB loads and a 256 KiB store.
    let ts = [t(0, 128, 262144), t(1, 128, 262144), t(2, 128, 262144)];
    let total = 3 * machine::dma_queue_cycles(262144);
    let bound = total / DMA_QUEUES as u64;
    let mut target = bound;
    let splits = loop {
        if let Some(s) = pack(&ts, &Together::Always, target, 0) {
            break s;
        }
        target += target / 32 + 1;
    };
    let (busiest, issued) = cost(&ts, &splits);
    // Within rounding of the queue bound, and `sp` is not the bottleneck.
    assert!(busiest <= bound + 2, "busiest {busiest} vs bound {bound}");
    assert!(issued <= busiest, "sp {issued} vs queues {busiest}");
    // Fewer pieces than splitting everything 16 ways.
    let pieces: u64 = splits.iter().map(|s| s.pieces()).sum();
    assert!(pieces < 48, "{pieces} pieces");
    for s in &splits {
        let mut q = s.queues.clone();
        q.dedup();
        assert_eq!(q.len(), s.queues.len(), "distinct queues");
    }
}

#[test]
fn small_tiles_are_not_split_into_issue_bound_pieces() {
    // 64 KiB tiles: 16 pieces would cost sp 1024 cycles for 3449 queue cycles.
    let ts = [t(0, 128, 65536)];
    let splits = pack(&ts, &Together::Always, 3449 / 16 + 64, 0)
        .or_else(|| pack(&ts, &Together::Always, 1000, 0))
        .expect("fits in 1000 cycles");
    let (busiest, issued) = cost(&ts, &splits);
    assert!(issued <= 1000 && busiest <= 1000);
    assert!(splits[0].pieces() < 16);
}

#[test]
fn transfers_that_never_run_together_share_every_queue() {
    // transpose, unrolled by 4 and staged over 8 iterations: four 64 KiB loads in the first 4
    // iterations, four 64 KiB stores in the last 4, never together.
    let ts: Vec<Transfer> = (0..8)
        .map(|k| Transfer {
            on: 1,
            total: 2,
            ..t(k, 128, 65536)
        })
        .collect();
    // Two classes of iterations: the loads', then the stores'.
    let classes = vec![
        ((0..8).map(|k| k < 4).collect(), 4),
        ((0..8).map(|k| k >= 4).collect(), 4),
    ];
    let queues = |splits: &[SplitData], r: std::ops::Range<usize>| {
        let mut q: Vec<u8> = r.flat_map(|k| splits[k].queues.clone()).collect();
        q.sort();
        q.dedup();
        q.len()
    };
    let (_, counted) = pack_search(&ts, &Together::counted(classes, false), 0);
    // The loads take every queue between them, and so do the stores.
    assert_eq!(queues(&counted, 0..4), DMA_QUEUES, "{counted:?}");
    assert_eq!(queues(&counted, 4..8), DMA_QUEUES, "{counted:?}");
    // Averaged, each transfer counts half: the loads keep half the queues for the whole
    // loop, and the stores the other half.
    let (_, avg) = pack_search(&ts, &Together::Always, 0);
    assert_eq!(queues(&avg, 0..4), DMA_QUEUES / 2, "{avg:?}");
}

/// A 256 KiB load in the first `fill + steady` iterations and a 256 KiB store in the last
/// `steady + fill` (exp_stages, loads issued ahead): the classes of iterations.
fn load_then_store(fill: u64, steady: u64) -> (Vec<Transfer>, Vec<(Vec<bool>, u64)>) {
    let total = 2 * fill + steady;
    let ts = (0..2)
        .map(|k| Transfer {
            on: fill + steady,
            total,
            ..t(k, 128, 262144)
        })
        .collect();
    let classes = vec![
        (vec![true, false], fill),
        (vec![true, true], steady),
        (vec![false, true], fill),
    ];
    (ts, classes)
}

/// The plan [`plan_body`] keeps, between the two views, for a body without compute.
fn chosen(ts: &[Transfer], classes: &[(Vec<bool>, u64)]) -> Vec<SplitData> {
    let view = |steady| Together::counted(classes.to_vec(), steady);
    let average = plan_view(ts, &view(false), 0, 0, 0);
    let steady = plan_view(ts, &view(true), 0, 0, 0);
    let (a, s) = (
        estimate_time(ts, classes, &average, 0, 0),
        estimate_time(ts, classes, &steady, 0, 0),
    );
    if s * 100 < a * u128::from(100 - STEADY_GAIN_PERCENT) {
        steady
    } else {
        average
    }
}

#[test]
fn the_steady_view_fits_sp_in_the_iterations_that_run_every_transfer() {
    // Both transfers run in the steady state: the queues take 2 x 13,797 / 16 = 1,725
    // cycles there, and 16 pieces each would cost `sp` 2,048 cycles of issue slots.
    let (ts, classes) = load_then_store(3, 5);
    let steady = Together::counted(classes, true);
    let (target, splits) = pack_search(&ts, &steady, 0);
    let (busiest, issued) = cost(&ts, &splits);
    let queues = 2 * machine::dma_queue_cycles(262144) / DMA_QUEUES as u64;
    assert!(
        target >= queues,
        "target {target} below the queues' {queues}"
    );
    assert!(issued <= target, "sp {issued} above the target {target}");
    assert!(
        busiest <= target + 2,
        "busiest queue {busiest}, target {target}"
    );
    let mut all: Vec<u8> = splits.iter().flat_map(|s| s.queues.clone()).collect();
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        DMA_QUEUES,
        "the two share the queues: {splits:?}"
    );
}

#[test]
fn the_plan_is_the_one_whose_iterations_take_less_time() {
    // Few iterations, mostly fill and drain (exp_stages: 3 + 5 + 3): each transfer over
    // every queue keeps the fill's loads and the drain's stores fast, although `sp` binds
    // the steady state (measured: 19,433 cycles against 20,761 with 8-way splits).
    let (ts, classes) = load_then_store(3, 5);
    let few = chosen(&ts, &classes);
    assert!(few.iter().all(|s| s.pieces() == 16), "{few:?}");
    // A long steady state: the splits that fit `sp` there.
    let (ts, classes) = load_then_store(3, 60);
    let long = chosen(&ts, &classes);
    let (_, issued) = cost(&ts, &long);
    let queues = 2 * machine::dma_queue_cycles(262144) / DMA_QUEUES as u64;
    assert!(
        issued <= queues + 2,
        "sp {issued} above the queues' {queues}: {long:?}"
    );
}

#[test]
fn the_search_weighs_the_fill_and_the_drain() {
    // two_stores: a 256 KiB load in iterations 0-7 of 11, two 256 KiB stores in 3-10. Fitted
    // to the steady state, the load takes queues 0-7 and one store 8-15, so the fill's loads
    // and the drain's stores each leave half the queues idle.
    let ts: Vec<Transfer> = (0..3)
        .map(|k| Transfer {
            on: 8,
            total: 11,
            ..t(k, 128, 262144)
        })
        .collect();
    let classes = vec![
        (vec![true, false, false], 3),
        (vec![true, true, true], 5),
        (vec![false, true, true], 3),
    ];
    let view = |steady| Together::counted(classes.clone(), steady);
    let views = [
        plan_view(&ts, &view(false), 0, 0, 0),
        plan_view(&ts, &view(true), 0, 0, 0),
    ];
    let least = views
        .iter()
        .map(|v| v.iter().map(SplitData::pieces).sum())
        .max();
    let searched = search_splits(&ts, &classes, 0, 0, least.unwrap_or(0), 0).expect("few choices");
    let time = estimate_time(&ts, &classes, &searched, 0, 0);
    for v in &views {
        let before = estimate_time(&ts, &classes, v, 0, 0);
        assert!(time * 100 < before * 98, "{time} vs {before}: {v:?}");
    }
    // The load on every queue, the stores on one half each.
    assert_eq!(searched[0].pieces(), 16, "{searched:?}");
    let mut stores: Vec<u8> = searched[1..]
        .iter()
        .flat_map(|s| s.queues.clone())
        .collect();
    stores.sort();
    stores.dedup();
    assert_eq!(stores.len(), DMA_QUEUES, "{searched:?}");
    // Never more than the per-class bound allows: each class's busiest queue at least its
    // share of the bytes.
    let per = machine::dma_queue_cycles(262144) / DMA_QUEUES as u64;
    assert!(time >= u128::from(3 * per + 5 * 3 * per + 3 * 2 * per));
}

#[test]
fn copies_that_take_turns_share_the_queues_time() {
    // Two copies of one 256 KiB load, each running every other iteration (a prefetch's
    // in-loop and carry copies): one iteration moves one tile, so both fit in one tile's
    // time on the queues, split 16 ways each (short pieces, low latency), when `sp` has time.
    let half = |inst| Transfer {
        on: 1,
        total: 2,
        ..t(inst, 128, 262144)
    };
    let ts = [half(0), half(1)];
    let one_tile = machine::dma_queue_cycles(262144) / DMA_QUEUES as u64;
    let sp = u64::MAX / 4;
    let splits =
        spread(&ts, &Together::Always, one_tile + 2, sp, 0).expect("both fit in one tile's time");
    assert_eq!(splits[0].pieces(), 16);
    assert_eq!(splits[1].pieces(), 16);
    // Counted as always on, they would need twice the time.
    let full = [t(0, 128, 262144), t(1, 128, 262144)];
    assert!(spread(&full, &Together::Always, one_tile + 2, sp, 0).is_none());
}

#[test]
fn a_spread_stops_at_the_split_that_ends_a_transfer_soonest() {
    // A 112 x 60 f32 load (26,880 bytes, 1,414 queue cycles) in a body whose compute leaves the
    // queues and `sp` every slack: 16 pieces would issue 1,024 cycles before the last one moves
    // its 89, 4 pieces 256 before their 354 (`computed_reshape.nk` ran its loads and stores 16
    // ways, 11,263 cycles; 10,070 at the soonest split).
    let ts = [t(0, 112, 26880), t(1, 112, 8960)];
    let splits = spread(&ts, &Together::Always, 100_000, 100_000, 0).expect("every split fits");
    assert_eq!(splits[0].pieces(), 4, "{splits:?}");
    // The store, 471 queue cycles: 2 pieces end it in 128 + 236, 4 in 256 + 118.
    assert_eq!(splits[1].pieces(), 2, "{splits:?}");
    // A 256 KiB tile still takes every queue: 1,024 + 862 against 512 + 1,724 for 8.
    let big = spread(&[t(0, 128, 262144)], &Together::Always, 100_000, 100_000, 0)
        .expect("every split fits");
    assert_eq!(big[0].pieces(), 16);
}

/// One f32 tile stored twice: whole to an f32 output, and narrowed to a bf16 one.
const NARROWING: &str = r#"kernel narrow(x) -> (y, z) {
  tensor x: hbm f32[128, 512] input
  tensor y: hbm bf16[128, 512] output
  tensor z: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma x[0 +: 128, 0 +: 512]
  }
  stmt {
    y[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
  }
  stmt {
    z[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
  }
}
"#;

#[test]
fn a_narrowing_store_is_planned_with_the_bytes_it_moves() {
    let (func, bir) = lower(NARROWING);
    let stores: Vec<BirInst> = (bir.insts.keys())
        .filter(|&i| matches!(bir.insts[i].op, penguin::ir::Op::Store))
        .collect();
    assert_eq!(stores.len(), 2);
    let bytes = |i: BirInst| {
        transfer(&func, &bir, i)
            .expect("a store is a transfer")
            .bytes
    };
    let (narrow, whole) = match func.tensors[bir.insts[stores[0]].dst.tensor].dtype {
        DType::Bf16 => (stores[0], stores[1]),
        _ => (stores[1], stores[0]),
    };
    // As the simulator counts them: the bf16 side's bytes, half the f32 store's (the tile's
    // bytes, which the plan took before, are the same for both).
    assert_eq!(bytes(narrow), 128 * 512 * 2);
    assert_eq!(bytes(whole), 128 * 512 * 4);
    // The plan: the busiest queue, with each piece's bytes as the simulator moves them, is
    // within a sixteenth of the bound of the bytes the three transfers move.
    let plan = compute_queue_plan(&func, &bir);
    let mut load = [0u64; DMA_QUEUES];
    let mut total = 0;
    for i in bir.insts.keys() {
        if let Some(s) = plan.split(i) {
            let b = bytes_of(&func, &bir, i);
            total += machine::dma_queue_cycles(b);
            for &q in &s.queues {
                load[q as usize] += machine::dma_queue_cycles(b / s.pieces());
            }
        }
    }
    let busiest = load.into_iter().max().unwrap_or(0);
    let bound = total / DMA_QUEUES as u64;
    assert!(
        busiest <= bound + bound / 16 + 2,
        "{busiest} vs {bound}: {:?}",
        plan.splits
    );
}

fn bytes_of(func: &Function, bir: &Bir, i: BirInst) -> u64 {
    let bi = &bir.insts[i];
    transfer_bytes(func, &bi.op, &bi.dst, &bi.srcs).expect("a load or a store")
}

#[test]
fn a_tile_of_few_partitions_takes_its_largest_split() {
    assert_eq!(largest_split(1), 1);
    assert_eq!(largest_split(24), 8);
    assert_eq!(largest_split(128), 16);
    let ts = [t(0, 1, 4096)];
    let mut target = 64;
    let splits = loop {
        if let Some(s) = pack(&ts, &Together::Always, target, 3) {
            break s;
        }
        target += target / 32 + 1;
    };
    assert_eq!(splits[0].queues.len(), 1);
}

/// The steady class's busiest queue and `sp`'s issue cycles under `splits` (every transfer
/// running).
fn steady_cost(ts: &[Transfer], splits: &[SplitData]) -> (u64, u64) {
    cost(ts, splits)
}

#[test]
fn the_steady_plan_balances_unlike_transfers_within_one_piece() {
    // Three transfers of different sizes and partitions in one body, every iteration: a
    // 128 x 512 f32 load, a 96 x 256 f32 store and an 80 x 320 bf16 store. The busiest queue
    // is within one piece of the queues' average, and no queue holds two pieces of one
    // transfer.
    let ts = [
        t(0, 128, 128 * 512 * 4),
        t(1, 96, 96 * 256 * 4),
        t(2, 80, 80 * 320 * 2),
    ];
    let classes = vec![(vec![true; 3], 8)];
    let splits = steady::compute_steady_plan(&ts, &classes, 0, 0).expect("every transfer runs");
    let (busiest, issued) = steady_cost(&ts, &splits);
    let total: u64 = ts.iter().map(|t| machine::dma_queue_cycles(t.bytes)).sum();
    let average = total.div_ceil(DMA_QUEUES as u64);
    let longest = (ts.iter().zip(&splits))
        .map(|(t, s)| machine::dma_queue_cycles(t.bytes / s.pieces()))
        .max()
        .unwrap_or(0);
    assert!(
        busiest <= average + longest,
        "busiest {busiest}, average {average}, piece {longest}: {splits:?}"
    );
    // What binds: the queues are above `sp` (counted as the search counts it) by less than
    // one more split of a transfer on the busiest queue would cost.
    assert!(issued <= busiest, "sp {issued} vs queues {busiest}");
    for (t, s) in ts.iter().zip(&splits) {
        let mut q = s.queues.clone();
        q.sort();
        q.dedup();
        assert_eq!(q.len(), s.queues.len(), "distinct queues: {s:?}");
        assert!(t.partitions.is_multiple_of(s.pieces()), "{s:?}");
    }
}

#[test]
fn a_divisor_split_balances_what_powers_of_two_do_not() {
    // stream_store_loaded: three 80-partition transfers of 5,390 queue cycles per iteration.
    // Four pieces each leave a queue with two pieces (1,348 cycles); five each put one piece
    // on 15 queues (1,078), with 15 issue slots.
    let ts: Vec<Transfer> = (0..3).map(|k| t(k, 80, 80 * 320 * 4)).collect();
    let classes = vec![(vec![true; 3], 9)];
    let splits = steady::compute_steady_plan(&ts, &classes, 0, 0).expect("every transfer runs");
    assert!(splits.iter().all(|s| s.pieces() == 5), "{splits:?}");
    let (busiest, _) = steady_cost(&ts, &splits);
    assert_eq!(busiest, machine::dma_queue_cycles(80 * 320 * 4 / 5));
    // And the whole plan takes it: its estimate is below the powers of two's.
    let (func, bir) = lower(THREE_80);
    let plan = compute_queue_plan(&func, &bir);
    let pieces: Vec<u64> = (bir.insts.keys())
        .filter_map(|i| plan.split(i).map(SplitData::pieces))
        .collect();
    assert_eq!(pieces, vec![5, 5, 5], "{:?}", plan.splits);
}

/// One 80-partition tile loaded and stored twice in each iteration of a loop (no guard: one
/// class). (A body that runs once is split for its latency instead, `queues::latency`.)
const THREE_80: &str = r#"kernel three(x) -> (y, z) {
  tensor x: hbm f32[720, 320] input
  tensor y: hbm f32[720, 320] output
  tensor z: hbm f32[720, 320] output
  tensor t: sbuf f32[80, 320] local
  loop i in 0..9 affine {
    stmt {
      t[0 +: 80, 0 +: 320] = load.dma x[80*i +: 80, 0 +: 320]
    }
    stmt {
      y[80*i +: 80, 0 +: 320] = store.dma t[0 +: 80, 0 +: 320]
    }
    stmt {
      z[80*i +: 80, 0 +: 320] = store.dma t[0 +: 80, 0 +: 320]
    }
  }
}
"#;

#[test]
fn exp_stages_split_is_chosen_by_what_binds() {
    // exp_stages on the emergent path: a 256 KiB load in iterations 0-7 of 11 and a 256 KiB
    // store in 3-10. In the steady state (both running), 16 pieces each make `sp` bind (32
    // issue slots, 2,048 cycles, against 1,725 of queue time); 8 pieces each bind on the
    // queues at 1,725: the steady plan takes the split whose binding cost is smaller.
    let ts: Vec<Transfer> = (0..2)
        .map(|k| Transfer {
            on: 8,
            total: 11,
            ..t(k, 128, 262144)
        })
        .collect();
    let classes = vec![
        (vec![true, false], 3),
        (vec![true, true], 5),
        (vec![false, true], 3),
    ];
    let steady = steady::compute_steady_plan(&ts, &classes, 0, 0).expect("both run together");
    assert!(steady.iter().all(|s| s.pieces() == 8), "{steady:?}");
    let (queues, issued) = steady_cost(&ts, &steady);
    assert!(issued < queues, "sp {issued} vs queues {queues}");
    let sixteen = vec![
        SplitData {
            queues: (0..16).collect(),
        };
        2
    ];
    let (_, issued16) = steady_cost(&ts, &sixteen);
    assert!(issued16 > queues, "16-way: sp {issued16} vs {queues}");
    // Over the whole loop, the fill and the drain run one transfer each, which 16 pieces move
    // twice as fast: the 16-way plan's estimate is lower, and the loop keeps it (measured on
    // the simulator: 19,433 cycles against 20,761 with 8-way splits).
    let whole = |s: &[SplitData]| estimate_time_with(&ts, &classes, s, 0, (SEARCH_SP, 0));
    assert!(whole(&sixteen) < whole(&steady));
    // The walk goes past the steady state's split, and its best plan over every class is the
    // 16-way one.
    let walk = steady::compute_steady_walk(&ts, &classes, 0, 0).expect("both run together");
    let best = (walk.iter())
        .min_by_key(|s| whole(s))
        .expect("the walk has plans");
    assert!(best.iter().all(|s| s.pieces() == 16), "{walk:?}");
}

#[test]
fn a_transfer_the_steady_state_does_not_run_takes_its_largest_split() {
    // nest_odd's inner body: two first-execution loads that run once in 15 iterations, the
    // in-loop load in 8 of them, and the carry in the 5 others (takes turns with it). The
    // steady class is the in-loop load's; the first-execution loads and the carry are planned
    // 16 ways, for their latency.
    let ts = [
        Transfer {
            on: 1,
            total: 15,
            ..t(0, 128, 262144)
        },
        Transfer {
            on: 1,
            total: 15,
            ..t(1, 128, 262144)
        },
        Transfer {
            on: 8,
            total: 15,
            ..t(2, 128, 262144)
        },
        Transfer {
            on: 5,
            total: 15,
            ..t(3, 128, 262144)
        },
    ];
    let classes = vec![
        (vec![true, true, false, false], 1),
        (vec![false, false, true, false], 8),
        (vec![false, false, false, true], 5),
    ];
    let walk = steady::compute_steady_walk(&ts, &classes, 0, 0).expect("there are classes");
    for plan in &walk {
        for k in [0, 1, 3] {
            assert_eq!(plan[k].pieces(), 16, "{plan:?}");
        }
    }
    let whole = |s: &[SplitData]| estimate_time_with(&ts, &classes, s, 0, (SEARCH_SP, 0));
    let best = walk.iter().min_by_key(|s| whole(s)).expect("plans");
    assert_eq!(best[2].pieces(), 16, "{best:?}");
}

#[test]
fn a_steady_class_of_one_iteration_has_no_period() {
    // nki_rmsnorm_kernel on 250 rows: a full tile's load and store in the first iteration, the
    // 122-row rest's in the second. No class runs twice: no period for the walk to shorten.
    let ts = [
        t(0, 128, 262144),
        t(1, 128, 262144),
        t(2, 122, 249856),
        t(3, 122, 249856),
    ];
    let once = vec![
        (vec![true, true, false, false], 1),
        (vec![false, false, true, true], 1),
    ];
    assert!(!steady::has_period(&ts, &once));
    let twice = vec![
        (vec![true, true, false, false], 2),
        (vec![false, false, true, true], 1),
    ];
    assert!(steady::has_period(&ts, &twice));
}

/// A tile loaded, stored to HBM scratch, reloaded in part and stored out: a body that runs once,
/// whose chain (four transfers and an exp) is far longer than its transfers' packing.
const ROUND_TRIP: &str = r#"kernel trip(x) -> (y) {
  tensor x: hbm f32[64, 1024] input
  tensor s: hbm f32[64, 1024] local
  tensor y: hbm f32[64, 512] output
  tensor t: sbuf f32[64, 1024] local
  tensor u: sbuf f32[64, 512] local
  tensor v: sbuf f32[64, 512] local
  stmt {
    t[0 +: 64, 0 +: 1024] = load.dma x[0 +: 64, 0 +: 1024]
  }
  stmt {
    s[0 +: 64, 0 +: 1024] = store.dma t[0 +: 64, 0 +: 1024]
  }
  stmt {
    u[0 +: 64, 0 +: 512] = load.dma s[0 +: 64, 512 +: 512]
  }
  stmt {
    v[0 +: 64, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) u[0 +: 64, 0 +: 512]
  }
  stmt {
    y[0 +: 64, 0 +: 512] = store.dma v[0 +: 64, 0 +: 512]
  }
}
"#;

#[test]
fn a_chain_of_transfers_in_a_body_that_runs_once_shares_its_queues_piece_for_piece() {
    let (func, bir) = lower(ROUND_TRIP);
    let plan = compute_queue_plan(&func, &bir);
    let split = |k: usize| {
        plan.split(BirInst::new(k))
            .expect("a transfer has a split")
            .clone()
    };
    // Load, store of the loaded tile, reload of the stored rows: one chain, one split, each
    // piece queued behind the piece that wrote its rows (no semaphore, no second latency).
    let (load, store, reload) = (split(0), split(1), split(2));
    assert_eq!(store, load, "the store queues behind the load");
    assert_eq!(reload, store, "the reload queues behind the store");
    // Split for the chain's latency, not the fewest pieces the queues' throughput allows:
    // three transfers of 13,798 + 13,798 + 6,899 = 34,495 queue cycles; `3 · p · 64 + 34,495 / p`
    // is least at 16 pieces (5,228 cycles; 8 pieces: 5,848).
    assert_eq!(load.pieces(), 16, "{:?}", plan.splits);
    // The last store reads what the exp wrote: not part of the chain, its own split.
    assert!(split(4).pieces() >= 1);
}

/// Rounds through one HBM region: each iteration reloads what the previous one stored.
const ROUNDS: &str = r#"kernel rounds(x) -> (y) {
  tensor x: hbm f32[128, 512] input
  tensor y: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor u: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma x[0 +: 128, 0 +: 512]
  }
  stmt {
    y[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
  }
  loop i in 0..4 sequential {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma y[0 +: 128, 0 +: 512]
    }
    stmt {
      u[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=add, imm=1.0, reverse=false) t[0 +: 128, 0 +: 512]
    }
    stmt {
      y[0 +: 128, 0 +: 512] = store.dma u[0 +: 128, 0 +: 512]
    }
  }
}
"#;

#[test]
fn a_loop_whose_iterations_chain_through_hbm_reloads_on_the_stores_queues() {
    let (func, bir) = lower(ROUNDS);
    let plan = compute_queue_plan(&func, &bir);
    let (_, l) = bir.loops.iter().next().expect("one loop");
    let transfers: Vec<BirInst> = (l.body.iter())
        .filter_map(|n| match *n {
            BNode::Inst(i) if plan.split(i).is_some() => Some(i),
            _ => None,
        })
        .collect();
    assert_eq!(transfers.len(), 2);
    let (load, store) = match bir.insts[transfers[0]].op {
        penguin::ir::Op::Load => (transfers[0], transfers[1]),
        _ => (transfers[1], transfers[0]),
    };
    assert_eq!(
        plan.split(load),
        plan.split(store),
        "the next iteration's reload queues behind this iteration's store"
    );
}

/// The splits of the transfers of `bir`'s loop `k` (in loop order), in body order.
fn loop_splits(bir: &Bir, plan: &QueuePlan, k: usize) -> Vec<SplitData> {
    let (_, l) = bir.loops.iter().nth(k).expect("the loop exists");
    (l.body.iter())
        .filter_map(|n| match *n {
            BNode::Inst(i) => plan.split(i).cloned(),
            BNode::Loop(_) => None,
        })
        .collect()
}

/// Two loops: the first stores column blocks of a scratch tensor, the second reloads them (in
/// reverse order) and stores them out.
const TWO_LOOPS: &str = r#"kernel two(x) -> (y) {
  tensor x: hbm f32[128, 512] input
  tensor s: hbm f32[128, 512] local
  tensor y: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 128] local
  tensor u: sbuf f32[128, 128] local
  loop j in 0..4 affine {
    stmt {
      t[0 +: 128, 0 +: 128] = load.dma x[0 +: 128, 128*j +: 128]
    }
    stmt {
      s[0 +: 128, 128*j +: 128] = store.dma t[0 +: 128, 0 +: 128]
    }
  }
  loop k in 0..4 affine {
    stmt {
      u[0 +: 128, 0 +: 128] = load.dma s[0 +: 128, 384 - 128*k +: 128]
    }
    stmt {
      y[0 +: 128, 128*k +: 128] = store.dma u[0 +: 128, 0 +: 128]
    }
  }
}
"#;

#[test]
fn a_loop_reloading_what_an_earlier_loop_stored_queues_behind_its_pieces() {
    let (func, bir) = lower(TWO_LOOPS);
    let plan = compute_queue_plan(&func, &bir);
    let first = loop_splits(&bir, &plan, 0);
    let second = loop_splits(&bir, &plan, 1);
    // The reload takes the store's queues piece for piece (same rows per piece): no semaphore,
    // the queue's order orders them.
    assert_eq!(second[0], first[1], "{first:?} {second:?}");
    // The second loop's queues were renamed as a whole: its store keeps as many pieces as the
    // loop's own plan gives it, on queues distinct from the reload's.
    let mut both: Vec<u8> = (second.iter()).flat_map(|s| s.queues.clone()).collect();
    let n = both.len();
    both.sort_unstable();
    both.dedup();
    assert_eq!(
        both.len(),
        n,
        "the loop's transfers keep distinct queues: {second:?}"
    );
}

/// A scratch tensor stored whole (128 rows), then read back as two reloads of 64 rows each.
const HALVES: &str = r#"kernel halves(x) -> (y) {
  tensor x: hbm f32[128, 1024] input
  tensor s: hbm f32[128, 1024] local
  tensor y: hbm f32[64, 1024] output
  tensor t: sbuf f32[128, 1024] local
  tensor lo: sbuf f32[64, 1024] local
  tensor hi: sbuf f32[64, 1024] local
  tensor d: sbuf f32[64, 1024] local
  stmt {
    t[0 +: 128, 0 +: 1024] = load.dma x[0 +: 128, 0 +: 1024]
  }
  stmt {
    s[0 +: 128, 0 +: 1024] = store.dma t[0 +: 128, 0 +: 1024]
  }
  loop k in 0..2 affine {
    stmt {
      lo[0 +: 64, 0 +: 1024] = load.dma s[0 +: 64, 0 +: 1024]
    }
    stmt {
      hi[0 +: 64, 0 +: 1024] = load.dma s[64 +: 64, 0 +: 1024]
    }
    stmt {
      d[0 +: 64, 0 +: 1024] = tensor_tensor.dve(op=subtract) lo[0 +: 64, 0 +: 1024], hi[0 +: 64, 0 +: 1024]
    }
    stmt {
      y[0 +: 64, 0 +: 1024] = store.dma d[0 +: 64, 0 +: 1024]
    }
  }
}
"#;

#[test]
fn reloads_of_half_the_rows_each_take_the_pieces_of_their_rows() {
    let (func, bir) = lower(HALVES);
    let plan = compute_queue_plan(&func, &bir);
    let store = plan
        .split(BirInst::new(1))
        .expect("the store has a split")
        .clone();
    let n = store.queues.len();
    assert!(n >= 2 && n.is_multiple_of(2), "{store:?}");
    let inner = loop_splits(&bir, &plan, 0);
    // Rows 0..64 on the queues of the store's first half of pieces, rows 64..128 on the second.
    assert_eq!(
        inner[0].queues,
        store.queues[..n / 2],
        "{store:?} {inner:?}"
    );
    assert_eq!(
        inner[1].queues,
        store.queues[n / 2..],
        "{store:?} {inner:?}"
    );
}

/// One scratch tile rewritten every iteration after the previous iteration's reload of it (an
/// anti-dependence through HBM), with loads and stores off the chain.
const REWRITE: &str = r#"kernel rewrite(x) -> (y) {
  tensor x: hbm f32[512, 512] input
  tensor s: hbm f32[128, 512] local
  tensor y: hbm f32[512, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor v: sbuf f32[128, 512] local
  loop i in 0..4 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma x[128*i +: 128, 0 +: 512]
    }
    stmt {
      s[0 +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
    }
    stmt {
      v[0 +: 128, 0 +: 512] = load.dma s[0 +: 128, 0 +: 512]
    }
    stmt {
      y[128*i +: 128, 0 +: 512] = store.dma v[0 +: 128, 0 +: 512]
    }
  }
}
"#;

#[test]
fn a_store_of_what_the_previous_iteration_reloaded_queues_behind_the_reload() {
    let (func, bir) = lower(REWRITE);
    let body = &bir.loops.values().next().expect("one loop").body;
    let transfers = body_transfers(&func, &bir, body);
    let pairs = chain::chained_pairs(&bir, body, &transfers, true);
    // Forward: the store of the loaded tile, the reload of the stored rows, the store of the
    // reloaded tile; carried: the store to `s` follows the previous iteration's reload of it.
    assert!(pairs.contains(&(0, 1, false)), "{pairs:?}");
    assert!(pairs.contains(&(1, 2, false)), "{pairs:?}");
    assert!(pairs.contains(&(2, 1, true)), "{pairs:?}");
    let plan = compute_queue_plan(&func, &bir);
    let splits = loop_splits(&bir, &plan, 0);
    assert_eq!(splits[2], splits[1], "the reload queues behind the store");
    // Off the chain's carried part, the first load keeps the loop pipelined: the body is not
    // split for the chain's latency.
    assert!(!chain::all_carried(
        transfers.len(),
        &[(1, 2, false), (2, 1, true)]
    ));
    assert!(chain::all_carried(2, &[(0, 1, false), (1, 0, true)]));
}

#[test]
fn a_loop_whose_iterations_chain_through_every_transfer_is_split_for_the_chain() {
    let (func, bir) = lower(ROUNDS);
    let plan = compute_queue_plan(&func, &bir);
    let splits = loop_splits(&bir, &plan, 0);
    // Reload and store of 256 KiB, one after the other every iteration: `2 · p · 64 + 27,596 /
    // p` is least at 16 pieces (3,773 cycles; 8 pieces: 4,474), where the throughput's plan
    // takes fewer.
    assert_eq!(splits[0].pieces(), 16, "{splits:?}");
    assert_eq!(splits[0], splits[1]);
}

#[test]
fn a_once_run_body_places_each_chain_on_queues_of_its_own_by_time() {
    // Two copies of 64 KiB (a load, then a store of the same rows) and a lone load, every
    // transfer in 4 pieces; the stores follow their loads (`pairs`) and start once they land.
    let ts = [
        t(0, 128, 65536),
        t(1, 128, 65536),
        t(2, 128, 65536),
        t(3, 128, 65536),
        t(4, 128, 32768),
    ];
    let pieces = [4, 4, 4, 4, 4];
    let starts = [0, 0, 5000, 5000, 0];
    let pairs = [(0, 2), (1, 3)];
    let splits = latency::place_pieces_by_time(&ts, &pieces, &starts, 0, &pairs);
    // Each store on its load's queues, the loads on queues of their own: 12 queues in use.
    assert_eq!(splits[2].queues, splits[0].queues);
    assert_eq!(splits[3].queues, splits[1].queues);
    let mut used: Vec<u8> = [0, 1, 4]
        .iter()
        .flat_map(|&k| splits[k].queues.clone())
        .collect();
    used.sort_unstable();
    used.dedup();
    assert_eq!(used.len(), 12, "{splits:?}");
    // A transfer that starts once every queue is free takes, of those, the least loaded: the
    // four that the three loads before it left idle.
    let late = [
        t(0, 128, 65536),
        t(1, 128, 65536),
        t(2, 128, 65536),
        t(3, 128, 32768),
    ];
    let splits = latency::place_pieces_by_time(&late, &[4; 4], &[0, 0, 0, 20000], 0, &[]);
    let mut used: Vec<u8> = (0..3).flat_map(|k| splits[k].queues.clone()).collect();
    used.sort_unstable();
    used.dedup();
    assert_eq!(used.len(), 12, "{splits:?}");
    assert!(
        splits[3].queues.iter().all(|q| !used.contains(q)),
        "{splits:?}"
    );
}

/// A pipelined loop of 5 row blocks: stage 0 loads a block into a ring, stage 1 stores it to
/// `m`, stage 2 reloads the rows the store of the iteration before wrote (`m[64*i - 128]` at
/// `i` is `m[64*(i - 1) - 64]`, the store's rows at `i − 1`) and stores them out. The iterations
/// do not chain: each touches rows of its own.
const STAGED_RELOAD: &str = r#"kernel staged(x) -> (y) {
  tensor x: hbm f32[320, 256] input
  tensor m: hbm f32[320, 256] local
  tensor y: hbm f32[320, 256] output
  tensor t: sbuf f32[64, 256] local block[i: 2]
  tensor v: sbuf f32[64, 256] local
  loop i in 0..7 affine {
    stmt if i >= 0 && i < 5 {
      t{i}[0 +: 64, 0 +: 256] = load.dma x[64*i +: 64, 0 +: 256]
    }
    stmt if i >= 1 && i < 6 {
      m[64*i - 64 +: 64, 0 +: 256] = store.dma t{i - 1}[0 +: 64, 0 +: 256]
    }
    stmt if i >= 2 && i < 7 {
      v[0 +: 64, 0 +: 256] = load.dma m[64*i - 128 +: 64, 0 +: 256]
    }
    stmt if i >= 2 && i < 7 {
      y[64*i - 128 +: 64, 0 +: 256] = store.dma v[0 +: 64, 0 +: 256]
    }
  }
}
"#;

#[test]
fn a_reload_of_the_rows_stored_a_stage_before_queues_behind_the_store() {
    let (func, bir) = lower(STAGED_RELOAD);
    let (_, lp) = bir.loops.iter().next().expect("one loop");
    let transfers = body_transfers(&func, &bir, &lp.body);
    let at = |line: usize| {
        let inst = match lp.body[line] {
            BNode::Inst(i) => i,
            BNode::Loop(_) => unreachable!("a flat body"),
        };
        (transfers.iter())
            .position(|t| t.inst == inst.index())
            .expect("every transfer is listed")
    };
    let (load, store, reload) = (at(0), at(1), at(2));
    // The store follows the load one iteration later (its ring slot), the reload the store.
    let pairs = chain::shifted_pairs(&bir, &transfers, lp.axis);
    assert!(pairs.contains(&(load, store, 1)), "{pairs:?}");
    assert!(pairs.contains(&(store, reload, 1)), "{pairs:?}");
    // The plan lines the reload up behind the store's pieces: no semaphore, no latency.
    let plan = compute_queue_plan(&func, &bir);
    let splits = loop_splits(&bir, &plan, 0);
    assert_eq!(splits[2], splits[1], "the reload queues behind the store");
}
