//! The trace is valid trace-event JSON with one track per engine and DMA queue.

use runtime_sim::sim::{self, trace, Options};
use runtime_sim::text;
use std::collections::BTreeMap;

#[test]
fn trace_has_one_track_per_engine_and_queue_and_counts_slices() {
    let path = format!("{}/tests/programs/add.s", env!("CARGO_MANIFEST_DIR"));
    let p = text::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let inputs = sim::random_inputs(&p, 3);
    let opts = Options {
        trace: true,
        ..Options::default()
    };
    let r = sim::simulate(&p, &inputs, &opts).unwrap();
    let json = trace::to_chrome_json(&r.trace);
    let v: serde_json::Value = serde_json::from_str(&json).expect("the trace is valid JSON");
    let events = v["traceEvents"]
        .as_array()
        .expect("traceEvents is an array");

    let mut names = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        names.insert(
            e["tid"].as_u64().unwrap(),
            e["args"]["name"].as_str().unwrap().to_string(),
        );
    }
    assert_eq!(names.len(), 5 + 16);
    assert_eq!(names[&0], "pe");
    assert_eq!(names[&4], "sp");
    assert_eq!(names[&(5 + 15)], "dma q15");

    let mut per_track: BTreeMap<String, usize> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let tid = e["tid"].as_u64().unwrap();
        *per_track.entry(names[&tid].clone()).or_default() += 1;
        assert!(e["ts"].as_f64().is_some() && e["dur"].as_f64().unwrap() >= 0.0);
        assert!(e["args"]["inst"].as_str().is_some());
    }
    // sp: three DMA issues and its wait for the add; each queue one transfer; dve: its two waits
    // for the loads and the add.
    let want: BTreeMap<String, usize> = [
        ("sp", 4),
        ("dma q0", 1),
        ("dma q1", 1),
        ("dma q2", 1),
        ("dve", 3),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(per_track, want);

    // Slices carry the source statement and the cycles.
    let add = events
        .iter()
        .find(|e| e["ph"] == "X" && e["name"].as_str().unwrap().starts_with("tensor_tensor"))
        .unwrap();
    assert_eq!(add["name"], "tensor_tensor: c = a_t + b_t");
    assert_eq!(add["args"]["stmt"], "c = a_t + b_t");
    assert_eq!(add["args"]["line"], 4);
    assert_eq!(add["args"]["start_cycle"], 15746);
    assert_eq!(add["args"]["end_cycle"], 15746 + 1084);
    // No two slices on one track overlap.
    let mut by_tid: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        by_tid.entry(e["tid"].as_u64().unwrap()).or_default().push((
            e["args"]["start_cycle"].as_u64().unwrap(),
            e["args"]["end_cycle"].as_u64().unwrap(),
        ));
    }
    for slices in by_tid.values_mut() {
        slices.sort();
        assert!(slices.windows(2).all(|w| w[0].1 <= w[1].0), "{slices:?}");
    }
}

#[test]
fn stages_appear_in_slice_names() {
    let path = format!("{}/tests/programs/loop.s", env!("CARGO_MANIFEST_DIR"));
    let p = text::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let opts = Options {
        trace: true,
        ..Options::default()
    };
    let r = sim::simulate(&p, &sim::random_inputs(&p, 1), &opts).unwrap();
    let v: serde_json::Value = serde_json::from_str(&trace::to_chrome_json(&r.trace)).unwrap();
    let staged = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "tensor_scalar [stage 1]")
        .count();
    assert_eq!(staged, 4);
}
