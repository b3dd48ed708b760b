//! Rings for the tiles of a ragged last iteration (`backend::transform::emergent::plan`): a load
//! masked to the rows of a partial tile, read only under the same mask — or read whole, row by
//! row, into tiles of the iteration that only masked accesses observe — carries no value an
//! effect depends on from one iteration to the next, so the tile becomes a ring and its loads are
//! issued ahead; a tile whose rows past its masked load reach an effect (an unmasked store, an
//! accumulator kept across iterations) stays single-buffered. Every run is checked against the
//! interpreter bit for bit.

mod common;
use common::{nkc, scratch_kernel, stderr, stdout};

const FILE: &str = "tests/good/ragged_rings.nk";

/// The last iteration's store reads every row of the tile, past the rows its load wrote: those
/// rows hold what the iteration before loaded, so the tile carries values across iterations.
const READS_ALL: &str = r#"def ragged_reads_all(a: nl.hbm[nl.float32, 176, 256]):
    out = nl.ndarray((192, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(64)[:, None]
    iy = nl.arange(256)[None, :]
    for i in nl.affine_range(3):
        t = nl.load(a[i * 64 + ix, iy], mask=(i * 64 + ix < 176))
        nl.store(out[i * 64:(i + 1) * 64, :], value=t)
    return out
"#;

/// The backend's log and the cycles of `kernel` of `file` on `path`, checked against the
/// interpreter, without races.
fn run(file: &str, kernel: &str, path: &str) -> (String, u64) {
    let args = ["run", file, "--kernel", kernel, "--pipeline", path];
    let o = nkc(&[&args[..], &["--log", "backend", "--check"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let j = nkc(&[&args[..], &["--json"]].concat());
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
        let (log, default) = run(FILE, kernel, "default");
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
        let (_, none) = run(FILE, kernel, "none");
        // The loads issued ahead hide most of each iteration's latency.
        assert!(
            default * 10 < none * 6,
            "{kernel}: default {default}, none {none}"
        );
    }
}

#[test]
fn a_tile_read_past_its_masked_rows_stays_single() {
    let file = scratch_kernel("ragged_rings", "reads_all", READS_ALL);
    let (log, default) = run(&file, "ragged_reads_all", "default");
    assert!(
        log.contains(
            "`t` stays single-buffered in loop `i`: an iteration does not start by writing all of it"
        ),
        "{log}"
    );
    let (_, none) = run(&file, "ragged_reads_all", "none");
    assert_eq!(default, none);
}

/// The masked tile read whole into an accumulator written before the loop: the rows past the
/// mask carry the earlier iterations' values on to the store after the loop.
const INTO_ACC: &str = r#"def ragged_into_acc(a: nl.hbm[nl.float32, 176, 256]):
    out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(64)[:, None]
    iy = nl.arange(256)[None, :]
    acc = nl.zeros((64, 256), dtype=nl.float32)
    for i in nl.affine_range(3):
        t = nl.load(a[i * 64 + ix, iy], mask=(i * 64 + ix < 176))
        acc[...] = nl.add(acc, nl.exp(t))
    nl.store(out[ix, iy], value=acc)
    return out
"#;

/// The masked tile read whole into a tile derived within the iteration, stored unmasked: the
/// rows past the mask reach the output.
const DERIVED_STORED: &str = r#"def ragged_derived_stored(a: nl.hbm[nl.float32, 176, 256]):
    out = nl.ndarray((192, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(64)[:, None]
    iy = nl.arange(256)[None, :]
    for i in nl.affine_range(3):
        t = nl.load(a[i * 64 + ix, iy], mask=(i * 64 + ix < 176))
        nl.store(out[i * 64 + ix, iy], value=nl.exp(t))
    return out
"#;

#[test]
fn a_masked_tile_read_whole_into_values_only_masked_accesses_observe_becomes_a_ring() {
    // The compute reads the whole tile unmasked, row by row (`queues_rest.nk`), or element by
    // element under a mask on rows and columns (`masked_tiles.nk`); only masked stores observe it.
    for (file, kernel) in [
        ("tests/good/queues_rest.nk", "rows_and_rest"),
        ("tests/good/queues_rest.nk", "rows_rest_weights"),
        ("tests/good/masked_tiles.nk", "ragged_rows_cols"),
        ("tests/good/masked_tiles.nk", "nested_rest"),
    ] {
        let (log, default) = run(file, kernel, "default");
        assert!(log.contains("`t` becomes a ring of"), "{kernel}: {log}");
        let (_, none) = run(file, kernel, "none");
        assert!(
            default * 100 < none * 80,
            "{kernel}: default {default}, none {none}"
        );
    }
}

#[test]
fn a_masked_tile_whose_dropped_rows_reach_an_effect_stays_single() {
    for (name, kernel, text) in [
        ("into_acc", "ragged_into_acc", INTO_ACC),
        ("derived_stored", "ragged_derived_stored", DERIVED_STORED),
    ] {
        let file = scratch_kernel("ragged_rings", name, text);
        let (log, _) = run(&file, kernel, "default");
        assert!(
            log.contains("`t` stays single-buffered in loop `i`"),
            "{kernel}: {log}"
        );
    }
}
