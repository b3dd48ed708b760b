//! A tile each iteration fills in parts before reading them (`pair[:, 0:96] = ...`, then the
//! other half from the first, then a store of all of it) carries nothing from one iteration to
//! the next: emergent pipelining rings it like a tile written whole at once (before, it stayed
//! single-buffered, and each iteration's first write waited for the previous store to land).

mod common;
use common::assert_ringed_within;

const FILE: &str = "tests/good/filled_in_parts.nk";

#[test]
fn a_tile_filled_in_parts_becomes_a_ring() {
    for (kernel, tile) in [
        ("halves_then_store", "pair"),
        ("three_blocks_sequential", "acc"),
    ] {
        // Before: 2.30x and 2.51x the bound, the stores' latency once per iteration.
        assert_ringed_within(FILE, kernel, tile, 1.4);
    }
}
