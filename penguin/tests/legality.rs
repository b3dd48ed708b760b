//! The ISL legality check of pipeline plans (`penguin::pipeline::compute_violations`): hand-built
//! original functions and plans, each with its exact verdict.

use penguin::pipeline::{compute_violations, DepKind, LegalityReport, PipelinePlan, Violation};
use penguin::*;

fn parse(text: &str) -> Function {
    let f = parse_function(text).unwrap_or_else(|e| panic!("bad test IR: {e:?}"));
    if let Err(errors) = verify_function(&f) {
        panic!("test IR does not verify: {errors:?}");
    }
    f
}

fn axis(f: &Function, iv: &str) -> Axis {
    f.axes
        .iter()
        .find(|(_, a)| a.iv_name == iv)
        .map(|(ax, _)| ax)
        .unwrap_or_else(|| panic!("no loop {iv}"))
}

fn tensor(f: &Function, name: &str) -> Tensor {
    f.tensors
        .iter()
        .find(|(_, t)| t.name == name)
        .map(|(t, _)| t)
        .unwrap_or_else(|| panic!("no tensor {name}"))
}

/// The instructions in program order.
fn insts(f: &Function) -> Vec<Inst> {
    let mut out = Vec::new();
    f.walk_stmts(|s, _| {
        if let StmtKind::Insts(v) = &f.stmts[s].kind {
            out.extend(v.iter().copied());
        }
    });
    out
}

fn plan(
    f: &Function,
    iv: &str,
    stages: &[u32],
    order: &[usize],
    buffers: &[(&str, u32)],
) -> PipelinePlan {
    PipelinePlan {
        axis: axis(f, iv),
        num_stages: stages.iter().max().map_or(1, |s| s + 1),
        stages: stages.to_vec(),
        order: order.to_vec(),
        buffers: buffers.iter().map(|&(t, n)| (tensor(f, t), n)).collect(),
    }
}

fn check(f: &Function, p: &PipelinePlan) -> LegalityReport {
    compute_violations(f, p).unwrap_or_else(|e| panic!("check failed: {e}"))
}

fn iters(f: &Function, pairs: &[(&str, i64)]) -> Vec<(Axis, i64)> {
    pairs.iter().map(|&(iv, v)| (axis(f, iv), v)).collect()
}

const EXP3: &str = "
kernel exp_stages(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor ta: sbuf f32[128, 512] local
  tensor tb: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      ta[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      tb[0 +: 128, 0 +: 512] = activation.act(func=exp, scale=1.0, bias=false) ta[0 +: 128, 0 +: 512]
    }
    stmt {
      c[128*i +: 128, 0 +: 512] = store.dma tb[0 +: 128, 0 +: 512]
    }
  }
}";

#[test]
fn three_stages_with_widened_tiles_are_legal() {
    let f = parse(EXP3);
    let p = plan(&f, "i", &[0, 1, 2], &[2, 1, 0], &[("ta", 2), ("tb", 2)]);
    let r = check(&f, &p);
    assert_eq!(r.violations, vec![]);
    assert_eq!((r.flow, r.anti, r.output), (2, 2, 2));
}

#[test]
fn a_tile_not_buffered_is_an_anti_violation() {
    let f = parse(EXP3);
    let p = plan(&f, "i", &[0, 1, 2], &[0, 1, 2], &[("tb", 2)]);
    let r = check(&f, &p);
    let ins = insts(&f);
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Anti,
            tensor: tensor(&f, "ta"),
            source: ins[1],
            sink: ins[0],
            source_iter: iters(&f, &[("i", 0)]),
            sink_iter: iters(&f, &[("i", 1)]),
        }]
    );
}
