//! The properties of three fuzz targets, shared by `fuzz/fuzz_targets/*` (coverage-guided, on
//! nightly) and their always-on counterparts in `tests/fuzz_stable.rs`. Each panics on a
//! finding and returns what it did, for the campaign's counts.
//!
//! - [`pir_run_check`]: a `.pir` text through `nkc run --check` in-process on every pipelining
//!   path: the outputs equal the interpreter's on the kernel as written, or the run fails with a
//!   user error (exit 1); an internal error (exit 101) or a panic is a finding.
//! - [`npy_header`]: arbitrary bytes as a `.npy` file: an array or an error of at most a few
//!   hundred bytes, within a fixed time per byte, never a panic.
//! - [`suggest_write`]: `nkc suggest` on a kernel, the suggestion written with
//!   `nkc::write_file::write_atomically` over a copy: the file then holds exactly the suggested
//!   text, which runs on the annotated path to the bits of the kernel as written.
#![allow(dead_code)]

use std::path::Path;

/// What a fuzz input did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Ran (and, for `.pir`, was checked) with exit 0.
    Ran,
    /// Refused with a user error (exit 1).
    Refused,
}

/// The `.pir` property; `max_cycles` bounds each run.
pub fn pir_run_check(text: &str, max_cycles: u64) -> Outcome {
    use nkc::driver::{Failure, Source};
    use nkc::run::{self, PipelineMode, RunOptions};
    let src = Source {
        path: std::path::PathBuf::from("fuzz.pir"),
        text: text.to_string(),
    };
    let mut outcome = Outcome::Refused;
    for mode in [
        PipelineMode::None,
        PipelineMode::Annotated,
        PipelineMode::Emergent,
        PipelineMode::Default,
    ] {
        let opts = RunOptions {
            pipeline: mode,
            check: true,
            max_cycles,
            ..RunOptions::default()
        };
        match run::run(&src, &opts, &mut penguin::pipeline::PipelineLog::default()) {
            Ok(r) => {
                assert!(r.checked, "--pipeline {}: not checked\n{text}", mode.name());
                outcome = Outcome::Ran;
            }
            Err(Failure::Internal(e)) => {
                panic!("--pipeline {}: internal error: {e}\n{text}", mode.name())
            }
            Err(_) => {}
        }
    }
    outcome
}

/// The `.npy` property, on a file written in `dir`.
pub fn npy_header(bytes: &[u8], dir: &Path) -> Outcome {
    let path = dir.join(format!("fuzz-{}.npy", std::process::id()));
    std::fs::write(&path, bytes).expect("the scratch directory is writable");
    // Linear time: a generous 1 ms per KiB, and 250 ms for any file. The bound catches a reader
    // that goes exponential (20 nested brackets once took > 20 s), not a busy machine: a read over
    // the bound is timed twice more and the fastest of the three counts, so a run that a loaded
    // CI machine paused does not fail the property.
    let allowed = std::time::Duration::from_millis(250 + bytes.len() as u64 / 1024);
    let timed = || {
        let started = std::time::Instant::now();
        let result = nkc::npy::read_npy(&path);
        (started.elapsed(), result)
    };
    let (mut fastest, result) = timed();
    for _ in 0..2 {
        if fastest < allowed {
            break;
        }
        fastest = fastest.min(timed().0);
    }
    assert!(
        fastest < allowed,
        "{fastest:?} to read {} bytes (fastest of three reads)",
        bytes.len()
    );
    match result {
        Ok(a) => {
            assert_eq!(a.data.len(), a.shape.iter().product::<usize>());
            Outcome::Ran
        }
        Err(e) => {
            let e = e.to_string();
            assert!(
                e.len() <= 400 + path.as_os_str().len(),
                "{} bytes of error",
                e.len()
            );
            Outcome::Refused
        }
    }
}

/// The `suggest --write` property on the kernel `text`, in `dir`.
pub fn suggest_write(text: &str, dir: &Path) -> Outcome {
    use nkc::driver::{Failure, Source};
    let path = dir.join("suggest.nk");
    std::fs::write(&path, text).expect("the scratch directory is writable");
    let src = Source {
        path: path.clone(),
        text: text.to_string(),
    };
    let opts = nkc::suggest::SuggestOptions {
        kernel: None,
        seed: 0,
        specialise: Default::default(),
        inputs: Vec::new(),
        max_cycles: 0,
    };
    let s = match nkc::suggest::suggest(&src, &opts) {
        Ok(s) => s,
        Err(Failure::Internal(e)) => panic!("suggest: internal error: {e}\n{text}"),
        Err(_) => return Outcome::Refused,
    };
    assert_eq!(s.original, text);
    nkc::write_file::write_atomically(&path, s.suggested.as_bytes())
        .expect("the scratch directory is writable");
    let written = std::fs::read_to_string(&path).expect("the file was just written");
    assert_eq!(
        written, s.suggested,
        "the file holds other than the suggestion"
    );
    let leftovers = std::fs::read_dir(dir)
        .expect("the scratch directory is readable")
        .count();
    assert_eq!(leftovers, 1, "a temporary file was left beside the kernel");
    // The suggestion runs on the annotated path to the bits of the kernel as written.
    let suggested = Source {
        path,
        text: written,
    };
    let run = nkc::run::RunOptions {
        pipeline: nkc::run::PipelineMode::Annotated,
        check: true,
        ..Default::default()
    };
    if let Err(e) = nkc::run::run(&suggested, &run, &mut Default::default()) {
        panic!(
            "the suggestion does not run bit-exact: {e:?}\n{}",
            s.suggested
        );
    }
    Outcome::Ran
}
