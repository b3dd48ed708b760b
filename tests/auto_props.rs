//! The property test of `num_stages="auto"` (`backend::transform::emergent::choose_auto_stages`): on random
//! loop bodies (the random kernels of `tests/pipeline_props.rs`, their own schedules stripped),
//! every stage plan the chooser writes is accepted by the annotated pipeliner and its ISL
//! legality check, and the pipelined kernel interprets to the bits of the kernel as written.
//! The DMA-latency decline is off here: the random tiles (`[4, 8]`) are far too small to hide a
//! transfer, and the property is about the stage rule. `NKC_AUTO_CASES=N` changes the count.

use backend::transform::emergent::{
    choose_auto_stages_with, mark_auto_loops, AutoOptions, AutoRemark,
};
use penguin::pipeline::{pipeline_function, PipelineOptions};

#[path = "common/random_kernel.rs"]
mod random_kernel;
use random_kernel::{bits, random_kernel};

#[test]
fn every_auto_schedule_is_legal_and_keeps_the_bits() {
    let cases: u64 = std::env::var("NKC_AUTO_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let (mut staged, mut declined) = (0, 0);
    for seed in 0..cases {
        let text = random_kernel(seed);
        let mut func =
            frontend::compile(&text, None).unwrap_or_else(|e| panic!("seed {seed}: {e:?}\n{text}"));
        // The kernel as written, without its schedule.
        for axis in func.axes.values_mut() {
            axis.attrs = Default::default();
        }
        func.annots.clear();
        let original = func.clone();
        assert!(
            mark_auto_loops(&mut func) > 0,
            "seed {seed}: no loop\n{text}"
        );
        let opts = AutoOptions {
            decline_dma_bound: false,
        };
        let log = choose_auto_stages_with(&mut func, &opts);
        if !log.iter().any(|r| matches!(r, AutoRemark::Staged { .. })) {
            declined += 1;
            continue;
        }
        staged += 1;
        if let Err(errors) = pipeline_function(&mut func, &PipelineOptions::default()) {
            panic!(
                "seed {seed}: the pipeliner refuses the auto stages: {errors:#?}\n{log:#?}\n{text}"
            );
        }
        for input in [0, 1] {
            // The kernel as written must run: `None == None` would prove nothing.
            let want = bits(&original, input).unwrap_or_else(|| {
                panic!("seed {seed} (inputs {input}): the interpreter stops on the kernel as written\n{text}")
            });
            assert_eq!(
                Some(want),
                bits(&func, input),
                "seed {seed} (inputs {input}): the auto schedule changes the bits\n{log:#?}\n{text}"
            );
        }
    }
    println!("auto: {staged} random loops staged and bit-exact, {declined} declined");
    // Most random bodies hand values from one engine to another.
    assert!(staged * 2 > cases as usize, "{staged} of {cases} staged");
}
