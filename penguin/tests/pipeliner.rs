//! The pipeliner's steps on IR written in the text form (no source spans): the extended loop's
//! exact shape, the guards it drops, the skipped loops, and the buffer decisions.

use penguin::pipeline::buffers::{compute_buffer_counts, BufferCount, SkipReason};
use penguin::pipeline::context::{compute_schedule_context, Mode};
use penguin::pipeline::targets::find_targets;
use penguin::pipeline::{pipeline_function, PipelineOptions};
use penguin::{parse_function, write_function};

const THREE_STAGES: &str = "\
kernel k(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor t: sbuf f32[32, 64] local
  tensor u: sbuf f32[32, 64] local
  loop i in 0..8 affine num_stages=3 {
    stmt {
      t[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt {
      u[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) t[0 +: 32, 0 +: 64]
    }
    stmt {
      c[32*i +: 32, 0 +: 64] = store.dma u[0 +: 32, 0 +: 64]
    }
  }
}
";

#[test]
fn the_extended_loop_has_guards_shifts_and_slots() {
    let mut f = parse_function(THREE_STAGES).unwrap();
    let out = pipeline_function(&mut f, &PipelineOptions::default()).unwrap();
    assert_eq!(out.plans.len(), 1);
    assert_eq!(out.plans[0].stages, vec![0, 1, 2]);
    let want = "\
kernel k(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor t: sbuf f32[32, 64] local block[i: 2]
  tensor u: sbuf f32[32, 64] local block[i: 2]
  loop i in 0..10 affine num_stages=3 pipelined(stages=3, trip=8) {
    stmt stage=0 if i < 8 {
      t{i}[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage=1 if i >= 1 && i < 9 {
      u{i - 1}[0 +: 32, 0 +: 64] = activation.act(func=exp, scale=1.0, bias=false) t{i - 1}[0 +: 32, 0 +: 64]
    }
    stmt stage=2 if i >= 2 {
      c[32*i - 64 +: 32, 0 +: 64] = store.dma u{i - 2}[0 +: 32, 0 +: 64]
    }
  }
}
";
    assert_eq!(write_function(&f), want);
}

#[test]
fn a_pipelined_loop_is_not_pipelined_again() {
    let mut f = parse_function(THREE_STAGES).unwrap();
    pipeline_function(&mut f, &PipelineOptions::default()).unwrap();
    let once = write_function(&f);
    let again = pipeline_function(&mut f, &PipelineOptions::default()).unwrap();
    assert!(again.plans.is_empty());
    assert!(again.log.contains("already pipelined"), "{}", again.log);
    assert_eq!(write_function(&f), once);
}

#[test]
fn one_stage_is_no_pipelining() {
    let text = THREE_STAGES.replace("num_stages=3", "num_stages=1");
    let f = parse_function(&text).unwrap();
    let t = find_targets(&f);
    assert!(t.targets.is_empty());
    assert_eq!(t.skipped.len(), 1);
    assert!(t.skipped[0].1.contains("num_stages=1"), "{:?}", t.skipped);
}

#[test]
fn mode_b_groups_and_buffer_reasons() {
    let text = "\
kernel k(a) -> (c) {
  tensor a: hbm f32[256, 64] input
  tensor c: hbm f32[256, 64] output
  tensor acc: sbuf f32[32, 64] local
  tensor t: sbuf f32[32, 64] local
  tensor dead: sbuf f32[32, 64] local
  stmt {
    acc[0 +: 32, 0 +: 64] = memset.dve(value=0.0)
  }
  loop i in 0..4 sequential {
    stmt stage_id=0 execution_order=1 {
      t[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=0 execution_order=2 {
      dead[0 +: 32, 0 +: 64] = load.dma a[32*i +: 32, 0 +: 64]
    }
    stmt stage_id=1 execution_order=0 {
      acc[0 +: 32, 0 +: 64] = tensor_tensor.dve(op=add) acc[0 +: 32, 0 +: 64], t[0 +: 32, 0 +: 64]
    }
  }
  stmt {
    c[0 +: 32, 0 +: 64] = store.dma acc[0 +: 32, 0 +: 64]
  }
}
";
    let f = parse_function(text).unwrap();
    let axis = find_targets(&f).targets[0];
    let ctx = compute_schedule_context(&f, axis).unwrap();
    assert_eq!(ctx.mode, Mode::StageIds);
    assert_eq!(ctx.num_stages, 2);
    assert_eq!(ctx.stages, vec![0, 0, 1]);
    assert_eq!(ctx.order, vec![2, 0, 1]);
    let counts = compute_buffer_counts(&f, axis, &ctx.stages);
    let by_name = |n: &str| {
        counts
            .iter()
            .find(|(t, _)| f.tensors[*t].name == n)
            .map(|(_, c)| c.clone())
            .unwrap()
    };
    assert_eq!(by_name("a"), BufferCount::Skipped(SkipReason::Input));
    assert_eq!(by_name("acc"), BufferCount::Skipped(SkipReason::Carried));
    assert_eq!(by_name("dead"), BufferCount::Skipped(SkipReason::NoUse));
    assert_eq!(
        by_name("t"),
        BufferCount::Counted {
            def_min: 0,
            use_max: 1,
            count: 2
        }
    );
}
