//! Emergent PSUM rings: a PSUM tile that every iteration writes whole before reading becomes a
//! ring of two banks, so the Tensor engine fills the next iteration's bank while another engine
//! still reads this one's; and the 8-bank budget holds when there are more such tiles than banks.

mod common;
use common::{nkc, stderr, stdout};

fn json(args: &[&str]) -> serde_json::Value {
    let o = nkc(args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("--json prints one object")
}

#[test]
fn attentions_psum_tiles_become_bank_rings_and_speed_it_up() {
    let o = nkc(&[
        "run",
        "examples/attention.nk",
        "--pipeline",
        "emergent",
        "--log",
        "backend",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    for t in ["s", "acc"] {
        assert!(
            log.contains(&format!("PSUM tile `{t}` becomes a ring of 2 banks")),
            "{log}"
        );
    }
    let emergent = json(&[
        "run",
        "examples/attention.nk",
        "--pipeline",
        "emergent",
        "--json",
    ]);
    let none = json(&[
        "run",
        "examples/attention.nk",
        "--pipeline",
        "none",
        "--json",
    ]);
    // More banks in use, and fewer cycles.
    assert!(emergent["psum_banks"].as_u64() > none["psum_banks"].as_u64());
    assert!(emergent["cycles"].as_u64() < none["cycles"].as_u64());
    assert!(emergent["psum_banks"].as_u64().unwrap() <= 8);
}

#[test]
fn more_psum_tiles_than_banks_keep_the_rest_single() {
    let o = nkc(&[
        "run",
        "tests/good/many_psum.nk",
        "--pipeline",
        "emergent",
        "--log",
        "backend",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    let rings = log.matches("becomes a ring of 2 banks").count();
    let single = log.matches("stays one PSUM bank").count();
    // Five one-bank tiles: three get a second bank (5 + 3 = 8), two stay single.
    assert_eq!((rings, single), (3, 2), "{log}");
    let r = json(&[
        "run",
        "tests/good/many_psum.nk",
        "--pipeline",
        "emergent",
        "--json",
    ]);
    assert_eq!(r["psum_banks"].as_u64(), Some(8));
    assert!(r["races"].as_array().is_some_and(|a| a.is_empty()));
}
