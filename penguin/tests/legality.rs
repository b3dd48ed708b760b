//! The ISL legality check of pipeline plans (`penguin::pipeline::compute_violations`): hand-built
//! original functions and plans, each with its exact verdict.

use penguin::pipeline::{
    compute_violations, compute_violations_with, DepKind, LegalityError, LegalityOptions,
    LegalityReport, PipelinePlan, Violation,
};
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

/// Runs the check with and without the fast path; both must find the same violations.
fn check(f: &Function, p: &PipelinePlan) -> LegalityReport {
    let fast = compute_violations(f, p).unwrap_or_else(|e| panic!("check failed: {e}"));
    let all = compute_violations_with(f, p, &LegalityOptions { prefilter: false })
        .unwrap_or_else(|e| panic!("check without the fast path failed: {e}"));
    assert_eq!(
        fast.violations, all.violations,
        "the fast path changed the verdict"
    );
    assert_eq!(all.tensors_preserved, 0);
    fast
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
    // Each ring spans two stages and has two slots: the stage-order fast path proves both.
    assert_eq!((r.tensors_checked, r.tensors_preserved), (0, 3));
    let all = compute_violations_with(&f, &p, &LegalityOptions { prefilter: false }).unwrap();
    assert_eq!((all.flow, all.anti, all.output), (2, 2, 2));
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

#[test]
fn two_stages_with_a_widened_tile_are_legal() {
    let f = parse(EXP3);
    let p = plan(&f, "i", &[0, 0, 1], &[0, 1, 2], &[("tb", 2)]);
    let r = check(&f, &p);
    assert_eq!(r.violations, vec![]);
    // ta lives in stage 0 only; tb crosses one stage with two slots: the fast path proves both.
    assert_eq!((r.tensors_checked, r.tensors_preserved), (0, 3));
}

#[test]
fn two_stages_without_the_buffer_break_an_anti_dependence() {
    let f = parse(EXP3);
    let p = plan(&f, "i", &[0, 0, 1], &[0, 1, 2], &[]);
    let r = check(&f, &p);
    let ins = insts(&f);
    // The store of iteration 0 runs in iteration 1 of the extended loop, after the exponential
    // of iteration 1 overwrote tb.
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Anti,
            tensor: tensor(&f, "tb"),
            source: ins[2],
            sink: ins[1],
            source_iter: iters(&f, &[("i", 0)]),
            sink_iter: iters(&f, &[("i", 1)]),
        }]
    );
}

#[test]
fn consumers_first_needs_no_buffer() {
    // Running the store, then the exponential, then the load in each iteration reads every tile
    // before the next iteration's producer overwrites it.
    let f = parse(EXP3);
    let p = plan(&f, "i", &[0, 1, 2], &[2, 1, 0], &[]);
    assert_eq!(check(&f, &p).violations, vec![]);
}

#[test]
fn a_reorder_inside_a_stage_breaks_a_flow_dependence() {
    let f = parse(EXP3);
    // The exponential runs before the load of its own iteration, in the same stage.
    let p = plan(&f, "i", &[0, 0, 1], &[1, 0, 2], &[("tb", 2)]);
    let r = check(&f, &p);
    let ins = insts(&f);
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Flow,
            tensor: tensor(&f, "ta"),
            source: ins[0],
            sink: ins[1],
            source_iter: iters(&f, &[("i", 0)]),
            sink_iter: iters(&f, &[("i", 0)]),
        }]
    );
}

/// A running sum in an SBUF buffer made before the loop: `acc += a[i]`, and (in `ACC_PREFIX`)
/// the running value stored every iteration.
const ACC_SUM: &str = "
kernel sum(a) -> (o) {
  tensor a: hbm f32[1024, 512] input
  tensor o: hbm f32[128, 512] output
  tensor acc: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local
  stmt {
    acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
  }
  loop i in 0..8 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      acc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) acc[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    }
  }
  stmt {
    o[0 +: 128, 0 +: 512] = store.dma acc[0 +: 128, 0 +: 512]
  }
}";

const ACC_PREFIX: &str = "
kernel prefix(a) -> (o) {
  tensor a: hbm f32[1024, 512] input
  tensor o: hbm f32[1024, 512] output
  tensor acc: sbuf f32[128, 512] local
  tensor t: sbuf f32[128, 512] local
  stmt {
    acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
  }
  loop i in 0..8 affine {
    stmt {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      acc[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=add) acc[0 +: 128, 0 +: 512], t[0 +: 128, 0 +: 512]
    }
    stmt {
      o[128*i +: 128, 0 +: 512] = store.dma acc[0 +: 128, 0 +: 512]
    }
  }
}";

#[test]
fn a_carried_accumulator_read_and_written_in_one_stage_is_legal() {
    let f = parse(ACC_SUM);
    let p = plan(&f, "i", &[0, 1], &[0, 1], &[("t", 2)]);
    let r = check(&f, &p);
    assert_eq!(r.violations, vec![]);
    // The fast path proves acc (one statement) and t (two slots over two stages).
    assert_eq!((r.tensors_checked, r.tensors_preserved), (0, 2));
    // Checked by ISL, acc adds a flow, an anti and an output dependence of the update on itself
    // across iterations to t's load-to-add flow, add-to-next-load anti and load-to-load output.
    let all = compute_violations_with(&f, &p, &LegalityOptions { prefilter: false }).unwrap();
    assert_eq!((all.flow, all.anti, all.output), (2, 2, 2));
}

#[test]
fn a_carried_accumulator_updated_in_stage_0_and_read_in_stage_1_is_illegal() {
    let f = parse(ACC_PREFIX);
    let p = plan(&f, "i", &[0, 0, 1], &[0, 1, 2], &[]);
    let r = check(&f, &p);
    let ins = insts(&f);
    // ins[0] is the memset before the loop; the store of iteration 0 runs after the update of
    // iteration 1.
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Anti,
            tensor: tensor(&f, "acc"),
            source: ins[3],
            sink: ins[2],
            source_iter: iters(&f, &[("i", 0)]),
            sink_iter: iters(&f, &[("i", 1)]),
        }]
    );
}

#[test]
fn two_writes_to_a_carried_buffer_in_different_stages_are_an_output_violation() {
    let f = parse(
        "
kernel last(a) -> (o) {
  tensor a: hbm f32[1024, 512] input
  tensor o: hbm f32[128, 512] output
  tensor buf: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      buf[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      buf[0 +: 128, 0 +: 512] = memset.dve(value=1.0)
    }
  }
  stmt {
    o[0 +: 128, 0 +: 512] = store.dma buf[0 +: 128, 0 +: 512]
  }
}",
    );
    let ins = insts(&f);
    // In one stage, in program order: legal.
    assert_eq!(
        check(&f, &plan(&f, "i", &[0, 0], &[0, 1], &[])).violations,
        vec![]
    );
    // The memset of iteration i runs after the load of iteration i + 1.
    let r = check(&f, &plan(&f, "i", &[0, 1], &[0, 1], &[]));
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Output,
            tensor: tensor(&f, "buf"),
            source: ins[1],
            sink: ins[0],
            source_iter: iters(&f, &[("i", 0)]),
            sink_iter: iters(&f, &[("i", 1)]),
        }]
    );
    // The same reordered inside one stage: the memset of iteration i now runs before the load.
    let r = check(&f, &plan(&f, "i", &[0, 0], &[1, 0], &[]));
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Output,
            tensor: tensor(&f, "buf"),
            source: ins[0],
            sink: ins[1],
            source_iter: iters(&f, &[("i", 0)]),
            sink_iter: iters(&f, &[("i", 0)]),
        }]
    );
}

/// The tiled matmul of `examples/matmul.nk` (with 4 column blocks), as the front end lowers it.
const MATMUL: &str = "
kernel matmul(at, b) -> (c) {
  tensor at: hbm f32[512, 512] input
  tensor b: hbm f32[512, 2048] input
  tensor c: hbm f32[512, 2048] output
  tensor acc: psum f32[128, 512] local
  tensor lhs: sbuf f32[128, 128] local
  tensor rhs: sbuf f32[128, 512] local
  tensor res: sbuf f32[128, 512] local
  loop m in 0..4 affine {
    loop n in 0..4 affine num_stages=3 {
      stmt {
        acc[0 +: 128, 0 +: 512] = memset.dve(value=0.0)
      }
      loop k in 0..4 affine {
        stmt {
          lhs[0 +: 128, 0 +: 128] = load.dma at[128*k +: 128, 128*m +: 128]
        }
        stmt {
          rhs[0 +: 128, 0 +: 512] = load.dma b[128*k +: 128, 512*n +: 512]
        }
        stmt {
          acc[0 +: 128, 0 +: 512] = matmul.pe(accumulate=true) lhs[0 +: 128, 0 +: 128], rhs[0 +: 128, 0 +: 512]
        }
      }
      stmt {
        res[0 +: 128, 0 +: 512] = copy.any acc[0 +: 128, 0 +: 512]
      }
      stmt {
        c[128*m +: 128, 512*n +: 512] = store.dma res[0 +: 128, 0 +: 512]
      }
    }
  }
}";

#[test]
fn a_nested_k_loop_with_a_psum_ring_of_depth_2_is_legal() {
    let f = parse(MATMUL);
    // Mode A, 3 stages over 4 children: [memset, k loop], [copy], [store].
    let p = plan(
        &f,
        "n",
        &[0, 0, 1, 2],
        &[0, 1, 2, 3],
        &[("acc", 2), ("res", 2)],
    );
    let r = check(&f, &p);
    assert_eq!(r.violations, vec![]);
    // Stage 0 alone touches lhs and rhs; acc and res cross one stage each, with two slots.
    assert_eq!((r.tensors_checked, r.tensors_preserved), (0, 5));
}

#[test]
fn a_nested_k_loop_with_a_psum_ring_of_depth_1_is_illegal() {
    let f = parse(MATMUL);
    let p = plan(&f, "n", &[0, 0, 1, 2], &[0, 1, 2, 3], &[("res", 2)]);
    let r = check(&f, &p);
    let ins = insts(&f);
    // ins: memset, lhs load, rhs load, matmul, copy, store. The copy of column block 0 runs
    // after the memset of block 1 cleared the accumulator.
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Anti,
            tensor: tensor(&f, "acc"),
            source: ins[4],
            sink: ins[0],
            source_iter: iters(&f, &[("m", 0), ("n", 0)]),
            sink_iter: iters(&f, &[("m", 0), ("n", 1)]),
        }]
    );
}

#[test]
fn a_violation_inside_the_k_loop_names_its_iterations() {
    let f = parse(MATMUL);
    // The matmul's loop runs before the memset in one stage: the first accumulation of each
    // column block reads the accumulator before the memset clears it.
    let mut p = plan(
        &f,
        "n",
        &[0, 0, 1, 2],
        &[1, 0, 2, 3],
        &[("acc", 2), ("res", 2)],
    );
    p.num_stages = 3;
    let r = check(&f, &p);
    let ins = insts(&f);
    // Every matmul of block n is after the memset of block n (flow and output), so the first
    // pair is the memset and the first matmul (k = 0).
    let memset_first: Vec<&Violation> =
        r.violations.iter().filter(|v| v.source == ins[0]).collect();
    assert!(!memset_first.is_empty(), "{r:?}");
    for v in &memset_first {
        assert_eq!(v.tensor, tensor(&f, "acc"));
        assert_eq!(v.sink, ins[3]);
        assert_eq!(v.source_iter, iters(&f, &[("m", 0), ("n", 0)]));
        assert_eq!(v.sink_iter, iters(&f, &[("m", 0), ("n", 0), ("k", 0)]));
    }
    let kinds: Vec<DepKind> = memset_first.iter().map(|v| v.kind).collect();
    assert_eq!(kinds, vec![DepKind::Flow, DepKind::Output]);
}

#[test]
fn fewer_iterations_than_stages() {
    let two = EXP3.replace("0..8", "0..2");
    let f = parse(&two);
    // Two iterations, three stages, tiles widened: legal.
    assert_eq!(
        check(
            &f,
            &plan(&f, "i", &[0, 1, 2], &[0, 1, 2], &[("ta", 2), ("tb", 2)])
        )
        .violations,
        vec![]
    );
    // Without buffers the second iteration's load still overwrites ta too early.
    let r = check(&f, &plan(&f, "i", &[0, 1, 2], &[0, 1, 2], &[]));
    assert_eq!(r.violations.len(), 2, "{r:?}");
    // One iteration: nothing to overlap, nothing to violate.
    let one = EXP3.replace("0..8", "0..1");
    let f = parse(&one);
    let r = check(&f, &plan(&f, "i", &[0, 1, 2], &[0, 1, 2], &[]));
    assert_eq!(r.violations, vec![]);
    // Four stages over two iterations (one child per stage is not needed: stage 3 is empty).
    let f = parse(&two);
    let mut p = plan(&f, "i", &[0, 1, 3], &[0, 1, 2], &[("ta", 2), ("tb", 3)]);
    p.num_stages = 4;
    assert_eq!(check(&f, &p).violations, vec![]);
}

#[test]
fn a_violation_whose_first_pair_is_not_at_iteration_0() {
    // Block 3 of an HBM scratch array is written in iteration 3 and read by every iteration:
    // iterations 0..3 read it before it is written (anti), the later ones after (flow).
    let f = parse(
        "
kernel late(a) -> (c) {
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor s: hbm f32[1024, 512] local
  tensor x: sbuf f32[128, 512] local
  tensor y: sbuf f32[128, 512] local
  loop i in 0..8 affine {
    stmt {
      x[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }
    stmt {
      s[128*i +: 128, 0 +: 512] = store.dma x[0 +: 128, 0 +: 512]
    }
    stmt {
      y[0 +: 128, 0 +: 512] = load.dma s[384 +: 128, 0 +: 512]
    }
    stmt {
      c[128*i +: 128, 0 +: 512] = store.dma y[0 +: 128, 0 +: 512]
    }
  }
}",
    );
    let ins = insts(&f);
    let r = check(&f, &plan(&f, "i", &[0, 0, 1, 1], &[0, 1, 2, 3], &[]));
    // The read of iteration 2 now runs in iteration 3 of the extended loop, after the write.
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Anti,
            tensor: tensor(&f, "s"),
            source: ins[2],
            sink: ins[1],
            source_iter: iters(&f, &[("i", 2)]),
            sink_iter: iters(&f, &[("i", 3)]),
        }]
    );
}

#[test]
fn a_plan_that_does_not_fit_the_loop_is_an_error() {
    let f = parse(EXP3);
    let mut p = plan(&f, "i", &[0, 1, 2], &[0, 1, 2], &[]);
    p.stages.pop();
    assert!(matches!(
        compute_violations(&f, &p),
        Err(LegalityError::Unsupported(_))
    ));
    let mut p = plan(&f, "i", &[0, 1, 2], &[0, 0, 2], &[]);
    p.num_stages = 3;
    assert!(matches!(
        compute_violations(&f, &p),
        Err(LegalityError::Unsupported(_))
    ));
}

#[test]
fn predicates_restrict_the_instances() {
    // The late-violation kernel with the read of block 3 guarded: iterations 0 and 1 only read
    // it, and both run (in the extended loop) before iteration 3 writes it.
    let text = |bound: i64| {
        format!(
            "
kernel guarded(a) -> (c) {{
  tensor a: hbm f32[1024, 512] input
  tensor c: hbm f32[1024, 512] output
  tensor s: hbm f32[1024, 512] local
  tensor x: sbuf f32[128, 512] local
  tensor y: sbuf f32[128, 512] local
  loop i in 0..8 affine {{
    stmt {{
      x[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
    }}
    stmt {{
      s[128*i +: 128, 0 +: 512] = store.dma x[0 +: 128, 0 +: 512]
    }}
    stmt if i < {bound} {{
      y[0 +: 128, 0 +: 512] = load.dma s[384 +: 128, 0 +: 512]
    }}
  }}
}}"
        )
    };
    let f = parse(&text(2));
    let p = plan(&f, "i", &[0, 0, 1], &[0, 1, 2], &[]);
    assert_eq!(check(&f, &p).violations, vec![]);
    let f = parse(&text(3));
    let r = check(&f, &p);
    let ins = insts(&f);
    assert_eq!(
        r.violations,
        vec![Violation {
            kind: DepKind::Anti,
            tensor: tensor(&f, "s"),
            source: ins[2],
            sink: ins[1],
            source_iter: iters(&f, &[("i", 2)]),
            sink_iter: iters(&f, &[("i", 3)]),
        }]
    );
}

/// Each iteration writes its own column of `cols` in stage 0 and reads it back in stage 1, with
/// one buffer: no two iterations touch one element, but the fast path, which takes every write
/// pair as conflicting, cannot see that.
const COLUMNS: &str = "
kernel columns(a) -> (o) {
  tensor a: hbm f32[128, 8] input
  tensor o: hbm f32[128, 8] output
  tensor cols: sbuf f32[128, 8] local
  loop i in 0..8 affine {
    stmt {
      cols[0 +: 128, i +: 1] = load.dma a[0 +: 128, i +: 1]
    }
    stmt {
      o[0 +: 128, i +: 1] = store.dma cols[0 +: 128, i +: 1]
    }
  }
}";

#[test]
fn disjoint_columns_the_fast_path_cannot_prove_go_to_isl_and_are_legal() {
    let f = parse(COLUMNS);
    let p = plan(&f, "i", &[0, 1], &[0, 1], &[]);
    let r = check(&f, &p);
    assert_eq!(r.violations, vec![]);
    // `o` is written in stage 1 only; `cols` is proved element by element by ISL.
    assert_eq!((r.tensors_checked, r.tensors_preserved), (1, 1));
    assert_eq!((r.flow, r.anti, r.output), (1, 0, 0));
}
