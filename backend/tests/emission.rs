//! Emission details checked on small kernels written in Penguin IR text: address rotation as
//! modulo terms, predicates as guards in one loop, affine semaphore counts, DMA splitting, and the
//! pseudo-ISA text round trip.

use backend::cost::dma::dma_pieces;
use runtime_sim::isa::{Op, Stmt};

const PIPELINED: &str = r#"kernel tensor_add(a, b) -> (c) {
  tensor a: hbm f32[512, 512] input
  tensor b: hbm f32[512, 512] input
  tensor c: hbm f32[512, 512] output
  tensor ta: sbuf f32[128, 512] local block[i: 2]
  tensor tb: sbuf f32[128, 512] local block[i: 2]
  tensor tc: sbuf f32[128, 512] local block[i: 2]
  loop i in 0..6 affine num_stages=3 pipelined(stages=3, trip=4) {
    stmt stage=0 if i < 4 {
      ta{i}[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt stage=0 if i < 4 {
      tb{i}[0 +: 128, 0 +: 512] = load.dma b[128*i +: 128, 0 +: 512]
    }
    stmt stage=1 if i >= 1 && i < 5 {
      tc{i - 1}[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) ta{i - 1}[0 +: 128, 0 +: 512], tb{i - 1}[0 +: 128, 0 +: 512]
    }
    stmt stage=2 if i >= 2 {
      c[128*i - 256 +: 128, 0 +: 512] = store.dma tc{i - 2}[0 +: 128, 0 +: 512]
    }
  }
}
"#;

fn compile(text: &str) -> backend::Compiled {
    let func = penguin::parse_function(text).expect("the test kernel parses");
    penguin::verify_function(&func).expect("the test kernel verifies");
    backend::compile(&func, None).expect("the test kernel compiles")
}

/// Compiles `text` and simulates it for its timing alone (no numerics) on random inputs drawn
/// with `seed`.
fn timed_run(text: &str, seed: u64) -> runtime_sim::sim::SimResult {
    let c = compile(text);
    let func = penguin::parse_function(text).expect("the test kernel parses");
    let inputs: Vec<_> = penguin::interp::random_inputs(&func, seed)
        .into_iter()
        .map(|a| runtime_sim::sim::Array {
            shape: a.shape,
            data: a.data,
        })
        .collect();
    let timing = runtime_sim::sim::Options {
        numerics: false,
        ..Default::default()
    };
    runtime_sim::sim::simulate(&c.program, &inputs, &timing).unwrap()
}

fn count_loops(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| match s {
            Stmt::Loop(l) => 1 + count_loops(&l.body),
            Stmt::Inst(_) => 0,
        })
        .sum()
}

#[test]
fn a_pipelined_loop_stays_one_predicated_loop_with_rotated_addresses() {
    let c = compile(PIPELINED);
    let text = runtime_sim::text::print(&c.program);
    // One hardware loop per engine that has work, no peeled copies.
    for s in &c.program.streams {
        assert!(count_loops(s) <= 1, "{text}");
    }
    // The stage-1 add reads slot (i - 1) mod N of its ring, the store slot (i - 2) mod N. The
    // pipeliner gives the rings 2 slots; the modulo scheduler's expansion gives them a third,
    // since the reuse of each (a slot refilled while its last reader may still run) is on the
    // recurrence that bounds the loop.
    assert!(!c.expansions.is_empty(), "{text}");
    assert!(
        c.expansions.iter().all(|r| matches!(
            r,
            backend::transform::remark::Remark::RingSlotAdded { slots: 3, .. }
        )),
        "{:?}",
        c.expansions
    );
    assert!(text.contains("((r0 - 1) mod 3)*2048"), "{text}");
    assert!(text.contains("((r0 - 2) mod 3)*2048"), "{text}");
    assert!(text.contains("(r0 mod 3)*2048"), "{text}");
    // Stage guards became instruction guards.
    assert!(
        text.contains("@(r0 >= 1 && r0 < 5) tensor_tensor add"),
        "{text}"
    );
    assert!(text.contains("@(r0 >= 2) dma"), "{text}");
    // Waits are affine in the iteration register.
    assert!(text.contains("wait dma"), "{text}");
    assert!(text.contains(">= r0"), "{text}");
    // The printed program parses back to the same program.
    let back = runtime_sim::text::parse(&text).expect("the emitted text parses");
    assert_eq!(back, c.program);
}

#[test]
fn a_load_is_split_over_the_queues() {
    // 128 x 512 float32: 16 pieces of 8 partitions, as MACHINE.md recommends.
    assert_eq!(dma_pieces(128, 128 * 512 * 4), 16);
    // A [128, 1] column is too small to be worth more than one transfer.
    assert_eq!(dma_pieces(128, 128 * 4), 1);
    // Never more pieces than partitions.
    assert!(dma_pieces(4, 1 << 20) <= 4);
    let c = compile(PIPELINED);
    let mut queues = std::collections::BTreeSet::new();
    for s in &c.program.streams[runtime_sim::isa::Engine::Sp.index()] {
        if let Stmt::Loop(l) = s {
            for i in &l.body {
                if let Stmt::Inst(inst) = i {
                    if let Op::Dma { queue, .. } = inst.op {
                        queues.insert(queue);
                    }
                }
            }
        }
    }
    assert_eq!(queues.len(), 16);
}

#[test]
fn the_simulated_program_has_no_race_and_the_interpreters_bits() {
    let func = penguin::parse_function(PIPELINED).unwrap();
    let c = backend::compile(&func, None).unwrap();
    let inputs = penguin::interp::random_inputs(&func, 11);
    let want = penguin::interp::interpret(&func, &inputs).unwrap();
    let sim_inputs: Vec<_> = inputs
        .iter()
        .map(|a| runtime_sim::sim::Array {
            shape: a.shape.clone(),
            data: a.data.clone(),
        })
        .collect();
    let r = runtime_sim::sim::simulate(&c.program, &sim_inputs, &Default::default()).unwrap();
    assert!(r.races.is_empty(), "{:?}", r.races);
    let got: Vec<u32> = r.outputs[0].1.data.iter().map(|x| x.to_bits()).collect();
    let exp: Vec<u32> = want.outputs[0].data.iter().map(|x| x.to_bits()).collect();
    assert_eq!(got, exp);
}

/// The queue plan balances a loop body: tensor_add's two loads and one store (256 KiB each) fill
/// the 16 queues evenly, with fewer pieces than splitting each transfer 16 ways, and `sp`'s issue
/// slots stay below the queues' time.
#[test]
fn the_queue_plan_balances_the_queues_and_spares_sp() {
    let r = timed_run(PIPELINED, 3);
    let busy = r.stats.queue_busy;
    let max = *busy.iter().max().unwrap();
    let min = *busy.iter().min().unwrap();
    assert!(min > 0, "every queue moves data: {busy:?}");
    assert!(
        max * 100 <= min * 102,
        "queues balanced within 2%: {busy:?}"
    );
    let pieces: u64 = r.stats.queue_transfers.iter().sum();
    // 12 transfers (4 iterations x 3) split 16 ways would be 192 pieces.
    assert!(pieces < 12 * 16, "{pieces} pieces");
    let sp = r.stats.engines[runtime_sim::isa::Engine::Sp.index()].busy;
    assert!(sp < max, "sp busy {sp} against the busiest queue {max}");
}

/// Three 80-partition transfers per iteration (one load stored twice): five pieces each put one
/// piece on each of 15 queues, where quarters (the largest power of two below 16 pieces that
/// keeps `sp` below the queues) would put two on some queue.
const THREE_80: &str = r#"kernel three_80(x) -> (y, z) {
  tensor x: hbm f32[720, 320] input
  tensor y: hbm f32[720, 320] output
  tensor z: hbm f32[720, 320] output
  tensor t: sbuf f32[80, 320] local block[i: 2]
  tensor u: sbuf f32[80, 320] local block[i: 2]
  loop i in 0..9 affine {
    stmt {
      t{i}[0 +: 80, 0 +: 320] = load.dma x[80*i +: 80, 0 +: 320]
    }
    stmt {
      u{i}[0 +: 80, 0 +: 320] = activation.act(func=tanh, scale=1.0, bias=false) t{i}[0 +: 80, 0 +: 320]
    }
    stmt {
      y[80*i +: 80, 0 +: 320] = store.dma u{i}[0 +: 80, 0 +: 320]
    }
    stmt {
      z[80*i +: 80, 0 +: 320] = store.dma t{i}[0 +: 80, 0 +: 320]
    }
  }
}
"#;

/// The queue plan balances every transfer of a body together, with splits that divide the
/// partitions: the busiest queue within one piece of the average, `sp` below it.
#[test]
fn the_queue_plan_balances_all_transfers_within_one_piece() {
    let r = timed_run(THREE_80, 5);
    let busy = r.stats.queue_busy;
    let total: u64 = busy.iter().sum();
    let max = *busy.iter().max().unwrap();
    // Within one piece of the average over the nine iterations (quarters would put two pieces
    // on a queue every iteration: 9 x 1,348 against an average of 9,095).
    let piece = runtime_sim::machine::dma_queue_cycles(80 * 320 * 4 / 5);
    let average = total.div_ceil(16);
    assert!(
        max <= average + piece,
        "busiest {max}, average {average}, piece {piece}: {busy:?}"
    );
    let pieces: u64 = r.stats.queue_transfers.iter().sum();
    assert_eq!(pieces, 9 * 3 * 5, "five pieces per transfer: {busy:?}");
    let sp = r.stats.engines[runtime_sim::isa::Engine::Sp.index()].busy;
    assert!(sp < max, "sp busy {sp} against the busiest queue {max}");
}
