//! The footprint of each piece of a split transfer is the bounding box of that piece's own
//! elements (`backend::codegen::emit`, `Emitter::dma`), for an access pattern whose partitions
//! step by more than one row, or whose other axes step rows too (the partition axis in the
//! middle of an N-D tensor). The synchronisation analysis orders the pieces by these boxes: a
//! box too small loses a dependence (a race, a wrong result), a box too large orders pieces
//! that touch disjoint elements one after the other.

mod common;
use common::{nkc, run_checked_json, stdout};

const FILE: &str = "tests/good/middle_partition_stores.nk";
const PATHS: [&str; 5] = ["none", "annotated", "default", "emergent", "auto"];

/// Partitions in the middle axis of a 3-D tensor. Not in `tests/good`: the pieces' boxes
/// overlap (each spans all six blocks) although their elements do not, so the static wait
/// pruning orders the pieces by their boxes where the race detector needs no wait, and
/// `tests/static_pruning.rs` holds the corpus to exactly the race detector's waits.
const MIDDLE_AXIS: &str = r#"# Partitions in the middle axis of a 3-D tensor: each piece of 32 partitions reaches rows in
# all 6 blocks, so the reload of the last block waits for every piece, not only for the piece
# whose first rows it reads (main raced here: the reload did not wait for pieces 2 and 3).
def middle_axis_reload(x: nl.hbm[nl.float32, 128, 60]):
    y = nl.ndarray((6, 128, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    z = nl.ndarray((128, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.multiply(t, 2.0)
    i_p = nl.arange(128)[:, None, None]
    i_b = nl.arange(6)[None, :, None]
    i_f = nl.arange(10)[None, None, :]
    nl.store(y[i_b, i_p, i_f], value=u[i_p, i_b * 10 + i_f])
    v = nl.load(y[5, :, :])
    nl.store(z, value=nl.add(v, 1.0))
    return y, z
"#;

#[test]
fn a_reload_waits_for_every_piece_that_reaches_its_rows() {
    // Each piece of the store into `y[b, p, f]` reaches rows of all six blocks; nkc-m14 ordered
    // the reload of block 5 only after the pieces whose first rows it reads, and raced.
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("middle_axis_reload.nk");
    std::fs::write(&path, MIDDLE_AXIS).expect("the target's temporary directory is writable");
    let file = path.to_str().expect("a UTF-8 path");
    for path in PATHS {
        run_checked_json(
            file,
            &["--kernel", "middle_axis_reload", "--pipeline", path],
        );
    }
}

/// The lines of `isa` from the first `dma` of the store of `out` to its last.
fn store_span(isa: &str, tensor: &str) -> Vec<String> {
    let lines: Vec<&str> = isa.lines().map(str::trim).collect();
    let is_piece = |l: &str| l.starts_with("dma q") && l.contains(&format!(" hbm {tensor}["));
    let first = lines.iter().position(|l| is_piece(l));
    let last = lines.iter().rposition(|l| is_piece(l));
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].iter().map(|l| l.to_string()).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn pieces_of_disjoint_rows_are_issued_without_waiting_for_one_another() {
    let out = nkc(&[
        "compile",
        FILE,
        "--kernel",
        "strided_block_stores",
        "--pipeline",
        "none",
        "--emit",
        "isa",
    ]);
    assert!(out.status.success());
    let isa = stdout(&out);
    let span = store_span(&isa, "out");
    let pieces = span.iter().filter(|l| l.starts_with("dma q")).count();
    assert!(pieces >= 2, "the store is split: {span:#?}");
    assert!(
        !span.iter().any(|l| l.starts_with("wait")),
        "a piece waits between the store's pieces: {span:#?}"
    );
    for path in PATHS {
        run_checked_json(
            FILE,
            &["--kernel", "strided_block_stores", "--pipeline", path],
        );
    }
}
