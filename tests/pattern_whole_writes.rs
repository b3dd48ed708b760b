//! A tile written through access patterns carries nothing from one iteration to the next when
//! its writes reach every element: one permuting copy of the whole tile
//! (`penguin::ir::Access::covers_whole`), or strided copies whose elements together cover what
//! is read (the emergent plan's `filled_in_parts`, element by element). Emergent pipelining then
//! rings it like a tile written by a box (before, it stayed single-buffered, and each
//! iteration's copy waited for the previous iteration's store to land: 2.02x and 2.42x the
//! bound on nkc-m13).

mod common;
use common::assert_ringed_within;

const FILE: &str = "tests/good/pattern_whole_writes.nk";

#[test]
fn a_tile_written_through_patterns_becomes_a_ring() {
    for (kernel, tile) in [("permuted_rows", "p"), ("interleaved_halves", "o")] {
        assert_ringed_within(FILE, kernel, tile, 1.25);
    }
}
