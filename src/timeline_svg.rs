//! The simulated timelines of `nkc compare --svg`, drawn as hand-written SVG.
//!
//! One panel per path, stacked, all on the same cycle scale so that a faster path is visibly
//! shorter. A panel has one lane per engine (always all five, busy or not) and one per DMA queue
//! that moved at least one transfer; every instruction is a rectangle coloured by its pipeline
//! stage (grey when it has none), semaphore waits a faint bar. Each panel carries an axis labelled
//! in cycles. Lanes are `<g class="lane" data-kernel=.. data-path=.. data-track=..>` groups so that
//! tools (and the tests) can find them. The output is well-formed XML: every text is escaped.

use crate::compare::Comparison;
use runtime_sim::machine::Engine;
use runtime_sim::sim::trace::{Slice, Track};
use std::fmt::Write;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 110.0;
const RIGHT: f64 = 20.0;
const LANE: f64 = 12.0;
const LANE_GAP: f64 = 2.0;
const TITLE: f64 = 22.0;
const AXIS: f64 = 28.0;
const PANEL_GAP: f64 = 14.0;
const LEGEND: f64 = 30.0;

/// Colours of stages 0, 1, 2, … (cycled), and of instructions without a stage.
const STAGE_COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
];
const NO_STAGE: &str = "#8c8c8c";
const WAIT: &str = "#e4e4e4";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step of 1, 2 or 5 times a power of ten giving at most about ten ticks.
fn tick_step(max: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if max / (step * m) <= 10 {
                return step * m;
            }
        }
        step *= 10;
    }
}

/// The lanes of one panel: the five engines, then the queues that moved data.
fn lanes(slices: &[Slice]) -> Vec<Track> {
    let mut tracks: Vec<Track> = Engine::ALL.iter().map(|&e| Track::Engine(e)).collect();
    let mut queues: Vec<u8> = slices
        .iter()
        .filter_map(|s| match s.track {
            Track::Queue(q) => Some(q),
            Track::Engine(_) => None,
        })
        .collect();
    queues.sort_unstable();
    queues.dedup();
    tracks.extend(queues.into_iter().map(Track::Queue));
    tracks
}

/// The SVG of every path of every comparison, stacked.
pub fn render(comparisons: &[&Comparison]) -> String {
    let panels: Vec<(&Comparison, &crate::compare::PathRun)> = comparisons
        .iter()
        .flat_map(|&c| c.paths.iter().map(move |p| (c, p)))
        .collect();
    let max_cycles = panels
        .iter()
        .map(|(_, p)| p.cycles())
        .max()
        .unwrap_or(0)
        .max(1);
    let axis = Scale {
        max_cycles,
        plot: WIDTH - LEFT - RIGHT,
    };
    let lane_sets: Vec<Vec<Track>> = panels
        .iter()
        .map(|(_, p)| lanes(&p.sim().timeline))
        .collect();
    let height = LEGEND
        + lane_sets
            .iter()
            .map(|l| TITLE + l.len() as f64 * (LANE + LANE_GAP) + AXIS + PANEL_GAP)
            .sum::<f64>();

    let mut o = String::new();
    let _ = writeln!(
        o,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{WIDTH}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" \
         font-family=\"sans-serif\" font-size=\"10\">"
    );
    let _ = writeln!(
        o,
        "<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height:.0}\" fill=\"white\"/>"
    );
    write_legend(&mut o, &panels);
    let mut y = LEGEND;
    for ((c, p), tracks) in panels.iter().zip(&lane_sets) {
        y = write_panel(&mut o, &axis, c, p, tracks, y);
    }
    o += "</svg>\n";
    o
}

/// The horizontal scale of every panel: `max_cycles` over `plot` points.
struct Scale {
    max_cycles: u64,
    plot: f64,
}

impl Scale {
    /// The x coordinate of cycle `c`.
    fn x(&self, c: u64) -> f64 {
        LEFT + self.plot * c as f64 / self.max_cycles as f64
    }
}

/// The legend: one swatch per stage used anywhere, then "no stage" and "semaphore wait".
fn write_legend(o: &mut String, panels: &[(&Comparison, &crate::compare::PathRun)]) {
    let max_stage = panels
        .iter()
        .flat_map(|(_, p)| p.sim().timeline.iter().filter_map(|s| s.meta.stage))
        .max();
    let mut lx = LEFT;
    let _ = writeln!(o, "<g class=\"legend\">");
    let _ = writeln!(o, "<text x=\"8\" y=\"18\">colour = stage</text>");
    let mut swatch = |label: &str, colour: &str, o: &mut String| {
        let _ = writeln!(
            o,
            "<rect x=\"{lx:.1}\" y=\"9\" width=\"12\" height=\"10\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"18\">{}</text>",
            lx + 15.0,
            escape(label)
        );
        lx += 30.0 + 6.0 * label.len() as f64;
    };
    if let Some(max) = max_stage {
        for st in 0..=max {
            swatch(
                &format!("stage {st}"),
                STAGE_COLOURS[st as usize % STAGE_COLOURS.len()],
                o,
            );
        }
    }
    swatch("no stage", NO_STAGE, o);
    swatch("semaphore wait", WAIT, o);
    let _ = writeln!(o, "</g>");
}

/// One path's panel from height `y` down: its title, a lane per track, the axis; returns the
/// height below it.
fn write_panel(
    o: &mut String,
    axis: &Scale,
    c: &Comparison,
    p: &crate::compare::PathRun,
    tracks: &[Track],
    mut y: f64,
) -> f64 {
    let st = &p.sim().stats;
    let _ = writeln!(
        o,
        "<g class=\"panel\" data-kernel=\"{}\" data-path=\"{}\">",
        escape(&c.kernel),
        p.name()
    );
    let _ = writeln!(
        o,
        "<text x=\"8\" y=\"{:.1}\" font-size=\"12\" font-weight=\"bold\">{} — {}: {} cycles, \
         {:.3} × lower bound ({})</text>",
        y + 15.0,
        escape(&c.kernel),
        p.name(),
        st.cycles,
        p.sim().cycles_over_bound(),
        p.sim().lower_bound()
    );
    y += TITLE;
    let top = y;
    for &track in tracks {
        write_lane(o, axis, c, p, track, y);
        y += LANE + LANE_GAP;
    }
    write_axis(o, axis, top, y);
    y += AXIS + PANEL_GAP;
    let _ = writeln!(o, "</g>");
    y
}

/// One track's lane at height `y`: its name, its background, a rectangle per slice.
fn write_lane(
    o: &mut String,
    axis: &Scale,
    c: &Comparison,
    p: &crate::compare::PathRun,
    track: Track,
    y: f64,
) {
    let plot = axis.plot;
    let _ = writeln!(
        o,
        "<g class=\"lane\" data-kernel=\"{}\" data-path=\"{}\" data-track=\"{}\">",
        escape(&c.kernel),
        p.name(),
        escape(&track.name())
    );
    let _ = writeln!(
        o,
        "<text x=\"8\" y=\"{:.1}\">{}</text>\
         <rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{plot:.1}\" height=\"{LANE}\" fill=\"#f7f7f7\"/>",
        y + LANE - 2.0,
        escape(&track.name())
    );
    for s in p.sim().timeline.iter().filter(|s| s.track == track) {
        let (x0, x1) = (axis.x(s.start), axis.x(s.end));
        let w = (x1 - x0).max(0.3);
        let is_wait = s.name.starts_with("wait ");
        let (colour, dy, h) = if is_wait {
            (WAIT, LANE / 2.0 - 1.5, 3.0)
        } else {
            let c = s.meta.stage.map_or(NO_STAGE, |st| {
                STAGE_COLOURS[st as usize % STAGE_COLOURS.len()]
            });
            (c, 0.0, LANE)
        };
        let _ = writeln!(
            o,
            "<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{h}\" fill=\"{colour}\"><title>{} [{}, {})</title></rect>",
            y + dy,
            escape(&s.name),
            s.start,
            s.end
        );
    }
    let _ = writeln!(o, "</g>");
}

/// The axis in cycles at height `y`, its ticks' grid lines reaching up to `top`.
fn write_axis(o: &mut String, axis: &Scale, top: f64, y: f64) {
    let (plot, max_cycles) = (axis.plot, axis.max_cycles);
    let _ = writeln!(
        o,
        "<g class=\"axis\"><line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"black\"/>",
        LEFT + plot
    );
    let step = tick_step(max_cycles);
    let mut t = 0;
    while t <= max_cycles {
        let tx = axis.x(t);
        let _ = writeln!(
            o,
            "<line x1=\"{tx:.1}\" y1=\"{top:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#cccccc\" stroke-width=\"0.5\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
            y + 4.0,
            y + 14.0
        );
        t += step;
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">cycles</text></g>",
        LEFT + plot,
        y + 25.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(9), 1);
        assert_eq!(tick_step(95), 10);
        assert_eq!(tick_step(150), 20);
        assert_eq!(tick_step(45_000), 5_000);
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
