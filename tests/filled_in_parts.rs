//! A tile each iteration fills in parts before reading them (`pair[:, 0:96] = ...`, then the
//! other half from the first, then a store of all of it) carries nothing from one iteration to
//! the next: emergent pipelining rings it like a tile written whole at once (before, it stayed
//! single-buffered, and each iteration's first write waited for the previous store to land).

mod common;
use common::run_checked_json;

const FILE: &str = "tests/good/filled_in_parts.nk";

#[test]
fn a_tile_filled_in_parts_becomes_a_ring() {
    for (kernel, tile) in [
        ("halves_then_store", "pair"),
        ("three_blocks_sequential", "acc"),
    ] {
        let (v, log) = run_checked_json(
            FILE,
            &[
                "--kernel",
                kernel,
                "--pipeline",
                "default",
                "--log",
                "backend",
            ],
        );
        assert!(
            log.contains(&format!("`{tile}` becomes a ring of")),
            "{kernel}: {log}"
        );
        assert!(
            !log.contains("does not start by writing all of it"),
            "{kernel}: {log}"
        );
        // Before: 2.30x and 2.51x the bound, the stores' latency once per iteration.
        let (cycles, bound) = (v["cycles"].as_f64(), v["lower_bound"].as_f64());
        let (cycles, bound) = (cycles.expect("cycles"), bound.expect("a bound"));
        assert!(cycles <= 1.4 * bound, "{kernel}: {cycles} against {bound}");
    }
}
