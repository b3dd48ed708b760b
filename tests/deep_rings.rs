//! Rings deeper than `MAX_DEPTH` (four) for loops bound by DMA latency
//! (`backend::transform::emergent::plan`, `MAX_RING_DEPTH`): a transferred tile gets the slots
//! its latency wants, up to eight and the loop's trip count, and the loads are issued that many
//! iterations ahead less one. Every run is checked against the interpreter bit for bit.

mod common;
use common::{nkc, stderr, stdout};

const FILE: &str = "tests/good/deep_rings.nk";

#[test]
fn latency_bound_loops_get_rings_as_deep_as_their_trip() {
    for (kernel, trip, tiles) in [
        ("twelve_thin_blocks", 6, &["t", "t.u1"][..]),
        ("five_bf16_blocks", 5, &["u", "v"][..]),
    ] {
        let args = ["run", FILE, "--kernel", kernel, "--pipeline", "default"];
        let o = nkc(&[&args[..], &["--check", "--log", "backend"]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let log = stderr(&o);
        for t in tiles {
            let want = format!(
                "loop `i` (trip {trip}): `{t}` becomes a ring of {trip} slots (prefetch depth {})",
                trip - 1
            );
            assert!(log.contains(&want), "{kernel}: {want}\n{log}");
        }
        assert!(
            log.contains(&format!("issued {} iteration(s) ahead", trip - 1)),
            "{log}"
        );
        let j = nkc(&[&args[..], &["--json"]].concat());
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&j)).expect("--json prints one object");
        assert!(v["races"].as_array().is_some_and(|a| a.is_empty()), "{v}");
        // Within 15% of the lower bound (four-slot rings ran 1.22x and 1.26x).
        let (cycles, bound) = (
            v["cycles"].as_u64().unwrap(),
            v["lower_bound"].as_u64().unwrap(),
        );
        assert!(
            cycles * 100 <= bound * 115,
            "{kernel}: {cycles} against {bound}"
        );
    }
}
