//! `num_stages="auto"` (`backend::transform::emergent::choose_auto_stages`): on every example annotated with
//! `num_stages=K`, the same kernel with `num_stages="auto"` runs on the simulator bit for bit
//! like the kernel as written, with no races; the chosen stages (or why none) are logged; where
//! the user's own stages leave a cross-engine hand-off inside one stage, `auto` runs faster; and
//! `--pipeline auto` is within 5% of `emergent` on every example.

mod common;

use common::{run_checked_json, scratch_kernel};

/// Runs `text` on the default path with `--check --json --log pipeliner`; returns the cycles and
/// the pipeliner's log.
fn run_json(tag: &str, text: &str) -> (u64, String) {
    run_json_on(tag, text, &[])
}

/// [`run_json`] with more options (`--pipeline annotated`).
fn run_json_on(tag: &str, text: &str, extra: &[&str]) -> (u64, String) {
    let file = scratch_kernel("auto_stages", tag, text);
    let mut args = vec!["--log", "pipeliner"];
    args.extend_from_slice(extra);
    let (v, log) = run_checked_json(&file, &args);
    (v["cycles"].as_u64().expect("cycles"), log)
}

/// The examples written with `num_stages=K`, and their text with `num_stages="auto"` instead.
fn mode_a_examples() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for path in common::nk_files("examples") {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("num_stages=") {
            continue;
        }
        let mut auto = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("num_stages=") {
            let digits = rest[at + 11..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            auto.push_str(&rest[..at]);
            auto.push_str("num_stages=\"auto\"");
            rest = &rest[at + 11 + digits..];
        }
        auto.push_str(rest);
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        out.push((name, text, auto));
    }
    out
}

#[test]
fn every_mode_a_example_runs_bit_exact_with_auto_stages() {
    let examples = mode_a_examples();
    assert!(examples.len() >= 6, "{} examples", examples.len());
    for (name, _, auto) in &examples {
        let (_, log) = run_json(name, auto);
        assert!(
            log.contains("pipeliner: auto: loop"),
            "{name}: the chooser logged nothing:\n{log}"
        );
        // Stages chosen and applied by the pipeliner, or the loop declined (bound by DMA
        // latency) and left to the backend.
        let staged = log.contains("stages by engine hand-offs")
            && log.contains("applied software pipelining");
        assert!(
            staged || log.contains("left un-annotated"),
            "{name}: neither staged nor declined:\n{log}"
        );
    }
}

#[test]
fn auto_stages_beat_a_stage_that_holds_a_hand_off() {
    // softmax_stages and attention_stages keep an engine hand-off inside one of the user's
    // stages; rmsnorm_stages puts its square and its sum in one. `auto` splits each hand-off.
    // The user's stages as written are the `annotated` path's: on `default` the backend may
    // also retime a late store of them (the `retime` pass), which is not a choice of stages.
    let examples = mode_a_examples();
    for want in ["softmax_stages", "attention_stages", "rmsnorm_stages"] {
        let (_, user, auto) = examples
            .iter()
            .find(|(n, _, _)| n == want)
            .unwrap_or_else(|| panic!("no example {want}"));
        let (user_cycles, _) =
            run_json_on(&format!("{want}_user"), user, &["--pipeline", "annotated"]);
        let (auto_cycles, _) = run_json(&format!("{want}_auto"), auto);
        assert!(
            auto_cycles < user_cycles,
            "{want}: auto {auto_cycles} cycles, the user's stages {user_cycles}"
        );
    }
}

/// The cycles of `examples/NAME.nk` on `path`, checked bit for bit and free of races.
fn example_cycles(name: &str, path: &str) -> u64 {
    let (v, _) = run_checked_json(&format!("examples/{name}.nk"), &["--pipeline", path]);
    v["cycles"].as_u64().expect("cycles")
}

#[test]
fn the_auto_path_is_within_five_percent_of_emergent_on_every_example() {
    let files = common::nk_files("examples");
    assert!(files.len() >= 20, "{} examples", files.len());
    let mut slow = Vec::new();
    for path in files {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let auto = example_cycles(&name, "auto");
        let emergent = example_cycles(&name, "emergent");
        if auto as f64 > 1.05 * emergent as f64 {
            slow.push(format!("{name}: auto {auto}, emergent {emergent}"));
        }
    }
    assert!(slow.is_empty(), "{slow:#?}");
}
