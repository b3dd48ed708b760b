//! The timeline in Chrome trace-event JSON, which Perfetto and `chrome://tracing` open.
//!
//! One process (the core); one thread track per engine (`tid` 0..5 in engine order) and per DMA
//! queue (`tid` 5 + q), each named by a metadata event. Every slice is a complete event (`ph`
//! `"X"`) with `ts` and `dur` in microseconds at 1.4 GHz; its `args` hold the instruction's text,
//! the cycles, the loop registers, and the source statement and stage when the program names
//! them. Slices on one track never overlap: an engine runs one instruction at a time and a queue
//! moves one transfer at a time.

use crate::isa::{Engine, Meta};
use crate::machine::{CYCLES_PER_US, DMA_QUEUES};
use std::fmt::Write;

/// A timeline track.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Track {
    Engine(Engine),
    Queue(u8),
}

impl Track {
    pub fn tid(self) -> usize {
        match self {
            Track::Engine(e) => e.index(),
            Track::Queue(q) => 5 + q as usize,
        }
    }

    pub fn name(self) -> String {
        match self {
            Track::Engine(e) => e.name().to_string(),
            Track::Queue(q) => format!("dma q{q}"),
        }
    }
}

/// One slice of the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub track: Track,
    pub name: String,
    pub start: u64,
    pub end: u64,
    /// The instruction's text.
    pub inst: String,
    pub meta: Meta,
    pub iters: Vec<(u8, i64)>,
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The trace-event JSON of a timeline.
pub fn to_chrome_json(slices: &[Slice]) -> String {
    let mut o = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let _ = write!(
        o,
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":\"NeuronCore (nkc sim)\"}}}}"
    );
    let tracks = Engine::ALL
        .iter()
        .map(|&e| Track::Engine(e))
        .chain((0..DMA_QUEUES as u8).map(Track::Queue));
    for t in tracks {
        let _ = write!(
            o,
            ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":{}}}}}",
            t.tid(),
            esc(&t.name())
        );
        let _ = write!(
            o,
            ",\n{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
            t.tid(),
            t.tid()
        );
    }
    for s in slices {
        let mut name = s.name.clone();
        if let Some(st) = &s.meta.stmt {
            let _ = write!(name, ": {st}");
        }
        if let Some(stage) = s.meta.stage {
            let _ = write!(name, " [stage {stage}]");
        }
        let _ = write!(
            o,
            ",\n{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"inst\":{},\"start_cycle\":{},\"end_cycle\":{}",
            esc(&name),
            esc(&s.track.name()),
            s.track.tid(),
            s.start as f64 / CYCLES_PER_US,
            (s.end - s.start) as f64 / CYCLES_PER_US,
            esc(&s.inst),
            s.start,
            s.end
        );
        if let Some(l) = s.meta.line {
            let _ = write!(o, ",\"line\":{l}");
        }
        if let Some(st) = s.meta.stage {
            let _ = write!(o, ",\"stage\":{st}");
        }
        if let Some(st) = &s.meta.stmt {
            let _ = write!(o, ",\"stmt\":{}", esc(st));
        }
        for (r, v) in &s.iters {
            let _ = write!(o, ",\"r{r}\":{v}");
        }
        o.push_str("}}");
    }
    o.push_str("\n]}\n");
    o
}
