//! The footprint of each piece of a split transfer is the bounding box of that piece's own
//! elements (`backend::codegen::emit`, `Emitter::dma`), for an access pattern whose partitions
//! step by more than one row, or whose other axes step rows too (the partition axis in the
//! middle of an N-D tensor). The synchronisation analysis orders the pieces by these boxes: a
//! box too small loses a dependence (a race, a wrong result), a box too large orders pieces
//! that touch disjoint elements one after the other.

mod common;
use common::{isa_of, run_checked_json};

const FILE: &str = "tests/good/middle_partition_stores.nk";
const PATHS: [&str; 5] = ["none", "annotated", "default", "emergent", "auto"];

/// Writes whose rectangles overlap while their elements do not (`Foot::exact`).
const INTERLEAVED: &str = "tests/good/interleaved_writes.nk";

#[test]
fn a_reload_waits_for_every_piece_that_reaches_its_rows() {
    // Each piece of the store into `y[b, p, f]` reaches rows of all six blocks; nkc-m14 ordered
    // the reload of block 5 only after the pieces whose first rows it reads, and raced.
    for path in PATHS {
        run_checked_json(
            INTERLEAVED,
            &["--kernel", "middle_axis_reload", "--pipeline", path],
        );
    }
}

#[test]
fn a_reload_waits_only_for_the_pieces_of_its_own_partitions() {
    // The store's four pieces of 32 partitions each reach every block; the reload's two pieces
    // of 64 partitions each read block 5 of their own partitions: two store pieces each (the
    // rectangles, which span all six blocks, ordered each reload piece after all four).
    let isa = isa_of(INTERLEAVED, "middle_axis_reload", "none");
    let lines: Vec<&str> = isa.lines().map(str::trim).collect();
    let stores: Vec<String> = (lines.iter())
        .filter(|l| l.starts_with("dma q") && l.split_whitespace().nth(2) == Some("hbm"))
        .filter(|l| l.contains(" hbm y["))
        .filter_map(|l| l.split("-> ").nth(1))
        .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        stores.len(),
        4,
        "the store is split in four signalled pieces: {isa}"
    );
    // A reload piece: `dma qN sbuf... , hbm y[...]` (a store piece names `hbm y` first).
    let is_reload = |l: &str| {
        l.starts_with("dma q")
            && (l.split_whitespace().nth(2)).is_some_and(|t| t.starts_with("sbuf"))
            && l.contains(" hbm y[")
    };
    let mut waits = Vec::new();
    let mut pending = 0;
    for l in &lines {
        if let Some(w) = l.strip_prefix("wait ") {
            pending += usize::from(stores.iter().any(|s| w.starts_with(&format!("{s} "))));
        } else if is_reload(l) {
            waits.push(pending);
            pending = 0;
        }
    }
    assert_eq!(
        waits,
        vec![2, 2],
        "waits on store pieces before each reload piece: {isa}"
    );
}

#[test]
fn interleaved_columns_are_written_without_waiting_for_each_other() {
    // `exp` on act writes the even columns of `u`, `multiply` on dve the odd ones.
    let isa = isa_of(INTERLEAVED, "interleaved_halves", "none");
    let block = |engine: &str| -> Vec<String> {
        let start = isa
            .find(&format!("engine {engine} {{"))
            .unwrap_or_else(|| panic!("an {engine} block: {isa}"));
        let body = &isa[start..];
        let end = body.find("\n}").unwrap_or(body.len());
        body[..end].lines().map(|l| l.trim().to_string()).collect()
    };
    let (act, dve) = (block("act"), block("dve"));
    assert!(act.iter().any(|l| l.starts_with("activation exp")), "{isa}");
    assert!(
        dve.iter().any(|l| l.starts_with("tensor_scalar multiply")),
        "{isa}"
    );
    for (engine, lines, other) in [("act", &act, "tensor_scalar"), ("dve", &dve, "activation")] {
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with(&format!("wait {other}"))),
            "{engine} waits for the other half's writer: {lines:#?}"
        );
    }
    for kernel in ["interleaved_halves", "interleaved_stores"] {
        for path in PATHS {
            run_checked_json(INTERLEAVED, &["--kernel", kernel, "--pipeline", path]);
        }
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
    let isa = isa_of(FILE, "strided_block_stores", "none");
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
