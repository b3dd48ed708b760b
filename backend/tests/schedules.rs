//! Filetests of the loop dependence graph and the modulo scheduler: each
//! `tests/schedules/*.pir` file is Penguin IR (after the annotated pipeliner) followed by the
//! schedule it must get, as `#` comment lines after the marker `# schedule:`. The test lowers the
//! IR to BIR, runs the list scheduler, the queue plan, the dependence graph and the modulo
//! scheduler ([`backend::modulo::schedule_loops`]) and compares, per scheduled loop: ResMII and
//! its resource, RecMII and its cycle, the II, the predicted period, whether the body was
//! reordered, every dependence edge (kind, distance, latency) and the emitted body order.
//! `NKC_BLESS=1 cargo test -p backend --test schedules` rewrites the expectations (review the
//! diff).

use backend::bir::{lower_function, BNode};
use backend::modulo::{inst_label, schedule_loops};
use backend::{ldg, queues, schedule};
use petgraph::visit::EdgeRef;
use std::fmt::Write as _;
use std::path::Path;

const MARKER: &str = "# schedule:";

fn render(ir: &str) -> String {
    let func = penguin::parse_function(ir).expect("the filetest's IR parses");
    penguin::verify_function(&func).expect("the filetest IR verifies");
    let mut bir = lower_function(&func).expect("the filetest's IR lowers to BIR");
    schedule::schedule_bodies(&mut bir);
    let plan = queues::compute_queue_plan(&func, &bir);
    let before = bir.clone();
    let schedules = schedule_loops(&func, &mut bir, &plan);
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
        let deps = ldg::compute_loop_deps(&func, &before, &plan, s.lp)
            .expect("a scheduled loop has a flat body");
        for e in deps.graph.edge_references() {
            let (p, c) = (
                deps.insts[e.source().index()],
                deps.insts[e.target().index()],
            );
            let _ = writeln!(
                out,
                "  dep {} -> {}: {}",
                inst_label(&func, &before, p),
                inst_label(&func, &before, c),
                e.weight()
            );
        }
        let order: Vec<String> = lp
            .body
            .iter()
            .map(|n| match *n {
                BNode::Inst(i) => {
                    let sigma = s.insts.iter().find(|x| x.0 == i).map_or(0, |x| x.2);
                    format!("{}@{sigma}", inst_label(&func, &bir, i))
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

#[test]
fn schedules_match_their_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schedules");
    let bless = std::env::var_os("NKC_BLESS").is_some();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/schedules exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pir"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "at least 20 schedule filetests");
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable filetest");
        let (ir, expected) = match text.find(MARKER) {
            Some(at) => (&text[..at], &text[at + MARKER.len()..]),
            None => (text.as_str(), ""),
        };
        let got = render(ir);
        let want: String = expected
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .map(|l| format!("{l}\n"))
            .collect();
        if got != want {
            if bless {
                let mut new = ir.trim_end().to_string();
                new.push_str("\n\n");
                new.push_str(MARKER);
                new.push('\n');
                for l in got.lines() {
                    new.push_str("# ");
                    new.push_str(l);
                    new.push('\n');
                }
                std::fs::write(path, new).expect("writable filetest");
            } else {
                failures.push(format!(
                    "{}:\n--- want\n{want}--- got\n{got}",
                    path.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
