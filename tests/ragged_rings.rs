//! Rings for the tiles of a ragged last iteration (`backend::transform::emergent::plan`): a load
//! masked to the rows of a partial tile, read only under the same mask, carries no value from one
//! iteration to the next, so the tile becomes a ring and its loads are issued ahead; a tile read
//! past the rows its masked load wrote stays single-buffered. Every run is checked against the
//! interpreter bit for bit.

mod common;
use common::{nkc, stderr, stdout};

const FILE: &str = "tests/good/ragged_rings.nk";

/// The backend's log and the cycles of `kernel` on `path`, checked against the interpreter.
fn run(kernel: &str, path: &str) -> (String, u64) {
    let o = nkc(&[
        "run",
        FILE,
        "--kernel",
        kernel,
        "--pipeline",
        path,
        "--log",
        "backend",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = nkc(&[
        "run",
        FILE,
        "--kernel",
        kernel,
        "--pipeline",
        path,
        "--json",
    ]);
    assert!(j.status.success(), "{}", stderr(&j));
    let v: serde_json::Value = serde_json::from_str(&stdout(&j)).expect("--json prints one object");
    assert!(v["races"].as_array().is_some_and(|a| a.is_empty()), "{v}");
    (stderr(&o), v["cycles"].as_u64().expect("cycles"))
}

#[test]
fn masked_loads_read_under_their_mask_become_rings() {
    for (kernel, tiles) in [
        ("ragged_row_means", &["t"][..]),
        ("ragged_two_widths", &["x", "y"][..]),
    ] {
        let (log, default) = run(kernel, "default");
        for t in tiles {
            assert!(
                log.contains(&format!("`{t}` becomes a ring of")),
                "{kernel}: {log}"
            );
            assert!(
                !log.contains(&format!("`{t}` stays single-buffered")),
                "{log}"
            );
        }
        let (_, none) = run(kernel, "none");
        // The loads issued ahead hide most of each iteration's latency.
        assert!(
            default * 10 < none * 6,
            "{kernel}: default {default}, none {none}"
        );
    }
}

#[test]
fn a_tile_read_past_its_masked_rows_stays_single() {
    let (log, default) = run("ragged_reads_all", "default");
    assert!(
        log.contains("`t` stays single-buffered in loop `i`: an iteration does not start by writing all of it"),
        "{log}"
    );
    let (_, none) = run("ragged_reads_all", "none");
    assert_eq!(default, none);
}
