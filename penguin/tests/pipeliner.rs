//! The pipeliner's steps on IR written in the text form (no source spans): the skipped loops, the
//! buffer decisions and the remarks of its log. The extended loop's exact shape, and a loop not
//! pipelined twice, are filetests (`filetests/passes/pipeline_three_stages.pir`,
//! `pipeline_not_again.pir`), as is the log's wording (`; log:` expectations).

use penguin::parse_function;
use penguin::pipeline::buffers::{compute_buffer_counts, BufferCount, SkipReason};
use penguin::pipeline::context::{compute_schedule_context, Mode};
use penguin::pipeline::targets::{find_targets, NotTarget};
use penguin::pipeline::{pipeline_function, PipelineOptions, PipelineRemark};
use std::fmt;

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
    assert_eq!(t.skipped[0].1, NotTarget::OneStage, "{:?}", t.skipped);
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

#[test]
fn the_log_records_each_decision_with_its_data() {
    let mut f = parse_function(THREE_STAGES).unwrap();
    let out = pipeline_function(&mut f, &PipelineOptions::default()).unwrap();
    let remarks = &out.log.remarks;
    let iv = || "i".to_string();
    assert_eq!(remarks[0], PipelineRemark::Target { iv: iv(), trip: 8 });
    assert!(remarks.contains(&PipelineRemark::StageCount {
        iv: iv(),
        num_stages: 3,
        mode: Mode::NumStages
    }));
    assert!(remarks.contains(&PipelineRemark::ProgramOrder { iv: iv() }));
    assert!(remarks
        .iter()
        .any(|r| matches!(r, PipelineRemark::Legality { violations: 0, .. })));
    let n = remarks.len();
    assert_eq!(
        remarks[n - 2..],
        [
            PipelineRemark::Extended {
                iv: iv(),
                lb: 0,
                ub: 10,
                was_ub: 8
            },
            PipelineRemark::Applied {
                iv: iv(),
                num_stages: 3
            }
        ]
    );
}

/// A remark of a step outside the pipeliner.
#[derive(Debug, PartialEq, Eq)]
struct Note(u32);

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "note {}", self.0)
    }
}

#[test]
fn a_foreign_remark_keeps_its_type_and_line() {
    let r = PipelineRemark::foreign(Note(3));
    assert_eq!(r.as_foreign::<Note>(), Some(&Note(3)));
    assert_eq!(r.as_foreign::<String>(), None);
    assert_eq!(r, PipelineRemark::foreign(Note(3)));
    assert_ne!(r, PipelineRemark::foreign(Note(4)));
    assert_ne!(r, PipelineRemark::foreign("note 3".to_string()));
    assert_eq!(r.to_string(), "note 3");
}
