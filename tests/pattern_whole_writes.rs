//! A tile written through access patterns carries nothing from one iteration to the next when
//! its writes reach every element: one permuting copy of the whole tile
//! (`penguin::ir::Access::covers_whole`), or strided copies whose elements together cover what
//! is read (the emergent plan's `filled_in_parts`, element by element). Emergent pipelining then
//! rings it like a tile written by a box (before, it stayed single-buffered, and each
//! iteration's copy waited for the previous iteration's store to land: 2.02x and 2.42x the
//! bound on nkc-m13).

mod common;
use common::run_checked_json;

const FILE: &str = "tests/good/pattern_whole_writes.nk";

#[test]
fn a_tile_written_through_patterns_becomes_a_ring() {
    for (kernel, tile) in [("permuted_rows", "p"), ("interleaved_halves", "o")] {
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
        let (cycles, bound) = (v["cycles"].as_f64(), v["lower_bound"].as_f64());
        let (cycles, bound) = (cycles.expect("cycles"), bound.expect("a bound"));
        assert!(cycles <= 1.25 * bound, "{kernel}: {cycles} against {bound}");
    }
}
