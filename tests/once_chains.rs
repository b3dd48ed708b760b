//! A body that runs once, bound by its latency, places its transfers by time
//! (`backend::codegen::queues::latency::place_pieces_by_time`): an HBM-to-HBM copy is a load and
//! a store queued behind it on the same queues, so a chain's queues carry both, and the next
//! copy's load takes other queues. Before, the stores were placed on queues of their own and
//! then moved behind their loads, so some queues carried two loads (and their stores) while
//! others stayed idle (nkc-m13: `copies_swapped_bf16`'s ten load pieces on six queues, eight
//! queues idle; `tests/nki/dma_hbm_copy.nk` 4,796 cycles, now 4,058).

mod common;
use common::run_checked_json;

const FILE: &str = "tests/good/once_chains.nk";

/// The queue of every `dma` of the program whose destination starts with `to` (`sbuf`: the
/// loads).
fn queues(isa: &str, to: &str) -> Vec<u32> {
    (isa.lines())
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("dma q")?;
            let (q, operands) = rest.split_once(' ')?;
            operands.starts_with(to).then(|| q.parse().ok()).flatten()
        })
        .collect()
}

#[test]
fn the_loads_of_a_once_run_body_spread_over_idle_queues_first() {
    for kernel in ["copies_three_heights", "copies_swapped_bf16"] {
        let isa = common::isa_of(FILE, kernel, "none");
        let loads = queues(&isa, "sbuf");
        let mut used = loads.clone();
        used.sort_unstable();
        used.dedup();
        assert!(!loads.is_empty(), "{kernel}: {isa}");
        // No queue takes a second load piece while a queue is left without any.
        assert_eq!(
            used.len(),
            loads.len().min(16),
            "{kernel}: load pieces on queues {loads:?}\n{isa}"
        );
        let (v, _) = run_checked_json(FILE, &["--kernel", kernel, "--pipeline", "none"]);
        let (cycles, bound) = (v["cycles"].as_f64(), v["lower_bound"].as_f64());
        let (cycles, bound) = (cycles.expect("cycles"), bound.expect("a bound"));
        assert!(cycles <= 1.45 * bound, "{kernel}: {cycles} against {bound}");
    }
}
