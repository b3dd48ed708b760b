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

/// `tests/good/psum_shared_banks.nk`: more PSUM tiles than banks (twelve accumulators renamed by
/// a Python loop, ten of three widths), each filled by an inner loop of matmuls and drained once.
/// Their lifetimes are disjoint, so every path runs them bit-exact in the eight banks: the
/// schedule's PSUM budget counts a tile whose accesses sit in nested loops of a body as that
/// body's (before, only a tile accessed by the body's own instructions counted, the sixteen
/// matmul loops of the SDK's `nki_matmul_fully_optimized_` went first and E0502 followed).
#[test]
fn psum_tiles_filled_by_inner_loops_share_banks() {
    for kernel in ["psum_accumulators_renamed", "psum_tiles_widths"] {
        for path in ["none", "default", "emergent", "annotated"] {
            let r = json(&[
                "run",
                "tests/good/psum_shared_banks.nk",
                "--kernel",
                kernel,
                "--pipeline",
                path,
                "--check",
                "--json",
            ]);
            assert_eq!(r["checked"].as_bool(), Some(true), "{kernel} {path}");
            assert!(r["races"].as_array().is_some_and(|a| a.is_empty()));
            assert!(r["psum_banks"].as_u64().is_some_and(|b| b <= 8), "{r}");
        }
    }
}

/// Ten accumulators that are all still to be read after the last is filled (summed twice in one
/// chain) truly need ten banks at once: E0502 stays, on every path.
const PSUM_TILES_OVERLAP: &str = r#"# Ten PSUM accumulators, each filled by a loop of matmuls, summed twice in a chain: every one is
# still to be read after the last is filled, so ten banks are live at once.
def psum_tiles_overlap(a: nl.hbm[nl.float32, 256, 1280], b: nl.hbm[nl.float32, 256, 512]):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((128, 2, 1280), dtype=nl.float32, buffer=nl.sbuf)
    bt = nl.ndarray((128, 2, 512), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(2):
        nisa.dma_copy(dst=at[0:128, k, 0:1280], src=a[k * 128:(k + 1) * 128, 0:1280])
        nisa.dma_copy(dst=bt[0:128, k, 0:512], src=b[k * 128:(k + 1) * 128, 0:512])
    accs = []
    for m in range(10):
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            nisa.nc_matmul(dst=acc, stationary=at[0:128, k, m * 128:(m + 1) * 128], moving=bt[0:128, k, 0:512])
        accs.append(acc)
    s = nl.copy(accs[0])
    for m in range(1, 10):
        s = nl.add(s, accs[m])
    for m in range(10):
        s = nl.add(s, accs[m])
    nl.store(out, value=s)
    return out
"#;

#[test]
fn psum_tiles_live_together_are_still_an_overflow() {
    let dir = std::env::temp_dir().join(format!("nkc-psum-overlap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("psum_tiles_overlap.nk");
    std::fs::write(&file, PSUM_TILES_OVERLAP).expect("the kernel is written");
    let file = file.to_str().expect("a UTF-8 path");
    for path in ["none", "default", "emergent"] {
        let o = nkc(&["run", file, "--pipeline", path]);
        assert!(!o.status.success());
        let err = stderr(&o);
        assert!(
            err.contains("E0502") && err.contains("10 banks at once"),
            "{path}: {err}"
        );
    }
}
