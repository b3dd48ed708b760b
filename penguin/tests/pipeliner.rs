//! The pipeliner's steps on IR written in the text form (no source spans): the skipped loops and
//! the buffer decisions. The extended loop's exact shape, and a loop not pipelined twice, are
//! filetests (`filetests/passes/pipeline_three_stages.pir`, `pipeline_not_again.pir`).

use penguin::parse_function;
use penguin::pipeline::buffers::{compute_buffer_counts, BufferCount, SkipReason};
use penguin::pipeline::context::{compute_schedule_context, Mode};
use penguin::pipeline::targets::find_targets;

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
