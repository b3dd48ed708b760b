//! The rendering the `schedule` filetests compare (`tests/filetests.rs`, on
//! `filetests/schedule/*.{pir,bir}`): the list scheduler, the queue plan, the loop dependence
//! graph and the modulo scheduler on BIR, rendered per scheduled loop.

#![allow(dead_code)]

use backend::codegen::bir::{BNode, Bir};
use backend::codegen::bir_verify::verify_after;
use backend::codegen::modulo::{inst_label, schedule_loops};
use backend::{codegen::ldg, codegen::queues, codegen::schedule};
use penguin::Function;
use petgraph::visit::EdgeRef;
use std::fmt::Write as _;

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
    schedule::schedule_bodies(func, &mut bir);
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
        if let Some(cycle) = s.summary(func, &before).period_cycle {
            let _ = writeln!(out, "  period set by: {cycle}");
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
