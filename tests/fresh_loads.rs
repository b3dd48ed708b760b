//! Loads on fresh SBUF bytes (`backend::codegen::alloc`): a tile loaded after another tile's last
//! use gets bytes no earlier buffer held while the SBUF has room, so `sp` issues its load without
//! waiting for any compute (a shared buffer's load waited for the last reader of its bytes, and
//! held every transfer behind it). Read from the simulator's timeline; every run is checked
//! against the interpreter bit for bit.

mod common;
use common::{nkc, scratch, stderr};

const FILE: &str = "tests/good/fresh_loads.nk";

/// `sp`'s timeline of `kernel` on `path` (checked, no races): each slice's name (`dma qN: STMT`
/// for an issue, `wait SEM` for a wait), in time order.
fn sp_slices(kernel: &str, path: &str) -> Vec<String> {
    let dir = scratch("fresh_loads", kernel);
    let trace = dir.join("t.json");
    let t = trace.to_str().expect("UTF-8 temporary path");
    let o = nkc(&[
        "run",
        FILE,
        "--kernel",
        kernel,
        "--pipeline",
        path,
        "--check",
        "--trace",
        t,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no races"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("the trace is written"))
            .expect("the trace is JSON");
    let events = v["traceEvents"].as_array().expect("trace events");
    let sp = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "sp")
        .map(|e| e["tid"].clone())
        .expect("an sp track");
    let mut slices: Vec<(f64, String)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == sp)
        .map(|e| {
            let ts = e["ts"].as_f64().expect("a start");
            (ts, e["name"].as_str().expect("a name").to_string())
        })
        .collect();
    slices.sort_by(|a, b| a.0.total_cmp(&b.0));
    slices.into_iter().map(|(_, n)| n).collect()
}

#[test]
fn a_load_after_a_tiles_last_use_waits_for_no_compute() {
    for (kernel, load) in [
        ("load_after_fill", "nl.load(w)"),
        ("sums_then_scale", "nl.load(z[:, k * 256:(k + 1) * 256])"),
    ] {
        for path in ["none", "default"] {
            let sp = sp_slices(kernel, path);
            let first = sp
                .iter()
                .position(|n| n.starts_with("dma ") && n.ends_with(load))
                .unwrap_or_else(|| panic!("{kernel} {path}: no issue of {load}: {sp:?}"));
            // A wait on `sp` is the slice right before the instruction that waits.
            assert!(
                first == 0 || !sp[first - 1].starts_with("wait"),
                "{kernel} {path}: {} before {load}",
                sp[first - 1]
            );
        }
    }
}
