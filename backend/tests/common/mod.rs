//! Shared by the schedule filetests (`schedules.rs`, Penguin IR in; `bir_schedules.rs`, BIR in):
//! the schedule rendering they compare, and the file loop with its `# schedule:` expectations
//! and `NKC_BLESS=1` rewriting.

#![allow(dead_code)]

use backend::bir::{BNode, Bir};
use backend::bir_verify::verify_after;
use backend::modulo::{inst_label, schedule_loops};
use backend::{ldg, queues, schedule};
use penguin::Function;
use petgraph::visit::EdgeRef;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const MARKER: &str = "# schedule:";

/// Runs the list scheduler, the queue plan, the dependence graph and the modulo scheduler on
/// `bir` (verifying BIR after each pass) and renders, per scheduled loop: ResMII and its
/// resource, RecMII and its cycle, the II, the predicted period, whether the body was reordered,
/// every dependence edge (kind, distance, latency) and the emitted body order.
pub fn render_schedules(func: &Function, mut bir: Bir) -> String {
    let check = |bir: &Bir, pass: &str| {
        if let Err(e) = verify_after(func, bir, pass) {
            panic!("{e}");
        }
    };
    check(&bir, "reading");
    schedule::schedule_bodies(&mut bir);
    check(&bir, "the list scheduler");
    let plan = queues::compute_queue_plan(func, &bir);
    let before = bir.clone();
    let schedules = schedule_loops(func, &mut bir, &plan);
    check(&bir, "the modulo scheduler");
    let mut out = String::new();
    for s in &schedules {
        let lp = &bir.loops[s.lp];
        let _ = writeln!(
            out,
            "loop {} trip {}: ResMII {} ({}), RecMII {}, II {}, predicted {} (before {}), {}",
            lp.iv,
            lp.trip,
            s.res_mii,
            s.res_resource,
            s.rec_mii,
            s.ii,
            s.predicted,
            s.predicted_before,
            if s.kept_order {
                "order kept"
            } else {
                "reordered"
            }
        );
        if !s.rec_cycle.is_empty() {
            let _ = writeln!(out, "  recurrence: {}", s.rec_cycle);
        }
        if s.predicted_above_mii() {
            let _ = writeln!(out, "  period set by: {}", s.period_cycle(func, &before));
        }
        let deps = ldg::compute_loop_deps(func, &before, &plan, s.lp)
            .expect("a scheduled loop has a flat body");
        for e in deps.graph.edge_references() {
            let (p, c) = (
                deps.insts[e.source().index()],
                deps.insts[e.target().index()],
            );
            let _ = writeln!(
                out,
                "  dep {} -> {}: {}",
                inst_label(func, &before, p),
                inst_label(func, &before, c),
                e.weight()
            );
        }
        let order: Vec<String> = lp
            .body
            .iter()
            .map(|n| match *n {
                BNode::Inst(i) => {
                    let sigma = s.insts.iter().find(|x| x.0 == i).map_or(0, |x| x.2);
                    format!("{}@{sigma}", inst_label(func, &bir, i))
                }
                BNode::Loop(l) => format!("loop {}", bir.loops[l].iv),
            })
            .collect();
        let _ = writeln!(out, "  order: {}", order.join(", "));
    }
    if schedules.is_empty() {
        out.push_str("no loop scheduled\n");
    }
    out
}

/// The files of `dir` with extension `ext`, sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort();
    files
}

/// Compares `render(input)` with each file's `# schedule:` section (after the input); with
/// `NKC_BLESS` set, rewrites the section instead. Returns how many files ran.
pub fn run_schedule_filetests(dir: &Path, ext: &str, render: impl Fn(&str) -> String) -> usize {
    let bless = std::env::var_os("NKC_BLESS").is_some();
    let files = files(dir, ext);
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable filetest");
        let (input, expected) = match text.find(MARKER) {
            Some(at) => (&text[..at], &text[at + MARKER.len()..]),
            None => (text.as_str(), ""),
        };
        let got = render(input);
        let want: String = expected
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .map(|l| format!("{l}\n"))
            .collect();
        if got != want {
            if bless {
                std::fs::write(path, with_expectation(input, &got)).expect("writable filetest");
            } else {
                failures.push(format!(
                    "{}:\n--- want\n{want}--- got\n{got}",
                    path.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    files.len()
}

/// `input` followed by the `# schedule:` section holding `rendered`.
pub fn with_expectation(input: &str, rendered: &str) -> String {
    let mut new = input.trim_end().to_string();
    new.push_str("\n\n");
    new.push_str(MARKER);
    new.push('\n');
    for l in rendered.lines() {
        new.push_str("# ");
        new.push_str(l);
        new.push('\n');
    }
    new
}
