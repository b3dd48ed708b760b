//! Loops that hold a loop (issue 32, item 3): a ring along a short inner loop takes the slots
//! its loop cannot use along the loop around it (`backend/src/transform/emergent/outer_slots.rs`),
//! and in a body staged around an inner loop that stores, `sp` issues the next trip's load
//! before the inner loop (`backend/src/codegen/schedule.rs`).

use backend::transform::emergent::outer_slots::spread_outer_slots;
use backend::transform::emergent::{EmergentOptions, EmergentRemark};

#[path = "common/emergent.rs"]
#[allow(dead_code)]
mod emergent;

use emergent::{emergent_cycles, good, race_free_cycles};

/// The store tile of a trip-2 loop inside a trip-5 loop wants more slots than 2: spread over
/// the outer loop, the next execution's scaling no longer waits for this one's stores to land.
/// (Checked to fail without the mechanism: with `spread_outer_slots` returning at once, no
/// remark and equal cycles.)
#[test]
fn short_inner_ring_spreads_over_the_outer_loop() {
    let src = good("nest_spread_slots.nk");
    let (before, mut func, _) = emergent_cycles(&src, &EmergentOptions::default());
    let log = spread_outer_slots(&mut func);
    let spread: Vec<_> = (log.iter())
        .filter_map(|r| match r {
            EmergentRemark::OuterSlots {
                iv, outer, slots, ..
            } => Some((iv.clone(), outer.clone(), *slots)),
            _ => None,
        })
        .collect();
    assert!(
        spread
            .iter()
            .any(|(iv, outer, (m, t))| iv == "h" && outer == "r" && *m >= 2 && *t == 2),
        "{spread:?}"
    );
    nkc::driver::verify(&func, "outer slots").unwrap();
    let after = race_free_cycles(&func, &src);
    assert!(after < before, "{after} cycles spread against {before}");
}

/// Only a ring with more slots than its loop has iterations changes, into two dimensions.
#[test]
fn only_rings_with_unused_slots_change() {
    let src = good("nest_whole.nk");
    let (_, mut func, _) = emergent_cycles(&src, &EmergentOptions::default());
    let blocks: Vec<_> = func.tensors.values().map(|t| t.block.clone()).collect();
    let log = spread_outer_slots(&mut func);
    for (t, before) in func.tensors.values().zip(&blocks) {
        if t.block != *before {
            // Only a ring of more slots than its loop's trip changes, into two dimensions.
            assert_eq!(before.len(), 1);
            assert_eq!(t.block.len(), 2);
            let trip = func.axes[before[0].axis].trip_count();
            assert!(
                i64::from(before[0].count) > trip,
                "{before:?} -> {:?}",
                t.block
            );
        }
    }
    assert!(
        !log.is_empty(),
        "nest_whole's store tile (8 slots, trip 3) spreads"
    );
}

/// In a body staged around an inner loop that stores, the next trip's load of the row block
/// goes before the inner loop in `sp`'s stream. (Checked to fail without the mechanism: with
/// every node holding a load in one class, the inner loop's longer critical path put it first
/// and the load after it.)
#[test]
fn load_goes_before_an_inner_loop_that_stores() {
    let src = good("nest_load_ahead_inner.nk");
    let (_, func, _) = emergent_cycles(&src, &EmergentOptions::default());
    let compiled = nkc::pipeline::codegen(&func, Some(&src.text), true).unwrap();
    let text = runtime_sim::text::print(&compiled.program);
    let sp = text
        .split("engine sp {")
        .nth(1)
        .expect("the program has an sp stream");
    let load = sp.find("line 9 ").expect("the row block's load");
    // The inner loop's stores (line 12) follow the load in the stream.
    assert!(sp[load..].contains("line 12 "), "{sp}");
}
